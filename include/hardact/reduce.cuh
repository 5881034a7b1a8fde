/// @file reduce.cuh
/// @brief hardact::channel_sum: per-channel sums of an array, the bias gradient of a fused
///        bias + activation (and the scale and shift gradients of a folded BatchNorm), on CUB.
#pragma once

#include <hardact/dispatch/dispatch_operands.cuh>
#include <hardact/dispatch/prepare_operands.cuh>
#include <hardact/kernel/summed_transform_kernel.cuh>
#include <hardact/kernel/tuning.cuh>
#include <hardact/numeric/conversions.cuh>
#include <hardact/numeric/fast_divmod.cuh>

#include <cub/device/device_for.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cuda/std/limits>
#include <cuda/std/type_traits>
#include <cuda/version>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace hardact {
namespace detail {

/// Stage 1: partial[chunk][j] = sum of in[r][j] over the chunk's rows r of the [outer, row] view.
/// Consecutive j are consecutive threads, so every row is read coalesced.
template <class T, class Acc>
struct ChunkColumnSum {
  const T* in;
  Acc* partial;
  std::uint64_t row;  ///< channels * inner
  std::uint64_t outer;
  std::uint64_t rows_per_chunk;
  FastDivmod by_row;

  __device__ void operator()(std::uint64_t index) const {
    std::uint64_t chunk, column;
    by_row.divmod(index, chunk, column);
    const std::uint64_t first = chunk * rows_per_chunk;
    const std::uint64_t last = first + rows_per_chunk < outer ? first + rows_per_chunk : outer;
    Acc sum = Acc(0);
    for (std::uint64_t r = first; r < last; ++r) sum += convert<Acc>(in[r * row + column]);
    partial[index] = sum;
  }
};

/// Stage 2's input: the j-th value of channel c's segment, j = (chunk, k) with k < inner, read from
/// the [chunks, channels, inner] partial sums.
template <class Acc>
struct ChannelSegmentValue {
  const Acc* partial;
  std::uint64_t channels;
  FastDivmod by_inner;
  FastDivmod by_segment;  ///< chunks * inner values per channel

  __host__ __device__ Acc operator()(std::uint64_t flat) const {
    std::uint64_t channel, j, chunk, k;
    by_segment.divmod(flat, channel, j);
    by_inner.divmod(j, chunk, k);
    return partial[(chunk * channels + channel) * by_inner.divisor + k];
  }
};

struct SegmentOffset {
  std::uint64_t length;
  __host__ __device__ std::int64_t operator()(std::int64_t segment) const {
    return segment * static_cast<std::int64_t>(length);
  }
};

/// Converts a sum to the output type, rounding once.
struct RoundSum {
  template <class T>
  __host__ __device__ T operator()(T value) const {
    return value;
  }
};

/// The segment count cub::DeviceSegmentedReduce takes: 64-bit from CCCL 3, int before.
#if CCCL_MAJOR_VERSION >= 3
using SegmentCount = cuda::std::int64_t;
#else
using SegmentCount = int;
#endif

inline std::size_t align_up(std::size_t bytes, std::size_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

}  // namespace detail

/// @brief sums[c] = the sum of in[i] over every i < n with (i / inner) % channels == c: for an
///        array seen as [outer, channels, inner], the sum over outer and inner. That is the bias
///        gradient of `bias_activation` (inner 1 for a row-major [rows, channels] array or
///        channels-last, H * W for NCHW), from the dx its backward wrote.
///
/// CUB's convention: call first with temp_storage == nullptr to get temp_storage_bytes, then with
/// that much device memory. Two passes, both on CUB: DeviceFor sums chunks of rows column by
/// column (coalesced whatever inner is), DeviceSegmentedReduce sums each channel's partials. Sums
/// accumulate in float (double for double input), deterministically, and are rounded once to
/// TOut. Returns cudaErrorInvalidValue, nothing launched, when channels or inner is 0 (whatever n,
/// as the launchers refuse a malformed broadcast), n is not a multiple of channels * inner, `sums`
/// is null or misaligned, `in` is null or misaligned (n > 0), or the temporary storage is smaller
/// than asked; n == 0 writes zeros to `sums` (`in` is not looked at). Never synchronises or
/// allocates.
template <class T, class TOut>
cudaError_t channel_sum(void* temp_storage, std::size_t& temp_storage_bytes, const T* in, std::size_t n,
                        std::size_t channels, std::size_t inner, TOut* sums, cudaStream_t stream = nullptr) {
  using Acc = detail::accumulate_t<T>;
  if (channels == 0 || inner == 0 || channels > detail::kMaxBroadcastElements / inner ||
      channels > static_cast<std::size_t>(cuda::std::numeric_limits<detail::SegmentCount>::max())) {
    return cudaErrorInvalidValue;
  }
  const std::size_t row = channels * inner;
  if (n % row != 0 || n > detail::kMaxBroadcastElements) return cudaErrorInvalidValue;
  const std::size_t outer = n / row;
  // Enough chunks that stage 1 has about kChannelSumStageOneThreads threads, each summing whole rows.
  constexpr std::size_t kStageOneThreads = detail::kChannelSumStageOneThreads;
  std::size_t chunks = row >= kStageOneThreads ? 1 : (kStageOneThreads + row - 1) / row;
  if (chunks > outer) chunks = outer > 0 ? outer : 1;
  const std::size_t rows_per_chunk = outer > 0 ? (outer + chunks - 1) / chunks : 1;
  chunks = outer > 0 ? (outer + rows_per_chunk - 1) / rows_per_chunk : 1;

  const std::size_t partial_bytes = detail::align_up(chunks * row * sizeof(Acc), 256);
  constexpr bool kDirectOutput = cuda::std::is_same_v<TOut, Acc>;
  const std::size_t sums_bytes = kDirectOutput ? 0 : detail::align_up(channels * sizeof(Acc), 256);

  detail::ChannelSegmentValue<Acc> value{nullptr, channels, detail::FastDivmod::make(inner),
                                         detail::FastDivmod::make(chunks * inner)};
  const auto segment_values = thrust::make_transform_iterator(thrust::counting_iterator<std::uint64_t>(0), value);
  const auto begins =
      thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0), detail::SegmentOffset{chunks * inner});
  std::size_t reduce_bytes = 0;
  cudaError_t status =
      cub::DeviceSegmentedReduce::Sum(nullptr, reduce_bytes, segment_values, static_cast<Acc*>(nullptr),
                                      static_cast<detail::SegmentCount>(channels), begins, begins + 1, stream);
  if (status != cudaSuccess) return status;
  const std::size_t needed = partial_bytes + sums_bytes + detail::align_up(reduce_bytes, 256);
  if (temp_storage == nullptr) {
    temp_storage_bytes = needed;
    return cudaSuccess;
  }
  if (temp_storage_bytes < needed || sums == nullptr || detail::address_of(sums) % alignof(TOut) != 0) {
    return cudaErrorInvalidValue;
  }
  if (n > 0 && !detail::is_usable_range(in, n)) return cudaErrorInvalidValue;

  unsigned char* const base = static_cast<unsigned char*>(temp_storage);
  Acc* const partial = reinterpret_cast<Acc*>(base);
  Acc* const accumulated = kDirectOutput ? reinterpret_cast<Acc*>(sums) : reinterpret_cast<Acc*>(base + partial_bytes);
  void* const reduce_storage = base + partial_bytes + sums_bytes;

  if (outer == 0) {
    status = cudaMemsetAsync(partial, 0, chunks * row * sizeof(Acc), stream);
  } else {
    status = cub::DeviceFor::Bulk(static_cast<std::uint64_t>(chunks * row),
                                  detail::ChunkColumnSum<T, Acc>{in, partial, row, outer, rows_per_chunk,
                                                                 detail::FastDivmod::make(row)},
                                  stream);
  }
  if (status != cudaSuccess) return status;
  value.partial = partial;
  const auto filled_values = thrust::make_transform_iterator(thrust::counting_iterator<std::uint64_t>(0), value);
  status = cub::DeviceSegmentedReduce::Sum(reduce_storage, reduce_bytes, filled_values, accumulated,
                                           static_cast<detail::SegmentCount>(channels), begins, begins + 1, stream);
  if (status != cudaSuccess || kDirectOutput) return status;
  return detail::dispatch_operands<0>(detail::RoundSum{}, channels, stream, sums, static_cast<const Acc*>(accumulated));
}

}  // namespace hardact
