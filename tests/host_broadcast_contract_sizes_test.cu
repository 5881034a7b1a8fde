// The launch contract with broadcast operands on the host (no GPU needed), for element counts and
// shapes: n == 0 succeeds without looking at the operands' pointers, but a malformed operand is
// refused whatever n, in float, double, half and bfloat16; more
// than 2^63 elements is refused as the only reason; channel_sum's argument refusals. Refusals return
// before any CUDA call (host addresses stand in for device memory and are never dereferenced, as in
// host_launch_contract_test.cu).
// (The host broadcast tests are split over host_broadcast_*_test.cu so that they compile in
// parallel.)
#include "support/broadcast_contract.hpp"
#include "support/divmod_cases.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>
#include <hardact/fp8.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

using namespace hardact_test;


// =============================================================================================
// Launch contract with broadcast operands, without a GPU: refusals return before any CUDA call.

TYPED_TEST_SUITE(HostBroadcastContract, ElementTypes, TypeNames);

TYPED_TEST(HostBroadcastContract, ZeroElementsSucceedsWithoutLookingAtOperands) {
  using T = TypeParam;
  const auto bias = hardact::bias_activation(hardact::HardSwish{});
  const T* const null_in = nullptr;
  T* const null_out = nullptr;
  // Well-formed operands whose pointers would be refused for n > 0: null, misaligned, inside out.
  std::vector<hardact::Broadcast<T>> unusable = {{nullptr, 1, 1}, {reinterpret_cast<const T*>(this->out()), 1, 4}};
  if (alignof(T) > 1) unusable.push_back({this->memory_.template at<T>(3072 + 1), 1, 4});
  for (const hardact::Broadcast<T>& b : unusable) {
    EXPECT_EQ(hardact::transform(bias, null_in, b, null_out, 0), cudaSuccess);
    EXPECT_EQ(hardact::transform(bias, this->x(), b, this->out(), 0), cudaSuccess);
    EXPECT_EQ(hardact::transform(hardact::HardSigmoidGate{}, b, null_in, null_out, 0), cudaSuccess);
    EXPECT_EQ(hardact::transform(hardact::scale_shift_activation(hardact::HardSigmoid{}), null_in, b, b, null_out, 0),
              cudaSuccess);
    EXPECT_EQ(hardact::transform(hardact::ScaleShiftActivationBackward<hardact::HardSigmoidBackward>{}, null_in,
                                 null_in, b, b, null_out, 0),
              cudaSuccess);
  }
  const hardact::SampleBroadcast<T> null_sample = hardact::per_sample_channel(static_cast<const T*>(nullptr), 4, 2);
  EXPECT_EQ(hardact::transform(hardact::HardSigmoidGate{}, null_in, null_sample, null_out, 0), cudaSuccess);
}

// The empty-call rule: a malformed operand is refused whatever n, before n == 0 succeeds. Inner or
// period 0, and a SampleBroadcast's span 0 or not a multiple of inner * period, are refused at
// n == 0 too, with valid pointers and with null ones, in every launcher form.
TYPED_TEST(HostBroadcastContract, MalformedOperandsAreRefusedWhenEmpty) {
  using T = TypeParam;
  const T* const values = this->values();
  T* const out = this->out();
  this->expect_refused(hardact::Broadcast<T>{values, 0, 4}, out, 0, "inner 0");
  this->expect_refused(hardact::Broadcast<T>{values, 3, 0}, out, 0, "period 0");
  this->expect_refused(hardact::per_channel(values, 0), out, 0, "channels 0");
  this->expect_refused(hardact::Broadcast<T>{nullptr, 0, 0}, out, 0, "both 0, null values");
  this->expect_refused(hardact::SampleBroadcast<T>{values, 0, 4, 8}, out, 0, "sample inner 0");
  this->expect_refused(hardact::SampleBroadcast<T>{values, 1, 0, 8}, out, 0, "sample period 0");
  this->expect_refused(hardact::SampleBroadcast<T>{values, 1, 4, 0}, out, 0, "span 0");
  this->expect_refused(hardact::per_sample_channel(values, 4, 0), out, 0, "positions 0");
  this->expect_refused(hardact::SampleBroadcast<T>{values, 1, 4, 6}, out, 0, "span 6 of period 4");
  this->expect_refused(hardact::SampleBroadcast<T>{values, 3, 4, 16}, out, 0, "span 16 of inner 3");
  const T* const null_in = nullptr;
  T* const null_out = nullptr;
  const auto bias = hardact::bias_activation(hardact::HardSwish{});
  EXPECT_EQ(hardact::transform(bias, null_in, hardact::Broadcast<T>{nullptr, 1, 0}, null_out, 0),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(hardact::HardSigmoidGate{}, null_in, hardact::SampleBroadcast<T>{nullptr, 1, 4, 6},
                               null_out, 0),
            cudaErrorInvalidValue);
  // An invalid policy, too, whatever n and whatever the operands.
  EXPECT_EQ(hardact::transform(hardact::bias_activation(hardact::HardTanh{1.0, -1.0}), null_in,
                               hardact::Broadcast<T>{nullptr, 1, 1}, null_out, 0),
            cudaErrorInvalidValue);
}
// The element-count limit on its own: one-byte elements in place, so that every other check passes
// for n = 2^63 + 1 ([out, out + n) fits the address space above these host addresses, and the
// values lie below it). Without the limit this call would go on to the device query.
TEST(HostBroadcastContractLimit, MoreThan2To63ElementsIsTheOnlyReason) {
  using E = __nv_fp8_e4m3;
  FakeDeviceMemory memory;
  E* const data = memory.at<E>(2048);
  const float* const values = memory.at<float>(0);
  const std::size_t n = std::size_t{divmod::kTwo63} + 1;
  ASSERT_LT(reinterpret_cast<std::uintptr_t>(data), UINTPTR_MAX - n) << "host addresses below 2^63 expected";
  EXPECT_EQ(hardact::transform(hardact::Add{}, static_cast<const E*>(data), hardact::per_channel(values, 4), data, n),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(hardact::Add{}, hardact::per_channel(values, 4, 1000), static_cast<const E*>(data),
                               data, SIZE_MAX - 4096),
            cudaErrorInvalidValue);
}

// channel_sum's argument checks that come before any CUDA call, for the size query and the run.
TEST(HostChannelSumContract, BadShapesAreRefused) {
  FakeDeviceMemory memory;
  const float* const in = memory.at<float>(0);
  float* const sums = memory.at<float>(2048);
  void* const temp = memory.at<unsigned char>(3072);
  struct Shape {
    std::size_t n, channels, inner;
    const char* what;
  };
  const Shape shapes[] = {{12, 0, 1, "channels 0"},
                          {12, 3, 0, "inner 0"},
                          {0, 0, 0, "both 0, n 0"},
                          {10, 3, 1, "n not a multiple of channels"},
                          {15, 3, 2, "n not a multiple of channels * inner"},
                          {7, 7, 2, "n smaller than one row"},
                          {0, std::size_t{1} << 62, 4, "channels * inner past 2^63"},
                          {0, SIZE_MAX, SIZE_MAX, "channels * inner overflows"},
                          {std::size_t{divmod::kTwo63} + 1, 1, 1, "n past 2^63"},
                          {SIZE_MAX, 1, 1, "n = SIZE_MAX"}};
  for (const Shape& shape : shapes) {
    std::size_t bytes = 0;
    EXPECT_EQ(hardact::channel_sum(nullptr, bytes, in, shape.n, shape.channels, shape.inner, sums),
              cudaErrorInvalidValue)
        << shape.what << " (size query)";
    bytes = 1024;
    EXPECT_EQ(hardact::channel_sum(temp, bytes, in, shape.n, shape.channels, shape.inner, sums), cudaErrorInvalidValue)
        << shape.what;
    __nv_bfloat16* const narrow_sums = memory.at<__nv_bfloat16>(2048);
    EXPECT_EQ(hardact::channel_sum(temp, bytes, reinterpret_cast<const __nv_bfloat16*>(in), shape.n, shape.channels,
                                   shape.inner, narrow_sums),
              cudaErrorInvalidValue)
        << shape.what << " (bfloat16)";
  }
}

}  // namespace
