/// @file device_broadcast.cuh
/// @brief Broadcast operands as the kernels take them (DeviceBroadcast: the divisions prepared on
///        the host) and how a thread loads their values for its vectors.
#pragma once

#include <hardact/kernel/value_array.cuh>
#include <hardact/kernel/vector_access.cuh>
#include <hardact/numeric/fast_divmod.cuh>

#include <cub/thread/thread_load.cuh>
#include <cuda/std/tuple>
#include <cuda/std/type_traits>
#include <cuda/std/utility>

#include <cstddef>
#include <cstdint>

namespace hardact {
namespace detail {

/// How the kernels read a broadcast operand's values for the vectors of one call, chosen once per
/// call by the dispatch layer (DeviceBroadcast::choose_access): per-vector checks cost more issue
/// slots than the loads (TUNING.md#broadcast-access).
enum class BroadcastAccess : unsigned char {
  general,     ///< per vector: one value, contiguous values, or a step per element
  run,         ///< every vector lies inside one run of `inner` elements: one value
  contiguous,  ///< inner 1 and every vector inside one period, its values aligned: vector loads
};

/// Where element i's value is: its offset inside its run of `inner` and its channel (below period);
/// for a SampleBroadcast also the first value of its span (period * (i / span)) and the elements
/// left in that span from i on.
struct BroadcastPosition {
  std::uint64_t offset = 0;
  std::uint64_t channel = 0;
  std::uint64_t base = 0;
  std::uint64_t left = 0;
};

/// Stands in for the span of a Broadcast, which has none.
struct NoSpan {};

/// A Broadcast (Spanned false) or SampleBroadcast (Spanned true) as the kernels take it: the
/// divisions prepared on the host.
template <class T, bool Spanned = false>
struct DeviceBroadcast {
  using value_type = T;
  static constexpr bool kSpanned = Spanned;
  const T* values;
  FastDivmod inner;
  FastDivmod period;

  /// Every index of the call is below 2^31: the 32-bit divisions serve.
  bool narrow;

  /// Same inner and period (and span) as the call's first broadcast operand (a BatchNorm's scale
  /// and shift): its element positions serve, so the divisions are done once per vector for both.
  bool located_like_first = false;

  /// How the call's vectors read the values (set by choose_access; general until then).
  BroadcastAccess access = BroadcastAccess::general;

  /// The span, and the base of the last span of the call (so that a vector's steps past the call's
  /// end never index past the values).
  cuda::std::conditional_t<Spanned, FastDivmod, NoSpan> span{};
  cuda::std::conditional_t<Spanned, std::uint64_t, NoSpan> last_base{};

  /// The span's length, 0 without one.
  __host__ __device__ std::uint64_t span_length() const {
    if constexpr (Spanned) {
      return span.divisor;
    } else {
      return 0;
    }
  }

  /// Elements of one aligned load of contiguous values for a vector of Count elements: the vector,
  /// or 16 bytes of it (one element where that is more).
  template <int Count>
  static constexpr int kContiguousChunk = Count * sizeof(T) <= kMaxAccessBytes ? Count
                                          : sizeof(T) >= kMaxAccessBytes
                                              ? 1
                                              : static_cast<int>(kMaxAccessBytes / sizeof(T));

  /// Picks the access for a call whose vectors of Count elements start at element `begin` and every
  /// Count elements after it. A run, a period and a span that are whole vectors keep every vector
  /// inside one run, or one period of one span; contiguous values need their vector loads aligned
  /// as well.
  template <int Count>
  void choose_access(std::size_t begin) {
    access = BroadcastAccess::general;
    if (begin % Count != 0) return;
    if (inner.divisor % Count == 0) {
      access = BroadcastAccess::run;
    } else if (inner.divisor == 1 && period.divisor % Count == 0 &&
               reinterpret_cast<std::uintptr_t>(values) % (sizeof(T) * kContiguousChunk<Count>) == 0) {
      access = BroadcastAccess::contiguous;
    }
  }

  /// Element i's position: two divisions (three with a span).
  __device__ __forceinline__ BroadcastPosition locate(std::size_t i) const {
    BroadcastPosition position;
    if (narrow) {
      std::uint32_t row, offset32, cycle, channel32;
      inner.divmod32(static_cast<std::uint32_t>(i), row, offset32);
      period.divmod32(row, cycle, channel32);
      position.offset = offset32;
      position.channel = channel32;
      if constexpr (Spanned) {
        std::uint32_t sample, within;
        span.divmod32(static_cast<std::uint32_t>(i), sample, within);
        position.base = static_cast<std::uint64_t>(sample) * period.divisor;
        position.left = span.divisor - within;
      }
    } else {
      std::uint64_t row, cycle;
      inner.divmod(i, row, position.offset);
      period.divmod(row, cycle, position.channel);
      if constexpr (Spanned) {
        std::uint64_t sample, within;
        span.divmod(i, sample, within);
        position.base = sample * period.divisor;
        position.left = span.divisor - within;
      }
    }
    return position;
  }

  /// The value for element i.
  __device__ __forceinline__ T at(std::size_t i) const {
    const BroadcastPosition position = locate(i);
    return cub::ThreadLoad<cub::LOAD_LDG>(values + position.base + position.channel);
  }

  /// The values for elements first .. first + Count - 1: two divisions, then load_located.
  template <int Count>
  __device__ __forceinline__ void load(std::size_t first, ValueArray<T, Count>& out) const {
    load_located<Count>(locate(first), out);
  }

  /// The values for Count consecutive elements, the first at `position` (locate): load_units for
  /// one vector.
  template <int Count>
  __device__ __forceinline__ void load_located(BroadcastPosition position, ValueArray<T, Count>& out) const {
    const BroadcastPosition positions[1] = {position};
    ValueArray<T, Count> values[1];
    load_units<Count, 1>(positions, values);
    out = values[0];
  }

  /// The values for Units vectors of Count consecutive elements, the first of vector u at
  /// positions[u] (locate), by the call's access, decided once for all of them: one load for a
  /// run, aligned vector loads for contiguous values, and for general access the same two cases
  /// where a vector allows them, else a step per element.
  template <int Count, std::size_t Units>
  __device__ __forceinline__ void load_units(const BroadcastPosition (&positions)[Units],
                                             ValueArray<T, Count> (&out)[Units]) const {
    if (access == BroadcastAccess::run) {
#pragma unroll
      for (std::size_t u = 0; u < Units; ++u) {
        out[u].fill(cub::ThreadLoad<cub::LOAD_LDG>(values + positions[u].base + positions[u].channel));
      }
    } else if (access == BroadcastAccess::contiguous) {
#pragma unroll
      for (std::size_t u = 0; u < Units; ++u) {
        load_aligned<Count>(values + positions[u].base + positions[u].channel, out[u]);
      }
    } else {
#pragma unroll
      for (std::size_t u = 0; u < Units; ++u) load_general<Count>(positions[u], out[u]);
    }
  }

 private:
  /// Count values from `source`, aligned to the loads: packed values straight into their words
  /// (through elements, the compiler took the words apart and put them back together).
  template <int Count>
  __device__ __forceinline__ static void load_aligned(const T* source, ValueArray<T, Count>& out) {
    constexpr int kChunk = kContiguousChunk<Count>;
    if constexpr (ValueArray<T, Count>::kPacked) {
      constexpr std::size_t kChunkBytes = sizeof(T) * static_cast<std::size_t>(kChunk);
      using Words = cuda::std::conditional_t<kChunkBytes == 16, uint4,
                                             cuda::std::conditional_t<kChunkBytes == 8, uint2, std::uint32_t>>;
      static_assert(sizeof(Words) == kChunkBytes, "hardact: packed loads are of 4, 8 or 16 bytes");
#pragma unroll
      for (int k = 0; k < Count / kChunk; ++k) {
        out.set_words(k, cub::ThreadLoad<cub::LOAD_LDG>(reinterpret_cast<const Words*>(source) + k));
      }
    } else {
      using Chunk = AlignedVector<T, kChunk>;
#pragma unroll
      for (int k = 0; k < Count / kChunk; ++k) {
        out.set_chunk(k, cub::ThreadLoad<cub::LOAD_LDG>(reinterpret_cast<const Chunk*>(source) + k));
      }
    }
  }

  /// General access. In the common layouts there is still no per-element index work, which makes
  /// these kernels instruction-bound (TUNING.md#broadcast-access):
  /// - runs of at least Count (NCHW planes that are not whole vectors, 14 x 14 or 7 x 7): a
  ///   vector's elements in one channel, or across a run's end in two: two loads and a select per
  ///   element;
  /// - consecutive channels without a wrap (channels-last, a row's bias): the values are
  ///   contiguous, loaded 16 bytes at a time when aligned;
  /// - otherwise a step per element, then all loads at once.
  /// A run of one channel, and the channels of one period, lie inside one span (a span is a
  /// multiple of inner * period), so only the per-element steps meet a span's end.
  template <int Count>
  __device__ __forceinline__ void load_general(BroadcastPosition position, ValueArray<T, Count>& out) const {
    const T* span_values = values;
    if constexpr (Spanned) span_values += position.base;
    T loaded[static_cast<std::size_t>(Count)];
    if (inner.divisor >= static_cast<std::uint64_t>(Count)) {
      // The vector's first `split` elements lie in this channel's run (all of them where split >=
      // Count); the rest start the next channel's (the next period's first, and at a span's end the
      // next span's). Both values loaded by every vector, so that a warp does not diverge.
      const std::uint64_t split = inner.divisor - position.offset;
      std::uint64_t next = position.channel + 1;
      const T* next_values = span_values;
      if (next == period.divisor) {
        next = 0;
        if constexpr (Spanned) {
          if (position.left == split && position.base < last_base) next_values += period.divisor;
        }
      }
      const T first = cub::ThreadLoad<cub::LOAD_LDG>(span_values + position.channel);
      const T second = cub::ThreadLoad<cub::LOAD_LDG>(next_values + next);
#pragma unroll
      for (int j = 0; j < Count; ++j) loaded[j] = static_cast<std::uint64_t>(j) < split ? first : second;
      out.set_all(loaded);
      return;
    }
    if (inner.divisor == 1 && position.channel + Count <= period.divisor) {
      const T* const source = span_values + position.channel;
      constexpr int kChunk = kContiguousChunk<Count>;
      if (reinterpret_cast<std::uintptr_t>(source) % sizeof(AlignedVector<T, kChunk>) == 0) {
        load_aligned<Count>(source, out);
        return;
      }
#pragma unroll
      for (int j = 0; j < Count; ++j) loaded[j] = cub::ThreadLoad<cub::LOAD_LDG>(source + j);
      out.set_all(loaded);
      return;
    }
    std::uint64_t index[static_cast<std::size_t>(Count)];
    std::uint64_t offset = position.offset, channel = position.channel;
    [[maybe_unused]] std::uint64_t base = position.base, left = position.left;
#pragma unroll
    for (int j = 0; j < Count; ++j) {
      if constexpr (Spanned) {
        index[j] = base + channel;
      } else {
        index[j] = channel;
      }
      if (++offset == inner.divisor) {
        offset = 0;
        if (++channel == period.divisor) channel = 0;
      }
      if constexpr (Spanned) {
        if (--left == 0) {
          left = span.divisor;
          if (base < last_base) base += period.divisor;
        }
      }
    }
#pragma unroll
    for (int j = 0; j < Count; ++j) loaded[j] = cub::ThreadLoad<cub::LOAD_LDG>(values + index[j]);
    out.set_all(loaded);
  }
};

/// The broadcast operands of a kernel (cuda::std::tuple<DeviceBroadcast<T>...>, possibly empty).
template <class... T>
using DeviceBroadcasts = cuda::std::tuple<DeviceBroadcast<T>...>;
using NoBroadcasts = cuda::std::tuple<>;

/// The values of a kernel's broadcast operands for Count consecutive elements.
template <int Count, class Broadcasts>
struct broadcast_values;
template <int Count, class... D>
struct broadcast_values<Count, cuda::std::tuple<D...>> {
  using type = cuda::std::tuple<ValueArray<typename D::value_type, Count>...>;
};

/// Each broadcast operand's values for Units vectors of Count elements, vector u starting at element
/// firsts[u] (each a vector of the call: the kernels point a thread's vectors past the end at one
/// inside it, rather than branch around them). The first operand's positions serve every operand
/// located like it, and each operand's access is decided once for all the vectors.
template <int Count, std::size_t Units, class... D, std::size_t... B>
__device__ __forceinline__ void load_broadcast_units(
    const cuda::std::tuple<D...>& broadcasts, const std::size_t (&firsts)[Units],
    cuda::std::tuple<ValueArray<typename D::value_type, Count>...> (&loaded)[Units], cuda::std::index_sequence<B...>) {
  BroadcastPosition first_positions[Units];
#pragma unroll
  for (std::size_t u = 0; u < Units; ++u) first_positions[u] = cuda::std::get<0>(broadcasts).locate(firsts[u]);
  const auto load_one = [&](const auto& b, auto index) {
    constexpr std::size_t kIndex = decltype(index)::value;
    ValueArray<typename cuda::std::remove_reference_t<decltype(b)>::value_type, Count> values[Units];
    if (kIndex != 0 && !b.located_like_first) {
      BroadcastPosition positions[Units];
#pragma unroll
      for (std::size_t u = 0; u < Units; ++u) positions[u] = b.locate(firsts[u]);
      b.template load_units<Count, Units>(positions, values);
    } else {
      b.template load_units<Count, Units>(first_positions, values);
    }
#pragma unroll
    for (std::size_t u = 0; u < Units; ++u) cuda::std::get<kIndex>(loaded[u]) = values[u];
  };
  (load_one(cuda::std::get<B>(broadcasts), cuda::std::integral_constant<std::size_t, B>{}), ...);
}

}  // namespace detail
}  // namespace hardact
