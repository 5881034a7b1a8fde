// HardSigmoid, HardTanh and SiLU compiled with --use_fast_math (tests/CMakeLists.txt adds it to every
// *fast_math* test): flush-to-zero, approximate division and FMA contraction are on for this
// file's device code, and results must still equal the IEEE host reference bit for bit (SiLU's,
// whose exp has no host twin: subnormals bit for bit, the rest within 4 ulp).
// Inputs concentrate where the flags bite: every float subnormal pattern (both signs), every
// half and bfloat16 pattern (bfloat16 subnormals are float subnormals), subnormal bounds.
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/reference.hpp"
#include "support/transform_check.hpp"

#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace {

using namespace hardact_test;

/// a * b in this file's device code: with flush-to-zero a subnormal product comes out as 0.
__global__ void multiply(float a, float b, float* product) { *product = a * b; }

// Guards against a vacuous pass: the flags must really be on in this translation unit.
TEST(DeviceFastMath, FlushToZeroIsActiveInThisFile) {
  HARDACT_REQUIRE_DEVICE();
  GuardedBuffer<float> product(1);
  HARDACT_ASSERT_CUDA(product.status());
  multiply<<<1, 1>>>(1e-20f, 1e-20f, product.data());
  HARDACT_ASSERT_CUDA(cudaGetLastError());
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  std::vector<float> result;
  HARDACT_ASSERT_CUDA(product.download(result));
  EXPECT_EQ(to_bits(result[0]), 0u) << "1e-20f * 1e-20f gave " << describe(result[0])
                                     << ": this file is not compiled with --use_fast_math, so it proves nothing";
}

/// Float inputs: every subnormal pattern of both signs (a stride of them in quick mode), the
/// special values and random values with bounds as extra points.
std::vector<float> float_inputs() {
  std::vector<float> inputs = special_values<float>({1e-40, -1e-40, 1e-45, -1e-45});
  const std::uint32_t stride = quick_mode() ? 257 : 1;
  for (std::uint32_t magnitude = 1; magnitude <= 0x007fffffu; magnitude += stride) {
    inputs.push_back(from_bits<float>(magnitude));
    inputs.push_back(from_bits<float>(magnitude | 0x80000000u));
  }
  const std::vector<float> random = device_inputs<float>(1 << 16, 9100, {1e-40, -1e-40});
  inputs.insert(inputs.end(), random.begin(), random.end());
  for (float& value : inputs)
    if (is_poison(value)) value = 0.5f;
  return inputs;
}

/// Every one of the 65,536 patterns but the poison pattern (the output check needs it absent).
template <class T>
std::vector<T> all_patterns_but_poison() {
  std::vector<T> inputs = all_patterns<T>();
  inputs.erase(std::remove_if(inputs.begin(), inputs.end(), [](T value) { return is_poison(value); }), inputs.end());
  return inputs;
}

template <class T>
std::vector<T> fast_math_inputs() {
  if constexpr (std::is_same_v<T, float>) {
    return float_inputs();
  } else {
    return all_patterns_but_poison<T>();
  }
}


template <class T>
class DeviceFastMathPolicy : public ::testing::Test {};
using FloatComputedTypes = ::testing::Types<float, __half, __nv_bfloat16>;
TYPED_TEST_SUITE(DeviceFastMathPolicy, FloatComputedTypes, TypeNames);

TYPED_TEST(DeviceFastMathPolicy, HardSigmoidIsBitExact) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const std::vector<T> inputs = fast_math_inputs<T>();
  TransformRig<T> rig(inputs.size(), 3);
  ASSERT_EQ(rig.status(), cudaSuccess) << cudaGetErrorName(rig.status());
  EXPECT_TRUE((rig.template run<0>(hardact::HardSigmoid{}, reference::HardSigmoid{}, NanBits::Any, inputs, 0, 0, false)));
  EXPECT_TRUE((rig.template run<1>(hardact::HardSigmoid{}, reference::HardSigmoid{}, NanBits::Any, inputs, 1, 3, false)));
}

// Zero and signed-zero bounds (where -0.0 must turn into +0.0 or stay), and bounds that are
// subnormal in float (a flush-to-zero conversion or comparison would turn them into 0).
TYPED_TEST(DeviceFastMathPolicy, HardTanhIsBitExact) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const reference::HardTanh bound_sets[] = {
      {-1.0, 1.0},    {0.0, 6.0},      {-0.0, 0.0},      {-6.0, -0.0},
      {0.0, 1e-40},   {-1e-40, 1e-40}, {-1e-40, -1e-45}, {1e-45, 1e-38},
  };
  const std::vector<T> inputs = fast_math_inputs<T>();
  TransformRig<T> rig(inputs.size(), 3);
  ASSERT_EQ(rig.status(), cudaSuccess) << cudaGetErrorName(rig.status());
  for (const reference::HardTanh& bounds : bound_sets) {
    const hardact::HardTanh op{bounds.min_val, bounds.max_val};
    EXPECT_TRUE((rig.template run<0>(op, bounds, NanBits::Exact, inputs, 0, 0, false)))
        << "HardTanh{" << bounds.min_val << ", " << bounds.max_val << "}";
    EXPECT_TRUE((rig.template run<1>(op, bounds, NanBits::Exact, inputs, 3, 3, true)))
        << "HardTanh{" << bounds.min_val << ", " << bounds.max_val << "} in place";
  }
}

// SiLU's float form is one block of inline PTX, so the flags cannot reach it: a subnormal x gives
// x / 2 exactly (flush-to-zero would give 0), and every result is within 4 units in the last place
// of the exact value (fast math's __expf and approximate division stray further for |x| > 2).
TEST(DeviceFastMathSiLU, KeepsSubnormalsAndAccuracy) {
  HARDACT_REQUIRE_DEVICE();
  const std::vector<float> inputs = float_inputs();
  const std::size_t n = inputs.size();
  GuardedBuffer<float> x(n), y(n);
  HARDACT_ASSERT_CUDA(x.status());
  HARDACT_ASSERT_CUDA(y.status());
  HARDACT_ASSERT_CUDA(x.upload(inputs));
  HARDACT_ASSERT_CUDA(hardact::transform(hardact::SiLU{}, x.data(), y.data(), n));
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  std::vector<float> got;
  HARDACT_ASSERT_CUDA(y.download(got));
  const auto ordinal = [](float value) {
    const std::uint32_t bits = to_bits(value);
    const auto magnitude = static_cast<std::int64_t>(bits & 0x7fffffffu);
    return (bits >> 31) != 0 ? -magnitude : magnitude;
  };
  std::size_t differing = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float v = inputs[i];
    if (std::isnan(v) || std::isinf(v)) continue;  // the special values: host_silu_test
    float want;
    if (std::fpclassify(v) == FP_SUBNORMAL) {
      want = v / 2.0f;
    } else {
      const long double e = std::exp(-static_cast<long double>(v));
      if (e > 3.4e38L && e < 3.41e38L) continue;  // exp(-x) at float's largest value: either side
      want = e > 3.41e38L ? -0.0f : static_cast<float>(v / (1.0L + e));
    }
    const std::int64_t distance = ordinal(got[i]) - ordinal(want);
    const bool exact_wanted = std::fpclassify(v) == FP_SUBNORMAL;
    if (std::isnan(got[i]) || (exact_wanted ? distance != 0 : (distance > 4 || distance < -4))) {
      if (differing++ < 5) ADD_FAILURE() << "x=" << describe(v) << ": got " << describe(got[i]) << ", want " << describe(want);
    }
  }
  EXPECT_EQ(differing, 0u);
}

}  // namespace
