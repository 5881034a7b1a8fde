/// @file staged_transform_kernel.cuh
/// @brief The staged path (sm_90 and later): out[i] = op(in_0[i], ...) with the inputs brought into
///        shared memory by the bulk-copy engine and the results written to global memory with
///        16-byte stores.
///
/// The dispatch layer cuts [0, n) into a scalar head, a staged range and a scalar tail. The staged
/// range starts where the output sits on a 1 KiB boundary and every input's 16-byte granules lie
/// wholly inside its array, so no copy touches a byte outside the caller's ranges. It is cut into
/// tiles of BlockThreads * UnitsPerThread units of kUnitElements elements. The shape rule
/// (dispatch/launch_shape.cuh) normally launches one block per tile, so that the hardware keeps as
/// many tiles in flight per multiprocessor as blocks are resident; one thread issues the tile's
/// copies, which complete on an mbarrier. The ring form, where blocks take tiles with a grid stride
/// and keep up to `stages` of them in flight in a ring of shared-memory stages, serves devices
/// where that is not enough. An input that is misaligned relative to the output is copied from its
/// granule-aligned window and read back shifted (shared_staging.cuh), so every pointer alignment
/// runs at about the same speed.
#pragma once

#include <hardact/kernel/apply_op.cuh>
#include <hardact/kernel/device_broadcast.cuh>
#include <hardact/kernel/shared_staging.cuh>
#include <hardact/kernel/tuning.cuh>
#include <hardact/kernel/value_array.cuh>
#include <hardact/kernel/vector_access.cuh>

#include <cuda/std/cstdint>
#include <cuda/std/tuple>
#include <cuda/std/utility>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hardact {
namespace detail {

/// Elements per unit, a thread's share of a tile per step: one 16-byte store of the output type, so
/// that consecutive threads' stores cover whole 32-byte sectors, but at least 4 bytes of every
/// input, so that shared-memory reads stay whole words (TUNING.md#staged-unit).
template <class TOut, class... TIn>
inline constexpr int kUnitElements = std::max(static_cast<int>(kUnitStoreBytes / sizeof(TOut)),
                                              static_cast<int>(kUnitLeastInputBytes / std::min({sizeof(TIn)...})));

/// Bytes of shared memory the block's barriers take, in front of the stages (enough for 16).
inline constexpr std::size_t kStageBarrierBytes = 128;
inline constexpr int kMaxStages = static_cast<int>(kStageBarrierBytes / sizeof(std::uint64_t));

/// Tile geometry of one kernel instantiation.
template <int BlockThreads, int UnitsPerThread, class TOut, class... TIn>
struct StagedTile {
  static constexpr int kBlockThreads = BlockThreads;
  static constexpr std::size_t kThreads = static_cast<std::size_t>(BlockThreads);
  static constexpr std::size_t kUnit = static_cast<std::size_t>(kUnitElements<TOut, TIn...>);
  static constexpr std::size_t kElements = static_cast<std::size_t>(BlockThreads) * UnitsPerThread * kUnit;
  /// Each input's staging buffer: the tile plus one granule, which a shifted window needs, rounded
  /// up so that the next buffer is aligned too.
  template <class T>
  static constexpr std::size_t kBufferBytes =
      (kElements * sizeof(T) + kBulkCopyGranule + kStagingBufferAlignment - 1) / kStagingBufferAlignment *
      kStagingBufferAlignment;
  static constexpr std::size_t kStageBytes = (kBufferBytes<TIn> + ...);
  static constexpr std::size_t kLoadedBytes = ((kElements * sizeof(TIn)) + ...);
  static constexpr std::size_t kStoredBytes = kElements * sizeof(TOut);
  /// The larger stream of the tile, which Little's law sizes (launch_shape.cuh).
  static constexpr std::size_t kStreamBytes = kLoadedBytes > kStoredBytes ? kLoadedBytes : kStoredBytes;
  static constexpr std::size_t shared_memory_bytes(int stages) {
    return kStageBarrierBytes + static_cast<std::size_t>(stages) * kStageBytes;
  }
};

/// How the dispatch layer cut [0, n): [0, staged_begin) and [staged_end, n) are done one element at
/// a time by block 0, the rest in `num_tiles` tiles (the last one possibly short, by whole units).
struct StagedRange {
  std::size_t n;
  std::size_t staged_begin;
  std::size_t staged_end;
  std::size_t num_tiles;
  /// StagedLoop::two_rows only: half tiles between the two halves of a tile, one period of every
  /// broadcast operand's values.
  std::size_t halves_apart = 0;
};

/// A unit of an input from its staging buffer. Values narrower than 32 bits stay in their words
/// (ValueArray), from which each is taken with a shift: one instruction to widen, not two
/// (TUNING.md#broadcast-access).
template <class T, int Elements>
__device__ __forceinline__ ValueArray<T, Elements> read_staged_unit(const unsigned char* buffer, unsigned shift,
                                                                     std::size_t unit) {
  constexpr int kBytes = Elements * static_cast<int>(sizeof(T));
  std::uint32_t words[static_cast<std::size_t>(kBytes / 4)];
  read_shifted_words<kBytes>(buffer, shift, unit, words);
  ValueArray<T, Elements> values;
  static_assert(sizeof(values.storage) == sizeof(words), "hardact: a unit is whole words");
  memcpy(values.storage, words, kBytes);  // a register-to-register reinterpretation
  return values;
}

/// How the staged kernel uses the caches (a set of flags; stores are always plain).
enum class StagedCaching : unsigned {
  plain = 0,
  /// The bulk copies mark evict_last_unit_bytes of each input's units evict-last in L2, and once
  /// a tile has landed in shared memory those lines go back to normal priority, so nothing stays
  /// marked after the call (TUNING.md#l2-evict-last-copies; which calls: kStagedCaching in
  /// dispatch/launch_shape.cuh). Bit 1: bit 0 was a store option no rule chose.
  evict_last_in_flight = 1u << 1,
};

__host__ __device__ constexpr StagedCaching operator|(StagedCaching a, StagedCaching b) {
  return static_cast<StagedCaching>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
__host__ __device__ constexpr bool caching_has(StagedCaching set, StagedCaching flag) {
  return (static_cast<unsigned>(set) & static_cast<unsigned>(flag)) != 0;
}

/// Bytes of each unit of input `Input` whose copies are marked evict-last under
/// StagedCaching::evict_last_in_flight: kEvictLastBytesPerUnit per unit between the inputs, the
/// last inputs served first, so an input may get part of its unit (a float input narrowed to 16
/// bits: 16 of 32); marking more lost on the H200 (TUNING.md#l2-evict-last-copies).
template <std::size_t Input, class TOut, class... TIn>
__host__ __device__ constexpr std::size_t evict_last_unit_bytes() {
  constexpr std::size_t sizes[] = {sizeof(TIn)...};
  std::size_t budget = kEvictLastBytesPerUnit;
  for (std::size_t i = sizeof...(TIn); i-- > Input;) {
    const std::size_t unit = static_cast<std::size_t>(kUnitElements<TOut, TIn...>) * sizes[i];
    const std::size_t given = unit < budget ? unit : budget;
    if (i == Input) return given;
    budget -= given;
  }
  return 0;
}

/// The end of an input's window whose copy is marked, `Marked` of every `Unit` bytes: it starts on
/// an L2 line, so that returning its lines to normal priority leaves the unmarked lines alone.
template <std::size_t Marked, std::size_t Unit>
__host__ __device__ constexpr GranuleWindow marked_part(const GranuleWindow& window) {
  if constexpr (Marked >= Unit) {
    return window;
  } else {
    const std::uintptr_t end = window.begin + window.bytes;
    const std::uintptr_t unmarked = window.bytes - static_cast<std::uintptr_t>(window.bytes) * Marked / Unit;
    const std::uintptr_t cut = (window.begin + unmarked) & ~(kL2LineBytes - 1);
    const std::uintptr_t begin = cut > window.begin ? cut : window.begin;
    return {begin, static_cast<std::uint32_t>(end - begin)};
  }
}

/// Bytes of a unit that input `Input` loads.
template <std::size_t Input, class TOut, class... TIn>
inline constexpr std::size_t kUnitLoadBytes = static_cast<std::size_t>(kUnitElements<TOut, TIn...>) *
                                              sizeof(cuda::std::tuple_element_t<Input, cuda::std::tuple<TIn...>>);

/// Offsets of each input's buffer inside one stage.
template <class Tile, class... TIn, std::size_t... I>
__device__ __forceinline__ void buffer_offsets(std::size_t (&offsets)[sizeof...(TIn)], cuda::std::index_sequence<I...>) {
  constexpr std::size_t sizes[] = {Tile::template kBufferBytes<TIn>...};
  std::size_t offset = 0;
  ((offsets[I] = offset, offset += sizes[I]), ...);
}

/// A thread's broadcast values for `Units` of its units of a tile, `Unit` values of each operand per
/// unit (an empty tuple per unit when the call has no broadcast operand).
template <int Units, int Unit, class Broadcasts>
struct UnitBroadcasts {
  typename broadcast_values<Unit, Broadcasts>::type units[static_cast<std::size_t>(Units)];
};

/// Units of a tile whose broadcast values a thread loads while the tile's bulk copies are in
/// flight, holding them in registers across the wait: the most units, a power of two, whose values
/// take at most kPrefetchedBroadcastBytes (at least one unit); the rest load after the wait, as
/// many units at a time (wait_and_transform_tile). Loads before the wait hide their latency, but
/// values held across it cost registers, hence resident blocks
/// (TUNING.md#broadcast-values-before-the-wait).
template <int UnitsPerThread, class Broadcasts, class TOut, class... TIn>
inline constexpr int kPrefetchedBroadcastUnits = [] {
  constexpr std::size_t kUnitBytes = sizeof(UnitBroadcasts<1, kUnitElements<TOut, TIn...>, Broadcasts>);
  int units = UnitsPerThread;
  while (cuda::std::tuple_size_v<Broadcasts> > 0 && units > 1 &&
         static_cast<std::size_t>(units) * kUnitBytes > kPrefetchedBroadcastBytes) {
    units /= 2;
  }
  return units;
}();

/// Loads a thread's broadcast values for its units `begin` .. `begin` + Units - 1 of the tile
/// starting at element `first` (count elements valid).
template <int BlockThreads, int Units, int Unit, class Broadcasts>
__device__ __forceinline__ void load_unit_broadcasts(UnitBroadcasts<Units, Unit, Broadcasts>& values,
                                                     const Broadcasts& broadcasts, int begin, std::size_t first,
                                                     std::size_t count) {
  if constexpr (cuda::std::tuple_size_v<Broadcasts> > 0) {
    // A unit past the tile's valid ones reads the tile's first unit's values, unused. Offsets
    // inside a tile fit 32 bits.
    std::size_t firsts[static_cast<std::size_t>(Units)];
#pragma unroll
    for (int u = 0; u < Units; ++u) {
      const std::uint32_t offset = (static_cast<std::uint32_t>(begin + u) * BlockThreads + threadIdx.x) * Unit;
      firsts[u] = first + (offset < static_cast<std::uint32_t>(count) ? offset : 0u);
    }
    load_broadcast_units<Unit>(broadcasts, firsts, values.units,
                               cuda::std::make_index_sequence<cuda::std::tuple_size_v<Broadcasts>>{});
  } else {
    (void)values, (void)broadcasts, (void)begin, (void)first, (void)count;
  }
}

/// Elements a thread computes from its units `begin` .. `begin` + Units - 1 of a staged tile, with
/// their broadcast values. `count` elements of the tile are valid.
template <int BlockThreads, StagedCaching Caching, class Op, class TOut, class... TIn, int Units, class Broadcasts,
          std::size_t... I, std::size_t... B>
__device__ __forceinline__ void transform_staged_units(const Op& op, const unsigned char* stage,
                                                       const std::size_t (&offsets)[sizeof...(TIn)],
                                                       const unsigned (&shifts)[sizeof...(TIn)], std::size_t count,
                                                       int begin,
                                                       const UnitBroadcasts<Units, kUnitElements<TOut, TIn...>, Broadcasts>& values,
                                                       TOut* out, cuda::std::index_sequence<I...>,
                                                       cuda::std::index_sequence<B...>) {
  constexpr int kUnit = kUnitElements<TOut, TIn...>;
  using OutVector = AlignedVector<TOut, kUnit>;
#pragma unroll
  for (int u = 0; u < Units; ++u) {
    const std::uint32_t unit = static_cast<std::uint32_t>(begin + u) * BlockThreads + threadIdx.x;  // a tile fits 32 bits
    if (unit * kUnit < static_cast<std::uint32_t>(count)) {
      const cuda::std::tuple<ValueArray<TIn, kUnit>...> loaded{
          read_staged_unit<TIn, kUnit>(stage + offsets[I], shifts[I], unit)...};
      OutVector result;
#pragma unroll
      for (int j = 0; j < kUnit; ++j) {
        result.elements[j] = apply_op<TOut>(op, cuda::std::get<I>(loaded).get(j)...,
                                            cuda::std::get<B>(values.units[u]).get(j)...);
      }
      reinterpret_cast<OutVector*>(out)[unit] = result;
    }
  }
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/// One thread starts the copies of one tile into one stage and tells the stage's barrier how many
/// bytes to wait for: the tile's, and `other_bytes` of copies the thread starts next.
template <StagedCaching Caching, class TOut, class... TIn, std::size_t... I>
__device__ __forceinline__ void issue_tile(unsigned char* stage, const std::size_t (&offsets)[sizeof...(TIn)],
                                           std::uint64_t* barrier, std::size_t first, std::size_t count,
                                           std::uint32_t other_bytes, cuda::std::index_sequence<I...>,
                                           const TIn*... in) {
  const GranuleWindow windows[] = {granule_window(in + first, count)...};
  expect_stage_bytes(barrier, other_bytes + (windows[I].bytes + ...));
  if constexpr (caching_has(Caching, StagedCaching::evict_last_in_flight)) {
    const std::uint64_t policy = evict_last_policy();
    const auto copy = [&](auto input) {
      constexpr std::size_t kInput = decltype(input)::value;
      constexpr std::size_t kMarked = evict_last_unit_bytes<kInput, TOut, TIn...>();
      const GranuleWindow& window = windows[kInput];
      if constexpr (kMarked == 0) {
        bulk_copy_to_shared(stage + offsets[kInput], window, barrier);
      } else {
        const GranuleWindow marked = marked_part<kMarked, kUnitLoadBytes<kInput, TOut, TIn...>>(window);
        const std::uint32_t unmarked_bytes = window.bytes - marked.bytes;
        if (unmarked_bytes != 0) bulk_copy_to_shared(stage + offsets[kInput], {window.begin, unmarked_bytes}, barrier);
        bulk_copy_to_shared(stage + offsets[kInput] + unmarked_bytes, marked, barrier, policy);
      }
    };
    (copy(cuda::std::integral_constant<std::size_t, I>{}), ...);
  } else {
    (bulk_copy_to_shared(stage + offsets[I], windows[I], barrier), ...);
  }
}

/// The most L2 lines a tile's granule window of any input touches.
template <std::size_t TileElements, class... TIn>
inline constexpr std::size_t kTileWindowLines =
    (TileElements * std::max({sizeof(TIn)...}) + 2 * kBulkCopyGranule + kL2LineBytes - 1) / kL2LineBytes + 1;

/// Once a tile has landed: the block's threads return its lines to normal L2 priority, if the
/// copies marked them evict-last; lines left marked would stay in the L2 set-aside for persisting
/// accesses, out of the next kernel's reach (TUNING.md#l2-evict-last-copies). With SkipIdle (calls
/// with broadcast operands, short of instruction issue), threads from kTileWindowLines on, which
/// have no line to release, skip the window arithmetic; other calls ran slower skipping it
/// (TUNING.md#broadcast-access).
template <int BlockThreads, std::size_t TileElements, bool SkipIdle, StagedCaching Caching, class TOut, class... TIn,
          std::size_t... I>
__device__ __forceinline__ void release_tile_lines(const StagedRange& range, std::size_t first, std::size_t count,
                                                   cuda::std::index_sequence<I...>, const TIn*... in) {
  if constexpr (caching_has(Caching, StagedCaching::evict_last_in_flight)) {
    constexpr std::size_t kLines = kTileWindowLines<TileElements, TIn...>;
    if constexpr (SkipIdle && kLines < static_cast<std::size_t>(BlockThreads)) {
      if (threadIdx.x >= kLines) return;
    }
    const auto release = [&](auto input, const auto* pointer) {
      constexpr std::size_t kInput = decltype(input)::value;
      constexpr std::size_t kMarked = evict_last_unit_bytes<kInput, TOut, TIn...>();
      if constexpr (kMarked != 0) {
        restore_normal_priority<BlockThreads>(
            marked_part<kMarked, kUnitLoadBytes<kInput, TOut, TIn...>>(granule_window(pointer + first, count)),
            reinterpret_cast<std::uintptr_t>(pointer), reinterpret_cast<std::uintptr_t>(pointer + range.n));
      }
    };
    (release(cuda::std::integral_constant<std::size_t, I>{}, in), ...);
  } else {
    (void)range, (void)first, (void)count, ((void)in, ...);
  }
}

/// Waits for the tile of `count` elements at element `first`, staged in `stage` (its barrier at
/// `phase`), and computes the thread's units of it. The broadcast values of the first
/// kPrefetchedBroadcastUnits units load while the copies are in flight, the rest after the wait, as
/// many units at a time.
template <int BlockThreads, int UnitsPerThread, StagedCaching Caching, class TOut, class Op, class Broadcasts,
          class... TIn>
__device__ __forceinline__ void wait_and_transform_tile(const Op& op, const Broadcasts& broadcasts,
                                                        const StagedRange& range, std::uint64_t* barrier,
                                                        std::uint32_t phase, const unsigned char* stage,
                                                        const std::size_t (&offsets)[sizeof...(TIn)],
                                                        const unsigned (&shifts)[sizeof...(TIn)], std::size_t first,
                                                        std::size_t count, TOut* out, const TIn*... in) {
  constexpr int kUnit = kUnitElements<TOut, TIn...>;
  constexpr std::size_t kTileElements = StagedTile<BlockThreads, UnitsPerThread, TOut, TIn...>::kElements;
  constexpr int kPrefetched = kPrefetchedBroadcastUnits<UnitsPerThread, Broadcasts, TOut, TIn...>;
  constexpr auto kInputs = cuda::std::index_sequence_for<TIn...>{};
  constexpr auto kOperands = cuda::std::make_index_sequence<cuda::std::tuple_size_v<Broadcasts>>{};
  UnitBroadcasts<kPrefetched, kUnit, Broadcasts> values;
  load_unit_broadcasts<BlockThreads>(values, broadcasts, 0, first, count);
  wait_stage_barrier(barrier, phase);
  release_tile_lines<BlockThreads, kTileElements, (cuda::std::tuple_size_v<Broadcasts> > 0), Caching, TOut>(
      range, first, count, kInputs, in...);
#pragma unroll
  for (int begin = 0; begin < UnitsPerThread; begin += kPrefetched) {
    if (begin > 0) load_unit_broadcasts<BlockThreads>(values, broadcasts, begin, first, count);
    transform_staged_units<BlockThreads, Caching, Op, TOut, TIn...>(op, stage, offsets, shifts, count, begin, values,
                                                                   out + first, kInputs, kOperands);
  }
}

/// The second half of a StagedLoop::two_rows tile: plain copies of `count` elements at element
/// `first` of each input into the second half of its staging buffer (the inputs are granule
/// aligned there, so the half lands whole). They are not marked evict-last: that lost on the H200
/// (TUNING.md#two-rows-per-tile).
template <std::size_t HalfElements, class... TIn, std::size_t... I>
__device__ __forceinline__ void issue_second_half(unsigned char* stage, const std::size_t (&offsets)[sizeof...(TIn)],
                                                  std::uint64_t* barrier, std::size_t first, std::size_t count,
                                                  cuda::std::index_sequence<I...>, const TIn*... in) {
  (bulk_copy_to_shared(stage + offsets[I] + HalfElements * sizeof(TIn), granule_window(in + first, count), barrier),
   ...);
}

/// Waits for a StagedLoop::two_rows tile, its halves at elements first0 (count0 elements) and
/// first1 (count1, 0 without a second half), and computes the thread's units of both: units
/// 0 .. UnitsPerThread/2 - 1 of the first half and the same units of the second, with the same
/// broadcast values, loaded once.
template <int BlockThreads, int UnitsPerThread, StagedCaching Caching, class TOut, class Op, class Broadcasts,
          class... TIn>
__device__ __forceinline__ void wait_and_transform_two_rows(const Op& op, const Broadcasts& broadcasts,
                                                            const StagedRange& range, std::uint64_t* barrier,
                                                            const unsigned char* stage,
                                                            const std::size_t (&offsets)[sizeof...(TIn)],
                                                            const unsigned (&shifts)[sizeof...(TIn)], std::size_t first0,
                                                            std::size_t count0, std::size_t first1, std::size_t count1,
                                                            TOut* out, const TIn*... in) {
  constexpr int kUnit = kUnitElements<TOut, TIn...>;
  constexpr int kHalfUnits = UnitsPerThread / 2;
  constexpr std::size_t kHalf = StagedTile<BlockThreads, UnitsPerThread, TOut, TIn...>::kElements / 2;
  constexpr int kPrefetched = kPrefetchedBroadcastUnits<UnitsPerThread, Broadcasts, TOut, TIn...>;
  constexpr int kChunk = kPrefetched < kHalfUnits ? kPrefetched : kHalfUnits;
  constexpr auto kInputs = cuda::std::index_sequence_for<TIn...>{};
  constexpr auto kOperands = cuda::std::make_index_sequence<cuda::std::tuple_size_v<Broadcasts>>{};
  UnitBroadcasts<kChunk, kUnit, Broadcasts> values;
  load_unit_broadcasts<BlockThreads>(values, broadcasts, 0, first0, count0);
  wait_stage_barrier(barrier, 0);
  release_tile_lines<BlockThreads, kHalf, true, Caching, TOut>(range, first0, count0, kInputs, in...);
#pragma unroll
  for (int begin = 0; begin < kHalfUnits; begin += kChunk) {
    if (begin > 0) load_unit_broadcasts<BlockThreads>(values, broadcasts, begin, first0, count0);
    transform_staged_units<BlockThreads, Caching, Op, TOut, TIn...>(op, stage, offsets, shifts, count0, begin, values,
                                                                   out + first0, kInputs, kOperands);
    // The second half's units are kHalf elements further into the stage; their outputs start at
    // first1, so the units index from first1 - kHalf.
    if (count1 != 0) {
      transform_staged_units<BlockThreads, Caching, Op, TOut, TIn...>(op, stage, offsets, shifts, kHalf + count1,
                                                                     kHalfUnits + begin, values, out + (first1 - kHalf),
                                                                     kInputs, kOperands);
    }
  }
}
#endif

/// Block 0's share: the scalar head [0, staged_begin) and tail [staged_end, n).
template <int BlockThreads, class Op, class Broadcasts, class TOut, class... TIn>
__device__ __forceinline__ void transform_scalar_ends(const Op& op, const StagedRange& range,
                                                      const Broadcasts& broadcasts, TOut* out, const TIn*... in) {
  const std::size_t head = range.staged_begin;
  const std::size_t leftovers = head + (range.n - range.staged_end);
  for (std::size_t t = threadIdx.x; t < leftovers; t += BlockThreads) {
    const std::size_t i = t < head ? t : range.staged_end + (t - head);
    out[i] = apply_broadcast_op<TOut>(op, i, broadcasts,
                                      cuda::std::make_index_sequence<cuda::std::tuple_size_v<Broadcasts>>{}, in[i]...);
  }
}

/// How a staged kernel walks the tiles.
enum class StagedLoop {
  one_tile,  ///< block b does tile b, with one stage: the grid has a block per tile
  ring,      ///< blocks take tiles with a grid stride, keeping up to `stages` in flight
  /// one-tile blocks whose tile is two half tiles range.halves_apart half tiles apart, one period
  /// of the broadcast values: the same columns of two rows, whose values are loaded once for both
  two_rows
};

/// out[i] = op(in[i]..., broadcast values for i...) for i in [0, range.n). Launched with BlockThreads threads and
/// StagedTile<...>::shared_memory_bytes(stages) bytes of dynamic shared memory: for
/// StagedLoop::one_tile with at least max(num_tiles, 1) blocks and one stage, for StagedLoop::ring
/// with any grid and 1 <= stages <= kMaxStages. The one-tile form is straight-line code (no loop,
/// no 64-bit division for the block's tile count), faster than the ring form with one stage
/// (TUNING.md#staged-kernel). StagedLoop::two_rows takes range.halves_apart >= 1, an even UnitsPerThread,
/// inputs on granule boundaries at range.staged_begin, broadcast values equal one half-tile
/// distance of halves_apart further on, and ceil(half tiles / (2 * halves_apart)) * halves_apart
/// blocks. Compiled for an architecture without the bulk-copy engine it still gives the same
/// results, one element per thread and step (the dispatch layer does not choose it there).
template <int BlockThreads, int UnitsPerThread, StagedLoop Loop, StagedCaching Caching, class Op, class Broadcasts,
          class TOut, class... TIn>
__global__ void __launch_bounds__(BlockThreads)
    staged_transform_kernel(Op op, StagedRange range, int stages, Broadcasts broadcasts, TOut* out,
                            const TIn*... in) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using Tile = StagedTile<BlockThreads, UnitsPerThread, TOut, TIn...>;
  using Inputs = cuda::std::index_sequence_for<TIn...>;
  extern __shared__ __align__(128) unsigned char staging[];
  std::uint64_t* const barriers = reinterpret_cast<std::uint64_t*>(staging);
  unsigned char* const stages_base = staging + kStageBarrierBytes;

  std::size_t offsets[sizeof...(TIn)];
  buffer_offsets<Tile, TIn...>(offsets, Inputs{});
  // Each tile starts a whole number of granules after staged_begin, so every input's data sits at
  // the same shift inside its granule-aligned window in every tile.
  const unsigned shifts[] = {static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(in + range.staged_begin) %
                                                   kBulkCopyGranule)...};
  const auto tile_count = [&](std::size_t first) {
    return range.staged_end - first < Tile::kElements ? range.staged_end - first : Tile::kElements;
  };

  if constexpr (Loop == StagedLoop::one_tile) {
    (void)stages;
    const bool has_tile = blockIdx.x < range.num_tiles;
    const std::size_t first = range.staged_begin + static_cast<std::size_t>(blockIdx.x) * Tile::kElements;
    if (threadIdx.x == 0 && has_tile) {
      init_stage_barrier(&barriers[0]);
      issue_tile<Caching, TOut>(stages_base, offsets, &barriers[0], first, tile_count(first), 0, Inputs{}, in...);
    }
    __syncthreads();  // the barrier is initialised before anyone waits on it
    if (blockIdx.x == 0) transform_scalar_ends<BlockThreads>(op, range, broadcasts, out, in...);  // while the tile is in flight
    if (!has_tile) return;
    wait_and_transform_tile<BlockThreads, UnitsPerThread, Caching>(op, broadcasts, range, &barriers[0], 0, stages_base,
                                                                   offsets, shifts, first, tile_count(first), out, in...);
  } else if constexpr (Loop == StagedLoop::two_rows) {
    (void)stages;
    // Block b takes half tiles lead and lead + apart, lead running through the first `apart` half
    // tiles of every 2 * apart: each half tile once, the grid rounded up to whole groups.
    constexpr std::size_t kHalf = Tile::kElements / 2;
    const std::size_t apart = range.halves_apart;
    const std::size_t halves = (range.staged_end - range.staged_begin + kHalf - 1) / kHalf;
    const std::size_t lead = blockIdx.x / apart * (2 * apart) + blockIdx.x % apart;
    const bool has_tile = lead < halves;
    const std::size_t first0 = range.staged_begin + lead * kHalf, first1 = first0 + apart * kHalf;
    const auto half_count = [&](std::size_t first) {
      return range.staged_end - first < kHalf ? range.staged_end - first : kHalf;
    };
    const std::size_t count0 = has_tile ? half_count(first0) : 0;
    const std::size_t count1 = lead + apart < halves ? half_count(first1) : 0;
    if (threadIdx.x == 0 && has_tile) {
      init_stage_barrier(&barriers[0]);
      std::uint32_t second_bytes = 0;
      if (count1 != 0) second_bytes = (granule_window(in + first1, count1).bytes + ...);
      issue_tile<Caching, TOut>(stages_base, offsets, &barriers[0], first0, count0, second_bytes, Inputs{}, in...);
      if (count1 != 0) issue_second_half<kHalf>(stages_base, offsets, &barriers[0], first1, count1, Inputs{}, in...);
    }
    __syncthreads();  // the barrier is initialised before anyone waits on it
    if (blockIdx.x == 0) transform_scalar_ends<BlockThreads>(op, range, broadcasts, out, in...);  // while the tile is in flight
    if (!has_tile) return;
    wait_and_transform_two_rows<BlockThreads, UnitsPerThread, Caching>(op, broadcasts, range, &barriers[0], stages_base,
                                                                      offsets, shifts, first0, count0, first1, count1,
                                                                      out, in...);
  } else {
    const std::size_t stride = gridDim.x;
    const std::size_t my_tiles =
        blockIdx.x < range.num_tiles ? (range.num_tiles - 1 - blockIdx.x) / stride + 1 : 0;
    const auto tile_first = [&](std::size_t k) { return range.staged_begin + (blockIdx.x + k * stride) * Tile::kElements; };
    const std::size_t stage_count = static_cast<std::size_t>(stages);

    if (threadIdx.x == 0) {
      for (int s = 0; s < stages; ++s) init_stage_barrier(&barriers[s]);
      for (std::size_t k = 0; k < stage_count && k < my_tiles; ++k) {
        const std::size_t first = tile_first(k);
        issue_tile<Caching, TOut>(stages_base + k * Tile::kStageBytes, offsets, &barriers[k], first,
                                  tile_count(first), 0, Inputs{}, in...);
      }
    }
    __syncthreads();  // the barriers are initialised before anyone waits on them
    if (blockIdx.x == 0) transform_scalar_ends<BlockThreads>(op, range, broadcasts, out, in...);  // while the first tiles fly

    std::size_t stage = 0;
    std::uint32_t phase = 0;
    for (std::size_t k = 0; k < my_tiles; ++k) {
      const std::size_t first = tile_first(k);
      unsigned char* const stage_data = stages_base + stage * Tile::kStageBytes;
      wait_and_transform_tile<BlockThreads, UnitsPerThread, Caching>(op, broadcasts, range, &barriers[stage], phase,
                                                                     stage_data, offsets, shifts, first,
                                                                     tile_count(first), out, in...);
      __syncthreads();  // every thread is done reading this stage before it is refilled
      if (threadIdx.x == 0 && k + stage_count < my_tiles) {
        order_reads_before_bulk_copy();
        const std::size_t next = tile_first(k + stage_count);
        issue_tile<Caching, TOut>(stage_data, offsets, &barriers[stage], next, tile_count(next), 0, Inputs{}, in...);
      }
      if (++stage == stage_count) {
        stage = 0;
        phase ^= 1u;
      }
    }
  }
#else
  (void)stages;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * BlockThreads;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * BlockThreads + threadIdx.x; i < range.n; i += stride) {
    out[i] = apply_broadcast_op<TOut>(op, i, broadcasts,
                                      cuda::std::make_index_sequence<cuda::std::tuple_size_v<Broadcasts>>{}, in[i]...);
  }
#endif
}

}  // namespace detail
}  // namespace hardact
