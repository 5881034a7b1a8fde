// A 1x1 convolution on channels-last 16-bit input as one matrix product (pointwise_convolution.cpp
// says why and where).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <array>
#include <cstdint>

namespace hardact_torch {

/// Whether pointwise_convolution computes F.conv2d(x, weight, bias, stride, padding, dilation, groups)
/// as one matrix product: CUDA x of 4 dimensions, channels-last contiguous, float16 or bfloat16, with
/// a weight (and bias) of its dtype and device; a 1x1 filter at stride 1, no padding, dilation 1, one
/// group; input and output channels multiples of 8; N * H * W from 1 to 2^31 - 1; no gradient wanted;
/// autocast off.
bool pointwise_product_applies(const at::Tensor& x, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                               std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
                               std::array<int64_t, 2> dilation, int64_t groups);

/// F.conv2d's result: where pointwise_product_applies, the (N * H * W, C) matrix x is times the (M, C)
/// weight transposed, plus the bias, in one cuBLASLt call (product_into, linear_activation's) written
/// into a new channels-last (N, M, H, W) tensor, the (N * H * W, M) product; else at::conv2d.
at::Tensor pointwise_convolution(const at::Tensor& x, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                                 std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
                                 std::array<int64_t, 2> dilation, int64_t groups);

}  // namespace hardact_torch
