// Fused epilogues, interleaved (--hardact_mode=interleaved, the default; the machinery and counters
// of bench_interleaved.cu): an activation fused with the elementwise step before it, hardact's
// launcher taking the bias, scale, shift or gate as hardact::Broadcast operands (operand.cuh,
// policy/fused.cuh), against the same math in cub::DeviceTransform and against the two launches
// that eager PyTorch or hand-written CUDA runs. float and bfloat16, the same element count for both.
//
// Rows, named <op>/<dtype>/interleaved/out_of_place/aligned/n:<n>/shape:<dims>:
//   fused_bias_hardswish_last_dim    bias_activation(HardSwish{}), op(x, bias): the bias over the last
//                                    dimension of a row-major [rows, columns] array,
//                                    per_channel(bias, columns)                  shape:<rows>x<columns>
//   fused_bias_hardswish_nchw        the same, a per-channel bias over NCHW,
//                                    per_channel(bias, C, H * W)                 shape:<N>x<C>x<H>x<W>
//   fused_batchnorm_hardswish_nchw   scale_shift_activation(HardSwish{}), op(x, scale, shift): a folded
//                                    inference BatchNorm, per_channel(scale / shift, C, H * W)
//   fused_batchnorm_hardswish_nhwc   the same channels-last, per_channel(scale / shift, C)
//                                                                                shape:<N>x<H>x<W>x<C>
//   fused_residual_hardswish         residual_activation(HardSwish{}), op(x, residual): a full-length
//                                    residual (two full-length inputs)           shape:<rows>x<columns>
//   fused_hardsigmoid_gate_nchw      HardSigmoidGate, op(x, gate) = x * hardsigmoid(gate): a
//                                    squeeze-excitation gate per (n, c), per_channel(gate, N * C, H * W)
//   fused_hardsigmoid_gate_nhwc      the same channels-last, per_sample_channel(gate, C, H * W)
//                                                                                shape:<N>x<H>x<W>x<C>
// Sizes: 4096 x 393216 for the row-major rows (the reference shape); N x 96 x 56 x 56 for the NCHW
// and NHWC rows, where 56 * 56 = 2^6 * 7^2 does not divide 4096 * 393216 = 3 * 2^29, so N is the
// closest batch, 5350: 1,610,649,600 elements, 36,864 (0.002%) more than the reference (the n: and
// shape: segments say so). One mid size as well: 4096 x 3072 and 32 x 96 x 56 x 56.
//
// Contenders (counters as in bench_interleaved.cu, C_us, C_GBps, C_x_copy, ...):
//   memcpy   cudaMemcpyAsync device-to-device moving the fused job's bytes (each full-length input
//            read once and the output written once; the broadcast vectors, at most 2 MB, are not
//            counted), half read and half written
//   hardact  hardact::transform with the Broadcast operands (automatic path; in the full sweep also
//            hardact_direct and hardact_staged, the paths forced)
//   cub      cub::DeviceTransform::Transform with the same policy (rounded as hardact rounds), each
//            broadcast operand a thrust::transform_iterator over a counting iterator returning
//            values[(i / inner) % period] (values[i % C + C * (i / span)] for the channels-last
//            gate). Its divisions are the multiply-and-shift of hardact::detail::FastDivmod,
//            prepared on the host, as hardact's are: a 64-bit `/` per element is a long software
//            sequence on the GPU and would time that, not CUB.
//   unfused  two launches through hardact::transform, as eager code runs them: the add (bias,
//            residual) or the scale-shift into the output, then the activation in place on it
//            (hardact::transform(HardSwish{}, y, y, n)); for the gate, hardsigmoid on the N * C gate
//            vector, then x times the gate broadcast. It moves more bytes than the fused job, but its
//            x_copy, like every contender's, is against the fused job's memcpy: what fusing gains.
//
// Checked once per case before timing: hardact's and cub's outputs are compared bit for bit on the
// device; counter cub_mismatches = elements that differ (0 expected). For float also
// unfused_mismatches (the fused policies are documented to equal the separate float steps bit for
// bit, 0 expected); bfloat16's unfused rounds the intermediate to bfloat16, as eager PyTorch does,
// and is not compared. A nonzero count is also printed to stderr.
#include "bench_interleaved.cuh"

#include <hardact/hardact.cuh>

#include <cub/device/device_transform.cuh>
#include <cuda/std/tuple>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

namespace hardact_bench {
namespace {

// Slots of the DeviceBufferPool: x (also the copy's source), the output (also the copy's
// destination), the residual, and hardact's reference output kept beside cub's for the check.
constexpr int kXSlot = 0;
constexpr int kOutSlot = 1;
constexpr int kResidualSlot = 2;
constexpr int kCheckSlot = 3;

constexpr std::uint64_t kXSeed = 0x5eed5001;
constexpr std::uint64_t kOutSeed = 0x5eed5002;
constexpr std::uint64_t kResidualSeed = 0x5eed5003;
constexpr std::uint64_t kFirstVectorSeed = 0x5eed5004;
constexpr std::uint64_t kSecondVectorSeed = 0x5eed5005;

/// The NCHW / NHWC shapes: 96 channels of 56 x 56.
constexpr std::size_t kChannels = 96;
constexpr std::size_t kHeight = 56;
constexpr std::size_t kWidth = 56;
constexpr std::size_t kImageElements = kChannels * kHeight * kWidth;
/// The batch whose N x 96 x 56 x 56 is closest to the reference element count (5350).
constexpr std::size_t kLargeBatch = (kReferenceElements + kImageElements / 2) / kImageElements;
static_assert(kLargeBatch == 5350, "the closest batch to 4096 x 393216 elements");
/// The mid size: a batch of 32 images, and a row-major 4096 x 3072.
constexpr std::size_t kMidBatch = 32;
constexpr std::size_t kMidColumns = 3072;

enum class Form { bias, batchnorm, residual, gate };

/// One case's geometry: what the row is called, how many elements, and how its vectors broadcast.
struct FusedShape {
  Form form = Form::bias;
  std::string op;             ///< the row's first segment
  std::string dims;           ///< the shape: segment, e.g. 5350x96x56x56
  std::size_t n = 0;          ///< elements of x, the residual and the output
  std::size_t channels = 0;   ///< the broadcast vectors' length (their period); 0 without vectors
  std::size_t inner = 1;      ///< consecutive elements that share one vector value
  std::size_t sample_channels = 0;  ///< channels-last gate: values per sample (channels of x); else 0
};

std::string join_dims(std::initializer_list<std::size_t> dims) {
  std::string text;
  for (const std::size_t d : dims) text += (text.empty() ? "" : "x") + std::to_string(d);
  return text;
}

/// A bias over the last dimension of a row-major [rows, columns] array.
FusedShape bias_last_dim(std::size_t rows, std::size_t columns) {
  return {Form::bias, "fused_bias_hardswish_last_dim", join_dims({rows, columns}), rows * columns, columns, 1};
}

/// A vector per channel of an NCHW tensor.
FusedShape per_channel_nchw(Form form, const std::string& op, std::size_t batch) {
  return {form, op, join_dims({batch, kChannels, kHeight, kWidth}), batch * kImageElements, kChannels,
          kHeight * kWidth};
}

/// A vector per channel of a channels-last (NHWC) tensor.
FusedShape per_channel_nhwc(Form form, const std::string& op, std::size_t batch) {
  return {form, op, join_dims({batch, kHeight, kWidth, kChannels}), batch * kImageElements, kChannels, 1};
}

/// A full-length residual over a row-major [rows, columns] array.
FusedShape residual(std::size_t rows, std::size_t columns) {
  return {Form::residual, "fused_residual_hardswish", join_dims({rows, columns}), rows * columns, 0, 1};
}

/// A gate per (n, c) of an NCHW tensor.
FusedShape gate_nchw(std::size_t batch) {
  return {Form::gate, "fused_hardsigmoid_gate_nchw", join_dims({batch, kChannels, kHeight, kWidth}),
          batch * kImageElements, batch * kChannels, kHeight * kWidth};
}

/// A gate per (n, c) of a channels-last (NHWC) tensor: C values per sample of H * W * C elements.
FusedShape gate_nhwc(std::size_t batch) {
  return {Form::gate, "fused_hardsigmoid_gate_nhwc", join_dims({batch, kHeight, kWidth, kChannels}),
          batch * kImageElements, batch * kChannels, 1, kChannels};
}

/// x * y rounded once from the compute type: the second launch of eager `x * F.hardsigmoid(gate)`.
struct Multiply {
  template <class T>
  __host__ __device__ T operator()(T x, T y) const {
    return hardact::from_compute<T>(hardact::detail::mul_rn(hardact::to_compute(x), hardact::to_compute(y)));
  }
};

/// The device data of one case.
template <class T>
struct FusedOperands {
  const T* x = nullptr;
  const T* residual = nullptr;  ///< full length (residual rows)
  const T* first = nullptr;     ///< the bias, the scale or the gate (channels elements)
  const T* second = nullptr;    ///< the shift (channels elements)
  T* gate_activation = nullptr; ///< unfused gate rows: hardsigmoid(gate) (channels elements)
};

/// Runs one contender other than memcpy into `out`.
template <class T>
using FusedLaunch = std::function<cudaError_t(Contender, T*)>;

/// The second launch of the unfused contender: HardSwish in place on the first launch's result.
template <class T>
cudaError_t then_hardswish_in_place(cudaError_t first, T* y, std::size_t n, cudaStream_t stream) {
  if (first != cudaSuccess) return first;
  return hardact::transform(hardact::HardSwish{}, y, y, n, stream);
}

/// The gate rows: `gate` reads the gate vector, `activated_gate` the unfused contender's
/// hardsigmoid of it, both with the row's broadcast (Broadcast or SampleBroadcast).
template <class T, class GateOperand>
FusedLaunch<T> gate_launcher(const FusedShape& s, const FusedOperands<T>& in, GateOperand gate,
                             GateOperand activated_gate) {
  const hardact::HardSigmoidGate op{};
  const std::size_t n = s.n;
  const std::size_t values = s.channels;
  const T* x = in.x;
  const T* gate_vector = in.first;
  T* activated = in.gate_activation;
  const auto gate_values = broadcast_iterator(gate);
  return [=](Contender c, T* out) -> cudaError_t {
    const cudaStream_t stream = bench_stream();
    switch (c) {
      case Contender::cub:
        return cub::DeviceTransform::Transform(cuda::std::make_tuple(x, gate_values), out, n,
                                               RoundedOp<hardact::HardSigmoidGate, T>{op}, stream);
      case Contender::unfused: {
        const cudaError_t status = hardact::transform(hardact::HardSigmoid{}, gate_vector, activated, values, stream);
        if (status != cudaSuccess) return status;
        return hardact::transform(Multiply{}, x, activated_gate, out, n, stream);
      }
      default: return on_path(c, [&] { return hardact::transform(op, x, gate, out, n, stream); });
    }
  };
}

template <class T>
FusedLaunch<T> fused_launcher(const FusedShape& s, const FusedOperands<T>& in) {
  const std::size_t n = s.n;
  const T* x = in.x;
  switch (s.form) {
    case Form::bias: {
      const auto op = hardact::bias_activation(hardact::HardSwish{});
      using Op = std::decay_t<decltype(op)>;
      const hardact::Broadcast<T> bias = hardact::per_channel(in.first, s.channels, s.inner);
      const auto bias_values = broadcast_iterator(bias);
      return [=](Contender c, T* out) -> cudaError_t {
        const cudaStream_t stream = bench_stream();
        switch (c) {
          case Contender::cub:
            return cub::DeviceTransform::Transform(cuda::std::make_tuple(x, bias_values), out, n, RoundedOp<Op, T>{op},
                                                   stream);
          case Contender::unfused:
            return then_hardswish_in_place(hardact::transform(hardact::Add{}, x, bias, out, n, stream), out, n, stream);
          default: return on_path(c, [&] { return hardact::transform(op, x, bias, out, n, stream); });
        }
      };
    }
    case Form::batchnorm: {
      const auto op = hardact::scale_shift_activation(hardact::HardSwish{});
      using Op = std::decay_t<decltype(op)>;
      const hardact::Broadcast<T> scale = hardact::per_channel(in.first, s.channels, s.inner);
      const hardact::Broadcast<T> shift = hardact::per_channel(in.second, s.channels, s.inner);
      const auto scale_values = broadcast_iterator(scale);
      const auto shift_values = broadcast_iterator(shift);
      return [=](Contender c, T* out) -> cudaError_t {
        const cudaStream_t stream = bench_stream();
        switch (c) {
          case Contender::cub:
            return cub::DeviceTransform::Transform(cuda::std::make_tuple(x, scale_values, shift_values), out, n,
                                                   RoundedOp<Op, T>{op}, stream);
          case Contender::unfused:
            return then_hardswish_in_place(hardact::transform(hardact::MultiplyAdd{}, x, scale, shift, out, n, stream),
                                           out, n, stream);
          default: return on_path(c, [&] { return hardact::transform(op, x, scale, shift, out, n, stream); });
        }
      };
    }
    case Form::residual: {
      const auto op = hardact::residual_activation(hardact::HardSwish{});
      using Op = std::decay_t<decltype(op)>;
      const T* r = in.residual;
      return [=](Contender c, T* out) -> cudaError_t {
        const cudaStream_t stream = bench_stream();
        switch (c) {
          case Contender::cub:
            return cub::DeviceTransform::Transform(cuda::std::make_tuple(x, r), out, n, RoundedOp<Op, T>{op}, stream);
          case Contender::unfused:
            return then_hardswish_in_place(hardact::transform(hardact::Add{}, x, r, out, n, stream), out, n, stream);
          default: return on_path(c, [&] { return hardact::transform(op, x, r, out, n, stream); });
        }
      };
    }
    case Form::gate: {
      if (s.sample_channels == 0) {
        return gate_launcher<T>(s, in, hardact::per_channel(in.first, s.channels, s.inner),
                                hardact::per_channel(static_cast<const T*>(in.gate_activation), s.channels, s.inner));
      }
      const std::size_t positions = s.n / s.channels;
      return gate_launcher<T>(
          s, in, hardact::per_sample_channel(in.first, s.sample_channels, positions),
          hardact::per_sample_channel(static_cast<const T*>(in.gate_activation), s.sample_channels, positions));
    }
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// Registration

/// What one row needs on the device, and its name.
struct FusedPlan {
  std::string name;
  std::size_t full_bytes = 0;   ///< one full-length array
  std::size_t job_bytes = 0;    ///< full-length inputs read once, the output written once
  std::size_t slot_bytes = 0;   ///< x and output slots: a full array, or the copy's half of the job
};

template <class T>
void run_fused(benchmark::State& state, const FusedShape& s, const FusedPlan& plan,
               const std::vector<Contender>& contenders, int reps) {
  DeviceBufferPool& pool = DeviceBufferPool::instance();
  void* x = nullptr;
  void* out = nullptr;
  void* residual_data = nullptr;
  void* check = nullptr;
  cudaError_t status = prepared_slot<T>(kXSlot, plan.slot_bytes, kXSeed, &x);
  if (status == cudaSuccess) status = prepared_slot<T>(kOutSlot, plan.slot_bytes, kOutSeed, &out);
  if (status == cudaSuccess && s.form == Form::residual) {
    status = prepared_slot<T>(kResidualSlot, plan.full_bytes, kResidualSeed, &residual_data);
  }
  if (status == cudaSuccess) status = pool.acquire(kCheckSlot, plan.full_bytes, &check);
  if (status != cudaSuccess) return fail(state, "preparing buffers", status);

  // The vectors: bias in [-1, 1); scale in [0.5, 1.5) and shift in [-1, 1); gate in [-4, 4).
  DeviceAllocation first, second, activated, counter;
  const std::size_t vector_bytes = std::max<std::size_t>(s.channels, 1) * sizeof(T);
  status = first.allocate(vector_bytes);
  if (status == cudaSuccess) status = second.allocate(vector_bytes);
  if (status == cudaSuccess) status = activated.allocate(vector_bytes);
  if (status == cudaSuccess) status = counter.allocate(sizeof(unsigned long long));
  if (status != cudaSuccess) return fail(state, "allocating the broadcast vectors", status);
  const cudaStream_t stream = bench_stream();
  if (s.channels > 0) {
    const double first_low = s.form == Form::batchnorm ? 0.5 : s.form == Form::gate ? -4.0 : -1.0;
    const double first_high = s.form == Form::batchnorm ? 1.5 : s.form == Form::gate ? 4.0 : 1.0;
    status = fill_uniform(first.as<T>(), s.channels, kFirstVectorSeed, stream, first_low, first_high);
    if (status == cudaSuccess) status = fill_uniform(second.as<T>(), s.channels, kSecondVectorSeed, stream, -1.0, 1.0);
    if (status == cudaSuccess) status = cudaStreamSynchronize(stream);
    if (status != cudaSuccess) return fail(state, "filling the broadcast vectors", status);
  }

  FusedOperands<T> operands;
  operands.x = static_cast<const T*>(x);
  operands.residual = static_cast<const T*>(residual_data);
  operands.first = first.as<const T>();
  operands.second = second.as<const T>();
  operands.gate_activation = activated.as<T>();
  const FusedLaunch<T> launch = fused_launcher<T>(s, operands);
  T* const output = static_cast<T*>(out);
  T* const reference = static_cast<T*>(check);

  // The check, outside the timing: hardact into the check slot, cub (and for float unfused) into
  // the output slot, compared bit for bit.
  unsigned long long cub_mismatches = 0, unfused_mismatches = 0;
  status = launch(Contender::hardact, reference);
  if (status == cudaSuccess) status = launch(Contender::cub, output);
  if (status == cudaSuccess) status = count_mismatches(reference, output, s.n, counter.as<unsigned long long>(), cub_mismatches);
  constexpr bool kCheckUnfused = std::is_same_v<T, float>;
  if (kCheckUnfused && status == cudaSuccess) {
    status = launch(Contender::unfused, output);
    if (status == cudaSuccess) {
      status = count_mismatches(reference, output, s.n, counter.as<unsigned long long>(), unfused_mismatches);
    }
  }
  if (status != cudaSuccess) return fail(state, "checking hardact against cub", status);
  report_mismatches(plan.name, "cub", cub_mismatches, s.n);
  report_mismatches(plan.name, "unfused", unfused_mismatches, s.n);

  InterleavedCase c;
  c.job_bytes = plan.job_bytes;
  c.contenders = contenders;
  const std::size_t copy_bytes = plan.job_bytes / 2;
  c.launch = [=](Contender k) -> cudaError_t {
    if (k == Contender::memcpy) return cudaMemcpyAsync(out, x, copy_bytes, cudaMemcpyDeviceToDevice, bench_stream());
    return launch(k, output);
  };
  run_interleaved(state, c, reps);
  if (state.error_occurred()) return;
  state.counters["cub_mismatches"] = benchmark::Counter(static_cast<double>(cub_mismatches));
  if (kCheckUnfused) state.counters["unfused_mismatches"] = benchmark::Counter(static_cast<double>(unfused_mismatches));
}

template <class T>
void register_fused(const Options& o, const FusedShape& s) {
  FusedPlan plan;
  plan.name = s.op + "/" + dtype_name<T>() + "/interleaved/out_of_place/aligned/n:" + std::to_string(s.n) +
              "/shape:" + s.dims;
  const std::size_t full_inputs = s.form == Form::residual ? 2 : 1;
  plan.full_bytes = s.n * sizeof(T);
  plan.job_bytes = (full_inputs + 1) * plan.full_bytes;
  plan.slot_bytes = std::max(plan.full_bytes, plan.job_bytes / 2);
  const std::size_t device_bytes = 2 * plan.slot_bytes + (full_inputs == 2 ? plan.full_bytes : 0) + plan.full_bytes;
  if (!fits_memory_budget(o, device_bytes, plan.name)) return;
  const int reps = o.interleaved_reps;
  std::vector<Contender> contenders = contenders_for(o);
  contenders.push_back(Contender::unfused);
  auto* b = benchmark::RegisterBenchmark(plan.name.c_str(), [=](benchmark::State& state) {
    run_fused<T>(state, s, plan, contenders, reps);
  });
  b->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(1);
}

/// Every fused form at one size: `rows` x `columns` row-major, `batch` x 96 x 56 x 56 images.
void register_fused_size(const Options& o, std::size_t rows, std::size_t columns, std::size_t batch) {
  const std::vector<FusedShape> shapes = {
      bias_last_dim(rows, columns),
      per_channel_nchw(Form::bias, "fused_bias_hardswish_nchw", batch),
      per_channel_nchw(Form::batchnorm, "fused_batchnorm_hardswish_nchw", batch),
      per_channel_nhwc(Form::batchnorm, "fused_batchnorm_hardswish_nhwc", batch),
      residual(rows, columns),
      gate_nchw(batch),
      gate_nhwc(batch),
  };
  for (const FusedShape& s : shapes) {
    register_fused<float>(o, s);
    register_fused<__nv_bfloat16>(o, s);
  }
}

void register_fused_benchmarks(const Options& o) {
  if (o.mode != Mode::interleaved) return;
  register_fused_size(o, kReferenceRows, kReferenceCols, kLargeBatch);
  register_fused_size(o, kReferenceRows, kMidColumns, kMidBatch);
}

}  // namespace

HARDACT_BENCH_REGISTRAR("06_fused", register_fused_benchmarks);

}  // namespace hardact_bench
