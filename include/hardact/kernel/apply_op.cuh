/// @file apply_op.cuh
/// @brief How both kernels call a policy on one element of each input: the types it sees and the
///        one rounding to the output type.
#pragma once

#include <hardact/numeric/conversions.cuh>

#include <cuda/std/tuple>
#include <cuda/std/type_traits>
#include <cuda/std/utility>

#include <cstddef>

namespace hardact {
namespace detail {

/// Applies `op` to one element of each input and converts the result to `TOut` once.
/// When every input already has the output's type the policy gets that type, so functors written
/// for one element type work; otherwise it gets the common compute type (float for half, bfloat16
/// and fp8), so mixed-type calls round once, from the compute type.
template <class TOut, class Op, class... TIn>
__host__ __device__ __forceinline__ TOut apply_op(const Op& op, TIn... x) {
  if constexpr ((cuda::std::is_same_v<TIn, TOut> && ...)) {
    return convert<TOut>(op(x...));
  } else {
    using C = cuda::std::common_type_t<compute_t<TIn>...>;
    return convert<TOut>(op(convert<C>(x)...));
  }
}

/// apply_op for element i of a call with broadcast operands: their values for i follow `x`.
template <class TOut, class Op, class... D, std::size_t... B, class... TIn>
__device__ __forceinline__ TOut apply_broadcast_op(const Op& op, std::size_t i, const cuda::std::tuple<D...>& broadcasts,
                                                   cuda::std::index_sequence<B...>, TIn... x) {
  return apply_op<TOut>(op, x..., cuda::std::get<B>(broadcasts).at(i)...);
}

}  // namespace detail
}  // namespace hardact
