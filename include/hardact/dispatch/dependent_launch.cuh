/// @file dependent_launch.cuh
/// @brief The host side of a programmatic dependent launch: a launch configuration that lets a
///        second kernel start while the first runs (kernel/dependent_launch.cuh is the device side).
#pragma once

#include <cuda_runtime_api.h>

namespace hardact {
namespace detail {

/// Makes `config` a programmatic dependent launch on devices of compute capability 9.0 and up: the
/// kernel may start while the one before it on the stream runs, and waits for that kernel's writes
/// itself (grid_dependency_wait), which hides the second launch's latency (TUNING.md#summing-path).
/// An ordinary launch below 9.0. `attribute` must outlive the launch call.
inline void make_dependent_launch(cudaLaunchConfig_t& config, cudaLaunchAttribute& attribute,
                                  int compute_capability_major) {
  if (compute_capability_major < 9) return;
  attribute = cudaLaunchAttribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
}

}  // namespace detail
}  // namespace hardact
