/// @file pooling.cuh
/// @brief Public launcher: hardact::max_pool, a channels-last 2-D max pooling whose output is
///        torch.nn.MaxPool2d's bit for bit (dilation 1, no indices).
#pragma once

#include <hardact/types/max_pool_shape.cuh>
#include <hardact/dispatch/dispatch_max_pool.cuh>

#include <cuda_runtime_api.h>

namespace hardact {

/// @brief y = the max pooling `shape` describes of channels-last x, enqueued on `stream`.
///
/// Per output element, the window's elements of x in order (rows, then columns, from the top left;
/// the padding holds none) replace the one kept where they compare greater or are a NaN, starting
/// from -infinity: y holds the kept element's bits, as ATen's max_pool2d writes them (a NaN in the
/// window gives its last NaN, and of equal values, +0 and -0, the first is kept).
///
/// @param x      shape.samples x height x width x channels elements of T (float, double, __half or
///               __nv_bfloat16), aligned to T. Channels that are whole 16-byte vectors, with x and y
///               16-byte aligned, take 16-byte accesses; other calls one element at a time.
/// @param y      samples x out_height() x out_width() x channels elements of T, aligned to T;
///               shares no byte with x.
/// @param stream the call never synchronises or allocates, so it can be captured in a CUDA Graph.
/// @return cudaSuccess; cudaErrorInvalidValue for a shape that is no pooling and
///         cudaErrorNotSupported for one this kernel does not cover (MaxPoolShape says which), both
///         whatever the sample count and with no CUDA call; then, for no samples, cudaSuccess with no
///         CUDA call and no pointer looked at; then cudaErrorNotSupported for 2^31 samples or more;
///         then cudaErrorInvalidValue, with nothing launched, for
///         a null or misaligned pointer or an output that shares a byte with x; or the error the
///         launch returned.
template <class T>
cudaError_t max_pool(const MaxPoolShape& shape, const T* x, T* y, cudaStream_t stream = nullptr) {
  return detail::dispatch_max_pool(shape, x, y, stream);
}

}  // namespace hardact
