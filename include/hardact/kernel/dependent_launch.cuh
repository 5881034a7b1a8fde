/// @file dependent_launch.cuh
/// @brief The device side of a programmatic dependent launch (compute capability 9.0 and up): the
///        first kernel lets its dependant start early, the dependant waits for the first's writes.
///        Both are no-ops below 9.0, where dispatch makes the launch an ordinary one.
#pragma once

namespace hardact {
namespace detail {

/// Lets the kernel launched after this one as a programmatic dependent launch start now: it waits
/// for this grid's completion and writes itself (grid_dependency_wait). Nothing
/// before compute capability 9.0, where that launch is an ordinary one.
__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// Waits until the grid this one depends on has completed and its writes are visible; returns at
/// once for an ordinary launch.
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace detail
}  // namespace hardact
