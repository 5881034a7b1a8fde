// The launch contract with broadcast operands on the host (no GPU needed): invalid policies (HardTanh
// bounds out of order or NaN, in the fused forward and backward policies) are refused, in float,
// double, half and bfloat16, and with n == 0 the answer is the same as without broadcasts. Refusals
// return before any CUDA call (host addresses stand in for device memory and are never
// dereferenced, as in host_launch_contract_test.cu).
// (The host broadcast tests are split over host_broadcast_*_test.cu so that they compile in
// parallel.)
#include "support/broadcast_contract.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>

namespace {

using namespace hardact_test;

// =============================================================================================
// Launch contract with broadcast operands, without a GPU: refusals return before any CUDA call.

TYPED_TEST_SUITE(HostBroadcastContract, ElementTypes, TypeNames);

TYPED_TEST(HostBroadcastContract, InvalidPoliciesAreRefused) {
  using T = TypeParam;
  const double nan = std::nan("");
  const hardact::Broadcast<T> b = hardact::per_channel(this->values(), 4);
  T* const out = this->out();
  const std::size_t n = this->kN;
  EXPECT_EQ(hardact::transform(hardact::bias_activation(hardact::HardTanh{1.0, -1.0}), this->x(), b, out, n),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(hardact::scale_shift_activation(hardact::HardTanh{nan, 1.0}), this->x(), b, b, out, n),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(hardact::BiasActivationBackward<hardact::HardTanhBackward>{{2.0, 1.0}}, this->x(),
                               this->residual(), b, out, n),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(hardact::ScaleShiftActivationBackward<hardact::HardTanhBackward>{{-1.0, nan}},
                               this->x(), this->residual(), b, b, out, n),
            cudaErrorInvalidValue);
  // n == 0 with an invalid policy: the same answer as the same call with full-length inputs only.
  const auto invalid = hardact::bias_activation(hardact::HardTanh{1.0, -1.0});
  EXPECT_EQ(hardact::transform(invalid, this->x(), b, out, 0), hardact::transform(invalid, this->x(), this->residual(), out, 0));
}

}  // namespace
