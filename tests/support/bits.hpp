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
