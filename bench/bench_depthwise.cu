// The depthwise convolution with its epilogue, interleaved (--hardact_mode=interleaved, the default;
// the machinery and counters of bench_interleaved.cu): hardact::depthwise_conv with a folded
// BatchNorm and HardSwish over channels-last x, at MobileNetV3-Large's depthwise stages, batch 64.
//
// Rows, named depthwise_batchnorm_hardswish_nhwc/<dtype>/interleaved/out_of_place/aligned/n:<y's
// elements>/shape:<N>x<H>x<W>x<C>/filter:<K>x<K>/stride:<S>[/mean]:
//   64 x 56 x 56 x 72, 3 x 3, stride 1               (the first expansion's, no squeeze)
//   64 x 28 x 28 x 240, 5 x 5, stride 1, with the mean
//   64 x 14 x 14 x 672, 5 x 5, stride 2, with the mean (output 7 x 7)
// padding (K - 1) / 2, as the network's.
//
// Contenders (counters as in bench_interleaved.cu):
//   memcpy   cudaMemcpyAsync device-to-device of (x's bytes + y's bytes) / 2: the job's bytes, x
//            read and y written (the filters, scale, shift and mean are a few KB)
//   hardact  hardact::depthwise_conv, with the mean where the row says so (its blocks' sums in
//            temporary storage allocated once, outside the timing)
//   plain    the same without the mean (what the mean costs), on rows with the mean
// Checked once per case before timing: y with the mean against y without it, bit for bit
// (plain_mismatches, 0 expected).
#include "bench_interleaved.cuh"

#include <hardact/hardact.cuh>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace hardact_bench {
namespace {

constexpr int kXSlot = 0;
constexpr int kOutSlot = 1;
constexpr int kCheckSlot = 3;
constexpr std::uint64_t kXSeed = 0x5eed7001;
constexpr std::uint64_t kOutSeed = 0x5eed7002;
constexpr std::uint64_t kTapsSeed = 0x5eed7003;
constexpr std::uint64_t kScaleSeed = 0x5eed7004;
constexpr std::uint64_t kShiftSeed = 0x5eed7005;

struct DepthwiseCase {
  hardact::DepthwiseConvShape shape;
  bool with_mean = false;
  std::size_t x_elements() const { return shape.samples * shape.height * shape.width * shape.channels; }
  std::size_t y_elements() const { return shape.samples * shape.out_height() * shape.out_width() * shape.channels; }
};

DepthwiseCase depthwise_case(std::size_t samples, std::size_t side, std::size_t channels, int filter, int stride,
                             bool with_mean) {
  const int pad = (filter - 1) / 2;
  return {hardact::DepthwiseConvShape{samples, side, side, channels, filter, stride, pad, pad}, with_mean};
}

template <class T>
void run_depthwise(benchmark::State& state, const std::string& name, const DepthwiseCase& c, std::size_t slot_bytes,
                   int reps) {
  const hardact::DepthwiseConvShape& s = c.shape;
  const std::size_t copy_bytes = (c.x_elements() + c.y_elements()) * sizeof(T) / 2;
  void* x = nullptr;
  void* out = nullptr;
  void* check = nullptr;
  cudaError_t status = prepared_slot<T>(kXSlot, slot_bytes, kXSeed, &x);
  if (status == cudaSuccess) status = prepared_slot<T>(kOutSlot, slot_bytes, kOutSeed, &out);
  if (status == cudaSuccess) status = DeviceBufferPool::instance().acquire(kCheckSlot, slot_bytes, &check);
  if (status != cudaSuccess) return fail(state, "preparing buffers", status);
  const std::size_t taps_count = static_cast<std::size_t>(s.kernel_size * s.kernel_size) * s.channels;
  const std::size_t temp_bytes = c.with_mean ? hardact::depthwise_conv_temp_storage_bytes(s) : 0;
  DeviceAllocation taps, scale, shift, mean, temp, counter;
  status = taps.allocate(taps_count * sizeof(float));
  if (status == cudaSuccess) status = scale.allocate(s.channels * sizeof(float));
  if (status == cudaSuccess) status = shift.allocate(s.channels * sizeof(float));
  if (status == cudaSuccess) status = mean.allocate(s.samples * s.channels * sizeof(T));
  if (status == cudaSuccess) status = temp.allocate(temp_bytes);
  if (status == cudaSuccess) status = counter.allocate(sizeof(unsigned long long));
  const cudaStream_t stream = bench_stream();
  if (status == cudaSuccess) status = fill_uniform(taps.as<float>(), taps_count, kTapsSeed, stream, -0.3, 0.3);
  if (status == cudaSuccess) status = fill_uniform(scale.as<float>(), s.channels, kScaleSeed, stream, 0.5, 1.5);
  if (status == cudaSuccess) status = fill_uniform(shift.as<float>(), s.channels, kShiftSeed, stream, -1.0, 1.0);
  if (status != cudaSuccess) return fail(state, "allocating the filters and vectors", status);

  const T* const input = static_cast<const T*>(x);
  const hardact::HardSwish act{};
  const auto launch = [&, temp_bytes](Contender k, T* y) -> cudaError_t {
    if (k == Contender::hardact && c.with_mean) {
      return hardact::depthwise_conv(act, s, input, taps.as<const float>(), scale.as<const float>(),
                                     shift.as<const float>(), y, mean.as<T>(), temp.as<void>(), temp_bytes, stream);
    }
    return hardact::depthwise_conv(act, s, input, taps.as<const float>(), scale.as<const float>(),
                                   shift.as<const float>(), y, stream);
  };

  // The check: y with the mean into the check slot, without it into the output slot.
  unsigned long long mismatches = 0;
  status = launch(Contender::hardact, static_cast<T*>(check));
  if (status == cudaSuccess) status = launch(Contender::plain, static_cast<T*>(out));
  if (status == cudaSuccess) {
    status = count_mismatches(static_cast<const T*>(check), static_cast<const T*>(out), c.y_elements(),
                              counter.as<unsigned long long>(), mismatches);
  }
  if (status != cudaSuccess) return fail(state, "checking y with and without the mean", status);
  report_mismatches(name, "plain", mismatches, c.y_elements());

  InterleavedCase ic;
  ic.job_bytes = (c.x_elements() + c.y_elements()) * sizeof(T);
  ic.contenders = {Contender::memcpy, Contender::hardact};
  if (c.with_mean) ic.contenders.push_back(Contender::plain);
  T* const y = static_cast<T*>(out);
  ic.launch = [=](Contender k) -> cudaError_t {
    if (k == Contender::memcpy) return cudaMemcpyAsync(out, x, copy_bytes, cudaMemcpyDeviceToDevice, bench_stream());
    return launch(k, y);
  };
  run_interleaved(state, ic, reps);
  if (state.error_occurred()) return;
  state.counters["plain_mismatches"] = benchmark::Counter(static_cast<double>(mismatches));
}

template <class T>
void register_depthwise(const Options& o, const DepthwiseCase& c) {
  const hardact::DepthwiseConvShape& s = c.shape;
  const std::string name = std::string("depthwise_batchnorm_hardswish_nhwc/") + dtype_name<T>() +
                           "/interleaved/out_of_place/aligned/n:" + std::to_string(c.y_elements()) + "/shape:" +
                           std::to_string(s.samples) + "x" + std::to_string(s.height) + "x" + std::to_string(s.width) +
                           "x" + std::to_string(s.channels) + "/filter:" + std::to_string(s.kernel_size) + "x" +
                           std::to_string(s.kernel_size) + "/stride:" + std::to_string(s.stride) +
                           (c.with_mean ? "/mean" : "");
  // Every slot holds x, y and the copy's bytes.
  const std::size_t slot_bytes = std::max(c.x_elements(), c.y_elements()) * sizeof(T);
  if (!fits_memory_budget(o, 3 * slot_bytes, name)) return;
  const int reps = o.interleaved_reps;
  auto* b = benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
    run_depthwise<T>(state, name, c, slot_bytes, reps);
  });
  b->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(1);
}

void register_depthwise_benchmarks(const Options& o) {
  if (o.mode != Mode::interleaved) return;
  for (const DepthwiseCase& c : {depthwise_case(64, 56, 72, 3, 1, false), depthwise_case(64, 28, 240, 5, 1, true),
                                 depthwise_case(64, 14, 672, 5, 2, true)}) {
    register_depthwise<float>(o, c);
    register_depthwise<__nv_bfloat16>(o, c);
  }
}

}  // namespace

HARDACT_BENCH_REGISTRAR("08_depthwise", register_depthwise_benchmarks);

}  // namespace hardact_bench
