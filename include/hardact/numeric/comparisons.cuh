/// @file comparisons.cuh
/// @brief min/max/clamp building blocks whose NaN and signed-zero behaviour is spelled out, so it
///        is the same on host and device and does not depend on fminf/fmaxf or compiler flags.
#pragma once

#include <cuda/std/bit>
#include <cuda/std/cmath>
#include <cuda/std/cstdint>
#include <cuda/std/limits>
#include <cuda/std/type_traits>

namespace hardact {
namespace detail {

/// `std::max` order: returns `a` unless `a < b`, so a NaN in `a` propagates.
template <class C>
__host__ __device__ inline C max_keep_nan(C a, C b) {
  return (a < b) ? b : a;
}

/// `std::min` order: returns `a` unless `b < a`, so a NaN in `a` propagates.
template <class C>
__host__ __device__ inline C min_keep_nan(C a, C b) {
  return (b < a) ? b : a;
}

/// min(max(sum, 0), 6), a NaN giving NaN, for a `sum` that is never -0.0: x + 3 rounded to nearest
/// (a zero sum of two numbers of opposite sign is +0.0). HardSigmoid's and HardSwish's gate. On the
/// device, in float, the NaN-propagating max and min instructions: with no -0.0 to order, the
/// compare-and-select max gives the same value in one instruction more (per element, where
/// bfloat16 kernels with broadcast operands are instruction-bound: TUNING.md#broadcast-access), and
/// both forms give the canonical NaN (the compiler already made the min that instruction).
template <class C>
__host__ __device__ inline C relu6_of_sum(C sum) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (cuda::std::is_same_v<C, float>) {
    float result;
    asm("max.NaN.f32 %0, %1, 0f00000000;" : "=f"(result) : "f"(sum));
    asm("min.NaN.f32 %0, %1, 0f40C00000;" : "=f"(result) : "f"(result));
    return result;
  }
#endif
  return min_keep_nan(max_keep_nan(sum, C(0)), C(6));
}

/// Rank of a non-NaN float or double in IEEE total order (-0.0 just below +0.0), from its bits.
/// Comparisons compiled with flush-to-zero call every subnormal equal to 0; this rank does not.
template <class C>
__host__ __device__ inline auto total_order_rank(C x) {
  using Rank = cuda::std::conditional_t<sizeof(C) == 8, cuda::std::int64_t, cuda::std::int32_t>;
  const Rank bits = cuda::std::bit_cast<Rank>(x);
  // Negative values: flip the magnitude bits, so a larger magnitude ranks lower.
  return bits < 0 ? static_cast<Rank>(bits ^ cuda::std::numeric_limits<Rank>::max()) : bits;
}

/// max that orders -0.0 below +0.0, like the device's max instruction (and so PyTorch's clamp).
/// The equal case (signed zeros, or subnormals under flush-to-zero) is decided on the bits.
template <class C>
__host__ __device__ inline C max_ordered_zeros(C x, C bound) {
  if (x < bound) return bound;
  if (bound < x) return x;
  return total_order_rank(x) < total_order_rank(bound) ? bound : x;
}

/// min that orders -0.0 below +0.0; see max_ordered_zeros.
template <class C>
__host__ __device__ inline C min_ordered_zeros(C x, C bound) {
  if (bound < x) return bound;
  if (x < bound) return x;
  return total_order_rank(bound) < total_order_rank(x) ? bound : x;
}

/// PyTorch's clamp for a non-NaN `x` and bounds with lo <= hi: max first, then min.
template <class C>
__host__ __device__ inline C clamp_ordered_zeros(C x, C lo, C hi) {
#ifdef __CUDA_ARCH__
  if constexpr (cuda::std::is_same_v<C, float>) {
    // The device's own max/min order -0.0 below +0.0 and, without .ftz (which no compiler flag
    // adds to inline PTX), keep subnormals: PyTorch's clamp in two instructions. The portable
    // path below costs ~20 and made bfloat16 HardTanh compute-bound
    // (TUNING.md#bfloat16-hardtanh-clamp).
    float result;
    asm("max.f32 %0, %1, %2;" : "=f"(result) : "f"(x), "f"(lo));
    asm("min.f32 %0, %1, %2;" : "=f"(result) : "f"(result), "f"(hi));
    return result;
  }
#endif
  return min_ordered_zeros(max_ordered_zeros(x, lo), hi);
}

/// NaN test that works on any ordered type and survives fast-math style flags.
template <class C>
__host__ __device__ inline bool is_nan(C x) {
  return !(x == x);
}

}  // namespace detail
}  // namespace hardact
