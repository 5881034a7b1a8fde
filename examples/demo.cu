// hardact_demo: HardSigmoid and HardTanh on a float 4096 x 393216 tensor (12.9 GB moved per call),
// checked against an independent host formula on a sample of about a million positions, timed
// with CUDA events next to a device-to-device cudaMemcpy (the practical ceiling).
//
// Usage: hardact_demo [ROWS COLS | N]     (default 4096 393216; one number is a flat N elements)
// Exit status: 0 all checks passed; 1 a check or a CUDA call failed; 2 no usable GPU (or too
// little GPU memory for the requested size), so nothing was run.

#include <hardact/hardact.cuh>

#include <cuda_runtime.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

constexpr int kExitCheckFailed = 1;
constexpr int kExitNoGpu = 2;
constexpr int kWarmups = 3;
constexpr int kTimedRuns = 15;
constexpr std::size_t kRandomSamples = 1u << 20;
constexpr std::size_t kEdgeSamples = 4096;  // first and last elements, where head and tail are peeled

#define DEMO_CHECK_CUDA(call)                                                                          \
  do {                                                                                                 \
    const cudaError_t demo_status_ = (call);                                                           \
    if (demo_status_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "hardact_demo: %s failed at %s:%d: %s (%s)\n", #call, __FILE__, __LINE__,  \
                   cudaGetErrorName(demo_status_), cudaGetErrorString(demo_status_));                  \
      std::exit(kExitCheckFailed);                                                                     \
    }                                                                                                  \
  } while (0)

/// Mixes a 64-bit counter into 64 well-spread bits (the splitmix64 finaliser).
__host__ __device__ std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Mostly uniform values in [-8, 8), so both saturation sides and the linear part are hit, with
/// one element in 64 replaced by a value where hand-written kernels go wrong.
__global__ void fill_test_data(float* data, std::size_t n, std::uint64_t seed) {
  const float specials[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, -3.0f, 3.0f, -1.0f, 1.0f,
                            1e-40f /* subnormal */, -1e-40f, -2.9999998f};
  constexpr unsigned kSpecialCount = sizeof(specials) / sizeof(specials[0]);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::uint64_t bits = mix64(seed ^ mix64(i));
    if ((bits & 63u) == 0) {
      data[i] = specials[(bits >> 8) % kSpecialCount];
    } else {
      data[i] = -8.0f + 16.0f * static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
    }
  }
}

/// Copies in[positions[k]] and out[positions[k]] into compact sample buffers.
__global__ void gather_samples(const float* in, const float* out, const std::size_t* positions, std::size_t count,
                               float* in_samples, float* out_samples) {
  const std::size_t k = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < count) {
    in_samples[k] = in[positions[k]];
    out_samples[k] = out[positions[k]];
  }
}

// Host references, written from PyTorch's definitions (see docs), not from hardact's policies.
float reference_hardsigmoid(float x) {
  // std::max / std::min return their first argument unless the comparison holds: NaN stays NaN.
  return std::min(std::max(x + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f);
}

float reference_hardtanh(float x, float min_val, float max_val) {
  if (std::isnan(x)) return x;
  if (x < min_val) return min_val;
  if (x > max_val) return max_val;
  return x;  // keeps -0.0 and subnormals
}

std::uint32_t bits_of(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

bool same_result(float got, float expected) {
  if (std::isnan(expected) || std::isnan(got)) return std::isnan(expected) && std::isnan(got);
  return bits_of(got) == bits_of(expected);
}

struct Timing {
  double median_ms;
  double gigabytes_per_second;
};

/// Median of kTimedRuns event-timed calls after kWarmups untimed ones.
template <class Launch>
Timing time_launches(Launch launch, std::size_t bytes_moved) {
  cudaEvent_t start, stop;
  DEMO_CHECK_CUDA(cudaEventCreate(&start));
  DEMO_CHECK_CUDA(cudaEventCreate(&stop));
  for (int i = 0; i < kWarmups; ++i) DEMO_CHECK_CUDA(launch());
  DEMO_CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<float> milliseconds(kTimedRuns);
  for (float& ms : milliseconds) {
    DEMO_CHECK_CUDA(cudaEventRecord(start));
    DEMO_CHECK_CUDA(launch());
    DEMO_CHECK_CUDA(cudaEventRecord(stop));
    DEMO_CHECK_CUDA(cudaEventSynchronize(stop));
    DEMO_CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  }
  DEMO_CHECK_CUDA(cudaEventDestroy(start));
  DEMO_CHECK_CUDA(cudaEventDestroy(stop));
  std::sort(milliseconds.begin(), milliseconds.end());
  const double median_ms = milliseconds[kTimedRuns / 2];
  return {median_ms, static_cast<double>(bytes_moved) / (median_ms * 1e-3) / 1e9};
}

/// Checks out against `reference(in)` at every sampled position; prints the first mismatches.
template <class Reference>
std::size_t count_mismatches(const float* d_in, const float* d_out, const std::vector<std::size_t>& positions,
                             std::size_t* d_positions, float* d_in_samples, float* d_out_samples,
                             Reference reference) {
  const std::size_t count = positions.size();
  gather_samples<<<static_cast<unsigned>((count + 255) / 256), 256>>>(d_in, d_out, d_positions, count, d_in_samples,
                                                                      d_out_samples);
  DEMO_CHECK_CUDA(cudaGetLastError());
  std::vector<float> in_samples(count), out_samples(count);
  DEMO_CHECK_CUDA(cudaMemcpy(in_samples.data(), d_in_samples, count * sizeof(float), cudaMemcpyDeviceToHost));
  DEMO_CHECK_CUDA(cudaMemcpy(out_samples.data(), d_out_samples, count * sizeof(float), cudaMemcpyDeviceToHost));
  std::size_t mismatches = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const float expected = reference(in_samples[k]);
    if (!same_result(out_samples[k], expected)) {
      if (++mismatches <= 5) {
        std::printf("  mismatch at element %zu: input %.9g (0x%08" PRIx32 "), got %.9g (0x%08" PRIx32
                    "), expected %.9g (0x%08" PRIx32 ")\n",
                    positions[k], in_samples[k], bits_of(in_samples[k]), out_samples[k], bits_of(out_samples[k]),
                    expected, bits_of(expected));
      }
    }
  }
  return mismatches;
}

bool parse_count(const char* text, std::size_t& value) {
  char* end = nullptr;
  const unsigned long long parsed = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || parsed == 0 || text[0] == '-') return false;
  value = static_cast<std::size_t>(parsed);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t rows = 4096, cols = 393216;
  if (argc > 3 || (argc > 1 && !parse_count(argv[1], rows)) || (argc > 2 && !parse_count(argv[2], cols))) {
    std::fprintf(stderr, "usage: %s [ROWS COLS | N]   (positive integers; default 4096 393216)\n", argv[0]);
    return kExitCheckFailed;
  }
  if (argc == 2) cols = 1;  // one argument: a flat array of `rows` elements
  const std::size_t n = rows * cols;
  if (n / cols != rows) {
    std::fprintf(stderr, "hardact_demo: %zu x %zu elements overflow a 64-bit count\n", rows, cols);
    return kExitCheckFailed;
  }

  int device_count = 0;
  const cudaError_t device_status = cudaGetDeviceCount(&device_count);
  if (device_status != cudaSuccess || device_count == 0) {
    std::fprintf(stderr,
                 "hardact_demo: no usable CUDA GPU (cudaGetDeviceCount: %s). This demo runs on a GPU; "
                 "nothing was run.\n",
                 device_status != cudaSuccess ? cudaGetErrorString(device_status) : "0 devices");
    return kExitNoGpu;
  }
  int device = 0;
  cudaDeviceProp properties{};
  DEMO_CHECK_CUDA(cudaGetDevice(&device));
  DEMO_CHECK_CUDA(cudaGetDeviceProperties(&properties, device));

  const std::size_t bytes = n * sizeof(float);
  std::size_t free_bytes = 0, total_bytes = 0;
  DEMO_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t needed_bytes = 2 * bytes + (kRandomSamples + 2 * kEdgeSamples) * 16 + (64u << 20);
  if (needed_bytes > free_bytes) {
    std::fprintf(stderr, "hardact_demo: %zu x %zu floats need %.2f GB of GPU memory, %s has %.2f GB free; "
                 "pass a smaller size (hardact_demo ROWS COLS). Nothing was run.\n",
                 rows, cols, needed_bytes / 1e9, properties.name, free_bytes / 1e9);
    return kExitNoGpu;
  }

  std::printf("hardact %d.%d.%d demo on %s (sm_%d%d, %d SMs)\n", HARDACT_VERSION_MAJOR, HARDACT_VERSION_MINOR,
              HARDACT_VERSION_PATCH, properties.name, properties.major, properties.minor,
              properties.multiProcessorCount);
  std::printf("tensor: float32 %zu x %zu = %zu elements, %.2f GB moved per call (read + write)\n", rows, cols, n,
              2.0 * bytes / 1e9);
  std::printf("timing: median of %d CUDA-event timed calls after %d warm-ups\n\n", kTimedRuns, kWarmups);

  float *d_in = nullptr, *d_out = nullptr;
  DEMO_CHECK_CUDA(cudaMalloc(&d_in, bytes));
  DEMO_CHECK_CUDA(cudaMalloc(&d_out, bytes));
  fill_test_data<<<properties.multiProcessorCount * 8, 256>>>(d_in, n, 20261122);
  DEMO_CHECK_CUDA(cudaGetLastError());

  // The sample: the first and last kEdgeSamples elements plus kRandomSamples random positions.
  std::vector<std::size_t> positions;
  for (std::size_t i = 0; i < std::min(n, kEdgeSamples); ++i) positions.push_back(i);
  for (std::size_t i = n > kEdgeSamples ? n - kEdgeSamples : 0; i < n; ++i) positions.push_back(i);
  std::mt19937_64 generator(42);
  std::uniform_int_distribution<std::size_t> any_position(0, n - 1);
  for (std::size_t k = 0; k < kRandomSamples; ++k) positions.push_back(any_position(generator));
  std::size_t* d_positions = nullptr;
  float *d_in_samples = nullptr, *d_out_samples = nullptr;
  DEMO_CHECK_CUDA(cudaMalloc(&d_positions, positions.size() * sizeof(std::size_t)));
  DEMO_CHECK_CUDA(cudaMalloc(&d_in_samples, positions.size() * sizeof(float)));
  DEMO_CHECK_CUDA(cudaMalloc(&d_out_samples, positions.size() * sizeof(float)));
  DEMO_CHECK_CUDA(cudaMemcpy(d_positions, positions.data(), positions.size() * sizeof(std::size_t),
                             cudaMemcpyHostToDevice));

  const std::size_t bytes_moved = 2 * bytes;
  const Timing memcpy_timing = time_launches(
      [&] { return cudaMemcpyAsync(d_out, d_in, bytes, cudaMemcpyDeviceToDevice); }, bytes_moved);

  std::printf("%-26s %10s %10s %10s   %s\n", "operation", "time (ms)", "GB/s", "x memcpy", "check");
  std::printf("%-26s %10.3f %10.1f %10.3f   %s\n", "cudaMemcpyAsync D2D", memcpy_timing.median_ms,
              memcpy_timing.gigabytes_per_second, 1.0, "-");

  bool all_passed = true;
  auto run_op = [&](const char* label, auto launch, auto reference) {
    const Timing timing = time_launches(launch, bytes_moved);
    const std::size_t mismatches =
        count_mismatches(d_in, d_out, positions, d_positions, d_in_samples, d_out_samples, reference);
    std::printf("%-26s %10.3f %10.1f %10.3f   ", label, timing.median_ms, timing.gigabytes_per_second,
                timing.gigabytes_per_second / memcpy_timing.gigabytes_per_second);
    if (mismatches == 0) {
      std::printf("ok, bit-exact on %zu sampled elements\n", positions.size());
    } else {
      std::printf("FAILED on %zu of %zu sampled elements\n", mismatches, positions.size());
      all_passed = false;
    }
  };
  run_op("hardact::hardsigmoid", [&] { return hardact::hardsigmoid(d_in, d_out, n); }, reference_hardsigmoid);
  run_op("hardact::hardtanh(-1, 1)", [&] { return hardact::hardtanh(d_in, d_out, n, -1.0, 1.0); },
         [](float x) { return reference_hardtanh(x, -1.0f, 1.0f); });

  DEMO_CHECK_CUDA(cudaFree(d_out_samples));
  DEMO_CHECK_CUDA(cudaFree(d_in_samples));
  DEMO_CHECK_CUDA(cudaFree(d_positions));
  DEMO_CHECK_CUDA(cudaFree(d_out));
  DEMO_CHECK_CUDA(cudaFree(d_in));

  std::printf("\n%s\n", all_passed ? "PASS: results match the host reference bit for bit"
                                   : "FAIL: results differ from the host reference");
  return all_passed ? 0 : kExitCheckFailed;
}
