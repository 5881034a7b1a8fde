// Helpers shared by the binding's translation units: dtype dispatch to hardact's element types,
// error checks, and the dense-layout test that lets a flat hardact launch cover a strided tensor.
#pragma once

#include <hardact/hardact.cuh>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include <cmath>
#include <cstddef>
#include <string>

namespace hardact_torch {

template <class T>
struct Tag {
  using type = T;
};

/// Calls f(Tag<T>{}) with the CUDA element type hardact takes for a float32/float64/float16/bfloat16
/// tensor. at::Half and at::BFloat16 have the layout of __half and __nv_bfloat16 (one 16-bit word).
template <class F>
cudaError_t with_element_type(const char* op_name, at::ScalarType type, F&& f) {
  switch (type) {
    case at::kFloat:
      return f(Tag<float>{});
    case at::kDouble:
      return f(Tag<double>{});
    case at::kHalf:
      return f(Tag<__half>{});
    case at::kBFloat16:
      return f(Tag<__nv_bfloat16>{});
    default:
      TORCH_CHECK_TYPE(false, "hardact::", op_name, ": unsupported dtype ", type,
                       "; expected float32, float64, float16 or bfloat16");
  }
  return cudaErrorInvalidValue;  // not reached: TORCH_CHECK_TYPE throws
}

/// A tensor's data as T (the element type the launch was instantiated for).
template <class T>
const T* data_of(const at::Tensor& t) {
  return static_cast<const T*>(t.const_data_ptr());
}
template <class T>
T* mutable_data_of(const at::Tensor& t) {
  return static_cast<T*>(t.mutable_data_ptr());
}

inline void check_launch(const char* op_name, cudaError_t status) {
  TORCH_CHECK(status == cudaSuccess, "hardact::", op_name, " failed: ", cudaGetErrorName(status), ": ",
              cudaGetErrorString(status));
}

/// "(16, 8)". Error messages never stream integers (shapes, device indexes) through an ostream
/// in this extension: doing so crashed inside the extension's copy of the ostream number
/// formatting on the GPU machine (PyTorch 2.11, g++ 13; seen 2026-11-22), while strings work.
inline std::string shape_string(at::IntArrayRef sizes) {
  std::string text = "(";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(sizes[i]);
  }
  return text + ")";
}

inline void check_same(const char* op_name, const at::Tensor& reference, const at::Tensor& other, const char* other_name) {
  TORCH_CHECK_VALUE(other.device() == reference.device(), "hardact::", op_name, ": ", other_name, " is on ",
                    other.device().str(), ", x on ", reference.device().str());
  TORCH_CHECK_TYPE(other.scalar_type() == reference.scalar_type(), "hardact::", op_name, ": ", other_name,
                   " has dtype ", other.scalar_type(), ", x has ", reference.scalar_type());
  TORCH_CHECK_VALUE(other.sizes() == reference.sizes(), "hardact::", op_name, ": ", other_name, " has shape ",
                    shape_string(other.sizes()), ", x has ", shape_string(reference.sizes()));
}

inline void check_bounds(const char* op_name, double min_val, double max_val) {
  TORCH_CHECK_VALUE(!std::isnan(min_val) && !std::isnan(max_val), "hardact::", op_name,
                    ": min_val and max_val must not be NaN");
  // PyTorch's wording for F.hardtanh.
  TORCH_CHECK_VALUE(min_val <= max_val, "hardact::", op_name, ": min_val cannot be greater than max_val");
}

/// True when `a` is non-overlapping and dense with exactly `b`'s sizes and strides, so element k of
/// a's memory span and element k of b's are the same logical element. Strides are never negative
/// in PyTorch, so the span starts at data_ptr().
inline bool shares_dense_layout(const at::Tensor& a, const at::Tensor& b) {
  return a.is_non_overlapping_and_dense() && b.is_non_overlapping_and_dense() && a.sizes() == b.sizes() &&
         a.strides() == b.strides();
}

/// `t` itself when it shares `layout`'s dense layout, else a copy of it in that layout.
inline at::Tensor in_layout_of(const at::Tensor& t, const at::Tensor& layout) {
  if (shares_dense_layout(t, layout)) return t;
  return at::empty_like(layout).copy_(t);
}

/// out = op(in) over the memory spans of two tensors of one dtype and one dense layout, on the
/// current stream of their device. out may be in (in place).
template <class Op>
void launch_unary(const char* op_name, const Op& op, const at::Tensor& in, const at::Tensor& out) {
  const std::size_t n = static_cast<std::size_t>(in.numel());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(in.device().index());
  check_launch(op_name, with_element_type(op_name, in.scalar_type(), [&](auto tag) {
                 using T = typename decltype(tag)::type;
                 return hardact::transform(op, data_of<T>(in), mutable_data_of<T>(out), n, stream);
               }));
}

/// out = op(grad, x), as launch_unary with two inputs.
template <class Op>
void launch_binary(const char* op_name, const Op& op, const at::Tensor& grad, const at::Tensor& x,
                   const at::Tensor& out) {
  const std::size_t n = static_cast<std::size_t>(x.numel());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(x.device().index());
  check_launch(op_name, with_element_type(op_name, x.scalar_type(), [&](auto tag) {
                 using T = typename decltype(tag)::type;
                 return hardact::transform(op, data_of<T>(grad), data_of<T>(x), mutable_data_of<T>(out), n, stream);
               }));
}

}  // namespace hardact_torch
