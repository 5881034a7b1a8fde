/// @file validity.cuh
/// @brief The one rule for a policy's run-time parameters: a policy may define
///        `bool is_valid() const`; one without it is always valid. Used by the launchers (to refuse
///        invalid parameters before launching) and by hardact::chain (valid when every step is).
#pragma once

#include <cuda/std/type_traits>
#include <cuda/std/utility>

namespace hardact {
namespace detail {

template <class Op, class = void>
struct has_is_valid : cuda::std::false_type {};
template <class Op>
struct has_is_valid<Op, cuda::std::void_t<decltype(static_cast<bool>(cuda::std::declval<const Op&>().is_valid()))>>
    : cuda::std::true_type {};

/// `op.is_valid()` when the policy defines it, else true.
template <class Op>
__host__ __device__ bool policy_is_valid(const Op& op) {
  if constexpr (has_is_valid<Op>::value) {
    return static_cast<bool>(op.is_valid());
  } else {
    return true;
  }
}

}  // namespace detail
}  // namespace hardact
