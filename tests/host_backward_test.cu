// Backward policies on the host (HardSigmoidBackward, HardTanhBackward, HardSwishBackward):
// for half and bfloat16 every x bit pattern against a set of grads, for float and double every
// pair of special values and 2^20 random pairs, all against the independent reference; plus the
// boundary facts of PyTorch's kernels (../shared/NOTES.md) that need no reference.
#include "support/bits.hpp"
#include "support/reference_family.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace hardact_test;
using family::on_elements;


/// Grads that exercise the product: ordinary, negative, inexact, subnormal, signed zero, inf, NaN.
template <class T>
std::vector<T> grads_for() {
  std::vector<T> grads;
  for (const double g : {1.0, -2.5, 0.1, 3e-5, -7.0e4, 1e-40, -0.0, 0.0, HUGE_VAL, -HUGE_VAL}) {
    grads.push_back(family::round_to<T>(g));
  }
  grads.push_back(from_bits<T>(1));  // smallest subnormal
  grads.push_back(family::round_to<T>(std::nan("")));
  return grads;
}

/// op(grad, x) against reference(grad, x): every x pattern x grads_for (16-bit types); special x
/// special and random pairs (float, double).
template <class T, class Op, class Reference>
::testing::AssertionResult pairs_match(const Op& op, const Reference& reference) {
  if constexpr (sizeof(T) == 2) {
    return family::host_pairs_match(op, reference, grads_for<T>(), family::all_patterns<T>());
  } else {
    const std::vector<T> specials = special_values<T>({-3.0, 3.0, -2.5, 2.5});
    ::testing::AssertionResult result = family::host_pairs_match(op, reference, specials, specials);
    if (!result) return result;
    const std::vector<T> grads = random_values<T>(1 << 20, 0x9e4d);
    const std::vector<T> xs = random_values<T>(1 << 20, 0x7c11);
    std::vector<T> outputs, expected;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      outputs.push_back(op(grads[i], xs[i]));
      expected.push_back(reference(grads[i], xs[i]));
    }
    return family::all_match(xs, outputs, expected);
  }
}

template <class T>
class HostBackward : public ::testing::Test {};
TYPED_TEST_SUITE(HostBackward, ElementTypes, TypeNames);

TYPED_TEST(HostBackward, HardSigmoidBackwardMatchesReference) {
  using T = TypeParam;
  EXPECT_TRUE(pairs_match<T>(hardact::HardSigmoidBackward{}, [](T grad, T x) {
    return on_elements<T>([](auto g, auto v) { return family::hard_sigmoid_backward(g, v); }, grad, x);
  }));
}

TYPED_TEST(HostBackward, HardSwishBackwardMatchesReference) {
  using T = TypeParam;
  EXPECT_TRUE(pairs_match<T>(hardact::HardSwishBackward{}, [](T grad, T x) {
    return on_elements<T>([](auto g, auto v) { return family::hard_swish_backward(g, v); }, grad, x);
  }));
}

TYPED_TEST(HostBackward, HardTanhBackwardMatchesReference) {
  using T = TypeParam;
  // Defaults, ReLU6, a signed-zero bound, inexact bounds, a float-subnormal bound, equal bounds.
  const double bounds[][2] = {{-1.0, 1.0}, {0.0, 6.0}, {-0.0, 0.5}, {-0.1, 0.3}, {0.0, 1e-40}, {2.0, 2.0}};
  for (const auto& b : bounds) {
    const double lo = b[0], hi = b[1];
    EXPECT_TRUE(pairs_match<T>(hardact::HardTanhBackward{lo, hi},
                               [&](T grad, T x) {
                                 return on_elements<T>(
                                     [&](auto g, auto v) { return family::hard_tanh_backward(g, v, lo, hi); }, grad, x);
                               }))
        << "bounds " << lo << ", " << hi;
  }
}

// Boundaries, from PyTorch's CUDA kernels and probes (../shared/NOTES.md).
TYPED_TEST(HostBackward, BoundaryFacts) {
  using T = TypeParam;
  const T grad = family::round_to<T>(-2.0);
  const T nan = family::round_to<T>(std::nan(""));
  const T zero = family::round_to<T>(0.0);
  const auto at = [](double x) { return family::round_to<T>(x); };

  const hardact::HardSwishBackward swish;
  EXPECT_EQ(to_bits(swish(grad, at(-3.0))), to_bits(zero));  // 0 at -3
  EXPECT_EQ(to_bits(swish(grad, at(3.0))), to_bits(grad));   // grad at 3
  EXPECT_EQ(to_bits(swish(grad, nan)), to_bits(grad));       // grad for NaN x
  EXPECT_EQ(family::value_of(swish(grad, at(0.0))), -1.0);   // grad * 0.5
  EXPECT_EQ(family::value_of(swish(grad, at(-1.5))), 0.0);   // grad * (-0.5 + 0.5)

  const hardact::HardSigmoidBackward sigmoid;
  EXPECT_EQ(to_bits(sigmoid(grad, at(-3.0))), to_bits(zero));
  EXPECT_EQ(to_bits(sigmoid(grad, at(3.0))), to_bits(zero));
  EXPECT_EQ(to_bits(sigmoid(grad, nan)), to_bits(zero));
  EXPECT_TRUE(std::isnan(family::value_of(sigmoid(nan, at(1.0)))));
  EXPECT_EQ(family::value_of(sigmoid(at(6.0), at(0.0))), 1.0);

  const hardact::HardTanhBackward tanh_default;
  EXPECT_EQ(to_bits(tanh_default(grad, at(-1.0))), to_bits(zero));
  EXPECT_EQ(to_bits(tanh_default(grad, at(1.0))), to_bits(zero));
  EXPECT_EQ(to_bits(tanh_default(grad, at(0.5))), to_bits(grad));
  EXPECT_EQ(to_bits(tanh_default(grad, nan)), to_bits(grad));
  const hardact::HardTanhBackward relu6_gradient{0.0, 6.0};
  EXPECT_EQ(to_bits(relu6_gradient(grad, at(-0.0))), to_bits(zero));
  EXPECT_EQ(to_bits(relu6_gradient(grad, from_bits<T>(1))), to_bits(grad));  // smallest positive subnormal
}

TEST(HostBackwardDouble, HardSigmoidBackwardDividesBySix) {
  // Documented choice: exact grad / 6 in double (PyTorch multiplies by float(1/6) widened).
  EXPECT_EQ(hardact::HardSigmoidBackward{}(1.0, 0.0), 1.0 / 6.0);
  EXPECT_NE(hardact::HardSigmoidBackward{}(1.0, 0.0), static_cast<double>(1.0f / 6.0f));
}

TEST(HostBackwardInterfaces, HardTanhBackwardIsValid) {
  EXPECT_TRUE((hardact::HardTanhBackward{}.is_valid()));
  EXPECT_TRUE((hardact::HardTanhBackward{0.0, 6.0}.is_valid()));
  EXPECT_TRUE((hardact::HardTanhBackward{2.0, 2.0}.is_valid()));
  EXPECT_FALSE((hardact::HardTanhBackward{1.0, -1.0}.is_valid()));
  EXPECT_FALSE((hardact::HardTanhBackward{std::nan(""), 1.0}.is_valid()));
  static_assert(hardact::HardTanhBackward{}.min_val == -1.0 && hardact::HardTanhBackward{}.max_val == 1.0,
                "PyTorch's defaults");
}

}  // namespace
