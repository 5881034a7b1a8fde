/// @file transform.cuh
/// @brief Public launchers: hardact::transform and the hardsigmoid / hardtanh shorthands.
#pragma once

#include <hardact/dispatch/dispatch_transform.cuh>
#include <hardact/policies.cuh>

#include <cuda_runtime_api.h>

#include <cstddef>

namespace hardact {

/// @brief out[i] = op(in[i]) for i in [0, n), enqueued on `stream`.
///
/// @tparam VecWidth elements per vector access: 0 picks 16 bytes per access; 1, 2, 4, 8 or 16 set
///         the widest width used (VecWidth * sizeof(T) <= 16, checked at compile time). Pointers
///         misaligned relative to each other fall back to the widest width they share.
/// @param op     policy or any copyable functor callable as `T op(T)` on the device.
/// @param in     device pointer to n elements, aligned to alignof(T); any other alignment is fine.
/// @param out    device pointer to n elements; may equal `in` (in place) but not partly overlap it.
/// @param n      element count, 64-bit.
/// @param stream stream to enqueue on; the call never synchronises or allocates, so it can be
///               captured in a CUDA Graph.
/// @return cudaSuccess; cudaErrorInvalidValue for a null or misaligned pointer (n > 0), a partial
///         overlap or an invalid policy (op.is_valid() false), with nothing launched; or the error
///         the device query or launch returned. n == 0 returns cudaSuccess and launches nothing.
template <int VecWidth = 0, class Op, class T>
cudaError_t transform(Op op, const T* in, T* out, std::size_t n, cudaStream_t stream = nullptr) {
  return detail::dispatch_transform<VecWidth>(op, n, stream, out, in);
}

/// @brief Mixed types: out[i] = convert<TOut>(op(compute(in[i]))), rounding once from the compute
///        type (float for half, bfloat16 and fp8; double when a double is involved). Conversions
///        to fp8 saturate. Same contract as the one-type overload; in-place needs equal sizes.
template <int VecWidth = 0, class Op, class TIn, class TOut>
cudaError_t transform(Op op, const TIn* in, TOut* out, std::size_t n, cudaStream_t stream = nullptr) {
  return detail::dispatch_transform<VecWidth>(op, n, stream, out, in);
}

/// @brief Two inputs: out[i] = op(in_a[i], in_b[i]) (e.g. a backward policy with grad and x).
///        Same contract; out may equal either input, inputs may overlap each other freely.
template <int VecWidth = 0, class Op, class TA, class TB, class TOut>
cudaError_t transform(Op op, const TA* in_a, const TB* in_b, TOut* out, std::size_t n,
                      cudaStream_t stream = nullptr) {
  return detail::dispatch_transform<VecWidth>(op, n, stream, out, in_a, in_b);
}

/// @brief PyTorch's F.hardsigmoid on n elements of float, double, __half or __nv_bfloat16.
template <class T>
cudaError_t hardsigmoid(const T* in, T* out, std::size_t n, cudaStream_t stream = nullptr) {
  return transform(HardSigmoid{}, in, out, n, stream);
}

/// @brief PyTorch's F.hardtanh(x, min_val, max_val) on n elements. min_val > max_val or a NaN
///        bound returns cudaErrorInvalidValue.
template <class T>
cudaError_t hardtanh(const T* in, T* out, std::size_t n, double min_val = -1.0, double max_val = 1.0,
                     cudaStream_t stream = nullptr) {
  return transform(HardTanh{min_val, max_val}, in, out, n, stream);
}

}  // namespace hardact
