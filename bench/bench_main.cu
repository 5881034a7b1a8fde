// main() of hardact_bench: parses the --hardact_* flags, refuses to run without a GPU (listing
// with --benchmark_list_tests still works), registers the benchmarks and runs them.
#include "bench_common.cuh"

#include <hardact/version.cuh>

#include <benchmark/benchmark.h>
#include <cub/version.cuh>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void print_usage() {
  std::printf(
      "hardact_bench options (besides Google Benchmark's --benchmark_* flags):\n"
      "  --hardact_mode=interleaved (default) each case times its contenders (memcpy, hardact, cub; in\n"
      "                             the full sweep also hardact's two paths forced) rep by rep in turn,\n"
      "                             alternating the order; medians, per-order medians and quartiles\n"
      "  --hardact_mode=separate    one Google Benchmark per implementation (also thrust and\n"
      "                             hand-written kernels), timed one after another\n"
      "  --hardact_sweep=reference  the reference shape 4096x393216 (default); interleaved: float,\n"
      "                             half, bfloat16, double, two-input and float->bfloat16 rows, and\n"
      "                             the fused epilogues (fused_*: bias, folded BatchNorm, residual,\n"
      "                             SE gate with the activation; float, bfloat16; also a mid size)\n"
      "  --hardact_sweep=full       float, half, bfloat16, double; 2^12..2^32 elements and the\n"
      "                             reference shape; small sizes also as time per call in loops of %d\n"
      "  --hardact_reps=N           interleaved reps per contender (default %d)\n"
      "  --hardact_repetitions=N    separate mode: repetitions per benchmark; their median is reported (default %d)\n"
      "  --hardact_max_gb=G         device memory a case may use, in GB (default %.0f)\n"
      "The environment variable HARDACT_BENCH_SWEEP=full|reference sets the sweep as well.\n"
      "Each benchmark fixes its iterations and repetitions, so --benchmark_repetitions and\n"
      "--benchmark_min_time have no effect; use --hardact_repetitions.\n"
      "Names: <op>/<dtype>/<implementation>/<placement>/<alignment>/n:<elements>[/calls:%d]\n"
      "  e.g. --benchmark_filter='^hardsigmoid/half/' or '/misaligned/' or '^fused_'\n"
      "  (fused rows: <op>/<dtype>/interleaved/out_of_place/aligned/n:<elements>/shape:<dims>)\n",
      hardact_bench::kLaunchLoopCalls, hardact_bench::Options{}.interleaved_reps, hardact_bench::Options{}.repetitions,
      hardact_bench::Options{}.max_device_bytes / 1e9, hardact_bench::kLaunchLoopCalls);
}

bool parse_sweep(const std::string& value, hardact_bench::Sweep& sweep) {
  if (value == "full") {
    sweep = hardact_bench::Sweep::full;
    return true;
  }
  if (value == "reference" || value == "default") {
    sweep = hardact_bench::Sweep::reference;
    return true;
  }
  return false;
}

/// Reads the --hardact_* flags and removes them from argv, so that benchmark::Initialize does
/// not report them as unrecognised. Returns false with a message on a bad value.
bool parse_hardact_flags(int& argc, char** argv, hardact_bench::Options& o, std::string& error) {
  if (const char* env = std::getenv("HARDACT_BENCH_SWEEP")) {
    if (!parse_sweep(env, o.sweep)) {
      error = std::string("HARDACT_BENCH_SWEEP must be full or reference, not '") + env + "'";
      return false;
    }
  }
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value_of = [&](const char* prefix) -> const char* {
      const std::size_t length = std::strlen(prefix);
      return arg.compare(0, length, prefix) == 0 ? argv[i] + length : nullptr;
    };
    if (const char* v = value_of("--hardact_sweep=")) {
      if (!parse_sweep(v, o.sweep)) {
        error = std::string("--hardact_sweep must be full or reference, not '") + v + "'";
        return false;
      }
    } else if (const char* v = value_of("--hardact_mode=")) {
      const std::string mode = v;
      if (mode == "interleaved") {
        o.mode = hardact_bench::Mode::interleaved;
      } else if (mode == "separate") {
        o.mode = hardact_bench::Mode::separate;
      } else {
        error = "--hardact_mode must be interleaved or separate, not '" + mode + "'";
        return false;
      }
    } else if (const char* v = value_of("--hardact_reps=")) {
      o.interleaved_reps = std::atoi(v);
      if (o.interleaved_reps < 2) {
        error = "--hardact_reps must be an integer of at least 2 (one rep in each order)";
        return false;
      }
    } else if (const char* v = value_of("--hardact_repetitions=")) {
      o.repetitions = std::atoi(v);
      if (o.repetitions < 1) {
        error = "--hardact_repetitions must be a positive integer";
        return false;
      }
    } else if (const char* v = value_of("--hardact_max_gb=")) {
      o.max_device_bytes = std::atof(v) * 1e9;
      if (!(o.max_device_bytes > 0)) {
        error = "--hardact_max_gb must be a positive number";
        return false;
      }
    } else if (arg.compare(0, 10, "--hardact_") == 0) {
      error = "unknown option " + arg + " (see --help)";
      return false;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  argv[argc] = nullptr;
  return true;
}

/// True when only a listing was asked for (--benchmark_list_tests[=true]), which needs no GPU.
bool only_listing(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--benchmark_list_tests" || arg == "--benchmark_list_tests=true" || arg == "--benchmark_list_tests=1") {
      return true;
    }
  }
  return false;
}

/// Why the benchmarks cannot run here, or an empty string when a CUDA device is usable.
std::string no_device_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(status) + ")";
  }
  if (count == 0) return "no CUDA device (cudaGetDeviceCount returned 0)";
  return {};
}

/// Records the GPU and software versions in the benchmark context (console header and JSON).
void describe_device(hardact_bench::Options& o) {
  int device = 0, runtime = 0, driver = 0;
  cudaDeviceProp properties{};
  (void)cudaGetDevice(&device);
  (void)cudaGetDeviceProperties(&properties, device);
  (void)cudaRuntimeGetVersion(&runtime);
  (void)cudaDriverGetVersion(&driver);
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
    // Leave room for the CUDA context, CUB's temporary storage and fragmentation.
    const double usable = 0.9 * static_cast<double>(free_bytes);
    if (usable < o.max_device_bytes) o.max_device_bytes = usable;
  }
  benchmark::AddCustomContext("gpu", properties.name);
  benchmark::AddCustomContext("gpu_sms", std::to_string(properties.multiProcessorCount));
  benchmark::AddCustomContext("gpu_memory_gb", std::to_string(static_cast<double>(total_bytes) / 1e9));
  benchmark::AddCustomContext("cuda_runtime", std::to_string(runtime));
  benchmark::AddCustomContext("cuda_driver", std::to_string(driver));
  benchmark::AddCustomContext("cub_version", std::to_string(CUB_VERSION));
  benchmark::AddCustomContext("hardact_version", std::to_string(HARDACT_VERSION));
  benchmark::AddCustomContext("hardact_sweep", o.sweep == hardact_bench::Sweep::full ? "full" : "reference");
  benchmark::AddCustomContext("hardact_mode", o.mode == hardact_bench::Mode::interleaved ? "interleaved" : "separate");
  benchmark::AddCustomContext("hardact_repetitions", std::to_string(o.repetitions));
  benchmark::AddCustomContext("hardact_reps", std::to_string(o.interleaved_reps));
}

}  // namespace

int main(int argc, char** argv) {
  hardact_bench::Options& o = hardact_bench::mutable_options();
  std::string error;
  if (!parse_hardact_flags(argc, argv, o, error)) {
    std::fprintf(stderr, "hardact_bench: %s\n", error.c_str());
    return 1;
  }
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) print_usage();
  }
  const bool listing = only_listing(argc, argv);

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  if (!listing) {
    const std::string reason = no_device_reason();
    if (!reason.empty()) {
      std::fprintf(stderr,
                   "hardact_bench: cannot run: %s.\n"
                   "It times GPU kernels and needs an NVIDIA GPU; --benchmark_list_tests works without one.\n",
                   reason.c_str());
      return 1;
    }
    describe_device(o);
  }

  hardact_bench::run_registrars(o);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  hardact_bench::DeviceBufferPool::instance().release_all();
  if (hardact_bench::any_benchmark_failed()) {
    std::fprintf(stderr, "hardact_bench: some benchmarks failed (see their error_message)\n");
    return 1;
  }
  return 0;
}
