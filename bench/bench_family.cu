// The activation family against what one would otherwise run:
//   - backward passes through the two-input launcher vs cub::DeviceTransform with a tuple of inputs:
//       <op>_backward/<dtype>/{memcpy,hardact_auto,cub}/<placement>/<alignment>/n:<n>
//     (in place = the gradient is overwritten, as autograd does for in-place backward ops)
//   - float -> bfloat16 HardSigmoid written in one pass vs PyTorch's two kernels (activation in
//     float, then a cast kernel):
//       hardsigmoid/float_to_bfloat16/{memcpy,hardact_auto,two_kernels}/out_of_place/aligned/n:<n>
//     (compare with hardsigmoid/float/hardact_auto/... from bench_activations.cu for the 1.3x target)
//   - a 3-step chain (scale -> clamp -> offset, and scale -> clamp -> cast to bfloat16) fused with
//     hardact::chain vs three launches:
//       chain3/{float,float_to_bfloat16}/{memcpy,hardact_chain,three_launches}/out_of_place/aligned/n:<n>
//
// Every implementation of a case is measured against the bytes the case must move (each input read
// once, the output written once): bytes_per_second and x_copy use those bytes, so x_copy is the
// fraction of the copy ceiling reached for the job, whatever extra traffic an implementation causes.
// The ceiling is cudaMemcpyAsync moving the same number of bytes (half read, half written). The
// counter moved_bytes is what the implementation actually reads and writes per call.
#include "bench_common.cuh"

#include <hardact/hardact.cuh>

#include <cub/device/device_transform.cuh>
#include <cuda/std/tuple>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace hardact_bench {
namespace {

// Slots of the DeviceBufferPool: the inputs (both inputs side by side), the output, a float
// intermediate for the unfused baselines.
constexpr int kInputsSlot = 0;
constexpr int kOutputSlot = 1;
constexpr int kTemporarySlot = 2;
constexpr std::uint64_t kInputsSeed = 0x5eed0f01;
constexpr std::uint64_t kOutputSeed = 0x5eed0f02;

/// The cast kernel of PyTorch's `.to(torch.bfloat16)`: round to nearest-even, one element at a time.
struct CastToBfloat16 {
  __device__ __nv_bfloat16 operator()(float x) const { return __float2bfloat16_rn(x); }
};

/// What a case needs from the pool, and the ceiling copy that goes with it.
struct Buffers {
  void* inputs = nullptr;
  void* output = nullptr;
  void* temporary = nullptr;
};

/// Acquires and fills the slots: `input_elements` of TIn (random, [-6, 6)), an output slot of at
/// least `output_bytes` (also random, so that no benchmark writes to never-touched pages), and
/// `temporary_bytes` of scratch (0: none).
template <class TIn>
cudaError_t prepare(std::size_t input_elements, std::size_t output_bytes, std::size_t temporary_bytes,
                    Buffers& buffers) {
  DeviceBufferPool& pool = DeviceBufferPool::instance();
  const cudaStream_t stream = bench_stream();
  cudaError_t status = pool.acquire(kInputsSlot, input_elements * sizeof(TIn), &buffers.inputs);
  if (status == cudaSuccess) status = pool.acquire(kOutputSlot, output_bytes, &buffers.output);
  if (status == cudaSuccess && temporary_bytes > 0) {
    status = pool.acquire(kTemporarySlot, temporary_bytes, &buffers.temporary);
  }
  if (status == cudaSuccess) status = pool.fill<TIn>(kInputsSlot, input_elements, kInputsSeed, stream);
  if (status == cudaSuccess) status = pool.fill<TIn>(kOutputSlot, output_bytes / sizeof(TIn), kOutputSeed, stream);
  return status;
}

void report_moved_bytes(benchmark::State& state, std::size_t moved_bytes_per_call) {
  if (state.error_occurred()) return;
  state.counters["moved_bytes"] = benchmark::Counter(static_cast<double>(moved_bytes_per_call));
}

/// Elements from grad to x in the inputs slot: n rounded up to 512 bytes, so that grad and x (and
/// their misaligned variants, both one element on) are aligned alike.
template <class T>
std::size_t input_stride(std::size_t n) {
  constexpr std::size_t kGranule = 512 / sizeof(T);
  return (n + 1 + kGranule - 1) / kGranule * kGranule;
}

// ---------------------------------------------------------------------------------------------
// Backward: dx = op(grad, x)

enum class BackwardImpl { memcpy, hardact_auto, cub };

const char* name_of(BackwardImpl impl) {
  switch (impl) {
    case BackwardImpl::memcpy:
      return "memcpy";
    case BackwardImpl::hardact_auto:
      return "hardact_auto";
    case BackwardImpl::cub:
      return "cub";
  }
  return "unknown";
}

struct HardSigmoidBackwardCase {
  static constexpr const char* name = "hardsigmoid_backward";
  static hardact::HardSigmoidBackward policy() { return {}; }
};
struct HardSwishBackwardCase {
  static constexpr const char* name = "hardswish_backward";
  static hardact::HardSwishBackward policy() { return {}; }
};
struct HardTanhBackwardCase {  // with ReLU6's bounds
  static constexpr const char* name = "hardtanh_backward";
  static hardact::HardTanhBackward policy() { return {0.0, 6.0}; }
};

template <class Case, class T>
void run_backward(benchmark::State& state, BackwardImpl impl, std::size_t n, bool in_place, bool misaligned) {
  // grad and x in one slot, input_stride apart; misaligned: every pointer one element on.
  const std::size_t needed_bytes = 3 * n * sizeof(T);
  const std::size_t stride = input_stride<T>(n);
  Buffers buffers;
  cudaError_t status = prepare<T>(2 * stride, std::max((n + 1) * sizeof(T), needed_bytes / 2), 0, buffers);
  if (status != cudaSuccess) return fail(state, "preparing buffers", status);
  const std::size_t offset = misaligned ? 1 : 0;
  T* const grad = static_cast<T*>(buffers.inputs) + offset;
  const T* const x = static_cast<T*>(buffers.inputs) + stride + offset;
  T* const out = in_place ? grad : static_cast<T*>(buffers.output) + offset;

  TimedCase timed;
  timed.bytes_per_call = needed_bytes;
  timed.copy_source = buffers.inputs;
  timed.copy_destination = buffers.output;
  timed.copy_bytes = needed_bytes / 2;
  timed.ceiling_tag = std::string(dtype_name<T>()) + "/backward";
  const cudaStream_t stream = bench_stream();
  const auto op = Case::policy();
  run_timed(state, timed, [&]() -> cudaError_t {
    switch (impl) {
      case BackwardImpl::memcpy:
        return cudaMemcpyAsync(buffers.output, buffers.inputs, needed_bytes / 2, cudaMemcpyDeviceToDevice, stream);
      case BackwardImpl::hardact_auto:
        return hardact::transform(op, static_cast<const T*>(grad), x, out, n, stream);
      case BackwardImpl::cub:
        return cub::DeviceTransform::Transform(cuda::std::make_tuple(static_cast<const T*>(grad), x), out, n, op,
                                               stream);
    }
    return cudaErrorInvalidValue;
  });
  report_moved_bytes(state, needed_bytes);
  if (in_place) DeviceBufferPool::instance().mark_modified(kInputsSlot);
  DeviceBufferPool::instance().mark_modified(kOutputSlot);
}

template <class Case, class T>
void register_backward(const Options& o, std::size_t n) {
  for (const bool in_place : {false, true}) {
    for (const bool misaligned : {false, true}) {
      for (const BackwardImpl impl : {BackwardImpl::memcpy, BackwardImpl::hardact_auto, BackwardImpl::cub}) {
        if (impl == BackwardImpl::memcpy && (in_place || misaligned)) continue;  // the ceiling, once
        const std::string name = benchmark_name(Case::name, dtype_name<T>(), name_of(impl), in_place, misaligned, n, 1);
        auto* b = benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
          run_backward<Case, T>(state, impl, n, in_place, misaligned);
        });
        configure(b, o, 3 * n * sizeof(T), 1);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// float -> bfloat16 HardSigmoid, and 3-step chains

enum class FusedImpl { memcpy, hardact_auto, hardact_chain, two_kernels, three_launches };

const char* name_of(FusedImpl impl) {
  switch (impl) {
    case FusedImpl::memcpy:
      return "memcpy";
    case FusedImpl::hardact_auto:
      return "hardact_auto";
    case FusedImpl::hardact_chain:
      return "hardact_chain";
    case FusedImpl::two_kernels:
      return "two_kernels";
    case FusedImpl::three_launches:
      return "three_launches";
  }
  return "unknown";
}

/// The chain of the chain3 cases: scale, clamp, offset (offset left out when the output is bfloat16,
/// where the third step is the cast).
inline hardact::Scale chain_scale() { return {2.0}; }
inline hardact::HardTanh chain_clamp() { return {-1.0, 1.0}; }
inline hardact::Offset chain_offset() { return {0.5}; }

/// One float -> TOut case: `op_name` hardsigmoid or chain3.
template <class TOut>
void run_fused(benchmark::State& state, FusedImpl impl, std::size_t n) {
  constexpr bool kToBfloat16 = std::is_same_v<TOut, __nv_bfloat16>;
  const std::size_t needed_bytes = n * (sizeof(float) + sizeof(TOut));
  const bool needs_temporary = impl == FusedImpl::two_kernels || impl == FusedImpl::three_launches;
  Buffers buffers;
  cudaError_t status =
      prepare<float>(n, std::max(n * sizeof(TOut), needed_bytes / 2), needs_temporary ? n * sizeof(float) : 0, buffers);
  if (status != cudaSuccess) return fail(state, "preparing buffers", status);
  const float* const in = static_cast<const float*>(buffers.inputs);
  TOut* const out = static_cast<TOut*>(buffers.output);
  float* const temporary = static_cast<float*>(buffers.temporary);

  std::size_t moved = needed_bytes;
  if (impl == FusedImpl::two_kernels) moved = n * (2 * sizeof(float) + sizeof(float) + sizeof(TOut));
  if (impl == FusedImpl::three_launches) moved = n * (5 * sizeof(float) + sizeof(TOut));

  TimedCase timed;
  timed.bytes_per_call = needed_bytes;
  timed.copy_source = buffers.inputs;
  timed.copy_destination = buffers.output;
  timed.copy_bytes = needed_bytes / 2;
  timed.ceiling_tag = std::string("float_to_") + dtype_name<TOut>();
  const cudaStream_t stream = bench_stream();

  run_timed(state, timed, [&]() -> cudaError_t {
    switch (impl) {
      case FusedImpl::memcpy:
        return cudaMemcpyAsync(buffers.output, buffers.inputs, needed_bytes / 2, cudaMemcpyDeviceToDevice, stream);
      case FusedImpl::hardact_auto:
        return hardact::transform(hardact::HardSigmoid{}, in, out, n, stream);
      case FusedImpl::hardact_chain:
        if constexpr (kToBfloat16) {
          return hardact::transform(hardact::chain(chain_scale(), chain_clamp()), in, out, n, stream);
        } else {
          return hardact::transform(hardact::chain(chain_scale(), chain_clamp(), chain_offset()), in, out, n, stream);
        }
      case FusedImpl::two_kernels: {
        // PyTorch: F.hardsigmoid(x) in float, then .to(torch.bfloat16).
        cudaError_t s = hardact::transform(hardact::HardSigmoid{}, in, temporary, n, stream);
        if (s != cudaSuccess) return s;
        return cub::DeviceTransform::Transform(static_cast<const float*>(temporary), out, n, CastToBfloat16{}, stream);
      }
      case FusedImpl::three_launches: {
        cudaError_t s = hardact::transform(chain_scale(), in, temporary, n, stream);
        if (s == cudaSuccess)
          s = hardact::transform(chain_clamp(), static_cast<const float*>(temporary), temporary, n, stream);
        if (s != cudaSuccess) return s;
        if constexpr (kToBfloat16) {
          return cub::DeviceTransform::Transform(static_cast<const float*>(temporary), out, n, CastToBfloat16{},
                                                 stream);
        } else {
          return hardact::transform(chain_offset(), static_cast<const float*>(temporary), out, n, stream);
        }
      }
    }
    return cudaErrorInvalidValue;
  });
  report_moved_bytes(state, moved);
  DeviceBufferPool::instance().mark_modified(kOutputSlot);
}

template <class TOut>
std::string float_to_name() {
  return std::is_same_v<TOut, float> ? std::string("float") : std::string("float_to_") + dtype_name<TOut>();
}

template <class TOut>
void register_fused(const Options& o, const std::string& op_name, std::size_t n, std::vector<FusedImpl> impls) {
  for (const FusedImpl impl : impls) {
    const std::string name = benchmark_name(op_name, float_to_name<TOut>(), name_of(impl), false, false, n, 1);
    auto* b =
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) { run_fused<TOut>(state, impl, n); });
    configure(b, o, n * (sizeof(float) + sizeof(TOut)), 1);
  }
}

// ---------------------------------------------------------------------------------------------
// Registration

template <class T>
void register_backward_dtype(const Options& o, std::size_t n, bool with_hardtanh) {
  // grad + x side by side, output (or the ceiling's destination) of 1.5 n elements.
  const std::size_t bytes = 2 * input_stride<T>(n) * sizeof(T) + 3 * n * sizeof(T) / 2 + sizeof(T);
  if (!fits_memory_budget(o, bytes, std::string("backward ") + dtype_name<T>() + " n=" + std::to_string(n))) return;
  register_backward<HardSigmoidBackwardCase, T>(o, n);
  register_backward<HardSwishBackwardCase, T>(o, n);
  if (with_hardtanh) register_backward<HardTanhBackwardCase, T>(o, n);
}

/// Reference sweep: float at the reference shape. Full sweep: every size for float; half,
/// bfloat16 and double from 2^20 elements on (smaller sizes behave like float's), without
/// hardtanh_backward (a comparison like hardsigmoid_backward's).
void register_family_benchmarks(const Options& o) {
  if (o.mode != Mode::separate) return;
  for (const std::size_t n : bandwidth_sizes(o)) {
    register_backward_dtype<float>(o, n, true);
    if (o.sweep == Sweep::full && n >= (std::size_t{1} << 20)) {
      register_backward_dtype<__half>(o, n, false);
      register_backward_dtype<__nv_bfloat16>(o, n, false);
      register_backward_dtype<double>(o, n, false);
    }
    // float input, bfloat16 output, a float intermediate and a ceiling destination of 4 bytes/element.
    const std::size_t fused_bytes = n * (4 + 4 + 4) + 64;
    if (!fits_memory_budget(o, fused_bytes, "fused cases n=" + std::to_string(n))) continue;
    register_fused<__nv_bfloat16>(o, "hardsigmoid", n,
                                  {FusedImpl::memcpy, FusedImpl::hardact_auto, FusedImpl::two_kernels});
    register_fused<float>(o, "chain3", n, {FusedImpl::memcpy, FusedImpl::hardact_chain, FusedImpl::three_launches});
    register_fused<__nv_bfloat16>(o, "chain3", n,
                                  {FusedImpl::memcpy, FusedImpl::hardact_chain, FusedImpl::three_launches});
  }
}

}  // namespace

HARDACT_BENCH_REGISTRAR("20_family", register_family_benchmarks);

}  // namespace hardact_bench
