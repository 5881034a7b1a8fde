/// @file output_with_sums.cuh
/// @brief The public output operand hardact::OutputWithSums, the outputs of a transform call with
///        the per-channel (or per-(n, c)) sums of what was written, and the helpers that make it
///        (with_channel_sums, with_sample_channel_sums). Users include it through operand.cuh; it
///        lives below the dispatch layer (dispatch/dispatch_summed.cuh launches the call) and
///        includes nothing of hardact.
#pragma once

#include <cstddef>

namespace hardact {

/// @brief An output operand: the n outputs, and `sums` of the values written to them, in the same
///        pass. Output element i adds to sums[(i / inner) % period + period * (i / span)] (the
///        mapping of a SampleBroadcast; span 0 means one span, the whole call), and each sum is
///        multiplied by `scale` at the end (1 / count gives a mean, as PyTorch's mean does).
///
/// The squeeze of a squeeze-excitation block, one mean per (n, c), is
/// with_sample_channel_sums(y, mean, C, H * W) for channels-last y and with_channel_sums(y, mean,
/// N * C, H * W) for NCHW y, with scale 1 / (H * W); a bias gradient is with_channel_sums(dx,
/// dbias, C) over a row-major [rows, C] array. Sums accumulate in float (double for double
/// outputs), in an order fixed by the call's shape, its pointers' alignment and the device's
/// multiprocessor count, never by timing: the same call on the same device gives the same bits.
/// A call whose sums each gather more than one block's share needs `temp_storage_bytes(output, n)`
/// bytes of device memory in temp_storage (no allocation inside a launch), the same on every
/// device; others need none. n must be a whole number of spans, inner and period at least 1, span
/// a multiple of inner * period (or 0); `sums` holds period * (n / span) values (period for span
/// 0), and overlaps neither the outputs nor the inputs.
template <class T, class TSum>
struct OutputWithSums {
  T* values = nullptr;         ///< the n outputs, device memory
  TSum* sums = nullptr;        ///< the sums, device memory
  std::size_t inner = 1;       ///< consecutive elements that add to one sum
  std::size_t period = 1;      ///< sums before the pattern repeats
  std::size_t span = 0;        ///< elements of one span (a sample); 0: the whole call is one span
  double scale = 1.0;          ///< multiplies every sum, in the accumulation type
  void* temp_storage = nullptr;          ///< device memory for partial sums, when the call needs it
  std::size_t temp_storage_bytes = 0;    ///< its size in bytes
};

/// @brief Outputs `values` and, for an array seen as [outer, channels, inner], one sum per channel
///        over outer and inner: with_channel_sums(dx, dbias, C) for a row-major [rows, C] array or
///        channels-last tensor, with_channel_sums(y, sums, C, H * W) for per-channel sums of NCHW y,
///        with_channel_sums(y, sums, N * C, H * W) for per-(n, c) sums of NCHW y.
template <class T, class TSum>
__host__ __device__ constexpr OutputWithSums<T, TSum> with_channel_sums(T* values, TSum* sums, std::size_t channels,
                                                                        std::size_t inner = 1, double scale = 1.0) {
  return OutputWithSums<T, TSum>{values, sums, inner, channels, 0, scale, nullptr, 0};
}

/// @brief Outputs `values` and one sum per (sample, channel) of a channels-last batch [samples,
///        positions, channels]: sums[s * channels + c] (positions = H * W for NHWC).
template <class T, class TSum>
__host__ __device__ constexpr OutputWithSums<T, TSum> with_sample_channel_sums(T* values, TSum* sums,
                                                                               std::size_t channels,
                                                                               std::size_t positions,
                                                                               double scale = 1.0) {
  return OutputWithSums<T, TSum>{values, sums, 1, channels, channels * positions, scale, nullptr, 0};
}

}  // namespace hardact
