// The hardact operators for PyTorch: schemas (TORCH_LIBRARY) and CUDA kernels through hardact's
// launchers. Their Autograd kernels are in autograd.cpp and the Python bindings in
// python_module.cpp; fake (meta) kernels and the DTensor sharding rules are registered in Python
// (hardact_torch/_registrations.py).
//
// Layouts: hardact works on flat arrays, so a kernel runs directly on the memory of tensors that
// share one non-overlapping, dense layout (contiguous, transposed, channels-last, views with an
// offset). Any other layout (gaps, such as x[:, ::2]) goes through one dense copy; results then
// have the layout at::empty_like(x) gives, as PyTorch's own pointwise ops do.

#include "launch/tensor_launch.cuh"

#include <hardact/hardact.cuh>

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cmath>
#include <cstddef>

namespace {

using namespace hardact_torch;

void check_input(const char* op_name, const at::Tensor& x) {
  TORCH_CHECK_VALUE(x.is_cuda(), "hardact::", op_name, ": expected a CUDA tensor, got one on ", x.device().str());
  with_element_type(op_name, x.scalar_type(), [](auto) { return cudaSuccess; });  // dtype check only
}

// ---- the three forms of a unary op -------------------------------------------------------------

template <class Op>
at::Tensor unary(const char* op_name, const Op& op, const at::Tensor& x) {
  check_input(op_name, x);
  const c10::cuda::CUDAGuard device_guard(x.device());
  at::Tensor out = at::empty_like(x);  // x's strides when x is dense, as PyTorch's pointwise ops
  if (shares_dense_layout(x, out)) {
    launch_unary(op_name, op, x, out);
  } else {
    out.copy_(x);
    launch_unary(op_name, op, out, out);
  }
  return out;
}

template <class Op>
void unary_inplace(const char* op_name, const Op& op, const at::Tensor& x) {
  check_input(op_name, x);
  at::assert_no_internal_overlap(x);  // e.g. expand(): PyTorch refuses these writes too
  const c10::cuda::CUDAGuard device_guard(x.device());
  if (x.is_non_overlapping_and_dense()) {
    launch_unary(op_name, op, x, x);
  } else {
    at::Tensor dense = x.contiguous();
    launch_unary(op_name, op, dense, dense);
    x.copy_(dense);
  }
}

template <class Op>
void unary_out(const char* op_name, const Op& op, const at::Tensor& x, const at::Tensor& out) {
  check_input(op_name, x);
  check_same(op_name, x, out, "out");
  at::assert_no_internal_overlap(out);
  at::assert_no_partial_overlap(out, x);  // out may be x itself, not a shifted view of it
  const c10::cuda::CUDAGuard device_guard(x.device());
  if (shares_dense_layout(x, out)) {
    launch_unary(op_name, op, x, out);
  } else if (out.is_non_overlapping_and_dense()) {
    launch_unary(op_name, op, in_layout_of(x, out), out);
  } else {
    out.copy_(unary(op_name, op, x));
  }
}

template <class Op>
at::Tensor binary(const char* op_name, const Op& op, const at::Tensor& grad, const at::Tensor& x) {
  check_input(op_name, x);
  check_same(op_name, x, grad, "grad_output");
  const c10::cuda::CUDAGuard device_guard(x.device());
  at::Tensor out = at::empty_like(x);
  // Autograd often hands over an expanded or otherwise strided grad_output: copied once here.
  launch_binary(op_name, op, in_layout_of(grad, out), in_layout_of(x, out), out);
  return out;
}

// ---- the ops -------------------------------------------------------------------------------------

at::Tensor hardsigmoid(const at::Tensor& x) { return unary("hardsigmoid", hardact::HardSigmoid{}, x); }
void hardsigmoid_(const at::Tensor& x) { unary_inplace("hardsigmoid_", hardact::HardSigmoid{}, x); }
void hardsigmoid_out(const at::Tensor& x, const at::Tensor& out) {
  unary_out("hardsigmoid.out", hardact::HardSigmoid{}, x, out);
}
at::Tensor hardsigmoid_backward(const at::Tensor& grad, const at::Tensor& x) {
  return binary("hardsigmoid_backward", hardact::HardSigmoidBackward{}, grad, x);
}

at::Tensor hardtanh(const at::Tensor& x, double min_val, double max_val) {
  check_bounds("hardtanh", min_val, max_val);
  return unary("hardtanh", hardact::HardTanh{min_val, max_val}, x);
}
void hardtanh_(const at::Tensor& x, double min_val, double max_val) {
  check_bounds("hardtanh_", min_val, max_val);
  unary_inplace("hardtanh_", hardact::HardTanh{min_val, max_val}, x);
}
void hardtanh_out(const at::Tensor& x, double min_val, double max_val, const at::Tensor& out) {
  check_bounds("hardtanh.out", min_val, max_val);
  unary_out("hardtanh.out", hardact::HardTanh{min_val, max_val}, x, out);
}
at::Tensor hardtanh_backward(const at::Tensor& grad, const at::Tensor& x, double min_val, double max_val) {
  check_bounds("hardtanh_backward", min_val, max_val);
  return binary("hardtanh_backward", hardact::HardTanhBackward{min_val, max_val}, grad, x);
}

at::Tensor hardswish(const at::Tensor& x) { return unary("hardswish", hardact::HardSwish{}, x); }
void hardswish_(const at::Tensor& x) { unary_inplace("hardswish_", hardact::HardSwish{}, x); }
void hardswish_out(const at::Tensor& x, const at::Tensor& out) {
  unary_out("hardswish.out", hardact::HardSwish{}, x, out);
}
at::Tensor hardswish_backward(const at::Tensor& grad, const at::Tensor& x) {
  return binary("hardswish_backward", hardact::HardSwishBackward{}, grad, x);
}

at::Tensor relu6(const at::Tensor& x) { return unary("relu6", hardact::ReLU6{}, x); }
void relu6_(const at::Tensor& x) { unary_inplace("relu6_", hardact::ReLU6{}, x); }
void relu6_out(const at::Tensor& x, const at::Tensor& out) { unary_out("relu6.out", hardact::ReLU6{}, x, out); }
at::Tensor relu6_backward(const at::Tensor& grad, const at::Tensor& x) {
  return binary("relu6_backward", hardact::HardTanhBackward{0.0, 6.0}, grad, x);
}

}  // namespace

// The in-place and out= forms return nothing: AOTAutograd (torch.compile) can functionalize a custom
// op that mutates an argument, but not one whose output aliases an input (Tensor(a!) returns).
TORCH_LIBRARY(hardact, m) {
  m.def("hardsigmoid(Tensor x) -> Tensor");
  m.def("hardsigmoid_(Tensor(a!) x) -> ()");
  m.def("hardsigmoid.out(Tensor x, *, Tensor(a!) out) -> ()");
  m.def("hardsigmoid_backward(Tensor grad_output, Tensor x) -> Tensor");

  m.def("hardtanh(Tensor x, float min_val=-1., float max_val=1.) -> Tensor");
  m.def("hardtanh_(Tensor(a!) x, float min_val=-1., float max_val=1.) -> ()");
  m.def("hardtanh.out(Tensor x, float min_val=-1., float max_val=1., *, Tensor(a!) out) -> ()");
  m.def("hardtanh_backward(Tensor grad_output, Tensor x, float min_val, float max_val) -> Tensor");

  m.def("hardswish(Tensor x) -> Tensor");
  m.def("hardswish_(Tensor(a!) x) -> ()");
  m.def("hardswish.out(Tensor x, *, Tensor(a!) out) -> ()");
  m.def("hardswish_backward(Tensor grad_output, Tensor x) -> Tensor");

  m.def("relu6(Tensor x) -> Tensor");
  m.def("relu6_(Tensor(a!) x) -> ()");
  m.def("relu6.out(Tensor x, *, Tensor(a!) out) -> ()");
  m.def("relu6_backward(Tensor grad_output, Tensor x) -> Tensor");
}

TORCH_LIBRARY_IMPL(hardact, CUDA, m) {
  m.impl("hardsigmoid", &hardsigmoid);
  m.impl("hardsigmoid_", &hardsigmoid_);
  m.impl("hardsigmoid.out", &hardsigmoid_out);
  m.impl("hardsigmoid_backward", &hardsigmoid_backward);
  m.impl("hardtanh", &hardtanh);
  m.impl("hardtanh_", &hardtanh_);
  m.impl("hardtanh.out", &hardtanh_out);
  m.impl("hardtanh_backward", &hardtanh_backward);
  m.impl("hardswish", &hardswish);
  m.impl("hardswish_", &hardswish_);
  m.impl("hardswish.out", &hardswish_out);
  m.impl("hardswish_backward", &hardswish_backward);
  m.impl("relu6", &relu6);
  m.impl("relu6_", &relu6_);
  m.impl("relu6.out", &relu6_out);
  m.impl("relu6_backward", &relu6_backward);
}
