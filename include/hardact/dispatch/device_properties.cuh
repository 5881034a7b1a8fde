/// @file device_properties.cuh
/// @brief Per-device properties the dispatch layer needs, queried once per device and cached.
///
/// The cache is thread-safe: a lock-free read once a device's entry is ready, a mutex only while
/// it is first filled. Failed queries are returned and not cached, so they are retried.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <mutex>

namespace hardact {
namespace detail {

/// What a launch needs to know about its device: the grid limit (one tile per block up to it).
struct DeviceProperties {
  int max_grid_dim_x = 0;
};

inline cudaError_t query_device_properties(int device, DeviceProperties& properties) {
  return cudaDeviceGetAttribute(&properties.max_grid_dim_x, cudaDevAttrMaxGridDimX, device);
}

class DevicePropertiesCache {
 public:
  /// Properties of `device`, from the cache after the first call for that device.
  cudaError_t get(int device, DeviceProperties& properties) {
    if (device < 0 || device >= device_count_) return query_device_properties(device, properties);
    Entry& entry = entries_[device];
    if (!entry.ready.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!entry.ready.load(std::memory_order_relaxed)) {
        const cudaError_t status = query_device_properties(device, entry.properties);
        if (status != cudaSuccess) return status;
        entry.ready.store(true, std::memory_order_release);
      }
    }
    properties = entry.properties;
    return cudaSuccess;
  }

  static DevicePropertiesCache& instance() {
    static DevicePropertiesCache cache;  // one per program: inline function statics are unique
    return cache;
  }

 private:
  struct Entry {
    std::atomic<bool> ready{false};
    DeviceProperties properties;
  };

  DevicePropertiesCache() {
    if (cudaGetDeviceCount(&device_count_) != cudaSuccess) device_count_ = 0;
    entries_.reset(new Entry[device_count_ > 0 ? device_count_ : 1]);
  }

  int device_count_ = 0;
  std::unique_ptr<Entry[]> entries_;
  std::mutex mutex_;
};

/// Properties of the current device (the one a launch on the current thread goes to).
inline cudaError_t current_device_properties(DeviceProperties& properties) {
  int device = 0;
  const cudaError_t status = cudaGetDevice(&device);
  if (status != cudaSuccess) return status;
  return DevicePropertiesCache::instance().get(device, properties);
}

}  // namespace detail
}  // namespace hardact
