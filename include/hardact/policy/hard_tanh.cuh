/// @file hard_tanh.cuh
/// @brief HardTanh policy and its gradient.
#pragma once

#include <hardact/numeric/arithmetic.cuh>
#include <hardact/numeric/comparisons.cuh>
#include <hardact/numeric/conversions.cuh>

namespace hardact {

/// HardTanh, PyTorch's `torch.nn.functional.hardtanh(x, min_val, max_val)`:
///   y = clamp(x, min_val, max_val)
///
/// - Aggregate: `HardTanh{}` is PyTorch's default [-1, 1]; `HardTanh{0.0, 6.0}` is ReLU6.
/// - The bounds are converted to the compute type (float for float/half/bfloat16, double for
///   double) and applied there, then the result is rounded once, as PyTorch does.
/// - NaN is returned unchanged (payload kept); -0.0 and subnormals pass through; at a bound of
///   exactly 0, -0.0 becomes +0.0 (the device max instruction orders -0.0 below +0.0). Subnormal
///   inputs and bounds are kept under -use_fast_math too.
/// - Launchers reject min_val > max_val or a NaN bound with cudaErrorInvalidValue (is_valid()).
struct HardTanh {
  double min_val = -1.0;  ///< lower bound
  double max_val = 1.0;   ///< upper bound

  /// False when the bounds are NaN or out of order; launchers then refuse to run.
  __host__ __device__ constexpr bool is_valid() const { return min_val <= max_val; }

  template <class T>
  __host__ __device__ T operator()(T x) const {
    using C = compute_t<T>;
    const C value = to_compute(x);
    if (detail::is_nan(value)) return x;
    return from_compute<T>(
        detail::clamp_ordered_zeros(value, detail::parameter_as<C>(min_val), detail::parameter_as<C>(max_val)));
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
