/// @file summed_transform_kernel.cuh
/// @brief The summing path: out[i] = op(in_0[i], ...) as the other kernels compute it, and the
///        written values summed per channel in the same pass (an OutputWithSums, operand.cuh).
///
/// Every sum is owned by a fixed set of threads in a fixed order, so the result does not depend
/// on timing. Two layouts of the sums (dispatch/dispatch_summed.cuh picks one):
/// - rows (inner 1: channels-last, a row-major [rows, C] array): a block takes a chunk of rows of
///   one span; each thread always reads the same channels, since its stride is a whole number of
///   rows; the block adds its threads' sums in shared memory.
/// - runs (inner > 1: NCHW): a team of lanes takes one run of `inner` elements, one sum, and adds
///   its lanes' sums with shuffles.
/// A sum gathered from more than one chunk (or run) is written as partial sums, which
/// sum_partials_kernel adds in order.
#pragma once

#include <hardact/kernel/apply_op.cuh>
#include <hardact/kernel/device_broadcast.cuh>
#include <hardact/kernel/tuning.cuh>
#include <hardact/kernel/value_array.cuh>
#include <hardact/kernel/vector_access.cuh>
#include <hardact/numeric/conversions.cuh>

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
struct RowsGeometry {
  std::uint32_t group_vectors;    ///< vectors of one group
  std::uint32_t columns;          ///< vector columns of one block: min(group_vectors, threads)
  std::uint32_t lanes;            ///< groups one block reads at once: threads / columns
  std::uint32_t slices;           ///< blocks across one group (more than one only when Width divides period)
  std::size_t group_elements;     ///< lcm(period, Width)
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

/// Lets the partial sums' kernel, launched as a programmatic dependent launch, start now: it waits
/// for this grid's completion and writes on the device itself (grid_dependency_wait). Nothing
/// before compute capability 9.0, where that launch is an ordinary one.
__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// Waits until the grid this one depends on has completed and its writes are visible; returns at
/// once for an ordinary launch.
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
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
  const std::size_t chunks = layout.parts;
  const std::size_t slice = block % geometry.slices;
  const std::size_t chunk = (block / geometry.slices) % chunks;
  const std::size_t span_index = block / (geometry.slices * chunks);

  const std::uint32_t lane = threadIdx.x / geometry.columns;
  const std::uint32_t column_in_block = threadIdx.x % geometry.columns;
  const std::size_t column = slice * geometry.columns + column_in_block;
  const bool active = lane < geometry.lanes && column < geometry.group_vectors;

  const std::size_t period = layout.period;
  const std::size_t first_row = chunk * layout.rows_per_chunk;
  const std::size_t end_row =
      first_row + layout.rows_per_chunk < layout.rows_per_span ? first_row + layout.rows_per_chunk
                                                               : layout.rows_per_span;
  const std::size_t group_begin = first_row * period / geometry.group_elements;
  const std::size_t group_end = end_row * period / geometry.group_elements;
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
  const std::size_t places = geometry.group_elements / period;
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
  const std::size_t chunks = layout.parts;
  const std::size_t blocks = layout.n / layout.span * chunks * geometry.slices;
  for (std::size_t block = blockIdx.x; block < blocks; block += gridDim.x) {
    summed_rows_block<BlockThreads, Width, Hoisted>(op, layout, geometry, broadcasts, sink, block, shared, out, in...);
    __syncthreads();  // the next block's sums reuse `shared`
  }
}

/// The runs form: teams of `team` lanes (a power of two up to 32), one run of layout.inner elements
/// per team at a time; lane l reads vectors l, l + team, ... of its run. Hoisted: every broadcast
/// has one value per run, loaded once. Warps go through the runs
/// together, so that the shuffles always have every lane.
template <int BlockThreads, int Width, bool Hoisted, class Op, class Broadcasts, class Acc, class TSum, class TOut,
          class... TIn>
__global__ void __launch_bounds__(BlockThreads, kSummedMinBlocks)
    summed_runs_kernel(Op op, SummedLayout layout, std::uint32_t team, Broadcasts broadcasts, SumSink<Acc, TSum> sink,
                       TOut* out, const TIn*... in) {
  constexpr int K = kSummedVectorsInFlight;
  allow_dependent_launch();
  const std::size_t runs = layout.n / layout.inner;
  const std::size_t vectors_per_run = layout.inner / Width;
  const std::size_t teams_per_grid = static_cast<std::size_t>(gridDim.x) * BlockThreads / team;
  const std::uint32_t lane = threadIdx.x % team;
  const std::size_t warp_first_team =
      (static_cast<std::size_t>(blockIdx.x) * BlockThreads + (threadIdx.x & ~31u)) / team;
  const std::uint32_t team_in_warp = (threadIdx.x & 31u) / team;

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
      const std::size_t span_index = run / layout.runs_per_span;
      const std::size_t in_span = run % layout.runs_per_span;
      sink.write(span_index * layout.period + in_span % layout.period, in_span / layout.period, total);
    }
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
