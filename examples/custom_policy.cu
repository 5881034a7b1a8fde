// hardact_custom_policy: writing your own policy, and using hardact's policies in your own kernels
// (docs/writing-a-policy.md walks through this file).
//   1. LeakyClamp, a user-defined policy, through hardact::transform on float.
//   2. The same policy refusing to run with invalid parameters (is_valid()).
//   3. The same policy on a mixed-type call: half in, float out.
//   4. hardact::HardSigmoid inside the user's own __global__ kernel (a hard-gated unit), and the
//      same computation through transform's two-input overload.
// Exit status: 0 passed; 1 a check or a CUDA call failed; 2 no usable GPU, nothing was run.

#include <hardact/hardact.cuh>

#include <cuda/std/cmath>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

// ---- 1. The policy ---------------------------------------------------------------------------
// [leaky-clamp]
/// Clamp to [lo, hi] that lets a small slope through outside the range (a leaky HardTanh).
struct LeakyClamp {
  float lo = -1.0f, hi = 1.0f, slope = 0.01f;

  /// Launchers call this once per launch and refuse to run (cudaErrorInvalidValue) when false.
  __host__ __device__ bool is_valid() const { return lo <= hi && slope > 0.0f; }

  template <class T>
  __host__ __device__ T operator()(T x) const {
    using C = hardact::compute_t<T>;  // float for float, half and bfloat16; double for double
    const C v = hardact::to_compute(x);
    // fma spelled out: nvcc would contract a * b + c into one anyway, a host compiler may not.
    if (v < C(lo)) return hardact::from_compute<T>(cuda::std::fma(C(slope), v - C(lo), C(lo)));
    if (v > C(hi)) return hardact::from_compute<T>(cuda::std::fma(C(slope), v - C(hi), C(hi)));
    return x;  // inside the range, and NaN: unchanged (keeps -0.0 and NaN payloads)
  }
};
// [leaky-clamp]

// ---- 4. A user kernel calling a hardact policy per element -------------------------------------
// [hard-gated-unit]
/// out[i] = value[i] * hardsigmoid(gate[i]): a hard-gated unit fused into one pass.
__global__ void hard_gated_unit(const float* value, const float* gate, float* out, std::size_t n) {
  const hardact::HardSigmoid hard_sigmoid{};
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = value[i] * hard_sigmoid(gate[i]);
  }
}
// [hard-gated-unit]

namespace {

#define EXAMPLE_CHECK_CUDA(call)                                                                            \
  do {                                                                                                      \
    const cudaError_t example_status_ = (call);                                                             \
    if (example_status_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "hardact_custom_policy: %s failed: %s\n", #call, cudaGetErrorString(example_status_)); \
      std::exit(1);                                                                                         \
    }                                                                                                       \
  } while (0)

// Independent host references.
float reference_leaky_clamp(float v, float lo, float hi, float slope) {
  if (v < lo) return std::fma(slope, v - lo, lo);
  if (v > hi) return std::fma(slope, v - hi, hi);
  return v;
}

float reference_hardsigmoid(float x) { return std::min(std::max(x + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f); }

bool same_result(float got, float expected) {
  if (std::isnan(got) || std::isnan(expected)) return std::isnan(got) && std::isnan(expected);
  std::uint32_t got_bits, expected_bits;
  std::memcpy(&got_bits, &got, sizeof got_bits);
  std::memcpy(&expected_bits, &expected, sizeof expected_bits);
  return got_bits == expected_bits;
}

/// Random values in [-4, 4) with NaN, infinities, signed zeros and the range edges mixed in.
std::vector<float> make_inputs(std::size_t n, unsigned seed) {
  const float specials[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, -1.0f, 1.0f, -1.5f, 2.5f, 1e-40f};
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    values[i] = i < sizeof specials / sizeof specials[0] ? specials[i] : uniform(generator);
  }
  return values;
}

template <class T>
T* to_device(const std::vector<T>& host) {
  T* device = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&device, host.size() * sizeof(T)));
  EXAMPLE_CHECK_CUDA(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return device;
}

std::vector<float> to_host(const float* device, std::size_t n) {
  std::vector<float> host(n);
  EXAMPLE_CHECK_CUDA(cudaMemcpy(host.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

/// Prints and returns whether got[i] == reference(i) for every i.
template <class Reference>
bool report(const char* what, const std::vector<float>& got, Reference reference) {
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!same_result(got[i], reference(i)) && ++mismatches <= 3) {
      std::printf("  element %zu: got %.9g, expected %.9g\n", i, got[i], reference(i));
    }
  }
  std::printf("%-60s %s\n", what, mismatches == 0 ? "ok" : "FAILED");
  return mismatches == 0;
}

}  // namespace

int main() {
  int device_count = 0;
  if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
    std::fprintf(stderr, "hardact_custom_policy: no usable CUDA GPU; this example runs on a GPU. Nothing was run.\n");
    return 2;
  }

  const std::size_t n = 1000003;  // odd, so the launcher peels a scalar tail
  const std::vector<float> inputs = make_inputs(n, 1);
  float* d_in = to_device(inputs);
  float* d_out = to_device(std::vector<float>(n, 0.0f));
  bool passed = true;

  // 1. A user policy through hardact::transform: vectorised, any alignment, any n.
  const LeakyClamp leaky{-1.5f, 2.5f, 0.125f};
  EXAMPLE_CHECK_CUDA(hardact::transform(leaky, d_in, d_out, n));
  const std::vector<float> leaky_out = to_host(d_out, n);
  passed &= report("LeakyClamp{-1.5, 2.5, 0.125} on float via hardact::transform", leaky_out,
                   [&](std::size_t i) { return reference_leaky_clamp(inputs[i], -1.5f, 2.5f, 0.125f); });

  // 2. is_valid() false: refused before anything is launched, the output is left alone.
  const cudaError_t refused = hardact::transform(LeakyClamp{1.0f, -1.0f, 0.5f}, d_in, d_out, n);
  const std::vector<float> after_refusal = to_host(d_out, n);
  const bool refused_ok = refused == cudaErrorInvalidValue &&
                          std::memcmp(after_refusal.data(), leaky_out.data(), n * sizeof(float)) == 0;
  std::printf("%-60s %s\n", "LeakyClamp{1, -1, 0.5} refused with cudaErrorInvalidValue", refused_ok ? "ok" : "FAILED");
  passed &= refused_ok;

  // 3. Mixed types: the policy is called with the compute type (float) and rounded once to TOut.
  std::vector<__half> half_inputs(n);
  for (std::size_t i = 0; i < n; ++i) half_inputs[i] = __float2half_rn(inputs[i]);
  __half* d_half_in = to_device(half_inputs);
  EXAMPLE_CHECK_CUDA(hardact::transform(leaky, d_half_in, d_out, n));
  passed &= report("LeakyClamp on half in, float out (policy sees float)", to_host(d_out, n), [&](std::size_t i) {
    return reference_leaky_clamp(__half2float(half_inputs[i]), -1.5f, 2.5f, 0.125f);
  });

  // 4. HardSigmoid inside a user kernel, then the same through the two-input transform.
  const std::vector<float> gates = make_inputs(n, 2);
  float* d_gate = to_device(gates);
  auto gated_reference = [&](std::size_t i) { return inputs[i] * reference_hardsigmoid(gates[i]); };
  hard_gated_unit<<<256, 256>>>(d_in, d_gate, d_out, n);
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  passed &= report("value * HardSigmoid{}(gate) in a user __global__ kernel", to_host(d_out, n), gated_reference);

  EXAMPLE_CHECK_CUDA(hardact::transform(
      [] __device__(float value, float gate) { return value * hardact::HardSigmoid{}(gate); }, d_in, d_gate, d_out, n));
  passed &= report("value * HardSigmoid{}(gate) via the two-input transform", to_host(d_out, n), gated_reference);

  EXAMPLE_CHECK_CUDA(cudaFree(d_gate));
  EXAMPLE_CHECK_CUDA(cudaFree(d_half_in));
  EXAMPLE_CHECK_CUDA(cudaFree(d_out));
  EXAMPLE_CHECK_CUDA(cudaFree(d_in));
  std::printf("hardact_custom_policy: %s\n", passed ? "PASS" : "FAIL");
  return passed ? 0 : 1;
}
