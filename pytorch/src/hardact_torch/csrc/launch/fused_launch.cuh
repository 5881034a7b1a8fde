// Definitions of fused_launch.h's launches, included only by the fused_launch_*.cu files.
#pragma once

#include "launch/fused_launch.h"

#include <hardact/hardact.cuh>

#include <limits>

namespace hardact_torch {
namespace fused_detail {

/// y = x: the activation of a fused op that has none (a BatchNorm alone).
struct Identity {
  template <class T>
  __host__ __device__ T operator()(T x) const {
    return x;
  }
};

/// Calls f(policy) with hardact's policy for `activation`.
template <class F>
cudaError_t with_activation(FusedActivation activation, double min_val, double max_val, F&& f) {
  switch (activation) {
    case FusedActivation::identity: return f(Identity{});
    case FusedActivation::hardsigmoid: return f(hardact::HardSigmoid{});
    case FusedActivation::hardswish: return f(hardact::HardSwish{});
    case FusedActivation::relu6: return f(hardact::ReLU6{});
    case FusedActivation::hardtanh: return f(hardact::HardTanh{min_val, max_val});
    case FusedActivation::relu: return f(hardact::HardTanh{0.0, std::numeric_limits<double>::infinity()});
    case FusedActivation::silu: return f(hardact::SiLU{});
  }
  return cudaErrorInvalidValue;
}

}  // namespace fused_detail

template <class T, class Param>
cudaError_t launch_scale_shift_activation(FusedActivation activation, double min_val, double max_val, const T* x,
                                          const Param* scale, const Param* shift, T* out, std::size_t n,
                                          std::size_t channels, std::size_t inner, cudaStream_t stream) {
  return fused_detail::with_activation(activation, min_val, max_val, [&](auto act) {
    if (scale != nullptr) {
      return hardact::transform(hardact::scale_shift_activation(act), x, hardact::per_channel(scale, channels, inner),
                                hardact::per_channel(shift, channels, inner), out, n, stream);
    }
    if (shift != nullptr) {
      return hardact::transform(hardact::bias_activation(act), x, hardact::per_channel(shift, channels, inner), out, n,
                                stream);
    }
    return hardact::transform(act, x, out, n, stream);
  });
}

template <class T, class Param>
cudaError_t launch_scale_shift_residual_activation(FusedActivation activation, double min_val, double max_val,
                                                   const T* x, const Param* scale, const Param* shift,
                                                   const T* residual, T* out, std::size_t n, std::size_t channels,
                                                   std::size_t inner, cudaStream_t stream) {
  return fused_detail::with_activation(activation, min_val, max_val, [&](auto act) {
    return hardact::transform(hardact::scale_shift_residual_activation(act), x,
                              hardact::per_channel(scale, channels, inner),
                              hardact::per_channel(shift, channels, inner), residual, out, n, stream);
  });
}

template <class T, class Param>
cudaError_t launch_bias_activation_product(FusedActivation activation, double min_val, double max_val, const T* x,
                                           const Param* bias, const T* other, const Param* other_bias, T* out,
                                           std::size_t n, std::size_t channels, std::size_t inner,
                                           cudaStream_t stream) {
  return fused_detail::with_activation(activation, min_val, max_val, [&](auto act) {
    return hardact::transform(hardact::bias_activation_product(act), x, hardact::per_channel(bias, channels, inner),
                              other, hardact::per_channel(other_bias, channels, inner), out, n, stream);
  });
}

template <class T, class Param>
cudaError_t launch_scale_shift_activation_mean(FusedActivation activation, double min_val, double max_val, const T* x,
                                               const Param* scale, const Param* shift, T* out, T* mean, bool nchw,
                                               std::size_t samples, std::size_t channels, std::size_t positions,
                                               TempAllocator temp, cudaStream_t stream) {
  const std::size_t n = samples * channels * positions;
  const double to_mean = 1.0 / static_cast<double>(positions);
  // One sum per (sample, channel): per_channel over samples * channels runs of NCHW memory, per
  // sample and channel over channels-last memory, whose channel index is then i % channels.
  auto output = nchw ? hardact::with_channel_sums(out, mean, samples * channels, positions, to_mean)
                     : hardact::with_sample_channel_sums(out, mean, channels, positions, to_mean);
  const std::size_t bytes = hardact::temp_storage_bytes(output, n);
  if (bytes > 0) {
    output.temp_storage = temp.allocate(bytes, temp.context);
    output.temp_storage_bytes = bytes;
  }
  const std::size_t inner = nchw ? positions : 1;
  return fused_detail::with_activation(activation, min_val, max_val, [&](auto act) {
    if (scale != nullptr) {
      return hardact::transform(hardact::scale_shift_activation(act), x, hardact::per_channel(scale, channels, inner),
                                hardact::per_channel(shift, channels, inner), output, n, stream);
    }
    if (shift != nullptr) {
      return hardact::transform(hardact::bias_activation(act), x, hardact::per_channel(shift, channels, inner), output,
                                n, stream);
    }
    return hardact::transform(act, x, output, n, stream);
  });
}

template <class T>
cudaError_t launch_residual_activation(FusedActivation activation, double min_val, double max_val, const T* x,
                                       const T* residual, T* out, std::size_t n, cudaStream_t stream) {
  return fused_detail::with_activation(activation, min_val, max_val, [&](auto act) {
    return hardact::transform(hardact::residual_activation(act), x, residual, out, n, stream);
  });
}

template <class T>
cudaError_t launch_hardsigmoid_gate(const T* x, const T* gate, bool nchw, std::size_t planes, std::size_t channels,
                                    std::size_t positions, T* out, std::size_t n, cudaStream_t stream) {
  if (nchw) {
    return hardact::transform(hardact::HardSigmoidGate{}, x, hardact::per_channel(gate, planes, positions), out, n,
                              stream);
  }
  return hardact::transform(hardact::HardSigmoidGate{}, x, hardact::per_sample_channel(gate, channels, positions), out,
                            n, stream);
}

template <class T>
cudaError_t launch_gated_activation(FusedActivation activation, double min_val, double max_val, const T* x,
                                    const T* gate, bool nchw, std::size_t planes, std::size_t channels,
                                    std::size_t positions, T* out, std::size_t n, cudaStream_t stream) {
  return fused_detail::with_activation(activation, min_val, max_val, [&](auto act) {
    const auto op = hardact::gate_activation(act);
    if (nchw) return hardact::transform(op, x, hardact::per_channel(gate, planes, positions), out, n, stream);
    return hardact::transform(op, x, hardact::per_sample_channel(gate, channels, positions), out, n, stream);
  });
}

}  // namespace hardact_torch

// One element type T, its parameters in Param (and, for 16-bit T, also in T itself).
#define HARDACT_TORCH_INSTANTIATE_SCALE_SHIFT(T, Param)                                                              \
  template cudaError_t hardact_torch::launch_scale_shift_activation<T, Param>(                                       \
      FusedActivation, double, double, const T*, const Param*, const Param*, T*, std::size_t, std::size_t,           \
      std::size_t, cudaStream_t);                                                                                    \
  template cudaError_t hardact_torch::launch_scale_shift_residual_activation<T, Param>(                              \
      FusedActivation, double, double, const T*, const Param*, const Param*, const T*, T*, std::size_t, std::size_t, \
      std::size_t, cudaStream_t);                                                                                    \
  template cudaError_t hardact_torch::launch_bias_activation_product<T, Param>(                                      \
      FusedActivation, double, double, const T*, const Param*, const T*, const Param*, T*, std::size_t, std::size_t, \
      std::size_t, cudaStream_t);                                                                                    \
  template cudaError_t hardact_torch::launch_scale_shift_activation_mean<T, Param>(                                  \
      FusedActivation, double, double, const T*, const Param*, const Param*, T*, T*, bool, std::size_t, std::size_t, \
      std::size_t, hardact_torch::TempAllocator, cudaStream_t);
#define HARDACT_TORCH_INSTANTIATE_FUSED(T)                                                                           \
  template cudaError_t hardact_torch::launch_residual_activation<T>(FusedActivation, double, double, const T*,      \
                                                                    const T*, T*, std::size_t, cudaStream_t);       \
  template cudaError_t hardact_torch::launch_gated_activation<T>(FusedActivation, double, double, const T*, const T*, \
                                                                 bool, std::size_t, std::size_t, std::size_t, T*,   \
                                                                 std::size_t, cudaStream_t);                        \
  template cudaError_t hardact_torch::launch_hardsigmoid_gate<T>(const T*, const T*, bool, std::size_t, std::size_t, \
                                                                 std::size_t, T*, std::size_t, cudaStream_t);
