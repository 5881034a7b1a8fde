// What the hand-built probes of bench/tune share: a checked CUDA call that exits on failure, one
// call timed with CUDA events on the legacy stream, and a quantile of the reps (nearest rank).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define CHECK(x)                                                            \
  do {                                                                      \
    const cudaError_t e_ = (x);                                             \
    if (e_ != cudaSuccess) {                                                \
      std::printf("error %s at line %d\n", cudaGetErrorName(e_), __LINE__); \
      std::exit(1);                                                         \
    }                                                                       \
  } while (0)

namespace probe {

/// Milliseconds from an event before f's work to one after it.
inline float time_ms(const std::function<cudaError_t()>& f) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  CHECK(cudaEventRecord(a));
  CHECK(f());
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return ms;
}

inline float quantile(std::vector<float> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

}  // namespace probe
