// activation(x @ weight.T + bias) for float32 matrices on cuBLASLt, TF32 or not by the caller's choice
// (linear_activation.cpp says why).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

namespace hardact_torch {

/// out (N, M) = relu?(x @ weight.T + bias) for CUDA float32 x (N, K), weight (M, K), bias (M,) or
/// none, in one cuBLASLt call (bias and ReLU in its epilogue) on the current stream; the products in
/// TF32 where `tf32`, else in float32. Shapes cuBLASLt has no algorithm for go through ATen, whose
/// float32 products follow torch.backends.cuda.matmul.allow_tf32. Inference only: no autograd.
at::Tensor linear_activation(const at::Tensor& x, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                             bool relu, bool tf32);

}  // namespace hardact_torch
