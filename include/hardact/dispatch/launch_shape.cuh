/// @file launch_shape.cuh
/// @brief Which kernel a call runs, and the staged kernel's shape, derived from the device's cached
///        properties by the rules below (measured and explained in docs/TUNING.md).
#pragma once

#include <hardact/dispatch/device_properties.cuh>
#include <hardact/kernel/staged_transform_kernel.cuh>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>

namespace hardact {
namespace detail {

/// The two kernels: `direct` loads global memory straight into registers (every architecture,
/// explicit VecWidth, small arrays); `staged` copies tiles into shared memory with the bulk-copy
/// engine (sm_90 and later, large arrays, automatic width).
enum class TransformPath { automatic, direct, staged };

/// Process-wide overrides of the rules, for tests (both paths at every size, every staged shape)
/// and tuning runs. Not part of the public API; zero means "use the rule". Forcing blocks or
/// stages selects the persistent grid.
struct TransformTuning {
  std::atomic<TransformPath> path{TransformPath::automatic};
  std::atomic<int> staged_units_per_thread{0};
  std::atomic<int> staged_blocks_per_multiprocessor{0};
  std::atomic<int> staged_stages{0};
  /// StagedLoop::two_rows: 1 wherever a call can take it (periods down to half a tile), -1 never,
  /// 0 the rule (two_rows_halves_apart).
  std::atomic<int> staged_two_rows{0};
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

/// Threads per staged block. 128 where a unit loads 16 bytes or less (one-input same-type and
/// widening calls): the 2 KiB one-input tiles the H100 runs best with need them, and 16 resident
/// blocks per multiprocessor refill a finished block's slot at a fine grain (docs/TUNING.md, row
/// 19); the H200, whose one-input rows need two units per thread, lost 2-6% with larger blocks.
/// 384 where a unit loads 32 bytes (two inputs, or a float input narrowed to 16 bits): as many
/// bytes in flight (5 resident blocks of 12 KiB instead of 16 of 4 KiB), in a third of the blocks,
/// ran those rows 0.1-0.5% faster on both cards (row 27).
template <class TOut, class... TIn>
inline constexpr int kStagedBlockThreads = kUnitElements<TOut, TIn...> * (sizeof(TIn) + ...) >= 32 ? 384 : 128;
/// How the staged kernel uses the caches, per type pair (docs/TUNING.md rows 32-34). Where every
/// element is at most 4 bytes, in and out (float, half and bfloat16 calls of one or two inputs,
/// and the conversions between them), the bulk copies mark 16 bytes of each unit evict-last in L2,
/// from the last input back (evict_last_unit_bytes), and the block returns those lines to normal
/// priority once its tile has landed. Measured against plain copies: one input +0.5-1.0% on the
/// H100 and +0.2-1.6% on the H200 (in place 0.989 -> 1.002 of the copy, bfloat16 -> float
/// 0.976 -> 0.992), two inputs +0.35-0.45% and +0.4-0.5%, float -> bfloat16 (half of its input's
/// unit) +0.2-0.4% and -0.7 to +0.1%, with the next kernel's L2 as after plain copies. double
/// calls stay plain: the H200 ran them 2-3% slower with the hints. Stores are plain everywhere
/// (evict-first stores: row 15).
template <class TOut, class... TIn>
inline constexpr StagedCaching kStagedCaching =
    sizeof(TOut) <= 4 && ((sizeof(TIn) <= 4) && ...) ? StagedCaching::evict_last_in_flight : StagedCaching::plain;
/// The unit counts per thread the dispatch layer can pick from: 1, 2 and 4, each a kernel
/// instantiation, from a call's least (kStagedLeastUnitsPerThread) to its most: 4 only for the
/// calls that take it as their least, and none below the least, so that a call instantiates only
/// the kernels its rule can choose (bfloat16 and half broadcast calls: 4 units alone; the half /
/// bfloat16 broadcast test file compiled in 56.6 s instead of 66.8, TUNING.md row 48).
inline constexpr int kStagedMaxUnitsPerThread = 4;
/// Index of a unit count (1, 2 or 4) in per-count tables.
__host__ __device__ constexpr int unit_count_index(int units) { return units >= 4 ? 2 : units - 1; }
/// The latency Little's law multiplies the bandwidth by: bytes in flight = bandwidth x latency.
/// 1.3 us (a DRAM round trip under load) puts 32 KiB per multiprocessor on an H100 and 48 KiB on an
/// H200, where the probes of docs/TUNING.md found each card's best tile (2 and 4 KiB x 16 blocks).
inline constexpr double kLoadedMemoryLatencySeconds = 1.3e-6;
/// Bandwidth assumed when a device does not report its memory clock and bus width.
inline constexpr double kFallbackMemoryBandwidth = 3.35e12;
/// The share of Little's law's bytes in flight the chosen tile's resident blocks must hold: the
/// H100's 2 KiB one-input tile holds 0.99 of its 33 KB, and ran best (TUNING.md row 19).
inline constexpr double kStagedInFlightShare = 0.9;
/// Resident blocks per multiprocessor when one-tile blocks cannot keep enough loads in flight and
/// a persistent grid with a ring of stages per block must.
inline constexpr int kStagedPersistentBlocksPerMultiprocessor = 4;
/// Dynamic shared memory a block may use without raising its limit (cudaFuncSetAttribute).
inline constexpr std::size_t kDefaultSharedMemoryPerBlock = 48 * 1024;
/// Shared memory the runtime reserves per resident block (1 KiB on sm_80 and later).
inline constexpr std::size_t kReservedSharedMemoryPerBlock = 1024;
/// Where the staged path takes over, in bytes moved (read + written) per byte of L2. Below, part
/// of the traffic still hits L2, where the direct path's loads straight into registers win and one
/// short launch costs less; above, what counts is keeping DRAM busy (docs/TUNING.md row 35;
/// interleaved sweeps of 2^22..2^26 elements, 41 reps). Where the direct kernel's resident threads
/// hold Little's law's bytes in flight (the H100: 32 KiB per multiprocessor of 32), it ran level
/// with the staged one or ahead up to 4 x L2 (float at 2^24, 2.6 x L2: 1.04 against 1.02 of the
/// copy); where they do not (the H200: 32 of 48 KiB), it fell behind from 2 x L2 (bfloat16 at
/// 2^25, 2.1 x L2: 0.97 against 1.00; float at 4.3 x L2: 0.96 against 1.01).
inline constexpr double kStagedFromL2MultipleWhenDirectKeepsUp = 4.0;
inline constexpr double kStagedFromL2Multiple = 2.0;
/// A call whose pointers are misaligned relative to each other makes the direct kernel use
/// narrower accesses; below 4 bytes (16-bit elements one element apart) it ran 0.93-1.01 of the
/// copy on the H100 and 0.84-0.96 on the H200 from 1.1 to 5 x L2, where the staged path ran
/// 1.02-1.04 and 0.97-1.00.
inline constexpr double kStagedFromL2MultipleForNarrowAccesses = 1.0;
inline constexpr std::size_t kNarrowAccessBytes = 4;

/// How the direct kernel would run a call, which the staged path is weighed against.
struct DirectAccess {
  int bytes_per_thread = 16;                ///< of the larger stream, per thread (kBytesPerThread)
  std::size_t narrowest_access_bytes = 16;  ///< under 16 where the pointers are relatively misaligned
};

template <int Units, class TOut, class... TIn>
using StagedTileOf = StagedTile<kStagedBlockThreads<TOut, TIn...>, Units, TOut, TIn...>;

/// The bytes of a one-unit tile that Little's law sizes. With plain copies, the larger of what the
/// tile loads and stores: a widening call (bfloat16 -> float) stores twice what it loads, and sized
/// by its loads alone it took tiles twice too large on the H100 (0.987 of the copy against 0.991,
/// TUNING.md row 28). With its loads marked evict-last (kStagedCaching) the same call runs best
/// with the tiles its loads ask for: on the H100 2 units 0.994 against 1 unit 0.987, its input one
/// element off 0.992 against 0.978; the H200 takes 2 units either way (row 36).
template <class TOut, class... TIn>
inline constexpr std::size_t kStagedSizedTileBytes =
    caching_has(kStagedCaching<TOut, TIn...>, StagedCaching::evict_last_in_flight)
        ? StagedTileOf<1, TOut, TIn...>::kLoadedBytes
        : StagedTileOf<1, TOut, TIn...>::kStreamBytes;

#ifndef HARDACT_STAGED_BROADCAST_UNITS  // a tuning knob (docs/TUNING.md row 45): 2 or 4
#define HARDACT_STAGED_BROADCAST_UNITS 4
#endif

/// The fewest units per thread of a staged call with broadcast operands whose unit holds 8 or more
/// elements (16-bit outputs): 4 for one-input calls (128-thread blocks), 2 for two-input ones,
/// whose 4-unit tiles would not fit 48 KiB of shared memory. Such a tile does more work per byte
/// (the values' positions, a multiply-add per element), and its kernel runs out of instruction
/// issue before memory bandwidth where units are few: one unit per thread, which Little's law alone
/// allows, ran bfloat16 bias, BatchNorm and gate rows 0.6-14% slower than two on the H100 (row 39);
/// on the H200 two ran bfloat16 BatchNorm rows at 0.96 of the copy, four at 1.00, each thread's
/// fixed work (the tile's setup, its wait, the release of its L2 lines) spread over twice the
/// elements (row 45). Float rows with one operand run as fast or faster with one (row 39). Float
/// one-input calls with two or more (a BatchNorm's scale and shift) take 4 as well: their 2-unit
/// kernel needs 40 registers, so 12 resident blocks hold 48 KiB in flight, which Little's law
/// counts as enough but the H200 ran at 0.991 of the copy at PyTorch's NCHW shape; 4 units (48
/// registers, 10 blocks, 80 KiB) 1.002, the H100 1.008 -> 1.007 (row 51).
template <class Broadcasts, class TOut, class... TIn>
inline constexpr int kStagedLeastUnitsPerThread =
    cuda::std::tuple_size_v<Broadcasts> == 0 ? 1
    : kUnitElements<TOut, TIn...> >= 8
        ? (kStagedBlockThreads<TOut, TIn...> == 128 ? HARDACT_STAGED_BROADCAST_UNITS : 2)
    : kUnitElements<TOut, TIn...> == 4 && sizeof...(TIn) == 1 && cuda::std::tuple_size_v<Broadcasts> >= 2
        ? HARDACT_STAGED_BROADCAST_UNITS
        : 1;
/// The most units per thread a call may take: 2, or its least where that is more.
template <class Broadcasts, class TOut, class... TIn>
inline constexpr int kStagedMostUnitsPerThread = std::max(2, kStagedLeastUnitsPerThread<Broadcasts, TOut, TIn...>);
static_assert(HARDACT_STAGED_BROADCAST_UNITS == 2 || HARDACT_STAGED_BROADCAST_UNITS == 4,
              "hardact: HARDACT_STAGED_BROADCAST_UNITS must be 2 or 4");

/// DRAM bandwidth per multiprocessor from which calls take StagedLoop::two_rows by the rule
/// (dispatch_transform.cuh): the H200 (4.9 TB/s over 132 multiprocessors, 37 GB/s each) reads
/// DRAM fast enough for a float bias's L2 reads to bind, and the form ran its bias rows 0.1-2.2%
/// faster; on the H100 (3.35 TB/s, 25 GB/s each) the same rows ran 0.0-1.7% slower with it
/// (docs/TUNING.md row 53). Two devices measured: a threshold between them, not a model.
inline constexpr double kTwoRowsMinBandwidthPerMultiprocessor = 30e9;

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
/// kStagedInFlightShare of what Little's law asks for. A tile counts kStagedSizedTileBytes.
/// Measured (rows 19 and 22): a larger tile than needed costs ~1% on the H100, a smaller one 7-10%
/// on the H200. If even the largest tile holds less than half of it, a persistent grid whose blocks
/// each keep stages - 1 tiles in flight while computing one. A forced unit count (TransformTuning)
/// counts if it is 1, 2 or 4, at least `least_units` and at most `most_units`.
template <class TOut, class... TIn>
StagedShape staged_shape(const DeviceProperties& device, const StagedResidency& residency, int least_units = 1,
                         int most_units = 2) {
  most_units = most_units >= 4 ? 4 : 2;
  const TransformTuning& tuning = transform_tuning();
  const int forced_units = tuning.staged_units_per_thread.load(std::memory_order_relaxed);
  const int forced_blocks = tuning.staged_blocks_per_multiprocessor.load(std::memory_order_relaxed);
  const int forced_stages = tuning.staged_stages.load(std::memory_order_relaxed);
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

/// Bytes moved from which an automatic-width call takes the staged path on `device` (the rule
/// above).
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
  const TransformPath forced = transform_tuning().path.load(std::memory_order_relaxed);
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
