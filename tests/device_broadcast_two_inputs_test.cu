// Broadcast operands with two full-length inputs through the launchers on the device, in float,
// double, half and bfloat16: a residual plus a bias (a chain), residual_activation (two full-length
// inputs, no broadcast), bias_activation_product (each full-length input with its bias), and the
// backward policies BiasActivationBackward and
// ScaleShiftActivationBackward with their broadcasts; device_family.hpp's sizes, every offset class
// and in place on a full-length input.
// Checked calls go through support/broadcast_check.hpp's check_call: bit for bit (NaN as a class)
// against the policy applied on the host to each element's values, a broadcast's value for element
// i being values[(i / inner) % period], on the direct and on the staged path, forced. (The broadcast
// device tests are split over device_broadcast_*_test.cu so that they compile in parallel.)
// HARDACT_TEST_QUICK=1 (compute-sanitizer runs) keeps the sizes small and the placements few.
#include "support/broadcast_check.hpp"
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>

namespace {

using namespace hardact_test;
using namespace hardact_test::broadcast;

template <class T>
class DeviceBroadcastTwoInputs : public ::testing::Test {};
TYPED_TEST_SUITE(DeviceBroadcastTwoInputs, ElementTypes, TypeNames);

// =============================================================================================
// Two full-length inputs: a residual, and the backward policies with their broadcasts.

TYPED_TEST(DeviceBroadcastTwoInputs, ResidualPlusBias) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const auto op = hardact::chain(AddResidualAndBias{}, hardact::HardSwish{});
  for (const std::size_t n : sweep_sizes()) {
    check_call<T>(op, n, full_input<T>(n, n), full_input<T>(n, n + 1), channel_input<T>(64, 1, 64));
    if (::testing::Test::HasFatalFailure()) return;
    check_call<T>(op, n, full_input<T>(n, n + 2), full_input<T>(n, n + 3), channel_input<T>(6, 49, 65));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// residual_activation with a full-length residual (no broadcast: the launchers' plain path).
TYPED_TEST(DeviceBroadcastTwoInputs, ResidualActivation) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  for (const std::size_t n : sweep_sizes()) {
    check_call<T>(hardact::residual_activation(hardact::HardSwish{}), n, full_input<T>(n, n), full_input<T>(n, n + 9));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// bias_activation_product: the full-length inputs apart, each followed by its bias (channels-last
// and NCHW periods).
TYPED_TEST(DeviceBroadcastTwoInputs, BiasActivationProduct) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const auto op = hardact::bias_activation_product(hardact::ReLU6{});
  for (const std::size_t n : sweep_sizes()) {
    check_call<T>(op, n, full_input<T>(n, n), channel_input<T>(24, 1, 11), full_input<T>(n, n + 4),
                  channel_input<T>(24, 1, 12));
    if (::testing::Test::HasFatalFailure()) return;
    check_call<T>(op, n, full_input<T>(n, n + 6), channel_input<T>(6, 49, 13), full_input<T>(n, n + 7),
                  channel_input<T>(6, 49, 14));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TYPED_TEST(DeviceBroadcastTwoInputs, BiasActivationBackward) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const hardact::BiasActivationBackward<hardact::HardSwishBackward> op;
  for (const std::size_t n : sweep_sizes()) {
    check_call<T>(op, n, full_input<T>(n, n), full_input<T>(n, 2 * n), channel_input<T>(10, 1, 7));
    if (::testing::Test::HasFatalFailure()) return;
    check_call<T>(op, n, full_input<T>(n, n + 5), full_input<T>(n, 2 * n + 5), channel_input<T>(3, 49, 8));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TYPED_TEST(DeviceBroadcastTwoInputs, ScaleShiftActivationBackward) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const hardact::ScaleShiftActivationBackward<hardact::HardSwishBackward> op;
  for (const std::size_t n : sweep_sizes()) {
    check_call<T>(op, n, full_input<T>(n, n), full_input<T>(n, 3 * n), channel_input<T>(16, 64, 1),
                  channel_input<T>(16, 64, 2));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace
