// fused_inverted_residual_forward and fused_star_block_forward: a FusedInvertedResidual's and a
// FusedStarBlock's inference forward in one call each.
//
// Why: at batch 1 a fused block's GPU work is about 26 µs and its Python forward about 170 µs of host
// time (module calls, attribute look-ups, argument parsing per op), so eager inference waits on
// the host. Here the same operators run from C++ in the order FusedInvertedResidual.forward runs
// them where no gradient is wanted: at::conv2d with nn.Conv2d's arguments (the op F.conv2d calls,
// so cuDNN sees the same call and picks the same algorithm) or a PointwiseConv2d's
// pointwise_convolution, the hardact operators through their dispatcher handles (as the _C
// bindings call them: autograd kernels and dispatch modes still apply), the depthwise stage and
// linear_activation directly (as their bindings do). Every branch
// below is the Python forward's, named after the method it mirrors (TUNING.md#package-fused-ops).
// A StarNet block's Python forward calls no module, but five convolutions and three hardact
// operators from Python still cost host time each; its one call runs the same sequence.

#include "ops/fused_block_forward.h"
#include "ops/depthwise_conv.h"
#include "ops/dispatch_helpers.h"
#include "ops/linear_activation.h"
#include "ops/pointwise_convolution.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/GradMode.h>

#include <cstdint>
#include <tuple>
#include <utility>

namespace hardact_torch {
namespace {

using at::Tensor;
using OptionalTensor = c10::optional<Tensor>;

// The operators' handles, looked up on first use (the registrations have run by then).
using ScaleShiftSignature = Tensor(const Tensor&, const OptionalTensor&, const OptionalTensor&, c10::string_view,
                                   double, double);
using ScaleShiftMeanSignature = std::tuple<Tensor, Tensor>(const Tensor&, const OptionalTensor&,
                                                           const OptionalTensor&, c10::string_view, double, double);
using ScaleShiftResidualSignature = Tensor(const Tensor&, const OptionalTensor&, const OptionalTensor&,
                                           const Tensor&, c10::string_view, double, double);
using ResidualSignature = Tensor(const Tensor&, const Tensor&, c10::string_view, double, double);
using GateSignature = Tensor(const Tensor&, const Tensor&);
using ProductSignature = Tensor(const Tensor&, const Tensor&, const Tensor&, const Tensor&, c10::string_view, double,
                                double);

Tensor scale_shift_activation(const Tensor& x, const BlockNorm& norm) {
  static const auto op = find_op<ScaleShiftSignature>("hardact::scale_shift_activation");
  return op.call(x, norm.scale, norm.shift, norm.activation, norm.min_val, norm.max_val);
}

std::tuple<Tensor, Tensor> scale_shift_activation_mean(const Tensor& x, const BlockNorm& norm) {
  static const auto op = find_op<ScaleShiftMeanSignature>("hardact::scale_shift_activation_mean");
  return op.call(x, norm.scale, norm.shift, norm.activation, norm.min_val, norm.max_val);
}

Tensor hardsigmoid_gate(const Tensor& x, const Tensor& gate) {
  static const auto op = find_op<GateSignature>("hardact::hardsigmoid_gate");
  return op.call(x, gate);
}

/// nn.Conv2d's forward with zero padding: F.conv2d(x, weight, bias, stride, padding, dilation, groups);
/// a PointwiseConv2d's where the module is one.
Tensor convolution(const Tensor& x, const BlockConvolution& conv) {
  if (conv.pointwise) {
    return pointwise_convolution(x, conv.weight, conv.bias, conv.stride, conv.padding, conv.dilation, conv.groups);
  }
  return at::conv2d(x, conv.weight, conv.bias, conv.stride, conv.padding, conv.dilation, conv.groups);
}

/// FusedInvertedResidual.depthwise_parameters: the filters as float32 (K * K, C) and the norm's
/// scale and shift as float32, made as it makes them (under no_grad, from detached tensors).
void make_depthwise_parameters(BlockDepthwiseFilter& filter, const Tensor& weight, const BlockNorm& norm) {
  TORCH_CHECK(norm.scale.has_value() && norm.shift.has_value(), "hardact FusedInvertedResidual: the depthwise "
              "stage needs its norm's scale and shift");
  const c10::NoGradGuard no_grad;
  filter.taps = weight.detach().reshape({weight.size(0), -1}).t().to(at::kFloat).contiguous();
  filter.scale = norm.scale->detach().to(at::kFloat).contiguous();
  filter.shift = norm.shift->detach().to(at::kFloat).contiguous();
  filter.made = true;
}

/// FusedInvertedResidual.depthwise_stage: (y, mean or undefined) from the one kernel, or nothing
/// where its conditions on y fail (gradients, torch.compile, autocast and tensor subclasses are the
/// caller's to have ruled out).
c10::optional<std::tuple<Tensor, Tensor>> depthwise_stage(const Tensor& y, FusedBlock& block, bool with_mean) {
  if (!block.depthwise.has_value()) return c10::nullopt;
  const at::ScalarType type = y.scalar_type();
  if (!y.is_cuda() || (type != at::kFloat && type != at::kHalf && type != at::kBFloat16) ||
      type != block.conv2.weight.scalar_type() || y.dim() != 4 ||
      !y.is_contiguous(at::MemoryFormat::ChannelsLast) ||
      reinterpret_cast<std::uintptr_t>(y.data_ptr()) % static_cast<std::uintptr_t>(4 * y.element_size()) != 0) {
    return c10::nullopt;
  }
  BlockDepthwiseFilter& filter = *block.depthwise;
  if (!filter.taps.defined()) make_depthwise_parameters(filter, block.conv2.weight, block.norm2);
  const BlockNorm& norm = block.norm2;
  return depthwise_conv_scale_shift_activation(y, filter.taps, filter.scale, filter.shift, filter.kernel_size,
                                               filter.stride, filter.pad_h, filter.pad_w, norm.activation,
                                               norm.min_val, norm.max_val, with_mean);
}

/// FusedInvertedResidual.excitation without gradients on a CUDA mean, for an nn.ReLU between the
/// products: float32, float16 and bfloat16 through linear_activation (TF32 as cuDNN's setting says,
/// what torch.backends.cudnn.allow_tf32 reads), other dtypes through ATen's addmm with its ReLU
/// epilogue, or linear and the ReLU where the reduce has no bias.
Tensor excitation(const Tensor& mean, const BlockSqueeze& squeeze) {
  const Tensor weight = squeeze.reduce_weight.flatten(1);
  const at::ScalarType type = mean.scalar_type();
  if (type == at::kFloat || type == at::kHalf || type == at::kBFloat16) {
    const bool tf32 = at::globalContext().allowTF32CuDNN();
    const Tensor hidden = linear_activation(mean, weight, squeeze.reduce_bias, /*relu=*/true, tf32);
    return linear_activation(hidden, squeeze.expand_weight.flatten(1), squeeze.expand_bias, /*relu=*/false, tf32);
  }
  Tensor hidden;
  if (squeeze.reduce_bias.has_value()) {
    hidden = at::_addmm_activation(*squeeze.reduce_bias, mean, weight.t());
  } else {
    hidden = at::linear(mean, weight, c10::nullopt);
    hidden = squeeze.relu_inplace ? at::relu_(hidden) : at::relu(hidden);  // nn.ReLU's forward
  }
  return at::linear(hidden, squeeze.expand_weight.flatten(1), squeeze.expand_bias);
}

}  // namespace

Tensor fused_inverted_residual_forward(const Tensor& x, FusedBlock& block) {
  TORCH_CHECK(block.conv1.has_value() == block.norm1.has_value(), "hardact FusedInvertedResidual: an expansion "
              "has a convolution and a norm");
  Tensor y = x;
  if (block.conv1.has_value()) y = scale_shift_activation(convolution(x, *block.conv1), *block.norm1);
  const bool with_mean = block.squeeze.has_value();
  if (auto fused = depthwise_stage(y, block, with_mean)) {
    y = std::move(std::get<0>(*fused));
    const Tensor& mean = std::get<1>(*fused);
    if (mean.defined()) y = hardsigmoid_gate(y, excitation(mean, *block.squeeze));
  } else if (!with_mean) {
    y = scale_shift_activation(convolution(y, block.conv2), block.norm2);
  } else {
    auto [activated, mean] = scale_shift_activation_mean(convolution(y, block.conv2), block.norm2);
    y = hardsigmoid_gate(activated, excitation(mean, *block.squeeze));
  }
  y = convolution(y, block.conv3);
  const BlockNorm& norm = block.norm3;
  if (!block.skip) return scale_shift_activation(y, norm);
  // The Python forward passes the functions' default bounds here, not the norm's.
  constexpr double kMin = -1.0, kMax = 1.0;
  if (norm.activation == "identity") {
    static const auto op = find_op<ScaleShiftResidualSignature>("hardact::scale_shift_residual_activation");
    return op.call(y, norm.scale, norm.shift, x, "identity", kMin, kMax);
  }
  static const auto op = find_op<ResidualSignature>("hardact::residual_activation");
  return op.call(scale_shift_activation(y, norm), x, "identity", kMin, kMax);  // x added after the activation
}

Tensor fused_star_block_forward(const Tensor& x, const StarBlock& block) {
  static const auto product = find_op<ProductSignature>("hardact::bias_activation_product");
  static const auto scale_shift = find_op<ScaleShiftSignature>("hardact::scale_shift_activation");
  // The Python forward's defaults for the passes that take none of the block's settings.
  constexpr double kMin = -1.0, kMax = 1.0;
  const Tensor y = convolution(x, block.conv1);
  const Tensor first = convolution(y, block.f1);  // f1 before f2, as Python evaluates the call's arguments
  const Tensor second = convolution(y, block.f2);
  const Tensor a = product.call(first, block.bias1, second, block.bias2, block.activation, block.min_val,
                                block.max_val);
  Tensor z = scale_shift.call(convolution(a, block.conv_g), block.scale_g, block.shift_g, "identity", kMin, kMax);
  z = convolution(z, block.conv2);
  if (z.sizes() != x.sizes() || z.scalar_type() != x.scalar_type()) {  // the block's add would broadcast or promote
    return x + (block.bias.has_value() ? z + block.bias->view({-1, 1, 1}) : z);
  }
  if (!block.bias.has_value()) {
    static const auto residual = find_op<ResidualSignature>("hardact::residual_activation");
    return residual.call(z, x, "identity", kMin, kMax);
  }
  static const auto residual = find_op<ScaleShiftResidualSignature>("hardact::scale_shift_residual_activation");
  return residual.call(z, block.residual_scale, block.bias, x, "identity", kMin, kMax);
}

}  // namespace hardact_torch
