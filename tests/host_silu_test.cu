// SiLU on the host, where expf is the C library's (the device's is CUDA's, checked bit for bit
// against PyTorch's formula by device_silu_test): PyTorch's special values, subnormals halved and
// kept, and every result within two units in the last place of x / (1 + exp(-x)) in long double,
// rounded to the element type (-0.0 where exp(-x) overflows the compute type, as the formula gives) (every half and bfloat16 pattern, random float and double values).
#include "support/bits.hpp"
#include "support/reference_family.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace {

using namespace hardact_test;

template <class T>
class HostSiLU : public ::testing::Test {};
TYPED_TEST_SUITE(HostSiLU, ElementTypes, TypeNames);

/// Position of a non-NaN value on the line of representable values (adjacent values differ by 1).
template <class T>
std::int64_t ordinal(T value) {
  const auto bits = static_cast<std::uint64_t>(to_bits(value));
  const std::uint64_t sign = std::uint64_t(1) << (8 * sizeof(T) - 1);
  const auto magnitude = static_cast<std::int64_t>(bits & (sign - 1));
  return (bits & sign) != 0 ? -magnitude : magnitude;
}

template <class T>
std::vector<T> silu_inputs() {
  if constexpr (sizeof(T) == 2) {
    return all_patterns<T>();
  } else {
    return random_values<T>(std::size_t(1) << 18, 0x5117, {1e-40, -1e-40, -88.0, -89.0, 88.7, -103.9, 20.0, -20.0});
  }
}

TYPED_TEST(HostSiLU, WithinTwoUlpOfTheExactValue) {
  using T = TypeParam;
  std::size_t differing = 0;
  for (const T x : silu_inputs<T>()) {
    const long double v = family::value_of(x);
    const T got = hardact::SiLU{}(x);
    if (std::isinf(v) && v < 0) continue;  // -inf / inf is NaN: SpecialValuesAsPyTorch
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(family::value_of(got))) << describe(x);
      continue;
    }
    // Past the compute type's range exp(-x) is +inf and the formula gives -0.0, as PyTorch's does.
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const long double e = std::exp(-v), limit = std::numeric_limits<C>::max();
    if (e > limit * 0.999999L && e < limit * 1.000001L) continue;  // which side rounding takes
    const T want = family::round_to<T>(e > limit ? -0.0 : static_cast<double>(v / (1.0L + e)));
    const std::int64_t distance = ordinal(got) - ordinal(want);
    if (std::isnan(family::value_of(got)) || distance > 2 || distance < -2) {
      if (differing++ < 5) ADD_FAILURE() << type_name<T>() << " x=" << describe(x) << ": " << describe(got) << ", want " << describe(want);
    }
  }
  EXPECT_EQ(differing, 0u) << type_name<T>();
}

TYPED_TEST(HostSiLU, SpecialValuesAsPyTorch) {
  using T = TypeParam;
  const hardact::SiLU op;
  const auto of = [&](double x) { return op(family::round_to<T>(x)); };
  EXPECT_TRUE(std::isnan(family::value_of(of(std::numeric_limits<double>::quiet_NaN()))));
  EXPECT_EQ(family::value_of(of(HUGE_VAL)), HUGE_VAL);
  EXPECT_TRUE(std::isnan(family::value_of(of(-HUGE_VAL)))) << "-inf / (1 + inf) is NaN in PyTorch";
  EXPECT_EQ(to_bits(of(-0.0)), to_bits(family::round_to<T>(-0.0))) << "-0.0 / 2 keeps its sign";
  EXPECT_EQ(to_bits(of(0.0)), to_bits(family::round_to<T>(0.0)));
  // exp(1000) overflows: x / inf is -0.0.
  EXPECT_EQ(to_bits(of(-1000.0)), to_bits(family::round_to<T>(-0.0)));
  EXPECT_EQ(family::value_of(of(1000.0)), family::value_of(family::round_to<T>(1000.0)));
}

// exp(-x) rounds to 1 for a subnormal x, so silu(x) is x / 2, correctly rounded: kept, not flushed.
TEST(HostSiLUFacts, HalvesSubnormals) {
  for (const float x : {std::numeric_limits<float>::denorm_min() * 8, -std::numeric_limits<float>::denorm_min() * 6,
                        std::numeric_limits<float>::min() / 3}) {
    EXPECT_EQ(to_bits(hardact::SiLU{}(x)), to_bits(x / 2.0f)) << describe(x);
  }
  const double tiny = std::numeric_limits<double>::denorm_min() * 10;
  EXPECT_EQ(hardact::SiLU{}(tiny), tiny / 2);
}

}  // namespace
