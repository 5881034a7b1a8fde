// The fused operators' launches for half tensors with float parameters (fused_launch.h says why one
// file per element and parameter type).
#include "launch/fused_launch.cuh"

using hardact_torch::FusedActivation;

HARDACT_TORCH_INSTANTIATE_SCALE_SHIFT(__half, float)
