/// @file backward.cuh
/// @brief Gradients of HardSigmoid and HardTanh: two-input policies called as op(grad, x).
#pragma once

#include <hardact/numeric/arithmetic.cuh>
#include <hardact/numeric/conversions.cuh>

#include <cuda/std/type_traits>

namespace hardact {

/// Gradient of HardSigmoid, PyTorch's `hardsigmoid_backward(grad_output, self)`:
///   dx = (x > -3 && x < 3) ? grad * float(1/6) : 0
///
/// - float, half, bfloat16: computed in float, rounded once, bit for bit PyTorch; the product keeps
///   subnormals under -use_fast_math. A NaN x gives +0; a NaN grad inside (-3, 3) gives NaN.
/// - double: grad / 6 correctly rounded, the derivative of `HardSigmoid{}`'s double form
///   (PyTorch multiplies by float(1/6) widened to double, a relative difference below 2e-8).
/// - Use with the two-input launcher: `transform(HardSigmoidBackward{}, grad, x, dx, n, stream)`.
struct HardSigmoidBackward {
  template <class T>
  __host__ __device__ T operator()(T grad, T x) const {
    using C = compute_t<T>;
    const C input = to_compute(x);
    if (!(input > C(-3) && input < C(3))) return from_compute<T>(C(0));
    if constexpr (cuda::std::is_same_v<C, double>) {
      return from_compute<T>(detail::div_rn(to_compute(grad), 6.0));
    } else {
      return from_compute<T>(detail::mul_rn(to_compute(grad), C(1.0f / 6.0f)));
    }
  }
};

/// Gradient of HardTanh, PyTorch's `hardtanh_backward(grad_output, self, min_val, max_val)`:
///   dx = (x <= min_val || x >= max_val) ? 0 : grad
///
/// - Aggregate like HardTanh: `HardTanhBackward{}` is [-1, 1]; `HardTanhBackward{0.0, 6.0}` is the
///   gradient of ReLU6 (a positive subnormal x passes grad, also under -use_fast_math).
/// - Bounds are converted to the compute type as in HardTanh; grad is passed through unchanged, so a
///   NaN x (which fails both tests) passes grad through, as in PyTorch.
/// - Launchers reject min_val > max_val or a NaN bound with cudaErrorInvalidValue (is_valid()).
struct HardTanhBackward {
  double min_val = -1.0;  ///< lower bound of the forward HardTanh
  double max_val = 1.0;   ///< upper bound of the forward HardTanh

  /// False when the bounds are NaN or out of order; launchers then refuse to run.
  __host__ __device__ constexpr bool is_valid() const { return min_val <= max_val; }

  template <class T>
  __host__ __device__ T operator()(T grad, T x) const {
    using C = compute_t<T>;
    const C input = to_compute(x);
    if (detail::less_equal(input, detail::parameter_as<C>(min_val)) ||
        detail::greater_equal(input, detail::parameter_as<C>(max_val))) {
      return from_compute<T>(C(0));
    }
    return grad;
  }
};

}  // namespace hardact
