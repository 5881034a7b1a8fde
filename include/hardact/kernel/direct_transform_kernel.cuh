/// @file direct_transform_kernel.cuh
/// @brief The direct path: out[i] = op(in_0[i], in_1[i], ...) over a 64-bit range, loading straight
///        from global memory into registers (any architecture, any size, any explicit VecWidth).
///
/// The dispatch layer splits [0, n) into a scalar head (to reach vector alignment), `num_vectors`
/// aligned vectors of `Width` elements, and a scalar tail. Each thread loads `VectorsPerThread`
/// vectors per input before computing, so several independent loads are in flight; consecutive
/// threads take consecutive vectors, so every access is coalesced.
#pragma once

#include <hardact/kernel/apply_op.cuh>
#include <hardact/kernel/device_broadcast.cuh>
#include <hardact/kernel/tuning.cuh>
#include <hardact/kernel/value_array.cuh>
#include <hardact/kernel/vector_access.cuh>

#include <cuda/std/tuple>
#include <cuda/std/type_traits>
#include <cuda/std/utility>

#include <cstddef>

namespace hardact {
namespace detail {

/// How the dispatch layer cut [0, n) into head, vectors and tail, and how many tiles cover it.
struct TransformRange {
  std::size_t n;            ///< total elements
  std::size_t head;         ///< leading elements done one by one, so that the vectors are aligned
  std::size_t num_vectors;  ///< aligned vectors after the head
  std::size_t num_tiles;    ///< tiles of BlockThreads * VectorsPerThread vectors
};

template <class T, int Width, int Count>
struct VectorBatch {
  AlignedVector<T, Width> vectors[static_cast<std::size_t>(Count)];
};

template <int BlockThreads, int Width, int VectorsPerThread, bool Full, class T>
__device__ __forceinline__ void load_batch(VectorBatch<T, Width, VectorsPerThread>& batch,
                                           const AlignedVector<T, Width>* source, std::size_t first,
                                           std::size_t num_vectors) {
#pragma unroll
  for (int k = 0; k < VectorsPerThread; ++k) {
    const std::size_t index = first + static_cast<std::size_t>(k) * BlockThreads;
    if (Full || index < num_vectors) batch.vectors[k] = load_streaming(source + index);
  }
}

/// One thread's share of one tile. All loads are issued before the first store. Broadcast operands'
/// values come after the full-length inputs' in the call to `op`; `head` is the element index of
/// vector 0, which their positions depend on.
template <int BlockThreads, int Width, int VectorsPerThread, bool Full, class Op, class TOut, class... D,
          class... TIn, std::size_t... I, std::size_t... B>
__device__ __forceinline__ void transform_vectors(const Op& op, std::size_t first, std::size_t num_vectors,
                                                  std::size_t head, const cuda::std::tuple<D...>& broadcasts,
                                                  AlignedVector<TOut, Width>* out,
                                                  cuda::std::index_sequence<I...>, cuda::std::index_sequence<B...>,
                                                  const AlignedVector<TIn, Width>*... in) {
  cuda::std::tuple<VectorBatch<TIn, Width, VectorsPerThread>...> loaded;
  (load_batch<BlockThreads, Width, VectorsPerThread, Full>(cuda::std::get<I>(loaded), in, first, num_vectors), ...);
  [[maybe_unused]] cuda::std::tuple<ValueArray<typename D::value_type, Width>...>
      broadcast_values[static_cast<std::size_t>(VectorsPerThread)];
  if constexpr (sizeof...(D) > 0) {
    // A vector past the call's end reads vector 0's values, unused.
    std::size_t firsts[static_cast<std::size_t>(VectorsPerThread)];
#pragma unroll
    for (int k = 0; k < VectorsPerThread; ++k) {
      const std::size_t index = first + static_cast<std::size_t>(k) * BlockThreads;
      firsts[k] = head + (Full || index < num_vectors ? index : 0) * Width;
    }
    load_broadcast_units<Width>(broadcasts, firsts, broadcast_values, cuda::std::index_sequence<B...>{});
  }

#pragma unroll
  for (int k = 0; k < VectorsPerThread; ++k) {
    const std::size_t index = first + static_cast<std::size_t>(k) * BlockThreads;
    if (Full || index < num_vectors) {
      AlignedVector<TOut, Width> result;
#pragma unroll
      for (int j = 0; j < Width; ++j) {
        result.elements[j] = apply_op<TOut>(op, cuda::std::get<I>(loaded).vectors[k].elements[j]...,
                                            cuda::std::get<B>(broadcast_values[k]).get(j)...);
      }
      store_streaming(out + index, result);
    }
  }
}

/// out[i] = op(in[i]..., broadcast values for i...) for i in [0, range.n). Launched with
/// BlockThreads threads per block; correct for any grid of at least one block.
template <int BlockThreads, int Width, int VectorsPerThread, class Op, class Broadcasts, class TOut, class... TIn>
__global__ void __launch_bounds__(BlockThreads, kDirectMinBlocks)
    direct_transform_kernel(Op op, TransformRange range, Broadcasts broadcasts, TOut* out, const TIn*... in) {
  constexpr auto kBroadcastIndexes = cuda::std::make_index_sequence<cuda::std::tuple_size_v<Broadcasts>>{};
  // Block 0 also does the scalar head and tail (at most 128 + 15 elements).
  if (blockIdx.x == 0) {
    const std::size_t tail_begin = range.head + range.num_vectors * Width;
    const std::size_t leftovers = range.head + (range.n - tail_begin);
    for (std::size_t t = threadIdx.x; t < leftovers; t += BlockThreads) {
      const std::size_t i = t < range.head ? t : tail_begin + (t - range.head);
      out[i] = apply_broadcast_op<TOut>(op, i, broadcasts, kBroadcastIndexes, in[i]...);
    }
  }

  using OutVector = AlignedVector<TOut, Width>;
  OutVector* const out_vectors = reinterpret_cast<OutVector*>(out + range.head);
  constexpr std::size_t kTileVectors = static_cast<std::size_t>(BlockThreads) * VectorsPerThread;

  for (std::size_t tile = blockIdx.x; tile < range.num_tiles; tile += gridDim.x) {
    const std::size_t first = tile * kTileVectors + threadIdx.x;
    const std::size_t last = first + (VectorsPerThread - 1) * static_cast<std::size_t>(BlockThreads);
    if (last < range.num_vectors) {
      transform_vectors<BlockThreads, Width, VectorsPerThread, true>(
          op, first, range.num_vectors, range.head, broadcasts, out_vectors, cuda::std::index_sequence_for<TIn...>{},
          kBroadcastIndexes,
          reinterpret_cast<const AlignedVector<TIn, Width>*>(in + range.head)...);
    } else {
      transform_vectors<BlockThreads, Width, VectorsPerThread, false>(
          op, first, range.num_vectors, range.head, broadcasts, out_vectors, cuda::std::index_sequence_for<TIn...>{},
          kBroadcastIndexes,
          reinterpret_cast<const AlignedVector<TIn, Width>*>(in + range.head)...);
    }
  }
}

}  // namespace detail
}  // namespace hardact
