// The activation a fused operator takes by name, as one hardact policy whose choice is made at run
// time: the package's own policy, which hardact's launchers take as they take the library's.
#pragma once

#include "launch/fused_activation.h"

#include <hardact/policies.cuh>

#include <limits>

namespace hardact_torch {

/// act(z) for the activation `kind`: one warp-uniform branch per value, where a policy per
/// activation would multiply the kernels compiled by six (ops/depthwise_conv.cu). The hard
/// activations only: the depthwise operator refuses "silu".
struct RuntimeActivation {
  FusedActivation kind;
  hardact::HardTanh bounds;  ///< hardtanh's; relu is hardtanh(0, +inf)

  /// The bounds of a hardtanh (the operators check them first, with PyTorch's message).
  __host__ __device__ bool is_valid() const { return kind != FusedActivation::hardtanh || bounds.is_valid(); }

  __device__ float operator()(float z) const {
    switch (kind) {
      case FusedActivation::identity: return z;
      case FusedActivation::hardsigmoid: return hardact::HardSigmoid{}(z);
      case FusedActivation::hardswish: return hardact::HardSwish{}(z);
      case FusedActivation::relu6: return hardact::ReLU6{}(z);
      case FusedActivation::hardtanh:
      case FusedActivation::relu: return bounds(z);  // relu as hardtanh(0, +inf)
      default: return z;  // silu: refused by the operators before a launch
    }
  }

  /// The policy for `kind`, with hardtanh's bounds (ignored by the other activations).
  static RuntimeActivation of(FusedActivation kind, double min_val, double max_val) {
    return {kind, kind == FusedActivation::relu ? hardact::HardTanh{0.0, std::numeric_limits<double>::infinity()}
                                                : hardact::HardTanh{min_val, max_val}};
  }
};

}  // namespace hardact_torch
