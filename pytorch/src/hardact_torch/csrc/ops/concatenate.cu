// concatenate_channels: hardact::concatenate (include/hardact/concatenate.cuh) on tensors. ATen's
// torch.cat of channels-last tensors along the channels takes up to three times a copy of the same
// bytes (TUNING.md#concatenation): a channels-last (N, C_k, H, W) tensor is N * H * W rows of C_k
// elements, so the concatenation is the library's row copy. This file checks the tensors with the
// binding's messages, allocates the output and calls the launcher once.

#include "ops/concatenate.h"
#include "launch/tensor_launch.cuh"

#include <hardact/concatenate.cuh>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hardact_torch {

at::Tensor concatenate_channels(const std::vector<at::Tensor>& inputs) {
  constexpr const char* op = "_concatenate_channels";
  TORCH_CHECK_VALUE(!inputs.empty(), "hardact.", op, ": expected at least one tensor");
  const at::Tensor& first = inputs.front();
  int64_t channels = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& x = inputs[i];
    const std::string which = "tensor " + std::to_string(i);
    TORCH_CHECK_VALUE(x.defined() && x.is_cuda() && x.dim() == 4, "hardact.", op, ": ", which,
                      " must be a 4-D CUDA tensor");
    TORCH_CHECK_VALUE(x.is_contiguous(at::MemoryFormat::ChannelsLast), "hardact.", op, ": ", which,
                      " must be channels-last");
    TORCH_CHECK_VALUE(x.device() == first.device(), "hardact.", op, ": ", which, " is on ", x.device().str(),
                      ", tensor 0 on ", first.device().str());
    TORCH_CHECK_TYPE(x.scalar_type() == first.scalar_type(), "hardact.", op, ": ", which, " has dtype ",
                     x.scalar_type(), ", tensor 0 has ", first.scalar_type());
    TORCH_CHECK_VALUE(x.size(0) == first.size(0) && x.size(2) == first.size(2) && x.size(3) == first.size(3),
                      "hardact.", op, ": ", which, " has shape ", shape_string(x.sizes()), ", tensor 0 has ",
                      shape_string(first.sizes()), "; N, H and W must be the same");
    channels += x.size(1);
  }

  const c10::cuda::CUDAGuard guard(first.device());
  at::Tensor y = at::empty({first.size(0), channels, first.size(2), first.size(3)},
                           first.options().memory_format(at::MemoryFormat::ChannelsLast));
  const auto rows = static_cast<std::size_t>(first.size(0) * first.size(2) * first.size(3));
  if (rows == 0) return y;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(first.device().index());
  const cudaError_t status = with_element_type(op, first.scalar_type(), [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::type;
    std::vector<hardact::ConcatenationInput<T>> parts(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      parts[i] = {data_of<T>(inputs[i]), static_cast<std::size_t>(inputs[i].size(1))};
    }
    return hardact::concatenate(parts.data(), parts.size(), rows, mutable_data_of<T>(y), stream);
  });
  TORCH_CHECK_VALUE(status != cudaErrorNotSupported, "hardact.", op, ": the output must hold under 2^62 bytes");
  C10_CUDA_CHECK(status);
  return y;
}

}  // namespace hardact_torch
