/// @file transform.cuh
/// @brief Public launchers: hardact::transform and the hardsigmoid / hardtanh shorthands.
#pragma once

#include <hardact/dispatch/dispatch_operands.cuh>
#include <hardact/dispatch/dispatch_summed.cuh>
#include <hardact/dispatch/prepare_operands.cuh>
#include <hardact/operand.cuh>
#include <hardact/policies.cuh>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <type_traits>

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
///         the device query or launch returned.
///
/// Empty calls: a malformed policy or operand (an invalid policy; a Broadcast with inner or period
/// 0; a SampleBroadcast whose span is 0 or not a multiple of inner * period) is refused whatever
/// n, with no CUDA call. Otherwise n == 0 returns cudaSuccess with no CUDA call and without
/// looking at any pointer (null pointers are fine).
template <int VecWidth = 0, class Op, class T>
cudaError_t transform(Op op, const T* in, T* out, std::size_t n, cudaStream_t stream = nullptr) {
  return detail::dispatch_operands<VecWidth>(op, n, stream, out, in);
}

/// @brief Mixed types: out[i] = convert<TOut>(op(compute(in[i]))), rounding once from the compute
///        type (float for half, bfloat16 and fp8; double when a double is involved). Conversions
///        to fp8 saturate. Same contract as the one-type overload; in-place needs equal sizes.
template <int VecWidth = 0, class Op, class TIn, class TOut>
cudaError_t transform(Op op, const TIn* in, TOut* out, std::size_t n, cudaStream_t stream = nullptr) {
  return detail::dispatch_operands<VecWidth>(op, n, stream, out, in);
}

/// @brief One input, and the sums of the outputs: `out` an OutputWithSums (operand.cuh), e.g.
///        `transform(HardSwish{}, x, with_channel_sums(y, sums, C), n)` writes y = hardswish(x) over
///        a row-major [rows, C] array and the C column sums of y. Every overload takes an
///        OutputWithSums in place of its output pointer.
///
/// One pass over the inputs and outputs (a second, small one adds partial sums where a sum
/// gathers more than one block's share), deterministic: the same call on the same device gives the
/// same bits. Same contract as the pointer overloads, and cudaErrorInvalidValue, nothing launched,
/// for a malformed OutputWithSums (inner or period 0, a span not a multiple of inner * period)
/// whatever n; for n > 0, for n not a whole number of spans, null or misaligned sums, sums that
/// share memory with the outputs, an input or a broadcast's values, or temporary storage smaller
/// than temp_storage_bytes(output, n) (or misaligned for the accumulation type).
template <int VecWidth = 0, class Op, class TIn, class TOut, class TSum>
cudaError_t transform(Op op, const TIn* in, OutputWithSums<TOut, TSum> out, std::size_t n,
                      cudaStream_t stream = nullptr) {
  return detail::dispatch_operands<VecWidth>(op, n, stream, out, in);
}

/// @brief Bytes of device memory a transform call of n elements writing `output` needs in
///        output.temp_storage: 0 where every sum is added up by one block, as for the per-(n, c)
///        sums of a batch of images; the partial sums otherwise (a sum over a long span). Depends on
///        the shape only, not on the device or the pointers.
template <class T, class TSum>
std::size_t temp_storage_bytes(const OutputWithSums<T, TSum>& output, std::size_t n) {
  return detail::summed_temp_storage_bytes(output, n);
}

/// @brief Two inputs: out[i] = op(a[i], b[i]) (e.g. a backward policy with grad and x, or
///        `chain(Add{}, HardSwish{})` with x and a residual).
///
/// Each input is a device pointer to n elements or a hardact::Broadcast (operand.cuh), whose value
/// for element i is values[(i / inner) % period]: `transform(chain(Add{}, HardSwish{}), x,
/// per_channel(bias, columns), y, n)` is hardswish(x + bias) over a row-major [rows, columns]
/// array; or a hardact::SampleBroadcast, values[(i / inner) % period + period * (i / span)]:
/// `transform(HardSigmoidGate{}, x, per_sample_channel(gate, C, H * W), y, n)` gates a
/// channels-last [N, H, W, C] tensor by one value per (n, c). At least one input is full-length.
/// The policy gets one value per input, in this order, in the output's type when every input has
/// it, else in the common compute type (rounded once).
/// Same contract as the one-input overload; out may equal a full-length input, full-length inputs
/// may overlap each other freely. A broadcast also returns cudaErrorInvalidValue, nothing
/// launched, for `inner` or `period` 0 (a SampleBroadcast also for a span that is 0 or not a
/// multiple of inner * period), whatever n; and, when n > 0, for a null or misaligned `values`,
/// values inside the output, or n > 2^63.
template <int VecWidth = 0, class Op, class A, class B, class Out,
          std::enable_if_t<detail::is_operand_v<A> && detail::is_operand_v<B> && detail::is_output_v<Out>, int> = 0>
cudaError_t transform(Op op, A a, B b, Out out, std::size_t n, cudaStream_t stream = nullptr) {
  return detail::dispatch_operands<VecWidth>(op, n, stream, out, a, b);
}

/// @brief Three inputs, pointers or Broadcasts: out[i] = op(a[i], b[i], c[i]), e.g. a folded
///        inference BatchNorm with its activation over NCHW,
///        `transform(scale_shift_activation(HardSwish{}), x, per_channel(scale, C, H * W),
///        per_channel(shift, C, H * W), y, n)`. Same contract as the two-input overload.
template <int VecWidth = 0, class Op, class A, class B, class C, class Out,
          std::enable_if_t<detail::is_operand_v<A> && detail::is_operand_v<B> && detail::is_operand_v<C> &&
                               detail::is_output_v<Out>,
                           int> = 0>
cudaError_t transform(Op op, A a, B b, C c, Out out, std::size_t n, cudaStream_t stream = nullptr) {
  return detail::dispatch_operands<VecWidth>(op, n, stream, out, a, b, c);
}

/// @brief Four inputs, pointers or Broadcasts: out[i] = op(a[i], b[i], c[i], d[i]). Same contract.
template <int VecWidth = 0, class Op, class A, class B, class C, class D, class Out,
          std::enable_if_t<detail::is_operand_v<A> && detail::is_operand_v<B> && detail::is_operand_v<C> &&
                               detail::is_operand_v<D> && detail::is_output_v<Out>,
                           int> = 0>
cudaError_t transform(Op op, A a, B b, C c, D d, Out out, std::size_t n, cudaStream_t stream = nullptr) {
  return detail::dispatch_operands<VecWidth>(op, n, stream, out, a, b, c, d);
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
