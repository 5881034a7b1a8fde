// max_pool2d_channels_last: hardact::max_pool (include/hardact/pooling.cuh) on a tensor. ATen's
// channels-last max pooling writes an int64 index per output element even when none is asked for
// (TUNING.md#max-pooling). This file checks the tensor with the operator's own messages, allocates
// the output and calls the launcher.

#include "ops/max_pool.h"
#include "launch/tensor_launch.cuh"

#include <hardact/pooling.cuh>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <cstddef>
#include <cstdint>
#include <limits>

namespace hardact_torch {

at::Tensor max_pool2d_channels_last(const at::Tensor& x, int64_t kernel_h, int64_t kernel_w, int64_t stride_h,
                                    int64_t stride_w, int64_t pad_h, int64_t pad_w, bool ceil_mode) {
  constexpr const char* op = "_max_pool2d";
  TORCH_CHECK_VALUE(x.is_cuda() && x.dim() == 4, "hardact.", op, ": x must be a 4-D CUDA tensor");
  TORCH_CHECK_VALUE(x.is_contiguous(at::MemoryFormat::ChannelsLast), "hardact.", op, ": x must be channels-last");
  constexpr int64_t kMost = std::numeric_limits<int>::max();
  for (const int64_t setting : {kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w}) {
    TORCH_CHECK_VALUE(setting >= 0 && setting <= kMost, "hardact.", op, ": ", setting, " is no window setting");
  }
  const hardact::MaxPoolShape shape{static_cast<std::size_t>(x.size(0)), static_cast<std::size_t>(x.size(2)),
                                    static_cast<std::size_t>(x.size(3)), static_cast<std::size_t>(x.size(1)),
                                    static_cast<int>(kernel_h), static_cast<int>(kernel_w),
                                    static_cast<int>(stride_h), static_cast<int>(stride_w),
                                    static_cast<int>(pad_h), static_cast<int>(pad_w), ceil_mode};
  TORCH_CHECK_VALUE(shape.channels > 0 && shape.out_height() > 0 && shape.out_width() > 0, "hardact.", op,
                    ": no pooling of this input: kernel and stride must be at least 1, padding at most half the "
                    "kernel, and the padded input at least the kernel, with channels");

  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor y = at::empty({x.size(0), x.size(1), static_cast<int64_t>(shape.out_height()),
                            static_cast<int64_t>(shape.out_width())},
                           x.options().memory_format(at::MemoryFormat::ChannelsLast));
  if (x.size(0) == 0) return y;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(x.device().index());
  const cudaError_t status = with_element_type(op, x.scalar_type(), [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::type;
    return hardact::max_pool(shape, data_of<T>(x), mutable_data_of<T>(y), stream);
  });
  TORCH_CHECK_VALUE(status != cudaErrorNotSupported, "hardact.", op, ": a sample must hold under 2^31 elements");
  C10_CUDA_CHECK(status);
  return y;
}

}  // namespace hardact_torch
