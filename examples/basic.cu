// hardact_basic: the smallest complete program, and the README's usage example (the region between
// the readme-example markers is the README's code, line for line: scripts/check-readme-snippets).
// Allocate, fill, apply HardSigmoid and a fused bias + HardSwish, copy back, check both.
// Exit status: 0 passed; 1 a check or a CUDA call failed; 2 no usable GPU, nothing was run.

// [readme-example]
#include <hardact/hardact.cuh>

// x, y, z: device arrays of n floats (any alignment); bias: `columns` floats; any stream.
cudaError_t activate(const float* x, float* y, float* z, const float* bias, std::size_t n,
                     std::size_t columns, cudaStream_t stream) {
  cudaError_t status = hardact::hardsigmoid(x, y, n, stream);  // y = F.hardsigmoid(x), bit for bit
  if (status != cudaSuccess) return status;  // refused: nothing launched, nothing written
  // z = F.hardswish(x + bias) over a row-major [n / columns, columns] array, in one pass:
  return hardact::transform(hardact::bias_activation(hardact::HardSwish{}), x,
                            hardact::per_channel(bias, columns), z, n, stream);
}
// [readme-example]

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace {

float input(std::size_t i, std::size_t n) {
  return -5.0f + 10.0f * static_cast<float>(i) / static_cast<float>(n - 1);
}

float bias_value(std::size_t c) { return 0.25f * static_cast<float>(c % 8) - 1.0f; }

// PyTorch's formulas (computed in float): hardsigmoid(v) = min(max(v + 3, 0), 6) * (1/6),
// hardswish(v) = (v * min(max(v + 3, 0), 6)) * (1/6).
float hardsigmoid_reference(float v) { return std::min(std::max(v + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f); }
float hardswish_reference(float v) { return (v * std::min(std::max(v + 3.0f, 0.0f), 6.0f)) * (1.0f / 6.0f); }

}  // namespace

int main() {
  int device_count = 0;
  if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
    std::fprintf(stderr, "hardact_basic: no usable CUDA GPU; this example runs on a GPU. Nothing was run.\n");
    return 2;
  }

  const std::size_t n = 1 << 20, columns = 1000;  // 1048.576 rows: the last row is partial
  std::vector<float> host_x(n), host_bias(columns), host_y(n), host_z(n);
  for (std::size_t i = 0; i < n; ++i) host_x[i] = input(i, n);
  for (std::size_t c = 0; c < columns; ++c) host_bias[c] = bias_value(c);

  float *x = nullptr, *y = nullptr, *z = nullptr, *bias = nullptr;
  cudaError_t status = cudaMalloc(&x, n * sizeof(float));
  if (status == cudaSuccess) status = cudaMalloc(&y, n * sizeof(float));
  if (status == cudaSuccess) status = cudaMalloc(&z, n * sizeof(float));
  if (status == cudaSuccess) status = cudaMalloc(&bias, columns * sizeof(float));
  if (status == cudaSuccess) status = cudaMemcpy(x, host_x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  if (status == cudaSuccess)
    status = cudaMemcpy(bias, host_bias.data(), columns * sizeof(float), cudaMemcpyHostToDevice);

  // The README's calls, on the default stream.
  if (status == cudaSuccess) status = activate(x, y, z, bias, n, columns, nullptr);
  if (status == cudaSuccess) status = cudaMemcpy(host_y.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost);
  if (status == cudaSuccess) status = cudaMemcpy(host_z.data(), z, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(x);
  cudaFree(y);
  cudaFree(z);
  cudaFree(bias);
  if (status != cudaSuccess) {
    std::fprintf(stderr, "hardact_basic: %s\n", cudaGetErrorString(status));
    return 1;
  }

  // Check against PyTorch's formulas, recomputing each input exactly as it was filled.
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float v = input(i, n);
    if (host_y[i] != hardsigmoid_reference(v)) ++mismatches;
    if (host_z[i] != hardswish_reference(v + bias_value(i % columns))) ++mismatches;
  }
  std::printf("hardact_basic: hardsigmoid and bias + hardswish on %zu floats, %zu mismatches: %s\n", n,
              mismatches, mismatches == 0 ? "PASS" : "FAIL");
  return mismatches == 0 ? 0 : 1;
}
