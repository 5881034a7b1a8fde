/// @file dispatch_transform.cuh
/// @brief Validates a transform call with an output pointer, picks the path (launch_shape.cuh),
///        the vector width and alignment, sizes the grid and launches direct_transform_kernel or
///        staged_transform_kernel. Nothing here synchronises or allocates. The launchers reach it
///        through dispatch_operands.cuh, which also routes a call with an OutputWithSums to
///        dispatch_summed.cuh; the checks every path shares are here.
///
/// Read top-down: the launch contract and path choice (dispatch_transform), then the direct
/// path's launch (head alignment, vector width, grid) and the staged path's (range, two-rows form,
/// grid). The constants are in kernel/tuning.cuh.
#pragma once

#include <hardact/dispatch/device_properties.cuh>
#include <hardact/dispatch/launch_shape.cuh>
#include <hardact/dispatch/prepare_operands.cuh>
#include <hardact/dispatch/test_overrides.cuh>
#include <hardact/kernel/device_broadcast.cuh>
#include <hardact/kernel/direct_transform_kernel.cuh>
#include <hardact/kernel/staged_transform_kernel.cuh>
#include <hardact/kernel/tuning.cuh>
#include <hardact/policy/validity.cuh>
#ifdef HARDACT_CHECK_POINTER_DEVICES  // opt-in pointer/device check, see pointer_check.cuh
#include <hardact/dispatch/pointer_check.cuh>
#endif

#include <cuda/std/tuple>
#include <cuda/std/type_traits>
#include <cuda/std/utility>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace hardact {
namespace detail {

// ---- Compile-time widths and the direct kernel's block shape ----

template <class... T>
inline constexpr std::size_t kMinElementSize = std::min({sizeof(T)...});
template <class... T>
inline constexpr std::size_t kMaxElementSize = std::max({sizeof(T)...});

/// Elements per vector access: `Requested`, or for 0 as many as fill one 16-byte access of the
/// narrowest element type. The readable compile-time errors for bad widths live here.
template <int Requested, class... T>
struct VectorWidth {
  static_assert(Requested >= 0 && (Requested & (Requested - 1)) == 0 && Requested <= 16,
                "hardact: VecWidth must be 0 (automatic) or a power of two: 1, 2, 4, 8 or 16");
  static_assert(Requested * kMinElementSize<T...> <= kMaxAccessBytes,
                "hardact: VecWidth * sizeof(element) must not exceed 16 bytes, the widest access "
                "(e.g. at most 4 for float, 2 for double, 8 for half and bfloat16)");
  static constexpr int automatic =
      kMinElementSize<T...> >= kMaxAccessBytes ? 1 : static_cast<int>(kMaxAccessBytes / kMinElementSize<T...>);
  static constexpr int value = Requested == 0 ? automatic : Requested;
};

/// Threads per block and bytes of the widest stream per thread of the direct kernel, by element
/// types and whether the call has broadcast operands (direct_block_threads in kernel/tuning.cuh;
/// TUNING.md#direct-block-shape).
template <class Broadcasts, class... T>
inline constexpr int kBlockThreads =
    direct_block_threads(kMaxElementSize<T...>, cuda::std::tuple_size_v<Broadcasts> > 0);
template <class Broadcasts, class... T>
inline constexpr int kBytesPerThread =
    direct_bytes_per_thread(kMaxElementSize<T...>, cuda::std::tuple_size_v<Broadcasts> > 0);

/// Vectors per thread that make up kBytesPerThread (at least one).
template <int Width, class Broadcasts, class... T>
inline constexpr int kVectorsPerThread =
    Width * kMaxElementSize<T...> >= static_cast<std::size_t>(kBytesPerThread<Broadcasts, T...>)
        ? 1
        : static_cast<int>(kBytesPerThread<Broadcasts, T...> / (Width * kMaxElementSize<T...>));

// ---- Declarations of what dispatch_transform calls, defined below in reading order ----

template <int Width, class... T>
int widest_aligned_width(const T*... pointers);
template <int Width, class Op, class Broadcasts, class TOut, class... TIn>
cudaError_t launch_widest_aligned(const Op& op, std::size_t n, const DeviceProperties& device, cudaStream_t stream,
                                  const Broadcasts& broadcasts, TOut* out, const TIn*... in);
template <int Units, int LeastUnits, StagedCaching Caching, class Op, class Broadcasts, class TOut, class... TIn>
cudaError_t launch_staged_units(const Op& op, std::size_t n, const StagedShape& shape, const DeviceProperties& device,
                                cudaStream_t stream, const Broadcasts& broadcasts, TOut* out, const TIn*... in);

// ---- The launch contract and the path ----

/// The element types' rules, shared by every path: at least one full-length input, a writable
/// output, trivially copyable elements.
template <class TOut, class... TIn>
constexpr bool full_length_types_are_valid() {
  static_assert(sizeof...(TIn) >= 1, "hardact: transform needs at least one full-length input");
  static_assert(!cuda::std::is_const_v<TOut>, "hardact: the output pointer must not point to const");
  static_assert(cuda::std::is_trivially_copyable_v<TOut> && (cuda::std::is_trivially_copyable_v<TIn> && ...),
                "hardact: element types must be trivially copyable");
  return true;
}

/// The pointer checks of a call of n >= 1 elements, shared by every path: cudaErrorInvalidValue for
/// a null or misaligned array or an output that overlaps an input other than exactly; with
/// HARDACT_CHECK_POINTER_DEVICES, also an array the current device cannot reach.
template <class TOut, class... TIn>
cudaError_t check_full_length_arrays(TOut* out, std::size_t n, const TIn*... in) {
  if (!is_usable_range(out, n) || !(is_usable_range(in, n) && ...)) return cudaErrorInvalidValue;
  if ((overlaps_unsafely(out, in, n) || ...)) return cudaErrorInvalidValue;
#ifdef HARDACT_CHECK_POINTER_DEVICES  // opt-in: refuse pointers the current device cannot reach
  if (const cudaError_t access = check_pointer_devices(out, in...); access != cudaSuccess) return access;
#endif
  return cudaSuccess;
}

/// The whole launch contract for full-length inputs: validate, then launch once on `stream`.
/// Returns cudaErrorInvalidValue, without touching the device, for an invalid policy (whatever n),
/// a null or misaligned pointer, or an unsafe overlap; otherwise n == 0 is a no-op that makes no
/// CUDA call. `broadcasts` (DeviceBroadcasts, validated by dispatch_split in dispatch_operands.cuh)
/// add their values after the full-length inputs' in each call to `op`. Picks the path
/// (launch_shape.cuh), then the staged launch or the widest aligned direct one.
template <int RequestedWidth, class Op, class Broadcasts, class TOut, class... TIn>
cudaError_t dispatch_transform(const Op& op, std::size_t n, cudaStream_t stream, const Broadcasts& broadcasts,
                               TOut* out, const TIn*... in) {
  static_assert(full_length_types_are_valid<TOut, TIn...>());
  constexpr int kWidth = VectorWidth<RequestedWidth, TOut, TIn...>::value;

  if (!policy_is_valid(op)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  if (const cudaError_t refused = check_full_length_arrays(out, n, in...); refused != cudaSuccess) return refused;
  DeviceProperties device;
  const cudaError_t status = current_device_properties(device);
  if (status != cudaSuccess) return status;
  if constexpr (RequestedWidth == 0) {
    constexpr std::size_t kBytesPerElement = (sizeof(TOut) + ... + sizeof(TIn));
    const std::size_t bytes = n <= SIZE_MAX / kBytesPerElement ? n * kBytesPerElement : SIZE_MAX;
    DirectAccess direct;
    // A broadcast call's crossover is the plain call's: its larger direct tiles did not catch the
    // staged path on the H200 (TUNING.md#direct-block-shape-with-broadcasts).
    direct.bytes_per_thread = kBytesPerThread<NoBroadcasts, TOut, TIn...>;
    direct.narrowest_access_bytes =
        static_cast<std::size_t>(widest_aligned_width<kWidth>(static_cast<const TOut*>(out), in...)) *
        kMinElementSize<TOut, TIn...>;
    if (staged_path_wanted(device, bytes, direct)) {
      constexpr StagedCaching kCaching = kStagedCaching<TOut, TIn...>;
      constexpr int kMostUnits = kStagedMostUnitsPerThread<Broadcasts, TOut, TIn...>;
      const StagedShape shape =
          staged_shape<TOut, TIn...>(device, staged_residency<kCaching, Op, Broadcasts, TOut, TIn...>(device),
                                     kStagedLeastUnitsPerThread<Broadcasts, TOut, TIn...>, kMostUnits);
      if (choose_path(device, bytes, direct, shape) == TransformPath::staged) {
        static_assert(kMostUnits == 2 || kMostUnits == 4, "hardact: dispatch one instantiation per unit count");
        return launch_staged_units<kMostUnits, kStagedLeastUnitsPerThread<Broadcasts, TOut, TIn...>, kCaching>(
            op, n, shape, device, stream, broadcasts, out, in...);
      }
    }
  }
  return launch_widest_aligned<kWidth>(op, n, device, stream, broadcasts, out, in...);
}

// ---- The direct path ----

/// Alignment targets for the head: a whole 128-byte L2 line for every pointer (each warp then touches
/// whole 32-byte sectors, so an offset such as x + 1 costs only the scalar head;
/// TUNING.md#line-aligned-head), or else each pointer's own vector alignment at `Width`.
struct LineAlignment {
  template <class T>
  static constexpr std::size_t bytes = kL2LineBytes;
};
template <int Width>
struct VectorAlignment {
  template <class T>
  static constexpr std::size_t bytes = kVectorAlignment<T, Width>;
};

/// Elements to skip so that `pointer` lands on its target alignment, or -1 if it never does.
template <class Target, class T>
int head_to_alignment(const T* pointer) {
  constexpr std::size_t kBytes = Target::template bytes<T>;
  const std::size_t gap = (kBytes - address_of(pointer) % kBytes) % kBytes;
  return gap % sizeof(T) == 0 ? static_cast<int>(gap / sizeof(T)) : -1;
}

template <class Target, class... T>
bool all_aligned_after(int head, const T*... pointers) {
  return head >= 0 && ((address_of(pointers + head) % Target::template bytes<T> == 0) && ...);
}

/// A head after which every pointer meets `Target`, or -1 when they are misaligned relative to each
/// other. Every valid head is congruent to the head of the pointer with the longest period, so
/// trying each pointer's own head finds one.
template <class Target, class... T>
int common_head(const T*... pointers) {
  int found = -1;
  const auto try_head = [&](int head) {
    if (found < 0 && all_aligned_after<Target>(head, pointers...)) found = head;
  };
  (try_head(head_to_alignment<Target>(pointers)), ...);
  return found;
}

/// Head (in elements) after which every pointer sits on its vector alignment at `Width`, preferring
/// one that puts them on whole lines; -1 if they are misaligned relative to each other at `Width`.
template <int Width, class... T>
int aligned_head(const T*... pointers) {
  const int line_head = common_head<LineAlignment>(pointers...);
  if (line_head >= 0) return line_head;
  return common_head<VectorAlignment<Width>>(pointers...);
}

/// The vector width launch_widest_aligned takes for these pointers.
template <int Width, class... T>
int widest_aligned_width(const T*... pointers) {
  if constexpr (Width == 1) {
    ((void)pointers, ...);
    return 1;
  } else {
    return aligned_head<Width>(pointers...) >= 0 ? Width : widest_aligned_width<Width / 2>(pointers...);
  }
}

/// The broadcast operands of a call whose vectors of Count elements start at element `begin`, with
/// their access chosen for those vectors (DeviceBroadcast::choose_access).
template <int Count, class... D>
cuda::std::tuple<D...> with_access(cuda::std::tuple<D...> broadcasts, std::size_t begin) {
  cuda::std::apply([&](D&... b) { (b.template choose_access<Count>(begin), ...); }, broadcasts);
  return broadcasts;
}

/// Whether vectors of Width / 2 elements from `begin`, still at least kHalfWidthLeastBytes, give
/// some broadcast operand one value a vector (run access) where vectors of Width step across its
/// runs' ends: a bfloat16 NCHW 14 x 14 plane is 49 vectors of 4, not whole vectors of 8
/// (TUNING.md#broadcast-access). No operand loses by it: what is a run or contiguous at Width
/// still is at Width / 2.
inline constexpr std::size_t kHalfWidthLeastBytes = 8;
template <int Width, std::size_t ElementBytes, class... D>
bool half_width_keeps_runs(const cuda::std::tuple<D...>& broadcasts, std::size_t begin) {
  if constexpr (sizeof...(D) == 0 || Width < 2 || (Width / 2) * ElementBytes < kHalfWidthLeastBytes) {
    (void)broadcasts, (void)begin;
    return false;
  } else {
    if (!direct_half_width_runs_enabled()) return false;
    const auto gains = [begin](auto at_width) {
      auto at_half_width = at_width;
      at_width.template choose_access<Width>(begin);
      at_half_width.template choose_access<Width / 2>(begin);
      return at_width.access == BroadcastAccess::general && at_half_width.access == BroadcastAccess::run;
    };
    return cuda::std::apply([&](const D&... operand) { return (gains(operand) || ...); }, broadcasts);
  }
}

/// Cuts [0, n) into head, vectors and tail, sizes the grid and launches.
template <int Width, class Op, class Broadcasts, class TOut, class... TIn>
cudaError_t launch_transform(const Op& op, std::size_t n, std::size_t head, const DeviceProperties& device,
                             cudaStream_t stream, const Broadcasts& broadcasts, TOut* out, const TIn*... in) {
  constexpr int kThreads = kBlockThreads<Broadcasts, TOut, TIn...>;
  constexpr int kPerThread = kVectorsPerThread<Width, Broadcasts, TOut, TIn...>;
  constexpr std::size_t kTileVectors = static_cast<std::size_t>(kThreads) * kPerThread;

  TransformRange range{};
  range.n = n;
  range.head = head < n ? head : n;
  range.num_vectors = (n - range.head) / Width;
  range.num_tiles = (range.num_vectors + kTileVectors - 1) / kTileVectors;

  // One tile per block, a single pass of short-lived blocks (TUNING.md#direct-block-shape); the
  // kernel loops over tiles only if the grid limit is reached.
  std::size_t blocks = range.num_tiles > 0 ? range.num_tiles : 1;
  if (blocks > static_cast<std::size_t>(device.max_grid_dim_x)) blocks = static_cast<std::size_t>(device.max_grid_dim_x);

  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned int>(blocks));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  return cudaLaunchKernelEx(&config, direct_transform_kernel<kThreads, Width, kPerThread, Op, Broadcasts, TOut, TIn...>,
                            op, range, with_access<Width>(broadcasts, range.head), out, in...);
}

/// Tries `Width`, then narrower widths, until one lets every pointer be vector-aligned after a
/// common head. Width 1 always succeeds.
template <int Width, class Op, class Broadcasts, class TOut, class... TIn>
cudaError_t launch_widest_aligned(const Op& op, std::size_t n, const DeviceProperties& device, cudaStream_t stream,
                                  const Broadcasts& broadcasts, TOut* out, const TIn*... in) {
  if constexpr (Width == 1) {
    // Any head is valid for single elements; whole lines still save sectors
    // (TUNING.md#line-aligned-head), so line up every pointer, or the output.
    int head = common_head<LineAlignment>(static_cast<const TOut*>(out), in...);
    if (head < 0) head = head_to_alignment<LineAlignment>(static_cast<const TOut*>(out));
    return launch_transform<1>(op, n, head < 0 ? 0 : static_cast<std::size_t>(head), device, stream, broadcasts, out,
                               in...);
  } else {
    const int head = aligned_head<Width>(static_cast<const TOut*>(out), in...);
    if (head >= 0) {
      const std::size_t begin = static_cast<std::size_t>(head);
      if (half_width_keeps_runs<Width, kMinElementSize<TOut, TIn...>>(broadcasts, begin)) {
        return launch_transform<Width / 2>(op, n, begin, device, stream, broadcasts, out, in...);
      }
      return launch_transform<Width>(op, n, begin, device, stream, broadcasts, out, in...);
    }
    return launch_widest_aligned<Width / 2>(op, n, device, stream, broadcasts, out, in...);
  }
}

// ---- The staged path ----

/// Elements before `pointer` reaches a 16-byte granule boundary, and elements after the last
/// boundary at or before pointer + n: the ends a bulk copy must leave to plain loads.
template <class T>
std::size_t elements_before_granule(const T* pointer) {
  const std::size_t gap = (kBulkCopyGranule - address_of(pointer) % kBulkCopyGranule) % kBulkCopyGranule;
  return gap / sizeof(T);
}
template <class T>
std::size_t elements_after_granule(const T* pointer, std::size_t n) {
  return (address_of(pointer + n) % kBulkCopyGranule) / sizeof(T);
}

/// Cuts [0, n) for the staged kernel: the staged range begins where the output is on a
/// kStagedBoundaryBytes boundary (every tile's copies and stores then start on one;
/// TUNING.md#staged-boundary) and every input's granules are inside its array, and ends on a whole
/// unit before any input's last partial granule. Block 0 does the head while its tile is in flight.
template <class Tile, class TOut, class... TIn>
StagedRange staged_range(std::size_t n, const TOut* out, const TIn*... in) {
  StagedRange range{n, n, n, 0};
  std::size_t begin = 0, end = n;
  ((begin = std::max(begin, elements_before_granule(in))), ...);
  ((end = std::min(end, n - std::min(n, elements_after_granule(in, n)))), ...);
  if (begin >= end) return range;
  constexpr std::size_t kBoundary = kStagedBoundaryBytes;
  begin += ((kBoundary - address_of(out + begin) % kBoundary) % kBoundary) / sizeof(TOut);
  if (begin >= end) return range;
  const std::size_t units = (end - begin) / Tile::kUnit;
  if (units == 0) return range;
  range.staged_begin = begin;
  range.staged_end = begin + units * Tile::kUnit;
  range.num_tiles = (range.staged_end - begin + Tile::kElements - 1) / Tile::kElements;
  return range;
}

/// Broadcast operands StagedLoop::two_rows can take (compile time): Broadcasts, not
/// SampleBroadcasts, at least one.
template <class Broadcasts>
inline constexpr bool kTwoRowsBroadcasts = false;
template <class... D>
inline constexpr bool kTwoRowsBroadcasts<cuda::std::tuple<D...>> = sizeof...(D) > 0 && (!D::kSpanned && ...);

/// Blocks of a StagedLoop::two_rows grid whose tiles' halves are `apart` half tiles apart: every
/// group of 2 * apart half tiles of the staged range, the last one rounded up, takes apart blocks.
template <class Tile>
std::size_t two_rows_blocks(const StagedRange& range, std::size_t apart) {
  constexpr std::size_t kHalf = Tile::kElements / 2;
  const std::size_t halves = (range.staged_end - range.staged_begin + kHalf - 1) / kHalf;
  return (halves + 2 * apart - 1) / (2 * apart) * apart;
}

/// Half tiles between the two halves of a StagedLoop::two_rows tile for this call, or 0 where it
/// does not take that form. It takes it on devices whose DRAM is fast for their multiprocessors
/// (kTwoRowsMinBandwidthPerMultiprocessor), where every broadcast operand is a run of one element
/// (inner 1, a bias over the last dimension) of one period of at least a tile (so a tile's values
/// are not the L1 hits of its neighbours'), the period is whole half tiles, the call has two
/// periods or more, and every input is on a granule boundary where the staged range starts.
/// Loading the values once for two rows halves their reads from L2 (TUNING.md#two-rows-per-tile).
template <class Tile, class... D, class... TIn>
std::size_t two_rows_halves_apart(const DeviceProperties& device, const cuda::std::tuple<D...>& broadcasts,
                                  const StagedRange& range, std::size_t max_blocks, const TIn*... in) {
  const int forced = forced_staged_two_rows();
  if (forced < 0 || range.num_tiles == 0) return 0;
  if (forced == 0) {
    const int sms = device.multiprocessor_count > 0 ? device.multiprocessor_count : 1;
    if (device.peak_memory_bandwidth / sms < kTwoRowsMinBandwidthPerMultiprocessor) return 0;
  }
  constexpr std::size_t kHalf = Tile::kElements / 2;
  const std::size_t period = cuda::std::get<0>(broadcasts).period.divisor;
  bool same_runs = true;
  cuda::std::apply([&](const D&... b) { ((same_runs = same_runs && b.inner.divisor == 1 && b.period.divisor == period), ...); },
                   broadcasts);
  if (!same_runs || period % kHalf != 0 || (forced == 0 && period < Tile::kElements)) return 0;
  if (!((address_of(in + range.staged_begin) % kBulkCopyGranule == 0) && ...)) return 0;
  const std::size_t apart = period / kHalf;
  if (range.staged_end - range.staged_begin <= (2 * apart - 1) * kHalf) return 0;  // under two periods
  return two_rows_blocks<Tile>(range, apart) <= max_blocks ? apart : 0;
}

/// Launches the staged kernel with `shape` (stages >= 1): a block per tile (the straight-line
/// one-tile form, or its two-rows form where two_rows_halves_apart finds one) when the shape asks
/// for one tile and one stage per block and the grid can hold every tile; otherwise the ring form,
/// as a grid of blocks of `tiles_per_block` tiles each, or a persistent grid of as many blocks as
/// the shape keeps resident.
template <int UnitsPerThread, StagedCaching Caching, int RequestedBlockThreads = 0, class Op, class Broadcasts,
          class TOut, class... TIn>
cudaError_t launch_staged(const Op& op, std::size_t n, const StagedShape& shape, const DeviceProperties& device,
                          cudaStream_t stream, const Broadcasts& broadcasts, TOut* out, const TIn*... in) {
  // 0 asks for the rule's block size (launch_shape.cuh); the tuning harness passes others.
  constexpr int BlockThreads = RequestedBlockThreads > 0 ? RequestedBlockThreads : kStagedBlockThreads<TOut, TIn...>;
  using Tile = StagedTile<BlockThreads, UnitsPerThread, TOut, TIn...>;
  const StagedRange range = staged_range<Tile>(n, static_cast<const TOut*>(out), in...);
  const Broadcasts located = with_access<static_cast<int>(Tile::kUnit)>(broadcasts, range.staged_begin);
  const std::size_t max_blocks = static_cast<std::size_t>(device.max_grid_dim_x);
  cudaLaunchConfig_t config{};
  config.blockDim = dim3(BlockThreads);
  config.dynamicSmemBytes = Tile::shared_memory_bytes(shape.stages);
  config.stream = stream;
  if (shape.tiles_per_block == 1 && shape.stages == 1 && range.num_tiles <= max_blocks) {
    if constexpr (kTwoRowsBroadcasts<Broadcasts> && UnitsPerThread % 2 == 0) {
      StagedRange rows = range;
      rows.halves_apart = two_rows_halves_apart<Tile>(device, located, range, max_blocks, in...);
      if (rows.halves_apart > 0) {
        config.gridDim = dim3(static_cast<unsigned int>(two_rows_blocks<Tile>(range, rows.halves_apart)));
        return cudaLaunchKernelEx(&config,
                                  staged_transform_kernel<BlockThreads, UnitsPerThread, StagedLoop::two_rows, Caching, Op,
                                                          Broadcasts, TOut, TIn...>,
                                  op, rows, shape.stages, located, out, in...);
      }
    }
    config.gridDim = dim3(static_cast<unsigned int>(std::max<std::size_t>(range.num_tiles, 1)));  // block 0 does the ends
    return cudaLaunchKernelEx(
        &config,
        staged_transform_kernel<BlockThreads, UnitsPerThread, StagedLoop::one_tile, Caching, Op, Broadcasts, TOut, TIn...>,
        op, range, shape.stages, located, out, in...);
  }
  std::size_t blocks = 0;
  if (shape.tiles_per_block > 0) {
    const std::size_t per_block = static_cast<std::size_t>(shape.tiles_per_block);
    blocks = (range.num_tiles + per_block - 1) / per_block;
  } else {
    const std::size_t sms = static_cast<std::size_t>(device.multiprocessor_count > 0 ? device.multiprocessor_count : 1);
    blocks = std::min(range.num_tiles, static_cast<std::size_t>(shape.blocks_per_multiprocessor) * sms);
  }
  blocks = std::min(blocks, max_blocks);  // the ring form loops past it
  if (blocks == 0) blocks = 1;            // block 0 still does the scalar ends
  config.gridDim = dim3(static_cast<unsigned int>(blocks));
  return cudaLaunchKernelEx(
      &config,
      staged_transform_kernel<BlockThreads, UnitsPerThread, StagedLoop::ring, Caching, Op, Broadcasts, TOut, TIn...>, op,
      range, shape.stages, located, out, in...);
}

/// launch_staged with shape.units_per_thread units: Units, halved down to LeastUnits. Counts below
/// the call's least are never chosen (staged_shape), so no kernel is instantiated for them.
template <int Units, int LeastUnits, StagedCaching Caching, class Op, class Broadcasts, class TOut, class... TIn>
cudaError_t launch_staged_units(const Op& op, std::size_t n, const StagedShape& shape, const DeviceProperties& device,
                                cudaStream_t stream, const Broadcasts& broadcasts, TOut* out, const TIn*... in) {
  if constexpr (Units > LeastUnits) {
    if (shape.units_per_thread < Units) {
      return launch_staged_units<Units / 2, LeastUnits, Caching>(op, n, shape, device, stream, broadcasts, out, in...);
    }
  }
  return launch_staged<Units, Caching>(op, n, shape, device, stream, broadcasts, out, in...);
}

}  // namespace detail
}  // namespace hardact
