// linear_activation: activation(x @ weight.T + bias) for float32 matrices, one cuBLASLt call with its
// bias (and ReLU) epilogue, the products in TF32 or in full float32 as the caller says.
//
// Why not F.linear: PyTorch chooses TF32 for float32 matrix products from one process-wide setting
// (torch.backends.cuda.matmul.allow_tf32, off by default). A squeeze-excitation's 1x1 convolutions,
// which fuse_blocks computes as matrix products on the (N, C) mean, ran under cuDNN's setting
// (torch.backends.cudnn.allow_tf32, on by default). Following cuDNN's setting per call keeps the
// precision the convolutions had, at the cost of one kernel per product where the convolutions
// took two or three (TUNING.md#package-fused-ops).

#include "ops/linear_activation.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cublasLt.h>

#include <cstdint>

namespace hardact_torch {
namespace {

void check_cublas(cublasStatus_t status, const char* what) {
  TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "hardact linear_activation: ", what, " failed: ",
              cublasLtGetStatusString(status));
}

/// Owns one cuBLASLt descriptor; destroyed on every exit.
template <class Handle, cublasStatus_t (*Destroy)(Handle)>
class LtDescriptor {
 public:
  LtDescriptor() = default;
  LtDescriptor(const LtDescriptor&) = delete;
  LtDescriptor& operator=(const LtDescriptor&) = delete;
  ~LtDescriptor() {
    if (handle_ != nullptr) Destroy(handle_);
  }
  Handle* out() { return &handle_; }
  Handle get() const { return handle_; }

 private:
  Handle handle_ = nullptr;
};

using MatmulDesc = LtDescriptor<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using Layout = LtDescriptor<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using Preference = LtDescriptor<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

/// The largest power of two up to 256 that divides the address: what the algorithm may assume.
std::uint32_t alignment_of(const void* pointer) {
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  std::uint32_t alignment = 256;
  while (alignment > 4 && address % alignment != 0) alignment /= 2;
  return alignment;
}

/// The same result through ATen, whose float32 products follow PyTorch's own TF32 setting: for
/// shapes cuBLASLt has no algorithm for.
at::Tensor aten_linear_activation(const at::Tensor& x, const at::Tensor& weight,
                                  const c10::optional<at::Tensor>& bias, bool relu) {
  at::Tensor out = at::linear(x, weight, bias);
  return relu ? at::relu_(out) : out;
}

}  // namespace

at::Tensor linear_activation(const at::Tensor& x, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                             bool relu, bool tf32) {
  TORCH_CHECK_VALUE(x.is_cuda() && x.dim() == 2 && weight.dim() == 2 && weight.size(1) == x.size(1) &&
                        weight.device() == x.device(),
                    "hardact linear_activation: expected CUDA x of shape (N, K) and weight (M, K) on its device");
  TORCH_CHECK_TYPE(x.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat,
                   "hardact linear_activation: float32 only");
  if (bias.has_value()) {
    TORCH_CHECK_VALUE(bias->dim() == 1 && bias->size(0) == weight.size(0) && bias->device() == x.device() &&
                          bias->scalar_type() == at::kFloat,
                      "hardact linear_activation: expected a float32 bias of shape (M,) on x's device");
  }
  const c10::cuda::CUDAGuard guard(x.device());
  const at::Tensor a = weight.contiguous();  // (M, K) row-major: K x M column-major, transposed
  const at::Tensor b = x.contiguous();       // (N, K) row-major: K x N column-major
  const std::int64_t m = weight.size(0), n = x.size(0), k = x.size(1);
  if (n == 0 || m == 0 || k == 0) return aten_linear_activation(x, weight, bias, relu);
  at::Tensor out = at::empty({n, m}, x.options());  // (N, M) row-major: M x N column-major
  at::Tensor bias_values;
  if (bias.has_value()) bias_values = bias->contiguous();

  MatmulDesc desc;
  check_cublas(cublasLtMatmulDescCreate(desc.out(), tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                        CUDA_R_32F),
               "cublasLtMatmulDescCreate");
  const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
  check_cublas(cublasLtMatmulDescSetAttribute(desc.get(), CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose)),
               "setting TRANSA");
  check_cublas(cublasLtMatmulDescSetAttribute(desc.get(), CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof(keep)),
               "setting TRANSB");
  cublasLtEpilogue_t epilogue = relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT;
  if (bias.has_value()) {
    epilogue = relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    const void* bias_pointer = bias_values.const_data_ptr();
    check_cublas(cublasLtMatmulDescSetAttribute(desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_pointer,
                                                sizeof(bias_pointer)),
                 "setting the bias");
  }
  check_cublas(cublasLtMatmulDescSetAttribute(desc.get(), CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)),
               "setting the epilogue");

  Layout a_layout, b_layout, d_layout;
  check_cublas(cublasLtMatrixLayoutCreate(a_layout.out(), CUDA_R_32F, k, m, k), "the weight's layout");
  check_cublas(cublasLtMatrixLayoutCreate(b_layout.out(), CUDA_R_32F, k, n, k), "x's layout");
  check_cublas(cublasLtMatrixLayoutCreate(d_layout.out(), CUDA_R_32F, m, n, m), "the output's layout");

  const std::size_t workspace_bytes = at::cuda::getCUDABlasLtWorkspaceSize();
  void* const workspace = at::cuda::getCUDABlasLtWorkspace();
  Preference preference;
  check_cublas(cublasLtMatmulPreferenceCreate(preference.out()), "cublasLtMatmulPreferenceCreate");
  check_cublas(cublasLtMatmulPreferenceSetAttribute(preference.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace_bytes, sizeof(workspace_bytes)),
               "setting the workspace");
  const std::uint32_t alignments[] = {alignment_of(a.const_data_ptr()), alignment_of(b.const_data_ptr()),
                                      alignment_of(out.const_data_ptr())};
  const cublasLtMatmulPreferenceAttributes_t alignment_attributes[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) {
    const std::uint32_t alignment = alignments[i < 3 ? i : 2];
    check_cublas(cublasLtMatmulPreferenceSetAttribute(preference.get(), alignment_attributes[i], &alignment,
                                                      sizeof(alignment)),
                 "setting an alignment");
  }

  const cublasLtHandle_t handle = at::cuda::getCurrentCUDABlasLtHandle();
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t searched =
      cublasLtMatmulAlgoGetHeuristic(handle, desc.get(), a_layout.get(), b_layout.get(), d_layout.get(),
                                     d_layout.get(), preference.get(), 1, &heuristic, &found);
  if (searched != CUBLAS_STATUS_SUCCESS || found == 0) return aten_linear_activation(x, weight, bias, relu);

  const float one = 1.0f, zero = 0.0f;
  check_cublas(cublasLtMatmul(handle, desc.get(), &one, a.const_data_ptr(), a_layout.get(), b.const_data_ptr(),
                              b_layout.get(), &zero, out.data_ptr(), d_layout.get(), out.data_ptr(), d_layout.get(),
                              &heuristic.algo, workspace, workspace_bytes, at::cuda::getCurrentCUDAStream()),
               "cublasLtMatmul");
  return out;
}

}  // namespace hardact_torch
