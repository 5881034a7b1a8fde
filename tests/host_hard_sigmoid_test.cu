// HardSigmoid on the host, per element type, against the independent reference and against
// facts that need no reference (PyTorch's sample outputs, saturation, NaN, monotonicity).
#include "support/bits.hpp"
#include "support/compare.hpp"
#include "support/reference.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using namespace hardact_test;


template <class T>
class HostHardSigmoid : public ::testing::Test {};
TYPED_TEST_SUITE(HostHardSigmoid, ElementTypes, TypeNames);

TYPED_TEST(HostHardSigmoid, SpecialValuesMatchReference) {
  using T = TypeParam;
  EXPECT_TRUE(host_op_matches_reference(hardact::HardSigmoid{}, reference::HardSigmoid{}, special_values<T>(),
                                        NanBits::Any));
}

TYPED_TEST(HostHardSigmoid, RandomValuesMatchReference) {
  using T = TypeParam;
  EXPECT_TRUE(host_op_matches_reference(hardact::HardSigmoid{}, reference::HardSigmoid{},
                                        random_values<T>(1 << 20, 0x5151), NanBits::Any));
}

TYPED_TEST(HostHardSigmoid, SaturatesAtExactlyZeroAndOne) {
  using T = TypeParam;
  const hardact::HardSigmoid op;
  // Exactly 0 and 1 in every type, double included (PyTorch's double gives 1.0000000298).
  for (const double x : {3.0, 4.0, 1e4, 1e30, HUGE_VAL}) {
    EXPECT_EQ(to_double(op(from_double<T>(x))), 1.0) << type_name<T>() << " x=" << x;
  }
  for (const double x : {-3.0, -4.0, -1e4, -1e30, -HUGE_VAL}) {
    const T y = op(from_double<T>(x));
    EXPECT_EQ(to_bits(y), to_bits(from_double<T>(0.0))) << type_name<T>() << " x=" << x << " gave " << describe(y);
  }
  EXPECT_EQ(to_double(op(from_double<T>(0.0))), 0.5);
  EXPECT_EQ(to_double(op(from_double<T>(-0.0))), 0.5);
}

TYPED_TEST(HostHardSigmoid, NanInNanOut) {
  using T = TypeParam;
  using P = Patterns<T>;
  using Bits = typename P::Bits;
  for (const Bits magnitude : {Bits(P::kInfinity | P::kQuietBit), Bits(P::kInfinity | 1), Bits(P::kInfinity | P::kMantissa)}) {
    for (const Bits sign : {Bits(0), P::kSign}) {
      const T x = from_bits<T>(Bits(magnitude | sign));
      EXPECT_TRUE(is_nan(hardact::HardSigmoid{}(x))) << describe(x);
    }
  }
}

TYPED_TEST(HostHardSigmoid, MonotoneAndWithinUnitInterval) {
  using T = TypeParam;
  std::vector<T> inputs = random_values<T>(1 << 16, 0x30e0);
  inputs.erase(std::remove_if(inputs.begin(), inputs.end(), [](T x) { return is_nan(x); }), inputs.end());
  std::sort(inputs.begin(), inputs.end(), [](T a, T b) { return to_double(a) < to_double(b); });
  double previous = 0.0;
  for (const T x : inputs) {
    const double y = to_double(hardact::HardSigmoid{}(x));
    ASSERT_GE(y, 0.0) << describe(x);
    ASSERT_LE(y, 1.0) << describe(x);
    ASSERT_GE(y, previous) << "not monotone at " << describe(x);
    previous = y;
  }
}

template <class T>
class HostHardSigmoidHalfWidth : public ::testing::Test {};
using HalfWidthTypes = ::testing::Types<__half, __nv_bfloat16>;
TYPED_TEST_SUITE(HostHardSigmoidHalfWidth, HalfWidthTypes, TypeNames);

TYPED_TEST(HostHardSigmoidHalfWidth, EveryBitPatternMatchesReference) {
  using T = TypeParam;
  EXPECT_TRUE(host_op_matches_reference(hardact::HardSigmoid{}, reference::HardSigmoid{}, all_patterns<T>(), NanBits::Any));
}

// Outputs PyTorch 2.11 printed on the H100 (../shared/NOTES.md).
TEST(HostHardSigmoidPyTorchSamples, Float) {
  const hardact::HardSigmoid op;
  EXPECT_EQ(op(-2.9999998f), 3.9736431e-08f);
  EXPECT_EQ(op(0.1f), 0.51666665f);
  EXPECT_EQ(reference::hard_sigmoid(-2.9999998f), 3.9736431e-08f);
  EXPECT_EQ(reference::hard_sigmoid(0.1f), 0.51666665f);
}

TEST(HostHardSigmoidPyTorchSamples, BFloat16) {
  const hardact::HardSigmoid op;
  EXPECT_EQ(__bfloat162float(op(__float2bfloat16_rn(0.1f))), 0.515625f);
  EXPECT_EQ(__bfloat162float(op(__float2bfloat16_rn(0.7f))), 0.6171875f);
  EXPECT_EQ(__bfloat162float(reference::hard_sigmoid(__float2bfloat16_rn(0.1f))), 0.515625f);
  EXPECT_EQ(__bfloat162float(reference::hard_sigmoid(__float2bfloat16_rn(0.7f))), 0.6171875f);
}

// The float path multiplies by float(1/6); dividing by 6 is a different function. This input
// is one where the two differ, found independently of the policy.
TEST(HostHardSigmoidPyTorchSamples, FloatMultipliesByOneSixthRatherThanDividing) {
  float witness = 0.0f;
  for (float x = -2.5f; x < 2.5f; x = std::nextafter(x, 3.0f)) {
    const float shifted = x + 3.0f;
    if (shifted * (1.0f / 6.0f) != shifted / 6.0f) {
      witness = x;
      break;
    }
  }
  ASSERT_NE(witness, 0.0f) << "no input near -2.5 where x*(1/6) and x/6 differ";
  const float shifted = witness + 3.0f;
  EXPECT_EQ(to_bits(hardact::HardSigmoid{}(witness)), to_bits(shifted * (1.0f / 6.0f))) << describe(witness);
  EXPECT_NE(to_bits(hardact::HardSigmoid{}(witness)), to_bits(shifted / 6.0f)) << describe(witness);
}

}  // namespace
