/// @file fast_divmod.cuh
/// @brief Division by a divisor fixed at launch, as a multiply-high and a shift: how the kernels
///        find a broadcast operand's value for element i without a 64-bit `/` per element.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hardact {
namespace detail {

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

}  // namespace detail
}  // namespace hardact
