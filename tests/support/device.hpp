// Test support: device detection, CUDA error assertions and an RAII device buffer whose payload
// sits between poisoned guard bands at a chosen element offset.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace hardact_test {

/// Why device tests cannot run here, or an empty string when a CUDA device is present.
inline std::string no_device_reason() {
#if defined(HARDACT_TEST_COMPILE_ONLY)
  // Built where no GPU was found, to prove it compiles (tests/CMakeLists.txt): unoptimized device
  // code, which must not stand in for the optimized kernels.
  return "built only to prove it compiles (no GPU was found at configure time); configure with "
         "-DCMAKE_CUDA_ARCHITECTURES=<the GPU's> to build it to run";
#endif
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // clear the non-sticky error so later checks start clean
    return std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(status) + ")";
  }
  if (count == 0) return "no CUDA device (cudaGetDeviceCount returned 0)";
  return {};
}

inline bool has_device() {
  static const bool present = no_device_reason().empty();
  return present;
}

}  // namespace hardact_test

/// First statement of every device test: skips it, with the reason, when there is no GPU.
#define HARDACT_REQUIRE_DEVICE()                                           \
  do {                                                                     \
    if (!::hardact_test::has_device()) GTEST_SKIP() << ::hardact_test::no_device_reason(); \
  } while (0)

/// Asserts that a CUDA runtime call succeeded, printing the error's name.
#define HARDACT_ASSERT_CUDA(expr)                                                              \
  do {                                                                                          \
    const cudaError_t hardact_status_ = (expr);                                                 \
    ASSERT_EQ(hardact_status_, cudaSuccess) << #expr << ": " << cudaGetErrorName(hardact_status_); \
  } while (0)

namespace hardact_test {

/// Byte pattern written around (and, before a run, over) outputs, so unwritten or overrun
/// elements are visible. 0xA5A5... is a NaN-free, non-zero value in every element type.
inline constexpr unsigned char kPoisonByte = 0xA5;

/// Device memory for `count` elements of T that start `offset_elements` past a 256-byte aligned
/// address, with `guard_bytes` of poison on each side. Copyable to/from host vectors.
template <class T>
class GuardedBuffer {
 public:
  GuardedBuffer(std::size_t count, std::size_t offset_elements = 0, std::size_t guard_bytes = 256)
      : count_(count), guard_(guard_bytes), lead_(guard_bytes + offset_elements * sizeof(T)) {
    total_ = lead_ + count_ * sizeof(T) + guard_;
    status_ = cudaMalloc(&base_, total_);
    if (status_ == cudaSuccess) status_ = cudaMemset(base_, kPoisonByte, total_);
  }
  ~GuardedBuffer() {
    if (base_ != nullptr) (void)cudaFree(base_);
  }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  cudaError_t status() const { return status_; }
  T* data() { return reinterpret_cast<T*>(static_cast<unsigned char*>(base_) + lead_); }
  std::size_t size() const { return count_; }

  cudaError_t upload(const std::vector<T>& host) {
    return cudaMemcpy(data(), host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice);
  }
  cudaError_t download(std::vector<T>& host) {
    host.resize(count_);
    return cudaMemcpy(host.data(), data(), count_ * sizeof(T), cudaMemcpyDeviceToHost);
  }
  /// Overwrites the payload with the poison pattern (guards are poisoned from construction).
  cudaError_t poison_payload() { return cudaMemset(data(), kPoisonByte, count_ * sizeof(T)); }

  /// True when every guard byte (and every byte of the element offset) still holds the poison
  /// pattern. Copies only those bytes, so it stays cheap for large payloads.
  bool guards_intact() {
    const std::size_t payload_end = lead_ + count_ * sizeof(T);
    std::vector<unsigned char> bytes(lead_ + (total_ - payload_end));
    unsigned char* const base = static_cast<unsigned char*>(base_);
    if (cudaMemcpy(bytes.data(), base, lead_, cudaMemcpyDeviceToHost) != cudaSuccess) return false;
    if (cudaMemcpy(bytes.data() + lead_, base + payload_end, total_ - payload_end, cudaMemcpyDeviceToHost) != cudaSuccess)
      return false;
    for (const unsigned char byte : bytes)
      if (byte != kPoisonByte) return false;
    return true;
  }

 private:
  std::size_t count_, guard_, lead_, total_ = 0;
  void* base_ = nullptr;
  cudaError_t status_ = cudaSuccess;
};

/// A non-blocking stream on the device current at construction.
class Stream {
 public:
  Stream() { status_ = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking); }
  ~Stream() {
    if (status_ == cudaSuccess) (void)cudaStreamDestroy(stream_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaError_t status() const { return status_; }
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
  cudaError_t status_ = cudaSuccess;
};

}  // namespace hardact_test
