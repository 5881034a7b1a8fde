/// @file fp8.cuh
/// @brief Opt-in support for the fp8 element types __nv_fp8_e4m3 and __nv_fp8_e5m2.
///
/// Include it (as well as hardact/hardact.cuh) to pass fp8 arrays to any launcher or to
/// hardact::convert: they are computed in float and rounded once, saturating to the largest finite
/// value. It is separate because <cuda_fp8.h> is opt-in: a project that uses no fp8 never has hardact
/// include it, and one that does gets it with the toolkit header's own warnings contained
/// (hardact/numeric/cuda_fp8_quiet.cuh), so both build clean with strict warnings as errors.
#pragma once

#include <hardact/numeric/conversions.cuh>
#include <hardact/numeric/cuda_fp8_quiet.cuh>

namespace hardact {

template <>
struct compute_type<__nv_fp8_e4m3> {
  using type = float;
};
template <>
struct compute_type<__nv_fp8_e5m2> {
  using type = float;
};

namespace detail {

/// The conversions of one fp8 format, through the toolkit's intrinsics on the raw byte.
template <class T, __nv_fp8_interpretation_t Interpretation>
struct fp8_format_conversions {
  static constexpr bool kIsFp8 = true;
  // Every fp8 value is exact in half, and every half is exact in float.
  __host__ __device__ static float to_float(T value) {
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(value.__x, Interpretation)));
  }
  __host__ __device__ static T from_float(float value) {
    T result;
    result.__x = __nv_cvt_float_to_fp8(value, __NV_SATFINITE, Interpretation);
    return result;
  }
  __host__ __device__ static T from_double(double value) {
    T result;
    result.__x = __nv_cvt_double_to_fp8(value, __NV_SATFINITE, Interpretation);
    return result;
  }
};

template <>
struct fp8_conversions<__nv_fp8_e4m3> : fp8_format_conversions<__nv_fp8_e4m3, __NV_E4M3> {};
template <>
struct fp8_conversions<__nv_fp8_e5m2> : fp8_format_conversions<__nv_fp8_e5m2, __NV_E5M2> {};

}  // namespace detail
}  // namespace hardact
