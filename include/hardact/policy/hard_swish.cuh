/// @file hard_swish.cuh
/// @brief HardSwish and its gradient.
#pragma once

#include <hardact/numeric/arithmetic.cuh>
#include <hardact/numeric/comparisons.cuh>
#include <hardact/numeric/conversions.cuh>

#include <cuda/std/type_traits>

namespace hardact {

/// HardSwish, PyTorch's `torch.nn.functional.hardswish`:
///   y = (x * min(max(x + 3, 0), 6)) * float(1/6)
///
/// - float, half, bfloat16: computed in float in exactly that order and rounded once, bit for bit
///   PyTorch (x * (gate * (1/6)) would differ). x * gate may be subnormal; it is kept under
///   -use_fast_math too.
/// - double: x * min(max(x + 3, 0), 6) / 6 (PyTorch multiplies by float(1/6) widened to double).
/// - As in PyTorch: NaN gives NaN, +inf gives +inf, -inf gives NaN (-inf * 0), x < -3 gives -0.0.
struct HardSwish {
  template <class T>
  __host__ __device__ T operator()(T x) const {
    using C = compute_t<T>;
    const C input = to_compute(x);
    const C gate = detail::relu6_of_sum(detail::add_rn(input, C(3)));
    const C product = detail::mul_rn(input, gate);
    if constexpr (cuda::std::is_same_v<C, double>) {
      return from_compute<T>(detail::div_rn(product, 6.0));
    } else {
      return from_compute<T>(detail::mul_rn(product, C(1.0f / 6.0f)));
    }
  }
};

/// Gradient of HardSwish, PyTorch's `hardswish_backward(grad_output, self)`:
///   dx = x <= -3 ? 0 : x < 3 ? grad * (x / 3 + 0.5) : grad
///
/// - Computed in float for float/half/bfloat16 (double for double) with a correctly rounded
///   division and no FMA, as PyTorch does, so bit for bit PyTorch in every dtype, including double.
/// - 0 at x = -3, grad at x = 3, and grad for a NaN x (it fails both tests).
struct HardSwishBackward {
  template <class T>
  __host__ __device__ T operator()(T grad, T x) const {
    using C = compute_t<T>;
    const C input = to_compute(x);
    if (input <= C(-3)) return from_compute<T>(C(0));
    if (input < C(3)) {
      const C slope = detail::add_rn(detail::div_rn(input, C(3)), C(0.5));
      return from_compute<T>(detail::mul_rn(to_compute(grad), slope));
    }
    return grad;
  }
};

}  // namespace hardact
