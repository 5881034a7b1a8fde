/// @file bench_interleaved.cuh
/// @brief The interleaved machinery shared by bench_interleaved.cu and bench_fused.cu: the
///        contenders, one case ready to run, and the loop that times its contenders rep by rep in
///        turn (both orders) and reports the counters described in bench_interleaved.cu.
#pragma once

#include "bench_common.cuh"

#include <hardact/hardact.cuh>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace hardact_bench {

/// memcpy is always the first contender of a case and hardact the second.
enum class Contender { memcpy, hardact, hardact_direct, hardact_staged, cub, unfused, plain, launch_floor };

inline const char* contender_name(Contender c) {
  switch (c) {
    case Contender::memcpy: return "memcpy";
    case Contender::hardact: return "hardact";
    case Contender::hardact_direct: return "hardact_direct";
    case Contender::hardact_staged: return "hardact_staged";
    case Contender::cub: return "cub";
    case Contender::unfused: return "unfused";
    case Contender::plain: return "plain";
    case Contender::launch_floor: return "floor";
  }
  return "unknown";
}

/// A template, so that every translation unit that includes this header may define it.
template <int Unused = 0>
__global__ void empty_kernel() {}

/// The floor of a one-kernel transform of `bytes` for a call too short to hide a launch: an empty
/// kernel's launch and then the copy, on one stream. A transform's time over this says how far it
/// is from what a launch plus the copy's traffic allows.
inline cudaError_t launch_floor(void* out, const void* in, std::size_t bytes, cudaStream_t stream) {
  empty_kernel<><<<1, 1, 0, stream>>>();
  const cudaError_t launched = cudaGetLastError();
  return launched != cudaSuccess ? launched : cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, stream);
}

/// One case, ready to run: what it moves and how each contender launches it.
struct InterleavedCase {
  std::size_t job_bytes = 0;  ///< each input read once and the output written once, per call
  int calls_per_sample = 1;
  std::vector<Contender> contenders;
  std::function<cudaError_t(Contender)> launch;
  int modified_slot = -1;  ///< a slot the case writes into (in place), to refill afterwards
};

/// Quantile q of `values` (linear interpolation between order statistics).
inline double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double position = q * static_cast<double>(values.size() - 1);
  const std::size_t below = static_cast<std::size_t>(position);
  const std::size_t above = std::min(below + 1, values.size() - 1);
  const double weight = position - static_cast<double>(below);
  return values[below] * (1.0 - weight) + values[above] * weight;
}

/// Warms every contender up, then times `reps` samples of each, contender by contender in turn,
/// forward on even reps and reversed on odd ones; reports the counters described in
/// bench_interleaved.cu.
inline void run_interleaved(benchmark::State& state, const InterleavedCase& c, int reps) {
  const cudaStream_t stream = bench_stream();
  const std::size_t count = c.contenders.size();
  std::vector<std::vector<double>> seconds(count);
  std::vector<double> discarded;
  for (std::size_t k = 0; k < count; ++k) {
    const auto launch = [&] { return c.launch(c.contenders[k]); };
    const cudaError_t status = time_samples(stream, 2, c.calls_per_sample, launch, discarded);
    if (status != cudaSuccess) return fail(state, std::string("warm-up of ") + contender_name(c.contenders[k]), status);
  }
  for (auto _ : state) {
    for (int rep = 0; rep < reps; ++rep) {
      for (std::size_t position = 0; position < count; ++position) {
        const std::size_t k = rep % 2 == 0 ? position : count - 1 - position;
        const auto launch = [&] { return c.launch(c.contenders[k]); };
        std::vector<double> sample;
        const cudaError_t status = time_samples(stream, 1, c.calls_per_sample, launch, sample);
        if (status != cudaSuccess) {
          return fail(state, std::string("timed launch of ") + contender_name(c.contenders[k]), status);
        }
        seconds[k].push_back(sample.front());
      }
    }
    state.SetIterationTime(median(seconds[1 % count]));
  }

  const std::size_t copy_index = 0;  // memcpy is always the first contender
  for (std::size_t k = 0; k < count; ++k) {
    const std::string name = contender_name(c.contenders[k]);
    std::vector<double> ratio, forward, reverse;
    for (int rep = 0; rep < reps; ++rep) {
      const double r = seconds[copy_index][static_cast<std::size_t>(rep)] / seconds[k][static_cast<std::size_t>(rep)];
      ratio.push_back(r);
      (rep % 2 == 0 ? forward : reverse).push_back(r);
    }
    const double time = median(seconds[k]);
    state.counters[name + "_us"] = benchmark::Counter(time * 1e6);
    state.counters[name + "_GBps"] = benchmark::Counter(static_cast<double>(c.job_bytes) / time / 1e9);
    state.counters[name + "_x_copy"] = benchmark::Counter(median(ratio));
    state.counters[name + "_x_copy_fwd"] = benchmark::Counter(median(forward));
    state.counters[name + "_x_copy_rev"] = benchmark::Counter(median(reverse));
    state.counters[name + "_x_copy_q1"] = benchmark::Counter(quantile(ratio, 0.25));
    state.counters[name + "_x_copy_q3"] = benchmark::Counter(quantile(ratio, 0.75));
  }
  state.counters["reps"] = benchmark::Counter(reps);
  state.SetBytesProcessed(static_cast<std::int64_t>(c.job_bytes));
  if (c.modified_slot >= 0) DeviceBufferPool::instance().mark_modified(c.modified_slot);
}

// ---- Broadcast operands as CUB inputs ----

/// What CUB reads for a broadcast operand: values[(i / inner) % period] for element i, the two
/// divisions by multiply-and-shift (hardact::detail::FastDivmod, prepared on the host).
template <class T>
struct BroadcastValue {
  const T* values;
  hardact::detail::FastDivmod inner;
  hardact::detail::FastDivmod period;

  __host__ __device__ T operator()(std::uint64_t i) const {
    std::uint64_t cycle = 0, channel = 0;
    period.divmod(inner.divide(i), cycle, channel);
    return values[channel];
  }
};

/// A broadcast operand as a CUB input: a transform iterator over a counting iterator.
template <class T>
auto broadcast_iterator(const hardact::Broadcast<T>& b) {
  using hardact::detail::FastDivmod;
  return thrust::make_transform_iterator(thrust::counting_iterator<std::uint64_t>(0),
                                         BroadcastValue<T>{b.values, FastDivmod::make(b.inner), FastDivmod::make(b.period)});
}

/// values[i % channels + channels * (i / span)]: a per_sample_channel operand as a CUB input.
template <class T>
struct SampleChannelValue {
  const T* values;
  std::uint64_t channels;
  hardact::detail::FastDivmod channel;
  hardact::detail::FastDivmod span;

  __host__ __device__ T operator()(std::uint64_t i) const {
    std::uint64_t unused = 0, c = 0;
    channel.divmod(i, unused, c);
    return values[c + channels * span.divide(i)];
  }
};

template <class T>
auto broadcast_iterator(const hardact::SampleBroadcast<T>& b) {
  using hardact::detail::FastDivmod;
  return thrust::make_transform_iterator(
      thrust::counting_iterator<std::uint64_t>(0),
      SampleChannelValue<T>{b.values, b.period, FastDivmod::make(b.period), FastDivmod::make(b.span)});
}

// ---- Device memory for a case, and the bit-for-bit check ----

/// One cudaMalloc'd block, freed with the case.
class DeviceAllocation {
 public:
  DeviceAllocation() = default;
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;
  ~DeviceAllocation() {
    if (data_ != nullptr) (void)cudaFree(data_);
  }
  cudaError_t allocate(std::size_t bytes) {
    const cudaError_t status = cudaMalloc(&data_, std::max<std::size_t>(bytes, 1));
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      data_ = nullptr;
    }
    return status;
  }
  template <class U>
  U* as() const {
    return static_cast<U*>(data_);
  }

 private:
  void* data_ = nullptr;
};

/// *count += elements i < n whose bits differ between a and b.
template <class Bits>
__global__ void count_different_kernel(const Bits* a, const Bits* b, std::size_t n, unsigned long long* count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  unsigned long long local = 0;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    local += a[i] != b[i] ? 1u : 0u;
  }
  for (int offset = 16; offset > 0; offset /= 2) local += __shfl_down_sync(0xffffffffu, local, offset);
  if (threadIdx.x % 32 == 0 && local != 0) atomicAdd(count, local);
}

/// Elements of a and b (n each, device) whose bits differ; `scratch` is one device counter.
template <class T>
cudaError_t count_mismatches(const T* a, const T* b, std::size_t n, unsigned long long* scratch,
                             unsigned long long& mismatches) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "compared as 16-, 32- or 64-bit words");
  using Bits = std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                  std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>;
  const cudaStream_t stream = bench_stream();
  cudaError_t status = cudaMemsetAsync(scratch, 0, sizeof(unsigned long long), stream);
  if (status != cudaSuccess) return status;
  constexpr unsigned int kThreads = 256;
  const unsigned int blocks = static_cast<unsigned int>(
      std::clamp<std::size_t>((n + kThreads - 1) / kThreads, 1, 65536));
  count_different_kernel<Bits><<<blocks, kThreads, 0, stream>>>(reinterpret_cast<const Bits*>(a),
                                                                 reinterpret_cast<const Bits*>(b), n, scratch);
  status = cudaGetLastError();
  if (status == cudaSuccess) status = cudaMemcpyAsync(&mismatches, scratch, sizeof(mismatches), cudaMemcpyDeviceToHost, stream);
  if (status == cudaSuccess) status = cudaStreamSynchronize(stream);
  return status;
}

/// Prints to stderr how many of a contender's outputs differ from hardact's, when any do.
inline void report_mismatches(const std::string& name, const char* contender, unsigned long long mismatches, std::size_t n) {
  if (mismatches == 0) return;
  std::fprintf(stderr, "hardact_bench: %s: %llu of %zu elements of %s's output differ from hardact's\n", name.c_str(),
               mismatches, n, contender);
}

/// Launches hardact::transform on the forced path (or the automatic one).
template <class Call>
cudaError_t on_path(Contender c, const Call& call) {
  using hardact::detail::ScopedTransformPath;
  using hardact::detail::TransformPath;
  const TransformPath path = c == Contender::hardact_direct   ? TransformPath::direct
                             : c == Contender::hardact_staged ? TransformPath::staged
                                                              : TransformPath::automatic;
  const ScopedTransformPath forced(path);
  return call();
}

/// memcpy, hardact, cub; in the full sweep also hardact's two paths forced.
inline std::vector<Contender> contenders_for(const Options& o) {
  if (o.sweep == Sweep::full) {
    return {Contender::memcpy, Contender::hardact, Contender::hardact_direct, Contender::hardact_staged, Contender::cub};
  }
  return {Contender::memcpy, Contender::hardact, Contender::cub};
}

/// Acquires a slot of at least `bytes` and fills its first bytes / sizeof(T) elements with random T.
template <class T>
cudaError_t prepared_slot(int slot, std::size_t bytes, std::uint64_t seed, void** pointer) {
  DeviceBufferPool& pool = DeviceBufferPool::instance();
  cudaError_t status = pool.acquire(slot, bytes, pointer);
  if (status == cudaSuccess) status = pool.fill<T>(slot, bytes / sizeof(T), seed, bench_stream());
  return status;
}

/// What cub::DeviceTransform calls: the policy on the inputs' elements, rounded to TOut the way
/// hardact does (computed in float for mixed types, rounded once).
template <class Op, class TOut>
struct RoundedOp {
  Op op;
  template <class... T>
  __device__ TOut operator()(T... x) const {
    return hardact::detail::apply_op<TOut>(op, x...);
  }
};

}  // namespace hardact_bench
