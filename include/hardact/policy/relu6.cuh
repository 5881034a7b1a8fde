/// @file relu6.cuh
/// @brief ReLU6 policy.
#pragma once

#include <hardact/numeric/comparisons.cuh>
#include <hardact/numeric/conversions.cuh>

namespace hardact {

/// ReLU6, PyTorch's `torch.nn.functional.relu6` (= hardtanh(x, 0, 6)):
///   y = min(max(x, 0), 6)
///
/// - Same results as `HardTanh{0.0, 6.0}`, without run-time bounds: NaN is returned unchanged,
///   -0.0 and negative subnormals give +0.0 (as PyTorch, in every dtype), positive subnormals are
///   kept, also under -use_fast_math. Its gradient is `HardTanhBackward{0.0, 6.0}`.
struct ReLU6 {
  template <class T>
  __host__ __device__ T operator()(T x) const {
    using C = compute_t<T>;
    const C value = to_compute(x);
    if (detail::is_nan(value)) return x;
    return from_compute<T>(detail::clamp_ordered_zeros(value, C(0), C(6)));
  }
};

}  // namespace hardact
