/// @file summed_transform_kernel.cuh
/// @brief The summing path: out[i] = op(in_0[i], ...) as the other kernels compute it, and the
///        written values summed per channel in the same pass (an OutputWithSums, operand.cuh).
///
/// Every sum is owned by a fixed set of threads in a fixed order, so the result does not depend
/// on timing. Three forms (dispatch/dispatch_summed.cuh picks one):
/// - rows (inner 1: channels-last, a row-major [rows, C] array): a block takes a chunk of rows of
///   one span; each thread always reads the same channels, since its stride is a whole number of
///   rows; the block adds its threads' sums in shared memory.
/// - runs (inner > 1: NCHW): a team of lanes takes one run of `inner` elements, one sum, and adds
///   its lanes' sums with shuffles.
/// - tiles (short NCHW runs that are not whole vectors, a 7 x 7 plane): a block reads a tile of
///   whole runs at full width; each vector leaves its sums in shared memory, one thread a run adds them.
/// A sum gathered from more than one chunk (or run) is written as partial sums, which
/// sum_partials_kernel adds in order.
#pragma once

#include <hardact/kernel/apply_op.cuh>
#include <hardact/kernel/dependent_launch.cuh>
#include <hardact/kernel/device_broadcast.cuh>
#include <hardact/kernel/tuning.cuh>
#include <hardact/kernel/value_array.cuh>
#include <hardact/kernel/vector_access.cuh>
#include <hardact/numeric/conversions.cuh>
#include <hardact/numeric/fast_divmod.cuh>

#include <cuda/std/tuple>
#include <cuda/std/type_traits>
#include <cuda/std/utility>

#include <cstddef>
#include <cstdint>

namespace hardact {
namespace detail {

/// Sums accumulate in float, or double when the values are double.
template <class T>
using accumulate_t = cuda::std::conditional_t<cuda::std::is_same_v<compute_t<T>, double>, double, float>;

/// A count (a vector width, a block's threads) as an array extent: std::size_t, so that deducing it
/// from an int parameter is no sign conversion.
template <int Count>
inline constexpr std::size_t kExtent = static_cast<std::size_t>(Count);

/// How the dispatch layer laid a summing call out (shape only, so that the partial sums, and the
/// temporary storage for them, do not depend on the device).
struct SummedLayout {
  std::size_t n = 0;
  std::size_t inner = 1;
  std::size_t period = 1;
  std::size_t span = 0;      ///< the call's span (n for one span)
  std::size_t entries = 0;   ///< sums: period * spans
  std::size_t parts = 1;     ///< partial sums per entry; 1: each block or team writes its sum
  // rows: chunks of rows of one span
  std::size_t rows_per_span = 0;
  std::size_t rows_per_chunk = 0;
  // runs: runs of `inner` elements
  std::size_t runs_per_span = 0;  ///< span / inner
};

/// What a thread of a summing kernel writes once its sum is complete: the scaled sum, rounded once
/// to TSum, or a partial sum for sum_partials_kernel.
template <class Acc, class TSum>
struct SumSink {
  TSum* sums;
  Acc* partials;  ///< [entries][parts], used when parts > 1
  Acc scale;
  std::size_t entries;
  std::size_t parts;

  __device__ __forceinline__ void write(std::size_t entry, std::size_t part, Acc total) const {
    if (parts == 1) {
      sums[entry] = convert<TSum>(total * scale);
    } else {
      partials[entry * parts + part] = total;
    }
  }
};

/// The rows form's block geometry, for vectors of Width elements over rows of `period` channels:
/// a group is the fewest whole rows that are whole vectors, lcm(period, Width) elements.
/// Counts and divisors that depend on the call alone are worked out at launch: a 64-bit `/` is a
/// long software sequence on the GPU (TUNING.md#summing-path).
struct RowsGeometry {
  std::uint32_t group_vectors;    ///< vectors of one group
  std::uint32_t columns;          ///< vector columns of one block: min(group_vectors, threads)
  std::uint32_t lanes;            ///< groups one block reads at once: threads / columns
  std::uint32_t slices;           ///< blocks across one group (more than one only when Width divides period)
  std::size_t group_elements;     ///< lcm(period, Width)
  std::size_t places;             ///< group_elements / period: a channel's places in a group
  std::size_t groups_per_chunk;   ///< a chunk's groups (whole, since a chunk is whole groups at every width)
  std::size_t groups_per_span;
  std::size_t blocks;             ///< spans * chunks * slices
  FastDivmod slice_of;            ///< divisor slices
  FastDivmod chunk_of;            ///< divisor layout.parts (chunks)
};

/// The runs form's geometry: teams of 1 << team_shift lanes, and the divisions that find run r's
/// sum (entry s * period + (r % runs_per_span) % period of part (r % runs_per_span) / period, s =
/// r / runs_per_span) by divisors fixed at launch. A short run is a few elements a lane, and 64-bit
/// `/` and `%` by the team and the layout were most of its instructions (TUNING.md#summing-path).
struct RunsGeometry {
  std::size_t runs;  ///< layout.n / layout.inner
  std::uint32_t team_shift;
  bool narrow;  ///< fewer than 2^31 runs: 32-bit divisions
  FastDivmod runs_per_span;
  FastDivmod period;
};

/// Loads kSummedVectorsInFlight vectors of every input (those with valid[k]), then, vector by
/// vector, its broadcast values, the transform, the store and the sums. firsts[k]: element of
/// vector k (a valid one for every k). The broadcast values are loaded after the inputs, a vector
/// at a time: held for every vector at once they took twice the registers (TUNING.md#summing-path).
template <int Width, bool Hoisted, class Op, class Broadcasts, class TOut, class Acc, class... TIn, std::size_t... I,
          std::size_t... B>
__device__ __forceinline__ void transform_batch(const Op& op, const Broadcasts& broadcasts,
                                                const typename broadcast_values<Width, Broadcasts>::type& hoisted,
                                                const std::size_t (&firsts)[kSummedVectorsInFlight],
                                                const bool (&valid)[kSummedVectorsInFlight], TOut* out,
                                                Acc (&acc)[kExtent<Width>], cuda::std::index_sequence<I...>,
                                                cuda::std::index_sequence<B...>, const TIn*... in) {
  constexpr int K = kSummedVectorsInFlight;
  cuda::std::tuple<AlignedVector<TIn, Width>...> loaded[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (valid[k]) {
      ((cuda::std::get<I>(loaded[k]) =
            load_streaming(reinterpret_cast<const AlignedVector<TIn, Width>*>(in + firsts[k]))),
       ...);
    }
  }
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (valid[k]) {
      using Values = typename broadcast_values<Width, Broadcasts>::type;
      [[maybe_unused]] Values values[1];
      if constexpr (Hoisted) {
        values[0] = hoisted;
      } else if constexpr (sizeof...(B) > 0) {
        const std::size_t first[1] = {firsts[k]};
        load_broadcast_units<Width>(broadcasts, first, values, cuda::std::index_sequence<B...>{});
      }
      AlignedVector<TOut, Width> result;
#pragma unroll
      for (int j = 0; j < Width; ++j) {
        result.elements[j] =
            apply_op<TOut>(op, cuda::std::get<I>(loaded[k]).elements[j]..., cuda::std::get<B>(values[0]).get(j)...);
        acc[j] += convert<Acc>(result.elements[j]);
      }
      store_streaming(reinterpret_cast<AlignedVector<TOut, Width>*>(out + firsts[k]), result);
    }
  }
}

/// One block's share of summed_rows_kernel: block `block` of the call's blocks.
template <int BlockThreads, int Width, bool Hoisted, class Op, class Broadcasts, class Acc, class TSum, class TOut,
          class... TIn>
__device__ __forceinline__ void summed_rows_block(const Op& op, const SummedLayout& layout,
                                                  const RowsGeometry& geometry,
                                                  const Broadcasts& broadcasts, const SumSink<Acc, TSum>& sink,
                                                  std::size_t block,
                                                  Acc (&shared)[kExtent<BlockThreads>][kExtent<Width>], TOut* out,
                                                  const TIn*... in) {
  std::uint64_t slice, chunk, span_index, slices_before;
  geometry.slice_of.divmod(block, slices_before, slice);
  geometry.chunk_of.divmod(slices_before, span_index, chunk);

  const std::uint32_t lane = threadIdx.x / geometry.columns;
  const std::uint32_t column_in_block = threadIdx.x % geometry.columns;
  const std::size_t column = slice * geometry.columns + column_in_block;
  const bool active = lane < geometry.lanes && column < geometry.group_vectors;

  const std::size_t period = layout.period;
  const std::size_t group_begin = chunk * geometry.groups_per_chunk;
  const std::size_t group_end = group_begin + geometry.groups_per_chunk < geometry.groups_per_span
                                    ? group_begin + geometry.groups_per_chunk
                                    : geometry.groups_per_span;
  const std::size_t base = span_index * layout.span + column * Width;

  Acc acc[Width];
#pragma unroll
  for (int j = 0; j < Width; ++j) acc[j] = Acc(0);

  if (active) {
    constexpr int K = kSummedVectorsInFlight;
    constexpr auto kBroadcastIndexes = cuda::std::make_index_sequence<cuda::std::tuple_size_v<Broadcasts>>{};
    [[maybe_unused]] typename broadcast_values<Width, Broadcasts>::type hoisted[1];
    // The thread's channels, the same in every group.
    if constexpr (Hoisted && cuda::std::tuple_size_v<Broadcasts> > 0) {
      const std::size_t first[1] = {base};
      load_broadcast_units<Width>(broadcasts, first, hoisted, kBroadcastIndexes);
    }
    for (std::size_t g = group_begin + lane; g < group_end; g += static_cast<std::size_t>(K) * geometry.lanes) {
      std::size_t firsts[K];
      bool valid[K];
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const std::size_t group = g + static_cast<std::size_t>(k) * geometry.lanes;
        valid[k] = group < group_end;
        firsts[k] = base + (valid[k] ? group : g) * geometry.group_elements;
      }
      transform_batch<Width, Hoisted>(op, broadcasts, hoisted[0], firsts, valid, out, acc,
                                      cuda::std::index_sequence_for<TIn...>{}, kBroadcastIndexes, in...);
    }
  }

  // Lane by lane, then (within one slice) each channel's places in a group, in a fixed order.
#pragma unroll
  for (int j = 0; j < Width; ++j) shared[threadIdx.x][j] = acc[j];
  __syncthreads();
  if (lane == 0 && column < geometry.group_vectors) {
    for (std::uint32_t l = 1; l < geometry.lanes; ++l) {
#pragma unroll
      for (int j = 0; j < Width; ++j) acc[j] += shared[l * geometry.columns + column_in_block][j];
    }
#pragma unroll
    for (int j = 0; j < Width; ++j) shared[column_in_block][j] = acc[j];
  }
  __syncthreads();
  const std::size_t entry_base = span_index * period;
  if (geometry.slices > 1) {  // Width divides period: channel column * Width + j, once per group
    if (lane == 0 && column < geometry.group_vectors) {
#pragma unroll
      for (int j = 0; j < Width; ++j) sink.write(entry_base + column * Width + j, chunk, shared[column_in_block][j]);
    }
    return;
  }
  const std::size_t places = geometry.places;
  for (std::size_t channel = threadIdx.x; channel < period; channel += BlockThreads) {
    Acc total = Acc(0);
    for (std::size_t q = 0; q < places; ++q) {
      const std::size_t place = channel + q * period;
      total += shared[place / Width][place % Width];
    }
    sink.write(entry_base + channel, chunk, total);
  }
}

/// The rows form. Block b takes slice b % slices of chunk (b / slices) % chunks of span
/// b / (slices * chunks); its thread t reads vector column slice * columns + t % columns of every
/// group of the chunk from group t / columns on, `lanes` groups apart. Hoisted: every broadcast
/// gives each thread the same values in every group, loaded once.
template <int BlockThreads, int Width, bool Hoisted, class Op, class Broadcasts, class Acc, class TSum, class TOut,
          class... TIn>
__global__ void __launch_bounds__(BlockThreads, kSummedMinBlocks)
    summed_rows_kernel(Op op, SummedLayout layout, RowsGeometry geometry, Broadcasts broadcasts,
                       SumSink<Acc, TSum> sink, TOut* out, const TIn*... in) {
  __shared__ Acc shared[BlockThreads][Width];
  allow_dependent_launch();
  for (std::size_t block = blockIdx.x; block < geometry.blocks; block += gridDim.x) {
    summed_rows_block<BlockThreads, Width, Hoisted>(op, layout, geometry, broadcasts, sink, block, shared, out, in...);
    __syncthreads();  // the next block's sums reuse `shared`
  }
}

/// Where run `run` of the call writes its sum: its entry and its part (RunsGeometry).
__device__ __forceinline__ void run_entry(const RunsGeometry& geometry, std::size_t period, std::size_t run,
                                          std::size_t& entry, std::size_t& part) {
  if (geometry.narrow) {
    std::uint32_t span_index, in_span, cycle, channel;
    geometry.runs_per_span.divmod32(static_cast<std::uint32_t>(run), span_index, in_span);
    geometry.period.divmod32(in_span, cycle, channel);
    entry = static_cast<std::size_t>(span_index) * period + channel;
    part = cycle;
  } else {
    std::uint64_t span_index, in_span, cycle, channel;
    geometry.runs_per_span.divmod(run, span_index, in_span);
    geometry.period.divmod(in_span, cycle, channel);
    entry = span_index * period + channel;
    part = cycle;
  }
}

/// The runs form: teams of `team` lanes (a power of two up to 32), one run of layout.inner elements
/// per team at a time; lane l reads vectors l, l + team, ... of its run. Hoisted: every broadcast
/// has one value per run, loaded once. Warps go through the runs
/// together, so that the shuffles always have every lane.
template <int BlockThreads, int Width, bool Hoisted, class Op, class Broadcasts, class Acc, class TSum, class TOut,
          class... TIn>
__global__ void __launch_bounds__(BlockThreads, kSummedMinBlocks)
    summed_runs_kernel(Op op, SummedLayout layout, RunsGeometry geometry, Broadcasts broadcasts,
                       SumSink<Acc, TSum> sink, TOut* out, const TIn*... in) {
  constexpr int K = kSummedVectorsInFlight;
  allow_dependent_launch();
  const std::uint32_t team = 1u << geometry.team_shift;
  const std::size_t runs = geometry.runs;
  const std::size_t vectors_per_run = layout.inner / Width;
  const std::size_t teams_per_grid = (static_cast<std::size_t>(gridDim.x) * BlockThreads) >> geometry.team_shift;
  const std::uint32_t lane = threadIdx.x & (team - 1);
  const std::size_t warp_first_team =
      (static_cast<std::size_t>(blockIdx.x) * BlockThreads + (threadIdx.x & ~31u)) >> geometry.team_shift;
  const std::uint32_t team_in_warp = (threadIdx.x & 31u) >> geometry.team_shift;

  for (std::size_t warp_base = warp_first_team; warp_base < runs; warp_base += teams_per_grid) {
    const std::size_t run = warp_base + team_in_warp;
    const bool run_valid = run < runs;
    Acc acc[Width];
#pragma unroll
    for (int j = 0; j < Width; ++j) acc[j] = Acc(0);
    if (run_valid) {
      const std::size_t run_first = run * layout.inner;
      constexpr auto kBroadcastIndexes = cuda::std::make_index_sequence<cuda::std::tuple_size_v<Broadcasts>>{};
      [[maybe_unused]] typename broadcast_values<Width, Broadcasts>::type hoisted[1];
      if constexpr (Hoisted && cuda::std::tuple_size_v<Broadcasts> > 0) {  // one value per broadcast for the whole run
        const std::size_t first[1] = {run_first};
        load_broadcast_units<Width>(broadcasts, first, hoisted, kBroadcastIndexes);
      }
      for (std::size_t v = lane; v < vectors_per_run; v += static_cast<std::size_t>(K) * team) {
        std::size_t firsts[K];
        bool valid[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const std::size_t vector = v + static_cast<std::size_t>(k) * team;
          valid[k] = vector < vectors_per_run;
          firsts[k] = run_first + (valid[k] ? vector : v) * Width;
        }
        transform_batch<Width, Hoisted>(op, broadcasts, hoisted[0], firsts, valid, out, acc,
                                        cuda::std::index_sequence_for<TIn...>{}, kBroadcastIndexes, in...);
      }
    }
    Acc total = acc[0];
#pragma unroll
    for (int j = 1; j < Width; ++j) total += acc[j];
    for (std::uint32_t offset = team / 2; offset > 0; offset /= 2) {
      total += __shfl_down_sync(0xffffffffu, total, offset, static_cast<int>(team));
    }
    if (run_valid && lane == 0) {
      std::size_t entry, part;
      run_entry(geometry, layout.period, run, entry, part);
      sink.write(entry, part, total);
    }
  }
}

/// The tiles form's geometry (runs of `inner` >= Width elements, NCHW): tiles of `runs_per_tile`
/// whole runs, whose elements are whole vectors in every tile but the last.
struct TilesGeometry {
  RunsGeometry runs;
  std::size_t tiles;
  std::uint32_t runs_per_tile;
  std::uint32_t inner;
  FastDivmod run_of;  ///< divisor inner, for element indexes inside a tile (32-bit)
};

/// Shared memory of one block of summed_tiles_kernel: each vector's sums of its elements in its
/// first run and in the next, and each run's broadcast values.
template <int BlockThreads, class Acc, class Broadcasts>
struct TileShared {
  static constexpr std::uint32_t kVectors = static_cast<std::uint32_t>(BlockThreads) * kSummedVectorsInFlight;
  using RunValues = typename broadcast_values<1, Broadcasts>::type;  // one value per broadcast
  static constexpr bool kHasValues = cuda::std::tuple_size_v<Broadcasts> > 0;
  Acc first_run_sums[kVectors];
  Acc next_run_sums[kVectors];
  // A run is at least a vector, so a tile has at most kVectors runs.
  alignas(16) unsigned char run_values[kHasValues ? kVectors * sizeof(RunValues) : 1];
  __device__ __forceinline__ RunValues* values() { return reinterpret_cast<RunValues*>(run_values); }
};

/// One tile of summed_tiles_kernel.
template <int BlockThreads, int Width, class Op, class Broadcasts, class Acc, class TSum, class TOut, class... TIn,
          std::size_t... I, std::size_t... B>
__device__ __forceinline__ void summed_tile(const Op& op, const SummedLayout& layout, const TilesGeometry& geometry,
                                            const Broadcasts& broadcasts, const SumSink<Acc, TSum>& sink,
                                            std::size_t tile, TileShared<BlockThreads, Acc, Broadcasts>& shared,
                                            cuda::std::index_sequence<I...>, cuda::std::index_sequence<B...>,
                                            TOut* out, const TIn*... in) {
  constexpr int K = kSummedVectorsInFlight;
  using Shared = TileShared<BlockThreads, Acc, Broadcasts>;
  using RunValues = typename Shared::RunValues;
  const std::size_t runs = geometry.runs.runs;
  const std::size_t first_run = tile * geometry.runs_per_tile;
  const std::uint32_t tile_runs = static_cast<std::uint32_t>(
      runs - first_run < geometry.runs_per_tile ? runs - first_run : geometry.runs_per_tile);
  const std::uint32_t inner = geometry.inner;
  const std::size_t tile_first = first_run * inner;
  const std::uint32_t tile_elements = tile_runs * inner;

  // Every vector's inputs first (the last tile's last vector may be partial: element by element).
  cuda::std::tuple<AlignedVector<TIn, Width>...> loaded[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const std::uint32_t e = (threadIdx.x + static_cast<std::uint32_t>(k) * BlockThreads) * Width;
    if (e + Width <= tile_elements) {
      ((cuda::std::get<I>(loaded[k]) =
            load_streaming(reinterpret_cast<const AlignedVector<TIn, Width>*>(in + tile_first + e))),
       ...);
    } else if (e < tile_elements) {
#pragma unroll
      for (int j = 0; j < Width; ++j) {
        if (e + j < tile_elements) ((cuda::std::get<I>(loaded[k]).elements[j] = in[tile_first + e + j]), ...);
      }
    }
  }
  if constexpr (Shared::kHasValues) {
    for (std::uint32_t r = threadIdx.x; r < tile_runs; r += BlockThreads) {
      RunValues values[1];
      const std::size_t first[1] = {(first_run + r) * inner};
      load_broadcast_units<1>(broadcasts, first, values, cuda::std::index_sequence<B...>{});
      shared.values()[r] = values[0];
    }
    __syncthreads();
  }

#pragma unroll
  for (int k = 0; k < K; ++k) {
    const std::uint32_t v = threadIdx.x + static_cast<std::uint32_t>(k) * BlockThreads;
    const std::uint32_t e = v * Width;
    if (e >= tile_elements) continue;
    std::uint32_t run, offset;
    geometry.run_of.divmod32(e, run, offset);
    const std::uint32_t split = inner - offset;  // elements of the vector in `run`; the rest in run + 1
    [[maybe_unused]] RunValues first_values, next_values;
    if constexpr (Shared::kHasValues) {
      first_values = shared.values()[run];
      next_values = shared.values()[run + 1 < tile_runs ? run + 1 : run];
    }
    AlignedVector<TOut, Width> result;
    Acc first_sum = Acc(0), next_sum = Acc(0);
#pragma unroll
    for (int j = 0; j < Width; ++j) {
      const bool in_first = static_cast<std::uint32_t>(j) < split;
      result.elements[j] = apply_op<TOut>(op, cuda::std::get<I>(loaded[k]).elements[j]...,
                                          (in_first ? cuda::std::get<B>(first_values) : cuda::std::get<B>(next_values))
                                              .get(0)...);
      const Acc value = e + j < tile_elements ? convert<Acc>(result.elements[j]) : Acc(0);
      first_sum += in_first ? value : Acc(0);
      next_sum += in_first ? Acc(0) : value;
    }
    if (e + Width <= tile_elements) {
      store_streaming(reinterpret_cast<AlignedVector<TOut, Width>*>(out + tile_first + e), result);
    } else {
#pragma unroll
      for (int j = 0; j < Width; ++j) {
        if (e + j < tile_elements) out[tile_first + e + j] = result.elements[j];
      }
    }
    shared.first_run_sums[v] = first_sum;
    shared.next_run_sums[v] = next_sum;
  }
  __syncthreads();

  // Run r: the vectors from the one holding its first element to the one holding its last, in
  // order, by thread r (lanes of a team adding a run each, then shuffles, took longer: TUNING.md#summing-path).
  for (std::uint32_t r = threadIdx.x; r < tile_runs; r += BlockThreads) {
    const std::uint32_t begin = r * inner;
    const std::uint32_t first_vector = begin / Width;
    const std::uint32_t last_vector = (begin + inner - 1) / Width;
    Acc total = begin % Width == 0 ? shared.first_run_sums[first_vector] : shared.next_run_sums[first_vector];
    for (std::uint32_t v = first_vector + 1; v <= last_vector; ++v) total += shared.first_run_sums[v];
    std::size_t entry, part;
    run_entry(geometry.runs, layout.period, first_run + r, entry, part);
    sink.write(entry, part, total);
  }
}

/// The tiles form, for short runs that are not whole vectors (a 7 x 7 plane): block b takes tiles
/// b, b + grid, ...; thread t reads vectors t, t + threads, ... of a tile (kSummedVectorsInFlight
/// of them) at the call's full width. A vector spans at most two runs, and takes each element's
/// broadcast values from its run's, loaded once per tile into shared memory; it leaves the sums of
/// its elements in its first run and in the next there, and thread r then adds run r's, vector by
/// vector. The runs form would read such runs a narrow access at a time, a few elements a lane
/// (TUNING.md#summing-path).
template <int BlockThreads, int Width, class Op, class Broadcasts, class Acc, class TSum, class TOut, class... TIn>
__global__ void __launch_bounds__(BlockThreads, kSummedMinBlocks)
    summed_tiles_kernel(Op op, SummedLayout layout, TilesGeometry geometry, Broadcasts broadcasts,
                        SumSink<Acc, TSum> sink, TOut* out, const TIn*... in) {
  __shared__ TileShared<BlockThreads, Acc, Broadcasts> shared;
  allow_dependent_launch();
  for (std::size_t tile = blockIdx.x; tile < geometry.tiles; tile += gridDim.x) {
    summed_tile<BlockThreads, Width>(op, layout, geometry, broadcasts, sink, tile, shared,
                                     cuda::std::index_sequence_for<TIn...>{},
                                     cuda::std::make_index_sequence<cuda::std::tuple_size_v<Broadcasts>>{}, out, in...);
    __syncthreads();  // the next tile reuses `shared`
  }
}

/// sums[e] = scale * the sum of partials[e][0 .. parts), rounded once, once the summing kernel
/// before it is complete (grid_dependency_wait). A few parts (up to
/// kSummedPartsPerThread): one thread per sum, adding them in order; more: one warp per sum, lane l
/// adding parts l, l + 32, ... in order, then a fixed shuffle tree. Launched with a whole number
/// of warps per block.
template <class Acc, class TSum>
__global__ void sum_partials_kernel(const Acc* partials, std::size_t parts, std::size_t entries, Acc scale,
                                    TSum* sums) {
  grid_dependency_wait();
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  if (parts <= kSummedPartsPerThread) {
    for (std::size_t e = thread; e < entries; e += threads) {
      Acc total = Acc(0);
      for (std::size_t p = 0; p < parts; ++p) total += partials[e * parts + p];
      sums[e] = convert<TSum>(total * scale);
    }
    return;
  }
  const unsigned lane = threadIdx.x % 32;
  for (std::size_t e = thread / 32; e < entries; e += threads / 32) {
    Acc total = Acc(0);
    for (std::size_t p = lane; p < parts; p += 32) total += partials[e * parts + p];
    for (int offset = 16; offset > 0; offset /= 2) total += __shfl_down_sync(0xffffffffu, total, offset);
    if (lane == 0) sums[e] = convert<TSum>(total * scale);
  }
}

}  // namespace detail
}  // namespace hardact
