/// @file tuning.cuh
/// @brief Every tuning constant and every HARDACT_* tuning knob, each with its rule in a line or
///        two and the docs/TUNING.md section that measured it. Includes nothing of hardact, so the
///        kernels (kernel/) and the dispatch rules (dispatch/launch_shape.cuh,
///        dispatch/dispatch_transform.cuh) both read it.
///
/// The rules are per device, not per architecture: they read the device's bandwidth, L2 size,
/// multiprocessors and residency at run time (dispatch/device_properties.cuh), so one set of
/// constants serves the H100 and the H200. The one architecture cut is the staged path's: it needs
/// the bulk-copy engine of sm_90 and later.
///
/// A knob (HARDACT_*) must be defined the same in every translation unit of a program, before
/// any hardact header; the defaults are the measured choice. The seven below are all there are:
/// they change kernels' shapes, which a build has to fix. The summing path's adopted forms (chunks
/// refit to one wave, the partial sums' dependent launch, the tiles form) are no knobs: tests and
/// benchmarks switch them off at run time (dispatch/test_overrides.cuh).
#pragma once

#include <cstddef>

// ---- Knobs, for measuring other shapes with hardact_bench and hardact_tune ----

/// Threads per block of the direct kernel for elements of up to 4 bytes.
#ifndef HARDACT_BLOCK_THREADS
#define HARDACT_BLOCK_THREADS 1024
#endif
/// Bytes of the widest stream each direct-kernel thread moves per tile.
#ifndef HARDACT_BYTES_PER_THREAD
#define HARDACT_BYTES_PER_THREAD 16
#endif
/// Minimum resident blocks the direct kernel's launch bounds ask the compiler for.
#ifndef HARDACT_DIRECT_MIN_BLOCKS
#define HARDACT_DIRECT_MIN_BLOCKS 1
#endif
/// Least units per thread of a staged call with broadcast operands whose unit is 8 or more
/// elements, one input: 2 or 4.
#ifndef HARDACT_STAGED_BROADCAST_UNITS
#define HARDACT_STAGED_BROADCAST_UNITS 4
#endif
/// Bytes of broadcast values a staged-kernel thread loads before its tile's wait.
#ifndef HARDACT_STAGED_PREFETCHED_BROADCAST_BYTES
#define HARDACT_STAGED_PREFETCHED_BROADCAST_BYTES 64
#endif

static_assert(HARDACT_STAGED_BROADCAST_UNITS == 2 || HARDACT_STAGED_BROADCAST_UNITS == 4,
              "hardact: HARDACT_STAGED_BROADCAST_UNITS must be 2 or 4");

namespace hardact {
namespace detail {

// ---- The direct kernel (TUNING.md#direct-block-shape) ----

/// 1024 threads x one 16-byte access for elements of up to 4 bytes; 256 threads x 32 bytes for
/// 8-byte elements (double division's long latency) and for calls with broadcast operands, whose
/// 1024-thread blocks held too few bytes in flight (TUNING.md#direct-block-shape-with-broadcasts).
constexpr bool direct_takes_small_blocks(std::size_t widest_element, bool with_broadcasts) {
  return widest_element >= 8 || with_broadcasts;
}
constexpr int direct_block_threads(std::size_t widest_element, bool with_broadcasts = false) {
  return direct_takes_small_blocks(widest_element, with_broadcasts) ? 256 : HARDACT_BLOCK_THREADS;
}
constexpr int direct_bytes_per_thread(std::size_t widest_element, bool with_broadcasts = false) {
  return direct_takes_small_blocks(widest_element, with_broadcasts) && HARDACT_BYTES_PER_THREAD < 32
             ? 32
             : HARDACT_BYTES_PER_THREAD;
}
/// Asking for 2 resident blocks spilled registers (TUNING.md#broadcast-values-before-the-wait).
inline constexpr int kDirectMinBlocks = HARDACT_DIRECT_MIN_BLOCKS;

// ---- Which path (TUNING.md#path-crossover) ----

/// The staged path takes calls that move at least this many times the L2 size (bytes read +
/// written): 4 x L2 where the direct kernel's resident threads hold Little's law's bytes in flight,
/// 2 x where they do not, 1 x where relatively misaligned pointers force accesses under
/// kNarrowAccessBytes.
inline constexpr double kStagedFromL2MultipleWhenDirectKeepsUp = 4.0;
inline constexpr double kStagedFromL2Multiple = 2.0;
inline constexpr double kStagedFromL2MultipleForNarrowAccesses = 1.0;
inline constexpr std::size_t kNarrowAccessBytes = 4;

// ---- The staged kernel's geometry ----

/// A unit, a thread's share of a tile per step, is one 16-byte store of the output type, but at
/// least 4 bytes of every input (TUNING.md#staged-unit).
inline constexpr std::size_t kUnitStoreBytes = 16;
inline constexpr std::size_t kUnitLeastInputBytes = 4;
/// Each staging buffer starts on a 128-byte boundary of shared memory (TUNING.md#staged-unit).
inline constexpr std::size_t kStagingBufferAlignment = 128;
/// The staged range starts where the output is on a 1 KiB boundary (TUNING.md#staged-boundary).
inline constexpr std::size_t kStagedBoundaryBytes = 1024;
/// 384 threads per staged block where a unit loads 32 bytes or more (two inputs, a float input
/// narrowed to 16 bits), 128 elsewhere (TUNING.md#staged-block-threads).
constexpr int staged_block_threads(std::size_t unit_load_bytes) {
  return unit_load_bytes >= 32 ? 384 : 128;
}

// ---- The staged tile's size: Little's law per device (TUNING.md#staged-tile-size) ----

/// Bytes in flight per multiprocessor = DRAM bandwidth per multiprocessor x this latency.
inline constexpr double kLoadedMemoryLatencySeconds = 1.3e-6;
/// Bandwidth assumed when a device does not report its memory clock and bus width.
inline constexpr double kFallbackMemoryBandwidth = 3.35e12;
/// The smallest tile whose resident blocks hold this share of Little's law's bytes.
inline constexpr double kStagedInFlightShare = 0.9;
/// Resident blocks of the persistent ring form, where even the largest one-tile blocks hold under
/// half of Little's law's bytes (TUNING.md#staged-kernel).
inline constexpr int kStagedPersistentBlocksPerMultiprocessor = 4;
/// The most units per thread any call may take (each count is a kernel instantiation).
inline constexpr int kStagedMaxUnitsPerThread = 4;

/// The fewest units per thread of a staged call: 1, except with broadcast operands, whose tiles do
/// more work per byte and run out of instruction issue with few units: HARDACT_STAGED_BROADCAST_UNITS
/// for 8-element units of one input (2 for two inputs, whose 4-unit tiles do not fit 48 KiB), and
/// for float one-input calls with two broadcasts or more (TUNING.md#broadcast-units-per-thread).
constexpr int staged_least_units(std::size_t broadcasts, int unit_elements, int block_threads,
                                                     std::size_t inputs) {
  return broadcasts == 0          ? 1
         : unit_elements >= 8     ? (block_threads == 128 ? HARDACT_STAGED_BROADCAST_UNITS : 2)
         : unit_elements == 4 && inputs == 1 && broadcasts >= 2 ? HARDACT_STAGED_BROADCAST_UNITS
                                                                : 1;
}

// ---- The staged kernel and the caches (TUNING.md#l2-evict-last-copies) ----

/// Where every element is at most 4 bytes, in and out, the bulk copies mark lines evict-last in
/// L2 while a tile is in flight, and return them to normal once it has landed; 8-byte elements
/// stay plain.
constexpr bool staged_marks_evict_last(std::size_t widest_element) {
  return widest_element <= 4;
}
/// Bytes of each unit marked, shared between the inputs from the last one back.
inline constexpr std::size_t kEvictLastBytesPerUnit = 16;

// ---- Broadcast operands in the staged kernel ----

/// A thread loads the broadcast values of as many units as fit this many bytes before its tile's
/// wait (at least one unit), the rest after it (TUNING.md#broadcast-values-before-the-wait).
inline constexpr std::size_t kPrefetchedBroadcastBytes = HARDACT_STAGED_PREFETCHED_BROADCAST_BYTES;
/// Devices with at least this DRAM bandwidth per multiprocessor take the two-rows tile for a bias
/// over the last dimension: the H200 (37 GB/s each) gained, the H100 (25 GB/s) lost; a threshold
/// between the two cards measured (TUNING.md#two-rows-per-tile).
inline constexpr double kTwoRowsMinBandwidthPerMultiprocessor = 30e9;

// ---- The summing path (kernel/summed_transform_kernel.cuh; TUNING.md#summing-path) ----

/// Threads per block of the summing kernels and of the partial sums' kernel.
inline constexpr int kSummedBlockThreads = 256;
inline constexpr int kSummedPartialsBlockThreads = 256;
/// Vectors each thread loads before it computes, so that several loads are in flight.
#ifndef HARDACT_SUMMED_VECTORS_IN_FLIGHT
#define HARDACT_SUMMED_VECTORS_IN_FLIGHT 4
#endif
inline constexpr int kSummedVectorsInFlight = HARDACT_SUMMED_VECTORS_IN_FLIGHT;
/// Resident blocks the summing kernels' launch bounds ask for: 3, at most 85 registers a thread.
#ifndef HARDACT_SUMMED_MIN_BLOCKS
#define HARDACT_SUMMED_MIN_BLOCKS 3
#endif
inline constexpr int kSummedMinBlocks = HARDACT_SUMMED_MIN_BLOCKS;
/// A chunk of the rows form: at least this many elements and rows (TUNING.md#summing-path; fewer,
/// larger chunks share each block's reduction among more bytes); at most this many chunks per span
/// (each a partial sum per channel).
inline constexpr std::size_t kSummedChunkElements = 16384;
inline constexpr std::size_t kSummedLeastChunkRows = 16;
inline constexpr std::size_t kSummedMostChunks = 1024;
/// Vector columns a rows-form block takes at least where it takes a span's rows (plan_rows): 8 of
/// 16 bytes, a 128-byte line of each row; slices of 2 or 3 took 1.39-1.49 x the plain call's time
/// where chunks took 1.11-1.19 (TUNING.md#summing-path).
inline constexpr std::size_t kSummedRowsLeastColumns = 8;
/// Vectors of its run each lane of a runs-form team reads at least, where the run has them
/// (runs_team_shift): a round of loads; rounds up to the warp's whole run took more issue slots.
inline constexpr std::size_t kSummedRunsLeastLaneVectors = static_cast<std::size_t>(kSummedVectorsInFlight);
/// Partial sums per sum that one thread adds alone; more take a warp each.
inline constexpr std::size_t kSummedPartsPerThread = 32;
/// NCHW runs shorter than this many vectors at the output's 16-byte width, and not whole vectors,
/// take the tiles form (the runs form would read them a narrower access at a time); longer runs,
/// and runs of whole vectors, were faster in the runs form (TUNING.md#summing-path).
inline constexpr std::size_t kSummedTilesMostRunVectors = 16;

// ---- The depthwise convolution (kernel/depthwise_kernel.cuh; TUNING.md#depthwise-stage) ----

/// Threads per block of the depthwise kernel (a block holds every channel vector of a sample: up to
/// 256, so up to 1024 channels) and of the kernel that adds its blocks' sums.
inline constexpr int kDepthwiseBlockThreads = 256;
inline constexpr int kDepthwiseBlockSumsThreads = 256;
/// Output position groups each thread of the depthwise kernel takes: one. These calls are short
/// (10-90 us at batch 64) and latency-bound; more threads in flight beat fewer blocks' sums.
#ifndef HARDACT_DEPTHWISE_GROUPS_PER_THREAD
#define HARDACT_DEPTHWISE_GROUPS_PER_THREAD 1
#endif
inline constexpr int kDepthwiseGroupsPerThread = HARDACT_DEPTHWISE_GROUPS_PER_THREAD;
/// With more than one group a thread, at least this many blocks per multiprocessor are launched
/// over the batch, where the samples have that many groups.
#ifndef HARDACT_DEPTHWISE_BLOCKS_PER_SM
#define HARDACT_DEPTHWISE_BLOCKS_PER_SM 2
#endif
inline constexpr int kDepthwiseLeastBlocksPerMultiprocessor = HARDACT_DEPTHWISE_BLOCKS_PER_SM;
static_assert(kDepthwiseGroupsPerThread >= 1 && kDepthwiseLeastBlocksPerMultiprocessor >= 1,
              "hardact: HARDACT_DEPTHWISE_GROUPS_PER_THREAD and HARDACT_DEPTHWISE_BLOCKS_PER_SM must be at least 1");

// ---- channel_sum (reduce.cuh) ----

/// Threads of channel_sum's first pass: about a full GPU's worth, each summing whole rows.
inline constexpr std::size_t kChannelSumStageOneThreads = std::size_t{1} << 20;

}  // namespace detail
}  // namespace hardact
