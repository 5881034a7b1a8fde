/// @file device_properties.cuh
/// @brief Per-device properties the dispatch layer needs, queried once per device and cached.
///
/// The cache is thread-safe: a lock-free read once a device's entry is ready, a mutex only while
/// it is first filled. Failed queries are returned and not cached, so they are retried.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>

namespace hardact {
namespace detail {

/// What the launch-shape rules (launch_shape.cuh) read about a device. Everything is read with
/// cudaDeviceGetAttribute, which is cheap, but only once per device: a launch then costs one
/// cudaGetDevice and one cached lookup.
struct DeviceProperties {
  int ordinal = -1;  ///< the device these were read from
  int max_grid_dim_x = 0;
  int compute_capability_major = 0;
  int multiprocessor_count = 0;
  int max_threads_per_multiprocessor = 0;
  int max_blocks_per_multiprocessor = 0;
  int shared_memory_per_multiprocessor = 0;  ///< bytes
  int l2_cache_bytes = 0;
  /// Peak DRAM bandwidth, read + write together, from the memory clock and bus width (bytes/s);
  /// 0 when the device does not report them.
  double peak_memory_bandwidth = 0.0;
};

/// Peak bandwidth of a DDR memory interface: two transfers per clock over the whole bus.
inline double peak_bandwidth_from(int memory_clock_khz, int bus_width_bits) {
  if (memory_clock_khz <= 0 || bus_width_bits <= 0) return 0.0;
  return 2.0 * static_cast<double>(memory_clock_khz) * 1e3 * static_cast<double>(bus_width_bits) / 8.0;
}

inline cudaError_t query_device_properties(int device, DeviceProperties& properties) {
  DeviceProperties p;
  int memory_clock_khz = 0;
  int bus_width_bits = 0;
  struct Query {
    int* value;
    cudaDeviceAttr attribute;
  };
  const Query queries[] = {
      {&p.max_grid_dim_x, cudaDevAttrMaxGridDimX},
      {&p.compute_capability_major, cudaDevAttrComputeCapabilityMajor},
      {&p.multiprocessor_count, cudaDevAttrMultiProcessorCount},
      {&p.max_threads_per_multiprocessor, cudaDevAttrMaxThreadsPerMultiProcessor},
      {&p.max_blocks_per_multiprocessor, cudaDevAttrMaxBlocksPerMultiprocessor},
      {&p.shared_memory_per_multiprocessor, cudaDevAttrMaxSharedMemoryPerMultiprocessor},
      {&p.l2_cache_bytes, cudaDevAttrL2CacheSize},
      {&memory_clock_khz, cudaDevAttrMemoryClockRate},
      {&bus_width_bits, cudaDevAttrGlobalMemoryBusWidth},
  };
  for (const Query& query : queries) {
    const cudaError_t status = cudaDeviceGetAttribute(query.value, query.attribute, device);
    if (status != cudaSuccess) return status;
  }
  p.peak_memory_bandwidth = peak_bandwidth_from(memory_clock_khz, bus_width_bits);
  p.ordinal = device;
  properties = p;
  return cudaSuccess;
}

class DevicePropertiesCache {
 public:
  /// Properties of `device`, from the cache after the first call for that device.
  cudaError_t get(int device, DeviceProperties& properties) {
    if (device < 0 || device >= device_count_) return query_device_properties(device, properties);
    Entry& entry = entries_[static_cast<std::size_t>(device)];
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
    entries_.reset(new Entry[device_count_ > 0 ? static_cast<std::size_t>(device_count_) : 1]);
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
