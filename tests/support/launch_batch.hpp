// Test support: many checked launches in three round trips. A LaunchBatch lays out
// guarded regions (each payload 256-byte aligned between poisoned guard bands, as GuardedBuffer
// places one) in a host image of one device arena; execute() uploads the image once, lets every
// run enqueue its launch on one stream, back to back, synchronises once, downloads the arena once,
// and then runs each run's check on the image before and after, in the order the runs were added.
// Sixteen test processes sharing one GPU made the old round trip per launch (poison, upload,
// launch, synchronise, download, guard checks) the long pole of the parallel ctest run.
//
// The arena starts on a 1 KiB boundary (the staged kernel's), so where a region sits relative to
// it is known when the run is added and can be named in failure messages. Every byte of the arena
// is checked by some run: each run checks its own regions, of which only its output may change, so
// a kernel writing past its output (even beyond the guard bands, into a neighbouring run's
// regions) is caught by a guard check, of its own run or else of the neighbour.
#pragma once

#include "support/device.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hardact_test {

/// Most bytes of device memory one batch holds before it runs: HARDACT_TEST_BATCH_BYTES, default
/// 64 MiB. A run larger than the limit runs alone. 0 runs every launch alone, with a round trip
/// each: the way to learn which run an asynchronous kernel fault ("kernel failed") came from.
inline std::size_t batch_byte_limit() {
  static const std::size_t limit = [] {
    const char* value = std::getenv("HARDACT_TEST_BATCH_BYTES");
    if (value == nullptr || *value == '\0') return std::size_t{64} << 20;
    return static_cast<std::size_t>(std::strtoull(value, nullptr, 10));
  }();
  return limit;
}

/// One guarded region of a batch's arena, in bytes from the arena's start: guard band from `begin`,
/// payload from `payload` (256-byte aligned) for `payload_bytes`, guard band (and padding to the
/// next 256-byte boundary) up to `end`.
struct ArenaRegion {
  std::size_t begin = 0, payload = 0, payload_bytes = 0, end = 0;

  /// Where the payload sits past a 1 KiB boundary, for messages.
  std::string position() const { return "region at 1 KiB + " + std::to_string(payload % 1024) + " B"; }
};

/// One run of a batch: a launch, and the check of its regions once every launch has finished.
class BatchRun {
 public:
  /// `description` names the run in messages about its whole batch.
  explicit BatchRun(std::string description) : description_(std::move(description)) {}
  virtual ~BatchRun() = default;
  BatchRun(const BatchRun&) = delete;
  BatchRun& operator=(const BatchRun&) = delete;

  /// Enqueues the launch on `stream`, its pointers in `arena`; returns what the launcher returned.
  virtual cudaError_t launch(unsigned char* arena, cudaStream_t stream) const = 0;
  /// Checks the run: `launched` is what launch() returned, `before` and `after` the arena's bytes as
  /// uploaded and as downloaded after every launch of the batch finished.
  virtual ::testing::AssertionResult check(cudaError_t launched, const unsigned char* before,
                                           const unsigned char* after) const = 0;
  const std::string& description() const { return description_; }

 private:
  std::string description_;
};

class LaunchBatch {
 public:
  static constexpr std::size_t kGuardBytes = 256;  // GuardedBuffer's default
  static constexpr std::size_t kAlignment = 256;   // every region's payload
  static constexpr std::size_t kArenaAlignment = 1024;

  /// Launches go to `stream` (the legacy default stream when null).
  explicit LaunchBatch(cudaStream_t stream = nullptr) : stream_(stream) {}
  ~LaunchBatch() {
    if (device_ != nullptr) (void)cudaFree(device_);
  }
  LaunchBatch(const LaunchBatch&) = delete;
  LaunchBatch& operator=(const LaunchBatch&) = delete;

  /// Arena bytes a region with `payload_bytes` of payload takes.
  static std::size_t region_bytes(std::size_t payload_bytes) {
    return kGuardBytes + round_up(payload_bytes + kGuardBytes, kAlignment);
  }

  /// Call before adding a run's regions, with their region_bytes() in all: executes the batch first
  /// when it holds runs and the new one would take it past batch_byte_limit().
  ::testing::AssertionResult make_room(std::size_t bytes) {
    if (open_regions_) return ::testing::AssertionFailure() << "LaunchBatch: make_room() between a run's regions";
    if (runs_.empty() || image_.size() + bytes <= batch_byte_limit()) return ::testing::AssertionSuccess();
    return execute();
  }

  /// A new region, all poison; fill it with write().
  ArenaRegion add_region(std::size_t payload_bytes) {
    ArenaRegion region;
    region.begin = image_.size();
    region.payload = region.begin + kGuardBytes;
    region.payload_bytes = payload_bytes;
    region.end = region.begin + region_bytes(payload_bytes);
    image_.resize(region.end, kPoisonByte);
    open_regions_ = true;
    return region;
  }

  /// Puts `count` elements into `region`'s payload from element `first` on (what is uploaded).
  template <class T>
  void write(const ArenaRegion& region, std::size_t first, const T* values, std::size_t count) {
    write_bytes(region, first * sizeof(T), values, count * sizeof(T));
  }
  void write_bytes(const ArenaRegion& region, std::size_t at, const void* bytes, std::size_t count) {
    if (count > 0) std::memcpy(image_.data() + region.payload + at, bytes, count);
  }

  /// Adds a run over the regions added since the last run.
  void add_run(std::unique_ptr<const BatchRun> run) {
    runs_.push_back(std::move(run));
    open_regions_ = false;
  }

  std::size_t runs() const { return runs_.size(); }

  /// Uploads, launches every run, synchronises, downloads, checks every run in order; returns the
  /// first failure. Leaves the batch empty, whatever the outcome. A run whose launch fails ends
  /// the batch there: the runs before it are checked, then it reports, the later ones never run
  /// (as if the runs had been made one by one, stopping at the first failure).
  ::testing::AssertionResult execute() {
    std::vector<std::unique_ptr<const BatchRun>> runs;
    runs.swap(runs_);
    open_regions_ = false;
    ::testing::AssertionResult result = run_all(runs);
    image_.clear();
    return result;
  }

  // ---- Helpers for BatchRun::launch and check. ----

  template <class T>
  static T* pointer(unsigned char* arena, const ArenaRegion& region) {
    return reinterpret_cast<T*>(arena + region.payload);
  }

  /// Elements [first, first + count) of a region's payload in a host image.
  template <class T>
  static std::vector<T> read(const unsigned char* image, const ArenaRegion& region, std::size_t first,
                             std::size_t count) {
    std::vector<T> values(count);
    if (count > 0)
      std::memcpy(static_cast<void*>(values.data()), image + region.payload + first * sizeof(T), count * sizeof(T));
    return values;
  }

  /// The first byte in [begin, end) (arena offsets) that differs between the two images, or `end`.
  static std::size_t first_difference(const unsigned char* before, const unsigned char* after, std::size_t begin,
                                      std::size_t end) {
    if (begin >= end || std::memcmp(before + begin, after + begin, end - begin) == 0) return end;  // the usual case, fast
    for (std::size_t i = begin; i < end; ++i)
      if (before[i] != after[i]) return i;
    return end;
  }

  /// Empty when every byte of `region` is as uploaded; else what changed, in the words of the old
  /// per-buffer checks: "<name> element i was modified" for a byte of elements [first, first +
  /// count) (of `element_bytes` each), else "<name> guard band overwritten" with the byte's position.
  static std::string changed_input(const unsigned char* before, const unsigned char* after, const ArenaRegion& region,
                                   std::size_t element_bytes, std::size_t first, std::size_t count,
                                   const std::string& name) {
    const std::size_t values = region.payload + first * element_bytes, values_end = values + count * element_bytes;
    const std::size_t in_values = first_difference(before, after, values, values_end);
    if (in_values != values_end) {
      return name + " element " + std::to_string((in_values - values) / element_bytes) + " was modified";
    }
    std::size_t changed = first_difference(before, after, region.begin, values);
    if (changed == values) changed = first_difference(before, after, values_end, region.end);
    if (changed == region.end) return {};
    const bool ahead = changed < region.payload;
    return name + " guard band overwritten (byte " +
           std::to_string(ahead ? region.payload - changed : changed - region.payload) +
           (ahead ? " before" : " after") + " the start of its region's payload)";
  }

  /// True when every byte of `region` outside payload bytes [keep_begin, keep_end) is as uploaded.
  static bool unchanged_outside(const unsigned char* before, const unsigned char* after, const ArenaRegion& region,
                                std::size_t keep_begin, std::size_t keep_end) {
    const std::size_t a = region.payload + keep_begin, b = region.payload + keep_end;
    return first_difference(before, after, region.begin, a) == a &&
           first_difference(before, after, b, region.end) == region.end;
  }

 private:
  static std::size_t round_up(std::size_t value, std::size_t multiple) {
    return (value + multiple - 1) / multiple * multiple;
  }

  static std::string batch_description(const std::vector<std::unique_ptr<const BatchRun>>& runs) {
    std::string text = "\n  (one of the " + std::to_string(runs.size()) + " runs of a batch, from " +
                       runs.front()->description() + "\n   to " + runs.back()->description() +
                       "; HARDACT_TEST_BATCH_BYTES=0 runs each alone)";
    return text;
  }

  /// A 1 KiB aligned arena of at least `bytes` in device memory, kept for the next batch.
  cudaError_t arena(std::size_t bytes, unsigned char*& aligned) {
    if (device_bytes_ < bytes + kArenaAlignment) {
      if (device_ != nullptr) (void)cudaFree(device_);
      device_ = nullptr;
      device_bytes_ = 0;
      const cudaError_t status = cudaMalloc(&device_, bytes + kArenaAlignment);
      if (status != cudaSuccess) return status;
      device_bytes_ = bytes + kArenaAlignment;
    }
    const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(device_);
    aligned = static_cast<unsigned char*>(device_) + (kArenaAlignment - address % kArenaAlignment) % kArenaAlignment;
    return cudaSuccess;
  }

  ::testing::AssertionResult run_all(const std::vector<std::unique_ptr<const BatchRun>>& runs) {
    if (runs.empty()) return ::testing::AssertionSuccess();
    const std::size_t bytes = image_.size();
    unsigned char* device = nullptr;
    cudaError_t status = arena(bytes, device);
    if (status == cudaSuccess) status = cudaMemcpy(device, image_.data(), bytes, cudaMemcpyHostToDevice);
    if (status != cudaSuccess) {
      return ::testing::AssertionFailure() << "setup: " << cudaGetErrorName(status) << batch_description(runs);
    }

    std::size_t launched = 0;
    cudaError_t launch_status = cudaSuccess;
    for (; launched < runs.size(); ++launched) {
      launch_status = runs[launched]->launch(device, stream_);
      if (launch_status != cudaSuccess) break;
    }
    status = stream_ != nullptr ? cudaStreamSynchronize(stream_) : cudaDeviceSynchronize();
    if (status == cudaSuccess && launch_status == cudaSuccess) status = cudaGetLastError();
    if (status != cudaSuccess) {
      return ::testing::AssertionFailure() << "kernel failed: " << cudaGetErrorName(status) << batch_description(runs);
    }
    after_.resize(bytes);
    status = cudaMemcpy(after_.data(), device, bytes, cudaMemcpyDeviceToHost);
    if (status != cudaSuccess) {
      return ::testing::AssertionFailure() << "download: " << cudaGetErrorName(status) << batch_description(runs);
    }

    for (std::size_t i = 0; i < launched; ++i) {
      ::testing::AssertionResult result = runs[i]->check(cudaSuccess, image_.data(), after_.data());
      if (!result) return result;
    }
    if (launched < runs.size()) return runs[launched]->check(launch_status, image_.data(), after_.data());
    return ::testing::AssertionSuccess();
  }

  cudaStream_t stream_ = nullptr;
  std::vector<std::unique_ptr<const BatchRun>> runs_;
  std::vector<unsigned char> image_, after_;  // kept between batches: their capacity is reused
  bool open_regions_ = false;
  void* device_ = nullptr;
  std::size_t device_bytes_ = 0;
};

}  // namespace hardact_test
