// A scale -> clamp -> offset chain through hardact::transform on the device, for float, double,
// half and bfloat16: sizes x offsets x in place, bit for bit (NaN as a class) against the
// independent host reference (support/reference_family.hpp); and bad arguments to the one-input
// policies (an invalid policy alone or in a chain, null pointers, partial overlap), which must
// return cudaErrorInvalidValue and write nothing.
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
class DeviceChain : public ::testing::Test {};
TYPED_TEST_SUITE(DeviceChain, ElementTypes, TypeNames);

TYPED_TEST(DeviceChain, ScaleClampOffsetMatchesReference) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const auto fused = hardact::chain(hardact::Affine{2.0, -0.5}, hardact::HardTanh{}, hardact::Offset{0.25});
  family::check_one_input<T, T>(fused, [](T x) {
    return on_elements<T>(
        [](auto v) { return family::offset(family::hard_tanh(family::affine(v, 2.0, -0.5), -1.0, 1.0), 0.25); }, x);
  });
}

#if HARDACT_TEST_UNTYPED_CASES  // in part 1 of a build by type (tests/CMakeLists.txt)
TEST(DevicePolicyArguments, BadArgumentsWriteNothing) {
  HARDACT_REQUIRE_DEVICE();
  constexpr std::size_t n = 4096;
  GuardedBuffer<float> in(n + 1, 0), out(n, 0);
  GuardedBuffer<__nv_bfloat16> narrow(2 * n, 0);
  HARDACT_ASSERT_CUDA(in.status());
  HARDACT_ASSERT_CUDA(out.status());
  HARDACT_ASSERT_CUDA(narrow.status());
  const float* input = in.data();
  const double nan = std::nan("");

  // An invalid policy, alone or inside a chain.
  EXPECT_EQ(hardact::transform(hardact::HardSigmoid::affine(nan, 0.5), input, out.data(), n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(hardact::chain(hardact::ReLU6{}, hardact::Scale{HUGE_VAL}), input, out.data(), n),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(hardact::chain(hardact::HardTanh{1.0, -1.0}), input, out.data(), n),
            cudaErrorInvalidValue);
  // Null pointers, and partial overlap (one element apart; a float output over a bfloat16 input).
  EXPECT_EQ(hardact::transform(hardact::ReLU6{}, static_cast<const float*>(nullptr), out.data(), n),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(hardact::ReLU6{}, input, static_cast<float*>(nullptr), n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(hardact::HardSwish{}, input, in.data() + 1, n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(hardact::HardSwish{}, static_cast<const __nv_bfloat16*>(narrow.data()),
                               reinterpret_cast<float*>(narrow.data()), n),
            cudaErrorInvalidValue);
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(family::payload_untouched(out));
  EXPECT_TRUE(family::payload_untouched(in));
  EXPECT_TRUE(family::payload_untouched(narrow));
  EXPECT_TRUE(out.guards_intact() && in.guards_intact() && narrow.guards_intact());

  // n == 0 is a no-op, even with null pointers.
  EXPECT_EQ(
      hardact::transform(hardact::HardSwish{}, static_cast<const float*>(nullptr), static_cast<float*>(nullptr), 0),
      cudaSuccess);
}
#endif  // HARDACT_TEST_UNTYPED_CASES

}  // namespace
