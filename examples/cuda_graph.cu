// hardact_cuda_graph: hardact launches captured into a CUDA Graph once and replayed many times.
// hardact calls never synchronise or allocate, so they can be captured like any kernel launch.
// The graph computes out = hardtanh(hardsigmoid(in), 0.25, 0.75), the second call in place; each
// replay reads whatever `in` holds at that moment, so new data is copied in between replays.
// Exit status: 0 passed; 1 a check or a CUDA call failed; 2 no usable GPU, nothing was run.

#include <hardact/hardact.cuh>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

#define EXAMPLE_CHECK_CUDA(call)                                                                   \
  do {                                                                                             \
    const cudaError_t example_status_ = (call);                                                    \
    if (example_status_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "hardact_cuda_graph: %s failed: %s\n", #call,                           \
                   cudaGetErrorString(example_status_));                                           \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

constexpr float kMin = 0.25f, kMax = 0.75f;

// Independent host reference of the captured pipeline.
float reference(float x) {
  const float sigmoid = std::min(std::max(x + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f);
  if (std::isnan(sigmoid)) return sigmoid;
  return sigmoid < kMin ? kMin : (sigmoid > kMax ? kMax : sigmoid);
}

bool same_result(float got, float expected) {
  if (std::isnan(got) || std::isnan(expected)) return std::isnan(got) && std::isnan(expected);
  std::uint32_t got_bits, expected_bits;
  std::memcpy(&got_bits, &got, sizeof got_bits);
  std::memcpy(&expected_bits, &expected, sizeof expected_bits);
  return got_bits == expected_bits;
}

}  // namespace

int main() {
  int device_count = 0;
  if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
    std::fprintf(stderr, "hardact_cuda_graph: no usable CUDA GPU; this example runs on a GPU. Nothing was run.\n");
    return 2;
  }

  const std::size_t n = (1u << 22) + 5;
  const int kReplays = 5;
  float *in = nullptr, *out = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&in, n * sizeof(float)));
  EXAMPLE_CHECK_CUDA(cudaMalloc(&out, n * sizeof(float)));
  cudaStream_t stream;
  EXAMPLE_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // Capture. Nothing runs yet; the launches are recorded with their arguments (pointers, n, bounds).
  // This is the first hardact call in the process, so it also shows that the one-time device
  // property lookup is capture-safe.
  cudaGraph_t graph;
  EXAMPLE_CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const cudaError_t first = hardact::hardsigmoid(in, out, n, stream);
  const cudaError_t second = hardact::hardtanh(out, out, n, kMin, kMax, stream);  // in place
  EXAMPLE_CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  EXAMPLE_CHECK_CUDA(first);
  EXAMPLE_CHECK_CUDA(second);
  cudaGraphExec_t graph_exec;
  EXAMPLE_CHECK_CUDA(cudaGraphInstantiate(&graph_exec, graph, 0));
  std::size_t node_count = 0;
  EXAMPLE_CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &node_count));

  std::vector<float> host_in(n), host_out(n);
  std::mt19937 generator(7);
  std::uniform_real_distribution<float> uniform(-5.0f, 5.0f);
  bool passed = true;
  for (int replay = 0; replay < kReplays; ++replay) {
    for (float& x : host_in) x = uniform(generator);
    host_in[static_cast<std::size_t>(replay)] = NAN;  // NaN must survive both ops
    EXAMPLE_CHECK_CUDA(cudaMemcpyAsync(in, host_in.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
    EXAMPLE_CHECK_CUDA(cudaGraphLaunch(graph_exec, stream));
    EXAMPLE_CHECK_CUDA(cudaMemcpyAsync(host_out.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
    EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(stream));
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < n; ++i) mismatches += same_result(host_out[i], reference(host_in[i])) ? 0 : 1;
    std::printf("replay %d: %zu elements, %zu mismatches\n", replay, n, mismatches);
    passed &= mismatches == 0;
  }

  EXAMPLE_CHECK_CUDA(cudaGraphExecDestroy(graph_exec));
  EXAMPLE_CHECK_CUDA(cudaGraphDestroy(graph));
  EXAMPLE_CHECK_CUDA(cudaStreamDestroy(stream));
  EXAMPLE_CHECK_CUDA(cudaFree(out));
  EXAMPLE_CHECK_CUDA(cudaFree(in));
  std::printf("hardact_cuda_graph: graph of %zu kernel nodes, %d replays: %s\n", node_count, kReplays,
              passed ? "PASS" : "FAIL");
  return passed ? 0 : 1;
}
