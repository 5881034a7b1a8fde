// PyTorch binding for hardact's activation family, used by check_backward.py: backward passes
// through the two-input launcher, HardSwish and ReLU6, mixed input/output dtypes (fp8 included),
// and a fused chain. Every entry point writes into an output tensor the caller allocated (so the
// dtype of the result is chosen in Python) and runs on the current CUDA stream of the tensors.
// Built just in time by check_backward.py with hardact's include/ on the include path.

#include <hardact/hardact.cuh>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/extension.h>

#include <cstddef>
#include <initializer_list>
#include <string>

namespace {

template <class T>
struct Tag {
  using type = T;
};

/// Calls f(Tag<T>{}) with the CUDA element type of a float32/float64/float16/bfloat16 tensor.
template <class F>
cudaError_t with_element_type(at::ScalarType type, F&& f) {
  switch (type) {
    case at::kFloat:
      return f(Tag<float>{});
    case at::kDouble:
      return f(Tag<double>{});
    case at::kHalf:
      return f(Tag<__half>{});  // at::Half has __half's layout
    case at::kBFloat16:
      return f(Tag<__nv_bfloat16>{});  // at::BFloat16 has __nv_bfloat16's layout
    default:
      TORCH_CHECK_TYPE(false, "hardact_family: unsupported dtype ", type);
  }
  return cudaErrorInvalidValue;
}

void check_tensors(const char* what, std::initializer_list<const at::Tensor*> tensors) {
  const at::Tensor& first = **tensors.begin();
  for (const at::Tensor* t : tensors) {
    TORCH_CHECK_VALUE(t->is_cuda(), "hardact_family.", what, ": expected CUDA tensors");
    TORCH_CHECK_VALUE(t->is_contiguous(), "hardact_family.", what, ": expected contiguous tensors");
    TORCH_CHECK_VALUE(t->numel() == first.numel(), "hardact_family.", what, ": element counts differ");
    TORCH_CHECK_VALUE(t->device() == first.device(), "hardact_family.", what, ": tensors on different devices");
  }
}

void check_status(const char* what, cudaError_t status) {
  TORCH_CHECK(status == cudaSuccess, "hardact_family.", what, " failed: ", cudaGetErrorName(status), ": ",
              cudaGetErrorString(status));
}

/// out = op(x), all of one dtype.
template <class Op>
void same_type_unary(const char* what, const Op& op, const at::Tensor& x, at::Tensor& out) {
  check_tensors(what, {&x, &out});
  TORCH_CHECK_TYPE(x.scalar_type() == out.scalar_type(), "hardact_family.", what, ": x and out dtypes differ");
  const c10::cuda::CUDAGuard guard(x.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const std::size_t n = static_cast<std::size_t>(x.numel());
  check_status(what, with_element_type(x.scalar_type(), [&](auto tag) {
                 using T = typename decltype(tag)::type;
                 return hardact::transform(op, static_cast<const T*>(x.data_ptr()), static_cast<T*>(out.data_ptr()),
                                           n, stream);
               }));
}

/// out = op(grad, x), all of one dtype; out may be grad (in place).
template <class Op>
void same_type_binary(const char* what, const Op& op, const at::Tensor& grad, const at::Tensor& x, at::Tensor& out) {
  check_tensors(what, {&grad, &x, &out});
  TORCH_CHECK_TYPE(grad.scalar_type() == x.scalar_type() && x.scalar_type() == out.scalar_type(), "hardact_family.",
                   what, ": grad, x and out dtypes differ");
  const c10::cuda::CUDAGuard guard(x.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const std::size_t n = static_cast<std::size_t>(x.numel());
  check_status(what, with_element_type(x.scalar_type(), [&](auto tag) {
                 using T = typename decltype(tag)::type;
                 return hardact::transform(op, static_cast<const T*>(grad.data_ptr()),
                                           static_cast<const T*>(x.data_ptr()), static_cast<T*>(out.data_ptr()), n,
                                           stream);
               }));
}

/// out = op(x) with out of another dtype: float32 -> bfloat16/float16/float8_e4m3fn/float8_e5m2,
/// bfloat16 -> float32/float8_e4m3fn/float8_e5m2, float16 -> float32.
template <class Op>
void mixed_unary(const char* what, const Op& op, const at::Tensor& x, at::Tensor& out) {
  check_tensors(what, {&x, &out});
  const c10::cuda::CUDAGuard guard(x.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const std::size_t n = static_cast<std::size_t>(x.numel());
  const auto run = [&](auto in_tag, auto out_tag) {
    using TIn = typename decltype(in_tag)::type;
    using TOut = typename decltype(out_tag)::type;
    return hardact::transform(op, static_cast<const TIn*>(x.data_ptr()), static_cast<TOut*>(out.data_ptr()), n,
                              stream);
  };
  const at::ScalarType from = x.scalar_type(), to = out.scalar_type();
  cudaError_t status = cudaErrorInvalidValue;
  if (from == at::kFloat && to == at::kBFloat16) {
    status = run(Tag<float>{}, Tag<__nv_bfloat16>{});
  } else if (from == at::kFloat && to == at::kHalf) {
    status = run(Tag<float>{}, Tag<__half>{});
  } else if (from == at::kFloat && to == at::kFloat8_e4m3fn) {
    status = run(Tag<float>{}, Tag<__nv_fp8_e4m3>{});
  } else if (from == at::kFloat && to == at::kFloat8_e5m2) {
    status = run(Tag<float>{}, Tag<__nv_fp8_e5m2>{});
  } else if (from == at::kBFloat16 && to == at::kFloat) {
    status = run(Tag<__nv_bfloat16>{}, Tag<float>{});
  } else if (from == at::kBFloat16 && to == at::kFloat8_e4m3fn) {
    status = run(Tag<__nv_bfloat16>{}, Tag<__nv_fp8_e4m3>{});
  } else if (from == at::kBFloat16 && to == at::kFloat8_e5m2) {
    status = run(Tag<__nv_bfloat16>{}, Tag<__nv_fp8_e5m2>{});
  } else if (from == at::kHalf && to == at::kFloat) {
    status = run(Tag<__half>{}, Tag<float>{});
  } else {
    TORCH_CHECK_TYPE(false, "hardact_family.", what, ": unsupported dtype pair ", from, " -> ", to);
  }
  check_status(what, status);
}

}  // namespace

void hardsigmoid_backward(const at::Tensor& grad, const at::Tensor& x, at::Tensor& out) {
  same_type_binary("hardsigmoid_backward", hardact::HardSigmoidBackward{}, grad, x, out);
}

void hardtanh_backward(const at::Tensor& grad, const at::Tensor& x, at::Tensor& out, double min_val, double max_val) {
  same_type_binary("hardtanh_backward", hardact::HardTanhBackward{min_val, max_val}, grad, x, out);
}

void hardswish_backward(const at::Tensor& grad, const at::Tensor& x, at::Tensor& out) {
  same_type_binary("hardswish_backward", hardact::HardSwishBackward{}, grad, x, out);
}

void hardswish(const at::Tensor& x, at::Tensor& out) { same_type_unary("hardswish", hardact::HardSwish{}, x, out); }

void relu6(const at::Tensor& x, at::Tensor& out) { same_type_unary("relu6", hardact::ReLU6{}, x, out); }

/// HardSigmoid or HardSwish from x's dtype to out's (one pass, rounded once from float).
void activation_to(const std::string& op, const at::Tensor& x, at::Tensor& out) {
  if (op == "hardsigmoid") {
    mixed_unary("hardsigmoid_to", hardact::HardSigmoid{}, x, out);
  } else if (op == "hardswish") {
    mixed_unary("hardswish_to", hardact::HardSwish{}, x, out);
  } else {
    TORCH_CHECK_VALUE(false, "hardact_family.activation_to: op must be hardsigmoid or hardswish, not ", op);
  }
}

/// float32 only: out = clamp(x * scale, min_val, max_val) + offset as one fused chain.
void scale_clamp_offset(const at::Tensor& x, at::Tensor& out, double scale, double min_val, double max_val,
                        double offset) {
  TORCH_CHECK_TYPE(x.scalar_type() == at::kFloat, "hardact_family.scale_clamp_offset: float32 only");
  const auto fused = hardact::chain(hardact::Scale{scale}, hardact::HardTanh{min_val, max_val}, hardact::Offset{offset});
  TORCH_CHECK_VALUE(fused.is_valid(), "hardact_family.scale_clamp_offset: invalid parameters");
  same_type_unary("scale_clamp_offset", fused, x, out);
}

/// float32 only: out = max(0, min(1, alpha * x + beta)), HardSigmoid::affine.
void hardsigmoid_affine(const at::Tensor& x, at::Tensor& out, double alpha, double beta) {
  TORCH_CHECK_TYPE(x.scalar_type() == at::kFloat, "hardact_family.hardsigmoid_affine: float32 only");
  same_type_unary("hardsigmoid_affine", hardact::HardSigmoid::affine(alpha, beta), x, out);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  namespace py = pybind11;
  m.doc() = "hardact's activation family on contiguous CUDA tensors (outputs allocated by the caller)";
  m.def("hardsigmoid_backward", &hardsigmoid_backward, py::arg("grad"), py::arg("x"), py::arg("out"));
  m.def("hardtanh_backward", &hardtanh_backward, py::arg("grad"), py::arg("x"), py::arg("out"), py::arg("min_val"),
        py::arg("max_val"));
  m.def("hardswish_backward", &hardswish_backward, py::arg("grad"), py::arg("x"), py::arg("out"));
  m.def("hardswish", &hardswish, py::arg("x"), py::arg("out"));
  m.def("relu6", &relu6, py::arg("x"), py::arg("out"));
  m.def("activation_to", &activation_to, py::arg("op"), py::arg("x"), py::arg("out"));
  m.def("scale_clamp_offset", &scale_clamp_offset, py::arg("x"), py::arg("out"), py::arg("scale"), py::arg("min_val"),
        py::arg("max_val"), py::arg("offset"));
  m.def("hardsigmoid_affine", &hardsigmoid_affine, py::arg("x"), py::arg("out"), py::arg("alpha"), py::arg("beta"));
}
