// The fused operators' launches for bfloat16 tensors with bfloat16 parameters (fused_launch.h says why
// one file per element and parameter type).
#include "launch/fused_launch.cuh"

using hardact_torch::FusedActivation;

HARDACT_TORCH_INSTANTIATE_SCALE_SHIFT(__nv_bfloat16, __nv_bfloat16)
HARDACT_TORCH_INSTANTIATE_FUSED(__nv_bfloat16)
