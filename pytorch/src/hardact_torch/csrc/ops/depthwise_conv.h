// A depthwise convolution with its folded BatchNorm, activation and (optionally) the squeeze's mean
// in one kernel: fuse_blocks' depthwise stage (depthwise_conv.cu says why).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/string_view.h>

#include <cstdint>
#include <tuple>

namespace hardact_torch {

/// (y, mean) with y = act(conv(x) * scale + shift), conv the depthwise convolution (groups = C,
/// one filter per channel, no bias, zero padding, dilation 1) of channels-last x (N, C, H, W) by
/// `taps`, the filters as float32 (kernel_size * kernel_size, C): taps[kh * kernel_size + kw][c].
/// scale and shift: C float32 values. kernel_size 3 or 5, stride 1 or 2, 0 <= padding <
/// kernel_size, C a multiple of 4 up to 1024, float32/float16/bfloat16 x. The sums of the products
/// in float32, then `* scale`, `+ shift` and the activation in float32, rounded once to x's dtype.
/// y is channels-last; mean (N, C) in x's dtype is y's mean over H and W as written (summed in float
/// in an order fixed by the shape), undefined unless `with_mean`. With `concatenate_input` (stride 1
/// and an output of x's size only) y is torch.cat([x, y], 1), written by the one kernel (a ghost
/// module's concatenation), and the mean is still that of the convolution's channels. Inference
/// only: no autograd.
std::tuple<at::Tensor, at::Tensor> depthwise_conv_scale_shift_activation(
    const at::Tensor& x, const at::Tensor& taps, const at::Tensor& scale, const at::Tensor& shift,
    int64_t kernel_size, int64_t stride, int64_t pad_h, int64_t pad_w, c10::string_view activation, double min_val,
    double max_val, bool with_mean, bool concatenate_input = false);

}  // namespace hardact_torch
