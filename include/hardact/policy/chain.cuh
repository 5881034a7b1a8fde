/// @file chain.cuh
/// @brief hardact::chain: several policies fused into one functor, so a chain costs one pass over
///        memory and one rounding.
#pragma once

#include <hardact/numeric/conversions.cuh>
#include <hardact/policy/validity.cuh>

namespace hardact {

/// Steps applied in order, each to the previous one's result; built by hardact::chain.
///
/// Called with elements of type T, it widens them once to compute_t<T> (float for half, bfloat16 and
/// fp8), calls every step with that type and rounds once at the end, so
/// `chain(Scale{2.0}, HardTanh{}, ReLU6{})` on bfloat16 equals the three operations done in float and
/// rounded once (PyTorch eager would round to bfloat16 after each of its three kernels). The first
/// step receives all the arguments, so `chain(HardSigmoidBackward{}, Scale{0.5})` is a two-input
/// chain. Valid (is_valid()) exactly when every step is. Trivially copyable when the steps are.
template <class... Steps>
struct Chain;

template <class Last>
struct Chain<Last> {
  Last first;  ///< the only (or last) step

  __host__ __device__ bool is_valid() const { return detail::policy_is_valid(first); }

  template <class T, class... More>
  __host__ __device__ T operator()(T x, More... more) const {
    using C = compute_t<T>;
    return from_compute<T>(first(to_compute(x), convert<C>(more)...));
  }
};

template <class First, class... Rest>
struct Chain<First, Rest...> {
  First first;          ///< applied first, to the chain's arguments
  Chain<Rest...> rest;  ///< applied to first's result (in the compute type, so nothing is rounded)

  __host__ __device__ bool is_valid() const { return detail::policy_is_valid(first) && rest.is_valid(); }

  template <class T, class... More>
  __host__ __device__ T operator()(T x, More... more) const {
    using C = compute_t<T>;
    const C value = first(to_compute(x), convert<C>(more)...);
    return from_compute<T>(rest(value));
  }
};

/// Fuses steps into one policy: `chain(a, b, c)(x)` computes c(b(a(x))) in the compute type and
/// rounds once. Steps are policies (HardSigmoid, HardTanh, ReLU6, ...), affine steps (Scale, Offset,
/// Affine), other chains, or any copyable functor callable with float and double.
/// Example: `hardact::transform(hardact::chain(hardact::Scale{2.0}, hardact::HardTanh{}), in, out, n)`.
template <class First, class... Rest>
__host__ __device__ constexpr Chain<First, Rest...> chain(First first, Rest... rest) {
  if constexpr (sizeof...(Rest) == 0) {
    return Chain<First>{first};
  } else {
    return Chain<First, Rest...>{first, chain(rest...)};
  }
}

}  // namespace hardact
