/// @file silu.cuh
/// @brief SiLU (swish), the smooth function HardSwish approximates.
#pragma once

#include <hardact/numeric/arithmetic.cuh>
#include <hardact/numeric/conversions.cuh>

#include <cuda/std/cmath>
#include <cuda/std/type_traits>

namespace hardact {
namespace detail {

#ifdef __CUDA_ARCH__
/// x / (1 + exp(-x)) in float on the device, as nvcc compiles PyTorch's `x / (1.0f + expf(-x))`
/// without fast-math flags: CUDA's expf (range reduction, ex2.approx, then a scale by 2^j that nvcc
/// fuses with the + 1), then a correctly rounded division. One block of inline PTX, so that
/// -use_fast_math (which would make expf __expf, flush subnormals and approximate the division)
/// never changes it.
__device__ inline float silu_float(float x) {
  float result;
  asm("{\n\t"
      ".reg .f32 a, t, s, j, r, e, d;\n\t"
      ".reg .b32 bits;\n\t"
      "neg.f32 a, %1;\n\t"
      "fma.rn.f32 t, a, 0f3BBB989D, 0f3F000000;\n\t"
      "cvt.sat.f32.f32 t, t;\n\t"
      "fma.rm.f32 s, t, 0f437C0000, 0f4B400001;\n\t"
      "add.rn.f32 j, s, 0fCB40007F;\n\t"
      "neg.f32 j, j;\n\t"
      "fma.rn.f32 r, a, 0f3FB8AA3B, j;\n\t"
      "fma.rn.f32 r, a, 0f32A57060, r;\n\t"
      "mov.b32 bits, s;\n\t"
      "shl.b32 bits, bits, 23;\n\t"
      "mov.b32 s, bits;\n\t"
      "ex2.approx.ftz.f32 e, r;\n\t"
      "fma.rn.f32 d, e, s, 0f3F800000;\n\t"
      "div.rn.f32 %0, %1, d;\n\t"
      "}"
      : "=f"(result)
      : "f"(x));
  return result;
}
#endif

}  // namespace detail

/// SiLU (swish), PyTorch's `torch.nn.functional.silu`:
///   y = x / (1 + exp(-x))
///
/// - float, half, bfloat16: computed in float and rounded once. On the device bit for bit PyTorch's
///   F.silu (every float32, float16 and bfloat16 pattern: the package's test_silu_every_pattern),
///   whatever the flags (detail::silu_float). On the host the C library's expf: within 2 ulp, not bit for bit.
/// - double: x / (1 + exp(-x)) with CUDA's (the C library's) exp.
/// - As in PyTorch: NaN gives NaN, +inf gives +inf, -inf gives NaN (-inf / inf), -0.0 gives -0.0, a
///   large negative x gives -0.0, a subnormal x gives x / 2 (kept, not flushed).
struct SiLU {
  template <class T>
  __host__ __device__ T operator()(T x) const {
    using C = compute_t<T>;
    const C input = to_compute(x);
    if constexpr (cuda::std::is_same_v<C, double>) {
      return from_compute<T>(detail::div_rn(input, detail::add_rn(1.0, cuda::std::exp(-input))));
    } else {
#ifdef __CUDA_ARCH__
      return from_compute<T>(detail::silu_float(input));
#else
      return from_compute<T>(input / (1.0f + cuda::std::exp(-input)));
#endif
    }
  }
};

}  // namespace hardact
