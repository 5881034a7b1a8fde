/// @file operand.cuh
/// @brief Broadcast operands: an input of a transform call whose value for output element i is
///        values[(i / inner) % period] (a bias, a per-channel scale or shift, a per-(n, c) gate of
///        an NCHW tensor) or, for a SampleBroadcast, values[(i / inner) % period + period * (i /
///        span)] (a per-(n, c) gate of a channels-last tensor), and the 64-bit division the kernels
///        use to find that value.
#pragma once

#include <hardact/kernel/vector_access.cuh>
#include <hardact/policy/validity.cuh>

#include <cub/thread/thread_load.cuh>
#include <cuda/std/cstdint>
#include <cuda/std/tuple>
#include <cuda/std/type_traits>
#include <cuda/std/utility>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hardact {

/// @brief An input read as values[(i / inner) % period] for output element i.
///
/// For an array seen as [outer, period, inner] in row-major order this is a vector along the middle
/// dimension: a bias over the last dimension of a row-major [rows, columns] array (and of any
/// channels-last tensor) is {bias, 1, columns}; a per-channel vector of an NCHW tensor is
/// {v, H * W, C}; a per-(n, c) gate of an NCHW tensor is {gate, H * W, N * C}. `values` must hold
/// `period` elements; `inner` and `period` must be at least 1. Make one with hardact::per_channel.
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

namespace detail {

template <class T>
struct is_broadcast : cuda::std::false_type {};
template <class T>
struct is_broadcast<Broadcast<T>> : cuda::std::true_type {};
template <class T>
struct is_broadcast<SampleBroadcast<T>> : cuda::std::true_type {};

/// What a launcher accepts as an input: a pointer to full-length data or a Broadcast.
template <class T>
inline constexpr bool is_operand_v = cuda::std::is_pointer_v<T> || is_broadcast<T>::value;

/// The element type of an input operand.
template <class T>
struct operand_element {
  using type = cuda::std::remove_cv_t<cuda::std::remove_pointer_t<T>>;
};
template <class T>
struct operand_element<Broadcast<T>> {
  using type = cuda::std::remove_cv_t<T>;
};
template <class T>
struct operand_element<SampleBroadcast<T>> {
  using type = cuda::std::remove_cv_t<T>;
};

/// The largest element count a call with broadcast operands takes: element indexes stay below
/// 2^63, where FastDivmod is exact. (No device holds that much memory.)
inline constexpr std::size_t kMaxBroadcastElements = std::size_t{1} << 63;

__host__ __device__ inline std::uint64_t multiply_high(std::uint64_t a, std::uint64_t b) {
#ifdef __CUDA_ARCH__
  return __umul64hi(a, b);
#elif defined(__SIZEOF_INT128__)
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#else
  const std::uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32, b_lo = b & 0xffffffffu, b_hi = b >> 32;
  const std::uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi, hi_hi = a_hi * b_hi;
  const std::uint64_t middle = (lo_lo >> 32) + (hi_lo & 0xffffffffu) + lo_hi;
  return hi_hi + (hi_lo >> 32) + (middle >> 32);
#endif
}

/// Calls of at most this many elements use 32-bit index arithmetic.
inline constexpr std::size_t kNarrowIndexLimit = std::size_t{1} << 31;

/// Division of numerators below 2^63 by a divisor fixed at launch, as a multiply-high and a shift
/// (Granlund and Montgomery, 1994): with l = ceil(log2 d) and m = floor(2^(63 + l) / d) + 1, which
/// fits 64 bits, n / d = mulhi(n, m) >> (l - 1) for every n < 2^63. A 64-bit `/` is a long
/// software sequence on the GPU, once per vector and operand.
struct FastDivmod {
  std::uint64_t divisor = 1;
  std::uint64_t multiplier = 0;  ///< 0 for divisor 1, which is divided by returning n
  unsigned shift = 0;
  /// The same for numerators below 2^31 (divisor <= 2^31) in 32-bit words, with the multiplier
  /// less 2^32: m32 = floor(2^32 * (2^l - d) / d) + 1 and n / d = (mulhi(n, m32) + n) >> l, exact
  /// for every 32-bit n (ibid., section 4), and the sum cannot overflow below 2^31. Divisor 1 needs
  /// no select (m32 = 1, l = 0): a multiply-high, an add and a shift per division.
  std::uint32_t multiplier32 = 1;
  unsigned shift32 = 0;

  /// d must be in [1, 2^63].
  static FastDivmod make(std::uint64_t d) {
    FastDivmod f;
    f.divisor = d;
    if (d <= 1) return f;
    unsigned l = 0;
    while (l < 64 && (std::uint64_t{1} << l) < d) ++l;  // ceil(log2 d), 1..63
#if defined(__SIZEOF_INT128__)
    const std::uint64_t quotient = static_cast<std::uint64_t>((static_cast<unsigned __int128>(1) << (63 + l)) / d);
#else
    // floor(2^(63 + l) / d) by long division; the remainder stays below d <= 2^63.
    std::uint64_t quotient = 0, remainder = 0;
    for (unsigned bit = 127; bit-- > 0;) {
      remainder = (remainder << 1) | (bit == 63 + l ? 1u : 0u);
      quotient <<= 1;
      if (remainder >= d) {
        remainder -= d;
        quotient |= 1;
      }
    }
#endif
    f.multiplier = quotient + 1;
    f.shift = l - 1;
    if (l <= 31) {
      // 2^l - d < d <= 2^31, so the dividend fits 64 bits and the quotient 32.
      f.multiplier32 = static_cast<std::uint32_t>((((std::uint64_t{1} << l) - d) << 32) / d + 1);
      f.shift32 = l;
    }
    return f;
  }

  /// n / divisor for n < 2^31 (and divisor <= 2^31).
  __host__ __device__ std::uint32_t divide32(std::uint32_t n) const {
#ifdef __CUDA_ARCH__
    const std::uint32_t high = __umulhi(n, multiplier32);
#else
    const std::uint32_t high = static_cast<std::uint32_t>((static_cast<std::uint64_t>(n) * multiplier32) >> 32);
#endif
    return (high + n) >> shift32;
  }
  /// n / divisor and n % divisor for n < 2^31 (and divisor <= 2^31).
  __host__ __device__ void divmod32(std::uint32_t n, std::uint32_t& quotient, std::uint32_t& remainder) const {
    quotient = divide32(n);
    remainder = n - quotient * static_cast<std::uint32_t>(divisor);
  }

  __host__ __device__ std::uint64_t divide(std::uint64_t n) const {
    return multiplier == 0 ? n : multiply_high(n, multiplier) >> shift;
  }
  __host__ __device__ void divmod(std::uint64_t n, std::uint64_t& quotient, std::uint64_t& remainder) const {
    quotient = divide(n);
    remainder = n - quotient * divisor;
  }
};

/// Count values of a broadcast operand, one per element of a vector. Values narrower than 32 bits
/// are kept packed in 32-bit words: the staged kernel holds them in registers across its wait for
/// the tile, and a bfloat16 value per register doubled the registers a BatchNorm call needed
/// (docs/TUNING.md row 39). Every write is of whole words: writes of single 16-bit values made the
/// compiler keep the array as 16-bit pieces, and take apart and re-pack even a 16-byte load of
/// eight values (docs/TUNING.md row 45).
template <class T, int Count>
struct ValueArray {
  static constexpr std::size_t kBytes = sizeof(T) * static_cast<std::size_t>(Count);
  static constexpr bool kPacked = sizeof(T) < 4 && 4 % sizeof(T) == 0 && kBytes % 4 == 0;
  static constexpr int kPerWord = kPacked ? static_cast<int>(4 / sizeof(T)) : 1;
  using Storage = cuda::std::conditional_t<kPacked, std::uint32_t, T>;
  using Bits = cuda::std::conditional_t<sizeof(T) == 1, std::uint8_t, std::uint16_t>;  // of a packed value
  Storage storage[kPacked ? kBytes / 4 : static_cast<std::size_t>(Count)];

  __device__ __forceinline__ T get(int j) const {
    if constexpr (kPacked) {
      const unsigned shift = 8 * sizeof(T) * static_cast<unsigned>(j % kPerWord);
      const Bits bits = static_cast<Bits>(storage[j / kPerWord] >> shift);
      T value;
      memcpy(&value, &bits, sizeof(T));
      return value;
    } else {
      return storage[j];
    }
  }
  /// Every value from `values`, a word at a time.
  __device__ __forceinline__ void set_all(const T (&values)[static_cast<std::size_t>(Count)]) {
    if constexpr (kPacked) {
#pragma unroll
      for (std::size_t k = 0; k < kBytes / 4; ++k) {
        std::uint32_t word = 0;
#pragma unroll
        for (int e = 0; e < kPerWord; ++e) {
          Bits bits;
          memcpy(&bits, &values[k * kPerWord + static_cast<std::size_t>(e)], sizeof(T));
          word |= static_cast<std::uint32_t>(bits) << (8 * sizeof(T) * static_cast<unsigned>(e));
        }
        storage[k] = word;
      }
    } else {
#pragma unroll
      for (int j = 0; j < Count; ++j) storage[j] = values[j];
    }
  }
  __device__ __forceinline__ void fill(T value) {
    if constexpr (kPacked) {
      Bits bits;
      memcpy(&bits, &value, sizeof(T));
      std::uint32_t word = 0;
#pragma unroll
      for (int e = 0; e < kPerWord; ++e) {
        word |= static_cast<std::uint32_t>(bits) << (8 * sizeof(T) * static_cast<unsigned>(e));
      }
#pragma unroll
      for (std::size_t k = 0; k < kBytes / 4; ++k) storage[k] = word;
    } else {
#pragma unroll
      for (int j = 0; j < Count; ++j) storage[j] = value;
    }
  }
  /// Elements k * Chunk .. (k + 1) * Chunk - 1 from one loaded vector (types that are not packed).
  template <int Chunk>
  __device__ __forceinline__ void set_chunk(int k, const AlignedVector<T, Chunk>& chunk) {
    static_assert(!kPacked, "hardact: packed values are written as words (set_words)");
#pragma unroll
    for (int j = 0; j < Chunk; ++j) storage[k * Chunk + j] = chunk.elements[j];
  }
  /// Words k * kWords .. (k + 1) * kWords - 1 of packed values from one load of 4, 8 or 16 bytes.
  template <class Words>
  __device__ __forceinline__ void set_words(int k, const Words& words) {
    static_assert(kPacked, "hardact: only packed values are held as words");
    constexpr int kWords = static_cast<int>(sizeof(Words) / 4);
    if constexpr (kWords == 4) {
      storage[4 * k] = words.x, storage[4 * k + 1] = words.y, storage[4 * k + 2] = words.z, storage[4 * k + 3] = words.w;
    } else if constexpr (kWords == 2) {
      storage[2 * k] = words.x, storage[2 * k + 1] = words.y;
    } else {
      storage[k] = words;
    }
  }
};

/// How the kernels read a broadcast operand's values for the vectors of one call, chosen by the
/// dispatch layer once it knows where the vectors start (DeviceBroadcast::choose_access). The
/// per-vector checks of `general` and the code for the cases they rule out cost more issue slots
/// than the loads themselves: on the H200 they held bfloat16 BatchNorm rows to 0.73-0.91 of the
/// copy rate (docs/TUNING.md rows 44-45).
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

  /// General access. In the common layouts there is still no per-element index work (measured: a
  /// step per element made bfloat16 BatchNorm rows instruction-bound at half the copy rate, and
  /// per-element loads of a last-dimension vector took as many L1 wavefronts as the tile's own
  /// data):
  /// - all in one channel (NCHW-like, inner >= Count): one load;
  /// - consecutive channels without a wrap (channels-last, a row's bias): the values are
  ///   contiguous, loaded 16 bytes at a time when aligned;
  /// - otherwise a step per element, then all loads at once.
  /// A run of one channel, and the channels of one period, lie inside one span (a span is a
  /// multiple of inner * period), so only the per-element steps meet a span's end.
  template <int Count>
  __device__ __forceinline__ void load_general(BroadcastPosition position, ValueArray<T, Count>& out) const {
    const T* span_values = values;
    if constexpr (Spanned) span_values += position.base;
    if (position.offset + Count <= inner.divisor) {
      out.fill(cub::ThreadLoad<cub::LOAD_LDG>(span_values + position.channel));
      return;
    }
    T loaded[static_cast<std::size_t>(Count)];
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

/// Element counts larger than n do not change (i / inner) % period for i < n, and keep every
/// divisor within FastDivmod's range.
template <class T>
DeviceBroadcast<T> prepare_broadcast(const Broadcast<T>& b, std::size_t n) {
  const std::size_t inner = b.inner < n ? b.inner : n;
  const std::size_t period = b.period < n ? b.period : n;
  return DeviceBroadcast<T>{b.values, FastDivmod::make(inner), FastDivmod::make(period), n <= kNarrowIndexLimit};
}

/// The same for a SampleBroadcast (validated: span a multiple of inner * period). A span of n or
/// more is one span: the call never reaches the next.
template <class T>
DeviceBroadcast<T, true> prepare_broadcast(const SampleBroadcast<T>& b, std::size_t n) {
  const std::size_t inner = b.inner < n ? b.inner : n;
  const std::size_t period = b.period < n ? b.period : n;
  const std::size_t span = b.span < n ? b.span : n;
  DeviceBroadcast<T, true> prepared{b.values, FastDivmod::make(inner), FastDivmod::make(period), n <= kNarrowIndexLimit};
  prepared.span = FastDivmod::make(span);
  prepared.last_base = static_cast<std::uint64_t>((n - 1) / span) * period;
  return prepared;
}

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

/// Marks the broadcast operands whose positions are those of the first (located_like_first): the
/// same kind, inner and period (and span).
template <class... D, std::size_t... B>
void share_locations(cuda::std::tuple<D...>& broadcasts, cuda::std::index_sequence<B...>) {
  const auto& first = cuda::std::get<0>(broadcasts);
  using First = cuda::std::remove_cv_t<cuda::std::remove_reference_t<decltype(first)>>;
  const auto mark = [&](auto& b) {
    using This = cuda::std::remove_reference_t<decltype(b)>;
    b.located_like_first = This::kSpanned == First::kSpanned && b.inner.divisor == first.inner.divisor &&
                           b.period.divisor == first.period.divisor && b.span_length() == first.span_length();
  };
  (mark(cuda::std::get<B>(broadcasts)), ...);
}

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

/// Calls the user's policy with its arguments in the order the user gave the operands, when the
/// kernels pass the full-length inputs' values first and the broadcast operands' values after.
/// IsBroadcast holds, per operand in the user's order, whether it is a broadcast.
template <class Op, bool... IsBroadcast>
struct OperandOrder {
  Op op;

  __host__ __device__ bool is_valid() const { return policy_is_valid(op); }

  template <class... V>
  __host__ __device__ auto operator()(V... values) const {
    static_assert(sizeof...(V) == sizeof...(IsBroadcast), "hardact: one value per operand");
    const cuda::std::tuple<V...> kernel_order{values...};
    return call(kernel_order, cuda::std::make_index_sequence<sizeof...(V)>{});
  }

 private:
  /// Where operand k of the user's order sits in the kernel's order.
  __host__ __device__ static constexpr std::size_t kernel_position(std::size_t k) {
    constexpr bool broadcast[] = {IsBroadcast...};
    std::size_t full_count = 0, full_before = 0, broadcast_before = 0;
    for (std::size_t i = 0; i < sizeof...(IsBroadcast); ++i) {
      if (!broadcast[i]) ++full_count;
      if (i < k) (broadcast[i] ? broadcast_before : full_before) += 1;
    }
    return broadcast[k] ? full_count + broadcast_before : full_before;
  }

  template <class Tuple, std::size_t... K>
  __host__ __device__ auto call(const Tuple& kernel_order, cuda::std::index_sequence<K...>) const {
    return op(cuda::std::get<kernel_position(K)>(kernel_order)...);
  }
};

}  // namespace detail
}  // namespace hardact
