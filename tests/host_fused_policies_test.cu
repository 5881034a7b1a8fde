// The fused epilogue policies on the host (no GPU needed): Add, MultiplyAdd, bias_activation,
// residual_activation, scale_shift_activation, HardSigmoidGate, bias_activation_product,
// BiasActivationBackward and ScaleShiftActivationBackward against the documented formulas on the
// independent reference of support/reference_family.hpp, in float, double, half and bfloat16; their
// validity and kernel argument facts, no FMA contraction, bfloat16's single rounding, and the
// kernels' type rule (detail::apply_op) for mixed broadcast types.
#include "support/bits.hpp"
#include "support/reference_family.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using namespace hardact_test;
using family::on_elements;

// =============================================================================================
// Fused policies against their documented formulas.

/// PyTorch's float arithmetic, one rounding per operation (see reference_family.hpp), and double's.
inline float add_ref(float a, float b) { return family::to_float(static_cast<double>(a) + static_cast<double>(b)); }
inline double add_ref(double a, double b) { return a + b; }
inline float mul_ref(float a, float b) { return family::to_float(static_cast<double>(a) * static_cast<double>(b)); }
inline double mul_ref(double a, double b) { return a * b; }

/// Activations and gradients of the reference, as generic callables on float and double.
struct SwishRef {
  template <class C>
  C operator()(C v) const {
    return family::hard_swish(v);
  }
};
struct SigmoidRef {
  template <class C>
  C operator()(C v) const {
    return family::hard_sigmoid(v);
  }
};
struct Relu6Ref {
  template <class C>
  C operator()(C v) const {
    return family::relu6(v);
  }
};
struct TanhRef {
  double lo, hi;
  template <class C>
  C operator()(C v) const {
    return family::hard_tanh(v, lo, hi);
  }
};
struct SwishBackwardRef {
  template <class C>
  C operator()(C g, C v) const {
    return family::hard_swish_backward(g, v);
  }
};
struct SigmoidBackwardRef {
  template <class C>
  C operator()(C g, C v) const {
    return family::hard_sigmoid_backward(g, v);
  }
};
struct TanhBackwardRef {
  double lo, hi;
  template <class C>
  C operator()(C g, C v) const {
    return family::hard_tanh_backward(g, v, lo, hi);
  }
};

/// Values each column of a row draws from: the x column every 16-bit pattern, or special values
/// and random ones; the others random (with special values mixed in) from their own seeds.
template <class T>
std::vector<T> column_values(std::size_t column, std::size_t count) {
  if (column == 0) {
    std::vector<T> xs = family::host_inputs<T>({-3.0, 3.0, -2.5, 2.5, 0.5}, count, 0xb0a5);
    return xs;
  }
  return random_values<T>(count, 0xc0105 + column, {-3.0, 3.0, 0.5, 2.0});
}

/// A few values every operand takes in the cross product: zeros, ones, the bends, a subnormal,
/// the largest finite, infinities, NaN.
template <class T>
std::vector<T> cross_values() {
  std::vector<T> values;
  for (const double v : {0.0, -0.0, 1.0, -1.0, 3.0, -3.0, 0.5, 6.0, 1e-3, HUGE_VAL, -HUGE_VAL}) {
    values.push_back(family::round_to<T>(v));
  }
  values.push_back(from_bits<T>(1));                                             // smallest subnormal
  values.push_back(from_bits<T>(Patterns<T>::kMaxFinite));                       // largest finite
  values.push_back(from_bits<T>(bits_t<T>(Patterns<T>::kInfinity | Patterns<T>::kQuietBit)));  // NaN
  return values;
}

/// Argument rows: every x with partners from the other columns (zipped), then the cross product of
/// cross_values() over every column.
template <class T, std::size_t Arity>
std::vector<std::array<T, Arity>> argument_rows() {
  const std::size_t random_count = sizeof(T) == 2 ? 0 : std::size_t{1} << 16;
  const std::vector<T> xs = column_values<T>(0, random_count);
  std::array<std::vector<T>, Arity> columns;
  columns[0] = xs;
  for (std::size_t c = 1; c < Arity; ++c) columns[c] = column_values<T>(c, xs.size());
  std::vector<std::array<T, Arity>> rows(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i)
    for (std::size_t c = 0; c < Arity; ++c) rows[i][c] = columns[c][i];
  const std::vector<T> cross = cross_values<T>();
  std::size_t total = 1;
  for (std::size_t c = 0; c < Arity; ++c) total *= cross.size();
  for (std::size_t index = 0; index < total; ++index) {
    std::array<T, Arity> row;
    std::size_t rest = index;
    for (std::size_t c = 0; c < Arity; ++c, rest /= cross.size()) row[c] = cross[rest % cross.size()];
    rows.push_back(row);
  }
  return rows;
}

template <class T>
std::string show_row(const T* row, std::size_t arity) {
  std::string text;
  for (std::size_t c = 0; c < arity; ++c) text += (c > 0 ? ", " : "") + family::show(row[c]);
  return text;
}

/// op(row...) against on_elements<T>(reference, row...) (the reference on the compute type, rounded
/// once) for every row of argument_rows<T, Arity>().
template <class T, std::size_t Arity, class Op, class Reference>
::testing::AssertionResult fused_matches(const Op& op, const Reference& reference) {
  const std::vector<std::array<T, Arity>> rows = argument_rows<T, Arity>();
  std::size_t mismatches = 0;
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  for (const auto& row : rows) {
    const T actual = std::apply([&](auto... v) { return op(v...); }, row);
    const T expected = std::apply([&](auto... v) { return on_elements<T>(reference, v...); }, row);
    if (family::same_or_both_nan(actual, expected)) continue;
    if (++mismatches <= 5) {
      failure << "\n  (" << show_row(row.data(), Arity) << "): got " << family::show(actual) << ", expected "
              << family::show(expected);
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return failure << "\n  " << mismatches << " of " << rows.size() << " rows differ";
}

template <class T>
class HostFusedPolicies : public ::testing::Test {};
TYPED_TEST_SUITE(HostFusedPolicies, ElementTypes, TypeNames);

TYPED_TEST(HostFusedPolicies, AddAndMultiplyAdd) {
  using T = TypeParam;
  EXPECT_TRUE((fused_matches<T, 2>(hardact::Add{}, [](auto x, auto b) { return add_ref(x, b); })));
  EXPECT_TRUE((fused_matches<T, 3>(hardact::MultiplyAdd{},
                                   [](auto x, auto s, auto t) { return add_ref(mul_ref(x, s), t); })));
}

/// check(policy, reference activation) for HardSwish, HardSigmoid, ReLU6 and HardTanh{-2, 0.5}.
template <class Check>
void for_each_activation(const Check& check) {
  check(hardact::HardSwish{}, SwishRef{}, "HardSwish");
  check(hardact::HardSigmoid{}, SigmoidRef{}, "HardSigmoid");
  check(hardact::ReLU6{}, Relu6Ref{}, "ReLU6");
  check(hardact::HardTanh{-2.0, 0.5}, TanhRef{-2.0, 0.5}, "HardTanh{-2, 0.5}");
}

/// The same for the gradients: HardSwishBackward, HardSigmoidBackward, HardTanhBackward{-2, 0.5}.
template <class Check>
void for_each_backward(const Check& check) {
  check(hardact::HardSwishBackward{}, SwishBackwardRef{}, "HardSwishBackward");
  check(hardact::HardSigmoidBackward{}, SigmoidBackwardRef{}, "HardSigmoidBackward");
  check(hardact::HardTanhBackward{-2.0, 0.5}, TanhBackwardRef{-2.0, 0.5}, "HardTanhBackward{-2, 0.5}");
}

// bias_activation(act)(x, b) = act(x + b); residual_activation is the same policy.
TYPED_TEST(HostFusedPolicies, BiasAndResidualActivation) {
  using T = TypeParam;
  for_each_activation([](auto activation, auto act, const char* name) {
    EXPECT_TRUE((fused_matches<T, 2>(hardact::bias_activation(activation),
                                     [act](auto x, auto b) { return act(add_ref(x, b)); })))
        << name;
    EXPECT_TRUE((fused_matches<T, 2>(hardact::residual_activation(activation),
                                     [act](auto x, auto r) { return act(add_ref(x, r)); })))
        << name;
  });
  static_assert(std::is_same_v<decltype(hardact::bias_activation(hardact::HardSwish{})),
                               decltype(hardact::residual_activation(hardact::HardSwish{}))>);
}

// scale_shift_activation(act)(x, s, t) = act(x * s + t), the product rounded before the add.
TYPED_TEST(HostFusedPolicies, ScaleShiftActivation) {
  using T = TypeParam;
  for_each_activation([](auto activation, auto act, const char* name) {
    EXPECT_TRUE((fused_matches<T, 3>(hardact::scale_shift_activation(activation),
                                     [act](auto x, auto s, auto t) { return act(add_ref(mul_ref(x, s), t)); })))
        << name;
  });
}

// gate_activation(act)(x, g) = act(x * g), the product rounded in the compute type.
TYPED_TEST(HostFusedPolicies, GateActivation) {
  using T = TypeParam;
  EXPECT_TRUE((fused_matches<T, 2>(hardact::Multiply{}, [](auto x, auto g) { return mul_ref(x, g); })));
  for_each_activation([](auto activation, auto act, const char* name) {
    EXPECT_TRUE((fused_matches<T, 2>(hardact::gate_activation(activation),
                                     [act](auto x, auto g) { return act(mul_ref(x, g)); })))
        << name;
  });
}

// HardSigmoidGate(x, g) = x * HardSigmoid(g).
TYPED_TEST(HostFusedPolicies, HardSigmoidGate) {
  using T = TypeParam;
  EXPECT_TRUE((fused_matches<T, 2>(hardact::HardSigmoidGate{},
                                   [](auto x, auto g) { return mul_ref(x, family::hard_sigmoid(g)); })));
}

// bias_activation_product(act)(x, b, y, c) = act(x + b) * (y + c), each sum rounded, then the product.
TYPED_TEST(HostFusedPolicies, BiasActivationProduct) {
  using T = TypeParam;
  for_each_activation([](auto activation, auto act, const char* name) {
    EXPECT_TRUE((fused_matches<T, 4>(hardact::bias_activation_product(activation), [act](auto x, auto b, auto y, auto c) {
      return mul_ref(act(add_ref(x, b)), add_ref(y, c));
    }))) << name;
  });
}

// BiasActivationBackward<Bw>(grad, x, b) = Bw(grad, x + b).
TYPED_TEST(HostFusedPolicies, BiasActivationBackward) {
  using T = TypeParam;
  for_each_backward([](auto backward, auto bw, const char* name) {
    using Backward = decltype(backward);
    EXPECT_TRUE((fused_matches<T, 3>(hardact::BiasActivationBackward<Backward>{backward},
                                     [bw](auto g, auto x, auto b) { return bw(g, add_ref(x, b)); })))
        << name;
  });
}

// ScaleShiftActivationBackward<Bw>(grad, x, s, t) = Bw(grad, x * s + t) * s, rounded once.
TYPED_TEST(HostFusedPolicies, ScaleShiftActivationBackward) {
  using T = TypeParam;
  for_each_backward([](auto backward, auto bw, const char* name) {
    using Backward = decltype(backward);
    EXPECT_TRUE((fused_matches<T, 4>(
        hardact::ScaleShiftActivationBackward<Backward>{backward},
        [bw](auto g, auto x, auto s, auto t) { return mul_ref(bw(g, add_ref(mul_ref(x, s), t)), s); })))
        << name;
  });
}

TEST(HostFusedPolicyFacts, ValidityIsForwarded) {
  const double nan = std::nan("");
  EXPECT_TRUE(hardact::bias_activation(hardact::HardTanh{}).is_valid());
  EXPECT_FALSE(hardact::bias_activation(hardact::HardTanh{1.0, -1.0}).is_valid());
  EXPECT_FALSE(hardact::scale_shift_activation(hardact::HardTanh{nan, 1.0}).is_valid());
  EXPECT_TRUE(hardact::BiasActivationBackward<hardact::HardSwishBackward>{}.is_valid());
  EXPECT_FALSE((hardact::BiasActivationBackward<hardact::HardTanhBackward>{{0.5, -0.5}}.is_valid()));
  EXPECT_FALSE((hardact::ScaleShiftActivationBackward<hardact::HardTanhBackward>{{-1.0, nan}}.is_valid()));
  EXPECT_TRUE((hardact::ScaleShiftActivationBackward<hardact::HardTanhBackward>{{0.0, 6.0}}.is_valid()));
  EXPECT_TRUE(hardact::bias_activation_product(hardact::ReLU6{}).is_valid());
  EXPECT_FALSE(hardact::bias_activation_product(hardact::HardTanh{2.0, -2.0}).is_valid());
}

TEST(HostFusedPolicyFacts, TriviallyCopyableKernelArguments) {
  static_assert(std::is_trivially_copyable_v<hardact::Add> && std::is_trivially_copyable_v<hardact::MultiplyAdd> &&
                std::is_trivially_copyable_v<hardact::HardSigmoidGate>);
  static_assert(std::is_trivially_copyable_v<decltype(hardact::scale_shift_activation(hardact::HardTanh{}))>);
  static_assert(std::is_trivially_copyable_v<decltype(hardact::bias_activation_product(hardact::HardTanh{}))>);
  static_assert(std::is_trivially_copyable_v<hardact::ScaleShiftActivationBackward<hardact::HardTanhBackward>>);
  static_assert(std::is_same_v<decltype(hardact::bias_activation(hardact::ReLU6{})),
                               hardact::Chain<hardact::Add, hardact::ReLU6>>);
  static_assert(std::is_same_v<decltype(hardact::scale_shift_activation(hardact::ReLU6{})),
                               hardact::Chain<hardact::MultiplyAdd, hardact::ReLU6>>);
  SUCCEED();
}

// In float, x * s + t is two roundings, never one FMA: find inputs where they differ and check
// MultiplyAdd and scale_shift_activation take the two roundings.
TEST(HostFusedPolicyFacts, MultiplyAddNeverFuses) {
  std::mt19937_64 engine(0xf3a);
  std::uniform_real_distribution<float> wide(-8.0f, 8.0f);
  std::size_t witnesses = 0;
  for (int i = 0; i < 100000 && witnesses < 1000; ++i) {
    const float x = wide(engine), s = wide(engine), t = wide(engine);
    const float separate = add_ref(mul_ref(x, s), t);
    if (std::fma(x, s, t) == separate) continue;
    ++witnesses;
    ASSERT_EQ(to_bits(hardact::MultiplyAdd{}(x, s, t)), to_bits(separate)) << x << " " << s << " " << t;
    ASSERT_EQ(to_bits(hardact::scale_shift_activation(hardact::HardTanh{-100.0, 100.0})(x, s, t)), to_bits(separate));
  }
  EXPECT_GT(witnesses, 0u) << "no input where an FMA rounds differently";
}

// On bfloat16, bias_activation keeps x + b in float and rounds once at the end (PyTorch eager rounds
// the sum first): find inputs where the two differ and check the single rounding.
TEST(HostFusedPolicyFacts, Bfloat16BiasActivationRoundsOnce) {
  using T = __nv_bfloat16;
  const auto per_step = [](T x, T b) {
    const T sum = family::round_to<T>(add_ref(static_cast<float>(family::value_of(x)), static_cast<float>(family::value_of(b))));
    return family::round_to<T>(family::hard_swish(static_cast<float>(family::value_of(sum))));
  };
  const auto once = [](T x, T b) {
    return family::round_to<T>(
        family::hard_swish(add_ref(static_cast<float>(family::value_of(x)), static_cast<float>(family::value_of(b)))));
  };
  const auto fused = hardact::bias_activation(hardact::HardSwish{});
  std::size_t witnesses = 0;
  for (const double bias : {0.1, -0.3, 1.7}) {
    const T b = family::round_to<T>(bias);
    for (const T x : all_patterns<T>()) {
      if (std::isnan(family::value_of(x)) || family::same_or_both_nan(per_step(x, b), once(x, b))) continue;
      ++witnesses;
      ASSERT_EQ(to_bits(fused(x, b)), to_bits(once(x, b))) << family::show(x) << " + " << family::show(b);
    }
  }
  EXPECT_GT(witnesses, 0u);
}

// The kernels' type rule for broadcast operands of another type than the output (detail::apply_op):
// the policy gets the common compute type and the result is rounded once. bfloat16 x with float
// scale and shift, written as bfloat16; float x with a double bias computes in double.
TEST(HostFusedPolicyFacts, MixedTypesRoundOnceFromTheCommonComputeType) {
  using B = __nv_bfloat16;
  using hardact::detail::apply_op;
  const auto op = hardact::scale_shift_activation(hardact::HardSwish{});
  const float scales[] = {0.37f, -1.5f, 3.0f, 1e-20f};
  const float shifts[] = {0.1f, -2.75f, 0.0f, 1e3f};
  std::size_t mismatches = 0;
  for (const B x : all_patterns<B>()) {
    for (const float s : scales) {
      for (const float t : shifts) {
        const float xf = static_cast<float>(family::value_of(x));
        const B expected = family::round_to<B>(family::hard_swish(add_ref(mul_ref(xf, s), t)));
        const B actual = apply_op<B>(op, x, s, t);
        if (!family::same_or_both_nan(actual, expected) && ++mismatches <= 5) {
          ADD_FAILURE() << family::show(x) << " * " << s << " + " << t << ": got " << family::show(actual)
                        << ", expected " << family::show(expected);
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0u);
  // float x + double bias -> float: added in double, rounded to float once.
  for (const float x : random_values<float>(1 << 14, 0xdb1)) {
    const double bias = 0.1;
    const float expected = family::to_float(family::hard_sigmoid(static_cast<double>(x) + bias));
    const float actual = apply_op<float>(hardact::bias_activation(hardact::HardSigmoid{}), x, bias);
    ASSERT_TRUE(family::same_or_both_nan(actual, expected)) << family::show(x);
  }
}

}  // namespace
