// The affine policies on the host (the slope-offset HardSigmoid, Affine, Scale, Offset): every half
// and bfloat16 bit pattern, random and special float and double values, against the independent
// reference in support/reference_family.hpp, plus the ONNX HardSigmoid's saturation and the types'
// interfaces (parameters, validity).
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
class HostAffine : public ::testing::Test {};
TYPED_TEST_SUITE(HostAffine, ElementTypes, TypeNames);

TYPED_TEST(HostAffine, HardSigmoidAffineMatchesReference) {
  using T = TypeParam;
  // ONNX defaults, PyTorch-like slope, a negative slope, and a zero offset (subnormal results).
  const double parameters[][2] = {{0.2, 0.5}, {1.0 / 6.0, 0.5}, {-2.5, 0.25}, {3.0, 0.0}, {1e-3, -1e-3}};
  for (const auto& p : parameters) {
    const double alpha = p[0], beta = p[1];
    EXPECT_TRUE(policy_matches<T>(
        hardact::HardSigmoid::affine(alpha, beta),
        [&](T x) { return on_elements<T>([&](auto v) { return family::hard_sigmoid_affine(v, alpha, beta); }, x); }))
        << "alpha " << alpha << " beta " << beta;
  }
}

TYPED_TEST(HostAffine, AffineStepsMatchReference) {
  using T = TypeParam;
  for (const double scale : {2.0, 0.1, -1e-3, 1e30}) {
    for (const double offset : {0.0, -0.0, 0.3, -3.0}) {
      EXPECT_TRUE(
          policy_matches<T>(hardact::Affine{scale, offset},
                     [&](T x) { return on_elements<T>([&](auto v) { return family::affine(v, scale, offset); }, x); }))
          << "Affine{" << scale << ", " << offset << "}";
    }
    EXPECT_TRUE(policy_matches<T>(hardact::Scale{scale},
                           [&](T x) { return on_elements<T>([&](auto v) { return family::scale(v, scale); }, x); }))
        << "Scale{" << scale << "}";
  }
  for (const double offset : {0.0, -0.0, 0.3, -3.0, 1e-40}) {
    EXPECT_TRUE(policy_matches<T>(hardact::Offset{offset},
                           [&](T x) { return on_elements<T>([&](auto v) { return family::offset(v, offset); }, x); }))
        << "Offset{" << offset << "}";
  }
}

TYPED_TEST(HostAffine, OnnxHardSigmoidSaturatesAtZeroAndOne) {
  using T = TypeParam;
  const auto op = hardact::HardSigmoid::onnx();
  for (const double x : {2.5, 3.0, 100.0, HUGE_VAL}) EXPECT_EQ(family::value_of(op(family::round_to<T>(x))), 1.0) << x;
  for (const double x : {-2.5, -3.0, -100.0, -HUGE_VAL}) {
    EXPECT_EQ(to_bits(op(family::round_to<T>(x))), to_bits(family::round_to<T>(0.0))) << x;  // +0, never -0
  }
  EXPECT_EQ(family::value_of(op(family::round_to<T>(0.0))), 0.5);
  EXPECT_TRUE(std::isnan(family::value_of(op(family::round_to<T>(std::nan(""))))));
}

TEST(HostAffineInterfaces, HardSigmoidStaysParameterFree) {
  static_assert(std::is_empty_v<hardact::HardSigmoid>, "HardSigmoid{} must stay parameter-free");
  static_assert(std::is_aggregate_v<hardact::HardSigmoid>, "HardSigmoid{} must stay an aggregate");
  constexpr hardact::HardSigmoidAffine onnx = hardact::HardSigmoid::onnx();
  static_assert(onnx.alpha == 0.2 && onnx.beta == 0.5, "ONNX defaults");
  constexpr hardact::HardSigmoidAffine custom = hardact::HardSigmoid::affine(0.25, 0.125);
  static_assert(custom.alpha == 0.25 && custom.beta == 0.125, "affine keeps its arguments");
  static_assert(std::is_trivially_copyable_v<hardact::HardSigmoidAffine>, "kernel argument");
  static_assert(std::is_empty_v<hardact::ReLU6> && std::is_empty_v<hardact::HardSwish>, "no parameters");
  SUCCEED();
}

TEST(HostAffineInterfaces, IsValidRejectsNonFiniteParameters) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = HUGE_VAL;
  EXPECT_TRUE(hardact::HardSigmoid::onnx().is_valid());
  EXPECT_TRUE(hardact::HardSigmoid::affine(-1.0, 0.0).is_valid());
  EXPECT_FALSE(hardact::HardSigmoid::affine(nan, 0.5).is_valid());
  EXPECT_FALSE(hardact::HardSigmoid::affine(0.2, inf).is_valid());
  EXPECT_TRUE((hardact::Scale{-2.0}.is_valid()));
  EXPECT_FALSE((hardact::Scale{nan}.is_valid()));
  EXPECT_FALSE((hardact::Offset{-inf}.is_valid()));
  EXPECT_FALSE((hardact::Affine{1.0, nan}.is_valid()));
  EXPECT_TRUE((hardact::Affine{}.is_valid()));
}

}  // namespace
