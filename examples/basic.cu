// hardact_basic: the smallest complete program. Allocate, fill, apply HardSigmoid, copy back, check.
// Exit status: 0 passed; 1 a check or a CUDA call failed; 2 no usable GPU, nothing was run.

#include <hardact/hardact.cuh>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

int main() {
  int device_count = 0;
  if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
    std::fprintf(stderr, "hardact_basic: no usable CUDA GPU; this example runs on a GPU. Nothing was run.\n");
    return 2;
  }

  const std::size_t n = 1 << 20;
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = -5.0f + 10.0f * static_cast<float>(i) / static_cast<float>(n - 1);

  float *in = nullptr, *out = nullptr;
  if (cudaMalloc(&in, n * sizeof(float)) != cudaSuccess || cudaMalloc(&out, n * sizeof(float)) != cudaSuccess) {
    std::fprintf(stderr, "hardact_basic: cudaMalloc failed\n");
    return 1;
  }
  cudaMemcpy(in, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);

  // The call: out[i] = hardsigmoid(in[i]), enqueued on the default stream.
  cudaError_t status = hardact::hardsigmoid(in, out, n);
  if (status == cudaSuccess) status = cudaMemcpy(host.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(in);
  cudaFree(out);
  if (status != cudaSuccess) {
    std::fprintf(stderr, "hardact_basic: %s\n", cudaGetErrorString(status));
    return 1;
  }

  // Check against PyTorch's formula, recomputing each input exactly as it was filled.
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float x = -5.0f + 10.0f * static_cast<float>(i) / static_cast<float>(n - 1);
    const float expected = std::min(std::max(x + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f);
    if (host[i] != expected) ++mismatches;
  }
  std::printf("hardact_basic: hardsigmoid on %zu floats, %zu mismatches: %s\n", n, mismatches,
              mismatches == 0 ? "PASS" : "FAIL");
  return mismatches == 0 ? 0 : 1;
}
