// Test support for the launch contract's device rule: scenarios that call launchers with
// pointers on the current device, on another device (with and without peer access), in managed,
// pinned and plain host memory. Each scenario takes the launchers to call as a type, so the same
// scenario checks the plain launchers compiled with HARDACT_CHECK_POINTER_DEVICES and the
// hardact::checked launchers.
//
// Safety: a launch with a pointer the device cannot reach faults and loses the CUDA context for the
// whole process. Scenarios that expect a refusal therefore first ask hardact::check_pointer_devices
// (which never launches) and stop, failing, if it would let the pointer through; only then do they
// call the launchers, which run the same check before launching anything.
#pragma once

#include "support/device.hpp"
#include "support/device_family.hpp"
#include "support/reference.hpp"
#include "support/reference_family.hpp"
#include "support/stream_run.hpp"

#include <hardact/hardact.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace hardact_test {
namespace pointer_access {

/// The plain launchers (they check pointer devices only where HARDACT_CHECK_POINTER_DEVICES is on).
struct PlainLaunchers {
  static cudaError_t hardsigmoid(const float* in, float* out, std::size_t n, cudaStream_t stream) {
    return hardact::hardsigmoid(in, out, n, stream);
  }
  static cudaError_t backward(const float* grad, const float* x, float* out, std::size_t n, cudaStream_t stream) {
    return hardact::transform(hardact::HardSigmoidBackward{}, grad, x, out, n, stream);
  }
};

/// The launchers that always check.
struct CheckedLaunchers {
  static cudaError_t hardsigmoid(const float* in, float* out, std::size_t n, cudaStream_t stream) {
    return hardact::checked::hardsigmoid(in, out, n, stream);
  }
  static cudaError_t backward(const float* grad, const float* x, float* out, std::size_t n, cudaStream_t stream) {
    return hardact::checked::transform(hardact::HardSigmoidBackward{}, grad, x, out, n, stream);
  }
};

inline constexpr std::size_t kLength = 4099;  // odd: head, vectors and tail
inline constexpr std::size_t kOffset = 1;     // one element past a 256-byte boundary

inline std::vector<float> inputs() { return family::device_inputs<float>(kLength, 90); }
inline std::vector<float> grads() { return family::device_inputs<float>(kLength, 91); }

inline std::vector<float> expected_hardsigmoid(const std::vector<float>& x) {
  std::vector<float> expected(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) expected[i] = reference::hard_sigmoid(x[i]);
  return expected;
}

inline std::vector<float> expected_backward(const std::vector<float>& grad, const std::vector<float>& x) {
  std::vector<float> expected(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) expected[i] = family::hard_sigmoid_backward(grad[i], x[i]);
  return expected;
}

/// Makes `device` current for the scope, then device 0 again (the tests' main-thread default).
class OnDevice {
 public:
  explicit OnDevice(int device) { status_ = cudaSetDevice(device); }
  ~OnDevice() { (void)cudaSetDevice(0); }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;
  cudaError_t status() const { return status_; }

 private:
  cudaError_t status_;
};

/// Makes `device` current when it goes out of scope. Declared right after the objects created on
/// `device`, it has them destroyed (freed) while their own device is current.
class ReturnToDevice {
 public:
  explicit ReturnToDevice(int device) : device_(device) {}
  ~ReturnToDevice() { (void)cudaSetDevice(device_); }
  ReturnToDevice(const ReturnToDevice&) = delete;
  ReturnToDevice& operator=(const ReturnToDevice&) = delete;

 private:
  int device_;
};

/// Peer access from the current device to `peer` for the scope: enabled on construction and
/// disabled again on destruction, also when a failed assertion leaves the test early, so later
/// tests in the process find it off. (Expected failures of CUDA calls are avoided throughout:
/// compute-sanitizer reports every failing API call as an error.)
class PeerAccessScope {
 public:
  explicit PeerAccessScope(int peer) : peer_(peer) {
    status_ = cudaGetDevice(&device_);
    if (status_ == cudaSuccess) status_ = cudaDeviceEnablePeerAccess(peer, 0);
  }
  ~PeerAccessScope() {
    if (status_ != cudaSuccess) return;
    int current = 0;
    (void)cudaGetDevice(&current);
    (void)cudaSetDevice(device_);
    (void)cudaDeviceDisablePeerAccess(peer_);
    (void)cudaSetDevice(current);
  }
  PeerAccessScope(const PeerAccessScope&) = delete;
  PeerAccessScope& operator=(const PeerAccessScope&) = delete;
  cudaError_t status() const { return status_; }

 private:
  int peer_, device_ = 0;
  cudaError_t status_;
};

/// Skips the test unless the process sees at least two devices.
#define HARDACT_REQUIRE_TWO_DEVICES()                                                                      \
  do {                                                                                                     \
    const int hardact_devices_ = ::hardact_test::visible_device_count();                                   \
    if (hardact_devices_ < 2)                                                                              \
      GTEST_SKIP() << "needs two CUDA devices (a pointer on device 1 while device 0 is current); this "    \
                      "process sees "                                                                      \
                   << hardact_devices_;                                                                    \
  } while (0)

/// True when every byte of `values` holds the poison pattern.
inline bool all_poison(const std::vector<float>& values) {
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (std::size_t i = 0; i < values.size() * sizeof(float); ++i)
    if (bytes[i] != kPoisonByte) return false;
  return true;
}

/// Device memory of the current device: accepted, results right (one and two inputs).
template <class Launchers>
void accepted_on_current_device() {
  Stream stream;
  HARDACT_ASSERT_CUDA(stream.status());
  StreamArray<float> x(kLength, kOffset), grad(kLength, kOffset), out(kLength, kOffset);
  HARDACT_ASSERT_CUDA(x.status());
  HARDACT_ASSERT_CUDA(grad.status());
  HARDACT_ASSERT_CUDA(out.status());
  const std::vector<float> x_values = inputs(), grad_values = grads();
  HARDACT_ASSERT_CUDA(x.upload(x_values, kOffset, stream.get()));
  HARDACT_ASSERT_CUDA(grad.upload(grad_values, 0, stream.get()));
  EXPECT_EQ(hardact::check_pointer_devices(static_cast<const float*>(x.at(kOffset)), out.at(0)), cudaSuccess);

  HARDACT_ASSERT_CUDA(out.poison(stream.get()));
  HARDACT_ASSERT_CUDA(Launchers::hardsigmoid(x.at(kOffset), out.at(0), kLength, stream.get()));
  EXPECT_TRUE(output_matches(out, 0, x_values, expected_hardsigmoid(x_values), stream.get()));

  HARDACT_ASSERT_CUDA(out.poison(stream.get()));
  HARDACT_ASSERT_CUDA(Launchers::backward(grad.at(0), x.at(kOffset), out.at(kOffset), kLength, stream.get()));
  EXPECT_TRUE(output_matches(out, kOffset, x_values, expected_backward(grad_values, x_values), stream.get()));
}

/// Managed memory: accepted, results right.
template <class Launchers>
void accepted_in_managed_memory() {
  int device = 0, managed = 0;
  HARDACT_ASSERT_CUDA(cudaGetDevice(&device));
  HARDACT_ASSERT_CUDA(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, device));
  if (managed == 0) GTEST_SKIP() << "device " << device << " has no managed memory";
  float* x = nullptr;
  float* out = nullptr;
  HARDACT_ASSERT_CUDA(cudaMallocManaged(&x, kLength * sizeof(float)));
  HARDACT_ASSERT_CUDA(cudaMallocManaged(&out, kLength * sizeof(float)));
  const std::vector<float> x_values = inputs();
  std::memcpy(x, x_values.data(), kLength * sizeof(float));
  std::memset(out, kPoisonByte, kLength * sizeof(float));

  EXPECT_EQ(hardact::check_pointer_devices(static_cast<const float*>(x), out), cudaSuccess);
  EXPECT_EQ(Launchers::hardsigmoid(x, out, kLength, nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> outputs(out, out + kLength);
  EXPECT_TRUE(family::all_match(x_values, outputs, expected_hardsigmoid(x_values)));
  EXPECT_EQ(cudaFree(x), cudaSuccess);
  EXPECT_EQ(cudaFree(out), cudaSuccess);
}

/// Pinned host memory (cudaMallocHost, mapped into every device's address space): accepted as
/// input and as output, results right.
template <class Launchers>
void accepted_in_pinned_host_memory() {
  Stream stream;
  HARDACT_ASSERT_CUDA(stream.status());
  float* x = nullptr;
  float* out = nullptr;
  HARDACT_ASSERT_CUDA(cudaMallocHost(&x, kLength * sizeof(float)));
  HARDACT_ASSERT_CUDA(cudaMallocHost(&out, kLength * sizeof(float)));
  const std::vector<float> x_values = inputs();
  std::memcpy(x, x_values.data(), kLength * sizeof(float));
  std::memset(out, kPoisonByte, kLength * sizeof(float));

  EXPECT_EQ(hardact::check_pointer_devices(static_cast<const float*>(x), out), cudaSuccess);
  EXPECT_EQ(Launchers::hardsigmoid(x, out, kLength, stream.get()), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream.get()), cudaSuccess);
  const std::vector<float> outputs(out, out + kLength);
  EXPECT_TRUE(family::all_match(x_values, outputs, expected_hardsigmoid(x_values)));
  EXPECT_EQ(cudaFreeHost(x), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(out), cudaSuccess);
}

/// Plain (pageable, unregistered) host memory: refused with cudaErrorInvalidDevice, nothing
/// written, no error left behind, on devices that cannot access pageable memory; accepted with
/// right results on devices that can (cudaDevAttrPageableMemoryAccess: HMM or ATS systems).
template <class Launchers>
void plain_host_memory() {
  int device = 0, pageable_access = 0;
  HARDACT_ASSERT_CUDA(cudaGetDevice(&device));
  HARDACT_ASSERT_CUDA(cudaDeviceGetAttribute(&pageable_access, cudaDevAttrPageableMemoryAccess, device));
  std::printf("hardact-multi: device %d %s pageable host memory (cudaDevAttrPageableMemoryAccess = %d)\n", device,
              pageable_access != 0 ? "accesses" : "cannot access", pageable_access);
  Stream stream;
  HARDACT_ASSERT_CUDA(stream.status());
  StreamArray<float> device_x(kLength, 0), device_out(kLength, 0);
  HARDACT_ASSERT_CUDA(device_x.status());
  HARDACT_ASSERT_CUDA(device_out.status());
  const std::vector<float> x_values = inputs();
  HARDACT_ASSERT_CUDA(device_x.upload(x_values, 0, stream.get()));
  HARDACT_ASSERT_CUDA(device_out.poison(stream.get()));
  HARDACT_ASSERT_CUDA(cudaStreamSynchronize(stream.get()));
  std::vector<float> host_x = x_values;
  std::vector<float> host_out(kLength);
  std::memset(host_out.data(), kPoisonByte, kLength * sizeof(float));
  const float* const host_in = host_x.data();

  if (pageable_access != 0) {
    EXPECT_EQ(hardact::check_pointer_devices(host_in, host_out.data()), cudaSuccess);
    EXPECT_EQ(Launchers::hardsigmoid(host_in, host_out.data(), kLength, stream.get()), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream.get()), cudaSuccess);
    EXPECT_TRUE(family::all_match(x_values, host_out, expected_hardsigmoid(x_values)));
    return;
  }
  ASSERT_EQ(hardact::check_pointer_devices(host_in), cudaErrorInvalidDevice)
      << "the check lets plain host memory through on a device that cannot access it; not launching";
  ASSERT_EQ(hardact::check_pointer_devices(static_cast<const float*>(host_out.data())), cudaErrorInvalidDevice);
  EXPECT_EQ(Launchers::hardsigmoid(host_in, host_out.data(), kLength, stream.get()), cudaErrorInvalidDevice);
  EXPECT_EQ(Launchers::hardsigmoid(device_x.at(0), host_out.data(), kLength, stream.get()), cudaErrorInvalidDevice);
  EXPECT_EQ(Launchers::hardsigmoid(host_in, device_out.at(0), kLength, stream.get()), cudaErrorInvalidDevice);
  EXPECT_EQ(Launchers::backward(device_x.at(0), host_in, device_out.at(0), kLength, stream.get()),
            cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a refusal must not leave an error behind";
  EXPECT_TRUE(all_poison(host_out)) << "a refused call wrote to host memory";
  const std::vector<float> poison_expected = [] {
    std::vector<float> poison(kLength);
    std::memset(poison.data(), kPoisonByte, kLength * sizeof(float));
    return poison;
  }();
  EXPECT_TRUE(output_matches(device_out, 0, x_values, poison_expected, stream.get()))
      << "a refused call wrote to device memory";
  // The context is intact: a valid call still runs and is right.
  EXPECT_EQ(Launchers::hardsigmoid(device_x.at(0), device_out.at(0), kLength, stream.get()), cudaSuccess);
  EXPECT_TRUE(output_matches(device_out, 0, x_values, expected_hardsigmoid(x_values), stream.get()));
}

/// n == 0 and null pointers keep their answers (cudaSuccess, cudaErrorInvalidValue) whatever the
/// pointers' devices: the check never runs for them.
template <class Launchers>
void argument_answers_unchanged() {
  std::vector<float> host(16);
  EXPECT_EQ(Launchers::hardsigmoid(host.data(), host.data(), 0, nullptr), cudaSuccess);
  EXPECT_EQ(Launchers::hardsigmoid(nullptr, host.data(), host.size(), nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(Launchers::hardsigmoid(host.data(), nullptr, host.size(), nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

/// Pointers on device 1 while device 0 is current and peer access from 0 to 1 is off: refused with
/// cudaErrorInvalidDevice, nothing launched or written, no error left, device 0 still usable.
template <class Launchers>
void refused_on_other_device_without_peer_access() {
  HARDACT_REQUIRE_TWO_DEVICES();
  HARDACT_ASSERT_CUDA(cudaSetDevice(0));
  // Peer access is off: nothing in these test executables enables it outside a PeerAccessScope.
  int can_access_peer = 0;
  HARDACT_ASSERT_CUDA(cudaDeviceCanAccessPeer(&can_access_peer, 0, 1));
  std::printf("hardact-multi: device 0 %s device 1's memory once peer access is enabled; it is off here\n",
              can_access_peer != 0 ? "can access" : "cannot access");

  const std::vector<float> x_values = inputs(), grad_values = grads();
  std::vector<float> poison(kLength);
  std::memset(poison.data(), kPoisonByte, kLength * sizeof(float));

  OnDevice on_one(1);
  HARDACT_ASSERT_CUDA(on_one.status());
  Stream stream1;
  HARDACT_ASSERT_CUDA(stream1.status());
  StreamArray<float> x1(kLength, kOffset), out1(kLength, kOffset);
  HARDACT_ASSERT_CUDA(x1.status());
  HARDACT_ASSERT_CUDA(out1.status());
  HARDACT_ASSERT_CUDA(x1.upload(x_values, kOffset, stream1.get()));
  HARDACT_ASSERT_CUDA(out1.poison(stream1.get()));
  HARDACT_ASSERT_CUDA(cudaStreamSynchronize(stream1.get()));
  ReturnToDevice device_one_objects_end_on_one(1);

  HARDACT_ASSERT_CUDA(cudaSetDevice(0));
  Stream stream0;
  HARDACT_ASSERT_CUDA(stream0.status());
  StreamArray<float> x0(kLength, kOffset), grad0(kLength, kOffset), out0(kLength, kOffset);
  HARDACT_ASSERT_CUDA(x0.status());
  HARDACT_ASSERT_CUDA(grad0.status());
  HARDACT_ASSERT_CUDA(out0.status());
  HARDACT_ASSERT_CUDA(x0.upload(x_values, kOffset, stream0.get()));
  HARDACT_ASSERT_CUDA(grad0.upload(grad_values, kOffset, stream0.get()));
  HARDACT_ASSERT_CUDA(out0.poison(stream0.get()));
  HARDACT_ASSERT_CUDA(cudaStreamSynchronize(stream0.get()));

  const float* const in_on_1 = x1.at(kOffset);
  float* const out_on_1 = out1.at(kOffset);
  const float* const in_on_0 = x0.at(kOffset);
  float* const out_on_0 = out0.at(kOffset);
  // Guard: the launchers below run this same check before launching; if it let device 1's memory
  // through, they would launch a kernel that faults. Stop here instead.
  ASSERT_EQ(hardact::check_pointer_devices(in_on_1), cudaErrorInvalidDevice)
      << "the check accepts device 1's memory from device 0 without peer access; not launching";
  ASSERT_EQ(hardact::check_pointer_devices(static_cast<const float*>(out_on_1)), cudaErrorInvalidDevice);
  EXPECT_EQ(hardact::check_pointer_devices(in_on_0, out_on_0), cudaSuccess);

  EXPECT_EQ(Launchers::hardsigmoid(in_on_1, out_on_1, kLength, stream0.get()), cudaErrorInvalidDevice);
  EXPECT_EQ(Launchers::hardsigmoid(in_on_0, out_on_1, kLength, stream0.get()), cudaErrorInvalidDevice);
  EXPECT_EQ(Launchers::hardsigmoid(in_on_1, out_on_0, kLength, stream0.get()), cudaErrorInvalidDevice);
  EXPECT_EQ(Launchers::backward(grad0.at(kOffset), in_on_1, out_on_0, kLength, stream0.get()), cudaErrorInvalidDevice);
  EXPECT_EQ(Launchers::backward(in_on_1, in_on_0, out_on_0, kLength, stream0.get()), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a refusal must not leave an error behind";
  HARDACT_ASSERT_CUDA(cudaStreamSynchronize(stream0.get()));

  // Nothing written on either device; device 0 still runs a valid call, right.
  EXPECT_TRUE(output_matches(out0, kOffset, x_values, poison, stream0.get())) << "device 0 output written";
  {
    OnDevice back_on_one(1);
    HARDACT_ASSERT_CUDA(back_on_one.status());
    EXPECT_TRUE(output_matches(out1, kOffset, x_values, poison, stream1.get())) << "device 1 output written";
  }
  EXPECT_EQ(Launchers::hardsigmoid(in_on_0, out_on_0, kLength, stream0.get()), cudaSuccess);
  EXPECT_TRUE(output_matches(out0, kOffset, x_values, expected_hardsigmoid(x_values), stream0.get()));
}

/// Pointers on device 1 while device 0 is current, with peer access from 0 to 1 enabled: accepted,
/// and the kernels on device 0 read and write device 1's memory correctly (all on device 1, and
/// input on device 0 with output on device 1).
template <class Launchers>
void accepted_on_peer_with_peer_access() {
  HARDACT_REQUIRE_TWO_DEVICES();
  int can_access_peer = 0;
  HARDACT_ASSERT_CUDA(cudaDeviceCanAccessPeer(&can_access_peer, 0, 1));
  if (can_access_peer == 0) GTEST_SKIP() << "device 0 cannot access device 1's memory (cudaDeviceCanAccessPeer = 0)";

  const std::vector<float> x_values = inputs(), grad_values = grads();
  OnDevice on_one(1);
  HARDACT_ASSERT_CUDA(on_one.status());
  Stream stream1;
  HARDACT_ASSERT_CUDA(stream1.status());
  StreamArray<float> x1(kLength, kOffset), grad1(kLength, kOffset), out1(kLength, kOffset);
  HARDACT_ASSERT_CUDA(x1.status());
  HARDACT_ASSERT_CUDA(grad1.status());
  HARDACT_ASSERT_CUDA(out1.status());
  HARDACT_ASSERT_CUDA(x1.upload(x_values, kOffset, stream1.get()));
  HARDACT_ASSERT_CUDA(grad1.upload(grad_values, 0, stream1.get()));
  HARDACT_ASSERT_CUDA(cudaStreamSynchronize(stream1.get()));
  ReturnToDevice device_one_objects_end_on_one(1);

  HARDACT_ASSERT_CUDA(cudaSetDevice(0));
  PeerAccessScope peer_access(1);
  HARDACT_ASSERT_CUDA(peer_access.status());
  Stream stream0;
  HARDACT_ASSERT_CUDA(stream0.status());
  StreamArray<float> x0(kLength, kOffset);
  HARDACT_ASSERT_CUDA(x0.status());
  HARDACT_ASSERT_CUDA(x0.upload(x_values, kOffset, stream0.get()));
  HARDACT_ASSERT_CUDA(cudaStreamSynchronize(stream0.get()));

  const float* const in_on_1 = x1.at(kOffset);
  float* const out_on_1 = out1.at(kOffset);
  EXPECT_EQ(hardact::check_pointer_devices(in_on_1, static_cast<const float*>(out_on_1)), cudaSuccess);

  const auto read_back_on_one = [&](const std::vector<float>& expected) {
    OnDevice back_on_one(1);
    EXPECT_EQ(back_on_one.status(), cudaSuccess);
    EXPECT_TRUE(output_matches(out1, kOffset, x_values, expected, stream1.get()));
  };
  const std::vector<float> sigmoid = expected_hardsigmoid(x_values);

  // All pointers on device 1.
  {
    OnDevice on(1);
    HARDACT_ASSERT_CUDA(out1.poison(stream1.get()));
    HARDACT_ASSERT_CUDA(cudaStreamSynchronize(stream1.get()));
  }
  HARDACT_ASSERT_CUDA(cudaSetDevice(0));
  EXPECT_EQ(Launchers::hardsigmoid(in_on_1, out_on_1, kLength, stream0.get()), cudaSuccess);
  HARDACT_ASSERT_CUDA(cudaStreamSynchronize(stream0.get()));
  read_back_on_one(sigmoid);

  // Input on device 0, output on device 1.
  {
    OnDevice on(1);
    HARDACT_ASSERT_CUDA(out1.poison(stream1.get()));
    HARDACT_ASSERT_CUDA(cudaStreamSynchronize(stream1.get()));
  }
  HARDACT_ASSERT_CUDA(cudaSetDevice(0));
  EXPECT_EQ(Launchers::hardsigmoid(static_cast<const float*>(x0.at(kOffset)), out_on_1, kLength, stream0.get()),
            cudaSuccess);
  HARDACT_ASSERT_CUDA(cudaStreamSynchronize(stream0.get()));
  read_back_on_one(sigmoid);

  // Two inputs on device 1 (grad relatively misaligned to x and out), output on device 1.
  {
    OnDevice on(1);
    HARDACT_ASSERT_CUDA(out1.poison(stream1.get()));
    HARDACT_ASSERT_CUDA(cudaStreamSynchronize(stream1.get()));
  }
  HARDACT_ASSERT_CUDA(cudaSetDevice(0));
  EXPECT_EQ(Launchers::backward(grad1.at(0), in_on_1, out_on_1, kLength, stream0.get()), cudaSuccess);
  HARDACT_ASSERT_CUDA(cudaStreamSynchronize(stream0.get()));
  read_back_on_one(expected_backward(grad_values, x_values));

  HARDACT_ASSERT_CUDA(cudaSetDevice(0));
  HARDACT_ASSERT_CUDA(cudaGetLastError());
}

}  // namespace pointer_access
}  // namespace hardact_test
