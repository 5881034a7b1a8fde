// Test support for device tests that run several host threads and devices at once:
// device arrays that are set up, launched on and read back on one stream only (never the legacy
// default stream, never a device-wide synchronisation, so threads and devices really run side by
// side), each placed at an element offset between poisoned guard bands; a check of an output
// against precomputed expectations; a sweep of four operations over sizes and offsets; and a
// per-thread report that the main thread turns into test failures.
#pragma once

#include "support/device.hpp"
#include "support/device_family.hpp"
#include "support/reference.hpp"
#include "support/reference_family.hpp"

#include <hardact/hardact.cuh>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <array>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace hardact_test {

/// Number of CUDA devices this process sees (0 when there is none).
inline int visible_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

/// "0 NVIDIA H200, 1 NVIDIA H200": which devices a test used, for its printed summary.
inline std::string describe_devices(int count) {
  std::ostringstream out;
  for (int device = 0; device < count; ++device) {
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, device) != cudaSuccess) {
      (void)cudaGetLastError();
      properties.name[0] = '?';
      properties.name[1] = '\0';
    }
    out << (device > 0 ? ", " : "") << device << " " << properties.name;
  }
  return out.str();
}

/// cudaMalloc'd memory (on the device current at construction) for up to `capacity` elements of
/// T, placed up to `max_offset` elements past a 256-byte boundary, with a guard band on each side.
/// Every operation is enqueued on the stream it is given.
template <class T>
class StreamArray {
 public:
  static constexpr std::size_t kGuardBytes = 256;

  StreamArray(std::size_t capacity, std::size_t max_offset)
      : capacity_(capacity), max_offset_(max_offset), bytes_(2 * kGuardBytes + (capacity + max_offset) * sizeof(T)) {
    status_ = cudaMalloc(&base_, bytes_);
    if (status_ != cudaSuccess) base_ = nullptr;
  }
  ~StreamArray() {
    if (base_ != nullptr) (void)cudaFree(base_);
  }
  StreamArray(const StreamArray&) = delete;
  StreamArray& operator=(const StreamArray&) = delete;

  cudaError_t status() const { return status_; }
  bool fits(std::size_t n, std::size_t offset) const { return n <= capacity_ && offset <= max_offset_; }

  /// The element `offset` places past the 256-byte boundary that follows the leading guard band.
  T* at(std::size_t offset) {
    return reinterpret_cast<T*>(static_cast<unsigned char*>(base_) + kGuardBytes + offset * sizeof(T));
  }

  /// Fills the whole allocation, guards included, with the poison pattern.
  cudaError_t poison(cudaStream_t stream) { return cudaMemsetAsync(base_, kPoisonByte, bytes_, stream); }

  cudaError_t upload(const std::vector<T>& values, std::size_t offset, cudaStream_t stream) {
    if (values.empty()) return cudaSuccess;
    return cudaMemcpyAsync(static_cast<void*>(at(offset)), static_cast<const void*>(values.data()),
                           values.size() * sizeof(T), cudaMemcpyHostToDevice, stream);
  }

  /// Copies the leading guard, the `offset` elements before the payload, `n` payload elements and
  /// one guard band's worth after them into `bytes`, then waits for `stream`.
  cudaError_t download_around(std::size_t offset, std::size_t n, std::vector<unsigned char>& bytes,
                              cudaStream_t stream) {
    bytes.resize(2 * kGuardBytes + (offset + n) * sizeof(T));
    cudaError_t status = cudaMemcpyAsync(bytes.data(), base_, bytes.size(), cudaMemcpyDeviceToHost, stream);
    if (status == cudaSuccess) status = cudaStreamSynchronize(stream);
    return status;
  }

 private:
  std::size_t capacity_, max_offset_, bytes_;
  void* base_ = nullptr;
  cudaError_t status_ = cudaSuccess;
};

/// Reads `out` back on `stream` after a call that should have written expected.size() elements at
/// `offset`: they must equal `expected` (NaN as a class; `inputs` label the mismatches), and every
/// other byte read back (both sides, one guard band past the end) must still hold the poison.
template <class TIn, class TOut>
::testing::AssertionResult output_matches(StreamArray<TOut>& out, std::size_t offset, const std::vector<TIn>& inputs,
                                          const std::vector<TOut>& expected, cudaStream_t stream) {
  const std::size_t n = expected.size();
  std::vector<unsigned char> bytes;
  const cudaError_t status = out.download_around(offset, n, bytes, stream);
  if (status != cudaSuccess) return ::testing::AssertionFailure() << "read-back failed: " << cudaGetErrorName(status);
  const std::size_t first = StreamArray<TOut>::kGuardBytes + offset * sizeof(TOut);
  const std::size_t last = first + n * sizeof(TOut);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if ((i < first || i >= last) && bytes[i] != kPoisonByte) {
      return ::testing::AssertionFailure() << "byte " << i << " outside the output elements [" << first << ", "
                                           << last << ") was written";
    }
  }
  std::vector<TOut> outputs(n);
  if (n > 0) std::memcpy(static_cast<void*>(outputs.data()), bytes.data() + first, n * sizeof(TOut));
  return family::all_match(inputs, outputs, expected);
}

/// What one worker thread found; the main thread reports it, so that messages from different
/// threads never interleave and each names its thread and device.
struct ThreadReport {
  std::string label;
  std::size_t checked_calls = 0;
  std::vector<std::string> failures;
  std::size_t unlisted_failures = 0;

  void fail(const std::string& what) {
    if (failures.size() < 6) {
      failures.push_back(what);
    } else {
      ++unlisted_failures;
    }
  }
};

/// Adds one GoogleTest failure per report that holds failures; call on the main thread.
inline void expect_no_failures(const std::vector<ThreadReport>& reports) {
  for (const ThreadReport& report : reports) {
    std::string all;
    for (const std::string& failure : report.failures) all += "\n  " + failure;
    if (report.unlisted_failures > 0) all += "\n  ... and " + std::to_string(report.unlisted_failures) + " more";
    EXPECT_TRUE(report.failures.empty()) << report.label << ":" << all;
  }
}

/// Releases `count` threads together once all have arrived (C++17 has no std::latch).
class StartLine {
 public:
  explicit StartLine(int count) : waiting_(count) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (--waiting_ <= 0) {
      released_.notify_all();
      return;
    }
    released_.wait(lock, [this] { return waiting_ <= 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  int waiting_;
};

/// Sizes and element offsets (first input, second input, output) for run_four_ops.
struct SweepPlan {
  std::vector<std::size_t> sizes;
  std::vector<std::array<std::size_t, 3>> offsets;

  std::size_t calls() const { return 4 * sizes.size() * offsets.size(); }
  std::size_t largest_size() const {
    std::size_t largest = 0;
    for (const std::size_t n : sizes) largest = n > largest ? n : largest;
    return largest;
  }
  std::size_t largest_offset() const {
    std::size_t largest = 0;
    for (const auto& triple : offsets)
      for (const std::size_t offset : triple) largest = offset > largest ? offset : largest;
    return largest;
  }
};

/// Bounds of the hardtanh case: not PyTorch's default [-1, 1], so the bounds are really passed.
inline constexpr double kSweepTanhMin = -0.25;
inline constexpr double kSweepTanhMax = 2.5;

/// One worker's job on the calling thread's current device and `stream`: for every size and
/// offset triple of `plan`, four calls, each checked element by element:
///   hardsigmoid on float, hardtanh on bfloat16 with bounds [-0.25, 2.5], HardSigmoidBackward on
///   float (grad, x), and HardSigmoid from float to bfloat16.
/// `before_first_call` runs once, after the first call's inputs are in place and right before the
/// worker's first hardact call (the multi-thread test lines its threads up there); it also runs
/// if the worker stops before that call, so that no other thread waits forever.
inline void run_four_ops(const SweepPlan& plan, std::uint64_t seed, cudaStream_t stream, ThreadReport& report,
                         const std::function<void()>& before_first_call = {}) {
  struct OnceGate {
    const std::function<void()>& hook;
    bool passed = false;
    void pass() {
      if (!passed && hook) hook();
      passed = true;
    }
    ~OnceGate() { pass(); }
  } gate{before_first_call};

  using bf16 = __nv_bfloat16;
  const std::size_t capacity = plan.largest_size(), max_offset = plan.largest_offset();
  StreamArray<float> float_a(capacity, max_offset), float_b(capacity, max_offset), float_out(capacity, max_offset);
  StreamArray<bf16> bf16_in(capacity, max_offset), bf16_out(capacity, max_offset);
  for (const cudaError_t status :
       {float_a.status(), float_b.status(), float_out.status(), bf16_in.status(), bf16_out.status()}) {
    if (status != cudaSuccess) return report.fail(std::string("cudaMalloc: ") + cudaGetErrorName(status));
  }

  // Enqueues setup, then the call; returns false (after reporting) when either fails.
  const auto launch = [&](const std::string& what, cudaError_t setup, const std::function<cudaError_t()>& call) {
    if (setup != cudaSuccess) {
      report.fail(what + ": setup: " + cudaGetErrorName(setup));
      return false;
    }
    gate.pass();
    const cudaError_t status = call();
    if (status != cudaSuccess) {
      report.fail(what + ": the call returned " + cudaGetErrorName(status));
      return false;
    }
    return true;
  };
  const auto check = [&](const std::string& what, const ::testing::AssertionResult& result) {
    ++report.checked_calls;
    if (!result) report.fail(what + ": " + result.message());
  };
  const auto first_error = [](std::initializer_list<cudaError_t> statuses) {
    for (const cudaError_t status : statuses)
      if (status != cudaSuccess) return status;
    return cudaSuccess;
  };

  for (const std::size_t n : plan.sizes) {
    const std::vector<float> x = family::device_inputs<float>(n, seed + 3 * n);
    const std::vector<float> grad = family::device_inputs<float>(n, seed + 3 * n + 1);
    const std::vector<bf16> x_bf16 = family::device_inputs<bf16>(n, seed + 3 * n + 2);
    std::vector<float> sigmoid(n), backward(n);
    std::vector<bf16> tanh_bf16(n), sigmoid_bf16(n);
    for (std::size_t i = 0; i < n; ++i) {
      sigmoid[i] = reference::hard_sigmoid(x[i]);
      backward[i] = family::hard_sigmoid_backward(grad[i], x[i]);
      tanh_bf16[i] = reference::hard_tanh(x_bf16[i], kSweepTanhMin, kSweepTanhMax);
      sigmoid_bf16[i] = family::round_to<bf16>(family::hard_sigmoid(x[i]));
    }
    for (const auto& offsets : plan.offsets) {
      const std::size_t in_a = offsets[0], in_b = offsets[1], out = offsets[2];
      const std::string where = "n=" + std::to_string(n) + " offsets " + std::to_string(in_a) + "/" +
                                std::to_string(in_b) + "/" + std::to_string(out);

      std::string what = "hardsigmoid float, " + where;
      if (launch(what, first_error({float_a.upload(x, in_a, stream), float_out.poison(stream)}),
                 [&] { return hardact::hardsigmoid(static_cast<const float*>(float_a.at(in_a)), float_out.at(out), n, stream); })) {
        check(what, output_matches(float_out, out, x, sigmoid, stream));
      }

      what = "hardtanh bfloat16 [-0.25, 2.5], " + where;
      if (launch(what, first_error({bf16_in.upload(x_bf16, in_a, stream), bf16_out.poison(stream)}), [&] {
            return hardact::hardtanh(static_cast<const bf16*>(bf16_in.at(in_a)), bf16_out.at(out), n, kSweepTanhMin,
                                     kSweepTanhMax, stream);
          })) {
        check(what, output_matches(bf16_out, out, x_bf16, tanh_bf16, stream));
      }

      what = "HardSigmoidBackward float (grad, x), " + where;
      if (launch(what,
                 first_error({float_a.upload(grad, in_a, stream), float_b.upload(x, in_b, stream),
                              float_out.poison(stream)}),
                 [&] {
                   return hardact::transform(hardact::HardSigmoidBackward{}, static_cast<const float*>(float_a.at(in_a)),
                                             static_cast<const float*>(float_b.at(in_b)), float_out.at(out), n, stream);
                 })) {
        check(what, output_matches(float_out, out, x, backward, stream));
      }

      what = "hardsigmoid float -> bfloat16, " + where;
      if (launch(what, first_error({float_a.upload(x, in_a, stream), bf16_out.poison(stream)}), [&] {
            return hardact::transform(hardact::HardSigmoid{}, static_cast<const float*>(float_a.at(in_a)),
                                      bf16_out.at(out), n, stream);
          })) {
        check(what, output_matches(bf16_out, out, x, sigmoid_bf16, stream));
      }
    }
  }
}

/// run_four_ops on its own thread: selects `device`, creates a non-blocking stream there, runs,
/// waits, destroys the stream. Any CUDA failure lands in `report`.
inline void run_four_ops_on_device(int device, const SweepPlan& plan, std::uint64_t seed, ThreadReport& report,
                                   const std::function<void()>& before_first_call = {}) {
  cudaStream_t stream = nullptr;
  cudaError_t status = cudaSetDevice(device);
  if (status == cudaSuccess) status = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (status != cudaSuccess) {
    if (before_first_call) before_first_call();
    return report.fail(std::string("cudaSetDevice / cudaStreamCreateWithFlags: ") + cudaGetErrorName(status));
  }
  run_four_ops(plan, seed, stream, report, before_first_call);
  status = cudaStreamSynchronize(stream);
  if (status != cudaSuccess) report.fail(std::string("cudaStreamSynchronize: ") + cudaGetErrorName(status));
  status = cudaStreamDestroy(stream);
  if (status != cudaSuccess) report.fail(std::string("cudaStreamDestroy: ") + cudaGetErrorName(status));
}

}  // namespace hardact_test
