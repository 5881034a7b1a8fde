// Mixed input and output types on the host: what the mixed-type launcher computes per element,
// convert<TOut>(op(widen(x))), for float -> bfloat16/half, bfloat16/half -> float and
// float/bfloat16 -> fp8 (saturating), against the independent reference, whose narrow formats are
// rounded bit by bit (support/reference_family.hpp) rather than by CUDA's conversion functions.
//
// Where this differs from PyTorch's `F.hardsigmoid(x).to(dtype)`:
// - half, bfloat16, float: never. PyTorch rounds hardsigmoid's float result once, to nearest-even,
//   as hardact does (NaN payloads aside).
// - float8_e4m3fn: PyTorch <= 2.11 does not saturate (a finite value beyond 464 and +-inf become
//   NaN; from 2.12 finite overflow saturates to +-448); hardact saturates to +-448, inf included.
// - float8_e5m2: PyTorch rounds overflow to +-inf; hardact saturates to +-57344.
// - So results differ only where |y| exceeds the fp8 range: never for HardSigmoid, ReLU6 or
//   HardTanh (outputs within [-6, 6]), only for large or infinite HardSwish / affine outputs. The
//   AgreesWithPyTorchsCastWhereInRange test below checks that claim.
#include "support/bits.hpp"
#include "support/reference_family.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>
#include <hardact/fp8.cuh>

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace {

using namespace hardact_test;
using family::Overflow;

/// One element through the mixed path: widen once to the compute type, apply, round once.
template <class TOut, class Op, class TIn>
TOut mixed(const Op& op, TIn x) {
  return hardact::convert<TOut>(op(hardact::to_compute(x)));
}

template <class TIn>
std::vector<TIn> mixed_inputs_for() {
  // Large magnitudes reach the fp8 saturation through HardSwish.
  std::vector<TIn> values =
      family::host_inputs<TIn>({448.0, 464.0, 465.0, 480.0, 57344.0, 61440.0, 1e5, -500.0}, 1 << 18, 0x3a11);
  if constexpr (sizeof(TIn) != 2) {
    for (int i = -200; i <= 200; ++i) values.push_back(static_cast<TIn>(i * 400.0));  // up to 80,000
  }
  return values;
}

/// op on every input, through the mixed path, against round_to<TOut>(reference(value)).
template <class TIn, class TOut, class Op, class FloatReference>
::testing::AssertionResult mixed_matches(const Op& op, const FloatReference& reference,
                                         Overflow fp8_overflow = Overflow::Saturate) {
  const std::vector<TIn> inputs = mixed_inputs_for<TIn>();
  std::vector<TOut> outputs, expected;
  for (const TIn x : inputs) {
    outputs.push_back(mixed<TOut>(op, x));
    const float wide = static_cast<float>(family::value_of(x));
    expected.push_back(family::round_to<TOut>(static_cast<double>(reference(wide)), fp8_overflow));
  }
  return family::all_match(inputs, outputs, expected);
}

const auto kHardSigmoid = [](float v) { return family::hard_sigmoid(v); };
const auto kHardSwish = [](float v) { return family::hard_swish(v); };
const auto kReLU6 = [](float v) { return family::relu6(v); };

template <class TIn, class TOut>
void expect_all_policies_match() {
  EXPECT_TRUE((mixed_matches<TIn, TOut>(hardact::HardSigmoid{}, kHardSigmoid))) << "HardSigmoid";
  EXPECT_TRUE((mixed_matches<TIn, TOut>(hardact::HardSwish{}, kHardSwish))) << "HardSwish";
  EXPECT_TRUE((mixed_matches<TIn, TOut>(hardact::ReLU6{}, kReLU6))) << "ReLU6";
  const auto fused = hardact::chain(hardact::Scale{300.0}, hardact::HardSwish{});
  EXPECT_TRUE((mixed_matches<TIn, TOut>(fused, [](float v) { return family::hard_swish(family::scale(v, 300.0)); })))
      << "chain(Scale{300}, HardSwish)";
}

TEST(HostMixedTypes, FloatToBfloat16) { expect_all_policies_match<float, __nv_bfloat16>(); }
TEST(HostMixedTypes, FloatToHalf) { expect_all_policies_match<float, __half>(); }
TEST(HostMixedTypes, Bfloat16ToFloat) { expect_all_policies_match<__nv_bfloat16, float>(); }
TEST(HostMixedTypes, HalfToFloat) { expect_all_policies_match<__half, float>(); }
TEST(HostMixedTypes, FloatToE4M3Saturating) { expect_all_policies_match<float, __nv_fp8_e4m3>(); }
TEST(HostMixedTypes, FloatToE5M2Saturating) { expect_all_policies_match<float, __nv_fp8_e5m2>(); }
TEST(HostMixedTypes, Bfloat16ToE4M3Saturating) { expect_all_policies_match<__nv_bfloat16, __nv_fp8_e4m3>(); }
TEST(HostMixedTypes, Bfloat16ToE5M2Saturating) { expect_all_policies_match<__nv_bfloat16, __nv_fp8_e5m2>(); }

TEST(HostMixedTypes, Fp8SaturationFacts) {
  const hardact::HardSwish swish;
  // HardSwish(x) = x for x >= 3: 1000 saturates to 448 (e4m3) and 1e5 to 57344 (e5m2); inf too.
  EXPECT_EQ(to_bits(mixed<__nv_fp8_e4m3>(swish, 1000.0f)), 0x7E);
  EXPECT_EQ(to_bits(mixed<__nv_fp8_e4m3>(swish, -1000.0f)), 0x80);  // x < -3: x * 0 = -0.0
  EXPECT_EQ(to_bits(mixed<__nv_fp8_e4m3>(swish, HUGE_VALF)), 0x7E);
  EXPECT_EQ(to_bits(mixed<__nv_fp8_e5m2>(swish, 1e5f)), 0x7B);
  EXPECT_EQ(to_bits(mixed<__nv_fp8_e5m2>(hardact::Scale{-1.0}, 1e5f)), 0xFB);
  EXPECT_EQ(to_bits(mixed<__nv_fp8_e4m3>(hardact::Scale{1.0}, 464.0f)), 0x7E);  // tie rounds to 448
}

// PyTorch's casts do not saturate (e4m3fn: NaN; e5m2: inf). For HardSigmoid and ReLU6 the output
// range lies inside both fp8 ranges, so hardact's saturating result equals PyTorch's.
TEST(HostMixedTypes, AgreesWithPyTorchsCastWhereInRange) {
  EXPECT_TRUE((mixed_matches<float, __nv_fp8_e4m3>(hardact::HardSigmoid{}, kHardSigmoid, Overflow::ToNaN)));
  EXPECT_TRUE((mixed_matches<__nv_bfloat16, __nv_fp8_e4m3>(hardact::HardSigmoid{}, kHardSigmoid, Overflow::ToNaN)));
  EXPECT_TRUE((mixed_matches<float, __nv_fp8_e5m2>(hardact::ReLU6{}, kReLU6, Overflow::ToInfinity)));
  EXPECT_TRUE(
      (mixed_matches<__nv_bfloat16, __nv_fp8_e5m2>(hardact::HardSigmoid{}, kHardSigmoid, Overflow::ToInfinity)));
  // ... and differs for HardSwish beyond the range, which is the documented difference.
  EXPECT_FALSE((mixed_matches<float, __nv_fp8_e4m3>(hardact::HardSwish{}, kHardSwish, Overflow::ToNaN)));
}

}  // namespace
