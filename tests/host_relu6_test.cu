// ReLU6 on the host: every half and bfloat16 bit pattern, random and special float and double
// values, against the independent reference in support/reference_family.hpp, plus PyTorch's signed
// zeros, saturation and NaN, which need no reference.
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
class HostReLU6 : public ::testing::Test {};
TYPED_TEST_SUITE(HostReLU6, ElementTypes, TypeNames);

TYPED_TEST(HostReLU6, MatchesReference) {
  using T = TypeParam;
  EXPECT_TRUE(
      policy_matches<T>(hardact::ReLU6{}, [](T x) { return on_elements<T>([](auto v) { return family::relu6(v); }, x); }));
}

TYPED_TEST(HostReLU6, ZerosAndNaN) {
  using T = TypeParam;
  const hardact::ReLU6 op;
  // PyTorch's relu6 returns +0.0 for -0.0 and tiny negatives in every dtype.
  for (const double x : {-0.0, -1e-300, -1e-40, -1e-8, -1.0}) {
    const T y = op(family::round_to<T>(x));
    EXPECT_EQ(to_bits(y), to_bits(family::round_to<T>(0.0)))
        << type_name<T>() << " x=" << x << " gave " << family::show(y);
  }
  EXPECT_EQ(family::value_of(op(family::round_to<T>(7.0))), 6.0);
  EXPECT_EQ(family::value_of(op(family::round_to<T>(HUGE_VAL))), 6.0);
  EXPECT_TRUE(std::isnan(family::value_of(op(family::round_to<T>(std::nan(""))))));
}

}  // namespace
