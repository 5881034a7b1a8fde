// pointwise_convolution: the rewrite's 1x1 convolutions (PointwiseConv2d) on channels-last float16 and
// bfloat16 input as one matrix product.
//
// Why: a 1x1 convolution at stride 1 on a channels-last tensor is the (N * H * W, C) matrix that the
// tensor already is, times the weight. On the H200, cuDNN's 16-bit 1x1 convolutions (cudnn.benchmark
// on) took up to 1.6x the time of the same products on cuBLAS at batches 1 to 8, and whole networks
// in a CUDA graph ran faster with their 1x1 convolutions as products; float32 gained on some
// networks and lost on others, so it stays with cuDNN. Channel counts that are not multiples of 8
// leave rows unaligned to 16 bytes, where cuBLAS's kernels lost (ReXNet)
// (TUNING.md#package-pointwise-convolutions).

#include "ops/pointwise_convolution.h"
#include "ops/linear_activation.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/core/GradMode.h>

#include <limits>

namespace hardact_torch {

bool pointwise_product_applies(const at::Tensor& x, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                               std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
                               std::array<int64_t, 2> dilation, int64_t groups) {
  const at::ScalarType dtype = x.scalar_type();
  if (!x.is_cuda() || x.dim() != 4 || (dtype != at::kHalf && dtype != at::kBFloat16) ||
      weight.scalar_type() != dtype || weight.device() != x.device() || weight.dim() != 4 ||
      weight.size(2) != 1 || weight.size(3) != 1 || weight.size(1) != x.size(1) || groups != 1 ||
      stride != std::array<int64_t, 2>{1, 1} || padding != std::array<int64_t, 2>{0, 0} ||
      dilation != std::array<int64_t, 2>{1, 1}) {
    return false;
  }
  if (bias.has_value() && (bias->scalar_type() != dtype || bias->device() != x.device() || bias->dim() != 1 ||
                           bias->size(0) != weight.size(0))) {
    return false;
  }
  constexpr int64_t kAlignedChannels = 8;  // 16 bytes of a 16-bit row
  const int64_t rows = x.size(0) * x.size(2) * x.size(3);
  if (x.size(1) % kAlignedChannels != 0 || weight.size(0) % kAlignedChannels != 0 || rows < 1 ||
      rows > std::numeric_limits<int32_t>::max() || !x.is_contiguous(at::MemoryFormat::ChannelsLast)) {
    return false;
  }
  if (at::autocast::is_autocast_enabled(at::kCUDA)) return false;
  return !(c10::GradMode::is_enabled() &&
           (x.requires_grad() || weight.requires_grad() || (bias.has_value() && bias->requires_grad())));
}

at::Tensor pointwise_convolution(const at::Tensor& x, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                                 std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
                                 std::array<int64_t, 2> dilation, int64_t groups) {
  if (!pointwise_product_applies(x, weight, bias, stride, padding, dilation, groups)) {
    return at::conv2d(x, weight, bias, stride, padding, dilation, groups);
  }
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3), m = weight.size(0);
  // Channels-last contiguous x is the (N * H * W, C) row-major matrix, a contiguous (M, C, 1, 1) weight
  // the (M, C) one, and a channels-last (N, M, H, W) output the (N * H * W, M) product: one allocation
  // and one call, no views (each view is a dispatcher call of host time on every layer of an eager
  // forward: TUNING.md#package-pointwise-convolutions).
  at::Tensor out = at::empty({n, m, h, w}, x.options().memory_format(at::MemoryFormat::ChannelsLast));
  const c10::cuda::CUDAGuard guard(x.device());
  const at::Tensor filter = weight.contiguous();
  at::Tensor bias_values;
  if (bias.has_value()) bias_values = bias->contiguous();
  if (!product_into(x.const_data_ptr(), filter.const_data_ptr(),
                    bias.has_value() ? bias_values.const_data_ptr() : nullptr, out.data_ptr(), n * h * w, m, c,
                    x.scalar_type(), x.get_device(), /*relu=*/false, /*tf32=*/false)) {
    return at::conv2d(x, weight, bias, stride, padding, dilation, groups);
  }
  return out;
}

}  // namespace hardact_torch
