// Test support: an independent host reference for HardSigmoid and HardTanh, written from
// PyTorch's CUDA semantics (../shared/NOTES.md) with explicit branches. It deliberately includes
// nothing from hardact, so a policy is never checked against itself.
//
//   hardsigmoid: float, half, bfloat16 -> widen to float, min(max(x + 3, 0), 6) * float(1/6),
//                round once; double -> min(max(x + 3, 0), 6) / 6 in double (saturates at 1).
//   hardtanh:    NaN returned unchanged; otherwise max(x, min_val) then min(., max_val) in the
//                compute type (bounds converted to it), with -0.0 ordered below +0.0.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <limits>

namespace hardact_test {
namespace reference {

/// PyTorch's float constant; x * kOneSixthFloat differs from x / 6 on many float inputs.
inline constexpr float kOneSixthFloat = 1.0f / 6.0f;

inline float hard_sigmoid(float x) {
  if (std::isnan(x)) return std::numeric_limits<float>::quiet_NaN();
  const float shifted = x + 3.0f;
  float relu6 = shifted;
  if (!(shifted > 0.0f)) {
    relu6 = 0.0f;
  } else if (shifted > 6.0f) {
    relu6 = 6.0f;
  }
  return relu6 * kOneSixthFloat;
}

inline double hard_sigmoid(double x) {
  if (std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
  const double shifted = x + 3.0;
  if (shifted <= 0.0) return 0.0;
  if (shifted >= 6.0) return 1.0;  // 6 / 6: exactly 1, unlike PyTorch's float(1/6) in double
  return shifted / 6.0;
}

inline __half hard_sigmoid(__half x) { return __float2half_rn(hard_sigmoid(__half2float(x))); }

inline __nv_bfloat16 hard_sigmoid(__nv_bfloat16 x) {
  return __float2bfloat16_rn(hard_sigmoid(__bfloat162float(x)));
}

/// max(x, lo) then min(., hi) for a non-NaN x, as the device's max/min instructions order
/// values: -0.0 counts as smaller than +0.0.
template <class C>
C clamp_zero_ordered(C x, C lo, C hi) {
  C y = x;
  if (y < lo) {
    y = lo;
  } else if (y == lo && std::signbit(y) && !std::signbit(lo)) {
    y = lo;  // max(-0.0, +0.0) is +0.0
  }
  if (y > hi) {
    y = hi;
  } else if (y == hi && !std::signbit(y) && std::signbit(hi)) {
    y = hi;  // min(+0.0, -0.0) is -0.0
  }
  return y;
}

inline float hard_tanh(float x, double min_val, double max_val) {
  if (std::isnan(x)) return x;  // same bits, payload and sign included
  return clamp_zero_ordered(x, static_cast<float>(min_val), static_cast<float>(max_val));
}

inline double hard_tanh(double x, double min_val, double max_val) {
  if (std::isnan(x)) return x;
  return clamp_zero_ordered(x, min_val, max_val);
}

inline __half hard_tanh(__half x, double min_val, double max_val) {
  const float wide = __half2float(x);
  if (std::isnan(wide)) return x;
  return __float2half_rn(clamp_zero_ordered(wide, static_cast<float>(min_val), static_cast<float>(max_val)));
}

inline __nv_bfloat16 hard_tanh(__nv_bfloat16 x, double min_val, double max_val) {
  const float wide = __bfloat162float(x);
  if (std::isnan(wide)) return x;
  return __float2bfloat16_rn(clamp_zero_ordered(wide, static_cast<float>(min_val), static_cast<float>(max_val)));
}

/// Callable forms, for code that is generic over the operation.
struct HardSigmoid {
  template <class T>
  T operator()(T x) const {
    return hard_sigmoid(x);
  }
};

struct HardTanh {
  double min_val = -1.0;
  double max_val = 1.0;
  template <class T>
  T operator()(T x) const {
    return hard_tanh(x, min_val, max_val);
  }
};

}  // namespace reference
}  // namespace hardact_test
