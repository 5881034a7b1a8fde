// The fused operators' launches, explicitly instantiated in one translation unit per element type
// and, for half and bfloat16, per parameter type (fused_launch_<type>[_float_parameters].cu), so
// that a parallel build compiles them at once: each pair is a long compile (TUNING.md#build-time).
#pragma once

#include "launch/fused_activation.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>

namespace hardact_torch {

/// act(x * scale[c] + shift[c]) with c = (i / inner) % channels over n elements of x's memory
/// order; no scale: act(x + shift[c]); neither: act(x). Param: the parameters' element type.
template <class T, class Param>
cudaError_t launch_scale_shift_activation(FusedActivation activation, double min_val, double max_val, const T* x,
                                          const Param* scale, const Param* shift, T* out, std::size_t n,
                                          std::size_t channels, std::size_t inner, cudaStream_t stream);

/// act(x * scale[c] + shift[c] + residual), c as above, residual full-length in x's memory order;
/// the product, the shift and the residual added in turn (never an FMA). Both parameters given.
template <class T, class Param>
cudaError_t launch_scale_shift_residual_activation(FusedActivation activation, double min_val, double max_val,
                                                   const T* x, const Param* scale, const Param* shift,
                                                   const T* residual, T* out, std::size_t n, std::size_t channels,
                                                   std::size_t inner, cudaStream_t stream);

/// act(x + bias[c]) * (other + other_bias[c]), c as above, other full-length in x's memory order:
/// each sum rounded, then the product (hardact::bias_activation_product). Both biases given.
template <class T, class Param>
cudaError_t launch_bias_activation_product(FusedActivation activation, double min_val, double max_val, const T* x,
                                           const Param* bias, const T* other, const Param* other_bias, T* out,
                                           std::size_t n, std::size_t channels, std::size_t inner,
                                           cudaStream_t stream);

/// Device memory for one launch's partial sums: allocate(bytes, context) returns `bytes` bytes that
/// stay valid for the work the launch enqueues on its stream (fused_ops.cu passes PyTorch's
/// caching allocator: a launch never allocates on its own).
struct TempAllocator {
  void* (*allocate)(std::size_t bytes, void* context) = nullptr;
  void* context = nullptr;
};

/// launch_scale_shift_activation's outputs, and in the same pass mean[s * channels + c]: the mean
/// of the outputs (as written, in T) of sample s and channel c, summed in float (double for
/// double), divided by `positions` and rounded once. `nchw`: x holds samples * channels runs of
/// `positions` elements; otherwise x is channels-last-like (samples of positions * channels
/// elements, channels innermost). x holds samples * channels * positions > 0 elements.
template <class T, class Param>
cudaError_t launch_scale_shift_activation_mean(FusedActivation activation, double min_val, double max_val, const T* x,
                                               const Param* scale, const Param* shift, T* out, T* mean, bool nchw,
                                               std::size_t samples, std::size_t channels, std::size_t positions,
                                               TempAllocator temp, cudaStream_t stream);

/// act(x + residual) over n elements.
template <class T>
cudaError_t launch_residual_activation(FusedActivation activation, double min_val, double max_val, const T* x,
                                       const T* residual, T* out, std::size_t n, cudaStream_t stream);

/// x * hardsigmoid(gate[n, c]): `nchw` x holds planes = N * C runs of `positions` elements;
/// otherwise x is channels-last-like (C gate values per sample of channels * positions elements).
template <class T>
cudaError_t launch_hardsigmoid_gate(const T* x, const T* gate, bool nchw, std::size_t planes, std::size_t channels,
                                    std::size_t positions, T* out, std::size_t n, cudaStream_t stream);

/// activation(x * gate[n, c]), the gate's values in x's type; x laid out as launch_hardsigmoid_gate's.
template <class T>
cudaError_t launch_gated_activation(FusedActivation activation, double min_val, double max_val, const T* x,
                                    const T* gate, bool nchw, std::size_t planes, std::size_t channels,
                                    std::size_t positions, T* out, std::size_t n, cudaStream_t stream);

}  // namespace hardact_torch
