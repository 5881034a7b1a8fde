// HardSwish on the host: every half and bfloat16 bit pattern, random and special float and double
// values, against the independent reference in support/reference_family.hpp, plus facts that need
// no reference (PyTorch's signed zeros and infinities, its order of multiplication, subnormal
// products).
#include "support/bits.hpp"
#include "support/reference_family.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using namespace hardact_test;
using family::on_elements;

using family::policy_matches;

template <class T>
class HostHardSwish : public ::testing::Test {};
TYPED_TEST_SUITE(HostHardSwish, ElementTypes, TypeNames);

TYPED_TEST(HostHardSwish, MatchesReference) {
  using T = TypeParam;
  EXPECT_TRUE(policy_matches<T>(hardact::HardSwish{},
                         [](T x) { return on_elements<T>([](auto v) { return family::hard_swish(v); }, x); }));
}

TYPED_TEST(HostHardSwish, SignedZeroAndInfinities) {
  using T = TypeParam;
  const hardact::HardSwish op;
  // x < -3: x * 0 is -0.0, kept as PyTorch does; -inf * 0 is NaN; +inf stays +inf.
  for (const double x : {-3.5, -4.0, -1e4}) {
    const T y = op(family::round_to<T>(x));
    EXPECT_EQ(to_bits(y), to_bits(family::round_to<T>(-0.0))) << type_name<T>() << " x=" << x;
  }
  EXPECT_TRUE(std::isnan(family::value_of(op(family::round_to<T>(-HUGE_VAL)))));
  EXPECT_EQ(family::value_of(op(family::round_to<T>(HUGE_VAL))), HUGE_VAL);
  EXPECT_EQ(family::value_of(op(family::round_to<T>(3.0))), 3.0);
  EXPECT_EQ(family::value_of(op(family::round_to<T>(0.0))), 0.0);
}

// Fact from PyTorch's kernel order: (x * gate) * (1/6) is not x * (gate * (1/6)). A float where
// the two orders differ is searched independently of the policy; the policy must take the first.
TEST(HostHardSwishFacts, MultipliesInPyTorchOrder) {
  float witness = 0.0f;
  for (float x = 0.5f; x < 2.5f; x = std::nextafter(x, 3.0f)) {
    const float gate = x + 3.0f;
    if ((x * gate) * (1.0f / 6.0f) != x * (gate * (1.0f / 6.0f))) {
      witness = x;
      break;
    }
  }
  ASSERT_NE(witness, 0.0f);
  const float gate = witness + 3.0f;
  EXPECT_EQ(to_bits(hardact::HardSwish{}(witness)), to_bits((witness * gate) * (1.0f / 6.0f))) << witness;
}

TEST(HostHardSwishFacts, KeepsSubnormalProducts) {
  const float tiny = std::numeric_limits<float>::denorm_min() * 8;  // x * 3 / 6 = 4 * denorm_min
  EXPECT_EQ(hardact::HardSwish{}(tiny), std::numeric_limits<float>::denorm_min() * 4);
}

}  // namespace
