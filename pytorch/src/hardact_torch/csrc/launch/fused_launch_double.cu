// The fused operators' launches for double tensors (fused_launch.h says why one file per type).
#include "launch/fused_launch.cuh"

using hardact_torch::FusedActivation;

HARDACT_TORCH_INSTANTIATE_SCALE_SHIFT(double, double)
HARDACT_TORCH_INSTANTIATE_FUSED(double)
