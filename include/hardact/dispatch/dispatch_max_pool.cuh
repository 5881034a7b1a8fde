/// @file dispatch_max_pool.cuh
/// @brief The max pooling's dispatch (hardact::max_pool): the launch contract's checks, the vector
///        width from the channels and the pointers' alignment, the kernel for the window, and the
///        grid from the shape. Nothing here synchronises or allocates.
#pragma once

#include <hardact/types/max_pool_shape.cuh>
#include <hardact/dispatch/memory_range.cuh>
#include <hardact/kernel/max_pool_kernel.cuh>
#include <hardact/kernel/vector_access.cuh>

#ifdef HARDACT_CHECK_POINTER_DEVICES
#include <hardact/dispatch/pointer_check.cuh>
#endif

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda/std/type_traits>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>

namespace hardact {
namespace detail {

/// The refusals a shape meets whatever its sample count: cudaErrorInvalidValue for what no pooling
/// is (no rows, columns or channels, a kernel or stride under 1, padding negative or over half the
/// kernel, a padded input smaller than the kernel: PyTorch's refusals), cudaErrorNotSupported for
/// 2^31 elements or more a sample, in or out; cudaSuccess for a shape it takes. (2^31 samples or
/// more: cudaErrorNotSupported once the sample count is looked at.)
inline cudaError_t check_max_pool_shape(const MaxPoolShape& s) {
  if (s.channels == 0 || s.out_height() == 0 || s.out_width() == 0) return cudaErrorInvalidValue;
  constexpr std::size_t kMostSampleElements = INT_MAX;
  if (s.height > kMostSampleElements || s.width > kMostSampleElements || s.channels > kMostSampleElements) {
    return cudaErrorNotSupported;
  }
  // Each extent is within INT_MAX, so neither product wraps around.
  const std::size_t positions = s.height * s.width, out_positions = s.out_height() * s.out_width();
  if (positions > kMostSampleElements / s.channels || out_positions > kMostSampleElements / s.channels) {
    return cudaErrorNotSupported;
  }
  return cudaSuccess;
}

template <class T>
inline constexpr bool kMaxPoolElementType = cuda::std::is_same_v<T, float> || cuda::std::is_same_v<T, double> ||
                                            cuda::std::is_same_v<T, __half> ||
                                            cuda::std::is_same_v<T, __nv_bfloat16>;

/// Elements of the 16-byte vectors a call takes where the channels are whole vectors and both
/// pointers 16-byte aligned.
template <class T>
inline constexpr int kMaxPoolVectorWidth = static_cast<int>(kMaxAccessBytes / sizeof(T));

/// The kernel for Width-element vectors, its window's size compiled in where it is 3 x 3 (VoVNet's
/// and most networks' pooling), on a grid of one thread per output vector of a sample (x) and a
/// block row per sample (y, then z past 65535 samples).
template <class T, int Width>
cudaError_t launch_max_pool_kernel(const MaxPoolShape& shape, const T* x, T* y, cudaStream_t stream) {
  MaxPoolGeometry g{};
  g.samples = static_cast<int>(shape.samples);  // at most INT_MAX (dispatch_max_pool)
  g.height = static_cast<int>(shape.height);
  g.width = static_cast<int>(shape.width);
  g.channel_vectors = static_cast<int>(shape.channels / static_cast<std::size_t>(Width));
  g.out_height = static_cast<int>(shape.out_height());
  g.out_width = static_cast<int>(shape.out_width());
  g.kernel_h = shape.kernel_h;
  g.kernel_w = shape.kernel_w;
  g.stride_h = shape.stride_h;
  g.stride_w = shape.stride_w;
  g.pad_h = shape.pad_h;
  g.pad_w = shape.pad_w;
  g.sample_vectors = g.height * g.width * g.channel_vectors;
  g.out_sample_vectors = g.out_height * g.out_width * g.channel_vectors;
  constexpr int kMostGridY = 65535;
  const dim3 grid(static_cast<unsigned>((g.out_sample_vectors + kMaxPoolBlockThreads - 1) / kMaxPoolBlockThreads),
                  static_cast<unsigned>(std::min(g.samples, kMostGridY)),
                  static_cast<unsigned>((static_cast<std::int64_t>(g.samples) + kMostGridY - 1) / kMostGridY));
  if (shape.kernel_h == 3 && shape.kernel_w == 3) {
    max_pool_kernel<T, Width, 3><<<grid, kMaxPoolBlockThreads, 0, stream>>>(x, y, g);
  } else {
    max_pool_kernel<T, Width, 0><<<grid, kMaxPoolBlockThreads, 0, stream>>>(x, y, g);
  }
  return cudaGetLastError();
}

/// The launch contract of hardact::max_pool, then the launch.
template <class T>
cudaError_t dispatch_max_pool(const MaxPoolShape& shape, const T* x, T* y, cudaStream_t stream) {
  static_assert(kMaxPoolElementType<T>, "hardact: max_pool takes float, double, __half or __nv_bfloat16 arrays");
  if (const cudaError_t refused = check_max_pool_shape(shape); refused != cudaSuccess) return refused;
  if (shape.samples == 0) return cudaSuccess;
  if (shape.samples > static_cast<std::size_t>(INT_MAX)) return cudaErrorNotSupported;

  const std::size_t in_bytes = shape.samples * shape.height * shape.width * shape.channels * sizeof(T);
  const std::size_t out_bytes = shape.samples * shape.out_height() * shape.out_width() * shape.channels * sizeof(T);
  if (in_bytes / sizeof(T) / shape.samples != shape.height * shape.width * shape.channels) {
    return cudaErrorNotSupported;  // the whole input's bytes would wrap around
  }
  const MemoryRange in_x{x, in_bytes}, out_y{y, out_bytes};
  if (!range_usable(in_x, alignof(T)) || !range_usable(out_y, alignof(T)) || ranges_overlap(in_x, out_y)) {
    return cudaErrorInvalidValue;
  }
#ifdef HARDACT_CHECK_POINTER_DEVICES  // opt-in: refuse pointers the current device cannot reach
  if (const cudaError_t access = check_pointer_devices(x, static_cast<const T*>(y)); access != cudaSuccess) {
    return access;
  }
#endif
  constexpr int kWidth = kMaxPoolVectorWidth<T>;
  if (shape.channels % static_cast<std::size_t>(kWidth) == 0 && range_usable(in_x, kMaxAccessBytes) &&
      range_usable(out_y, kMaxAccessBytes)) {
    return launch_max_pool_kernel<T, kWidth>(shape, x, y, stream);
  }
  return launch_max_pool_kernel<T, 1>(shape, x, y, stream);
}

}  // namespace detail
}  // namespace hardact
