// torch.cat along the channels of channels-last tensors, the same bytes: optimize_for_inference's
// fused blocks concatenate with it (concatenate.cu says why).
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace hardact_torch {

/// torch.cat(inputs, 1) for 4-D channels-last CUDA tensors of one dtype (float32, float64, float16
/// or bfloat16), on one device, of one N, H and W: a new channels-last (N, sum of C, H, W) tensor
/// whose row (n, h, w) is every input's row in order, each input's bytes as they are. Refuses
/// anything else with a ValueError (a TypeError for the dtypes); N * H * W == 0 gives the empty
/// output. Inference only: no autograd.
at::Tensor concatenate_channels(const std::vector<at::Tensor>& inputs);

}  // namespace hardact_torch
