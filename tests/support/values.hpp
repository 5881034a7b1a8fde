// Test support: interesting input values for float, double, half and bfloat16: special values
// (NaN payloads, infinities, signed zeros, subnormals, extremes), ulp neighbourhoods of chosen
// points, and reproducible random data salted with all of them.
#pragma once

#include "support/bits.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

namespace hardact_test {

/// Bit layout of an IEEE-style binary floating-point type.
template <class T>
struct FloatFormat;
template <>
struct FloatFormat<float> {
  static constexpr int mantissa_bits = 23;
};
template <>
struct FloatFormat<double> {
  static constexpr int mantissa_bits = 52;
};
template <>
struct FloatFormat<__half> {
  static constexpr int mantissa_bits = 10;
};
template <>
struct FloatFormat<__nv_bfloat16> {
  static constexpr int mantissa_bits = 7;
};

/// Named bit patterns of T.
template <class T>
struct Patterns {
  using Bits = bits_t<T>;
  static constexpr int kBits = 8 * sizeof(T);
  static constexpr int kMantissaBits = FloatFormat<T>::mantissa_bits;
  static constexpr Bits kSign = Bits(Bits(1) << (kBits - 1));
  static constexpr Bits kMantissa = Bits((Bits(1) << kMantissaBits) - 1);
  static constexpr Bits kInfinity = Bits(~kSign & ~kMantissa);
  static constexpr Bits kQuietBit = Bits(Bits(1) << (kMantissaBits - 1));
  static constexpr Bits kMaxFinite = Bits(kInfinity - 1);
  static constexpr Bits kMinNormal = Bits(Bits(1) << kMantissaBits);
};

template <class T>
std::string type_name() {
  if constexpr (std::is_same_v<T, float>) return "float";
  if constexpr (std::is_same_v<T, double>) return "double";
  if constexpr (std::is_same_v<T, __half>) return "half";
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return "bfloat16";
  return "unknown";
}

/// The four element types every policy supports, for typed test suites. A test built by type
/// (HARDACT_TESTS_BY_TYPE and HARDACT_TESTS_BY_ONE_TYPE in tests/CMakeLists.txt) is several
/// executables that compile in parallel: HARDACT_TEST_TYPE_PART 1 with float and double, 2 with
/// half and bfloat16; 3, 4, 5 and 6 with float, double, half and bfloat16 alone.
#if !defined(HARDACT_TEST_TYPE_PART)
using ElementTypes = ::testing::Types<float, double, __half, __nv_bfloat16>;
#elif HARDACT_TEST_TYPE_PART == 1
using ElementTypes = ::testing::Types<float, double>;
#elif HARDACT_TEST_TYPE_PART == 2
using ElementTypes = ::testing::Types<__half, __nv_bfloat16>;
#elif HARDACT_TEST_TYPE_PART == 3
using ElementTypes = ::testing::Types<float>;
#elif HARDACT_TEST_TYPE_PART == 4
using ElementTypes = ::testing::Types<double>;
#elif HARDACT_TEST_TYPE_PART == 5
using ElementTypes = ::testing::Types<__half>;
#elif HARDACT_TEST_TYPE_PART == 6
using ElementTypes = ::testing::Types<__nv_bfloat16>;
#else
#error "HARDACT_TEST_TYPE_PART is 1 (float, double), 2 (half, bfloat16), 3 (float), 4 (double), 5 (half) or 6 (bfloat16)"
#endif
/// 1 where this executable holds its file's cases that are not typed: the whole test, or the part
/// with float.
#if !defined(HARDACT_TEST_TYPE_PART) || HARDACT_TEST_TYPE_PART == 1 || HARDACT_TEST_TYPE_PART == 3
#define HARDACT_TEST_UNTYPED_CASES 1
#else
#define HARDACT_TEST_UNTYPED_CASES 0
#endif

/// Names typed-test instances after their element type ("float", "double", "half", "bfloat16").
struct TypeNames {
  template <class T>
  static std::string GetName(int) {
    return type_name<T>();
  }
};

/// `value` rounded to nearest-even in T (no flush-to-zero).
template <class T>
T from_double(double value) {
  if constexpr (is_16bit_float<T>) {
    return nearest_16bit<T>(value);
  } else {
    return static_cast<T>(value);
  }
}

/// T(point) and its `radius` neighbours on either side in T's grid (same sign, up to infinity).
template <class T>
void append_neighbourhood(std::vector<T>& values, double point, int radius) {
  using P = Patterns<T>;
  using Bits = typename P::Bits;
  const Bits center = to_bits(from_double<T>(point));
  const Bits sign = center & P::kSign;
  const Bits magnitude = center & Bits(~P::kSign);
  if (magnitude > P::kInfinity) return;  // NaN: nothing around it
  for (int step = -radius; step <= radius; ++step) {
    const long long candidate = static_cast<long long>(magnitude) + step;
    if (candidate < 0 || candidate > static_cast<long long>(P::kInfinity)) continue;
    values.push_back(from_bits<T>(Bits(sign | static_cast<Bits>(candidate))));
  }
}

/// NaNs (quiet and signalling, both signs, several payloads), infinities, signed zeros,
/// subnormals, extremes, and a few ulps around the points where the activations bend
/// (±3, ±1, 0, ±6), PyTorch's sample inputs, and every point in `extra_points` (e.g. bounds).
template <class T>
std::vector<T> special_values(std::initializer_list<double> extra_points = {}) {
  using P = Patterns<T>;
  using Bits = typename P::Bits;
  std::vector<T> values;
  const Bits magnitudes[] = {
      Bits(0),                                     // zero
      Bits(1),                                     // smallest subnormal
      Bits(2),
      Bits(P::kMantissa / 3),                      // a middling subnormal
      P::kMantissa,                                // largest subnormal
      P::kMinNormal,                               // smallest normal
      P::kMaxFinite,                               // largest finite
      P::kInfinity,                                // infinity
      Bits(P::kInfinity | P::kQuietBit),           // canonical quiet NaN
      Bits(P::kInfinity | 1),                      // signalling NaN, payload 1
      Bits(P::kInfinity | P::kMantissa),           // NaN with every payload bit set
      Bits(P::kInfinity | P::kQuietBit | (P::kMantissa / 5)),  // quiet NaN with a payload
  };
  for (const Bits magnitude : magnitudes) {
    values.push_back(from_bits<T>(magnitude));
    values.push_back(from_bits<T>(Bits(magnitude | P::kSign)));
  }
  const double points[] = {3.0, 1.0, 6.0, 0.5, 0.1, 0.7, 2.9999998, 1e-3, 1e-5, 1e-40,
                           1e10, 65504.0, 65520.0, 3.3895313892515355e38, 1e300};
  for (const double point : points) {
    append_neighbourhood(values, point, 3);
    append_neighbourhood(values, -point, 3);
  }
  for (const double point : extra_points) append_neighbourhood(values, point, 3);
  return values;
}

/// A small generator whose sequence the seed alone fixes (splitmix64). The device tests' host time
/// is spent making inputs and checking outputs; std::mt19937_64 through std::uniform_*_distribution
/// made inputs at 23-28 ns an element, this at 9-16 (g++ 12 -O3, one CI core).
class TestRandom {
 public:
  explicit TestRandom(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// In [0, n) for 0 < n < 2^32: the high 32 bits scaled (bias below n / 2^32).
  std::uint32_t below(std::uint32_t n) {
    return static_cast<std::uint32_t>(((next() >> 32) * static_cast<std::uint64_t>(n)) >> 32);
  }
  /// In [lo, hi): 53 random bits scaled.
  double uniform(double lo, double hi) { return lo + (hi - lo) * (static_cast<double>(next() >> 11) * 0x1.0p-53); }

 private:
  std::uint64_t state_;
};

/// `count` reproducible values: mostly in [-8, 8] and close to the bend points, with raw random
/// bit patterns (any class) and the special values mixed in at random positions.
template <class T>
std::vector<T> random_values(std::size_t count, std::uint64_t seed, std::initializer_list<double> extra_points = {}) {
  using Bits = bits_t<T>;
  const std::vector<T> specials = special_values<T>(extra_points);
  const std::uint32_t special_count = static_cast<std::uint32_t>(specials.size());
  TestRandom random(seed);
  constexpr double kBends[] = {-6.0, -3.0, -1.0, 0.0, 1.0, 3.0, 6.0};
  double offset_scales[40];  // 2^-1 ... 2^-40: how far from a bend point
  for (int k = 0; k < 40; ++k) offset_scales[k] = std::ldexp(1.0, -(k + 1));

  std::vector<T> values(count);
  for (T& value : values) {
    const std::uint32_t kind = random.below(100);
    if (kind < 40) {
      value = from_double<T>(random.uniform(-8.0, 8.0));
    } else if (kind < 60) {
      const double bend = kBends[random.below(7)];
      value = from_double<T>(bend + random.uniform(-1.0, 1.0) * offset_scales[random.below(40)]);
    } else if (kind < 85) {
      value = from_bits<T>(static_cast<Bits>(random.next()));
    } else {
      value = specials[random.below(special_count)];
    }
  }
  return values;
}

}  // namespace hardact_test
