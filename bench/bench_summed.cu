// The summing path, interleaved (--hardact_mode=interleaved, the default; the machinery and counters
// of bench_interleaved.cu): a folded inference BatchNorm with HardSwish that also writes the
// per-(n, c) sums of its output (a squeeze-excitation's mean), hardact's launcher with an
// OutputWithSums, against the same work on CUB and against the transform alone.
//
// Rows, named <op>/<dtype>/interleaved/out_of_place/aligned/n:<n>/shape:<dims>:
//   summed_batchnorm_hardswish_nhwc   scale_shift_activation(HardSwish{}) with per_channel(scale /
//                                     shift, C), output with_sample_channel_sums(y, sums, C, H * W)
//                                                                             shape:<N>x<H>x<W>x<C>
//   summed_batchnorm_hardswish_nchw   the same NCHW: per_channel(scale / shift, C, H * W),
//                                     with_channel_sums(y, sums, N * C, H * W)  shape:<N>x<C>x<H>x<W>
// Shapes: the inputs of MobileNetV3-Large's squeeze-excitation blocks at batch 64 (N x 72 x 28 x
// 28, N x 672 x 14 x 14, N x 960 x 7 x 7), and N x 120 x 28 x 28 at batch 512 (a pass large
// against the L2).
//
// Contenders (counters as in bench_interleaved.cu):
//   memcpy   cudaMemcpyAsync device-to-device moving the job's bytes (x read, y written)
//   hardact  hardact::transform with the OutputWithSums: y and the sums in one pass (and, for NHWC,
//            whose samples take several blocks, the partial sums added by a second, small kernel;
//            their storage is allocated once, outside the timing)
//   plain    hardact::transform with a plain output: y alone (what the sums cost)
//   floor    an empty kernel's launch, then the copy (launch_floor): at 13-32 us a call, what one
//            launch plus the copy's traffic takes, the floor of the plain and the summing calls
//   cub      cub::DeviceTransform::Transform with the same policy (the broadcast operands as
//            transform iterators, bench_interleaved.cuh), then cub::DeviceSegmentedReduce::Sum over y,
//            one segment per (n, c): contiguous for NCHW, every C-th element for NHWC. Its
//            temporary storage is allocated once, outside the timing.
// Checked once per case before timing: cub's y against hardact's bit for bit (cub_mismatches, 0
// expected), and the sums against each other (sums_max_relative_difference: float accumulation
// in a different order, below 1e-5 expected).
#include "bench_interleaved.cuh"

#include <hardact/hardact.cuh>

#include <cub/device/device_segmented_reduce.cuh>
#include <cub/device/device_transform.cuh>
#include <cuda/std/tuple>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hardact_bench {
namespace {

constexpr int kXSlot = 0;
constexpr int kOutSlot = 1;
constexpr int kCheckSlot = 3;
constexpr std::uint64_t kXSeed = 0x5eed6001;
constexpr std::uint64_t kOutSeed = 0x5eed6002;
constexpr std::uint64_t kScaleSeed = 0x5eed6003;
constexpr std::uint64_t kShiftSeed = 0x5eed6004;

struct SummedShape {
  bool nchw = false;
  std::size_t batch = 0, channels = 0, positions = 0;
  std::string dims;
  std::size_t n() const { return batch * channels * positions; }
};

SummedShape summed_shape(bool nchw, std::size_t batch, std::size_t channels, std::size_t side) {
  SummedShape s{nchw, batch, channels, side * side, ""};
  const std::vector<std::size_t> dims =
      nchw ? std::vector<std::size_t>{batch, channels, side, side} : std::vector<std::size_t>{batch, side, side, channels};
  for (const std::size_t d : dims) s.dims += (s.dims.empty() ? "" : "x") + std::to_string(d);
  return s;
}

/// Element j of segment k = (n, c) of channels-last y: y[(n * positions + j) * C + c].
template <class T>
struct ChannelsLastSegmentValue {
  const T* y;
  std::uint64_t channels;
  hardact::detail::FastDivmod positions;  ///< segment length
  hardact::detail::FastDivmod by_channels;
  __host__ __device__ float operator()(std::uint64_t flat) const {
    std::uint64_t segment = 0, j = 0, sample = 0, c = 0;
    positions.divmod(flat, segment, j);
    by_channels.divmod(segment, sample, c);
    return hardact::convert<float>(y[(sample * positions.divisor + j) * channels + c]);
  }
};

template <class T>
struct ToFloat {
  __host__ __device__ float operator()(T v) const { return hardact::convert<float>(v); }
};

struct SegmentBegin {
  std::int64_t length;
  __host__ __device__ std::int64_t operator()(std::int64_t k) const { return k * length; }
};

/// The job: x read, y written; the sums and the vectors are a few KB.
template <class T>
void run_summed(benchmark::State& state, const std::string& name, const SummedShape& s, std::size_t slot_bytes,
                int reps) {
  using hardact::detail::FastDivmod;
  const std::size_t n = s.n(), planes = s.batch * s.channels;
  void* x = nullptr;
  void* out = nullptr;
  void* check = nullptr;
  cudaError_t status = prepared_slot<T>(kXSlot, slot_bytes, kXSeed, &x);
  if (status == cudaSuccess) status = prepared_slot<T>(kOutSlot, slot_bytes, kOutSeed, &out);
  if (status == cudaSuccess) status = DeviceBufferPool::instance().acquire(kCheckSlot, slot_bytes, &check);
  if (status != cudaSuccess) return fail(state, "preparing buffers", status);
  DeviceAllocation scale, shift, sums, cub_sums, counter, cub_temp;
  status = scale.allocate(s.channels * sizeof(float));
  if (status == cudaSuccess) status = shift.allocate(s.channels * sizeof(float));
  if (status == cudaSuccess) status = sums.allocate(planes * sizeof(float));
  if (status == cudaSuccess) status = cub_sums.allocate(planes * sizeof(float));
  if (status == cudaSuccess) status = counter.allocate(sizeof(unsigned long long));
  const cudaStream_t stream = bench_stream();
  if (status == cudaSuccess) status = fill_uniform(scale.as<float>(), s.channels, kScaleSeed, stream, 0.5, 1.5);
  if (status == cudaSuccess) status = fill_uniform(shift.as<float>(), s.channels, kShiftSeed, stream, -1.0, 1.0);
  if (status != cudaSuccess) return fail(state, "allocating the vectors", status);

  const T* const input = static_cast<const T*>(x);
  T* const y = static_cast<T*>(out);
  const std::size_t inner = s.nchw ? s.positions : 1;
  const auto op = hardact::scale_shift_activation(hardact::HardSwish{});
  const auto scales = hardact::per_channel(scale.as<const float>(), s.channels, inner);
  const auto shifts = hardact::per_channel(shift.as<const float>(), s.channels, inner);
  void* temp_storage = nullptr;
  std::size_t temp_storage_bytes = 0;
  const auto output_of = [&](T* values) {
    auto output = s.nchw ? hardact::with_channel_sums(values, sums.as<float>(), planes, s.positions)
                         : hardact::with_sample_channel_sums(values, sums.as<float>(), s.channels, s.positions);
    output.temp_storage = temp_storage;
    output.temp_storage_bytes = temp_storage_bytes;
    return output;
  };
  // Partial sums, where a sample is cut into several blocks' chunks: allocated here, once.
  const std::size_t temp_bytes = hardact::temp_storage_bytes(output_of(y), n);
  DeviceAllocation temp;
  status = temp.allocate(temp_bytes);
  if (status != cudaSuccess) return fail(state, "allocating the partial sums", status);
  temp_storage = temp.as<void>();
  temp_storage_bytes = temp_bytes;

  // CUB: the transform, then the segmented reduction (its storage sized and allocated here).
  const auto scale_values = broadcast_iterator(scales);
  const auto shift_values = broadcast_iterator(shifts);
  const auto begins = thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0),
                                                      SegmentBegin{static_cast<std::int64_t>(s.positions)});
  const auto cl_values = thrust::make_transform_iterator(
      thrust::counting_iterator<std::uint64_t>(0),
      ChannelsLastSegmentValue<T>{y, s.channels, FastDivmod::make(s.positions), FastDivmod::make(s.channels)});
  const auto nchw_values = thrust::make_transform_iterator(y, ToFloat<T>{});
  const auto cub_reduce = [&](void* storage, std::size_t& bytes) {
    const auto segments = static_cast<hardact::detail::SegmentCount>(planes);
    return s.nchw ? cub::DeviceSegmentedReduce::Sum(storage, bytes, nchw_values, cub_sums.as<float>(), segments, begins,
                                                    begins + 1, stream)
                  : cub::DeviceSegmentedReduce::Sum(storage, bytes, cl_values, cub_sums.as<float>(), segments, begins,
                                                    begins + 1, stream);
  };
  std::size_t cub_bytes = 0;
  status = cub_reduce(nullptr, cub_bytes);
  if (status == cudaSuccess) status = cub_temp.allocate(cub_bytes);
  if (status != cudaSuccess) return fail(state, "sizing CUB's reduction", status);
  const auto launch = [&, cub_bytes](Contender k, T* target) -> cudaError_t {
    switch (k) {
      case Contender::hardact: return hardact::transform(op, input, scales, shifts, output_of(target), n, stream);
      case Contender::plain: return hardact::transform(op, input, scales, shifts, target, n, stream);
      case Contender::cub: {
        const cudaError_t transformed = cub::DeviceTransform::Transform(
            cuda::std::make_tuple(input, scale_values, shift_values), target, static_cast<std::int64_t>(n),
            [op] __device__(T v, float a, float b) { return hardact::detail::apply_op<T>(op, v, a, b); }, stream);
        if (transformed != cudaSuccess) return transformed;
        std::size_t bytes = cub_bytes;
        return cub_reduce(cub_temp.as<void>(), bytes);
      }
      default: return cudaErrorInvalidValue;
    }
  };

  // The check: hardact into the check slot, cub into the output slot (which its reduction reads).
  unsigned long long mismatches = 0;
  status = launch(Contender::hardact, static_cast<T*>(check));
  if (status == cudaSuccess) status = launch(Contender::cub, y);
  if (status == cudaSuccess) status = count_mismatches(static_cast<const T*>(check), static_cast<const T*>(y), n,
                                                       counter.as<unsigned long long>(), mismatches);
  std::vector<float> ours(planes), theirs(planes);
  if (status == cudaSuccess) status = cudaMemcpy(ours.data(), sums.as<void>(), planes * sizeof(float), cudaMemcpyDeviceToHost);
  if (status == cudaSuccess) status = cudaMemcpy(theirs.data(), cub_sums.as<void>(), planes * sizeof(float), cudaMemcpyDeviceToHost);
  if (status != cudaSuccess) return fail(state, "checking hardact against cub", status);
  double largest = 0.0;
  for (std::size_t k = 0; k < planes; ++k) {
    const double scale_of = std::max(std::fabs(static_cast<double>(theirs[k])), 1.0);
    largest = std::max(largest, std::fabs(static_cast<double>(ours[k]) - theirs[k]) / scale_of);
  }
  report_mismatches(name, "cub", mismatches, n);

  InterleavedCase c;
  c.job_bytes = 2 * n * sizeof(T);
  c.contenders = {Contender::memcpy, Contender::hardact, Contender::plain, Contender::launch_floor, Contender::cub};
  c.launch = [=](Contender k) -> cudaError_t {
    if (k == Contender::memcpy) return cudaMemcpyAsync(out, x, n * sizeof(T), cudaMemcpyDeviceToDevice, bench_stream());
    if (k == Contender::launch_floor) return launch_floor(out, x, n * sizeof(T), bench_stream());
    return launch(k, y);
  };
  run_interleaved(state, c, reps);
  if (state.error_occurred()) return;
  state.counters["cub_mismatches"] = benchmark::Counter(static_cast<double>(mismatches));
  state.counters["sums_max_relative_difference"] = benchmark::Counter(largest);
}

template <class T>
void register_summed(const Options& o, const SummedShape& s) {
  const std::string name = std::string(s.nchw ? "summed_batchnorm_hardswish_nchw" : "summed_batchnorm_hardswish_nhwc") +
                           "/" + dtype_name<T>() + "/interleaved/out_of_place/aligned/n:" + std::to_string(s.n()) +
                           "/shape:" + s.dims;
  const std::size_t slot_bytes = s.n() * sizeof(T);
  if (!fits_memory_budget(o, 3 * slot_bytes, name)) return;
  const int reps = o.interleaved_reps;
  auto* b = benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
    run_summed<T>(state, name, s, slot_bytes, reps);
  });
  b->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(1);
}

void register_summed_benchmarks(const Options& o) {
  if (o.mode != Mode::interleaved) return;
  for (const bool nchw : {false, true}) {
    for (const SummedShape& s : {summed_shape(nchw, 64, 72, 28), summed_shape(nchw, 64, 672, 14),
                                 summed_shape(nchw, 64, 960, 7), summed_shape(nchw, 512, 120, 28)}) {
      register_summed<float>(o, s);
      register_summed<__nv_bfloat16>(o, s);
    }
  }
}

}  // namespace

HARDACT_BENCH_REGISTRAR("07_summed", register_summed_benchmarks);

}  // namespace hardact_bench
