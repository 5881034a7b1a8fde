/// @file hard_sigmoid.cuh
/// @brief HardSigmoid policy.
#pragma once

#include <hardact/numeric/comparisons.cuh>
#include <hardact/numeric/conversions.cuh>

#include <cuda/std/type_traits>

namespace hardact {

/// HardSigmoid, PyTorch's `torch.nn.functional.hardsigmoid`:
///   y = min(max(x + 3, 0), 6) * float(1/6)
///
/// - float, half, bfloat16: computed in float and rounded once; multiplies by the float constant
///   1/6 as PyTorch does (dividing by 6 differs on 150 million float inputs).
/// - double: computed in double as min(max(x + 3, 0), 6) / 6, saturating at exactly 0 and 1
///   (PyTorch multiplies by float(1/6) widened to double and saturates at 1.0000000298).
/// - NaN in gives NaN out; +inf gives 1, -inf gives 0.
struct HardSigmoid {
  template <class T>
  __host__ __device__ T operator()(T x) const {
    using C = compute_t<T>;
    const C relu6 = detail::min_keep_nan(detail::max_keep_nan(to_compute(x) + C(3), C(0)), C(6));
    if constexpr (cuda::std::is_same_v<C, double>) {
      return from_compute<T>(relu6 / 6.0);
    } else {
      return from_compute<T>(relu6 * C(1.0f / 6.0f));
    }
  }
};

}  // namespace hardact
