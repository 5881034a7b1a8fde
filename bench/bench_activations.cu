// HardSigmoid and HardTanh side by side: the copy ceiling, hardact::transform (automatic and each
// explicit vector width), cub::DeviceTransform and thrust::transform with the same policy, and the
// two hand-written kernels people usually write. Names follow bench_common.cuh:
//   <op>/<dtype>/<implementation>/<placement>/<alignment>/n:<elements>[/calls:100]
// Implementations: memcpy (cudaMemcpyAsync device-to-device, out of place only), hardact_auto,
// hardact_w1/_w2/_w4/_w8 (the widths valid for the dtype), cub, thrust, naive (one element per
// thread, int index, n < 2^31 only), grid_stride_vec (16-byte vectors, SMs x 8 blocks).
#include "bench_common.cuh"

#include <hardact/hardact.cuh>

#include <cub/device/device_transform.cuh>
#include <thrust/execution_policy.h>
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/transform.h>

#include <climits>
#include <cstddef>
#include <exception>
#include <string>
#include <vector>

namespace hardact_bench {
namespace {

// ---------------------------------------------------------------------------------------------
// What a typical hand-written version computes: fminf/fmaxf (NaN is not propagated) and a division
// by 6. Half and bfloat16 go through float, as they would in hand-written code.

struct NaiveHardSigmoid {
  __device__ float operator()(float x) const { return fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f; }
  __device__ double operator()(double x) const { return fmin(fmax(x + 3.0, 0.0), 6.0) / 6.0; }
  __device__ __half operator()(__half x) const { return __float2half((*this)(__half2float(x))); }
  __device__ __nv_bfloat16 operator()(__nv_bfloat16 x) const {
    return __float2bfloat16((*this)(__bfloat162float(x)));
  }
};

struct NaiveHardTanh {
  double min_val = -1.0;
  double max_val = 1.0;
  __device__ float operator()(float x) const {
    return fminf(fmaxf(x, static_cast<float>(min_val)), static_cast<float>(max_val));
  }
  __device__ double operator()(double x) const { return fmin(fmax(x, min_val), max_val); }
  __device__ __half operator()(__half x) const { return __float2half((*this)(__half2float(x))); }
  __device__ __nv_bfloat16 operator()(__nv_bfloat16 x) const {
    return __float2bfloat16((*this)(__bfloat162float(x)));
  }
};

/// One activation: its name, the hardact policy, and the hand-written equivalent.
struct HardSigmoidCase {
  static constexpr const char* name = "hardsigmoid";
  static hardact::HardSigmoid policy() { return {}; }
  static NaiveHardSigmoid naive() { return {}; }
};

struct HardTanhCase {
  static constexpr const char* name = "hardtanh";
  static hardact::HardTanh policy() { return {-1.0, 1.0}; }
  static NaiveHardTanh naive() { return {-1.0, 1.0}; }
};

// ---------------------------------------------------------------------------------------------
// The hand-written kernels

constexpr int kHandWrittenBlock = 256;

/// One element per thread with an int index: the most common hand-written kernel. Its int index
/// limits it to n < 2^31 elements.
template <class T, class Op>
__global__ void naive_kernel(const T* in, T* out, int n, Op op) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = op(in[i]);
}

template <class T>
struct alignas(16) Pack16 {
  static constexpr int kCount = static_cast<int>(16 / sizeof(T));
  T elements[kCount];
};

/// The usual "optimised" version: a grid-stride loop over 16-byte vectors (float4 for float)
/// followed by the scalar remainder. Needs 16-byte aligned pointers.
template <class T, class Op>
__global__ void grid_stride_vector_kernel(const T* in, T* out, std::size_t n, Op op) {
  constexpr int kCount = Pack16<T>::kCount;
  const std::size_t vectors = n / kCount;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const Pack16<T>* in_vectors = reinterpret_cast<const Pack16<T>*>(in);
  Pack16<T>* out_vectors = reinterpret_cast<Pack16<T>*>(out);
  for (std::size_t v = first; v < vectors; v += stride) {
    Pack16<T> pack = in_vectors[v];
#pragma unroll
    for (int j = 0; j < kCount; ++j) pack.elements[j] = op(pack.elements[j]);
    out_vectors[v] = pack;
  }
  for (std::size_t i = vectors * kCount + first; i < n; i += stride) out[i] = op(in[i]);
}

/// Its fallback when a pointer is not 16-byte aligned (e.g. x + 1): the same loop, one element at
/// a time. This is what such code does when it checks alignment at all.
template <class T, class Op>
__global__ void grid_stride_scalar_kernel(const T* in, T* out, std::size_t n, Op op) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = op(in[i]);
  }
}

// ---------------------------------------------------------------------------------------------
// Implementations

enum class Impl { memcpy, hardact_auto, hardact_w1, hardact_w2, hardact_w4, hardact_w8, cub, thrust, naive, grid_stride_vec };

const char* impl_name(Impl impl) {
  switch (impl) {
    case Impl::memcpy: return "memcpy";
    case Impl::hardact_auto: return "hardact_auto";
    case Impl::hardact_w1: return "hardact_w1";
    case Impl::hardact_w2: return "hardact_w2";
    case Impl::hardact_w4: return "hardact_w4";
    case Impl::hardact_w8: return "hardact_w8";
    case Impl::cub: return "cub";
    case Impl::thrust: return "thrust";
    case Impl::naive: return "naive";
    case Impl::grid_stride_vec: return "grid_stride_vec";
  }
  return "unknown";
}

/// The implementations that exist for T at n elements: explicit widths only where
/// width * sizeof(T) <= 16, the int-indexed naive kernel only below 2^31 elements.
template <class T>
std::vector<Impl> implementations(std::size_t n, bool in_place) {
  std::vector<Impl> list;
  if (!in_place) list.push_back(Impl::memcpy);
  list.push_back(Impl::hardact_auto);
  list.push_back(Impl::hardact_w1);
  if (2 * sizeof(T) <= 16) list.push_back(Impl::hardact_w2);
  if (4 * sizeof(T) <= 16) list.push_back(Impl::hardact_w4);
  if (8 * sizeof(T) <= 16) list.push_back(Impl::hardact_w8);
  list.push_back(Impl::cub);
  list.push_back(Impl::thrust);
  if (n <= static_cast<std::size_t>(INT_MAX - kHandWrittenBlock)) list.push_back(Impl::naive);
  list.push_back(Impl::grid_stride_vec);
  return list;
}

template <int Width, class Case, class T>
cudaError_t launch_hardact(const T* in, T* out, std::size_t n, cudaStream_t stream) {
  if constexpr (Width * sizeof(T) <= 16) {
    return hardact::transform<Width>(Case::policy(), in, out, n, stream);
  } else {
    return cudaErrorInvalidValue;  // never registered
  }
}

template <class Case, class T>
cudaError_t launch_thrust(const T* in, T* out, std::size_t n, cudaStream_t stream) {
  try {
    thrust::transform(thrust::cuda::par_nosync.on(stream), in, in + n, out, Case::policy());
  } catch (const std::exception&) {
    const cudaError_t status = cudaGetLastError();
    return status != cudaSuccess ? status : cudaErrorUnknown;
  }
  return cudaGetLastError();
}

template <class Case, class T>
cudaError_t launch_grid_stride(const T* in, T* out, std::size_t n, cudaStream_t stream) {
  const unsigned int blocks = static_cast<unsigned int>(multiprocessor_count() * 8);
  if (blocks == 0) return cudaErrorInvalidDevice;
  const bool vector_aligned = reinterpret_cast<std::uintptr_t>(in) % 16 == 0 &&
                              reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
  if (vector_aligned) {
    grid_stride_vector_kernel<<<blocks, kHandWrittenBlock, 0, stream>>>(in, out, n, Case::naive());
  } else {
    grid_stride_scalar_kernel<<<blocks, kHandWrittenBlock, 0, stream>>>(in, out, n, Case::naive());
  }
  return cudaGetLastError();
}

template <class Case, class T>
cudaError_t launch(Impl impl, const T* in, T* out, std::size_t n, cudaStream_t stream) {
  switch (impl) {
    case Impl::memcpy:
      return cudaMemcpyAsync(out, in, n * sizeof(T), cudaMemcpyDeviceToDevice, stream);
    case Impl::hardact_auto: return launch_hardact<0, Case>(in, out, n, stream);
    case Impl::hardact_w1: return launch_hardact<1, Case>(in, out, n, stream);
    case Impl::hardact_w2: return launch_hardact<2, Case>(in, out, n, stream);
    case Impl::hardact_w4: return launch_hardact<4, Case>(in, out, n, stream);
    case Impl::hardact_w8: return launch_hardact<8, Case>(in, out, n, stream);
    case Impl::cub: return cub::DeviceTransform::Transform(in, out, n, Case::policy(), stream);
    case Impl::thrust: return launch_thrust<Case>(in, out, n, stream);
    case Impl::naive: {
      const unsigned int blocks = static_cast<unsigned int>((n + kHandWrittenBlock - 1) / kHandWrittenBlock);
      naive_kernel<<<blocks, kHandWrittenBlock, 0, stream>>>(in, out, static_cast<int>(n), Case::naive());
      return cudaGetLastError();
    }
    case Impl::grid_stride_vec: return launch_grid_stride<Case>(in, out, n, stream);
  }
  return cudaErrorInvalidValue;
}

// ---------------------------------------------------------------------------------------------
// One benchmark

struct Spec {
  Impl impl;
  std::size_t n;
  bool in_place;
  bool misaligned;  ///< in + 1 and out + 1
  int calls_per_sample;
};

// Buffer slots and seeds: the input always holds the same random values for a given dtype and n.
constexpr int kInputSlot = 0;
constexpr int kOutputSlot = 1;
constexpr std::uint64_t kInputSeed = 0x5eed0001;
constexpr std::uint64_t kOutputSeed = 0x5eed0002;

/// Bytes per buffer: n elements plus one for the misaligned (+1) variant.
template <class T>
std::size_t buffer_bytes(std::size_t n) {
  return (n + 1) * sizeof(T);
}

template <class Case, class T>
void run_case(benchmark::State& state, const Spec& spec) {
  DeviceBufferPool& pool = DeviceBufferPool::instance();
  const cudaStream_t stream = bench_stream();
  const std::size_t elements = spec.n + 1;
  void* input = nullptr;
  void* output = nullptr;
  cudaError_t status = pool.acquire(kInputSlot, buffer_bytes<T>(spec.n), &input);
  if (status == cudaSuccess) status = pool.acquire(kOutputSlot, buffer_bytes<T>(spec.n), &output);
  if (status != cudaSuccess) {
    return fail(state, "allocating 2 x " + std::to_string(buffer_bytes<T>(spec.n)) + " bytes", status);
  }
  // Both buffers hold random data (the output too, so that nothing reads or writes zero pages).
  status = pool.fill<T>(kInputSlot, elements, kInputSeed, stream);
  if (status == cudaSuccess) status = pool.fill<T>(kOutputSlot, elements, kOutputSeed, stream);
  if (status != cudaSuccess) return fail(state, "filling the buffers", status);

  const std::size_t offset = spec.misaligned ? 1 : 0;
  T* const in = static_cast<T*>(input) + offset;
  T* const out = spec.in_place ? in : static_cast<T*>(output) + offset;

  TimedCase timed;
  timed.bytes_per_call = 2 * spec.n * sizeof(T);
  timed.copy_source = input;  // the ceiling is always the aligned, out-of-place copy
  timed.copy_destination = output;
  timed.copy_bytes = spec.n * sizeof(T);
  timed.ceiling_tag = dtype_name<T>();
  timed.calls_per_sample = spec.calls_per_sample;
  run_timed(state, timed, [&] { return launch<Case>(spec.impl, in, out, spec.n, stream); });
  if (spec.in_place) pool.mark_modified(kInputSlot);
}

// ---------------------------------------------------------------------------------------------
// Registration: grouped by dtype, then size, so that consecutive benchmarks share buffers.

template <class Case, class T>
void register_group(const Options& o, std::size_t n, int calls_per_sample) {
  for (const bool in_place : {false, true}) {
    for (const bool misaligned : {false, true}) {
      for (const Impl impl : implementations<T>(n, in_place)) {
        const Spec spec{impl, n, in_place, misaligned, calls_per_sample};
        const std::string name =
            benchmark_name(Case::name, dtype_name<T>(), impl_name(impl), in_place, misaligned, n, calls_per_sample);
        auto* b = benchmark::RegisterBenchmark(name.c_str(), [spec](benchmark::State& state) {
          run_case<Case, T>(state, spec);
        });
        configure(b, o, 2 * n * sizeof(T), calls_per_sample);
      }
    }
  }
}

template <class T>
void register_dtype(const Options& o) {
  for (const std::size_t n : bandwidth_sizes(o)) {
    const std::string what = std::string(dtype_name<T>()) + " n=" + std::to_string(n);
    if (!fits_memory_budget(o, 2 * buffer_bytes<T>(n), what)) continue;
    register_group<HardSigmoidCase, T>(o, n, 1);
    register_group<HardTanhCase, T>(o, n, 1);
    if (is_launch_bound_size(o, n)) {
      register_group<HardSigmoidCase, T>(o, n, kLaunchLoopCalls);
      register_group<HardTanhCase, T>(o, n, kLaunchLoopCalls);
    }
  }
}

void register_activation_benchmarks(const Options& o) {
  if (o.mode != Mode::separate) return;
  register_dtype<float>(o);
  if (o.sweep == Sweep::full) {
    register_dtype<__half>(o);
    register_dtype<__nv_bfloat16>(o);
    register_dtype<double>(o);
  }
}

}  // namespace

HARDACT_BENCH_REGISTRAR("10_activations", register_activation_benchmarks);

}  // namespace hardact_bench
