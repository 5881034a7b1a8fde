/// @file fused.cuh
/// @brief Fused epilogue policies: bias or residual add, folded inference BatchNorm (scale and
///        shift), squeeze-excitation gating and a gated product, each with an activation in the
///        same pass, and the gradients a training user needs. Their extra inputs are usually
///        hardact::Broadcast operands (operand.cuh): `transform(bias_activation(HardSwish{}), x,
///        per_channel(b, N), y, n)`.
#pragma once

#include <hardact/numeric/arithmetic.cuh>
#include <hardact/numeric/conversions.cuh>
#include <hardact/policy/chain.cuh>
#include <hardact/policy/hard_sigmoid.cuh>
#include <hardact/policy/validity.cuh>

namespace hardact {

/// y = x + addend, rounded once in the compute type: PyTorch's `x + b` in float. The first step of
/// bias_activation and residual_activation.
struct Add {
  template <class T>
  __host__ __device__ T operator()(T x, T addend) const {
    return from_compute<T>(detail::add_rn(to_compute(x), to_compute(addend)));
  }
};

/// y = x * gate, rounded once in the compute type: PyTorch's `x * g` in float. The first step of
/// gate_activation.
struct Multiply {
  template <class T>
  __host__ __device__ T operator()(T x, T gate) const {
    return from_compute<T>(detail::mul_rn(to_compute(x), to_compute(gate)));
  }
};

/// y = x * scale + shift with the product rounded before the add (never one FMA), so in float it is
/// bit for bit PyTorch's `x * scale + shift`. The first step of scale_shift_activation.
struct MultiplyAdd {
  template <class T>
  __host__ __device__ T operator()(T x, T scale, T shift) const {
    return from_compute<T>(detail::add_rn(detail::mul_rn(to_compute(x), to_compute(scale)), to_compute(shift)));
  }
};

/// y = x * scale + shift + residual, each step rounded as PyTorch's `bn(x) + residual` rounds it
/// in float (the product, then the shift, then the residual; never an FMA). The first step of
/// scale_shift_residual_activation.
struct MultiplyAddAdd {
  template <class T>
  __host__ __device__ T operator()(T x, T scale, T shift, T residual) const {
    const compute_t<T> folded = detail::add_rn(detail::mul_rn(to_compute(x), to_compute(scale)), to_compute(shift));
    return from_compute<T>(detail::add_rn(folded, to_compute(residual)));
  }
};

/// activation(x + bias): called as op(x, bias), bias usually `per_channel(b, columns)` over a
/// row-major [rows, columns] array (a GEMM's output; cuBLASLt's epilogues have no HardSwish or
/// HardSigmoid). In float, bit for bit PyTorch's `F.hardswish(x + b)`; on half and bfloat16 the sum
/// stays in float and the result is rounded once (PyTorch eager rounds the sum first).
template <class Activation>
__host__ __device__ constexpr Chain<Add, Activation> bias_activation(Activation activation) {
  return chain(Add{}, activation);
}

/// activation(x + residual): the same policy as bias_activation, called with a full-length
/// residual as its second input.
template <class Activation>
__host__ __device__ constexpr Chain<Add, Activation> residual_activation(Activation activation) {
  return chain(Add{}, activation);
}

/// activation(x * gate): called as op(x, gate), gate usually a per-(n, c) `per_channel(gate, N * C,
/// H * W)` over NCHW or `per_sample_channel(gate, C, H * W)` over channels-last, already through its
/// own function (a squeeze-excitation's sigmoid, computed elsewhere). In float, bit for bit PyTorch's
/// `act(x * g)`; half and bfloat16 round once (eager rounds the product first; with a clamp such as
/// ReLU6 the results are the same, as clamping to representable bounds commutes with rounding).
template <class Activation>
__host__ __device__ constexpr Chain<Multiply, Activation> gate_activation(Activation activation) {
  return chain(Multiply{}, activation);
}

/// activation(x * scale + shift): called as op(x, scale, shift), the folded form of an inference
/// BatchNorm (scale = weight / sqrt(running_var + eps), shift = bias - running_mean * scale),
/// usually with `per_channel(scale, C, H * W)` for NCHW or `per_channel(scale, C)` for
/// channels-last. In float, bit for bit PyTorch's `act(x * scale + shift)` with scale and shift
/// broadcast (never an FMA); half and bfloat16 round once.
template <class Activation>
__host__ __device__ constexpr Chain<MultiplyAdd, Activation> scale_shift_activation(Activation activation) {
  return chain(MultiplyAdd{}, activation);
}

/// activation(x * scale + shift + residual): called as op(x, scale, shift, residual), an inference
/// BatchNorm, the residual add after it and an activation (identity for MobileNet's linear
/// bottleneck) in one pass; scale and shift usually per_channel broadcasts, the residual
/// full-length. In float, bit for bit `act(x * scale + shift + residual)`; half and bfloat16 round
/// once.
template <class Activation>
__host__ __device__ constexpr Chain<MultiplyAddAdd, Activation> scale_shift_residual_activation(Activation activation) {
  return chain(MultiplyAddAdd{}, activation);
}

/// y = activation(x + bias) * (other + other_bias): called as op(x, bias, other, other_bias), the
/// gated product of two convolutions' outputs with both biases added in the same pass (StarNet's
/// star operation, `act(f1(y)) * f2(y)` with the convolutions run without their biases); the
/// biases usually per_channel broadcasts, other full-length. In float, bit for bit PyTorch's
/// `act(x + bias) * (other + other_bias)` (each sum rounded, then the product; never an FMA); half
/// and bfloat16 round once.
template <class Activation>
struct BiasActivationProduct {
  Activation activation{};

  __host__ __device__ bool is_valid() const { return detail::policy_is_valid(activation); }

  template <class T>
  __host__ __device__ T operator()(T x, T bias, T other, T other_bias) const {
    using C = compute_t<T>;
    const C gated = activation(detail::add_rn(to_compute(x), to_compute(bias)));
    return from_compute<T>(detail::mul_rn(gated, detail::add_rn(to_compute(other), to_compute(other_bias))));
  }
};

/// BiasActivationProduct with `activation`: `transform(bias_activation_product(ReLU6{}), x,
/// per_channel(b1, C), other, per_channel(b2, C), out, n)` over channels-last [N, H, W, C] arrays.
template <class Activation>
__host__ __device__ constexpr BiasActivationProduct<Activation> bias_activation_product(Activation activation) {
  return BiasActivationProduct<Activation>{activation};
}

/// Squeeze-excitation gating, y = x * hardsigmoid(gate): called as op(x, gate), gate usually a
/// per-(n, c) `per_channel(gate, N * C, H * W)` over NCHW or `per_sample_channel(gate, C, H * W)`
/// over channels-last. In float, bit for bit PyTorch's
/// `x * F.hardsigmoid(gate)` (double: HardSigmoid{}'s double form).
struct HardSigmoidGate {
  template <class T>
  __host__ __device__ T operator()(T x, T gate) const {
    return from_compute<T>(detail::mul_rn(to_compute(x), HardSigmoid{}(to_compute(gate))));
  }
};

/// Gradient of bias_activation / residual_activation with respect to x (and to the residual):
/// op(grad, x, addend) = backward(grad, x + addend), e.g.
/// `BiasActivationBackward<HardSwishBackward>{}`; the sum is formed as the forward forms it. The
/// bias gradient is this result summed per channel: hardact::channel_sum (reduce.cuh).
template <class Backward>
struct BiasActivationBackward {
  Backward backward{};

  __host__ __device__ bool is_valid() const { return detail::policy_is_valid(backward); }

  template <class T>
  __host__ __device__ T operator()(T grad, T x, T addend) const {
    using C = compute_t<T>;
    const C sum = detail::add_rn(to_compute(x), to_compute(addend));
    return from_compute<T>(backward(to_compute(grad), sum));
  }
};

/// Gradient of scale_shift_activation with respect to x: op(grad, x, scale, shift) =
/// backward(grad, x * scale + shift) * scale, in the compute type, rounded once.
template <class Backward>
struct ScaleShiftActivationBackward {
  Backward backward{};

  __host__ __device__ bool is_valid() const { return detail::policy_is_valid(backward); }

  template <class T>
  __host__ __device__ T operator()(T grad, T x, T scale, T shift) const {
    using C = compute_t<T>;
    const C c_scale = to_compute(scale);
    const C z = detail::add_rn(detail::mul_rn(to_compute(x), c_scale), to_compute(shift));
    return from_compute<T>(detail::mul_rn(backward(to_compute(grad), z), c_scale));
  }
};

}  // namespace hardact
