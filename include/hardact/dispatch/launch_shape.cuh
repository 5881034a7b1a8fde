/// @file launch_shape.cuh
/// @brief Which kernel a call runs, and the staged kernel's shape, derived from the device's cached
///        properties by the rules below (measured and explained in docs/TUNING.md).
#pragma once

#include <hardact/dispatch/device_properties.cuh>
#include <hardact/kernel/staged_transform_kernel.cuh>

#include <atomic>
#include <cmath>
#include <cstddef>

namespace hardact {
namespace detail {

/// The two kernels: `direct` loads global memory straight into registers (every architecture,
/// explicit VecWidth, small arrays); `staged` copies tiles into shared memory with the bulk-copy
/// engine (sm_90 and later, large arrays, automatic width).
enum class TransformPath { automatic, direct, staged };

/// Process-wide overrides of the rules, for tests (both paths at every size) and tuning runs.
/// Not part of the public API; zero means "use the rule".
struct TransformTuning {
  std::atomic<TransformPath> path{TransformPath::automatic};
  std::atomic<int> staged_blocks_per_multiprocessor{0};
  std::atomic<int> staged_stages{0};
};

inline TransformTuning& transform_tuning() {
  static TransformTuning tuning;
  return tuning;
}

/// Forces a path for the lifetime of the object (tests and benchmarks; not thread-safe with
/// respect to other threads' calls, which see the forced path too).
class ScopedTransformPath {
 public:
  explicit ScopedTransformPath(TransformPath path) : previous_(transform_tuning().path.exchange(path)) {}
  ~ScopedTransformPath() { transform_tuning().path.store(previous_); }
  ScopedTransformPath(const ScopedTransformPath&) = delete;
  ScopedTransformPath& operator=(const ScopedTransformPath&) = delete;

 private:
  TransformPath previous_;
};

// ---- The staged kernel's shape ----

/// 256 threads per block, each computing 2 units (32 bytes of the narrowest type) per tile.
inline constexpr int kStagedBlockThreads = 256;
inline constexpr int kStagedUnitsPerThread = 2;
/// Resident blocks per multiprocessor: several, so that one block's barrier waits and
/// __syncthreads overlap with the others' work.
inline constexpr int kStagedBlocksPerMultiprocessor = 4;
/// Dynamic shared memory a block may use without raising its limit (cudaFuncSetAttribute).
inline constexpr std::size_t kDefaultSharedMemoryPerBlock = 48 * 1024;
/// Shared memory the runtime reserves per resident block (1 KiB on sm_80 and later).
inline constexpr std::size_t kReservedSharedMemoryPerBlock = 1024;
/// Time a load spends in flight from issue to data when DRAM runs at full bandwidth.
inline constexpr double kLoadedMemoryLatencySeconds = 1.3e-6;
/// Bandwidth assumed when a device does not report its memory clock and bus width.
inline constexpr double kFallbackMemoryBandwidth = 3.35e12;
/// Arrays moving fewer bytes than this many times the L2 cache stay on the direct path: most of
/// their traffic hits L2, and one short launch of the direct kernel costs less per call.
inline constexpr double kStagedMinimumL2Multiple = 1.0;

struct StagedShape {
  int blocks_per_multiprocessor = 0;
  int stages = 0;  ///< 0: the staged kernel does not fit this call
};

/// Little's law: to keep DRAM busy, loads in flight per multiprocessor must cover the load
/// bandwidth per multiprocessor times the loaded latency. `loaded_fraction` is the share of the
/// call's traffic that is loads (1/2 for one input and one output of the same type).
inline double loads_in_flight_per_multiprocessor(const DeviceProperties& device, double loaded_fraction) {
  const double bandwidth = device.peak_memory_bandwidth > 0 ? device.peak_memory_bandwidth : kFallbackMemoryBandwidth;
  const int sms = device.multiprocessor_count > 0 ? device.multiprocessor_count : 1;
  return bandwidth * loaded_fraction / sms * kLoadedMemoryLatencySeconds;
}

/// Blocks per multiprocessor and stages per block for a tile geometry: each block keeps
/// stages - 1 tiles in flight while it computes one, so the blocks of a multiprocessor together
/// need blocks * (stages - 1) * tile bytes >= the loads in flight that Little's law asks for;
/// at least 2 stages (one computing, one loading), at most what fits the shared memory.
template <class Tile>
StagedShape staged_shape(const DeviceProperties& device, double loaded_fraction) {
  const TransformTuning& tuning = transform_tuning();
  StagedShape shape;
  const int forced_blocks = tuning.staged_blocks_per_multiprocessor.load(std::memory_order_relaxed);
  shape.blocks_per_multiprocessor = forced_blocks > 0 ? forced_blocks : kStagedBlocksPerMultiprocessor;

  const std::size_t per_multiprocessor = static_cast<std::size_t>(device.shared_memory_per_multiprocessor) /
                                         static_cast<std::size_t>(shape.blocks_per_multiprocessor);
  std::size_t per_block = per_multiprocessor > kReservedSharedMemoryPerBlock
                              ? per_multiprocessor - kReservedSharedMemoryPerBlock
                              : 0;
  if (per_block > kDefaultSharedMemoryPerBlock) per_block = kDefaultSharedMemoryPerBlock;
  int fitting = 0;
  while (fitting < kMaxStages && Tile::shared_memory_bytes(fitting + 1) <= per_block) ++fitting;

  const int forced_stages = tuning.staged_stages.load(std::memory_order_relaxed);
  if (forced_stages > 0) {
    shape.stages = forced_stages <= fitting ? forced_stages : 0;
    return shape;
  }
  const double in_flight = loads_in_flight_per_multiprocessor(device, loaded_fraction);
  const double per_stage = static_cast<double>(shape.blocks_per_multiprocessor) * static_cast<double>(Tile::kLoadedBytes);
  const int wanted = 1 + static_cast<int>(std::ceil(in_flight / per_stage));
  const int stages = wanted < 2 ? 2 : wanted;
  shape.stages = stages <= fitting ? stages : (fitting >= 2 ? fitting : 0);
  return shape;
}

/// The path for an automatic-width call of n elements moving `bytes` in all.
inline TransformPath choose_path(const DeviceProperties& device, std::size_t bytes, const StagedShape& shape) {
  const TransformPath forced = transform_tuning().path.load(std::memory_order_relaxed);
  if (forced != TransformPath::automatic) return forced;
  if (device.compute_capability_major < 9 || shape.stages < 2) return TransformPath::direct;
  const double threshold = kStagedMinimumL2Multiple * static_cast<double>(device.l2_cache_bytes);
  return static_cast<double>(bytes) >= threshold ? TransformPath::staged : TransformPath::direct;
}

}  // namespace detail
}  // namespace hardact
