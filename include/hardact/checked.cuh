/// @file checked.cuh
/// @brief Launchers that refuse pointers the current device cannot reach, instead of launching a
///        kernel that faults and loses the CUDA context (README "Launch contract").
///
/// hardact::checked::transform / hardsigmoid / hardtanh take the same arguments and keep the same
/// contract as the hardact:: launchers, plus: when n > 0 and no pointer is null, each pointer is
/// looked up with cudaPointerGetAttributes (see dispatch/pointer_check.cuh for the rule), and a
/// pointer that kernels on the calling thread's current device cannot dereference makes the call
/// return cudaErrorInvalidDevice with nothing launched and nothing written. That lookup comes
/// before the other argument checks. Defining HARDACT_CHECK_POINTER_DEVICES (the same in every
/// translation unit) makes every hardact:: launcher check, after its other argument checks; the
/// checked launchers then do not check twice.
#pragma once

#include <hardact/dispatch/pointer_check.cuh>
#include <hardact/transform.cuh>

#include <cuda_runtime_api.h>

#include <cstddef>

namespace hardact {

/// @brief cudaSuccess when kernels on the calling thread's current device can dereference every
///        (non-null) pointer; cudaErrorInvalidDevice when one of them cannot; or a query's error.
///        Costs one cudaGetDevice and one cudaPointerGetAttributes per pointer (a peer or
///        attribute query more for memory not on the current device).
template <class... T>
cudaError_t check_pointer_devices(const T*... pointers) {
  return detail::check_pointer_devices(pointers...);
}

namespace checked {
namespace detail {

/// The lookup the checked launchers add, skipped where the launcher's own validation answers
/// (n == 0, a null pointer) and where every launcher checks already.
template <class... T>
cudaError_t check_before_launch([[maybe_unused]] std::size_t n, [[maybe_unused]] const T*... pointers) {
#ifdef HARDACT_CHECK_POINTER_DEVICES
  return cudaSuccess;
#else
  if (n == 0 || ((pointers == nullptr) || ...)) return cudaSuccess;
  return hardact::detail::check_pointer_devices(pointers...);
#endif
}

}  // namespace detail

/// @brief hardact::transform(op, in, out, n, stream), refusing unreachable pointers first.
template <int VecWidth = 0, class Op, class TIn, class TOut>
cudaError_t transform(Op op, const TIn* in, TOut* out, std::size_t n, cudaStream_t stream = nullptr) {
  const cudaError_t access = detail::check_before_launch(n, in, static_cast<const TOut*>(out));
  if (access != cudaSuccess) return access;
  return hardact::transform<VecWidth>(op, in, out, n, stream);
}

/// @brief hardact::transform(op, in_a, in_b, out, n, stream), refusing unreachable pointers first.
template <int VecWidth = 0, class Op, class TA, class TB, class TOut>
cudaError_t transform(Op op, const TA* in_a, const TB* in_b, TOut* out, std::size_t n,
                      cudaStream_t stream = nullptr) {
  const cudaError_t access = detail::check_before_launch(n, in_a, in_b, static_cast<const TOut*>(out));
  if (access != cudaSuccess) return access;
  return hardact::transform<VecWidth>(op, in_a, in_b, out, n, stream);
}

/// @brief hardact::hardsigmoid, refusing unreachable pointers first.
template <class T>
cudaError_t hardsigmoid(const T* in, T* out, std::size_t n, cudaStream_t stream = nullptr) {
  return checked::transform(HardSigmoid{}, in, out, n, stream);
}

/// @brief hardact::hardtanh, refusing unreachable pointers first.
template <class T>
cudaError_t hardtanh(const T* in, T* out, std::size_t n, double min_val = -1.0, double max_val = 1.0,
                     cudaStream_t stream = nullptr) {
  return checked::transform(HardTanh{min_val, max_val}, in, out, n, stream);
}

}  // namespace checked
}  // namespace hardact
