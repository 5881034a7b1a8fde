// The backward policies through the two-input launcher, transform(op, grad, x, dx, n), on the
// device: float, double, half and bfloat16, sizes x offsets (inputs and output misaligned relative
// to each other), in place on grad and on x, a two-input chain, mixed types, and bad arguments,
// bit for bit (NaN as a class) against the independent host reference.
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/device_family.hpp"
#include "support/reference_family.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace {

using namespace hardact_test;
using family::on_elements;


template <class T>
class DeviceBackward : public ::testing::Test {};
TYPED_TEST_SUITE(DeviceBackward, ElementTypes, TypeNames);

TYPED_TEST(DeviceBackward, HardSigmoidBackward) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  family::check_two_inputs<T, T, T>(hardact::HardSigmoidBackward{}, [](T grad, T x) {
    return on_elements<T>([](auto g, auto v) { return family::hard_sigmoid_backward(g, v); }, grad, x);
  });
}

TYPED_TEST(DeviceBackward, HardSwishBackward) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  family::check_two_inputs<T, T, T>(hardact::HardSwishBackward{}, [](T grad, T x) {
    return on_elements<T>([](auto g, auto v) { return family::hard_swish_backward(g, v); }, grad, x);
  });
}

TYPED_TEST(DeviceBackward, HardTanhBackward) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const double bounds[][2] = {{-1.0, 1.0}, {0.0, 6.0}};  // PyTorch's defaults, then ReLU6's gradient
  for (const auto& b : bounds) {
    const double lo = b[0], hi = b[1];
    family::check_two_inputs<T, T, T>(hardact::HardTanhBackward{lo, hi}, [&](T grad, T x) {
      return on_elements<T>([&](auto g, auto v) { return family::hard_tanh_backward(g, v, lo, hi); }, grad, x);
    });
  }
}

#if HARDACT_TEST_UNTYPED_CASES  // in part 1 of a build by type (tests/CMakeLists.txt)
TEST(DeviceBackwardChain, GradientTimesScaleClamped) {
  HARDACT_REQUIRE_DEVICE();
  using T = __nv_bfloat16;
  const auto fused = hardact::chain(hardact::HardSwishBackward{}, hardact::Scale{0.5}, hardact::HardTanh{-1.0, 1.0});
  family::check_two_inputs<T, T, T>(fused, [](T grad, T x) {
    return on_elements<T>(
        [](auto g, auto v) {
          return family::hard_tanh(family::scale(family::hard_swish_backward(g, v), 0.5), -1.0, 1.0);
        },
        grad, x);
  });
}

// Mixed types: float grad and x written as bfloat16 (rounded once from float), and bfloat16
// inputs written as float (exact widening, then float arithmetic).
TEST(DeviceBackwardMixed, FloatInputsToBfloat16) {
  HARDACT_REQUIRE_DEVICE();
  family::check_two_inputs<float, float, __nv_bfloat16>(hardact::HardSigmoidBackward{}, [](float grad, float x) {
    return family::round_to<__nv_bfloat16>(family::hard_sigmoid_backward(grad, x));
  });
}

TEST(DeviceBackwardMixed, Bfloat16InputsToFloat) {
  HARDACT_REQUIRE_DEVICE();
  using B = __nv_bfloat16;
  family::check_two_inputs<B, B, float>(hardact::HardSwishBackward{}, [](B grad, B x) {
    return family::hard_swish_backward(static_cast<float>(family::value_of(grad)),
                                       static_cast<float>(family::value_of(x)));
  });
}

TEST(DeviceBackwardArguments, BadArgumentsWriteNothing) {
  HARDACT_REQUIRE_DEVICE();
  constexpr std::size_t n = 4096;
  GuardedBuffer<float> grad(n + 1, 0), x(n + 1, 0), out(n, 0);
  HARDACT_ASSERT_CUDA(grad.status());
  HARDACT_ASSERT_CUDA(x.status());
  HARDACT_ASSERT_CUDA(out.status());
  const float* g = grad.data();
  const float* v = x.data();
  const hardact::HardSigmoidBackward op;

  EXPECT_EQ(hardact::transform(hardact::HardTanhBackward{1.0, -1.0}, g, v, out.data(), n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(hardact::HardTanhBackward{std::nan(""), 1.0}, g, v, out.data(), n),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(op, static_cast<const float*>(nullptr), v, out.data(), n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(op, g, static_cast<const float*>(nullptr), out.data(), n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(op, g, v, static_cast<float*>(nullptr), n), cudaErrorInvalidValue);
  // The output one element past either input overlaps it without being in place.
  EXPECT_EQ(hardact::transform(op, g, v, grad.data() + 1, n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(op, g, v, x.data() + 1, n), cudaErrorInvalidValue);
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(family::payload_untouched(out));
  EXPECT_TRUE(family::payload_untouched(grad));
  EXPECT_TRUE(family::payload_untouched(x));
  EXPECT_TRUE(out.guards_intact() && grad.guards_intact() && x.guards_intact());
  EXPECT_EQ(hardact::transform(op, static_cast<const float*>(nullptr), static_cast<const float*>(nullptr),
                               static_cast<float*>(nullptr), 0),
            cudaSuccess);
}

// Inputs may overlap each other freely: grad and x from one buffer, one element apart.
TEST(DeviceBackwardArguments, OverlappingInputsAreAllowed) {
  HARDACT_REQUIRE_DEVICE();
  constexpr std::size_t n = 10001;
  const std::vector<float> values = family::device_inputs<float>(n + 1, 99);
  GuardedBuffer<float> shared(n + 1, 0), out(n, 2);
  HARDACT_ASSERT_CUDA(shared.status());
  HARDACT_ASSERT_CUDA(out.status());
  HARDACT_ASSERT_CUDA(shared.upload(values));
  HARDACT_ASSERT_CUDA(hardact::transform(hardact::HardSwishBackward{}, static_cast<const float*>(shared.data()),
                                         static_cast<const float*>(shared.data() + 1), out.data(), n));
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  std::vector<float> outputs, expected(n), xs(values.begin() + 1, values.end());
  HARDACT_ASSERT_CUDA(out.download(outputs));
  for (std::size_t i = 0; i < n; ++i) expected[i] = family::hard_swish_backward(values[i], values[i + 1]);
  EXPECT_TRUE(family::all_match(xs, outputs, expected));
  EXPECT_TRUE(out.guards_intact());
}
#endif  // HARDACT_TEST_UNTYPED_CASES

}  // namespace
