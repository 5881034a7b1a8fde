// Test support for the host tests of the launch contract with broadcast operands
// (host_broadcast_contract_*_test.cu): host storage that stands in for device memory, and the
// typed fixture HostBroadcastContract with its arrays in it and expect_refused, which tries a
// broadcast in every launcher form. Refusals return before any CUDA call, so the host addresses
// are never dereferenced (as in host_launch_contract_test.cu).
#pragma once

#include "support/fake_device_memory.hpp"

#include <hardact/hardact.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

namespace hardact_test {

template <class T>
class HostBroadcastContract : public ::testing::Test {
 protected:
  static constexpr std::size_t kN = 64;
  FakeDeviceMemory memory_;
  const T* x() { return memory_.at<T>(0); }
  const T* residual() { return memory_.at<T>(1024); }
  T* out() { return memory_.at<T>(2048); }
  const T* values() { return memory_.at<T>(3072); }

  /// Expects cudaErrorInvalidValue from every launcher form that takes `b` (a Broadcast or a
  /// SampleBroadcast): the broadcast as the second, first and last of two inputs, the middle of
  /// three and each of four.
  template <class B>
  void expect_refused(const B& b, T* out, std::size_t n, const std::string& what) {
    const hardact::Broadcast<T> good = hardact::per_channel(values(), 4);
    const auto bias = hardact::bias_activation(hardact::HardSwish{});
    EXPECT_EQ(hardact::transform(bias, x(), b, out, n), cudaErrorInvalidValue) << what;
    EXPECT_EQ(hardact::transform(hardact::HardSigmoidGate{}, b, x(), out, n), cudaErrorInvalidValue) << what;
    EXPECT_EQ(hardact::transform<1>(bias, x(), b, out, n), cudaErrorInvalidValue) << what;
    EXPECT_EQ(hardact::transform(hardact::scale_shift_activation(hardact::ReLU6{}), x(), b, good, out, n),
              cudaErrorInvalidValue)
        << what;
    EXPECT_EQ(hardact::transform(hardact::scale_shift_activation(hardact::ReLU6{}), x(), good, b, out, n),
              cudaErrorInvalidValue)
        << what;
    EXPECT_EQ(hardact::transform(hardact::BiasActivationBackward<hardact::HardSwishBackward>{}, x(), residual(), b,
                                 out, n),
              cudaErrorInvalidValue)
        << what;
    EXPECT_EQ(hardact::transform(hardact::ScaleShiftActivationBackward<hardact::HardSwishBackward>{}, x(),
                                 residual(), b, good, out, n),
              cudaErrorInvalidValue)
        << what;
    EXPECT_EQ(hardact::transform(hardact::ScaleShiftActivationBackward<hardact::HardSwishBackward>{}, b, x(), good,
                                 residual(), out, n),
              cudaErrorInvalidValue)
        << what;
  }
};

}  // namespace hardact_test
