// depthwise_conv_scale_shift_activation: a MobileNet block's depthwise stage in one pass, on
// hardact::depthwise_conv (include/hardact/depthwise.cuh; why a convolution in an activation
// library, and its work split: kernel/depthwise_kernel.cuh, TUNING.md#package-fused-ops). This
// file checks the tensors with the operator's own messages, allocates the outputs and the
// launcher's temporary storage, and calls the launcher with the activation chosen at run time
// (launch/runtime_activation.cuh).

#include "ops/depthwise_conv.h"
#include "launch/fused_activation.h"
#include "launch/runtime_activation.cuh"
#include "launch/tensor_launch.cuh"

#include <hardact/depthwise.cuh>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace hardact_torch {
namespace {

constexpr int64_t kChannelsPerThread = 4;  // the channels must be whole vectors of 4
constexpr int64_t kMostChannels = 1024;

void check_float_parameter(const char* what, const at::Tensor& p, const at::Tensor& x, int64_t count) {
  constexpr const char* op = "_depthwise_conv_scale_shift_activation";
  TORCH_CHECK_VALUE(p.device() == x.device(), "hardact.", op, ": ", what, " is on ", p.device().str(), ", x on ",
                    x.device().str());
  TORCH_CHECK_TYPE(p.scalar_type() == at::kFloat, "hardact.", op, ": ", what, " must be float32");
  TORCH_CHECK_VALUE(p.is_contiguous() && p.numel() == count, "hardact.", op, ": ", what, " must be contiguous with ",
                    std::to_string(count), " elements");
  TORCH_CHECK_VALUE(reinterpret_cast<std::uintptr_t>(p.const_data_ptr()) % 16 == 0, "hardact.", op, ": ", what,
                    " must be 16-byte aligned");
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> depthwise_conv_scale_shift_activation(
    const at::Tensor& x, const at::Tensor& taps, const at::Tensor& scale, const at::Tensor& shift,
    int64_t kernel_size, int64_t stride, int64_t pad_h, int64_t pad_w, c10::string_view activation, double min_val,
    double max_val, bool with_mean, bool concatenate_input) {
  constexpr const char* op = "_depthwise_conv_scale_shift_activation";
  TORCH_CHECK_VALUE(x.is_cuda() && x.dim() == 4, "hardact.", op, ": x must be a 4-D CUDA tensor");
  const at::ScalarType type = x.scalar_type();
  TORCH_CHECK_TYPE(type == at::kFloat || type == at::kHalf || type == at::kBFloat16, "hardact.", op,
                   ": x must be float32, float16 or bfloat16");
  TORCH_CHECK_VALUE(x.is_contiguous(at::MemoryFormat::ChannelsLast), "hardact.", op, ": x must be channels-last");
  TORCH_CHECK_VALUE(kernel_size == 3 || kernel_size == 5, "hardact.", op, ": kernel_size must be 3 or 5");
  TORCH_CHECK_VALUE(stride == 1 || stride == 2, "hardact.", op, ": stride must be 1 or 2");
  TORCH_CHECK_VALUE(pad_h >= 0 && pad_h < kernel_size && pad_w >= 0 && pad_w < kernel_size, "hardact.", op,
                    ": padding must be in [0, kernel_size)");
  const FusedActivation kind = parse_activation(op, activation);
  TORCH_CHECK_VALUE(kind != FusedActivation::silu, "hardact.", op, ": silu is not one of its activations");
  if (kind == FusedActivation::hardtanh) check_bounds(op, min_val, max_val);
  const int64_t samples = x.size(0), channels = x.size(1), height = x.size(2), width = x.size(3);
  TORCH_CHECK_VALUE(channels % kChannelsPerThread == 0 && channels > 0 && channels <= kMostChannels,
                    "hardact.", op, ": the channels must be a positive multiple of 4 up to 1024");
  TORCH_CHECK_VALUE(reinterpret_cast<std::uintptr_t>(x.const_data_ptr()) % (4 * x.element_size()) == 0, "hardact.",
                    op, ": x must be aligned to 4 elements");
  check_float_parameter("taps", taps, x, kernel_size * kernel_size * channels);
  check_float_parameter("scale", scale, x, channels);
  check_float_parameter("shift", shift, x, channels);
  const int64_t out_height = (height + 2 * pad_h - kernel_size) / stride + 1;
  const int64_t out_width = (width + 2 * pad_w - kernel_size) / stride + 1;
  TORCH_CHECK_VALUE(height + 2 * pad_h >= kernel_size && width + 2 * pad_w >= kernel_size, "hardact.", op,
                    ": the padded input is smaller than the filter");
  TORCH_CHECK_VALUE(!concatenate_input || (stride == 1 && out_height == height && out_width == width), "hardact.",
                    op, ": concatenate_input needs stride 1 and an output of x's height and width");
  const int64_t out_channels = concatenate_input ? 2 * channels : channels;
  TORCH_CHECK_VALUE(height * width * channels <= std::numeric_limits<int>::max() &&
                        out_height * out_width * out_channels <= std::numeric_limits<int>::max() && samples <= 65535,
                    "hardact.", op, ": a sample must hold under 2^31 elements, and N at most 65535");

  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor y = at::empty({samples, out_channels, out_height, out_width},
                           x.options().memory_format(at::MemoryFormat::ChannelsLast));
  at::Tensor mean = with_mean ? at::empty({samples, channels}, x.options()) : at::Tensor();
  if (samples == 0) return {y, mean};

  const hardact::DepthwiseConvShape shape{static_cast<std::size_t>(samples), static_cast<std::size_t>(height),
                                          static_cast<std::size_t>(width), static_cast<std::size_t>(channels),
                                          static_cast<int>(kernel_size), static_cast<int>(stride),
                                          static_cast<int>(pad_h), static_cast<int>(pad_w), concatenate_input};
  // The blocks' sums of the mean, where a sample takes several blocks: the launcher's temporary
  // storage, from PyTorch's caching allocator.
  const std::size_t temp_bytes = with_mean ? hardact::depthwise_conv_temp_storage_bytes(shape) : 0;
  const at::Tensor temp =
      temp_bytes > 0 ? at::empty({static_cast<int64_t>(temp_bytes / sizeof(float))}, x.options().dtype(at::kFloat))
                     : at::Tensor();
  const RuntimeActivation act = RuntimeActivation::of(kind, min_val, max_val);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(x.device().index());
  C10_CUDA_CHECK(with_element_type(op, type, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, double>) {
      return cudaErrorInvalidValue;  // not reached: x was checked to be float32, float16 or bfloat16
    } else if (with_mean) {
      return hardact::depthwise_conv(act, shape, data_of<T>(x), data_of<float>(taps), data_of<float>(scale),
                                     data_of<float>(shift), mutable_data_of<T>(y), mutable_data_of<T>(mean),
                                     temp.defined() ? temp.mutable_data_ptr() : nullptr, temp_bytes, stream);
    } else {
      return hardact::depthwise_conv(act, shape, data_of<T>(x), data_of<float>(taps), data_of<float>(scale),
                                     data_of<float>(shift), mutable_data_of<T>(y), stream);
    }
  }));
  return {y, mean};
}

}  // namespace hardact_torch
