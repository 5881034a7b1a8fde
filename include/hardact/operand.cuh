/// @file operand.cuh
/// @brief Broadcast operands: an input of a transform call whose value for output element i is
///        values[(i / inner) % period] (a bias, a per-channel scale or shift, a per-(n, c) gate of
///        an NCHW tensor) or, for a SampleBroadcast, values[(i / inner) % period + period * (i /
///        span)] (a per-(n, c) gate of a channels-last tensor). Public types only: how the launchers
///        check and prepare them is dispatch/prepare_operands.cuh, how the kernels read them
///        kernel/device_broadcast.cuh.
///
///        And one output operand, OutputWithSums: the output of a transform call together with the
///        per-channel (or per-(n, c)) sums of what was written, in the same pass.
#pragma once

#include <cstddef>

namespace hardact {

/// @brief An input read as values[(i / inner) % period] for output element i.
///
/// For an array seen as [outer, period, inner] in row-major order this is a vector along the middle
/// dimension: a bias over the last dimension of a row-major [rows, columns] array (and of any
/// channels-last tensor) is {bias, 1, columns}; a per-channel vector of an NCHW tensor is
/// {v, H * W, C}; a per-(n, c) gate of an NCHW tensor is {gate, H * W, N * C}. `values` must hold
/// `period` elements; `inner` and `period` must be at least 1 (a launcher refuses 0 whatever n,
/// and looks at `values` only when n > 0). Make one with hardact::per_channel.
template <class T>
struct Broadcast {
  const T* values = nullptr;  ///< period elements, device memory
  std::size_t inner = 1;      ///< consecutive elements that share one value
  std::size_t period = 1;     ///< values before the pattern repeats
};

/// @brief values[c] for every element of channel c of an array seen as [outer, channels, inner]:
///        per_channel(bias, columns) for a row-major [rows, columns] array or channels-last tensor,
///        per_channel(v, C, H * W) for NCHW, per_channel(gate, N * C, H * W) for a per-(n, c) gate.
template <class T>
__host__ __device__ constexpr Broadcast<T> per_channel(const T* values, std::size_t channels, std::size_t inner = 1) {
  return Broadcast<T>{values, inner, channels};
}

/// @brief A Broadcast whose values move on every `span` elements: element i reads
///        values[(i / inner) % period + period * (i / span)], one set of `period` values per span.
///
/// A per-(n, c) gate of a channels-last [N, H, W, C] tensor is {gate, 1, C, H * W * C}: within a
/// sample the channel is i % C, and each sample has its own C values. `values` must hold period *
/// ceil(n / span) elements; inner, period and span must be at least 1, span a multiple of inner *
/// period (so that a run of one value never straddles two spans). Make one with
/// hardact::per_sample_channel. A type of its own, so calls with plain Broadcasts run kernels with
/// no span arithmetic at all.
template <class T>
struct SampleBroadcast {
  const T* values = nullptr;  ///< period values per span, device memory
  std::size_t inner = 1;      ///< consecutive elements that share one value
  std::size_t period = 1;     ///< values of one span
  std::size_t span = 1;       ///< elements of one span (a sample): a multiple of inner * period
};

/// @brief values[s * channels + c] for channel c of sample s of a channels-last batch [samples,
///        positions, channels] (positions = H * W for NHWC): per_sample_channel(gate, C, H * W).
///        `values` holds samples * channels elements; channels * positions must not overflow.
template <class T>
__host__ __device__ constexpr SampleBroadcast<T> per_sample_channel(const T* values, std::size_t channels,
                                                                    std::size_t positions) {
  return SampleBroadcast<T>{values, 1, channels, channels * positions};
}

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
