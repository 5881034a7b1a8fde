// Launch behaviour on the device: a call captured in a CUDA Graph and replayed, stream ordering
// on user streams, and one in-place array of more than 2^31 floats (64-bit n).
//
// The graph test comes first, so that in a plain run the launcher's first call in this process
// (which fills the device-properties cache) happens inside the capture.
#include "support/bits.hpp"
#include "support/compare.hpp"
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/reference.hpp"
#include "support/transform_check.hpp"

#include <hardact/hardact.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

namespace {

using namespace hardact_test;

/// Downloads `out` and checks it against reference(inputs) bit for bit, guards included.
template <class T, class Reference>
::testing::AssertionResult output_matches(GuardedBuffer<T>& out, const std::vector<T>& inputs,
                                          const Reference& reference, NanBits nan) {
  std::vector<T> outputs;
  const cudaError_t status = out.download(outputs);
  if (status != cudaSuccess) return ::testing::AssertionFailure() << "download: " << cudaGetErrorName(status);
  ::testing::AssertionResult result = outputs_match_reference(inputs, outputs, reference, nan);
  if (!result) return result;
  if (!out.guards_intact()) return ::testing::AssertionFailure() << "guard band overwritten";
  return ::testing::AssertionSuccess();
}

// Two calls (float HardSigmoid at odd offsets, half ReLU6 in place) captured on a non-default
// stream: the capture must record kernels without running them, and the instantiated graph
// must compute correct results on data uploaded after capture, twice.
TEST(DeviceGraph, CapturedCallsReplayOnFreshData) {
  HARDACT_REQUIRE_DEVICE();
  const std::size_t n = 100003;
  Stream stream;
  HARDACT_ASSERT_CUDA(stream.status());
  GuardedBuffer<float> float_in(n, 1), float_out(n, 3);
  GuardedBuffer<__half> half_data(n, 5);
  HARDACT_ASSERT_CUDA(float_in.status());
  HARDACT_ASSERT_CUDA(float_out.status());
  HARDACT_ASSERT_CUDA(half_data.status());

  HARDACT_ASSERT_CUDA(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeGlobal));
  const cudaError_t sigmoid_status =
      hardact::hardsigmoid(static_cast<const float*>(float_in.data()), float_out.data(), n, stream.get());
  const cudaError_t relu6_status = hardact::transform(hardact::HardTanh{0.0, 6.0}, static_cast<const __half*>(half_data.data()),
                                                      half_data.data(), n, stream.get());
  cudaGraph_t graph = nullptr;
  const cudaError_t end_status = cudaStreamEndCapture(stream.get(), &graph);  // always end the capture
  std::unique_ptr<CUgraph_st, decltype(&cudaGraphDestroy)> graph_owner(graph, &cudaGraphDestroy);
  ASSERT_EQ(sigmoid_status, cudaSuccess) << cudaGetErrorName(sigmoid_status);
  ASSERT_EQ(relu6_status, cudaSuccess) << cudaGetErrorName(relu6_status);
  ASSERT_EQ(end_status, cudaSuccess) << cudaGetErrorName(end_status);

  std::size_t num_nodes = 0;
  HARDACT_ASSERT_CUDA(cudaGraphGetNodes(graph, nullptr, &num_nodes));
  EXPECT_GE(num_nodes, 2u) << "each captured call must have recorded its work";
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(all_poisoned(float_out)) << "capture must not run the kernel";

  cudaGraphExec_t exec = nullptr;
  HARDACT_ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  std::unique_ptr<CUgraphExec_st, decltype(&cudaGraphExecDestroy)> exec_owner(exec, &cudaGraphExecDestroy);

  for (int replay = 0; replay < 2; ++replay) {
    const std::vector<float> float_inputs = device_inputs<float>(n, 8100 + replay);
    const std::vector<__half> half_inputs = device_inputs<__half>(n, 8200 + replay);
    HARDACT_ASSERT_CUDA(float_in.upload(float_inputs));
    HARDACT_ASSERT_CUDA(float_out.poison_payload());
    HARDACT_ASSERT_CUDA(half_data.upload(half_inputs));
    // cudaMemset runs on the legacy stream, which a non-blocking stream does not wait for.
    HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
    HARDACT_ASSERT_CUDA(cudaGraphLaunch(exec, stream.get()));
    HARDACT_ASSERT_CUDA(cudaStreamSynchronize(stream.get()));
    EXPECT_TRUE(output_matches(float_out, float_inputs, reference::HardSigmoid{}, NanBits::Any)) << "replay " << replay;
    EXPECT_TRUE(output_matches(half_data, half_inputs, reference::HardTanh{0.0, 6.0}, NanBits::Exact))
        << "replay " << replay;
  }
}

/// Every block waits about `spin_cycles` clock cycles, then copies src to dst: work that is
/// still running when the next operation on the stream is enqueued.
__global__ void copy_after_delay(const float* src, float* dst, std::size_t n, long long spin_cycles) {
  if (threadIdx.x == 0) {
    const long long start = clock64();
    while (clock64() - start < spin_cycles) {
    }
  }
  __syncthreads();
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    dst[i] = src[i];
  }
}

// The input only exists once a slow kernel on the user stream has written it; a launch that
// ignored the stream (or ran on the legacy default stream, which a non-blocking stream does not
// wait for) would read the poison instead. The result is copied back on the same stream.
TEST(DeviceStream, CallIsOrderedOnAUserStream) {
  HARDACT_REQUIRE_DEVICE();
  const std::size_t n = 1 << 22;
  Stream stream;
  HARDACT_ASSERT_CUDA(stream.status());
  GuardedBuffer<float> staged(n), in(n), out(n);
  HARDACT_ASSERT_CUDA(staged.status());
  HARDACT_ASSERT_CUDA(in.status());
  HARDACT_ASSERT_CUDA(out.status());
  const std::vector<float> inputs = device_inputs<float>(n, 8300);
  HARDACT_ASSERT_CUDA(staged.upload(inputs));

  float* host_result = nullptr;
  HARDACT_ASSERT_CUDA(cudaMallocHost(&host_result, n * sizeof(float)));
  std::unique_ptr<float, decltype(&cudaFreeHost)> host_owner(host_result, &cudaFreeHost);

  copy_after_delay<<<132, 256, 0, stream.get()>>>(staged.data(), in.data(), n, 20 * 1000 * 1000);
  HARDACT_ASSERT_CUDA(cudaGetLastError());
  ASSERT_EQ(hardact::hardsigmoid(static_cast<const float*>(in.data()), out.data(), n, stream.get()), cudaSuccess);
  HARDACT_ASSERT_CUDA(cudaMemcpyAsync(host_result, out.data(), n * sizeof(float), cudaMemcpyDeviceToHost, stream.get()));
  HARDACT_ASSERT_CUDA(cudaStreamSynchronize(stream.get()));

  const std::vector<float> outputs(host_result, host_result + n);
  EXPECT_TRUE(outputs_match_reference(inputs, outputs, reference::HardSigmoid{}, NanBits::Any));
  EXPECT_TRUE(out.guards_intact());
}

// The per-thread default stream is a valid stream argument too.
TEST(DeviceStream, PerThreadDefaultStream) {
  HARDACT_REQUIRE_DEVICE();
  const std::size_t n = 30001;
  GuardedBuffer<__nv_bfloat16> in(n, 1), out(n, 1);
  HARDACT_ASSERT_CUDA(in.status());
  HARDACT_ASSERT_CUDA(out.status());
  const std::vector<__nv_bfloat16> inputs = device_inputs<__nv_bfloat16>(n, 8400);
  HARDACT_ASSERT_CUDA(in.upload(inputs));
  ASSERT_EQ(hardact::hardtanh(static_cast<const __nv_bfloat16*>(in.data()), out.data(), n, -0.5, 0.5,
                              cudaStreamPerThread),
            cudaSuccess);
  HARDACT_ASSERT_CUDA(cudaStreamSynchronize(cudaStreamPerThread));
  EXPECT_TRUE(output_matches(out, inputs, reference::HardTanh{-0.5, 0.5}, NanBits::Exact));
}

// ---- More than 2^31 elements, in place. ----

/// SplitMix64: a well-mixed 64-bit hash of the element index.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Input element i: mostly in [-8, 8), one in eight a raw bit pattern (NaN, inf, subnormal...).
float large_input(std::uint64_t i) {
  const std::uint64_t h = mix(i);
  if ((h & 7) == 0) return from_bits<float>(static_cast<std::uint32_t>(h >> 32));
  return static_cast<float>(static_cast<double>(h >> 40) * 0x1p-24 * 16.0 - 8.0);
}

/// Runs body(begin, end) over [0, n) split across the hardware threads.
template <class Body>
void parallel_for(std::size_t n, const Body& body) {
  const std::size_t num_threads = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t per_thread = (n + num_threads - 1) / num_threads;
  std::vector<std::thread> workers;
  for (std::size_t t = 0; t < num_threads; ++t) {
    const std::size_t begin = std::min(n, t * per_thread), end = std::min(n, begin + per_thread);
    workers.emplace_back([&body, begin, end] { body(begin, end); });
  }
  for (std::thread& worker : workers) worker.join();
}

TEST(DeviceLarge, MoreThan2Pow31FloatsInPlace) {
  HARDACT_REQUIRE_DEVICE();
  if (quick_mode()) {
    GTEST_SKIP() << "HARDACT_TEST_QUICK=1: the 2^31-element test moves about 17 GB through the host and is too slow "
                    "under compute-sanitizer; it runs in the normal suite";
  }
  // Starts one element past an aligned address, so the launcher also peels a head.
  const std::size_t n = (std::size_t(1) << 31) + 5;
  const std::size_t offset = 1;
  std::size_t free_bytes = 0, total_bytes = 0;
  HARDACT_ASSERT_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t needed = (n + offset) * sizeof(float) + (std::size_t(256) << 20);  // plus headroom
  if (free_bytes < needed) {
    GTEST_SKIP() << "needs " << (needed >> 20) << " MiB of device memory, " << (free_bytes >> 20) << " MiB free";
  }

  std::unique_ptr<float[]> host(new (std::nothrow) float[n]);
  ASSERT_NE(host, nullptr) << "cannot allocate " << ((n * sizeof(float)) >> 20) << " MiB of host memory";
  parallel_for(n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) host[i] = large_input(i);
  });

  GuardedBuffer<float> data(n, offset);
  HARDACT_ASSERT_CUDA(data.status());
  HARDACT_ASSERT_CUDA(cudaMemcpy(data.data(), host.get(), n * sizeof(float), cudaMemcpyHostToDevice));
  ASSERT_EQ(hardact::hardsigmoid(static_cast<const float*>(data.data()), data.data(), n), cudaSuccess);
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  HARDACT_ASSERT_CUDA(cudaMemcpy(host.get(), data.data(), n * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(data.guards_intact());

  std::atomic<std::size_t> mismatches{0};
  std::atomic<std::size_t> first_mismatch{n};
  parallel_for(n, [&](std::size_t begin, std::size_t end) {
    std::size_t local = 0, first = n;
    for (std::size_t i = begin; i < end; ++i) {
      if (!same_bits_or_both_nan(host[i], reference::hard_sigmoid(large_input(i)))) {
        ++local;
        first = std::min(first, i);
      }
    }
    mismatches += local;
    std::size_t seen = first_mismatch.load();
    while (first < seen && !first_mismatch.compare_exchange_weak(seen, first)) {
    }
  });
  if (mismatches.load() > 0) {
    const std::size_t i = first_mismatch.load();
    ADD_FAILURE() << mismatches.load() << " of " << n << " elements differ; first at index " << i << ": input "
                  << describe(large_input(i)) << ", got " << describe(host[i]) << ", expected "
                  << describe(reference::hard_sigmoid(large_input(i)));
  }
}

}  // namespace
