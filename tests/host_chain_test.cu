// hardact::chain on the host: fused steps equal the independent reference evaluated step by step
// in the compute type and rounded once (every 16-bit pattern; special and random float/double),
// one rounding is observable on bfloat16, two-input chains, is_valid forwarding, and the types.
#include "support/bits.hpp"
#include "support/reference_family.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using namespace hardact_test;
using family::on_elements;


template <class T>
std::vector<T> inputs_for() {
  return family::host_inputs<T>({-0.5, 0.5, -1.25, 2.0}, 1 << 18, 0xc4a1);
}

template <class T, class Op, class Reference>
::testing::AssertionResult matches(const Op& op, const Reference& reference) {
  return family::host_matches(op, reference, inputs_for<T>());
}

template <class T>
class HostChain : public ::testing::Test {};
TYPED_TEST_SUITE(HostChain, ElementTypes, TypeNames);

// scale -> clamp -> offset, a chain PyTorch needs three kernels for.
TYPED_TEST(HostChain, ScaleClampOffsetMatchesReference) {
  using T = TypeParam;
  const auto fused = hardact::chain(hardact::Scale{2.0}, hardact::HardTanh{}, hardact::Offset{0.25});
  EXPECT_TRUE(matches<T>(fused, [](T x) {
    return on_elements<T>(
        [](auto v) { return family::offset(family::hard_tanh(family::scale(v, 2.0), -1.0, 1.0), 0.25); }, x);
  }));
}

TYPED_TEST(HostChain, ActivationsAndAffineMatchReference) {
  using T = TypeParam;
  const auto fused = hardact::chain(hardact::Affine{0.5, -1.0}, hardact::HardSwish{}, hardact::ReLU6{},
                                    hardact::HardSigmoid{}, hardact::HardSigmoid::onnx());
  EXPECT_TRUE(matches<T>(fused, [](T x) {
    return on_elements<T>(
        [](auto v) {
          const auto swish = family::hard_swish(family::affine(v, 0.5, -1.0));
          return family::hard_sigmoid_affine(family::hard_sigmoid(family::relu6(swish)), 0.2, 0.5);
        },
        x);
  }));
}

TYPED_TEST(HostChain, NestedChainsAndSingleSteps) {
  using T = TypeParam;
  const auto inner = hardact::chain(hardact::Scale{-3.0}, hardact::ReLU6{});
  const auto outer = hardact::chain(inner, hardact::chain(hardact::HardTanh{-0.5, 2.0}));
  EXPECT_TRUE(matches<T>(outer, [](T x) {
    return on_elements<T>([](auto v) { return family::hard_tanh(family::relu6(family::scale(v, -3.0)), -0.5, 2.0); },
                          x);
  }));
  EXPECT_TRUE(matches<T>(hardact::chain(hardact::HardSwish{}),
                         [](T x) { return on_elements<T>([](auto v) { return family::hard_swish(v); }, x); }));
}

TYPED_TEST(HostChain, TwoInputChainMatchesReference) {
  using T = TypeParam;
  const auto fused = hardact::chain(hardact::HardSwishBackward{}, hardact::Scale{0.5}, hardact::HardTanh{-1.0, 1.0});
  const auto reference = [](T grad, T x) {
    return on_elements<T>(
        [](auto g, auto v) {
          return family::hard_tanh(family::scale(family::hard_swish_backward(g, v), 0.5), -1.0, 1.0);
        },
        grad, x);
  };
  std::vector<T> grads;
  for (const double g : {1.0, -3.0, 0.1, 1e-40, 5e4, -0.0}) grads.push_back(family::round_to<T>(g));
  std::vector<T> xs = inputs_for<T>();
  if (xs.size() > (1u << 16)) xs.resize(1u << 16);
  EXPECT_TRUE(family::host_pairs_match(fused, reference, grads, xs));
}

// bfloat16 keeps 8 bits, so rounding after every step (PyTorch eager: three kernels) and rounding
// once (a fused chain) differ for some inputs. Find one independently and check the chain rounds once.
TEST(HostChainRounding, RoundsOnceAtTheEnd) {
  using T = __nv_bfloat16;
  const auto per_step = [](T x) {
    const T scaled = family::round_to<T>(family::scale(static_cast<float>(family::value_of(x)), 0.1));
    return family::round_to<T>(family::offset(static_cast<float>(family::value_of(scaled)), 0.3));
  };
  const auto once = [](T x) {
    return family::round_to<T>(family::offset(family::scale(static_cast<float>(family::value_of(x)), 0.1), 0.3));
  };
  const auto fused = hardact::chain(hardact::Scale{0.1}, hardact::Offset{0.3});
  std::size_t witnesses = 0;
  for (const T x : family::all_patterns<T>()) {
    if (std::isnan(family::value_of(x)) || family::same_or_both_nan(per_step(x), once(x))) continue;
    ++witnesses;
    ASSERT_EQ(to_bits(fused(x)), to_bits(once(x))) << family::show(x);
  }
  EXPECT_GT(witnesses, 0u) << "no bfloat16 input where per-step and single rounding differ";
}

struct UserStep {  // a user functor without is_valid: always valid
  template <class C>
  __host__ __device__ C operator()(C x) const {
    return x * C(2);
  }
};

TEST(HostChainInterfaces, IsValidIsForwarded) {
  const double nan = std::nan("");
  EXPECT_TRUE(hardact::chain(hardact::HardSigmoid{}, hardact::ReLU6{}).is_valid());
  EXPECT_TRUE(hardact::chain(UserStep{}, hardact::HardTanh{0.0, 6.0}).is_valid());
  EXPECT_FALSE(hardact::chain(hardact::Scale{nan}, hardact::ReLU6{}).is_valid());
  EXPECT_FALSE(hardact::chain(hardact::ReLU6{}, hardact::HardTanh{1.0, -1.0}).is_valid());
  EXPECT_FALSE(hardact::chain(hardact::ReLU6{}, UserStep{}, hardact::HardSigmoid::affine(0.2, HUGE_VAL)).is_valid());
  EXPECT_FALSE(hardact::chain(hardact::chain(hardact::HardTanhBackward{3.0, 2.0}), hardact::ReLU6{}).is_valid());
  EXPECT_EQ(hardact::chain(UserStep{}, hardact::Offset{1.0})(3.0f), 7.0f);
}

TEST(HostChainInterfaces, ChainsAreSmallTriviallyCopyableAggregates) {
  using Fused = decltype(hardact::chain(hardact::Scale{2.0}, hardact::HardTanh{}, hardact::ReLU6{}));
  static_assert(std::is_same_v<Fused, hardact::Chain<hardact::Scale, hardact::HardTanh, hardact::ReLU6>>, "type");
  static_assert(std::is_trivially_copyable_v<Fused>, "kernel argument");
  static_assert(std::is_aggregate_v<Fused>, "aggregate");
  static_assert(sizeof(Fused) <= 4 * sizeof(double), "parameters plus padding only");
  constexpr auto fused = hardact::chain(hardact::Scale{2.0}, hardact::HardTanh{-2.0, 2.0});
  static_assert(fused.first.scale == 2.0 && fused.rest.first.min_val == -2.0, "steps kept in order");
  SUCCEED();
}

}  // namespace
