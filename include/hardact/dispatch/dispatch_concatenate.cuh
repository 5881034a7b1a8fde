/// @file dispatch_concatenate.cuh
/// @brief The concatenation's dispatch (hardact::concatenate): the launch contract's checks, the
///        widest access every row and pointer allows, a block's share from the copy's size, and one
///        launch per kConcatenatePartsPerLaunch inputs. Nothing here synchronises or allocates.
#pragma once

#include <hardact/types/concatenation_input.cuh>
#include <hardact/kernel/concatenate_kernel.cuh>
#include <hardact/dispatch/device_properties.cuh>
#include <hardact/dispatch/memory_range.cuh>

#ifdef HARDACT_CHECK_POINTER_DEVICES
#include <hardact/dispatch/pointer_check.cuh>
#endif

#include <cuda/std/type_traits>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace hardact {
namespace detail {

/// y's largest size in bytes: every unit index and byte offset then fits 64 bits with room.
inline constexpr std::size_t kMostConcatenationBytes = std::size_t{1} << 62;

/// Bytes of one access: the largest power of two up to 16 dividing every address and row length.
inline std::size_t concatenation_unit_bytes(std::uintptr_t combined) {
  std::size_t unit = 16;
  while (unit > 1 && combined % unit != 0) unit /= 2;
  return unit;
}

/// A block's share of units: the most (every thread kConcatenateUnitsPerThread) where the copy
/// still gives every multiprocessor four blocks, else fewer, down to one unit a thread: short
/// copies are latency-bound and want every multiprocessor busy (TUNING.md#concatenation).
inline std::uint32_t concatenation_block_units(std::uint64_t units, int multiprocessors) {
  constexpr std::uint64_t kBlocksPerMultiprocessor = 4;
  std::uint32_t block_units = kConcatenateBlockThreads * kConcatenateUnitsPerThread;
  const std::uint64_t wanted_blocks = kBlocksPerMultiprocessor * static_cast<std::uint64_t>(multiprocessors);
  while (block_units > kConcatenateBlockThreads && units / block_units < wanted_blocks) block_units /= 2;
  return block_units;
}

/// The launch for inputs [first, last) (those with elements), y's row from unit `column`: fills
/// `launch` and returns its block count.
template <class T>
std::uint64_t plan_concatenation(const ConcatenationInput<T>* inputs, std::size_t first, std::size_t last,
                                 std::uint64_t column, std::size_t unit_bytes, std::uint32_t block_units,
                                 ConcatenationLaunch& launch) {
  std::uint64_t blocks = 0;
  launch.part_count = 0;
  for (std::size_t i = first; i < last; ++i) {
    if (inputs[i].row_elements == 0) continue;
    ConcatenationPart& part = launch.parts[launch.part_count++];
    part.data = inputs[i].data;
    part.width = inputs[i].row_elements * sizeof(T) / unit_bytes;
    part.column = column;
    part.first_block = blocks;
    if (part.width <= block_units) {  // whole rows a block
      part.rows_per_block = block_units / part.width;
      part.blocks_per_row = FastDivmod::make(1);
      part.row_divisor = FastDivmod::make(part.width);
      blocks += (launch.rows + part.rows_per_block - 1) / part.rows_per_block;
    } else {  // a segment of a row a block
      const std::uint64_t segments = (part.width + block_units - 1) / block_units;
      part.rows_per_block = 0;
      part.blocks_per_row = FastDivmod::make(segments);
      part.row_divisor = FastDivmod::make(block_units);
      blocks += launch.rows * segments;
    }
    column += part.width;
  }
  return blocks;
}

/// The launch contract of hardact::concatenate, then the launches.
template <class T>
cudaError_t dispatch_concatenate(const ConcatenationInput<T>* inputs, std::size_t input_count, std::size_t rows, T* y,
                                 cudaStream_t stream) {
  static_assert(cuda::std::is_trivially_copyable_v<T>,
                "hardact: concatenate copies arrays of a trivially copyable type");
  if (inputs == nullptr || input_count == 0) return cudaErrorInvalidValue;
  constexpr std::size_t kMostElements = (kMostConcatenationBytes - 1) / sizeof(T);  // y under 2^62 bytes
  std::size_t row_elements = 0;
  bool too_large = false;
  for (std::size_t i = 0; i < input_count; ++i) {
    if (inputs[i].row_elements > kMostElements - row_elements) {
      too_large = true;
    } else {
      row_elements += inputs[i].row_elements;
    }
  }
  if (rows == 0 || (!too_large && row_elements == 0)) return cudaSuccess;
  if (too_large || rows > kMostElements / row_elements) return cudaErrorNotSupported;

  const MemoryRange out_y{y, rows * row_elements * sizeof(T)};
  if (!range_usable(out_y, alignof(T))) return cudaErrorInvalidValue;
  // Every row's bytes and every address, or-ed: their lowest set bit bounds the access size.
  std::uintptr_t combined = reinterpret_cast<std::uintptr_t>(y) | (row_elements * sizeof(T));
  for (std::size_t i = 0; i < input_count; ++i) {
    if (inputs[i].row_elements == 0) continue;
    const MemoryRange in{inputs[i].data, rows * inputs[i].row_elements * sizeof(T)};
    if (!range_usable(in, alignof(T)) || ranges_overlap(in, out_y)) return cudaErrorInvalidValue;
    combined |= reinterpret_cast<std::uintptr_t>(inputs[i].data) | (inputs[i].row_elements * sizeof(T));
  }
#ifdef HARDACT_CHECK_POINTER_DEVICES  // opt-in: refuse pointers the current device cannot reach
  if (const cudaError_t access = check_pointer_devices(static_cast<const T*>(y)); access != cudaSuccess) return access;
  for (std::size_t i = 0; i < input_count; ++i) {
    if (inputs[i].row_elements == 0) continue;
    if (const cudaError_t access = check_pointer_devices(inputs[i].data); access != cudaSuccess) return access;
  }
#endif
  DeviceProperties properties;
  if (const cudaError_t status = current_device_properties(properties); status != cudaSuccess) return status;
  const std::size_t unit_bytes = concatenation_unit_bytes(combined);
  const std::uint64_t y_width = row_elements * sizeof(T) / unit_bytes;
  const std::uint32_t block_units = concatenation_block_units(rows * y_width, properties.multiprocessor_count);

  // Every launch's grid is checked before the first launch, so a refused call writes nothing.
  ConcatenationLaunch launch{};
  launch.y = y;
  launch.rows = rows;
  launch.y_width = y_width;
  launch.block_units = block_units;
  const std::size_t group = kConcatenatePartsPerLaunch;
  for (int pass = 0; pass < 2; ++pass) {  // 0: the grids checked; 1: the launches
    std::uint64_t column = 0;
    for (std::size_t first = 0; first < input_count; first += group) {
      const std::size_t last = input_count - first < group ? input_count : first + group;
      const std::uint64_t blocks = plan_concatenation(inputs, first, last, column, unit_bytes, block_units, launch);
      for (int p = 0; p < launch.part_count; ++p) column += launch.parts[p].width;
      if (pass == 0) {
        if (blocks > static_cast<std::uint64_t>(properties.max_grid_dim_x)) return cudaErrorNotSupported;
        continue;
      }
      if (blocks == 0) continue;  // only inputs of no elements
      const unsigned grid = static_cast<unsigned>(blocks);
      switch (unit_bytes) {
        case 16: concatenate_kernel<uint4><<<grid, kConcatenateBlockThreads, 0, stream>>>(launch); break;
        case 8: concatenate_kernel<uint2><<<grid, kConcatenateBlockThreads, 0, stream>>>(launch); break;
        case 4: concatenate_kernel<std::uint32_t><<<grid, kConcatenateBlockThreads, 0, stream>>>(launch); break;
        case 2: concatenate_kernel<std::uint16_t><<<grid, kConcatenateBlockThreads, 0, stream>>>(launch); break;
        default: concatenate_kernel<std::uint8_t><<<grid, kConcatenateBlockThreads, 0, stream>>>(launch); break;
      }
      if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
    }
  }
  return cudaSuccess;
}

}  // namespace detail
}  // namespace hardact
