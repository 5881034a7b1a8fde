/// @file affine.cuh
/// @brief Affine steps for fused chains (see chain.cuh): Scale, Offset and Affine.
#pragma once

#include <hardact/numeric/arithmetic.cuh>
#include <hardact/numeric/conversions.cuh>

#include <cuda/std/cmath>

namespace hardact {

/// y = x * scale. Alone it is PyTorch's `x * scale` (in float); mostly a step of hardact::chain.
/// scale is converted to the compute type; the product keeps subnormals under -use_fast_math.
/// Launchers reject a NaN or infinite scale (is_valid()).
struct Scale {
  double scale = 1.0;  ///< factor

  /// False unless scale is finite.
  __host__ __device__ bool is_valid() const { return cuda::std::isfinite(scale); }

  template <class T>
  __host__ __device__ T operator()(T x) const {
    using C = compute_t<T>;
    return from_compute<T>(detail::mul_rn(to_compute(x), detail::parameter_as<C>(scale)));
  }
};

/// y = x + offset. Alone it is PyTorch's `x + offset` (in float); mostly a step of hardact::chain.
/// Launchers reject a NaN or infinite offset (is_valid()).
struct Offset {
  double offset = 0.0;  ///< addend

  /// False unless offset is finite.
  __host__ __device__ bool is_valid() const { return cuda::std::isfinite(offset); }

  template <class T>
  __host__ __device__ T operator()(T x) const {
    using C = compute_t<T>;
    return from_compute<T>(detail::add_rn(to_compute(x), detail::parameter_as<C>(offset)));
  }
};

/// y = x * scale + offset, with the product rounded before the add (never one FMA), so in float it
/// is bit for bit PyTorch's `x * scale + offset`. Launchers reject non-finite parameters.
struct Affine {
  double scale = 1.0;   ///< factor, applied first
  double offset = 0.0;  ///< addend, applied second

  /// False unless both parameters are finite.
  __host__ __device__ bool is_valid() const { return cuda::std::isfinite(scale) && cuda::std::isfinite(offset); }

  template <class T>
  __host__ __device__ T operator()(T x) const {
    using C = compute_t<T>;
    return from_compute<T>(
        detail::add_rn(detail::mul_rn(to_compute(x), detail::parameter_as<C>(scale)), detail::parameter_as<C>(offset)));
  }
};

}  // namespace hardact
