// A FusedInvertedResidual's and a FusedStarBlock's inference forward as one C++ call each
// (fused_block_forward.cpp says why).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <array>
#include <cstdint>
#include <string>

namespace hardact_torch {

/// One of the block's nn.Conv2d (zero padding given as numbers): F.conv2d's arguments, and whether it
/// is a PointwiseConv2d (whose forward is pointwise_convolution).
struct BlockConvolution {
  at::Tensor weight;
  c10::optional<at::Tensor> bias;
  std::array<int64_t, 2> stride;
  std::array<int64_t, 2> padding;
  std::array<int64_t, 2> dilation;
  int64_t groups;
  bool pointwise = false;
};

/// One of the block's BatchNormActivation: scale_shift_activation's arguments after x.
struct BlockNorm {
  c10::optional<at::Tensor> scale;
  c10::optional<at::Tensor> shift;
  std::string activation;
  double min_val;
  double max_val;
};

/// The one-kernel depthwise stage's filter (_depthwise_filter: kernel_size, stride, pad_h, pad_w)
/// and the float32 forms it reads (FusedInvertedResidual.depthwise_parameters): the block's cached
/// ones where still current, else undefined, and then made by the forward where it takes the stage
/// (`made` set), for the caller to keep.
struct BlockDepthwiseFilter {
  int64_t kernel_size;
  int64_t stride;
  int64_t pad_h;
  int64_t pad_w;
  at::Tensor taps;
  at::Tensor scale;
  at::Tensor shift;
  bool made = false;
};

/// The squeeze-excitation's reduce and expand 1x1 convolutions (weights (Cr, C, 1, 1) and (C, Cr, 1,
/// 1), or matrices) with an nn.ReLU between them (`relu_inplace`: its inplace flag).
struct BlockSqueeze {
  at::Tensor reduce_weight;
  c10::optional<at::Tensor> reduce_bias;
  at::Tensor expand_weight;
  c10::optional<at::Tensor> expand_bias;
  bool relu_inplace;
};

/// A FusedInvertedResidual's modules as the forward reads them: the expansion (conv1, norm1) where
/// there is one, the depthwise convolution and its norm, the one-kernel filter where the block
/// has one, the squeeze-excitation where there is one, the projection and whether x is added.
struct FusedBlock {
  c10::optional<BlockConvolution> conv1;
  c10::optional<BlockNorm> norm1;
  BlockConvolution conv2;
  BlockNorm norm2;
  c10::optional<BlockDepthwiseFilter> depthwise;
  c10::optional<BlockSqueeze> squeeze;
  BlockConvolution conv3;
  BlockNorm norm3;
  bool skip;
};

/// FusedInvertedResidual.forward for CUDA x where no gradient is wanted, not under torch.compile and
/// not under autocast: the same operators in the same order with the same arguments (at::conv2d as
/// F.conv2d calls it, or pointwise_convolution as a PointwiseConv2d calls it, the hardact operators
/// through their dispatcher handles as the _C bindings call them, the depthwise stage and
/// linear_activation directly), so the same kernels and bits.
/// Where the depthwise stage is taken without current float32 forms, makes them and sets `made`.
at::Tensor fused_inverted_residual_forward(const at::Tensor& x, FusedBlock& block);

/// A FusedStarBlock's tensors and settings as its forward reads them where no gradient is wanted:
/// conv1 with the filter scaled by norm1 and no bias; f1 and f2 without their biases, which with
/// norm1's shift carried through are bias1 and bias2 of the star product; conv_g without its bias,
/// then norm_g's scale and its folded shift; conv2 without its bias, which the residual pass adds
/// (with residual_scale, ones of the bias's dtype) where there is one.
struct StarBlock {
  BlockConvolution conv1;
  BlockConvolution f1;
  at::Tensor bias1;
  BlockConvolution f2;
  at::Tensor bias2;
  std::string activation;
  double min_val;
  double max_val;
  BlockConvolution conv_g;
  at::Tensor scale_g;
  at::Tensor shift_g;
  BlockConvolution conv2;
  c10::optional<at::Tensor> bias;
  c10::optional<at::Tensor> residual_scale;
};

/// FusedStarBlock.forward for CUDA x where no gradient is wanted, not under torch.compile and not
/// under autocast: the operators of its Python forward's inference branch, in its order, with its
/// arguments, so the same kernels and bits.
at::Tensor fused_star_block_forward(const at::Tensor& x, const StarBlock& block);

}  // namespace hardact_torch
