/// @file conversions.cuh
/// @brief Compute types and explicit conversions between element types.
///
/// Reduced precision types are widened to float, computed there and rounded once on the way back,
/// as PyTorch does. Every conversion is spelled with an explicit intrinsic so the headers still
/// compile under PyTorch's `-D__CUDA_NO_HALF_CONVERSIONS__ -D__CUDA_NO_BFLOAT16_CONVERSIONS__`.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cuda/std/bit>
#include <cuda/std/type_traits>
#include <cuda/std/utility>

namespace hardact {

namespace detail {

/// True for the toolkit's one-byte float types (__nv_fp8_e4m3, __nv_fp8_e5m2 and their kin), told
/// by their shape (one byte holding a raw `__x`) so that this header needs no <cuda_fp8.h>.
template <class T, class = void>
struct is_toolkit_fp8 : cuda::std::false_type {};
template <class T>
struct is_toolkit_fp8<T, cuda::std::void_t<decltype(cuda::std::declval<const T&>().__x)>>
    : cuda::std::bool_constant<sizeof(T) == 1> {};

}  // namespace detail

/// The message of a build that uses fp8 elements without their header: without it they would reach
/// the policies as a type with no arithmetic, and the error would name a missing operator instead.
#define HARDACT_FP8_NEEDS_ITS_HEADER \
  "hardact: fp8 element types need #include <hardact/fp8.cuh> (computed in float, rounded once)"

/// The type an element of type `T` is computed in: float for half, bfloat16 and (with
/// hardact/fp8.cuh) fp8, otherwise `T` itself (float, double, or a user type).
template <class T>
struct compute_type {
  static_assert(!detail::is_toolkit_fp8<T>::value, HARDACT_FP8_NEEDS_ITS_HEADER);
  using type = T;
};
template <>
struct compute_type<__half> {
  using type = float;
};
template <>
struct compute_type<__nv_bfloat16> {
  using type = float;
};

/// Shorthand for `compute_type<T>::type`.
template <class T>
using compute_t = typename compute_type<T>::type;

namespace detail {

/// How an fp8 type converts to and from float and double. hardact/fp8.cuh specializes it for
/// __nv_fp8_e4m3 and __nv_fp8_e5m2, so that this header needs no <cuda_fp8.h>.
template <class T>
struct fp8_conversions {
  static constexpr bool kIsFp8 = false;
};

}  // namespace detail

/// Converts `value` to `To`, rounding to nearest-even once. Conversions to fp8 (hardact/fp8.cuh)
/// saturate to the largest finite value (NaN stays NaN). Any pair not listed falls back to `static_cast`.
/// (PyTorch's `.to(torch.float8_e4m3fn)` up to 2.11 gives NaN beyond +-464 and for +-inf, and
/// `.to(torch.float8_e5m2)` gives +-inf from +-61440 on; they agree with this within the fp8 range,
/// so always for bounded activations such as HardSigmoid, ReLU6 and HardTanh.)
template <class To, class From>
__host__ __device__ inline To convert(From value) {
  if constexpr (cuda::std::is_same_v<To, From>) {
    return value;
  } else if constexpr (cuda::std::is_same_v<From, __half>) {
    return convert<To>(__half2float(value));
  } else if constexpr (cuda::std::is_same_v<From, __nv_bfloat16>) {
    // A bfloat16 is the high half of the float it widens to. Spelled as the shift (what the
    // device's conversion does), the compiler can fold it into the extraction of a value from a
    // packed word: one instruction instead of two for the upper value of each pair, where
    // bfloat16 kernels with broadcast operands are instruction-bound (TUNING.md#broadcast-access).
    return convert<To>(cuda::std::bit_cast<float>(static_cast<unsigned int>(cuda::std::bit_cast<unsigned short>(value))
                                                  << 16));
  } else if constexpr (detail::fp8_conversions<From>::kIsFp8) {
    return convert<To>(detail::fp8_conversions<From>::to_float(value));
  } else if constexpr (cuda::std::is_same_v<To, __half>) {
    if constexpr (cuda::std::is_same_v<From, double>) {
      return __double2half(value);
    } else {
      return __float2half_rn(static_cast<float>(value));
    }
  } else if constexpr (cuda::std::is_same_v<To, __nv_bfloat16>) {
    if constexpr (cuda::std::is_same_v<From, double>) {
      return __double2bfloat16(value);
    } else {
      return __float2bfloat16_rn(static_cast<float>(value));
    }
  } else if constexpr (detail::fp8_conversions<To>::kIsFp8) {
    if constexpr (cuda::std::is_same_v<From, double>) {
      return detail::fp8_conversions<To>::from_double(value);
    } else {
      return detail::fp8_conversions<To>::from_float(static_cast<float>(value));
    }
  } else {
    static_assert(!detail::is_toolkit_fp8<To>::value && !detail::is_toolkit_fp8<From>::value,
                  HARDACT_FP8_NEEDS_ITS_HEADER);
    return static_cast<To>(value);
  }
}

/// Widens `value` to its compute type (exact for every supported type).
template <class T>
__host__ __device__ inline compute_t<T> to_compute(T value) {
  return convert<compute_t<T>>(value);
}

/// Rounds a compute-type result back to the element type `T`, once.
template <class T>
__host__ __device__ inline T from_compute(compute_t<T> value) {
  return convert<T>(value);
}

}  // namespace hardact
