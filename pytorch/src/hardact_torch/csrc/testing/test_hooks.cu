// Internal operators that expose hardact features beyond the four activations, for the bit-exact
// tests in tests/test_backward.py: one-pass dtype conversion (fp8 included) and fused chains. Their
// names start with an underscore: they are test hooks, not part of the package's API, and have
// neither fake kernels nor autograd. Inputs must be contiguous (the checks only pass those).

#include "launch/tensor_launch.cuh"

#include <hardact/hardact.cuh>
#include <hardact/fp8.cuh>

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstddef>
#include <string>

namespace {

using namespace hardact_torch;

void check_contiguous_pair(const char* op_name, const at::Tensor& x, const at::Tensor& out) {
  for (const at::Tensor* t : {&x, &out}) {
    TORCH_CHECK_VALUE(t->is_cuda() && t->is_contiguous(), "hardact::", op_name, ": expected contiguous CUDA tensors");
  }
  TORCH_CHECK_VALUE(x.numel() == out.numel() && x.device() == out.device(), "hardact::", op_name,
                    ": x and out differ in element count or device");
}

/// out = op(x) with out of another dtype, rounded once from the compute type.
template <class Op>
void convert_with(const char* op_name, const Op& op, const at::Tensor& x, const at::Tensor& out) {
  check_contiguous_pair(op_name, x, out);
  const c10::cuda::CUDAGuard guard(x.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(x.device().index());
  const std::size_t n = static_cast<std::size_t>(x.numel());
  const auto run = [&](auto in_tag, auto out_tag) {
    using TIn = typename decltype(in_tag)::type;
    using TOut = typename decltype(out_tag)::type;
    return hardact::transform(op, data_of<TIn>(x), mutable_data_of<TOut>(out), n, stream);
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
    TORCH_CHECK_TYPE(false, "hardact::", op_name, ": unsupported dtype pair ", from, " -> ", to);
  }
  check_launch(op_name, status);
}

void activation_to(const at::Tensor& x, c10::string_view op, at::Tensor& out) {
  if (op == "hardsigmoid") {
    convert_with("_activation_to", hardact::HardSigmoid{}, x, out);
  } else if (op == "hardswish") {
    convert_with("_activation_to", hardact::HardSwish{}, x, out);
  } else {
    TORCH_CHECK_VALUE(false, "hardact::_activation_to: op must be hardsigmoid or hardswish, not ", op);
  }
}

/// float32 out = fused(x) for a validated policy.
template <class Op>
at::Tensor float_unary(const char* op_name, const Op& op, const at::Tensor& x) {
  TORCH_CHECK_TYPE(x.scalar_type() == at::kFloat, "hardact::", op_name, ": float32 only");
  TORCH_CHECK_VALUE(op.is_valid(), "hardact::", op_name, ": invalid parameters");
  at::Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  check_contiguous_pair(op_name, x, out);
  const c10::cuda::CUDAGuard guard(x.device());
  launch_unary(op_name, op, x, out);
  return out;
}

/// clamp(x * scale, min_val, max_val) + offset as one fused chain.
at::Tensor scale_clamp_offset(const at::Tensor& x, double scale, double min_val, double max_val, double offset) {
  return float_unary("_scale_clamp_offset",
                     hardact::chain(hardact::Scale{scale}, hardact::HardTanh{min_val, max_val}, hardact::Offset{offset}),
                     x);
}

/// max(0, min(1, alpha * x + beta)), HardSigmoid::affine.
at::Tensor hardsigmoid_affine(const at::Tensor& x, double alpha, double beta) {
  return float_unary("_hardsigmoid_affine", hardact::HardSigmoid::affine(alpha, beta), x);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(hardact, m) {
  m.def("_activation_to(Tensor x, str op, *, Tensor(a!) out) -> ()");
  m.def("_scale_clamp_offset(Tensor x, float scale, float min_val, float max_val, float offset) -> Tensor");
  m.def("_hardsigmoid_affine(Tensor x, float alpha, float beta) -> Tensor");
}

TORCH_LIBRARY_IMPL(hardact, CUDA, m) {
  m.impl("_activation_to", &activation_to);
  m.impl("_scale_clamp_offset", &scale_clamp_offset);
  m.impl("_hardsigmoid_affine", &hardsigmoid_affine);
}
