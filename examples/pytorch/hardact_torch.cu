// PyTorch binding for hardact: F.hardsigmoid and F.hardtanh on CUDA tensors, bit for bit.
// Built just in time by hardact_torch.py (torch.utils.cpp_extension.load); the include path
// points at hardact's include/. Python-side checks in hardact_torch.py give the friendly errors;
// the checks here keep the C++ entry points safe on their own.

#include <hardact/hardact.cuh>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/extension.h>

#include <cmath>
#include <cstddef>
#include <string>

namespace {

/// Calls `launch(in, out)` with the tensors' data typed as the CUDA element types hardact takes.
/// at::Half and at::BFloat16 have the layout of __half and __nv_bfloat16 (one 16-bit word).
template <class Launch>
cudaError_t with_element_pointers(const at::Tensor& in, at::Tensor& out, Launch launch) {
  switch (in.scalar_type()) {
    case at::kFloat:
      return launch(in.const_data_ptr<float>(), out.mutable_data_ptr<float>());
    case at::kDouble:
      return launch(in.const_data_ptr<double>(), out.mutable_data_ptr<double>());
    case at::kHalf:
      return launch(reinterpret_cast<const __half*>(in.const_data_ptr<at::Half>()),
                    reinterpret_cast<__half*>(out.mutable_data_ptr<at::Half>()));
    case at::kBFloat16:
      return launch(reinterpret_cast<const __nv_bfloat16*>(in.const_data_ptr<at::BFloat16>()),
                    reinterpret_cast<__nv_bfloat16*>(out.mutable_data_ptr<at::BFloat16>()));
    default:
      TORCH_CHECK_TYPE(false, "hardact: unsupported dtype ", in.scalar_type(),
                       "; expected float32, float64, float16 or bfloat16");
  }
  return cudaErrorInvalidValue;  // not reached: TORCH_CHECK_TYPE throws
}

/// Checks x, allocates the output (or reuses x in place) and runs `launch` on the current stream
/// of x's device, so the call is ordered with the surrounding PyTorch work.
template <class Launch>
at::Tensor run(const char* op_name, const at::Tensor& x, bool inplace, Launch launch) {
  TORCH_CHECK_VALUE(x.is_cuda(), "hardact.", op_name, ": expected a CUDA tensor, got one on ", x.device());
  TORCH_CHECK_VALUE(x.is_contiguous(), "hardact.", op_name,
                    ": expected a contiguous tensor; call .contiguous() first");
  const c10::cuda::CUDAGuard device_guard(x.device());
  at::Tensor out = inplace ? x : at::empty_like(x, at::MemoryFormat::Contiguous);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const std::size_t n = static_cast<std::size_t>(x.numel());
  const cudaError_t status = with_element_pointers(
      x, out, [&](const auto* in_data, auto* out_data) { return launch(in_data, out_data, n, stream); });
  TORCH_CHECK(status == cudaSuccess, "hardact.", op_name, " failed: ", cudaGetErrorName(status), ": ",
              cudaGetErrorString(status));
  return out;
}

}  // namespace

/// F.hardsigmoid(x) (inplace=false) or F.hardsigmoid(x, inplace=True).
at::Tensor hardsigmoid(const at::Tensor& x, bool inplace) {
  return run("hardsigmoid", x, inplace, [](const auto* in, auto* out, std::size_t n, cudaStream_t stream) {
    return hardact::hardsigmoid(in, out, n, stream);
  });
}

/// F.hardtanh(x, min_val, max_val) (inplace=false) or in place.
at::Tensor hardtanh(const at::Tensor& x, double min_val, double max_val, bool inplace) {
  TORCH_CHECK_VALUE(!std::isnan(min_val) && !std::isnan(max_val), "hardact.hardtanh: min_val and max_val must not be NaN");
  TORCH_CHECK_VALUE(min_val <= max_val, "hardact.hardtanh: min_val cannot be greater than max_val");
  return run("hardtanh", x, inplace, [=](const auto* in, auto* out, std::size_t n, cudaStream_t stream) {
    return hardact::hardtanh(in, out, n, min_val, max_val, stream);
  });
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "hardact: HardSigmoid / HardTanh on contiguous CUDA tensors, bit-identical to PyTorch";
  m.def("hardsigmoid", &hardsigmoid, "hardsigmoid(x, inplace=False)", pybind11::arg("x"),
        pybind11::arg("inplace") = false);
  m.def("hardtanh", &hardtanh, "hardtanh(x, min_val=-1.0, max_val=1.0, inplace=False)", pybind11::arg("x"),
        pybind11::arg("min_val") = -1.0, pybind11::arg("max_val") = 1.0, pybind11::arg("inplace") = false);
  m.attr("hardact_version") = std::to_string(HARDACT_VERSION_MAJOR) + "." + std::to_string(HARDACT_VERSION_MINOR) + "." +
                              std::to_string(HARDACT_VERSION_PATCH);
}
