/// @file arithmetic.cuh
/// @brief Float arithmetic and comparisons whose results do not depend on compiler flags.
///
/// With `-use_fast_math` or `-ftz=true`, nvcc compiles `a * b`, `__fmul_rn(a, b)` and `a < b` on
/// float to the `.ftz` instructions, which read and write subnormals as zero; with `-prec-div=false`
/// `a / b` becomes an approximation; and a multiply followed by an add may be fused into one FMA.
/// PyTorch builds without any of that, so where a subnormal (or a contraction) can change an
/// activation's result, policies use these helpers: on the device they are inline PTX without
/// `.ftz` (flags never rewrite inline PTX), on the host plain IEEE operations.
#pragma once

#include <cuda/std/type_traits>

namespace hardact {
namespace detail {

/// a * b, rounded to nearest even, subnormals kept, never fused with a neighbouring add.
template <class C>
__host__ __device__ inline C mul_rn(C a, C b) {
#ifdef __CUDA_ARCH__
  if constexpr (cuda::std::is_same_v<C, float>) {
    float result;
    asm("mul.rn.f32 %0, %1, %2;" : "=f"(result) : "f"(a), "f"(b));
    return result;
  } else if constexpr (cuda::std::is_same_v<C, double>) {
    return __dmul_rn(a, b);  // double never flushes; the intrinsic only blocks FMA contraction
  }
#endif
  return a * b;
}

/// a + b, rounded to nearest even, subnormals kept, never fused with a neighbouring multiply.
template <class C>
__host__ __device__ inline C add_rn(C a, C b) {
#ifdef __CUDA_ARCH__
  if constexpr (cuda::std::is_same_v<C, float>) {
    float result;
    asm("add.rn.f32 %0, %1, %2;" : "=f"(result) : "f"(a), "f"(b));
    return result;
  } else if constexpr (cuda::std::is_same_v<C, double>) {
    return __dadd_rn(a, b);
  }
#endif
  return a + b;
}

/// a / b, correctly rounded (IEEE), subnormals kept, even under `-prec-div=false`.
template <class C>
__host__ __device__ inline C div_rn(C a, C b) {
#ifdef __CUDA_ARCH__
  if constexpr (cuda::std::is_same_v<C, float>) {
    float result;
    asm("div.rn.f32 %0, %1, %2;" : "=f"(result) : "f"(a), "f"(b));
    return result;
  } else if constexpr (cuda::std::is_same_v<C, double>) {
    return __ddiv_rn(a, b);
  }
#endif
  return a / b;
}

/// A double parameter (a bound, a scale) in the compute type C, rounded to nearest; a value that is
/// subnormal in float stays subnormal (`cvt.rn.ftz.f32.f64` would make it zero).
template <class C>
__host__ __device__ inline C parameter_as(double value) {
#ifdef __CUDA_ARCH__
  if constexpr (cuda::std::is_same_v<C, float>) {
    float result;
    asm("cvt.rn.f32.f64 %0, %1;" : "=f"(result) : "d"(value));
    return result;
  }
#endif
  return static_cast<C>(value);
}

/// a <= b, comparing subnormals as themselves (`setp.le.ftz` would call 1e-40 <= 0 true).
/// False when either is NaN.
template <class C>
__host__ __device__ inline bool less_equal(C a, C b) {
#ifdef __CUDA_ARCH__
  if constexpr (cuda::std::is_same_v<C, float>) {
    unsigned int result;
    asm("{\n\t.reg .pred p;\n\tsetp.le.f32 p, %1, %2;\n\tselp.u32 %0, 1, 0, p;\n\t}" : "=r"(result) : "f"(a), "f"(b));
    return result != 0;
  }
#endif
  return a <= b;
}

/// a >= b, comparing subnormals as themselves; false when either is NaN. See less_equal.
template <class C>
__host__ __device__ inline bool greater_equal(C a, C b) {
  return less_equal(b, a);
}

}  // namespace detail
}  // namespace hardact
