// Compiled with --use_fast_math (tests/CMakeLists.txt: names containing fast_math): the family's
// float results must not change with flush-to-zero or approximate division. nvcc then turns
// `a * b`, `__fmul_rn`, `a / b` and `a <= b` into .ftz / approximate instructions; the policies use
// the inline-PTX helpers of numeric/arithmetic.cuh instead. Inputs concentrate on subnormal
// operands and subnormal results, compared bit for bit with the host reference (host code is not
// affected by --use_fast_math).
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/device_family.hpp"
#include "support/reference_family.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace {

using namespace hardact_test;
using family::on_elements;

/// Subnormal floats (both signs: the smallest ones, random ones, the largest), small normals, and
/// values around +-3 and 0, in a reproducible order.
std::vector<float> tiny_floats(std::size_t count, std::uint64_t seed) {
  std::vector<float> values;
  for (std::uint32_t bits = 1; bits <= 64; ++bits) {
    values.push_back(from_bits<float>(bits));
    values.push_back(from_bits<float>(bits | 0x80000000u));
    values.push_back(from_bits<float>(0x00800000u - bits));  // just below the smallest normal
  }
  std::mt19937_64 engine(seed);
  std::uniform_int_distribution<std::uint32_t> subnormal(1, 0x007FFFFFu);
  std::uniform_int_distribution<std::uint32_t> small_normal(0x00800000u, 0x0C000000u);  // up to ~1e-31
  std::uniform_real_distribution<float> ordinary(-4.0f, 4.0f);
  while (values.size() < count) {
    const std::uint32_t sign = (engine() & 1) ? 0x80000000u : 0u;
    switch (engine() % 3) {
      case 0:
        values.push_back(from_bits<float>(subnormal(engine) | sign));
        break;
      case 1:
        values.push_back(from_bits<float>(small_normal(engine) | sign));
        break;
      default:
        values.push_back(ordinary(engine));
        break;
    }
  }
  values.resize(count);
  return values;
}

/// bfloat16 shares float's exponent range, so its subnormals are float subnormals: every pattern.
std::vector<__nv_bfloat16> all_bfloat16() { return family::all_patterns<__nv_bfloat16>(); }

constexpr std::size_t kCount = 100003;

TEST(DeviceFastMathSubnormals, HardSwishKeepsSubnormalProducts) {
  HARDACT_REQUIRE_DEVICE();
  family::check_one_input_on<float, float>(
      hardact::HardSwish{}, [](float x) { return family::hard_swish(x); }, tiny_floats(kCount, 1));
  using B = __nv_bfloat16;
  family::check_one_input_on<B, B>(
      hardact::HardSwish{}, [](B x) { return on_elements<B>([](auto v) { return family::hard_swish(v); }, x); },
      all_bfloat16());
}

TEST(DeviceFastMathSubnormals, ReLU6KeepsPositiveSubnormals) {
  HARDACT_REQUIRE_DEVICE();
  family::check_one_input_on<float, float>(
      hardact::ReLU6{}, [](float x) { return family::relu6(x); }, tiny_floats(kCount, 2));
  using B = __nv_bfloat16;
  family::check_one_input_on<B, B>(
      hardact::ReLU6{}, [](B x) { return on_elements<B>([](auto v) { return family::relu6(v); }, x); }, all_bfloat16());
}

TEST(DeviceFastMathSubnormals, AffineFormsKeepSubnormals) {
  HARDACT_REQUIRE_DEVICE();
  family::check_one_input_on<float, float>(
      hardact::HardSigmoid::affine(3.0, 0.0), [](float x) { return family::hard_sigmoid_affine(x, 3.0, 0.0); },
      tiny_floats(kCount, 3));
  const auto fused = hardact::chain(hardact::Scale{1e-30}, hardact::Affine{0.5, 0.0}, hardact::HardSwish{});
  family::check_one_input_on<float, float>(
      fused, [](float x) { return family::hard_swish(family::affine(family::scale(x, 1e-30), 0.5, 0.0)); },
      tiny_floats(kCount, 4));
  // Parameters that are subnormal in float stay subnormal (cvt.rn.ftz.f32.f64 would give 0).
  family::check_one_input_on<float, float>(
      hardact::Offset{-1e-40}, [](float x) { return family::offset(x, -1e-40); }, tiny_floats(kCount, 7));
  using B = __nv_bfloat16;
  family::check_one_input_on<B, B>(
      hardact::Scale{0.375}, [](B x) { return on_elements<B>([](auto v) { return family::scale(v, 0.375); }, x); },
      all_bfloat16());
}

TEST(DeviceFastMathSubnormals, BackwardKeepsSubnormalGradients) {
  HARDACT_REQUIRE_DEVICE();
  const std::vector<float> grads = tiny_floats(kCount, 5);
  const std::vector<float> xs = tiny_floats(kCount, 6);
  family::check_two_inputs_on<float, float, float>(
      hardact::HardSigmoidBackward{}, [](float g, float x) { return family::hard_sigmoid_backward(g, x); }, grads, xs);
  family::check_two_inputs_on<float, float, float>(
      hardact::HardSwishBackward{}, [](float g, float x) { return family::hard_swish_backward(g, x); }, grads, xs);
  // ReLU6's gradient: a positive subnormal x is inside (0, 6), so grad passes (setp.le.ftz says x <= 0).
  family::check_two_inputs_on<float, float, float>(
      hardact::HardTanhBackward{0.0, 6.0}, [](float g, float x) { return family::hard_tanh_backward(g, x, 0.0, 6.0); },
      grads, xs);
  family::check_two_inputs_on<float, float, float>(
      hardact::HardTanhBackward{-1e-40, 1e-40},
      [](float g, float x) { return family::hard_tanh_backward(g, x, -1e-40, 1e-40); }, grads, xs);

  using B = __nv_bfloat16;
  const std::vector<B> b_xs = all_bfloat16();
  std::vector<B> b_grads(b_xs.size());
  for (std::size_t i = 0; i < b_grads.size(); ++i) b_grads[i] = b_xs[(i * 40503u + 17u) & 0xFFFFu];
  family::check_two_inputs_on<B, B, B>(
      hardact::HardSigmoidBackward{},
      [](B g, B x) {
        return on_elements<B>([](auto gv, auto v) { return family::hard_sigmoid_backward(gv, v); }, g, x);
      },
      b_grads, b_xs);
  family::check_two_inputs_on<B, B, B>(
      hardact::HardTanhBackward{0.0, 6.0},
      [](B g, B x) {
        return on_elements<B>([](auto gv, auto v) { return family::hard_tanh_backward(gv, v, 0.0, 6.0); }, g, x);
      },
      b_grads, b_xs);
}

// Without a GPU the inputs can still be checked to contain what the device tests rely on.
TEST(DeviceFastMathSubnormalsInputs, ContainSubnormalsOfBothSigns) {
  const std::vector<float> values = tiny_floats(kCount, 1);
  std::size_t positive = 0, negative = 0;
  for (const float v : values) {
    if (v != 0.0f && std::fabs(v) < std::numeric_limits<float>::min()) (v > 0 ? positive : negative)++;
  }
  EXPECT_GT(positive, 1000u);
  EXPECT_GT(negative, 1000u);
}

}  // namespace
