// Broadcast operands on the device of other types than x: bfloat16 x with float scale and shift
// written as bfloat16; half x with a float bias; float x with a double bias, computed in double.
// Checked calls go through support/broadcast_check.hpp's check_call: bit for bit (NaN as a class)
// against the policy applied on the host to each element's values, a broadcast's value for element
// i being values[(i / inner) % period], on the direct and on the staged path, forced. (The broadcast
// device tests are split over device_broadcast_*_test.cu so that they compile in parallel.)
// HARDACT_TEST_QUICK=1 (compute-sanitizer runs) keeps the sizes small and the placements few.
#include "support/broadcast_check.hpp"
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/device_family.hpp"

#include <hardact/hardact.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>

namespace {

using namespace hardact_test;
using namespace hardact_test::broadcast;

// =============================================================================================
// Mixed types: broadcasts of another type than x and the output compute in the common compute type
// and round once.

TEST(DeviceBroadcastMixed, Bfloat16WithFloatScaleShift) {
  HARDACT_REQUIRE_DEVICE();
  using B = __nv_bfloat16;
  const auto op = hardact::scale_shift_activation(hardact::HardSwish{});
  for (const std::size_t n : sweep_sizes()) {
    check_call<B>(op, n, full_input<B>(n, n), channel_input<float>(16, 49, 1), channel_input<float>(16, 49, 2));
    check_call<B>(op, n, full_input<B>(n, n), channel_input<float>(64, 1, 3), channel_input<float>(64, 1, 4));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(DeviceBroadcastMixed, HalfWithFloatBias) {
  HARDACT_REQUIRE_DEVICE();
  using H = __half;
  for (const std::size_t n : sweep_sizes()) {
    check_call<H>(hardact::bias_activation(hardact::HardSigmoid{}), n, full_input<H>(n, n), channel_input<float>(100, 1, 3));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(DeviceBroadcastMixed, FloatWithDoubleBiasComputesInDouble) {
  HARDACT_REQUIRE_DEVICE();
  for (const std::size_t n : sweep_sizes()) {
    check_call<float>(hardact::bias_activation(hardact::HardSwish{}), n, full_input<float>(n, n),
                      channel_input<double>(33, 3, 4));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace
