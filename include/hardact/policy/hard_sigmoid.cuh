/// @file hard_sigmoid.cuh
/// @brief HardSigmoid policies: PyTorch's form, the ONNX / TensorRT / Keras slope-offset form, and
///        the gradient of PyTorch's form.
#pragma once

#include <hardact/numeric/arithmetic.cuh>
#include <hardact/numeric/comparisons.cuh>
#include <hardact/numeric/conversions.cuh>

#include <cuda/std/cmath>
#include <cuda/std/type_traits>

namespace hardact {

/// HardSigmoid with an explicit slope and offset, the ONNX `HardSigmoid(alpha, beta)`, TensorRT
/// `kHARD_SIGMOID` and Keras 2 `hard_sigmoid` form:
///   y = max(0, min(1, alpha * x + beta))
///
/// - Usually made with `HardSigmoid::affine(alpha, beta)` or `HardSigmoid::onnx()`
///   (alpha 0.2, beta 0.5, the ONNX defaults); an aggregate, so `HardSigmoidAffine{0.2, 0.5}` works too.
/// - alpha and beta are converted to the compute type (float for float/half/bfloat16/fp8, double for
///   double, so alpha = 0.2 is ONNX's float attribute 0.2f), then alpha * x and + beta are each
///   rounded to nearest, never fused into an FMA and never flushed to zero.
/// - In float this is bit for bit PyTorch's `torch.clamp(x * alpha + beta, 0, 1)`: NaN gives NaN,
///   -0.0 gives +0.0. (PyTorch eager on half/bfloat16 would round after each of its three kernels;
///   this policy rounds once, from float.) PyTorch's `F.hardsigmoid` is `HardSigmoid{}` instead: no
///   alpha and beta reproduce its (x + 3) * float(1/6) rounding.
/// - Launchers reject a NaN or infinite alpha or beta with cudaErrorInvalidValue (is_valid()).
struct HardSigmoidAffine {
  double alpha = 0.2;  ///< slope
  double beta = 0.5;   ///< offset

  /// False unless both parameters are finite.
  __host__ __device__ bool is_valid() const { return cuda::std::isfinite(alpha) && cuda::std::isfinite(beta); }

  template <class T>
  __host__ __device__ T operator()(T x) const {
    using C = compute_t<T>;
    const C product = detail::mul_rn(detail::parameter_as<C>(alpha), to_compute(x));
    const C line = detail::add_rn(product, detail::parameter_as<C>(beta));
    if (detail::is_nan(line)) return from_compute<T>(line);
    return from_compute<T>(detail::clamp_ordered_zeros(line, C(0), C(1)));
  }
};

/// HardSigmoid, PyTorch's `torch.nn.functional.hardsigmoid`:
///   y = min(max(x + 3, 0), 6) * float(1/6)
///
/// - float, half, bfloat16: computed in float and rounded once; multiplies by the float constant
///   1/6 as PyTorch does (dividing by 6 differs on 150 million float inputs).
/// - double: computed in double as min(max(x + 3, 0), 6) / 6, saturating at exactly 0 and 1
///   (PyTorch multiplies by float(1/6) widened to double and saturates at 1.0000000298).
/// - NaN in gives NaN out; +inf gives 1, -inf gives 0.
/// - `HardSigmoid{}` has no parameters; the slope-offset form is a separate type, so this one
///   stays PyTorch-exact and parameter-free. Make it with `HardSigmoid::affine` or `::onnx`.
struct HardSigmoid {
  /// max(0, min(1, alpha * x + beta)), the ONNX / TensorRT / Keras form; see HardSigmoidAffine.
  __host__ __device__ static constexpr HardSigmoidAffine affine(double alpha, double beta) { return {alpha, beta}; }

  /// ONNX HardSigmoid with its default attributes: max(0, min(1, 0.2 * x + 0.5)).
  __host__ __device__ static constexpr HardSigmoidAffine onnx() { return {0.2, 0.5}; }

  template <class T>
  __host__ __device__ T operator()(T x) const {
    using C = compute_t<T>;
    const C relu6 = detail::relu6_of_sum(to_compute(x) + C(3));
    if constexpr (cuda::std::is_same_v<C, double>) {
      // A zero dividend sends the device's IEEE division down its slow path, and every input
      // below -3 clamps to zero: return it undivided, 0 / 6 being that same zero
      // (TUNING.md#double-hardsigmoid-zero).
      if (relu6 == 0.0) return from_compute<T>(relu6);
      return from_compute<T>(relu6 / 6.0);
    } else {
      return from_compute<T>(relu6 * C(1.0f / 6.0f));
    }
  }
};

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

}  // namespace hardact
