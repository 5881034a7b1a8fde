/// @file concatenate_kernel.cuh
/// @brief The concatenation's copy (concatenate.cuh): rows of several arrays written side by side.
///
/// Why a copy in an activation library: ATen's torch.cat of channels-last tensors along the
/// channels took 2.2-2.9 x a copy of the same bytes in bfloat16 inside VoVNet's blocks
/// (TUNING.md#concatenation). Work split: a block copies one input's consecutive units, either
/// whole rows (an input whose row is shorter than a block's share) or a segment of one row; its
/// threads read consecutive units, so the loads are contiguous and each row's stores are too.
#pragma once

#include <hardact/numeric/fast_divmod.cuh>

#include <cstddef>
#include <cstdint>

namespace hardact {
namespace detail {

/// Threads per block, and units (the call's access size) each thread copies at most.
inline constexpr int kConcatenateBlockThreads = 256;
inline constexpr int kConcatenateUnitsPerThread = 4;
/// Inputs one launch copies: their descriptions travel in the kernel's parameters.
inline constexpr int kConcatenatePartsPerLaunch = 16;

/// One input as a launch copies it, in units of the call's access size.
struct ConcatenationPart {
  const void* data;
  std::uint64_t width;           ///< units a row
  std::uint64_t column;          ///< the unit of y's row its row starts at
  std::uint64_t first_block;     ///< the launch's first block that copies it
  std::uint64_t rows_per_block;  ///< rows a block copies (whole rows), or 0: a block copies a segment of a row
  FastDivmod blocks_per_row;     ///< segments a row (rows_per_block 0), else 1
  FastDivmod row_divisor;        ///< width (whole rows), else the block's units: a block's unit -> its row
};

struct ConcatenationLaunch {
  void* y;
  std::uint64_t rows;
  std::uint64_t y_width;   ///< units a row of y
  std::uint32_t block_units;  ///< units a block copies at most (a multiple of the block's threads)
  int part_count;
  ConcatenationPart parts[kConcatenatePartsPerLaunch];
};

/// Copies the launch's inputs into y; Unit is an unsigned integer or vector of the access size.
/// The block finds its input among the launch's few by their first blocks (the same for every
/// thread of the block), and every load is issued before the first store.
template <class Unit>
__global__ void __launch_bounds__(kConcatenateBlockThreads) concatenate_kernel(const ConcatenationLaunch launch) {
  const std::uint64_t block = blockIdx.x;
  int k = 0;
  for (int i = 1; i < launch.part_count; ++i) {
    if (block >= launch.parts[i].first_block) k = i;
  }
  const ConcatenationPart& part = launch.parts[k];
  const std::uint64_t local_block = block - part.first_block;
  std::uint64_t row = 0, column = 0, count = 0;
  if (part.rows_per_block != 0) {
    row = local_block * part.rows_per_block;
    const std::uint64_t rows_here = launch.rows - row < part.rows_per_block ? launch.rows - row : part.rows_per_block;
    count = rows_here * part.width;
  } else {
    std::uint64_t segment = 0;
    part.blocks_per_row.divmod(local_block, row, segment);
    column = segment * launch.block_units;
    count = part.width - column < launch.block_units ? part.width - column : launch.block_units;
  }
  // count <= block_units < 2^31: a block's units are indexed in 32 bits.
  const Unit* source = static_cast<const Unit*>(part.data) + row * part.width + column;
  Unit* target = static_cast<Unit*>(launch.y) + row * launch.y_width + part.column + column;
  const std::uint32_t units = static_cast<std::uint32_t>(count);
  Unit values[kConcatenateUnitsPerThread];
#pragma unroll
  for (int t = 0; t < kConcatenateUnitsPerThread; ++t) {
    const std::uint32_t j = threadIdx.x + static_cast<std::uint32_t>(t * kConcatenateBlockThreads);
    if (j < units) values[t] = source[j];
  }
#pragma unroll
  for (int t = 0; t < kConcatenateUnitsPerThread; ++t) {
    const std::uint32_t j = threadIdx.x + static_cast<std::uint32_t>(t * kConcatenateBlockThreads);
    if (j < units) {
      std::uint32_t row_in_block = 0, unit_in_row = 0;
      part.row_divisor.divmod32(j, row_in_block, unit_in_row);
      target[row_in_block * launch.y_width + unit_in_row] = values[t];
    }
  }
}

}  // namespace detail
}  // namespace hardact
