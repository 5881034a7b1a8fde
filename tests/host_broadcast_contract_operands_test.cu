// The launch contract's refusals of broadcast operands on the host (no GPU needed), in float, double,
// half and bfloat16, in every launcher form (support/broadcast_contract.hpp): null values, zero
// inner or period, misaligned values, values overlapping the output (in place too), a values range
// past the address space; the full-length operands and the output still checked; more than 2^63
// elements; a SampleBroadcast's span (0, or not a multiple of inner * period) and every span's
// values. Refusals return before any CUDA call (host addresses stand in for device memory and
// are never dereferenced, as in host_launch_contract_test.cu).
// (The host broadcast tests are split over host_broadcast_*_test.cu so that they compile in
// parallel.)
#include "support/broadcast_contract.hpp"
#include "support/divmod_cases.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

using namespace hardact_test;


// =============================================================================================
// Launch contract with broadcast operands, without a GPU: refusals return before any CUDA call.

TYPED_TEST_SUITE(HostBroadcastContract, ElementTypes, TypeNames);

TYPED_TEST(HostBroadcastContract, NullValuesAreRefused) {
  for (const std::size_t n : {std::size_t{1}, this->kN}) {
    this->expect_refused(hardact::per_channel(static_cast<const TypeParam*>(nullptr), 4), this->out(), n, "null");
    this->expect_refused(hardact::per_channel(static_cast<const TypeParam*>(nullptr), 1, 8), this->out(), n, "null");
  }
}

TYPED_TEST(HostBroadcastContract, ZeroInnerOrPeriodIsRefused) {
  using T = TypeParam;
  this->expect_refused(hardact::Broadcast<T>{this->values(), 0, 4}, this->out(), this->kN, "inner 0");
  this->expect_refused(hardact::per_channel(this->values(), 4, 0), this->out(), this->kN, "inner 0");
  this->expect_refused(hardact::Broadcast<T>{this->values(), 3, 0}, this->out(), this->kN, "period 0");
  this->expect_refused(hardact::per_channel(this->values(), 0), this->out(), this->kN, "channels 0");
  this->expect_refused(hardact::Broadcast<T>{this->values(), 0, 0}, this->out(), this->kN, "both 0");
}

TYPED_TEST(HostBroadcastContract, MisalignedValuesAreRefused) {
  using T = TypeParam;
  for (std::size_t skew = 1; skew < alignof(T); ++skew) {
    const T* const misaligned = this->memory_.template at<T>(3072 + skew);
    this->expect_refused(hardact::per_channel(misaligned, 4), this->out(), this->kN, "skew " + std::to_string(skew));
  }
}

// Values inside the output would change while being read: any shared byte is refused, in place too.
TYPED_TEST(HostBroadcastContract, ValuesOverlappingTheOutputAreRefused) {
  using T = TypeParam;
  const std::size_t n = this->kN;
  T* const out = this->out();
  this->expect_refused(hardact::per_channel(static_cast<const T*>(out), 4), out, n, "values at out");
  this->expect_refused(hardact::per_channel(static_cast<const T*>(out + 10), 4, 3), out, n, "values inside out");
  this->expect_refused(hardact::per_channel(static_cast<const T*>(out + n - 1), 1), out, n, "last element");
  this->expect_refused(hardact::per_channel(static_cast<const T*>(out - 1), 2), out, n, "first element");
  this->expect_refused(hardact::per_channel(static_cast<const T*>(out - 2), n + 4), out, n, "covering out");
  // In place on x: the output is x, and values inside x are then inside the output.
  T* const x_as_out = this->memory_.template at<T>(0);
  const auto bias = hardact::bias_activation(hardact::HardSigmoid{});
  EXPECT_EQ(hardact::transform(bias, this->x(), hardact::per_channel(this->x() + 3, 4), x_as_out, n),
            cudaErrorInvalidValue);
}

// A values range that wraps around the address space, or whose size overflows, is refused.
TYPED_TEST(HostBroadcastContract, ValuesRangeMustFitTheAddressSpace) {
  using T = TypeParam;
  this->expect_refused(hardact::per_channel(this->values(), SIZE_MAX), this->out(), this->kN, "period SIZE_MAX");
  this->expect_refused(hardact::per_channel(this->values(), SIZE_MAX / sizeof(T) + 1), this->out(), this->kN,
                       "period * sizeof(T) overflows");
}

// The full-length operands and the output are checked as without broadcasts.
TYPED_TEST(HostBroadcastContract, FullLengthOperandsAreStillChecked) {
  using T = TypeParam;
  const hardact::Broadcast<T> b = hardact::per_channel(this->values(), 4);
  const auto bias = hardact::bias_activation(hardact::HardSwish{});
  const std::size_t n = this->kN;
  T* const out = this->out();
  EXPECT_EQ(hardact::transform(bias, static_cast<const T*>(nullptr), b, out, n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(bias, this->x(), b, static_cast<T*>(nullptr), n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(hardact::HardSigmoidGate{}, b, this->x(), static_cast<T*>(nullptr), n),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(bias, static_cast<const T*>(out + 1), b, out, n), cudaErrorInvalidValue);  // overlap
  EXPECT_EQ(hardact::transform(hardact::BiasActivationBackward<hardact::HardSwishBackward>{}, this->x(),
                               static_cast<const T*>(out + 3), b, out, n),
            cudaErrorInvalidValue);
  for (std::size_t skew = 1; skew < alignof(T); ++skew) {
    EXPECT_EQ(hardact::transform(bias, this->memory_.template at<const T>(skew), b, out, n), cudaErrorInvalidValue);
    EXPECT_EQ(hardact::transform(bias, this->x(), b, this->memory_.template at<T>(2048 + skew), n),
              cudaErrorInvalidValue);
  }
}

// A SampleBroadcast: the refusals above, and a span that is 0 or not a multiple of inner * period;
// its values run to period * ceil(n / span), and all of them must be usable.
TYPED_TEST(HostBroadcastContract, SampleBroadcastsAreCheckedLikeBroadcasts) {
  using T = TypeParam;
  const std::size_t n = this->kN;
  T* const out = this->out();
  const T* const values = this->values();
  this->expect_refused(hardact::per_sample_channel(static_cast<const T*>(nullptr), 4, 2), out, n, "null");
  this->expect_refused(hardact::SampleBroadcast<T>{values, 0, 4, 8}, out, n, "inner 0");
  this->expect_refused(hardact::SampleBroadcast<T>{values, 1, 0, 8}, out, n, "period 0");
  this->expect_refused(hardact::SampleBroadcast<T>{values, 1, 4, 0}, out, n, "span 0");
  this->expect_refused(hardact::per_sample_channel(values, 0, 3), out, n, "channels 0");
  this->expect_refused(hardact::per_sample_channel(values, 4, 0), out, n, "positions 0");
  this->expect_refused(hardact::SampleBroadcast<T>{values, 1, 4, 6}, out, n, "span 6 of period 4");
  this->expect_refused(hardact::SampleBroadcast<T>{values, 3, 4, 18}, out, n, "span 18 of inner 3, period 4");
  this->expect_refused(hardact::SampleBroadcast<T>{values, 3, 4, 16}, out, n, "span 16 of inner 3");
  // 4 values per span of 8: 8 spans of a 64-element call read 32 values, the last 22 inside out;
  // the first span's 4 alone would end before it.
  this->expect_refused(hardact::per_sample_channel(static_cast<const T*>(out - 10), 4, 2), out, n,
                       "a later span's values inside out");
  const T* const misaligned = this->memory_.template at<T>(3072 + 1);
  if (alignof(T) > 1) this->expect_refused(hardact::per_sample_channel(misaligned, 4, 2), out, n, "misaligned");
}

TYPED_TEST(HostBroadcastContract, MoreThan2To63ElementsAreRefused) {
  using T = TypeParam;
  const hardact::Broadcast<T> b = hardact::per_channel(this->values(), 4);
  const auto bias = hardact::bias_activation(hardact::HardSwish{});
  for (const std::size_t n : {std::size_t{divmod::kTwo63} + 1, SIZE_MAX / 2 + 2, SIZE_MAX}) {
    EXPECT_EQ(hardact::transform(bias, this->x(), b, this->out(), n), cudaErrorInvalidValue) << n;
  }
}

}  // namespace
