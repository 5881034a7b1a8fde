// activation(x @ weight.T + bias) for float32, float16 and bfloat16 matrices on cuBLASLt, float32's TF32
// or not by the caller's choice (linear_activation.cpp says why).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Optional.h>

#include <cstdint>

namespace hardact_torch {

/// out (N, M) = relu?(x @ weight.T + bias) for CUDA x (N, K), weight (M, K) and bias (M,) or none, all
/// float32, float16 or bfloat16, in one cuBLASLt call (bias and ReLU in its epilogue) on the current
/// stream. float32 products in TF32 where `tf32`, else in float32; 16-bit ones accumulate in float32
/// and round once (`tf32` unused). Shapes cuBLASLt has no algorithm for go through ATen, whose
/// float32 products follow torch.backends.cuda.matmul.allow_tf32. Inference only: no autograd.
at::Tensor linear_activation(const at::Tensor& x, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                             bool relu, bool tf32);

/// linear_activation's product on raw pointers, for a caller that has made its output already (no
/// tensor views or allocation on the way): out (N, M) row-major = relu?(x (N, K) row-major @ weight
/// (M, K) row-major .T + bias (M,) or nullptr), of `dtype` (float32, float16 or bfloat16) on
/// `device`, which must be current, on the current stream. Returns false, having written nothing,
/// where cuBLASLt has no algorithm for the shape and alignments (the caller falls back).
bool product_into(const void* x, const void* weight, const void* bias, void* out, std::int64_t n, std::int64_t m,
                  std::int64_t k, at::ScalarType dtype, c10::DeviceIndex device, bool relu, bool tf32);

}  // namespace hardact_torch
