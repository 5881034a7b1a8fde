/// @file pointer_check.cuh
/// @brief Opt-in check that kernels on the calling thread's current device can reach every pointer
///        of a call. A kernel that dereferences memory its device cannot reach (another GPU's
///        memory without peer access, plain host memory) faults, and the fault destroys the CUDA
///        context: every later CUDA call in the process fails. The launchers run this check only
///        when HARDACT_CHECK_POINTER_DEVICES is defined; hardact::checked::* always run it.
///
/// The answers come from cudaPointerGetAttributes, which has no side effect:
///   - device memory of the current device: reachable;
///   - device memory of another device: reachable when the current device can access that peer
///     (cudaDeviceCanAccessPeer) and the attributes give the pointer's own address as the address
///     to dereference on the current device (`devicePointer`, documented as NULL when the current
///     device cannot access the memory directly, i.e. while peer access is not enabled);
///   - managed memory: reachable;
///   - pinned, registered or mapped host memory: reachable when `devicePointer` is the pointer
///     itself (the kernel dereferences the host address as given);
///   - plain (unregistered) host memory: reachable only on devices that access pageable memory
///     (cudaDevAttrPageableMemoryAccess: HMM or ATS systems).
/// Only the first element of each array is looked at: the check says which memory a pointer
/// belongs to, not that n elements are allocated there.
#pragma once

#include <cuda_runtime_api.h>

namespace hardact {
namespace detail {

/// cudaSuccess when kernels on `device` can dereference `pointer`; cudaErrorInvalidDevice when
/// they cannot; or the error a query returned.
inline cudaError_t pointer_reachable_from(int device, const void* pointer) {
  cudaPointerAttributes attributes{};
  cudaError_t status = cudaPointerGetAttributes(&attributes, pointer);
  if (status == cudaErrorInvalidValue) {
    // Toolkits before CUDA 11 answer so for memory CUDA does not know, i.e. plain host memory.
    // Clear the (non-sticky) error this query recorded, so that the caller's next
    // cudaGetLastError() does not report it.
    (void)cudaGetLastError();
    attributes.type = cudaMemoryTypeUnregistered;
  } else if (status != cudaSuccess) {
    return status;
  }
  const bool mapped_here = static_cast<const void*>(attributes.devicePointer) == pointer;
  switch (attributes.type) {
    case cudaMemoryTypeDevice: {
      if (attributes.device == device) return cudaSuccess;
      int can_access_peer = 0;
      status = cudaDeviceCanAccessPeer(&can_access_peer, device, attributes.device);
      if (status != cudaSuccess) return status;
      return can_access_peer != 0 && mapped_here ? cudaSuccess : cudaErrorInvalidDevice;
    }
    case cudaMemoryTypeManaged:
      return cudaSuccess;
    case cudaMemoryTypeHost:
      return mapped_here ? cudaSuccess : cudaErrorInvalidDevice;
    default: {  // cudaMemoryTypeUnregistered
      int pageable_access = 0;
      status = cudaDeviceGetAttribute(&pageable_access, cudaDevAttrPageableMemoryAccess, device);
      if (status != cudaSuccess) return status;
      return pageable_access != 0 ? cudaSuccess : cudaErrorInvalidDevice;
    }
  }
}

/// cudaSuccess when kernels on the current device can reach every pointer; else the first
/// refusal (cudaErrorInvalidDevice) or query error. Pointers must be non-null.
template <class... T>
cudaError_t check_pointer_devices(const T*... pointers) {
  int device = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status != cudaSuccess) return status;
  // && folds left to right and stops at the first pointer that is refused.
  (void)(... && ((status = pointer_reachable_from(device, static_cast<const void*>(pointers))) == cudaSuccess));
  return status;
}

}  // namespace detail
}  // namespace hardact
