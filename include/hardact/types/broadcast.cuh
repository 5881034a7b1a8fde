/// @file broadcast.cuh
/// @brief The public broadcast operand types, hardact::Broadcast and hardact::SampleBroadcast, and
///        the helpers that make them (per_channel, per_sample_channel). Users include them through
///        operand.cuh; they live below the dispatch layer, which checks and prepares them
///        (dispatch/prepare_operands.cuh), and include nothing of hardact.
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

}  // namespace hardact
