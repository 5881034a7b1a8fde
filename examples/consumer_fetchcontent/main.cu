// Calls hardact::hardsigmoid from a project that pulled hardact in with FetchContent. Without a GPU
// it reports that it built and exits 0 (the build is what this project checks there).
#include <hardact/hardact.cuh>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

int main() {
  std::printf("hardact_consumer (FetchContent): built against hardact %d.%d.%d\n", HARDACT_VERSION_MAJOR,
              HARDACT_VERSION_MINOR, HARDACT_VERSION_PATCH);
  int device_count = 0;
  if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
    std::printf("no GPU, skipped the run\n");
    return 0;
  }
  std::vector<float> host = {-4.0f, -3.0f, -1.5f, 0.0f, 0.1f, 1.5f, 3.0f, 4.0f};
  const std::size_t n = host.size();
  float* data = nullptr;
  cudaError_t status = cudaMalloc(&data, n * sizeof(float));
  if (status == cudaSuccess) status = cudaMemcpy(data, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  if (status == cudaSuccess) status = hardact::hardsigmoid(data, data, n);  // in place
  std::vector<float> result(n);
  if (status == cudaSuccess) status = cudaMemcpy(result.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(data);
  if (status != cudaSuccess) {
    std::printf("FAIL: %s\n", cudaGetErrorString(status));
    return 1;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const float expected = std::min(std::max(host[i] + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f);
    if (result[i] != expected) {
      std::printf("FAIL: hardsigmoid(%g) = %.9g, expected %.9g\n", host[i], result[i], expected);
      return 1;
    }
  }
  std::printf("PASS: hardsigmoid on the GPU matches the formula\n");
  return 0;
}
