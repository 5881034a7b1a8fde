// Test support: bit-level views and comparisons of float, double, half and bfloat16 values.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace hardact_test {

template <class T>
using bits_t = std::conditional_t<sizeof(T) == 8, std::uint64_t,
                                  std::conditional_t<sizeof(T) == 4, std::uint32_t,
                                                     std::conditional_t<sizeof(T) == 2, std::uint16_t, std::uint8_t>>>;

template <class T>
bits_t<T> to_bits(T value) {
  bits_t<T> bits;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

template <class T>
T from_bits(bits_t<T> bits) {
  T value;
  std::memcpy(static_cast<void*>(&value), &bits, sizeof(T));  // void*: __half has private members
  return value;
}

/// All 65,536 bit patterns of a 16-bit type, or all 256 of an 8-bit type.
template <class T>
std::vector<T> all_patterns() {
  static_assert(sizeof(T) <= 2, "only 8- and 16-bit types can be enumerated");
  std::vector<T> values;
  const std::uint32_t count = 1u << (8 * sizeof(T));
  values.reserve(count);
  for (std::uint32_t bits = 0; bits < count; ++bits) values.push_back(from_bits<T>(static_cast<bits_t<T>>(bits)));
  return values;
}

// Rounding to 16 bits by integer arithmetic where it is simple (zero, normal numbers, rounding up
// to infinity), CUDA's host conversions elsewhere (NaN, infinity, subnormals): a double rounds in
// about 1.3 ns where MiniFormat::encode (support/reference_family.hpp) took 11 and __double2half
// 2.7 (g++ 12 -O3, one CI core).

template <class T>
inline constexpr bool is_16bit_float = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

/// The pattern of T (half or bfloat16) nearest `value`, ties to even, where `value` is zero or
/// rounds to a normal number or, past the largest finite one, to infinity; false for any other
/// value (NaN, infinity, a result below the smallest normal number).
template <class T>
bool nearest_16bit_pattern(double value, std::uint16_t& pattern) {
  static_assert(is_16bit_float<T>, "half or bfloat16");
  constexpr int kMantissaBits = std::is_same_v<T, __half> ? 10 : 7;
  constexpr int kLargestExponent = std::is_same_v<T, __half> ? 30 : 254;  // biased
  constexpr int kBias = std::is_same_v<T, __half> ? 15 : 127;
  constexpr int kDropped = 52 - kMantissaBits;
  const std::uint64_t bits = to_bits(value);
  const std::uint64_t sign = (bits >> 48) & 0x8000u;
  const std::uint64_t magnitude = bits & 0x7fffffffffffffffull;
  if (magnitude == 0) {
    pattern = static_cast<std::uint16_t>(sign);
    return true;
  }
  const int exponent = static_cast<int>(magnitude >> 52) - 1023 + kBias;
  if (exponent < 1 || exponent > kLargestExponent) return false;
  std::uint64_t result = (static_cast<std::uint64_t>(exponent) << kMantissaBits) |
                         ((magnitude >> kDropped) & ((1u << kMantissaBits) - 1));
  const std::uint64_t rest = magnitude & ((std::uint64_t{1} << kDropped) - 1);
  const std::uint64_t halfway = std::uint64_t{1} << (kDropped - 1);
  if (rest > halfway || (rest == halfway && (result & 1u) != 0)) ++result;  // a carry moves to the next binade
  pattern = static_cast<std::uint16_t>(sign | result);
  return true;
}

/// `value` rounded to the nearest T (half or bfloat16), ties to even, as __double2half and
/// __double2bfloat16 round (no flush-to-zero).
template <class T>
T nearest_16bit(double value) {
  std::uint16_t pattern;
  if (nearest_16bit_pattern<T>(value, pattern)) return from_bits<T>(pattern);
  if constexpr (std::is_same_v<T, __half>) {
    return __double2half(value);
  } else {
    return __double2bfloat16(value);
  }
}

/// The float a half or bfloat16 holds, exactly, by integer arithmetic (a NaN keeps its payload's
/// bits, shifted into float's): as fast as CUDA's host widening, and independent of it.
template <class T>
float widen_16bit(T value) {
  static_assert(is_16bit_float<T>, "half or bfloat16");
  const std::uint32_t bits = to_bits(value);
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return from_bits<float>(bits << 16);
  } else {
    const std::uint32_t sign = (bits & 0x8000u) << 16, exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
    if (exponent == 0) {  // zero, subnormal: the mantissa times 2^-24
      const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
      return sign != 0 ? -magnitude : magnitude;
    }
    const std::uint32_t wide_exponent = exponent == 0x1fu ? 0xffu : exponent + 112;  // infinity and NaN stay so
    return from_bits<float>(sign | (wide_exponent << 23) | (mantissa << 13));
  }
}

/// Exact value of an element as a double (every supported type widens exactly).
template <class T>
double to_double(T value) {
  if constexpr (std::is_same_v<T, __half>) {
    return static_cast<double>(__half2float(value));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return static_cast<double>(__bfloat162float(value));
  } else {
    return static_cast<double>(value);
  }
}

template <class T>
bool is_nan(T value) {
  return std::isnan(to_double(value));
}

/// Equal bit for bit, except that any NaN matches any NaN: NaN payloads differ between host
/// arithmetic (x86 keeps them) and device arithmetic (which returns the canonical NaN).
template <class T>
bool same_bits_or_both_nan(T a, T b) {
  if (is_nan(a) || is_nan(b)) return is_nan(a) && is_nan(b);
  return to_bits(a) == to_bits(b);
}

template <class T>
std::string describe(T value) {
  std::ostringstream out;
  out.precision(17);
  out << to_double(value) << " (0x" << std::hex << static_cast<std::uint64_t>(to_bits(value)) << ")";
  return out.str();
}

}  // namespace hardact_test
