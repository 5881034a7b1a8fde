/// @file depthwise.cuh
/// @brief Public launchers: hardact::depthwise_conv, a channels-last depthwise convolution with a
///        folded BatchNorm's scale and shift and any policy as its epilogue, and optionally the
///        per-(n, c) mean of its output (a squeeze-excitation's squeeze), in one pass.
#pragma once

#include <hardact/types/depthwise_shape.cuh>
#include <hardact/dispatch/dispatch_depthwise.cuh>

#include <cuda_runtime_api.h>

#include <cstddef>

namespace hardact {

/// @brief y = act(conv(x) * scale + shift) over channels-last x, enqueued on `stream`.
///
/// conv is the depthwise convolution `shape` describes (DepthwiseConvShape: one filter per channel,
/// zero padding, no bias). Per output element, in float: the products x * tap summed with fmaf in
/// filter order (row kh outer, column kw inner, from 0; padding rows skipped, padding columns
/// adding 0 * tap), then z = (sum * scale) rounded + shift rounded, then act(z), rounded once to T.
///
/// @param act    policy or any copyable functor callable as `float act(float)` on the device (a
///               library policy such as HardSwish{}, or your own: writing-a-policy.md); the
///               launcher refuses one whose is_valid() is false.
/// @param x      shape.samples x height x width x channels elements of T (float, __half or
///               __nv_bfloat16), aligned to 4 elements; never read, and may be null, where H or W is 0.
/// @param taps   the filters, float: kernel_size * kernel_size * channels values, taps[(kh * K + kw)
///               * C + c]; 16-byte aligned.
/// @param scale  C floats (a folded BatchNorm's weight / sqrt(var + eps)), 16-byte aligned.
/// @param shift  C floats (bias - mean * scale), 16-byte aligned.
/// @param y      samples x out_height() x out_width() x out_channels() elements of T, aligned to 4
///               elements; shares no byte with an input. With shape.concatenate_input, each
///               position holds x's C values there (copied bit for bit), then the convolution's C.
/// @param stream the call never synchronises or allocates, so it can be captured in a CUDA Graph.
/// @return cudaSuccess; cudaErrorInvalidValue for an invalid policy or a shape that is no
///         convolution (no channels, negative padding, a padded input smaller than the filter),
///         and cudaErrorNotSupported for one this kernel does not cover (DepthwiseConvShape says
///         which), both whatever the sample count and with no CUDA call; then, for no samples,
///         cudaSuccess with no CUDA call and no pointer looked at; then cudaErrorInvalidValue, with
///         nothing launched, for a null or misaligned pointer or an output that shares a byte
///         with an input; or the error the device query or the launch returned.
template <class Policy, class T>
cudaError_t depthwise_conv(Policy act, const DepthwiseConvShape& shape, const T* x, const float* taps,
                           const float* scale, const float* shift, T* y, cudaStream_t stream = nullptr) {
  return detail::dispatch_depthwise(act, shape, x, taps, scale, shift, y, false, static_cast<T*>(nullptr), nullptr,
                                    0, stream);
}

/// @brief The same, and mean[n * C + c], the mean of the convolution's output over its out_height()
///        x out_width() positions of sample n, channel c, as written (in T), summed in float and
///        rounded once (with concatenate_input, of the convolution's C channels, not x's).
///
/// The sums are added in an order fixed by the shape (and, where the grid depends on it, the
/// device's multiprocessor count), never by timing: the same call on the same device gives the same
/// bits. Where a sample's sums gather more than one block's share, the blocks' sums go to
/// `temp_storage`, then a second small kernel adds them (from compute capability 9.0 a
/// programmatic dependent launch): depthwise_conv_temp_storage_bytes(shape) bytes, 16-byte
/// aligned, which the caller provides (no allocation inside a launch); null and 0 where that is 0.
/// `mean`: samples x channels elements of T, aligned to 4 elements, sharing no byte with y, an
/// input or the storage. Same contract as the overload without the mean, and cudaErrorInvalidValue,
/// nothing launched, for a null or misaligned mean, or temporary storage that is needed and null,
/// misaligned, smaller than depthwise_conv_temp_storage_bytes(shape) or overlapping an array.
template <class Policy, class T>
cudaError_t depthwise_conv(Policy act, const DepthwiseConvShape& shape, const T* x, const float* taps,
                           const float* scale, const float* shift, T* y, T* mean, void* temp_storage,
                           std::size_t temp_storage_bytes, cudaStream_t stream = nullptr) {
  return detail::dispatch_depthwise(act, shape, x, taps, scale, shift, y, true, mean, temp_storage,
                                    temp_storage_bytes, stream);
}

/// @brief Bytes of device memory a depthwise_conv call with a mean needs in temp_storage: 0 where
///        every sample's sums are one block's, else the blocks' partial sums (samples x blocks x
///        channels floats). Depends on the shape only, not on the device, the element type or the
///        pointers; 0 for a shape the launcher refuses, and for no samples.
inline std::size_t depthwise_conv_temp_storage_bytes(const DepthwiseConvShape& shape) {
  return detail::depthwise_temp_storage_bytes(shape);
}

}  // namespace hardact
