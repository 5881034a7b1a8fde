// Interleaved comparisons (--hardact_mode=interleaved, the default): for one case (operation,
// dtype, placement, alignment, size) every contender is timed rep by rep in turn, the order
// reversed on every other rep, in one process, so that clock, temperature and DRAM-page drift hit
// all contenders alike and no contender always runs right after the same one.
//
// Contenders: memcpy (cudaMemcpyAsync device-to-device moving the same number of bytes as the job,
// half read and half written), hardact (automatic), hardact_direct and hardact_staged (the two
// paths forced; full sweep only), cub (cub::DeviceTransform with the same policy).
//
// Each benchmark is one Google Benchmark iteration named
//   <op>/<dtype>/interleaved/<placement>/<alignment>/n:<n>[/calls:<k>]
// and reports, per contender C:
//   C_us        median time per call (microseconds)
//   C_GBps      job bytes / median time
//   C_x_copy    median over reps of (memcpy time / C time) taken in the same rep: the paired ratio
//   C_x_copy_fwd, C_x_copy_rev   the same median over forward-order and reverse-order reps only
//   C_x_copy_q1, C_x_copy_q3     quartiles of the paired ratio: the spread
// scripts/interleaved_tables.py turns the JSON into the tables of docs/PERFORMANCE.md.
// The machinery is in bench_interleaved.cuh; bench_fused.cu adds the fused epilogue rows (bias,
// folded BatchNorm, residual, squeeze-excitation gate) with the same counters and one more
// contender, unfused.
#include "bench_interleaved.cuh"

#include <hardact/hardact.cuh>

#include <cub/device/device_transform.cuh>
#include <cuda/std/tuple>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace hardact_bench {
namespace {

constexpr int kInSlot = 0;
constexpr int kOutSlot = 1;
constexpr int kSecondInSlot = 2;

/// The contender's launch for a one-input case from `in` to `out` (out may equal in).
template <class Op, class TIn, class TOut>
std::function<cudaError_t(Contender)> one_input_launcher(Op op, const TIn* in, TOut* out, std::size_t n,
                                                         const void* copy_source, void* copy_destination,
                                                         std::size_t copy_bytes) {
  return [=](Contender c) -> cudaError_t {
    const cudaStream_t stream = bench_stream();
    switch (c) {
      case Contender::memcpy:
        return cudaMemcpyAsync(copy_destination, copy_source, copy_bytes, cudaMemcpyDeviceToDevice, stream);
      case Contender::cub:
        if constexpr (std::is_same_v<TIn, TOut>) {
          return cub::DeviceTransform::Transform(in, out, n, op, stream);
        } else {
          return cub::DeviceTransform::Transform(in, out, n, RoundedOp<Op, TOut>{op}, stream);
        }
      default: return on_path(c, [&] { return hardact::transform(op, in, out, n, stream); });
    }
  };
}


// ---------------------------------------------------------------------------------------------
// Case families

/// Where the pointers sit: both aligned; both one element on (x + 1 -> y + 1); the input one
/// element on and the output aligned (x + 1 -> y, misaligned relative to each other).
enum class Offsets { aligned, both_plus_one, relative };

const char* offsets_name(Offsets o) {
  switch (o) {
    case Offsets::aligned: return "aligned";
    case Offsets::both_plus_one: return "misaligned";
    case Offsets::relative: return "relatively_misaligned";
  }
  return "unknown";
}

/// One-input activation from TIn to TOut (computed in float for mixed types, rounded once); in
/// place or not (in place only when the types are the same). Converting cases are named
/// <op>/<in>_to_<out>/... and compared with a copy moving the same bytes.
template <class TIn, class TOut = TIn, class Op>
void register_one_input(const Options& o, const std::string& op_name, Op op, std::size_t n, bool in_place,
                        Offsets offsets, int calls) {
  constexpr bool kSameType = std::is_same_v<TIn, TOut>;
  if (in_place && (offsets == Offsets::relative || !kSameType)) return;
  const std::string dtype =
      kSameType ? std::string(dtype_name<TIn>()) : std::string(dtype_name<TIn>()) + "_to_" + dtype_name<TOut>();
  const std::string name = op_name + "/" + dtype + "/interleaved/" + placement_name(in_place) + "/" +
                           offsets_name(offsets) + "/n:" + std::to_string(n) +
                           (calls > 1 ? "/calls:" + std::to_string(calls) : "");
  const std::size_t job = n * (sizeof(TIn) + sizeof(TOut));
  const std::size_t in_bytes = std::max((n + 1) * sizeof(TIn), job / 2);
  const std::size_t out_bytes = std::max((n + 1) * sizeof(TOut), job / 2);
  if (!fits_memory_budget(o, in_bytes + out_bytes, name)) return;
  const int reps = o.interleaved_reps;
  const std::vector<Contender> contenders = contenders_for(o);
  auto* b = benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
    void* input = nullptr;
    void* output = nullptr;
    cudaError_t status = prepared_slot<TIn>(kInSlot, in_bytes, 0x5eed1001, &input);
    if (status == cudaSuccess) status = prepared_slot<TOut>(kOutSlot, out_bytes, 0x5eed1002, &output);
    if (status != cudaSuccess) return fail(state, "preparing buffers", status);
    const std::size_t in_offset = offsets == Offsets::aligned ? 0 : 1;
    const std::size_t out_offset = offsets == Offsets::both_plus_one ? 1 : 0;
    const TIn* in = static_cast<const TIn*>(input) + in_offset;
    TOut* out = in_place ? static_cast<TOut*>(input) + in_offset : static_cast<TOut*>(output) + out_offset;
    InterleavedCase c;
    c.job_bytes = job;
    c.calls_per_sample = calls;
    c.contenders = contenders;
    c.launch = one_input_launcher(op, in, out, n, input, output, job / 2);
    c.modified_slot = in_place ? kInSlot : -1;
    run_interleaved(state, c, reps);
  });
  b->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(1);
}

/// HardSigmoidBackward (grad, x) -> dx, out of place.
template <class T>
void register_backward(const Options& o, std::size_t n) {
  const std::string name = std::string("hardsigmoid_backward/") + dtype_name<T>() +
                           "/interleaved/out_of_place/aligned/n:" + std::to_string(n);
  const std::size_t job = 3 * n * sizeof(T);
  const std::size_t buffer = std::max(n * sizeof(T), job / 2);
  if (!fits_memory_budget(o, 3 * buffer, name)) return;
  const int reps = o.interleaved_reps;
  const std::vector<Contender> contenders = contenders_for(o);
  auto* b = benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
    void* grad = nullptr;
    void* x = nullptr;
    void* dx = nullptr;
    cudaError_t status = prepared_slot<T>(kInSlot, buffer, 0x5eed3001, &grad);
    if (status == cudaSuccess) status = prepared_slot<T>(kSecondInSlot, buffer, 0x5eed3002, &x);
    if (status == cudaSuccess) status = prepared_slot<T>(kOutSlot, buffer, 0x5eed3003, &dx);
    if (status != cudaSuccess) return fail(state, "preparing buffers", status);
    const T* g = static_cast<const T*>(grad);
    const T* v = static_cast<const T*>(x);
    T* out = static_cast<T*>(dx);
    InterleavedCase c;
    c.job_bytes = job;
    c.contenders = contenders;
    c.launch = [=](Contender k) -> cudaError_t {
      const cudaStream_t stream = bench_stream();
      switch (k) {
        case Contender::memcpy: return cudaMemcpyAsync(dx, grad, job / 2, cudaMemcpyDeviceToDevice, stream);
        case Contender::cub:
          return cub::DeviceTransform::Transform(cuda::std::make_tuple(g, v), out, n,
                                                 RoundedOp<hardact::HardSigmoidBackward, T>{}, stream);
        default:
          return on_path(k, [&] { return hardact::transform(hardact::HardSigmoidBackward{}, g, v, out, n, stream); });
      }
    };
    run_interleaved(state, c, reps);
  });
  b->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(1);
}

/// Elements of T that make the reference shape's bytes (4096 x 393216 floats).
template <class T>
std::size_t reference_elements() {
  return kReferenceElements * sizeof(float) / sizeof(T);
}

template <class T, class Op>
void register_placements(const Options& o, const std::string& op_name, const Op& op, std::size_t n, int calls) {
  for (const Offsets offsets : {Offsets::aligned, Offsets::both_plus_one, Offsets::relative}) {
    register_one_input<T>(o, op_name, op, n, false, offsets, calls);
  }
  register_one_input<T>(o, op_name, op, n, true, Offsets::aligned, calls);
}

/// HardSigmoid at every power of two from 2^12 to 2^32 elements, every placement; and the
/// launch-bound sizes for the types the reference rows do not time per call.
template <class T>
void register_dtype_sweep(const Options& o) {
  for (int log2 = 12; log2 <= 32; ++log2) {
    register_placements<T>(o, "hardsigmoid", hardact::HardSigmoid{}, std::size_t(1) << log2, 1);
  }
  if constexpr (!std::is_same_v<T, float>) {
    for (int log2 = 10; log2 <= 20; log2 += 2) {
      register_one_input<T>(o, "hardsigmoid", hardact::HardSigmoid{}, std::size_t(1) << log2, false, Offsets::aligned,
                            kLaunchLoopCalls);
    }
  }
}

void register_interleaved_benchmarks(const Options& o) {
  if (o.mode != Mode::interleaved) return;
  // The reference shape: every row of the comparison table.
  register_placements<float>(o, "hardsigmoid", hardact::HardSigmoid{}, kReferenceElements, 1);
  register_placements<float>(o, "hardtanh", hardact::HardTanh{-1.0, 1.0}, kReferenceElements, 1);
  register_placements<__nv_bfloat16>(o, "hardsigmoid", hardact::HardSigmoid{}, reference_elements<__nv_bfloat16>(), 1);
  register_placements<__half>(o, "hardsigmoid", hardact::HardSigmoid{}, reference_elements<__half>(), 1);
  register_placements<double>(o, "hardsigmoid", hardact::HardSigmoid{}, reference_elements<double>(), 1);
  register_backward<float>(o, kReferenceElements);
  register_backward<__nv_bfloat16>(o, reference_elements<__nv_bfloat16>());
  // float -> bfloat16 (narrowing) and bfloat16 -> float (widening), at the reference element count
  register_one_input<float, __nv_bfloat16>(o, "hardsigmoid", hardact::HardSigmoid{}, kReferenceElements, false,
                                           Offsets::aligned, 1);
  register_one_input<__nv_bfloat16, float>(o, "hardsigmoid", hardact::HardSigmoid{}, kReferenceElements, false,
                                           Offsets::aligned, 1);
  for (int log2 = 10; log2 <= 20; log2 += 2) {
    register_one_input<float>(o, "hardsigmoid", hardact::HardSigmoid{}, std::size_t(1) << log2, false,
                              Offsets::aligned, kLaunchLoopCalls);
  }
  if (o.sweep == Sweep::full) {
    register_dtype_sweep<float>(o);
    register_dtype_sweep<__half>(o);
    register_dtype_sweep<__nv_bfloat16>(o);
    register_dtype_sweep<double>(o);
  }
}

}  // namespace

HARDACT_BENCH_REGISTRAR("05_interleaved", register_interleaved_benchmarks);

}  // namespace hardact_bench
