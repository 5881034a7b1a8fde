/// @file dispatch_summed.cuh
/// @brief The summing path's dispatch: a transform call whose output is an OutputWithSums
///        (types/output_with_sums.cuh) is checked, laid out from its shape alone (summed_layout:
///        which form, how many partial sums), given the widest vector its pointers allow, and
///        launched on kernel/summed_transform_kernel.cuh. Nothing here synchronises or allocates.
#pragma once

#include <hardact/dispatch/dependent_launch.cuh>
#include <hardact/dispatch/device_properties.cuh>
#include <hardact/dispatch/dispatch_transform.cuh>
#include <hardact/dispatch/prepare_operands.cuh>
#include <hardact/dispatch/test_overrides.cuh>
#include <hardact/kernel/summed_transform_kernel.cuh>
#include <hardact/kernel/tuning.cuh>
#include <hardact/policy/validity.cuh>
#include <hardact/types/output_with_sums.cuh>

#include <cuda/std/tuple>
#include <cuda/std/type_traits>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace hardact {
namespace detail {

inline std::size_t greatest_common_divisor(std::size_t a, std::size_t b) {
  while (b != 0) {
    const std::size_t r = a % b;
    a = b;
    b = r;
  }
  return a;
}

/// Lays a well-formed call of n >= 1 elements out: false when n is not a whole number of spans.
/// Rows (inner 1) take chunks of at least one round of kSummedVectorsInFlight vectors a thread of
/// the rows form at the output's 16-byte width (`nominal_width` elements), kSummedChunkElements
/// elements and kSummedLeastChunkRows rows (so that the partial sums stay a few percent of the
/// bytes), whole numbers of groups at every width up to 16, and at most kSummedMostChunks per
/// span; runs (inner > 1) give one partial sum per run. Shape and output type only: the same call
/// needs the same temporary storage on every device (a launch may then use fewer chunks:
/// fit_chunks_to_one_wave, plan_rows).
inline bool summed_layout(std::size_t n, std::size_t inner, std::size_t period, std::size_t span,
                          std::size_t nominal_width, SummedLayout& layout) {
  const std::size_t span_elements = span == 0 ? n : span;
  if (n % span_elements != 0 || span_elements % (inner * period) != 0) return false;
  layout = SummedLayout{};
  layout.n = n;
  layout.inner = inner;
  layout.period = period;
  layout.span = span_elements;
  layout.entries = period * (n / span_elements);
  if (inner == 1) {
    layout.rows_per_span = span_elements / period;
    const std::size_t threads = static_cast<std::size_t>(kSummedBlockThreads);
    const std::size_t group_rows = nominal_width / greatest_common_divisor(period, nominal_width);
    const std::size_t group_vectors = period * group_rows / nominal_width;
    const std::size_t lanes = group_vectors < threads ? threads / group_vectors : 1;
    const std::size_t whole = 16 / greatest_common_divisor(period, 16);  // rows of a group at width 16
    std::size_t rows = lanes * static_cast<std::size_t>(kSummedVectorsInFlight) * group_rows;
    rows = std::max({rows, (kSummedChunkElements + period - 1) / period, kSummedLeastChunkRows});
    rows = (rows + whole - 1) / whole * whole;
    std::size_t chunks = (layout.rows_per_span + rows - 1) / rows;
    if (chunks > kSummedMostChunks) {
      rows = ((layout.rows_per_span + kSummedMostChunks - 1) / kSummedMostChunks + whole - 1) / whole * whole;
      chunks = (layout.rows_per_span + rows - 1) / rows;
    }
    layout.rows_per_chunk = chunks > 1 ? rows : layout.rows_per_span;
    layout.parts = chunks;
  } else {
    layout.runs_per_span = span_elements / inner;
    layout.parts = layout.runs_per_span / period;
  }
  return true;
}

/// Refits the rows form's chunks (inner 1) to one wave of `resident_blocks` blocks (the device's
/// multiprocessors times the blocks the summing kernels' launch bounds keep resident) where the
/// shape's chunks would take more than one wave and a wave can hold a chunk of every span: as few
/// chunks a span as fill it. A part-filled second wave left most of the device idle for its
/// chunks' time (TUNING.md#summing-path). It only ever lowers the parts, so the temporary storage
/// that summed_layout sizes from the shape alone still holds the partial sums; the sums' order
/// then depends on the device's multiprocessor count too.
inline void fit_chunks_to_one_wave(SummedLayout& layout, std::size_t resident_blocks) {
  if (layout.inner != 1 || layout.parts <= 1) return;
  const std::size_t spans = layout.n / layout.span;
  const std::size_t chunks = resident_blocks / spans;
  if (chunks == 0 || chunks >= layout.parts) return;
  const std::size_t whole = 16 / greatest_common_divisor(layout.period, 16);  // rows of a group at width 16
  const std::size_t rows = ((layout.rows_per_span + chunks - 1) / chunks + whole - 1) / whole * whole;
  layout.parts = (layout.rows_per_span + rows - 1) / rows;
  layout.rows_per_chunk = layout.parts > 1 ? rows : layout.rows_per_span;
}

/// How the rows form cuts a call (inner 1) at one vector width: its layout (the shape's chunks, or
/// fewer) and a block's vector columns (its lanes: threads / columns).
struct RowsPlan {
  SummedLayout layout;
  std::size_t columns = 0;
};

/// The rows form's plan at `width` elements a vector and `threads` a block, on a device that holds
/// `resident_blocks` at once (TUNING.md#summing-path), counted in rounds (every lane of a block
/// loading kSummedVectorsInFlight vectors):
/// - chunked: blocks min(group vectors, threads) columns wide; the shape's chunks fit to one wave
///   (fit_chunks_to_one_wave), then whole rounds, the most that keep the parts, else the fewest
///   above (a last round for a few lanes held the block for a whole load);
/// - whole spans, where the width divides a row and a wave holds every span's blocks: a block
///   takes a span's rows across as few columns as let those blocks fill one wave, but
///   kSummedRowsLeastColumns or more; no partial sums.
/// Whole spans where they take no more rounds than the chunks' waves times rounds. A plan only
/// lowers the parts, so the shape's storage holds the partial sums. `refit` false
/// (summed_rows_plan_enabled): the shape's chunks and columns.
inline RowsPlan plan_rows(const SummedLayout& shape, std::size_t width, std::size_t threads,
                          std::size_t resident_blocks, bool refit) {
  const auto ceil_div = [](std::size_t a, std::size_t b) { return (a + b - 1) / b; };
  RowsPlan plan{shape, threads};
  const std::size_t period = shape.period;
  if (shape.inner != 1 || period > SIZE_MAX / width) return plan;  // rows_geometry refuses the last
  const std::size_t group = period / greatest_common_divisor(period, width) * width;
  if (shape.span % group != 0) return plan;  // rows_geometry refuses it
  const std::size_t group_vectors = group / width, group_rows = group / period;
  plan.columns = std::min(group_vectors, threads);
  if (!refit || resident_blocks == 0) return plan;
  fit_chunks_to_one_wave(plan.layout, resident_blocks);
  const std::size_t per_lane = static_cast<std::size_t>(kSummedVectorsInFlight);
  if (plan.layout.parts > 1) {  // whole rounds: the most that keep the parts, else the fewest above
    const std::size_t round_groups = threads / plan.columns * per_lane, groups_per_span = shape.span / group;
    const std::size_t groups = plan.layout.rows_per_chunk / group_rows;
    std::size_t whole = groups / round_groups * round_groups;
    if (whole == 0 || ceil_div(groups_per_span, whole) > plan.layout.parts) whole += round_groups;
    plan.layout.parts = ceil_div(groups_per_span, whole);
    plan.layout.rows_per_chunk = plan.layout.parts > 1 ? whole * group_rows : shape.rows_per_span;
  }
  if (group_rows != 1) return plan;
  const std::size_t spans = shape.n / shape.span;
  const std::size_t chunk_blocks = spans * plan.layout.parts * ceil_div(group_vectors, plan.columns);
  const std::size_t chunked_rounds = ceil_div(chunk_blocks, resident_blocks) *
                                     ceil_div(plan.layout.rows_per_chunk, threads / plan.columns * per_lane);
  const std::size_t wave_slices = resident_blocks / spans;
  if (wave_slices == 0) return plan;
  const std::size_t columns = std::min(
      std::max(ceil_div(group_vectors, std::min(group_vectors, wave_slices)),
               std::min(group_vectors, kSummedRowsLeastColumns)),
      threads);
  if (spans * ceil_div(group_vectors, columns) > resident_blocks) return plan;
  if (ceil_div(shape.rows_per_span, threads / columns * per_lane) <= chunked_rounds) {
    plan.layout.parts = 1;
    plan.layout.rows_per_chunk = shape.rows_per_span;
    plan.columns = columns;
  }
  return plan;
}

/// The width summed_layout lays a call out for: one 16-byte access of the output type.
template <class T>
inline constexpr std::size_t kNominalSummedWidth = sizeof(T) >= 16 ? 1 : 16 / sizeof(T);

/// Bytes of the partial sums of a call laid out as `layout`, accumulated in Acc: none when each
/// sum has one part.
template <class Acc>
std::size_t partial_sums_bytes(const SummedLayout& layout) {
  return layout.parts > 1 ? layout.entries * layout.parts * sizeof(Acc) : 0;
}

/// Bytes of temporary storage a summing call of n elements needs: its partial sums, when there is
/// more than one per sum; 0 otherwise, and for a malformed call (which the launcher refuses).
template <class T, class TSum>
std::size_t summed_temp_storage_bytes(const OutputWithSums<T, TSum>& output, std::size_t n) {
  SummedLayout layout;
  if (n == 0 || !is_well_formed(output) ||
      !summed_layout(n, output.inner, output.period, output.span, kNominalSummedWidth<T>, layout)) {
    return 0;
  }
  return partial_sums_bytes<accumulate_t<T>>(layout);
}

/// The rows form's geometry at `Width` with blocks of `columns` vector columns, or false where the
/// span is not whole groups or a block is narrower than a group without Width dividing the period.
template <int Width, int BlockThreads>
bool rows_geometry(const SummedLayout& layout, std::size_t columns, RowsGeometry& geometry) {
  const std::size_t width = static_cast<std::size_t>(Width);
  if (layout.period > SIZE_MAX / width) return false;
  const std::size_t group = layout.period / greatest_common_divisor(layout.period, width) * width;
  if (layout.span % group != 0) return false;
  const std::size_t group_vectors = group / width;
  const std::size_t threads = static_cast<std::size_t>(BlockThreads);
  if (columns == 0 || columns > threads || columns > group_vectors) return false;
  if (columns < group_vectors && layout.period % width != 0) return false;
  if (group_vectors > UINT32_MAX) return false;
  geometry.group_elements = group;
  geometry.group_vectors = static_cast<std::uint32_t>(group_vectors);
  geometry.columns = static_cast<std::uint32_t>(columns);
  geometry.lanes = static_cast<std::uint32_t>(threads / geometry.columns);
  geometry.slices = static_cast<std::uint32_t>((group_vectors + geometry.columns - 1) / geometry.columns);
  geometry.places = group / layout.period;
  geometry.groups_per_chunk = layout.rows_per_chunk * layout.period / group;
  geometry.groups_per_span = layout.span / group;
  geometry.blocks = layout.n / layout.span * layout.parts * geometry.slices;
  geometry.slice_of = FastDivmod::make(geometry.slices);
  geometry.chunk_of = FastDivmod::make(layout.parts);
  return true;
}

/// Whether every broadcast operand gives a thread of the rows form the same values in every group:
/// a run of one element (inner 1) whose period divides a group, and, for a SampleBroadcast, whose
/// span is whole spans of the call (one span per block). Those values are then loaded once per
/// thread (TUNING.md#summing-path).
template <class... D>
bool hoisted_in_rows(const cuda::std::tuple<D...>& broadcasts, std::size_t group_elements, std::size_t span) {
  bool hoisted = true;
  cuda::std::apply(
      [&](const D&... b) {
        ((hoisted = hoisted && b.inner.divisor == 1 && group_elements % b.period.divisor == 0 &&
                    (!D::kSpanned || b.span_length() % span == 0)),
         ...);
      },
      broadcasts);
  return hoisted;
}

/// Whether every broadcast operand has one value for each run of `inner` elements: runs of whole
/// multiples of inner. Those values are then loaded once per run.
template <class... D>
bool hoisted_in_runs(const cuda::std::tuple<D...>& broadcasts, std::size_t inner) {
  bool hoisted = true;
  cuda::std::apply([&](const D&... b) { ((hoisted = hoisted && b.inner.divisor % inner == 0), ...); }, broadcasts);
  return hoisted;
}

template <int Width, class... T>
bool all_vector_aligned(const T*... pointers) {
  return ((address_of(pointers) % kVectorAlignment<T, Width> == 0) && ...);
}

/// Where a summing kernel is launched: the call's stream and its grid, capped by the device.
inline cudaLaunchConfig_t summed_launch_config(std::size_t blocks, int threads, const DeviceProperties& device,
                                               cudaStream_t stream) {
  const std::size_t max_blocks = static_cast<std::size_t>(device.max_grid_dim_x);
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned int>(blocks < max_blocks ? blocks : max_blocks));
  config.blockDim = dim3(static_cast<unsigned int>(threads));
  config.stream = stream;
  return config;
}

/// The rows form (inner 1) at `Width`, the widest the pointers and the layout allow, or else at
/// width 1; values hoisted where every broadcast allows it, or else at width 1 without (the
/// instantiations a call costs: TUNING.md#build-time). Width 1 always fits a well-formed call
/// whose groups fit a 32-bit count. `layout`: the shape's; on launch, the plan's (plan_rows), whose
/// parts the partial sums then have.
template <int Width, class Op, class Broadcasts, class Acc, class TSum, class TOut, class... TIn>
cudaError_t launch_summed_rows(const Op& op, SummedLayout& layout, const DeviceProperties& device,
                               cudaStream_t stream, const Broadcasts& broadcasts, SumSink<Acc, TSum> sink,
                               TOut* out, const TIn*... in) {
  constexpr int kThreads = kSummedBlockThreads;
  constexpr bool kHasBroadcasts = cuda::std::tuple_size_v<Broadcasts> > 0;
  const std::size_t resident_blocks =
      static_cast<std::size_t>(device.multiprocessor_count) * static_cast<std::size_t>(kSummedMinBlocks);
  const RowsPlan plan = plan_rows(layout, static_cast<std::size_t>(Width), static_cast<std::size_t>(kThreads),
                                  resident_blocks, summed_rows_plan_enabled());
  RowsGeometry geometry{};
  const bool fits = rows_geometry<Width, kThreads>(plan.layout, plan.columns, geometry);
  const Broadcasts located = with_access<Width>(broadcasts, 0);
  const bool hoisted = kHasBroadcasts && fits && hoisted_in_rows(located, geometry.group_elements, layout.span);
  const auto launch = [&](auto kernel) {
    layout = plan.layout;
    sink.parts = layout.parts;
    const cudaLaunchConfig_t config = summed_launch_config(geometry.blocks, kThreads, device, stream);
    return cudaLaunchKernelEx(&config, kernel, op, layout, geometry, located, sink, out, in...);
  };
  if constexpr (Width > 1) {
    const bool aligned = all_vector_aligned<Width>(static_cast<const TOut*>(out), in...);
    if (aligned && fits && (hoisted || !kHasBroadcasts)) {
      return launch(summed_rows_kernel<kThreads, Width, kHasBroadcasts, Op, Broadcasts, Acc, TSum, TOut, TIn...>);
    }
    return launch_summed_rows<1>(op, layout, device, stream, broadcasts, sink, out, in...);
  } else {
    if (!fits) return cudaErrorInvalidValue;
    if constexpr (kHasBroadcasts) {
      if (hoisted) return launch(summed_rows_kernel<kThreads, 1, true, Op, Broadcasts, Acc, TSum, TOut, TIn...>);
    }
    return launch(summed_rows_kernel<kThreads, 1, false, Op, Broadcasts, Acc, TSum, TOut, TIn...>);
  }
}

/// log2 of the lanes of a runs-form team for runs of `vectors_per_run` vectors: the most, a power of
/// two up to a warp, that still give every lane kSummedRunsLeastLaneVectors vectors of its run (one
/// lane for shorter runs). Wider teams, one round of loads across the team, spent the shuffles,
/// the sum's bookkeeping and the round's idle slots on fewer elements a lane, and their kernels ran
/// short of issue slots (TUNING.md#summing-path).
inline std::uint32_t runs_team_shift(std::size_t vectors_per_run) {
  std::uint32_t team_shift = 0;
  while (team_shift < 5 && (std::size_t{2} << team_shift) * kSummedRunsLeastLaneVectors <= vectors_per_run) {
    ++team_shift;
  }
  return team_shift;
}

/// The runs form's geometry for teams of `team_shift` and the call's run count and divisors.
inline RunsGeometry runs_geometry(const SummedLayout& layout, std::uint32_t team_shift) {
  RunsGeometry geometry{};
  geometry.team_shift = team_shift;
  geometry.runs = layout.n / layout.inner;
  geometry.narrow = geometry.runs < kNarrowIndexLimit;
  geometry.runs_per_span = FastDivmod::make(layout.runs_per_span);
  geometry.period = FastDivmod::make(layout.period);
  return geometry;
}

/// The runs form (inner > 1) at the widest width from `Width` down that the pointers and the run
/// length allow (a run's length often allows only a narrower one: 196 bfloat16 elements, 4);
/// values hoisted where every broadcast allows it, or else at width 1 without.
template <int Width, class Op, class Broadcasts, class Acc, class TSum, class TOut, class... TIn>
cudaError_t launch_summed_runs(const Op& op, const SummedLayout& layout, const DeviceProperties& device,
                               cudaStream_t stream, const Broadcasts& broadcasts, const SumSink<Acc, TSum>& sink,
                               TOut* out, const TIn*... in) {
  constexpr int kThreads = kSummedBlockThreads;
  constexpr bool kHasBroadcasts = cuda::std::tuple_size_v<Broadcasts> > 0;
  const Broadcasts located = with_access<Width>(broadcasts, 0);
  const bool hoisted = kHasBroadcasts && hoisted_in_runs(located, layout.inner);
  const auto launch = [&](auto kernel) {
    const RunsGeometry geometry = runs_geometry(layout, runs_team_shift(layout.inner / static_cast<std::size_t>(Width)));
    const std::size_t runs_per_block = static_cast<std::size_t>(kThreads) >> geometry.team_shift;
    const cudaLaunchConfig_t config =
        summed_launch_config((geometry.runs + runs_per_block - 1) / runs_per_block, kThreads, device, stream);
    return cudaLaunchKernelEx(&config, kernel, op, layout, geometry, located, sink, out, in...);
  };
  if constexpr (Width > 1) {
    if (kHasBroadcasts && !hoisted) {
      return launch_summed_runs<1>(op, layout, device, stream, broadcasts, sink, out, in...);
    }
    const bool aligned = all_vector_aligned<Width>(static_cast<const TOut*>(out), in...);
    if (!aligned || layout.inner % static_cast<std::size_t>(Width) != 0) {
      return launch_summed_runs<Width / 2>(op, layout, device, stream, broadcasts, sink, out, in...);
    }
    return launch(summed_runs_kernel<kThreads, Width, kHasBroadcasts, Op, Broadcasts, Acc, TSum, TOut, TIn...>);
  } else {
    if constexpr (kHasBroadcasts) {
      if (hoisted) return launch(summed_runs_kernel<kThreads, 1, true, Op, Broadcasts, Acc, TSum, TOut, TIn...>);
    }
    return launch(summed_runs_kernel<kThreads, 1, false, Op, Broadcasts, Acc, TSum, TOut, TIn...>);
  }
}

/// Runs per tile of the tiles form at `Width`: as many as fill kSummedVectorsInFlight vectors a
/// thread, a multiple that makes the tile whole vectors; 0 where the form does not take the call
/// (runs of at least one vector and fewer than kSummedTilesMostRunVectors, not whole vectors;
/// summed_tiles_enabled).
template <int Width>
std::size_t runs_per_tile(const SummedLayout& layout) {
  const std::size_t width = static_cast<std::size_t>(Width);
  if (!summed_tiles_enabled() || Width == 1 || layout.inner < width || layout.inner % width == 0 ||
      layout.inner >= kSummedTilesMostRunVectors * width) {
    return 0;
  }
  const std::size_t tile_elements = static_cast<std::size_t>(kSummedBlockThreads) * kSummedVectorsInFlight * width;
  const std::size_t multiple = width / greatest_common_divisor(layout.inner, width);
  return tile_elements / layout.inner / multiple * multiple;
}

/// The tiles form (short NCHW runs that are not whole vectors: runs_per_tile) at `Width`, or the
/// runs form where it does not apply, or the pointers are not aligned to Width, or a broadcast
/// has more than one value a run.
template <int Width, class Op, class Broadcasts, class Acc, class TSum, class TOut, class... TIn>
cudaError_t launch_summed_tiles_or_runs(const Op& op, const SummedLayout& layout, const DeviceProperties& device,
                                        cudaStream_t stream, const Broadcasts& broadcasts,
                                        const SumSink<Acc, TSum>& sink, TOut* out, const TIn*... in) {
  if constexpr (Width > 1) {
    constexpr int kThreads = kSummedBlockThreads;
    const std::size_t tile_runs = runs_per_tile<Width>(layout);
    if (tile_runs > 0 && all_vector_aligned<Width>(static_cast<const TOut*>(out), in...)) {
      const Broadcasts located = with_access<1>(broadcasts, 0);
      if (cuda::std::tuple_size_v<Broadcasts> == 0 || hoisted_in_runs(located, layout.inner)) {
        TilesGeometry geometry{};
        geometry.runs = runs_geometry(layout, 0);
        geometry.tiles = (geometry.runs.runs + tile_runs - 1) / tile_runs;
        geometry.runs_per_tile = static_cast<std::uint32_t>(tile_runs);
        geometry.inner = static_cast<std::uint32_t>(layout.inner);
        geometry.run_of = FastDivmod::make(layout.inner);
        const cudaLaunchConfig_t config = summed_launch_config(geometry.tiles, kThreads, device, stream);
        return cudaLaunchKernelEx(&config,
                                  summed_tiles_kernel<kThreads, Width, Op, Broadcasts, Acc, TSum, TOut, TIn...>, op,
                                  layout, geometry, located, sink, out, in...);
      }
    }
  }
  return launch_summed_runs<Width>(op, layout, device, stream, broadcasts, sink, out, in...);
}

/// Launches the summing kernels (rows, tiles or runs), then adds the partial sums where there are several,
/// from compute capability 9.0 as a programmatic dependent launch (summed_dependent_launch_enabled).
template <int Width, class Op, class Broadcasts, class Acc, class TSum, class TOut, class... TIn>
cudaError_t launch_summed(const Op& op, SummedLayout layout, const DeviceProperties& device, cudaStream_t stream,
                          const Broadcasts& broadcasts, const SumSink<Acc, TSum>& sink, TOut* out, const TIn*... in) {
  const cudaError_t status =
      layout.inner == 1 ? launch_summed_rows<Width>(op, layout, device, stream, broadcasts, sink, out, in...)
                        : launch_summed_tiles_or_runs<Width>(op, layout, device, stream, broadcasts, sink, out, in...);
  if (status != cudaSuccess || layout.parts == 1) return status;
  const std::size_t sums_per_block = static_cast<std::size_t>(kSummedPartialsBlockThreads) /
                                     (layout.parts <= kSummedPartsPerThread ? 1 : 32);
  cudaLaunchConfig_t config = summed_launch_config((layout.entries + sums_per_block - 1) / sums_per_block,
                                                   kSummedPartialsBlockThreads, device, stream);
  cudaLaunchAttribute dependent{};
  if (summed_dependent_launch_enabled()) make_dependent_launch(config, dependent, device.compute_capability_major);
  return cudaLaunchKernelEx(&config, sum_partials_kernel<Acc, TSum>, static_cast<const Acc*>(sink.partials),
                            layout.parts, layout.entries, sink.scale, sink.sums);
}

/// The launch contract of a summing call with full-length inputs `in` and prepared `broadcasts`:
/// dispatch_transform's checks, then the sums' (a malformed OutputWithSums whatever n; for n >= 1
/// a whole number of spans, usable sums clear of every array, enough temporary storage), then
/// the launch.
template <int RequestedWidth, class Op, class Broadcasts, class TOut, class TSum, class... TIn>
cudaError_t dispatch_summed(const Op& op, std::size_t n, cudaStream_t stream, const Broadcasts& broadcasts,
                            const OutputWithSums<TOut, TSum>& output, const TIn*... in) {
  static_assert(full_length_types_are_valid<TOut, TIn...>());
  static_assert(!cuda::std::is_const_v<TSum>, "hardact: the sums must not be const");
  using Acc = accumulate_t<TOut>;
  constexpr int kWidth = VectorWidth<RequestedWidth, TOut, TIn...>::value;

  if (!policy_is_valid(op) || !is_well_formed(output)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  SummedLayout layout;
  if (!summed_layout(n, output.inner, output.period, output.span, kNominalSummedWidth<TOut>, layout)) {
    return cudaErrorInvalidValue;
  }
  TOut* const out = output.values;
  if (const cudaError_t refused = check_full_length_arrays(out, n, in...); refused != cudaSuccess) return refused;
  if (!is_usable_range(output.sums, layout.entries) || ranges_overlap(output.sums, layout.entries, out, n) ||
      (ranges_overlap(output.sums, layout.entries, in, n) || ...)) {
    return cudaErrorInvalidValue;
  }
  const std::size_t temp_bytes = partial_sums_bytes<Acc>(layout);
  if (temp_bytes > 0 && (output.temp_storage == nullptr || output.temp_storage_bytes < temp_bytes ||
                         address_of(output.temp_storage) % alignof(Acc) != 0)) {
    return cudaErrorInvalidValue;
  }
  DeviceProperties device;
  const cudaError_t status = current_device_properties(device);
  if (status != cudaSuccess) return status;
  const SumSink<Acc, TSum> sink{output.sums, static_cast<Acc*>(output.temp_storage), static_cast<Acc>(output.scale),
                                layout.entries, layout.parts};
  return launch_summed<kWidth>(op, layout, device, stream, broadcasts, sink, out, in...);
}

}  // namespace detail
}  // namespace hardact
