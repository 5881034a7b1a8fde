/// @file launch_shape.cuh
/// @brief Which kernel a call runs, and the staged kernel's shape, derived from the device's cached
///        properties by the rules below; their constants are in kernel/tuning.cuh, their
///        measurements in docs/TUNING.md.
#pragma once

#include <hardact/dispatch/device_properties.cuh>
#include <hardact/dispatch/test_overrides.cuh>
#include <hardact/kernel/staged_transform_kernel.cuh>
#include <hardact/kernel/tuning.cuh>

#include <cuda/std/tuple>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>

namespace hardact {
namespace detail {

// ---- The staged kernel's shape ----

/// Threads per staged block (TUNING.md#staged-block-threads).
template <class TOut, class... TIn>
inline constexpr int kStagedBlockThreads =
    staged_block_threads(static_cast<std::size_t>(kUnitElements<TOut, TIn...>) * (sizeof(TIn) + ...));
/// How the staged kernel uses the caches, per type pair (TUNING.md#l2-evict-last-copies).
template <class TOut, class... TIn>
inline constexpr StagedCaching kStagedCaching =
    staged_marks_evict_last(std::max({sizeof(TOut), sizeof(TIn)...})) ? StagedCaching::evict_last_in_flight
                                                                      : StagedCaching::plain;
/// Index of a unit count (1, 2 or 4) in per-count tables. The counts a call may take run from its
/// least (kStagedLeastUnitsPerThread) to its most, each a kernel instantiation, and no kernel is
/// instantiated for a count its rule cannot choose (TUNING.md#broadcast-units-per-thread).
__host__ __device__ constexpr int unit_count_index(int units) { return units >= 4 ? 2 : units - 1; }
/// Dynamic shared memory a block may use without raising its limit (cudaFuncSetAttribute).
inline constexpr std::size_t kDefaultSharedMemoryPerBlock = 48 * 1024;
/// Shared memory the runtime reserves per resident block (1 KiB on sm_80 and later).
inline constexpr std::size_t kReservedSharedMemoryPerBlock = 1024;

/// How the direct kernel would run a call, which the staged path is weighed against.
struct DirectAccess {
  int bytes_per_thread = 16;                ///< of the larger stream, per thread (kBytesPerThread)
  std::size_t narrowest_access_bytes = 16;  ///< under 16 where the pointers are relatively misaligned
};

template <int Units, class TOut, class... TIn>
using StagedTileOf = StagedTile<kStagedBlockThreads<TOut, TIn...>, Units, TOut, TIn...>;

/// The bytes of a one-unit tile that Little's law sizes: its loads where they are marked
/// evict-last (kStagedCaching), else the larger of its loads and stores (a widening call stores
/// twice what it loads) (TUNING.md#staged-tile-size).
template <class TOut, class... TIn>
inline constexpr std::size_t kStagedSizedTileBytes =
    caching_has(kStagedCaching<TOut, TIn...>, StagedCaching::evict_last_in_flight)
        ? StagedTileOf<1, TOut, TIn...>::kLoadedBytes
        : StagedTileOf<1, TOut, TIn...>::kStreamBytes;

/// The fewest units per thread of a staged call (staged_least_units in kernel/tuning.cuh).
template <class Broadcasts, class TOut, class... TIn>
inline constexpr int kStagedLeastUnitsPerThread =
    staged_least_units(cuda::std::tuple_size_v<Broadcasts>, kUnitElements<TOut, TIn...>,
                       kStagedBlockThreads<TOut, TIn...>, sizeof...(TIn));
/// The most units per thread a call may take: 2, or its least where that is more.
template <class Broadcasts, class TOut, class... TIn>
inline constexpr int kStagedMostUnitsPerThread = std::max(2, kStagedLeastUnitsPerThread<Broadcasts, TOut, TIn...>);

/// How the staged kernel is launched.
struct StagedShape {
  int units_per_thread = 1;           ///< 1, 2 or 4 (kStagedMaxUnitsPerThread)
  int tiles_per_block = 0;            ///< 1: a grid of one-tile blocks; 0: persistent grid
  int blocks_per_multiprocessor = 0;  ///< persistent grid only
  int stages = 0;                     ///< tiles in flight per block; 0: the staged kernel does not fit
};

/// Little's law: bytes that must be in flight per multiprocessor to keep DRAM busy.
inline double bytes_in_flight_per_multiprocessor(const DeviceProperties& device) {
  const double bandwidth = device.peak_memory_bandwidth > 0 ? device.peak_memory_bandwidth : kFallbackMemoryBandwidth;
  const int sms = device.multiprocessor_count > 0 ? device.multiprocessor_count : 1;
  return bandwidth / sms * kLoadedMemoryLatencySeconds;
}

/// Shared memory of `stages` stages of the tile of `units` units per thread (1, 2 or 4).
template <class TOut, class... TIn>
std::size_t staged_shared_memory_bytes(int units, int stages) {
  if (units >= 4) return StagedTileOf<4, TOut, TIn...>::shared_memory_bytes(stages);
  if (units == 2) return StagedTileOf<2, TOut, TIn...>::shared_memory_bytes(stages);
  return StagedTileOf<1, TOut, TIn...>::shared_memory_bytes(stages);
}

/// Stages of the tile of `units` units that fit `per_block` bytes of shared memory (at most
/// kMaxStages).
template <class TOut, class... TIn>
int stages_fitting(int units, std::size_t per_block) {
  if (per_block > kDefaultSharedMemoryPerBlock) per_block = kDefaultSharedMemoryPerBlock;
  int fitting = 0;
  while (fitting < kMaxStages && staged_shared_memory_bytes<TOut, TIn...>(units, fitting + 1) <= per_block) ++fitting;
  return fitting;
}

/// Blocks of `Tile` that threads, shared memory and the block limit let be resident on one
/// multiprocessor with one stage each; registers are not counted (see staged_residency).
template <class Tile>
int resident_one_tile_blocks(const DeviceProperties& device) {
  const std::size_t by_threads = static_cast<std::size_t>(device.max_threads_per_multiprocessor) / Tile::kThreads;
  const std::size_t by_shared = static_cast<std::size_t>(device.shared_memory_per_multiprocessor) /
                                (Tile::shared_memory_bytes(1) + kReservedSharedMemoryPerBlock);
  return static_cast<int>(std::min({by_threads, static_cast<std::size_t>(device.max_blocks_per_multiprocessor), by_shared}));
}

/// One-tile blocks of the staged kernel resident per multiprocessor, for each unit count (1, 2, 4).
struct StagedResidency {
  int blocks[3] = {};
  int of(int units) const { return blocks[unit_count_index(units)]; }
};

/// The residency threads, shared memory and the block limit allow: what the rule falls back on
/// when the runtime cannot be asked, and what host tests give it.
template <class TOut, class... TIn>
StagedResidency estimated_residency(const DeviceProperties& device) {
  StagedResidency residency;
  residency.blocks[0] = resident_one_tile_blocks<StagedTileOf<1, TOut, TIn...>>(device);
  residency.blocks[1] = resident_one_tile_blocks<StagedTileOf<2, TOut, TIn...>>(device);
  residency.blocks[2] = resident_one_tile_blocks<StagedTileOf<4, TOut, TIn...>>(device);
  return residency;
}

/// Devices whose kernel residencies are cached (others are asked on every call).
inline constexpr int kResidencyCachedDevices = 64;

/// Resident one-tile blocks per multiprocessor of the staged kernel for `Op`, with registers
/// counted, as the runtime computes it (cudaOccupancyMaxActiveBlocksPerMultiprocessor): a policy
/// that needs many registers leaves fewer blocks resident (double HardSigmoid: 12 of 16), and each
/// must then carry a larger tile. Asked once per kernel and device, then one atomic load; if the
/// runtime cannot answer, the estimate without registers.
template <int Units, StagedCaching Caching, class Op, class Broadcasts, class TOut, class... TIn>
int resident_one_tile_kernel_blocks(const DeviceProperties& device, int estimate) {
  static std::atomic<int> cached[kResidencyCachedDevices];  // residency + 1; 0 until asked
  const bool cacheable = device.ordinal >= 0 && device.ordinal < kResidencyCachedDevices;
  if (cacheable) {
    const int known = cached[device.ordinal].load(std::memory_order_relaxed);
    if (known > 0) return known - 1;
  }
  using Tile = StagedTileOf<Units, TOut, TIn...>;
  int blocks = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &blocks,
          staged_transform_kernel<Tile::kBlockThreads, Units, StagedLoop::one_tile, Caching, Op, Broadcasts, TOut, TIn...>,
          Tile::kBlockThreads, Tile::shared_memory_bytes(1)) != cudaSuccess) {
    return estimate;
  }
  if (cacheable) cached[device.ordinal].store(blocks + 1, std::memory_order_relaxed);
  return blocks;
}

template <StagedCaching Caching, class Op, class Broadcasts, class TOut, class... TIn>
StagedResidency staged_residency(const DeviceProperties& device) {
  StagedResidency residency = estimated_residency<TOut, TIn...>(device);
  constexpr int kLeastUnits = kStagedLeastUnitsPerThread<Broadcasts, TOut, TIn...>;
  if constexpr (kLeastUnits <= 1) {
    residency.blocks[0] =
        resident_one_tile_kernel_blocks<1, Caching, Op, Broadcasts, TOut, TIn...>(device, residency.blocks[0]);
  }
  if constexpr (kLeastUnits <= 2) {
    residency.blocks[1] =
        resident_one_tile_kernel_blocks<2, Caching, Op, Broadcasts, TOut, TIn...>(device, residency.blocks[1]);
  }
  if constexpr (kStagedMostUnitsPerThread<Broadcasts, TOut, TIn...> >= 4) {
    residency.blocks[2] =
        resident_one_tile_kernel_blocks<4, Caching, Op, Broadcasts, TOut, TIn...>(device, residency.blocks[2]);
  }
  return residency;
}

/// The staged kernel's shape on `device`: one-tile blocks, as many resident per multiprocessor as
/// `residency` says, each with its tile in flight, with the smallest tile (units per thread, a
/// power of two from `least_units` to `most_units`, 2 or 4) whose resident blocks hold
/// kStagedInFlightShare of what Little's law asks for (TUNING.md#staged-tile-size). A tile counts
/// kStagedSizedTileBytes. If even the largest tile holds less than half of it, a persistent grid
/// whose blocks each keep stages - 1 tiles in flight while computing one
/// (TUNING.md#staged-kernel). A forced unit count (test_overrides.cuh) counts if it is 1, 2 or 4,
/// at least `least_units` and at most `most_units`.
template <class TOut, class... TIn>
StagedShape staged_shape(const DeviceProperties& device, const StagedResidency& residency, int least_units = 1,
                         int most_units = 2) {
  most_units = most_units >= 4 ? 4 : 2;
  const int forced_units = forced_staged_units_per_thread();
  const int forced_blocks = forced_staged_blocks_per_multiprocessor();
  const int forced_stages = forced_staged_stages();
  const double in_flight = bytes_in_flight_per_multiprocessor(device);
  StagedShape shape;

  const auto held = [&](int units) {
    return static_cast<double>(residency.of(units)) * static_cast<double>(units) *
           static_cast<double>(kStagedSizedTileBytes<TOut, TIn...>);
  };
  int units = least_units >= 4 ? 4 : least_units >= 2 ? 2 : 1;
  if (units > most_units) units = most_units;
  if (residency.of(units) == 0) return shape;
  const int least = units;
  while (units < most_units && held(units) < kStagedInFlightShare * in_flight) units *= 2;
  if ((forced_units == 1 || forced_units == 2 || forced_units == 4) && forced_units >= least &&
      forced_units <= most_units) {
    units = forced_units;
  }
  shape.units_per_thread = units;

  if (forced_blocks == 0 && forced_stages == 0 && held(units) >= in_flight / 2 &&
      staged_shared_memory_bytes<TOut, TIn...>(most_units, 1) <= kDefaultSharedMemoryPerBlock) {
    shape.tiles_per_block = 1;
    shape.stages = 1;
    return shape;
  }

  shape.blocks_per_multiprocessor = forced_blocks > 0 ? forced_blocks : kStagedPersistentBlocksPerMultiprocessor;
  const std::size_t per_multiprocessor = static_cast<std::size_t>(device.shared_memory_per_multiprocessor) /
                                         static_cast<std::size_t>(shape.blocks_per_multiprocessor);
  const int fitting = stages_fitting<TOut, TIn...>(
      most_units,
      per_multiprocessor > kReservedSharedMemoryPerBlock ? per_multiprocessor - kReservedSharedMemoryPerBlock : 0);
  if (forced_stages > 0) {
    shape.stages = forced_stages <= fitting ? forced_stages : 0;
    return shape;
  }
  const double per_stage = static_cast<double>(shape.blocks_per_multiprocessor) * static_cast<double>(units) *
                           static_cast<double>(kStagedSizedTileBytes<TOut, TIn...>);
  const int wanted = 1 + static_cast<int>(std::ceil(in_flight / per_stage));
  const int stages = wanted < 2 ? 2 : wanted;
  shape.stages = stages <= fitting ? stages : (fitting >= 2 ? fitting : 0);
  return shape;
}

/// The shape from the residency estimate (registers not counted): for host-side tests and tools.
template <class TOut, class... TIn>
StagedShape staged_shape(const DeviceProperties& device) {
  return staged_shape<TOut, TIn...>(device, estimated_residency<TOut, TIn...>(device));
}

/// Bytes moved from which an automatic-width call takes the staged path on `device`: a multiple of
/// the L2 size, by whether the direct kernel keeps Little's law's bytes in flight and how narrow
/// its accesses are (TUNING.md#path-crossover).
inline double staged_path_minimum_bytes(const DeviceProperties& device, const DirectAccess& direct) {
  const double l2 = static_cast<double>(device.l2_cache_bytes);
  if (direct.narrowest_access_bytes < kNarrowAccessBytes) return kStagedFromL2MultipleForNarrowAccesses * l2;
  const double direct_in_flight =
      static_cast<double>(device.max_threads_per_multiprocessor) * static_cast<double>(direct.bytes_per_thread);
  const bool keeps_up = direct_in_flight >= kStagedInFlightShare * bytes_in_flight_per_multiprocessor(device);
  return (keeps_up ? kStagedFromL2MultipleWhenDirectKeepsUp : kStagedFromL2Multiple) * l2;
}

/// Whether an automatic-width call moving `bytes` in all should take the staged path on `device`,
/// before its shape is known: the shape is worked out only then, since a device's first call of a
/// kind asks the runtime about the staged kernel (staged_residency).
inline bool staged_path_wanted(const DeviceProperties& device, std::size_t bytes, const DirectAccess& direct) {
  const TransformPath forced = forced_path();
  if (forced != TransformPath::automatic) return forced == TransformPath::staged;
  if (device.compute_capability_major < 9) return false;
  return static_cast<double>(bytes) >= staged_path_minimum_bytes(device, direct);
}

/// The path for an automatic-width call moving `bytes` in all, given the staged shape on `device`
/// (a shape that does not fit, stages == 0, leaves the direct path).
inline TransformPath choose_path(const DeviceProperties& device, std::size_t bytes, const DirectAccess& direct,
                                 const StagedShape& shape) {
  return staged_path_wanted(device, bytes, direct) && shape.stages >= 1 ? TransformPath::staged
                                                                         : TransformPath::direct;
}

}  // namespace detail
}  // namespace hardact
