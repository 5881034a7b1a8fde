// The policies from a plain C++ translation unit: compiled by the host compiler alone (no nvcc),
// with only the CUDA include paths, as a consumer's host-side reference computations would be.
// The results must equal those the nvcc-compiled host tests check: every half and bfloat16 bit
// pattern against the independent reference, PyTorch's sample outputs, and the other policies'
// defining properties.
#ifdef __CUDACC__
#error "this test proves the policies compile without nvcc; build it as C++ (.cpp), not CUDA"
#endif

#include "support/bits.hpp"
#include "support/compare.hpp"
#include "support/reference.hpp"

#include <hardact/fp8.cuh>
#include <hardact/policies.cuh>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace {

using namespace hardact_test;

TEST(PlainCppPolicies, HardSigmoidEveryHalfAndBFloat16MatchesReference) {
  EXPECT_TRUE(host_op_matches_reference(hardact::HardSigmoid{}, reference::HardSigmoid{}, all_patterns<__half>(),
                                        NanBits::Any));
  EXPECT_TRUE(host_op_matches_reference(hardact::HardSigmoid{}, reference::HardSigmoid{},
                                        all_patterns<__nv_bfloat16>(), NanBits::Any));
}

TEST(PlainCppPolicies, HardTanhEveryHalfAndBFloat16MatchesReference) {
  for (const reference::HardTanh bounds : {reference::HardTanh{-1.0, 1.0}, reference::HardTanh{0.0, 6.0}}) {
    const hardact::HardTanh op{bounds.min_val, bounds.max_val};
    EXPECT_TRUE(host_op_matches_reference(op, bounds, all_patterns<__half>(), NanBits::Exact));
    EXPECT_TRUE(host_op_matches_reference(op, bounds, all_patterns<__nv_bfloat16>(), NanBits::Exact));
  }
}

// Outputs PyTorch 2.11 printed on the H100 (../shared/NOTES.md).
TEST(PlainCppPolicies, HardSigmoidPyTorchSamples) {
  const hardact::HardSigmoid op;
  EXPECT_EQ(op(-2.9999998f), 3.9736431e-08f);
  EXPECT_EQ(op(0.1f), 0.51666665f);
  EXPECT_EQ(__bfloat162float(op(__float2bfloat16_rn(0.1f))), 0.515625f);
  EXPECT_EQ(__bfloat162float(op(__float2bfloat16_rn(0.7f))), 0.6171875f);
  EXPECT_EQ(op(3.0), 1.0);  // double saturates at exactly 1
  EXPECT_TRUE(std::isnan(op(std::numeric_limits<float>::quiet_NaN())));
}

TEST(PlainCppPolicies, ZeroSignsOfReLU6AndHardTanh) {
  EXPECT_FALSE(std::signbit(hardact::ReLU6{}(-0.0f)));
  EXPECT_FALSE(std::signbit(hardact::ReLU6{}(-1e-40f)));
  EXPECT_TRUE(std::signbit(hardact::HardTanh{}(-0.0f)));
  EXPECT_EQ(hardact::ReLU6{}(7.5f), 6.0f);
}

TEST(PlainCppPolicies, GradientsAtTheirBoundaries) {
  EXPECT_EQ(hardact::HardSigmoidBackward{}(1.0f, 0.0f), 1.0f / 6.0f);
  EXPECT_EQ(hardact::HardSigmoidBackward{}(1.0f, 3.0f), 0.0f);
  EXPECT_EQ(hardact::HardTanhBackward{}(2.0f, 1.0f), 0.0f);
  EXPECT_EQ(hardact::HardTanhBackward{}(2.0f, std::numeric_limits<float>::quiet_NaN()), 2.0f);
  EXPECT_EQ(hardact::HardSwishBackward{}(1.0f, -3.0f), 0.0f);
  EXPECT_EQ(hardact::HardSwishBackward{}(1.0f, 3.0f), 1.0f);
  EXPECT_EQ(hardact::HardSwishBackward{}(1.0f, 0.0f), 0.5f);
}

TEST(PlainCppPolicies, ChainRoundsOnceAndChecksEveryStep) {
  // bfloat16: 2 * x then HardSigmoid, computed in float and rounded once.
  const __nv_bfloat16 x = __float2bfloat16_rn(0.1f);
  const float wide = __bfloat162float(x);
  const __nv_bfloat16 once = __float2bfloat16_rn(reference::hard_sigmoid(2.0f * wide));
  const __nv_bfloat16 fused = hardact::chain(hardact::Scale{2.0}, hardact::HardSigmoid{})(x);
  EXPECT_EQ(to_bits(fused), to_bits(once)) << describe(fused);
  EXPECT_TRUE((hardact::chain(hardact::Offset{1.0}, hardact::HardTanh{}).is_valid()));
  EXPECT_FALSE((hardact::chain(hardact::Offset{1.0}, hardact::HardTanh{1.0, -1.0}).is_valid()));
  EXPECT_FALSE((hardact::chain(hardact::Scale{std::numeric_limits<double>::infinity()}, hardact::ReLU6{}).is_valid()));
}

TEST(PlainCppPolicies, HardSwishAndAffineForms) {
  EXPECT_EQ(hardact::HardSwish{}(1.0f), (1.0f * 4.0f) * (1.0f / 6.0f));
  EXPECT_TRUE(std::signbit(hardact::HardSwish{}(-4.0f)));
  EXPECT_EQ(hardact::HardSigmoid::onnx()(0.0f), 0.5f);
  EXPECT_EQ((hardact::Affine{2.0, 1.0}(3.0f)), 7.0f);
}

TEST(PlainCppPolicies, Fp8ConversionsSaturate) {
  EXPECT_EQ(hardact::convert<float>(hardact::convert<__nv_fp8_e4m3>(1000.0f)), 448.0f);
  EXPECT_EQ(hardact::convert<float>(hardact::convert<__nv_fp8_e5m2>(-1.0e6)), -57344.0f);
  EXPECT_EQ(hardact::to_compute(hardact::convert<__nv_fp8_e4m3>(0.5f)), 0.5f);
}

// SiLU's host form, the C library's exp in the element's compute type (float for half).
TEST(PlainCppPolicies, SiLUWithTheHostExp) {
  for (const float x : {-20.0f, -1.5f, 0.25f, 3.0f}) {
    EXPECT_EQ(hardact::SiLU{}(x), x / (1.0f + std::exp(-x))) << x;
    EXPECT_EQ(hardact::SiLU{}(double(x)), double(x) / (1.0 + std::exp(-double(x)))) << x;
    const float half_result = hardact::to_compute(hardact::SiLU{}(hardact::convert<__half>(x)));
    EXPECT_EQ(half_result, hardact::to_compute(hardact::convert<__half>(x / (1.0f + std::exp(-x))))) << x;
  }
}

}  // namespace
