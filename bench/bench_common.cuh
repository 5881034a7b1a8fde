/// @file bench_common.cuh
/// @brief Shared pieces of hardact_bench: run options, device buffers filled with random data on
///        the device, CUDA-event timing, the cudaMemcpyAsync copy ceiling, naming and registration.
///
/// Every bench/*.cu file is linked into the one binary `hardact_bench`. A file adds benchmarks by
/// defining `void register_xxx(const hardact_bench::Options&)` and announcing it with
/// `HARDACT_BENCH_REGISTRAR("key", register_xxx)`; main() calls the registrars in key order after
/// it has parsed the flags, so a registrar can look at the sweep that was asked for.
///
/// Benchmark names (parsed by scripts/plot_bench.py; keep them this way):
///   <op>/<dtype>/<implementation>/<placement>/<alignment>/n:<elements>[/calls:<launches per sample>]
///   e.g. hardsigmoid/float/hardact_auto/out_of_place/aligned/n:1610612736
///        hardtanh/half/cub/in_place/misaligned/n:4096/calls:100
/// Segments are lower case without '/' (words joined by '_'); parameters are key:value. Google
/// Benchmark appends its own key:value segments (iterations:, repeats:) and manual_time.
/// Without /calls: each timed sample is one launch; with /calls:K it is K back-to-back launches and
/// the reported time is per launch (the launch-bound regime of small sizes). The fused epilogue rows
/// (bench_fused.cu) add /shape:<dims> after n:, e.g. .../n:1610649600/shape:5350x96x56x56.
#pragma once

#include <hardact/numeric/conversions.cuh>

#include <benchmark/benchmark.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace hardact_bench {

// ---------------------------------------------------------------------------------------------
// Options

/// Which cases main() asks the registrars for.
enum class Sweep {
  reference,  ///< default: float at the reference shape only (a run of well under a minute)
  full,       ///< every dtype, 2^12 .. 2^32 elements plus the reference shape, launch-bound loops
};

/// How implementations of one case are timed.
enum class Mode {
  interleaved,  ///< default: contenders of a case rep by rep in turn, both orders (bench_interleaved.cu)
  separate,     ///< one Google Benchmark per implementation, one after another
};

/// Run options, set by main() from --hardact_* flags before any registrar runs.
struct Options {
  Mode mode = Mode::interleaved;
  Sweep sweep = Sweep::reference;
  int repetitions = 5;                 ///< separate mode: Google Benchmark repetitions; the median is reported
  int interleaved_reps = 21;           ///< interleaved mode: reps of each contender (alternating orders)
  double max_device_bytes = 40e9;      ///< memory one case may allocate; larger sizes are skipped
};

inline Options& mutable_options() {
  static Options options;
  return options;
}
inline const Options& options() { return mutable_options(); }

/// The reference shape of the project: a 4096 x 393216 activation tensor (1,610,612,736 elements).
inline constexpr std::size_t kReferenceRows = 4096;
inline constexpr std::size_t kReferenceCols = 393216;
inline constexpr std::size_t kReferenceElements = kReferenceRows * kReferenceCols;

/// Back-to-back launches per timed sample in the launch-bound benchmarks (/calls:K).
inline constexpr int kLaunchLoopCalls = 100;

/// Element counts of the bandwidth benchmarks: powers of two from 2^12 to 2^32 and the reference
/// shape in the full sweep, only the reference shape by default.
inline std::vector<std::size_t> bandwidth_sizes(const Options& o) {
  std::vector<std::size_t> sizes;
  if (o.sweep == Sweep::full) {
    for (int log2 = 12; log2 <= 32; ++log2) {
      const std::size_t n = std::size_t{1} << log2;
      // The reference shape (3 * 2^29) sits between 2^30 and 2^31.
      if (n > kReferenceElements && (n >> 1) < kReferenceElements) sizes.push_back(kReferenceElements);
      sizes.push_back(n);
    }
  } else {
    sizes.push_back(kReferenceElements);
  }
  return sizes;
}

/// Sizes whose launch-bound time per call is measured as well (full sweep only).
inline bool is_launch_bound_size(const Options& o, std::size_t n) {
  return o.sweep == Sweep::full && n >= (std::size_t{1} << 12) && n <= (std::size_t{1} << 18);
}

// ---------------------------------------------------------------------------------------------
// Registration

using RegisterFunction = void (*)(const Options&);

struct Registrar {
  std::string key;
  RegisterFunction function;
};

inline std::vector<Registrar>& registrars() {
  static std::vector<Registrar> list;
  return list;
}

/// Static-initialisation hook behind HARDACT_BENCH_REGISTRAR.
struct AddRegistrar {
  AddRegistrar(const char* key, RegisterFunction function) { registrars().push_back({key, function}); }
};

/// Calls every registrar, in key order (static initialisation order across files is unspecified).
inline void run_registrars(const Options& o) {
  std::vector<Registrar> sorted = registrars();
  std::sort(sorted.begin(), sorted.end(), [](const Registrar& a, const Registrar& b) { return a.key < b.key; });
  for (const Registrar& r : sorted) r.function(o);
}

#define HARDACT_BENCH_CONCAT_INNER(a, b) a##b
#define HARDACT_BENCH_CONCAT(a, b) HARDACT_BENCH_CONCAT_INNER(a, b)
/// Announces `function` (void(const Options&)) to main(); `key` orders the registrars.
#define HARDACT_BENCH_REGISTRAR(key, function) \
  static const ::hardact_bench::AddRegistrar HARDACT_BENCH_CONCAT(hardact_bench_registrar_, __LINE__)(key, function)

/// Short, stable element type names used in benchmark names.
template <class T>
constexpr const char* dtype_name() {
  if constexpr (std::is_same_v<T, float>) return "float";
  else if constexpr (std::is_same_v<T, double>) return "double";
  else if constexpr (std::is_same_v<T, __half>) return "half";
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return "bfloat16";
  else return "unknown";
}

inline const char* placement_name(bool in_place) { return in_place ? "in_place" : "out_of_place"; }
inline const char* alignment_name(bool misaligned) { return misaligned ? "misaligned" : "aligned"; }

/// "<op>/<dtype>/<impl>/<placement>/<alignment>/n:<n>[/calls:<k>]", the scheme described above.
inline std::string benchmark_name(const std::string& op, const std::string& dtype, const std::string& impl,
                                  bool in_place, bool misaligned, std::size_t n, int calls_per_sample) {
  std::string name = op + "/" + dtype + "/" + impl + "/" + placement_name(in_place) + "/" +
                     alignment_name(misaligned) + "/n:" + std::to_string(n);
  if (calls_per_sample > 1) name += "/calls:" + std::to_string(calls_per_sample);
  return name;
}

/// True when `bytes` fit the memory budget; otherwise prints, once per description, why the case
/// is skipped.
inline bool fits_memory_budget(const Options& o, std::size_t bytes, const std::string& what) {
  if (static_cast<double>(bytes) <= o.max_device_bytes) return true;
  static std::vector<std::string> reported;
  if (std::find(reported.begin(), reported.end(), what) == reported.end()) {
    reported.push_back(what);
    std::fprintf(stderr, "hardact_bench: skipping %s: needs %.1f GB of device memory, over the %.1f GB budget "
                 "(--hardact_max_gb)\n", what.c_str(), static_cast<double>(bytes) / 1e9, o.max_device_bytes / 1e9);
  }
  return false;
}

/// Estimated seconds of one launch moving `bytes` (read + write), for planning sample counts only:
/// a few microseconds of launch cost plus the bytes at 2.5 TB/s.
inline double estimated_call_seconds(std::size_t bytes) { return 4e-6 + static_cast<double>(bytes) / 2.5e12; }

/// Timed samples per repetition: about 10 ms of GPU time, at least 3 and at most 100 samples
/// (the full sweep has about 8000 benchmarks; this keeps it near 5 minutes on an H100).
inline benchmark::IterationCount planned_iterations(std::size_t bytes_per_call, int calls_per_sample) {
  const double sample_seconds = estimated_call_seconds(bytes_per_call) * calls_per_sample;
  const double wanted = std::ceil(10e-3 / sample_seconds);
  return static_cast<benchmark::IterationCount>(std::clamp(wanted, 3.0, 100.0));
}

/// Applies the common settings: manual (CUDA event) time, fixed samples, repetitions whose median
/// (and mean, stddev, cv) are the only rows reported.
/// (A template so that it takes whatever type RegisterBenchmark returns in this library version.)
template <class Benchmark>
Benchmark* configure(Benchmark* b, const Options& o, std::size_t bytes_per_call, int calls_per_sample) {
  b->UseManualTime()
      ->Unit(benchmark::kMicrosecond)
      ->Iterations(planned_iterations(bytes_per_call, calls_per_sample))
      ->Repetitions(o.repetitions)
      ->ReportAggregatesOnly(true);
  return b;
}

// ---------------------------------------------------------------------------------------------
// CUDA helpers

/// Set when any benchmark failed, so main() can exit non-zero.
inline bool& any_benchmark_failed() {
  static bool failed = false;
  return failed;
}

/// Marks the benchmark as failed with "<what>: <CUDA error>", and records the failure for main().
inline void fail(benchmark::State& state, const std::string& what, cudaError_t status) {
  any_benchmark_failed() = true;
  const std::string message = what + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
  state.SkipWithError(message.c_str());
}

/// The one stream every benchmark runs on (non-blocking, so nothing else serialises with it).
inline cudaStream_t bench_stream() {
  static cudaStream_t stream = [] {
    cudaStream_t s = nullptr;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) s = nullptr;
    return s;
  }();
  return stream;
}

/// Multiprocessors of the current device (queried once; 0 if the query failed).
inline int multiprocessor_count() {
  static const int count = [] {
    int device = 0, sms = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return 0;
    return sms;
  }();
  return count;
}

/// A pair of CUDA events around work on one stream; elapsed time in seconds.
class EventTimer {
 public:
  EventTimer() {
    status_ = cudaEventCreate(&start_);
    if (status_ == cudaSuccess) status_ = cudaEventCreate(&stop_);
  }
  ~EventTimer() {
    if (start_ != nullptr) (void)cudaEventDestroy(start_);
    if (stop_ != nullptr) (void)cudaEventDestroy(stop_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  cudaError_t status() const { return status_; }
  cudaError_t start(cudaStream_t stream) { return cudaEventRecord(start_, stream); }
  cudaError_t stop(cudaStream_t stream) { return cudaEventRecord(stop_, stream); }
  /// Waits for the stop event and returns the time between the two events.
  cudaError_t elapsed_seconds(double& seconds) {
    cudaError_t status = cudaEventSynchronize(stop_);
    if (status != cudaSuccess) return status;
    float ms = 0.0f;
    status = cudaEventElapsedTime(&ms, start_, stop_);
    seconds = static_cast<double>(ms) * 1e-3;
    return status;
  }

  static EventTimer& shared() {
    static EventTimer timer;
    return timer;
  }

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  cudaError_t status_ = cudaSuccess;
};

/// Times `samples` samples of `calls` launches each; `launch()` returns cudaError_t. Fills
/// `per_call_seconds` with one entry per sample.
template <class Launch>
cudaError_t time_samples(cudaStream_t stream, int samples, int calls, Launch&& launch,
                         std::vector<double>& per_call_seconds) {
  EventTimer& timer = EventTimer::shared();
  if (timer.status() != cudaSuccess) return timer.status();
  per_call_seconds.clear();
  for (int s = 0; s < samples; ++s) {
    cudaError_t status = timer.start(stream);
    for (int c = 0; c < calls && status == cudaSuccess; ++c) status = launch();
    if (status == cudaSuccess) status = timer.stop(stream);
    double seconds = 0.0;
    if (status == cudaSuccess) status = timer.elapsed_seconds(seconds);
    if (status != cudaSuccess) return status;
    per_call_seconds.push_back(seconds / calls);
  }
  return cudaSuccess;
}

inline double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const std::size_t middle = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle), values.end());
  double result = values[middle];
  if (values.size() % 2 == 0) {
    result = (result + *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle))) / 2;
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Device buffers with random contents

namespace detail {

__host__ __device__ inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/// data[i] = uniform in [low, low + width), from a hash of (seed, i): reproducible, no host copy.
template <class T>
__global__ void fill_uniform_kernel(T* data, std::size_t n, std::uint64_t seed, double low, double width) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::uint64_t bits = mix64(seed ^ mix64(i + 0x9e3779b97f4a7c15ULL));
    if constexpr (std::is_same_v<T, double>) {
      const double unit = static_cast<double>(bits >> 11) * 0x1.0p-53;
      data[i] = low + width * unit;
    } else {
      const float unit = static_cast<float>(bits >> 40) * 0x1.0p-24f;
      data[i] = hardact::convert<T>(static_cast<float>(low) + static_cast<float>(width) * unit);
    }
  }
}

}  // namespace detail

/// Fills n elements with uniform random values in [low, high) on `stream` (asynchronous).
template <class T>
cudaError_t fill_uniform(T* data, std::size_t n, std::uint64_t seed, cudaStream_t stream, double low = -6.0,
                         double high = 6.0) {
  if (n == 0) return cudaSuccess;
  constexpr unsigned int kThreads = 256;
  const std::size_t wanted_blocks = (n + kThreads - 1) / kThreads;
  const unsigned int blocks = static_cast<unsigned int>(std::min<std::size_t>(wanted_blocks, 65536));
  detail::fill_uniform_kernel<T><<<blocks, kThreads, 0, stream>>>(data, n, seed, low, high - low);
  return cudaGetLastError();
}

/// Device buffers kept across benchmarks, so that consecutive benchmarks on the same size and dtype
/// use the very same memory and data. Each slot grows (free, then allocate) when a larger buffer is
/// asked for, and remembers what it was filled with so it is refilled only when needed.
class DeviceBufferPool {
 public:
  static constexpr int kSlots = 4;

  static DeviceBufferPool& instance() {
    static DeviceBufferPool pool;
    return pool;
  }

  /// `*pointer` = at least `bytes` bytes of slot `slot` (256-byte aligned).
  cudaError_t acquire(int slot, std::size_t bytes, void** pointer) {
    Slot& s = slots_[slot];
    if (s.bytes < bytes) {
      if (s.data != nullptr) {
        const cudaError_t status = cudaFree(s.data);
        s = Slot{};
        if (status != cudaSuccess) return status;
      }
      const cudaError_t status = cudaMalloc(&s.data, bytes);
      if (status != cudaSuccess) {
        (void)cudaGetLastError();  // an allocation failure is not sticky; keep later calls clean
        s = Slot{};
        return status;
      }
      s.bytes = bytes;
    }
    *pointer = s.data;
    return cudaSuccess;
  }

  /// Fills the first n elements of slot `slot` with uniform values from `seed`, unless the slot
  /// already holds exactly that. The slot must have been acquired with at least n elements.
  template <class T>
  cudaError_t fill(int slot, std::size_t n, std::uint64_t seed, cudaStream_t stream) {
    Slot& s = slots_[slot];
    const std::string tag = std::string(dtype_name<T>()) + "/" + std::to_string(n) + "/" + std::to_string(seed);
    if (s.contents == tag) return cudaSuccess;
    cudaError_t status = fill_uniform(static_cast<T*>(s.data), n, seed, stream);
    if (status == cudaSuccess) status = cudaStreamSynchronize(stream);
    s.contents = status == cudaSuccess ? tag : std::string();
    return status;
  }

  /// Call after a benchmark wrote into slot `slot` (in place), so the next fill() rewrites it.
  void mark_modified(int slot) { slots_[slot].contents.clear(); }

  void release_all() {
    for (Slot& s : slots_) {
      if (s.data != nullptr) (void)cudaFree(s.data);
      s = Slot{};
    }
  }

 private:
  struct Slot {
    void* data = nullptr;
    std::size_t bytes = 0;
    std::string contents;  ///< "<dtype>/<n>/<seed>" of the last fill, empty when unknown
  };
  Slot slots_[kSlots];
};

// ---------------------------------------------------------------------------------------------
// The copy ceiling and the timed loop

/// Bytes per second (read + write, 2 * bytes per copy) of cudaMemcpyAsync device-to-device of
/// `bytes` from `source` to `destination`: the median of 15 samples after 3 warm-up samples, each
/// of `calls` back-to-back copies. Measured once per (bytes, calls, tag) in this process, so every
/// implementation of one size and dtype is compared with the same figure; the tag (the dtype)
/// makes each size/dtype group measure its own ceiling close in time to its benchmarks.
inline cudaError_t copy_ceiling(const void* source, void* destination, std::size_t bytes, int calls,
                                const std::string& tag, double& bytes_per_second) {
  static std::map<std::tuple<std::size_t, int, std::string>, double> cache;
  const auto key = std::make_tuple(bytes, calls, tag);
  const auto found = cache.find(key);
  if (found != cache.end()) {
    bytes_per_second = found->second;
    return cudaSuccess;
  }
  const cudaStream_t stream = bench_stream();
  const auto copy = [&] { return cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDeviceToDevice, stream); };
  std::vector<double> seconds;
  cudaError_t status = time_samples(stream, 3, calls, copy, seconds);
  if (status == cudaSuccess) status = time_samples(stream, 15, calls, copy, seconds);
  if (status != cudaSuccess) return status;
  bytes_per_second = 2.0 * static_cast<double>(bytes) / median(seconds);
  cache.emplace(key, bytes_per_second);
  return cudaSuccess;
}

/// What one benchmark moves and what it is compared with.
struct TimedCase {
  std::size_t bytes_per_call = 0;   ///< bytes read + bytes written by one launch
  const void* copy_source = nullptr;  ///< buffers for the ceiling copy (aligned, >= copy_bytes)
  void* copy_destination = nullptr;
  std::size_t copy_bytes = 0;       ///< bytes the ceiling copy moves (usually the bytes written)
  std::string ceiling_tag;          ///< usually the dtype name (see copy_ceiling)
  int calls_per_sample = 1;         ///< > 1: back-to-back launches per sample, time per launch
};

/// The body of every benchmark: copy ceiling (cached), warm-up, then one timed sample of
/// `calls_per_sample` launches per Google Benchmark iteration; the iteration time is the time per
/// launch. Reports bytes/s (SetBytesProcessed) and `x_copy`, the achieved bytes/s over the copy
/// ceiling's bytes/s, and `copy_GBps`, the ceiling itself.
template <class Launch>
void run_timed(benchmark::State& state, const TimedCase& c, Launch&& launch) {
  const cudaStream_t stream = bench_stream();
  double ceiling = 0.0;
  cudaError_t status = copy_ceiling(c.copy_source, c.copy_destination, c.copy_bytes, c.calls_per_sample,
                                    c.ceiling_tag, ceiling);
  if (status != cudaSuccess) return fail(state, "copy ceiling", status);

  // Warm-up: lazy module loading, caches, clocks. About 2 ms of work, at least 2 samples.
  const double sample_estimate = estimated_call_seconds(c.bytes_per_call) * c.calls_per_sample;
  const int warmup_samples = static_cast<int>(std::clamp(std::ceil(2e-3 / sample_estimate), 2.0, 50.0));
  std::vector<double> discarded;
  status = time_samples(stream, warmup_samples, c.calls_per_sample, launch, discarded);
  if (status != cudaSuccess) return fail(state, "warm-up launch", status);

  EventTimer& timer = EventTimer::shared();
  double total_seconds = 0.0;
  for (auto _ : state) {
    status = timer.start(stream);
    for (int k = 0; k < c.calls_per_sample && status == cudaSuccess; ++k) status = launch();
    if (status == cudaSuccess) status = timer.stop(stream);
    double seconds = 0.0;
    if (status == cudaSuccess) status = timer.elapsed_seconds(seconds);
    if (status != cudaSuccess) {
      fail(state, "timed launch", status);
      break;
    }
    const double per_call = seconds / c.calls_per_sample;
    state.SetIterationTime(per_call);
    total_seconds += per_call;
  }
  if (state.error_occurred() || total_seconds <= 0.0) return;

  const double calls = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(c.bytes_per_call));
  const double achieved = calls * static_cast<double>(c.bytes_per_call) / total_seconds;
  state.counters["x_copy"] = benchmark::Counter(achieved / ceiling);
  state.counters["copy_GBps"] = benchmark::Counter(ceiling / 1e9);
}

}  // namespace hardact_bench
