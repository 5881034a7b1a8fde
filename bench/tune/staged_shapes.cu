// hardact_tune: the measurements behind the staged path's constants (docs/TUNING.md). For each
// case it times, interleaved rep by rep with cudaMemcpyAsync of the same bytes, the staged kernel
// at every (units per thread, blocks per SM, stages, store hint) of a grid, then prints one line
// per configuration with the median paired ratio to the copy and its quartiles, and the shape the
// library's rule picks on this device. Not a test and not the benchmark: a tuning tool.
//
//   hardact_tune [reps] [filter]   (reps per configuration, default 7; filter: substring of case names)
#include <hardact/hardact.cuh>

#include <cub/device/device_transform.cuh>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using namespace hardact::detail;

#define CHECK(expr)                                                                             \
  do {                                                                                          \
    const cudaError_t status_ = (expr);                                                         \
    if (status_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(status_)); \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

/// data[i] = uniform in [-6, 6) from a hash of i (as the benchmark fills its buffers): the values
/// decide which branches the policies take, so tuning on constant memory would mislead.
template <class T>
__global__ void fill_uniform(T* data, std::size_t n, unsigned long long seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    unsigned long long x = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    const double unit = static_cast<double>(x >> 11) * 0x1.0p-53;
    data[i] = hardact::convert<T>(-6.0 + 12.0 * unit);
  }
}

template <class T>
void fill(void* data, std::size_t bytes, unsigned long long seed) {
  fill_uniform<T><<<1024, 256>>>(static_cast<T*>(data), bytes / sizeof(T), seed);
  CHECK(cudaDeviceSynchronize());
}

cudaStream_t g_stream;
unsigned char* g_copy_source;       // 1.5 x the reference bytes each: the largest copy
unsigned char* g_copy_destination;
cudaEvent_t g_start, g_stop;

double time_once(const std::function<cudaError_t()>& launch) {
  CHECK(cudaEventRecord(g_start, g_stream));
  CHECK(launch());
  CHECK(cudaEventRecord(g_stop, g_stream));
  CHECK(cudaEventSynchronize(g_stop));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, g_start, g_stop));
  return ms * 1e-3;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(pos), hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

/// Paired ratio copy/launch over reps, alternating which runs first.
void measure(const std::string& label, const std::function<cudaError_t()>& launch,
             const std::function<cudaError_t()>& copy, int reps) {
  for (int w = 0; w < 2; ++w) {
    time_once(launch);
    time_once(copy);
  }
  std::vector<double> ratio, times;
  for (int r = 0; r < reps; ++r) {
    double t_launch, t_copy;
    if (r % 2 == 0) {
      t_launch = time_once(launch);
      t_copy = time_once(copy);
    } else {
      t_copy = time_once(copy);
      t_launch = time_once(launch);
    }
    ratio.push_back(t_copy / t_launch);
    times.push_back(t_launch);
  }
  std::printf("%-72s x_copy %.4f  [q1 %.4f q3 %.4f]  %.3f ms\n", label.c_str(), quantile(ratio, 0.5),
              quantile(ratio, 0.25), quantile(ratio, 0.75), quantile(times, 0.5) * 1e3);
  std::fflush(stdout);
}

/// One-tile blocks at every (block threads, units per thread), and two multi-tile shapes: two
/// tiles per block in a 2-stage ring, and the persistent grid (4 blocks per SM, 3 stages).
template <int Threads, int Units, class Op, class TOut, class... TIn>
void sweep_shapes(const std::string& name, const Op& op, std::size_t n, const DeviceProperties& device,
                  const std::function<cudaError_t()>& copy, int reps, TOut* out, const TIn*... in) {
  using Tile = StagedTile<Threads, Units, TOut, TIn...>;
  const StagedShape shapes[] = {{Units, 1, 0, 1}, {Units, 2, 0, 2}, {Units, 0, 4, 3}};
  for (const StagedShape& shape : shapes) {
    if (Tile::shared_memory_bytes(shape.stages) > kDefaultSharedMemoryPerBlock) continue;
    if (Threads != kStagedBlockThreads<TOut, TIn...> && shape.tiles_per_block != 1) continue;
    char label[256];
    std::snprintf(label, sizeof label, "%s threads %d units %d tiles/block %s stages %d (tile %zu B loaded)",
                  name.c_str(), Threads, Units,
                  shape.tiles_per_block == 0 ? "persistent(4/SM)" : std::to_string(shape.tiles_per_block).c_str(),
                  shape.stages, Tile::kLoadedBytes);
    measure(label, [&] { return launch_staged<Units, kStagedCaching<TOut, TIn...>, Threads>(op, n, shape, device, g_stream, NoBroadcasts{}, out, in...); },
            copy, reps);
  }
}

template <class Op, class TOut, class... TIn>
void tune_case(const std::string& name, const Op& op, std::size_t n, const DeviceProperties& device, int reps,
               const char* filter, TOut* out, const TIn*... in) {
  if (filter != nullptr && name.find(filter) == std::string::npos) return;
  const std::size_t job = n * (sizeof(TOut) + ... + sizeof(TIn));
  // The copy moves the job's bytes: job / 2 read and written, from a buffer that holds them.
  // Copy between the case's own buffers where they are large enough, so no more memory is needed.
  unsigned char* scratch_src = g_copy_source;
  unsigned char* scratch_dst = g_copy_destination;
  const auto copy = [&] { return cudaMemcpyAsync(scratch_dst, scratch_src, job / 2, cudaMemcpyDeviceToDevice, g_stream); };

  const StagedResidency residency = staged_residency<kStagedCaching<TOut, TIn...>, Op, NoBroadcasts, TOut, TIn...>(device);
  const StagedShape rule = staged_shape<TOut, TIn...>(device, residency);
  std::printf("== %s: n %zu, %.2f GB per call; rule: units %d (tile %zu B loaded), tiles/block %d (0: persistent), "
              "stages %d (bytes in flight wanted %.0f B/SM; resident one-tile blocks %d at 1 unit, %d at 2)\n",
              name.c_str(), n, static_cast<double>(job) / 1e9, rule.units_per_thread,
              rule.units_per_thread * StagedTileOf<1, TOut, TIn...>::kLoadedBytes, rule.tiles_per_block, rule.stages,
              bytes_in_flight_per_multiprocessor(device), residency.of(1), residency.of(2));
  measure(name + " hardact automatic", [&] { return hardact::transform(op, in..., out, n, g_stream); }, copy, reps);
  {
    const ScopedTransformPath direct(TransformPath::direct);
    measure(name + " hardact direct", [&] { return hardact::transform(op, in..., out, n, g_stream); }, copy, reps);
  }
  if constexpr (sizeof...(TIn) == 1) {
    measure(name + " cub", [&] { return cub::DeviceTransform::Transform(in..., out, n, op, g_stream); }, copy, reps);
  }
  sweep_shapes<384, 1>(name, op, n, device, copy, reps, out, in...);
  sweep_shapes<256, 1>(name, op, n, device, copy, reps, out, in...);
  sweep_shapes<256, 2>(name, op, n, device, copy, reps, out, in...);
  sweep_shapes<256, 4>(name, op, n, device, copy, reps, out, in...);
  sweep_shapes<128, 1>(name, op, n, device, copy, reps, out, in...);
  sweep_shapes<128, 2>(name, op, n, device, copy, reps, out, in...);
  sweep_shapes<128, 4>(name, op, n, device, copy, reps, out, in...);
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 7;
  const char* filter = argc > 2 ? argv[2] : nullptr;
  CHECK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  CHECK(cudaEventCreate(&g_start));
  CHECK(cudaEventCreate(&g_stop));
  DeviceProperties device;
  CHECK(current_device_properties(device));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s: %d SMs, %d B shared/SM, L2 %d B, peak bandwidth %.0f GB/s (memory clock x bus width)\n",
              prop.name, device.multiprocessor_count, device.shared_memory_per_multiprocessor, device.l2_cache_bytes,
              device.peak_memory_bandwidth / 1e9);

  const std::size_t n = std::size_t(4096) * 393216;  // the reference shape, floats
  const std::size_t bytes = n * sizeof(float) + 256;
  unsigned char *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&b, bytes));
  CHECK(cudaMalloc(&c, bytes));
  CHECK(cudaMemset(a, 0x3c, bytes));  // 0x3c3c3c3c: 0.0115 as float, finite in every type
  CHECK(cudaMemset(b, 0x3c, bytes));
  CHECK(cudaMemset(c, 0x3c, bytes));
  CHECK(cudaMalloc(&g_copy_source, bytes * 3 / 2));
  CHECK(cudaMalloc(&g_copy_destination, bytes * 3 / 2));
  CHECK(cudaMemset(g_copy_source, 0x3c, bytes * 3 / 2));
  CHECK(cudaMemset(g_copy_destination, 0x3c, bytes * 3 / 2));
  float* fa = reinterpret_cast<float*>(a);
  float* fb = reinterpret_cast<float*>(b);
  float* fc = reinterpret_cast<float*>(c);
  using bf16 = __nv_bfloat16;
  fill<float>(a, bytes, 1);
  fill<float>(b, bytes, 2);
  tune_case("float hardsigmoid", hardact::HardSigmoid{}, n, device, reps, filter, fb, static_cast<const float*>(fa));
  tune_case("float hardsigmoid x+1->y", hardact::HardSigmoid{}, n - 1, device, reps, filter, fb,
            static_cast<const float*>(fa + 1));
  fill<bf16>(a, bytes, 3);
  tune_case("bf16 hardsigmoid", hardact::HardSigmoid{}, 2 * n, device, reps, filter, reinterpret_cast<bf16*>(b),
            static_cast<const bf16*>(reinterpret_cast<bf16*>(a)));
  tune_case("bf16 hardsigmoid x+1->y", hardact::HardSigmoid{}, 2 * n - 1, device, reps, filter,
            reinterpret_cast<bf16*>(b), static_cast<const bf16*>(reinterpret_cast<bf16*>(a) + 1));
  fill<double>(a, bytes, 4);
  tune_case("double hardsigmoid", hardact::HardSigmoid{}, n / 2, device, reps, filter, reinterpret_cast<double*>(b),
            static_cast<const double*>(reinterpret_cast<double*>(a)));
  fill<float>(a, bytes, 5);
  fill<float>(b, bytes, 6);
  tune_case("float backward", hardact::HardSigmoidBackward{}, n, device, reps, filter, fc, static_cast<const float*>(fa),
            static_cast<const float*>(fb));
  tune_case("float->bf16 hardsigmoid", hardact::HardSigmoid{}, n, device, reps, filter, reinterpret_cast<bf16*>(b),
            static_cast<const float*>(fa));
  return 0;
}
