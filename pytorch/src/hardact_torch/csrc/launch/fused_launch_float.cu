// The fused operators' launches for float tensors (fused_launch.h says why one file per type).
#include "launch/fused_launch.cuh"

using hardact_torch::FusedActivation;

HARDACT_TORCH_INSTANTIATE_SCALE_SHIFT(float, float)
HARDACT_TORCH_INSTANTIATE_FUSED(float)
