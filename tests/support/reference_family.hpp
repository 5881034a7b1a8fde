// Test support: an independent host reference for the activation family: backward
// passes, HardSwish, ReLU6, the slope-offset HardSigmoid, affine steps, and rounding to half,
// bfloat16 and fp8. It includes nothing from hardact, so a policy is never checked against itself.
//
// Float results are computed in double and rounded to float with a cast. A product of two floats
// is exact in double, so the cast rounds it exactly once; a sum or quotient is rounded twice, which
// gives the correctly rounded float anyway because double carries more than 2 * 24 + 2 bits. That
// reproduces, step by step, PyTorch's float arithmetic (../shared/NOTES.md and ATen's CUDA
// kernels) without sharing code or the device's instructions with the library.
// Narrow formats are decoded and rounded by the bit-level MiniFormat below, not by CUDA's
// conversion functions, so the library's conversions are checked too.
#pragma once

#include "support/bits.hpp"
#include "support/values.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace hardact_test {
namespace family {

// ---------------------------------------------------------------------------------------------
// Narrow formats, bit by bit.

/// What a conversion does with a finite value beyond the largest finite one (and with infinity
/// where the format has none): IEEE formats round to infinity, float8_e4m3fn (no infinity) has
/// NaN there in PyTorch <= 2.11, and CUDA's __NV_SATFINITE conversions clamp to the largest finite.
enum class Overflow { ToInfinity, ToNaN, Saturate };

/// A binary floating-point format with `exponent_bits`, `mantissa_bits` and either IEEE special
/// values (all-ones exponent = infinity / NaN) or the fn ("finite, NaN") layout of e4m3fn, where
/// only the all-ones pattern is NaN and the all-ones exponent is otherwise a normal binade.
struct MiniFormat {
  int exponent_bits;
  int mantissa_bits;
  bool ieee_specials;

  int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  int min_exponent() const { return 1 - bias(); }
  std::uint32_t exponent_all_ones() const { return (1u << exponent_bits) - 1; }
  std::uint32_t sign_bit() const { return 1u << (exponent_bits + mantissa_bits); }
  std::uint32_t nan_bits() const {
    return ieee_specials ? (exponent_all_ones() << mantissa_bits) | (1u << (mantissa_bits - 1))
                         : (exponent_all_ones() << mantissa_bits) | ((1u << mantissa_bits) - 1);
  }
  double max_finite() const {
    if (ieee_specials) return std::ldexp(2.0 - std::ldexp(1.0, -mantissa_bits), bias());
    // fn: the top binade is normal, but its all-ones mantissa is NaN.
    const int top = static_cast<int>(exponent_all_ones()) - bias();
    return std::ldexp(2.0 - std::ldexp(1.0, 1 - mantissa_bits), top);
  }

  /// The value of `bits` (exact in double).
  double decode(std::uint32_t bits) const {
    const bool negative = (bits & sign_bit()) != 0;
    const std::uint32_t exponent = (bits >> mantissa_bits) & exponent_all_ones();
    const std::uint32_t mantissa = bits & ((1u << mantissa_bits) - 1);
    double magnitude;
    if (ieee_specials && exponent == exponent_all_ones()) {
      magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    } else if (!ieee_specials && exponent == exponent_all_ones() && mantissa == (1u << mantissa_bits) - 1) {
      magnitude = std::numeric_limits<double>::quiet_NaN();
    } else if (exponent == 0) {
      magnitude = std::ldexp(static_cast<double>(mantissa), min_exponent() - mantissa_bits);
    } else {
      magnitude = std::ldexp(static_cast<double>((1u << mantissa_bits) | mantissa),
                             static_cast<int>(exponent) - bias() - mantissa_bits);
    }
    return negative ? -magnitude : magnitude;
  }

  /// `value` rounded to nearest-even, once, into this format. `value` must have at most 53
  /// significant bits above 2^-1074, as every float and double does.
  std::uint32_t encode(double value, Overflow overflow) const {
    const std::uint32_t sign = std::signbit(value) ? sign_bit() : 0u;
    if (std::isnan(value)) return sign | nan_bits();
    const double magnitude = std::fabs(value);
    if (magnitude == 0.0) return sign;
    double rounded = std::numeric_limits<double>::infinity();
    if (!std::isinf(magnitude)) {
      int binade = 0;
      std::frexp(magnitude, &binade);  // magnitude in [2^(binade-1), 2^binade)
      const int exponent = std::max(binade - 1, min_exponent());
      const double quantum = std::ldexp(1.0, exponent - mantissa_bits);
      rounded = std::nearbyint(magnitude / quantum) * quantum;  // the default mode is to-nearest-even
    }
    if (rounded > max_finite()) {
      switch (overflow) {
        case Overflow::Saturate:
          return sign | encode(max_finite(), Overflow::Saturate);
        case Overflow::ToNaN:
          return sign | nan_bits();
        case Overflow::ToInfinity:
          return ieee_specials ? sign | (exponent_all_ones() << mantissa_bits) : sign | nan_bits();
      }
    }
    if (rounded < std::ldexp(1.0, min_exponent())) {
      return sign | static_cast<std::uint32_t>(std::ldexp(rounded, mantissa_bits - min_exponent()));
    }
    int binade = 0;
    std::frexp(rounded, &binade);
    const int exponent = binade - 1;
    const double significand = std::ldexp(rounded, mantissa_bits - exponent);  // in [2^M, 2^(M+1))
    return sign | (static_cast<std::uint32_t>(exponent + bias()) << mantissa_bits) |
           (static_cast<std::uint32_t>(significand) - (1u << mantissa_bits));
  }
};

inline constexpr MiniFormat kHalfFormat{5, 10, true};
inline constexpr MiniFormat kBfloat16Format{8, 7, true};
inline constexpr MiniFormat kE4M3Format{4, 3, false};
inline constexpr MiniFormat kE5M2Format{5, 2, true};

template <class T>
struct narrow_format;
template <>
struct narrow_format<__half> {
  static constexpr const MiniFormat& value = kHalfFormat;
};
template <>
struct narrow_format<__nv_bfloat16> {
  static constexpr const MiniFormat& value = kBfloat16Format;
};
template <>
struct narrow_format<__nv_fp8_e4m3> {
  static constexpr const MiniFormat& value = kE4M3Format;
};
template <>
struct narrow_format<__nv_fp8_e5m2> {
  static constexpr const MiniFormat& value = kE5M2Format;
};

template <class T>
inline constexpr bool is_narrow = !std::is_same_v<T, float> && !std::is_same_v<T, double>;

/// Exact value of any element type, as a double.
template <class T>
double value_of(T x) {
  if constexpr (is_16bit_float<T>) {
    return static_cast<double>(widen_16bit(x));  // MiniFormat::decode's value, faster (support/bits.hpp)
  } else if constexpr (is_narrow<T>) {
    return narrow_format<T>::value.decode(to_bits(x));
  } else {
    return static_cast<double>(x);
  }
}

/// `value` (a float or double value) rounded once into T; fp8 saturates, as hardact converts.
template <class T>
T round_to(double value, Overflow overflow = Overflow::Saturate) {
  if constexpr (is_16bit_float<T>) {
    std::uint16_t pattern;  // MiniFormat::encode's result, faster where it is simple (support/bits.hpp)
    if (nearest_16bit_pattern<T>(value, pattern)) return from_bits<T>(pattern);
  }
  if constexpr (is_narrow<T>) {
    const bool ieee_overflow = !std::is_same_v<T, __nv_fp8_e4m3> && !std::is_same_v<T, __nv_fp8_e5m2>;
    const std::uint32_t bits = narrow_format<T>::value.encode(value, ieee_overflow ? Overflow::ToInfinity : overflow);
    return from_bits<T>(static_cast<bits_t<T>>(bits));
  } else {
    return static_cast<T>(value);
  }
}

/// The float result of a double-precision expression that is exact or correctly rounded in double.
inline float to_float(double value) { return static_cast<float>(value); }

/// Every element type, printable: value and bits.
template <class T>
std::string show(T x) {
  std::ostringstream out;
  out.precision(17);
  out << value_of(x) << " (0x" << std::hex << static_cast<std::uint64_t>(to_bits(x)) << ")";
  return out.str();
}

template <class T>
bool same_or_both_nan(T a, T b) {
  const bool nan_a = std::isnan(value_of(a)), nan_b = std::isnan(value_of(b));
  if (nan_a || nan_b) return nan_a && nan_b;
  return to_bits(a) == to_bits(b);
}

// ---------------------------------------------------------------------------------------------
// Reference operations on float (PyTorch's arithmetic for float, half and bfloat16) and double.

inline constexpr float kOneSixth = static_cast<float>(1.0 / 6.0);
static_assert(kOneSixth == 1.0f / 6.0f, "the float nearest 1/6");

/// dx of hardsigmoid: grad * float(1/6) strictly inside (-3, 3), +0 elsewhere and for a NaN x.
inline float hard_sigmoid_backward(float grad, float x) {
  if (std::isnan(x) || x <= -3.0f || x >= 3.0f) return 0.0f;
  return to_float(static_cast<double>(grad) * kOneSixth);
}
/// double: grad / 6 (hardact's choice, the derivative of its exact double HardSigmoid).
inline double hard_sigmoid_backward(double grad, double x) {
  if (std::isnan(x) || x <= -3.0 || x >= 3.0) return 0.0;
  return grad / 6.0;
}

/// dx of hardtanh: grad unless x <= min_val or x >= max_val (bounds rounded to C first).
template <class C>
C hard_tanh_backward(C grad, C x, double min_val, double max_val) {
  if (std::isnan(x)) return grad;
  if (x <= static_cast<C>(min_val)) return C(0);
  if (x >= static_cast<C>(max_val)) return C(0);
  return grad;
}

/// hardswish: (x * relu6(x + 3)) * float(1/6), each product rounded to float.
inline float hard_swish(float x) {
  if (std::isnan(x)) return x;
  const float shifted = to_float(static_cast<double>(x) + 3.0);
  const float gate = shifted <= 0.0f ? 0.0f : (shifted >= 6.0f ? 6.0f : shifted);
  const float product = to_float(static_cast<double>(x) * gate);  // -inf * 0 is NaN, x < -3 gives -0
  return to_float(static_cast<double>(product) * kOneSixth);
}
/// double: x * relu6(x + 3) / 6.
inline double hard_swish(double x) {
  if (std::isnan(x)) return x;
  const double shifted = x + 3.0;
  const double gate = shifted <= 0.0 ? 0.0 : (shifted >= 6.0 ? 6.0 : shifted);
  return (x * gate) / 6.0;
}

/// dx of hardswish: 0 for x <= -3, grad * (x / 3 + 0.5) below 3, grad from 3 on and for NaN x.
inline float hard_swish_backward(float grad, float x) {
  if (std::isnan(x)) return grad;
  if (x <= -3.0f) return 0.0f;
  if (x >= 3.0f) return grad;
  const float third = to_float(static_cast<double>(x) / 3.0);
  const float slope = to_float(static_cast<double>(third) + 0.5);
  return to_float(static_cast<double>(grad) * slope);
}
inline double hard_swish_backward(double grad, double x) {
  if (std::isnan(x)) return grad;
  if (x <= -3.0) return 0.0;
  if (x >= 3.0) return grad;
  return grad * (x / 3.0 + 0.5);
}

/// relu6: NaN unchanged, x <= 0 (also -0.0) gives +0, x >= 6 gives 6.
template <class C>
C relu6(C x) {
  if (std::isnan(x)) return x;
  if (x <= C(0)) return C(0);
  if (x >= C(6)) return C(6);
  return x;
}

/// clamp(line, 0, 1) as PyTorch's clamp: NaN stays, -0.0 becomes +0.
template <class C>
C clamp_unit(C line) {
  if (std::isnan(line)) return line;
  if (line <= C(0)) return C(0);
  if (line >= C(1)) return C(1);
  return line;
}

/// PyTorch's float `x * scale` and `x + offset`, the factor and addend rounded to C first.
inline float scale(float x, double factor) { return to_float(static_cast<double>(x) * static_cast<float>(factor)); }
inline double scale(double x, double factor) { return x * factor; }
inline float offset(float x, double addend) { return to_float(static_cast<double>(x) + static_cast<float>(addend)); }
inline double offset(double x, double addend) { return x + addend; }

/// PyTorch's float `x * alpha + beta` (two kernels, each rounded), alpha and beta rounded to C.
inline float affine(float x, double scale, double offset) {
  const float product = to_float(static_cast<double>(x) * static_cast<float>(scale));
  return to_float(static_cast<double>(product) + static_cast<float>(offset));
}
inline double affine(double x, double scale, double offset) { return x * scale + offset; }

/// max(0, min(1, alpha * x + beta)), the ONNX form, evaluated as clamp(x * alpha + beta, 0, 1).
template <class C>
C hard_sigmoid_affine(C x, double alpha, double beta) {
  return clamp_unit(affine(x, alpha, beta));
}

/// hardtanh (for chains): NaN unchanged, else max then min with -0.0 below +0.0.
template <class C>
C hard_tanh(C x, double min_val, double max_val) {
  if (std::isnan(x)) return x;
  const C lo = static_cast<C>(min_val), hi = static_cast<C>(max_val);
  C y = x;
  if (y < lo || (y == lo && std::signbit(y) && !std::signbit(lo))) y = lo;
  if (y > hi || (y == hi && !std::signbit(y) && std::signbit(hi))) y = hi;
  return y;
}

/// hardsigmoid (for mixed-type and chain checks): relu6(x + 3) * float(1/6) in float, / 6 in double.
inline float hard_sigmoid(float x) {
  if (std::isnan(x)) return x;
  return to_float(static_cast<double>(relu6(to_float(static_cast<double>(x) + 3.0))) * kOneSixth);
}
inline double hard_sigmoid(double x) {
  if (std::isnan(x)) return x;
  return relu6(x + 3.0) / 6.0;
}

// ---------------------------------------------------------------------------------------------
// Element-type wrappers: widen exactly, compute in the compute type, round once.

template <class T>
using compute_of = std::conditional_t<std::is_same_v<T, double>, double, float>;

/// A reference on compute types (a generic lambda taking C...), applied to elements of type T.
template <class T, class Fn, class... Args>
T on_elements(const Fn& fn, Args... args) {
  using C = compute_of<T>;
  return round_to<T>(static_cast<double>(fn(static_cast<C>(value_of(args))...)));
}

/// Compares op(grad, x) with reference(grad, x) over every pair in grads x xs, evaluated on the host.
template <class T, class Op, class Reference>
::testing::AssertionResult host_pairs_match(const Op& op, const Reference& reference, const std::vector<T>& grads,
                                            const std::vector<T>& xs) {
  std::size_t mismatches = 0, total = 0;
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  for (const T grad : grads) {
    for (const T x : xs) {
      ++total;
      const T actual = op(grad, x);
      const T expected = reference(grad, x);
      if (same_or_both_nan(actual, expected)) continue;
      if (++mismatches <= 5) {
        failure << "\n  grad " << show(grad) << ", x " << show(x) << ": got " << show(actual) << ", expected "
                << show(expected);
      }
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return failure << "\n  " << mismatches << " of " << total << " pairs differ";
}

/// Compares outputs[i] with expected[i], reporting the first few differences with inputs[i].
template <class TIn, class TOut>
::testing::AssertionResult all_match(const std::vector<TIn>& inputs, const std::vector<TOut>& outputs,
                                     const std::vector<TOut>& expected) {
  if (outputs.size() != expected.size() || inputs.size() != expected.size()) {
    return ::testing::AssertionFailure() << "sizes differ: " << inputs.size() << " inputs, " << outputs.size()
                                         << " outputs, " << expected.size() << " expected";
  }
  std::size_t mismatches = 0;
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (same_or_both_nan(outputs[i], expected[i])) continue;
    if (++mismatches <= 5) {
      failure << "\n  [" << i << "] input " << show(inputs[i]) << ": got " << show(outputs[i]) << ", expected "
              << show(expected[i]);
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return failure << "\n  " << mismatches << " of " << expected.size() << " elements differ";
}

/// Compares op(x) with reference(x) for every x in inputs, evaluated on the host.
template <class T, class Op, class Reference>
::testing::AssertionResult host_matches(const Op& op, const Reference& reference, const std::vector<T>& inputs) {
  std::vector<T> outputs, expected;
  for (const T x : inputs) {
    outputs.push_back(op(x));
    expected.push_back(reference(x));
  }
  return all_match(inputs, outputs, expected);
}

using hardact_test::all_patterns;  // support/bits.hpp

/// The family's host-test inputs: every bit pattern of a 16-bit type; for wider types the special
/// values (with `extra_points`) followed by `random_count` random values drawn from `seed`.
template <class T>
std::vector<T> host_inputs(std::initializer_list<double> extra_points, std::size_t random_count, std::uint64_t seed) {
  if constexpr (sizeof(T) == 2) {
    return all_patterns<T>();
  } else {
    std::vector<T> values = special_values<T>(extra_points);
    const std::vector<T> random = random_values<T>(random_count, seed);
    values.insert(values.end(), random.begin(), random.end());
    return values;
  }
}

/// The single-policy host tests' inputs (ReLU6, HardSwish, affine): every 16-bit pattern, or the
/// special values, the kinks' neighbours and 2^20 random values.
template <class T>
std::vector<T> policy_inputs() {
  return host_inputs<T>({-3.5, 2.5, 5.0, -2.5, 1.0 / 6.0}, 1 << 20, 0xfa417);
}

/// op(x) equals reference(x), bit for bit, for every x of policy_inputs<T>().
template <class T, class Op, class Reference>
::testing::AssertionResult policy_matches(const Op& op, const Reference& reference) {
  return host_matches(op, reference, policy_inputs<T>());
}

}  // namespace family
}  // namespace hardact_test
