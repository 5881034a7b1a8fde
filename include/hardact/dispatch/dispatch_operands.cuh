/// @file dispatch_operands.cuh
/// @brief The launchers' entry point: a call's operands sorted into full-length inputs and
///        broadcasts, the broadcasts checked and prepared (prepare_operands.cuh), then the plain
///        path (dispatch_transform.cuh) for an output pointer or the summing path
///        (dispatch_summed.cuh) for an OutputWithSums. Above both, so that neither declares the
///        other. Nothing here synchronises or allocates.
#pragma once

#include <hardact/dispatch/dispatch_summed.cuh>
#include <hardact/dispatch/dispatch_transform.cuh>
#include <hardact/dispatch/prepare_operands.cuh>
#include <hardact/kernel/device_broadcast.cuh>
#include <hardact/numeric/fast_divmod.cuh>
#include <hardact/policy/validity.cuh>
#include <hardact/types/output_with_sums.cuh>

#include <cuda/std/tuple>
#include <cuda/std/utility>
#include <cuda_runtime_api.h>

#include <cstddef>

namespace hardact {
namespace detail {

// The entry point reads first; dispatch_split, which it calls, is defined below it.
template <int RequestedWidth, class Op, class Out, class... Operand, std::size_t... F, std::size_t... B>
cudaError_t dispatch_split(const Op& op, std::size_t n, cudaStream_t stream, const Out& out,
                           const cuda::std::tuple<Operand...>& operands, cuda::std::index_sequence<F...>,
                           cuda::std::index_sequence<B...>);

/// The path of a call whose broadcast operands are prepared: the summing path (dispatch_summed.cuh)
/// for an OutputWithSums, dispatch_transform for an output pointer.
template <int RequestedWidth, class Op, class Broadcasts, class TOut, class... TIn>
cudaError_t dispatch_prepared(const Op& op, std::size_t n, cudaStream_t stream, const Broadcasts& broadcasts, TOut* out,
                              const TIn*... in) {
  return dispatch_transform<RequestedWidth>(op, n, stream, broadcasts, out, in...);
}
template <int RequestedWidth, class Op, class Broadcasts, class TOut, class TSum, class... TIn>
cudaError_t dispatch_prepared(const Op& op, std::size_t n, cudaStream_t stream, const Broadcasts& broadcasts,
                              const OutputWithSums<TOut, TSum>& output, const TIn*... in) {
  return dispatch_summed<RequestedWidth>(op, n, stream, broadcasts, output, in...);
}

/// The launchers' entry: operands are pointers to full-length inputs (at least one) and
/// Broadcasts, in the order the policy takes their values; the output a pointer or an
/// OutputWithSums. Without broadcasts and sums this is dispatch_transform itself, so those calls
/// run exactly the kernels they always did.
template <int RequestedWidth, class Op, class Out, class... Operand>
cudaError_t dispatch_operands(const Op& op, std::size_t n, cudaStream_t stream, const Out& out,
                              const Operand&... operands) {
  static_assert((is_operand_v<Operand> && ...), "hardact: an input is a device pointer or a hardact::Broadcast");
  static_assert(is_output_v<Out>, "hardact: the output is a device pointer or a hardact::OutputWithSums");
  using Split = OperandSplit<Operand...>;
  static_assert(Split::kFull >= 1, "hardact: transform needs at least one full-length input");
  if constexpr (Split::kBroadcasts == 0) {
    return dispatch_prepared<RequestedWidth>(op, n, stream, NoBroadcasts{}, out, full_operand(operands)...);
  } else {
    return dispatch_split<RequestedWidth>(op, n, stream, out, cuda::std::tuple<Operand...>{operands...},
                                          cuda::std::make_index_sequence<Split::kFull>{},
                                          cuda::std::make_index_sequence<Split::kBroadcasts>{});
  }
}

/// dispatch_operands with broadcast operands: checks them (a malformed one whatever n, then their
/// pointers for n >= 1), prepares them for the kernels and passes the full-length inputs on, the
/// policy wrapped so that it still gets its values in the user's order.
template <int RequestedWidth, class Op, class Out, class... Operand, std::size_t... F, std::size_t... B>
cudaError_t dispatch_split(const Op& op, std::size_t n, cudaStream_t stream, const Out& out,
                           const cuda::std::tuple<Operand...>& operands, cuda::std::index_sequence<F...>,
                           cuda::std::index_sequence<B...>) {
  using Split = OperandSplit<Operand...>;
  const auto broadcast_at = [&](auto k) -> const auto& {
    return cuda::std::get<Split::position(decltype(k)::value, true)>(operands);
  };
  // A malformed policy or operand is refused whatever n; then n == 0 is done, no pointer looked at.
  if (!policy_is_valid(op) || !output_is_well_formed(out)) return cudaErrorInvalidValue;
  if (!(is_well_formed(broadcast_at(cuda::std::integral_constant<std::size_t, B>{})) && ...)) {
    return cudaErrorInvalidValue;
  }
  if (n == 0) return cudaSuccess;
  if (n > kMaxBroadcastElements) return cudaErrorInvalidValue;
  if (!((is_usable_broadcast(broadcast_at(cuda::std::integral_constant<std::size_t, B>{}), n, output_values(out)) &&
         clear_of_sums(broadcast_at(cuda::std::integral_constant<std::size_t, B>{}), n, out)) &&
        ...)) {
    return cudaErrorInvalidValue;
  }
  auto broadcasts =
      cuda::std::make_tuple(prepare_broadcast(broadcast_at(cuda::std::integral_constant<std::size_t, B>{}), n)...);
  share_locations(broadcasts, cuda::std::make_index_sequence<Split::kBroadcasts>{});
  const OperandOrder<Op, is_broadcast<Operand>::value...> ordered{op};
  return dispatch_prepared<RequestedWidth>(ordered, n, stream, broadcasts, out,
                                           full_operand(cuda::std::get<Split::position(F, false)>(operands))...);
}

}  // namespace detail
}  // namespace hardact
