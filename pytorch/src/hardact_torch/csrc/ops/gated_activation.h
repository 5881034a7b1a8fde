// activation(x * gate[n, c]) in one pass: a squeeze-excitation's gate multiply and the activation
// after it, where the gate went through its own function first (ReXNet's sigmoid, then ReLU6).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/string_view.h>

namespace hardact_torch {

/// out = activation(x * gate[n, c]) for CUDA x (N, C, ...) NCHW-contiguous or channels-last-like,
/// gate of x's dtype holding one value per (n, c) (shape (N, C) or (N, C, 1, ...)); activation one
/// of the fused activations' names. In float (double for float64), rounded once: in float32 bit for
/// bit `act(x * gate.view(N, C, 1, 1))`. The output has x's layout. Inference only: no autograd.
at::Tensor gated_activation(const at::Tensor& x, const at::Tensor& gate, c10::string_view activation, double min_val,
                            double max_val);

}  // namespace hardact_torch
