// A channels-last max pooling, torch.nn.MaxPool2d's output bit for bit without ATen's indices:
// optimize_for_inference's pooling (max_pool.cu says why).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace hardact_torch {

/// F.max_pool2d(x, (kernel_h, kernel_w), (stride_h, stride_w), (pad_h, pad_w), 1, ceil_mode) for a
/// 4-D channels-last CUDA x of float32, float64, float16 or bfloat16: the same bits, as a
/// channels-last tensor. Refuses what F.max_pool2d refuses (kernel or stride under 1, padding over
/// half the kernel, an output of no rows or columns, no channels) with a ValueError, and a sample of
/// 2^31 elements or more. Inference only: no autograd.
at::Tensor max_pool2d_channels_last(const at::Tensor& x, int64_t kernel_h, int64_t kernel_w, int64_t stride_h,
                                    int64_t stride_w, int64_t pad_h, int64_t pad_w, bool ceil_mode);

}  // namespace hardact_torch
