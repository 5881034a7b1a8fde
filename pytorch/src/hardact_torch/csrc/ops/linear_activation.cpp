// linear_activation: activation(x @ weight.T + bias) for float32, float16 and bfloat16 matrices, one
// cuBLASLt call with its bias (and ReLU) epilogue; float32 products in TF32 or in full float32 as the
// caller says, 16-bit ones accumulated in float32.
//
// Why not F.linear: PyTorch chooses TF32 for float32 matrix products from one process-wide setting
// (torch.backends.cuda.matmul.allow_tf32, off by default). A squeeze-excitation's 1x1 convolutions,
// which fuse_blocks computes as matrix products on the (N, C) mean, ran under cuDNN's setting
// (torch.backends.cudnn.allow_tf32, on by default). Following cuDNN's setting per call keeps the
// precision the convolutions had, at the cost of one kernel per product where the convolutions
// took two or three (TUNING.md#package-fused-ops). The 16-bit forms are the rewrite's 1x1
// convolutions as matrix products (pointwise_convolution.cpp), called per layer of an eager forward.
//
// The descriptors and the algorithm cuBLASLt's heuristic chose are kept per calling thread for each
// shape, setting and alignment (a plan): a network calls the same few shapes over and over, and the
// heuristic and six descriptors were host time on every call of an eager forward. A thread keeps at
// most max_plans_per_thread of them: a server fed ever new batch sizes would otherwise grow the map
// without end; past the bound the thread's plans are dropped and made again as shapes come back.

#include "ops/linear_activation.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>

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

/// What a plan depends on: the device, the shape, the epilogue, the precision, the alignments the
/// algorithm may assume and the workspace it may use.
struct PlanKey {
  int device;
  cudaDataType_t type;
  std::int64_t m, n, k;
  bool bias, relu, tf32;
  std::uint32_t alignment_a, alignment_b, alignment_d;
  std::size_t workspace_bytes;

  bool operator==(const PlanKey& o) const {
    return device == o.device && type == o.type && m == o.m && n == o.n && k == o.k && bias == o.bias &&
           relu == o.relu && tf32 == o.tf32 && alignment_a == o.alignment_a && alignment_b == o.alignment_b &&
           alignment_d == o.alignment_d && workspace_bytes == o.workspace_bytes;
  }
};

struct PlanKeyHash {
  std::size_t operator()(const PlanKey& key) const {
    std::size_t h = std::hash<std::int64_t>{}(key.m);
    const auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    mix(std::hash<std::int64_t>{}(key.n));
    mix(std::hash<std::int64_t>{}(key.k));
    mix(static_cast<std::size_t>(key.type) << 40 | static_cast<std::size_t>(key.device) << 8 |
        (key.bias ? 4u : 0u) | (key.relu ? 2u : 0u) | (key.tf32 ? 1u : 0u));
    mix(static_cast<std::size_t>(key.alignment_a) << 32 | static_cast<std::size_t>(key.alignment_b) << 16 |
        key.alignment_d);
    mix(key.workspace_bytes);
    return h;
  }
};

/// The descriptors of one product and the algorithm the heuristic chose for them (none: ATen's).
struct Plan {
  MatmulDesc desc;
  Layout a_layout, b_layout, d_layout;
  cublasLtMatmulAlgo_t algo{};
  bool found = false;
};

// A network's 1x1 convolutions are a plan per shape and batch size (fbnetv3_b has 57 such layers):
// room for a server's few batch sizes of a few networks.
constexpr std::size_t max_plans_per_thread = 2048;

/// Points the plan's bias epilogue at this call's bias (the plan outlives the tensor it was made with).
void set_bias(const Plan& plan, const void* bias_pointer) {
  check_cublas(cublasLtMatmulDescSetAttribute(plan.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_pointer,
                                              sizeof(bias_pointer)),
               "setting the bias");
}

/// The plan for `key`, made on first use: descriptors, epilogue (its bias pointer set to this call's,
/// for the heuristic to see), layouts, and the heuristic's first algorithm.
std::unique_ptr<Plan> make_plan(const PlanKey& key, const void* bias_pointer, cublasLtHandle_t handle) {
  auto plan = std::make_unique<Plan>();
  check_cublas(cublasLtMatmulDescCreate(plan->desc.out(), key.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                        CUDA_R_32F),
               "cublasLtMatmulDescCreate");
  const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
  check_cublas(
      cublasLtMatmulDescSetAttribute(plan->desc.get(), CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose)),
      "setting TRANSA");
  check_cublas(cublasLtMatmulDescSetAttribute(plan->desc.get(), CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof(keep)),
               "setting TRANSB");
  cublasLtEpilogue_t epilogue = key.relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT;
  if (key.bias) {
    epilogue = key.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    set_bias(*plan, bias_pointer);
  }
  check_cublas(
      cublasLtMatmulDescSetAttribute(plan->desc.get(), CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)),
      "setting the epilogue");
  check_cublas(cublasLtMatrixLayoutCreate(plan->a_layout.out(), key.type, key.k, key.m, key.k), "the weight's layout");
  check_cublas(cublasLtMatrixLayoutCreate(plan->b_layout.out(), key.type, key.k, key.n, key.k), "x's layout");
  check_cublas(cublasLtMatrixLayoutCreate(plan->d_layout.out(), key.type, key.m, key.n, key.m), "the output's layout");

  Preference preference;
  check_cublas(cublasLtMatmulPreferenceCreate(preference.out()), "cublasLtMatmulPreferenceCreate");
  check_cublas(cublasLtMatmulPreferenceSetAttribute(preference.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &key.workspace_bytes, sizeof(key.workspace_bytes)),
               "setting the workspace");
  const std::uint32_t alignments[] = {key.alignment_a, key.alignment_b, key.alignment_d, key.alignment_d};
  const cublasLtMatmulPreferenceAttributes_t alignment_attributes[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) {
    check_cublas(cublasLtMatmulPreferenceSetAttribute(preference.get(), alignment_attributes[i], &alignments[i],
                                                      sizeof(alignments[i])),
                 "setting an alignment");
  }
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t searched = cublasLtMatmulAlgoGetHeuristic(
      handle, plan->desc.get(), plan->a_layout.get(), plan->b_layout.get(), plan->d_layout.get(),
      plan->d_layout.get(), preference.get(), 1, &heuristic, &found);
  plan->found = searched == CUBLAS_STATUS_SUCCESS && found > 0;
  if (plan->found) plan->algo = heuristic.algo;
  return plan;
}

/// The same result through ATen, whose float32 products follow PyTorch's own TF32 setting: for
/// shapes cuBLASLt has no algorithm for.
at::Tensor aten_linear_activation(const at::Tensor& x, const at::Tensor& weight,
                                  const c10::optional<at::Tensor>& bias, bool relu) {
  at::Tensor out = at::linear(x, weight, bias);
  return relu ? at::relu_(out) : out;
}

}  // namespace

bool product_into(const void* x, const void* weight, const void* bias, void* out, std::int64_t n, std::int64_t m,
                  std::int64_t k, at::ScalarType dtype, c10::DeviceIndex device, bool relu, bool tf32) {
  const std::size_t workspace_bytes = at::cuda::getCUDABlasLtWorkspaceSize();
  void* const workspace = at::cuda::getCUDABlasLtWorkspace();
  const cublasLtHandle_t handle = at::cuda::getCurrentCUDABlasLtHandle();
  const cudaDataType_t type = dtype == at::kFloat ? CUDA_R_32F : dtype == at::kHalf ? CUDA_R_16F : CUDA_R_16BF;
  const PlanKey key{static_cast<int>(device), type, m, n, k, bias != nullptr, relu, tf32 && dtype == at::kFloat,
                    alignment_of(weight), alignment_of(x), alignment_of(out), workspace_bytes};
  // Per thread: a plan's bias pointer is set on its descriptor by each call.
  thread_local std::unordered_map<PlanKey, std::unique_ptr<Plan>, PlanKeyHash> plans;
  auto entry = plans.find(key);
  if (entry == plans.end()) {
    if (plans.size() >= max_plans_per_thread) plans.clear();
    entry = plans.emplace(key, make_plan(key, bias, handle)).first;
  } else if (key.bias && entry->second->found) {
    set_bias(*entry->second, bias);
  }
  const Plan& plan = *entry->second;
  if (!plan.found) return false;

  const float one = 1.0f, zero = 0.0f;
  check_cublas(cublasLtMatmul(handle, plan.desc.get(), &one, weight, plan.a_layout.get(), x, plan.b_layout.get(),
                              &zero, out, plan.d_layout.get(), out, plan.d_layout.get(), &plan.algo, workspace,
                              workspace_bytes, at::cuda::getCurrentCUDAStream()),
               "cublasLtMatmul");
  return true;
}

at::Tensor linear_activation(const at::Tensor& x, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                             bool relu, bool tf32) {
  TORCH_CHECK_VALUE(x.is_cuda() && x.dim() == 2 && weight.dim() == 2 && weight.size(1) == x.size(1) &&
                        weight.device() == x.device(),
                    "hardact linear_activation: expected CUDA x of shape (N, K) and weight (M, K) on its device");
  const at::ScalarType dtype = x.scalar_type();
  TORCH_CHECK_TYPE((dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16) &&
                       weight.scalar_type() == dtype,
                   "hardact linear_activation: expected float32, float16 or bfloat16 x and weight of one dtype");
  if (bias.has_value()) {
    TORCH_CHECK_VALUE(bias->dim() == 1 && bias->size(0) == weight.size(0) && bias->device() == x.device() &&
                          bias->scalar_type() == dtype,
                      "hardact linear_activation: expected a bias of shape (M,) on x's device, of x's dtype");
  }
  const c10::cuda::CUDAGuard guard(x.device());
  const at::Tensor a = weight.contiguous();  // (M, K) row-major: K x M column-major, transposed
  const at::Tensor b = x.contiguous();       // (N, K) row-major: K x N column-major
  const std::int64_t m = weight.size(0), n = x.size(0), k = x.size(1);
  if (n == 0 || m == 0 || k == 0) return aten_linear_activation(x, weight, bias, relu);
  at::Tensor out = at::empty({n, m}, x.options());  // (N, M) row-major: M x N column-major
  at::Tensor bias_values;
  if (bias.has_value()) bias_values = bias->contiguous();
  const void* const bias_pointer = bias.has_value() ? bias_values.const_data_ptr() : nullptr;
  if (!product_into(b.const_data_ptr(), a.const_data_ptr(), bias_pointer, out.data_ptr(), n, m, k, dtype,
                    x.get_device(), relu, tf32)) {
    return aten_linear_activation(x, weight, bias, relu);
  }
  return out;
}

}  // namespace hardact_torch
