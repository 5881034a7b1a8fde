/// @file max_pool_kernel.cuh
/// @brief A channels-last max pooling (pooling.cuh): each output element the largest of its window,
///        chosen as PyTorch chooses it, so its bits are PyTorch's.
///
/// Why a pooling in an activation library: ATen's channels-last max pooling writes an int64 index
/// for every output element even when none is asked for, and took 3-7 times a copy of the same
/// bytes inside VoVNet (TUNING.md#max-pooling). Work split: a thread owns one vector of
/// channels of one output position and reads its window's vectors; consecutive threads take
/// consecutive vectors of a position, then the next position, so every access is coalesced and the
/// columns that neighbouring windows share are read from L1.
#pragma once

#include <hardact/kernel/vector_access.cuh>
#include <hardact/numeric/comparisons.cuh>
#include <hardact/numeric/conversions.cuh>

#include <cuda/std/limits>

#include <cstddef>
#include <cstdint>

namespace hardact {
namespace detail {

/// Threads per block of the max pooling kernel.
inline constexpr int kMaxPoolBlockThreads = 256;

/// The geometry one launch needs, in int: every per-sample offset fits (checked by dispatch).
struct MaxPoolGeometry {
  int samples;
  int height, width;
  int channel_vectors;  // channels / Width
  int out_height, out_width;
  int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  int sample_vectors;       // height * width * channel_vectors
  int out_sample_vectors;   // out_height * out_width * channel_vectors
};

/// Folds one window value into the kept one, per element (see max_pool_kernel).
template <class T, int Width>
__device__ __forceinline__ void keep_larger(AlignedVector<T, Width>& best,
                                            compute_t<T> (&best_value)[static_cast<std::size_t>(Width)],
                                            const AlignedVector<T, Width>& v) {
#pragma unroll
  for (int j = 0; j < Width; ++j) {
    const compute_t<T> value = to_compute(v.elements[j]);
    if (value > best_value[j] || is_nan(value)) {
      best.elements[j] = v.elements[j];
      best_value[j] = value;
    }
  }
}

/// y = the window's largest x, per element: in window order (rows, then columns, from the top left),
/// a value replaces the one kept where it compares greater or is a NaN, starting from -infinity, as
/// ATen's max_pool2d does; the kept element's bits are written. Kernel = 0: the window's size at run
/// time; else Kernel x Kernel, every load of the window issued before the first comparison (from
/// addresses clamped into x; the padding's are not compared). Offsets within a sample are int (they
/// fit, dispatch checks): 64-bit ones took 89 registers a thread and 1.3 x the time
/// (TUNING.md#max-pooling).
template <class T, int Width, int Kernel>
__global__ void __launch_bounds__(kMaxPoolBlockThreads)
    max_pool_kernel(const T* __restrict__ x, T* __restrict__ y, MaxPoolGeometry g) {
  using Vector = AlignedVector<T, Width>;
  const int index = static_cast<int>(blockIdx.x) * kMaxPoolBlockThreads + static_cast<int>(threadIdx.x);
  if (index >= g.out_sample_vectors) return;
  const int vector = index % g.channel_vectors;
  const int position = index / g.channel_vectors;
  const int oh = position / g.out_width;
  const int ow = position - oh * g.out_width;
  const int ih0 = oh * g.stride_h - g.pad_h, iw0 = ow * g.stride_w - g.pad_w;
  // Samples along y, then z past 65535 (a grid's y holds no more).
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.z) * gridDim.y + blockIdx.y;
  if (n >= g.samples) return;
  const Vector* xs = reinterpret_cast<const Vector*>(x) + n * g.sample_vectors + vector;
  Vector best;
  compute_t<T> best_value[static_cast<std::size_t>(Width)];
#pragma unroll
  for (int j = 0; j < Width; ++j) {
    best.elements[j] = from_compute<T>(-cuda::std::numeric_limits<compute_t<T>>::infinity());
    best_value[j] = -cuda::std::numeric_limits<compute_t<T>>::infinity();
  }
  if constexpr (Kernel > 0) {
    Vector window[static_cast<std::size_t>(Kernel)][static_cast<std::size_t>(Kernel)];
#pragma unroll
    for (int kh = 0; kh < Kernel; ++kh) {
      const int ih = min(max(ih0 + kh, 0), g.height - 1);
#pragma unroll
      for (int kw = 0; kw < Kernel; ++kw) {
        const int iw = min(max(iw0 + kw, 0), g.width - 1);
        window[kh][kw] = xs[(ih * g.width + iw) * g.channel_vectors];
      }
    }
#pragma unroll
    for (int kh = 0; kh < Kernel; ++kh) {
#pragma unroll
      for (int kw = 0; kw < Kernel; ++kw) {
        const int ih = ih0 + kh, iw = iw0 + kw;
        if (ih >= 0 && ih < g.height && iw >= 0 && iw < g.width) keep_larger(best, best_value, window[kh][kw]);
      }
    }
  } else {  // a row's columns kColumnsAtATime at a time, loaded as above
    constexpr int kColumnsAtATime = 4;
    for (int kh = 0; kh < g.kernel_h; ++kh) {
      const int ih = ih0 + kh;
      if (ih < 0 || ih >= g.height) continue;
      const Vector* row = xs + ih * g.width * g.channel_vectors;
      for (int kw0 = 0; kw0 < g.kernel_w; kw0 += kColumnsAtATime) {
        Vector columns[static_cast<std::size_t>(kColumnsAtATime)];
#pragma unroll
        for (int t = 0; t < kColumnsAtATime; ++t) {
          columns[t] = row[min(max(iw0 + kw0 + t, 0), g.width - 1) * g.channel_vectors];
        }
#pragma unroll
        for (int t = 0; t < kColumnsAtATime; ++t) {
          const int iw = iw0 + kw0 + t;
          if (kw0 + t < g.kernel_w && iw >= 0 && iw < g.width) keep_larger(best, best_value, columns[t]);
        }
      }
    }
  }
  reinterpret_cast<Vector*>(y)[n * g.out_sample_vectors + index] = best;
}

}  // namespace detail
}  // namespace hardact
