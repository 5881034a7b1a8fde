// The summing path (an OutputWithSums in place of the output pointer) on the device: the outputs
// bit for bit those of the same call with a plain output, and the sums of those outputs within
// float (double) accumulation error of a double reference, exact for small integers, the same bits
// on a second run. Layouts: channels-last per (n, c), NCHW per (n, c), NCHW per channel (several
// partial sums per sum), a row-major [rows, C] array's column sums (chunks of rows); one to four
// inputs with broadcast operands; float, bfloat16, half and double; misaligned pointers; a stream;
// and the refusals, which write nothing. HARDACT_TEST_QUICK=1 (compute-sanitizer runs) keeps the
// shapes small.
#include "support/bits.hpp"
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/device_family.hpp"
#include "support/reference_family.hpp"
#include "support/scoped_tuning.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using namespace hardact_test;

/// Which sums of a [N, C, HW] batch (or a row-major [N * HW, C] array for `rows`).
enum class SumsLayout { channels_last, nchw_planes, nchw_channels, rows };

/// Which transform: one input, BatchNorm + activation (three), with a residual (four), or a bias
/// that changes every two elements whatever the layout (values no thread can load once for all its
/// vectors, which the summing kernels read per vector).
enum class Form { activation, scale_shift, scale_shift_residual, bias_every_two_elements };

struct SumsCase {
  SumsLayout layout;
  std::size_t samples, channels, positions;
  Form form;
  std::size_t offset;  ///< elements every array (outputs, inputs, sums) starts past an aligned address
};

std::string describe_case(const SumsCase& c) {
  static const char* const kLayouts[] = {"channels-last", "NCHW planes", "NCHW channels", "rows"};
  static const char* const kForms[] = {"activation", "scale-shift", "scale-shift-residual",
                                       "bias-every-two-elements"};
  return std::string(kLayouts[static_cast<int>(c.layout)]) + " N " + std::to_string(c.samples) + " C " +
         std::to_string(c.channels) + " HW " + std::to_string(c.positions) + ", " + kForms[static_cast<int>(c.form)] +
         ", offset " + std::to_string(c.offset);
}

bool is_nchw(SumsLayout layout) { return layout == SumsLayout::nchw_planes || layout == SumsLayout::nchw_channels; }

/// The sum element i adds to.
std::size_t sum_index(const SumsCase& c, std::size_t i) {
  switch (c.layout) {
    case SumsLayout::channels_last: return (i / (c.channels * c.positions)) * c.channels + i % c.channels;
    case SumsLayout::nchw_planes: return i / c.positions;
    case SumsLayout::nchw_channels: return (i / c.positions) % c.channels;
    case SumsLayout::rows: return i % c.channels;
  }
  return 0;
}

std::size_t sum_count(const SumsCase& c) {
  return c.layout == SumsLayout::channels_last || c.layout == SumsLayout::nchw_planes ? c.samples * c.channels
                                                                                       : c.channels;
}

template <class T, class TSum>
hardact::OutputWithSums<T, TSum> output_for(const SumsCase& c, T* y, TSum* sums, double scale) {
  switch (c.layout) {
    case SumsLayout::channels_last: return hardact::with_sample_channel_sums(y, sums, c.channels, c.positions, scale);
    case SumsLayout::nchw_planes: return hardact::with_channel_sums(y, sums, c.samples * c.channels, c.positions, scale);
    case SumsLayout::nchw_channels: return hardact::with_channel_sums(y, sums, c.channels, c.positions, scale);
    case SumsLayout::rows: break;
  }
  return hardact::with_channel_sums(y, sums, c.channels, 1, scale);
}

/// The call of `c`'s form with output `out` (a pointer or an OutputWithSums).
template <class T, class Out>
cudaError_t launch(const SumsCase& c, const T* x, const float* scale, const float* shift, const T* residual, Out out,
                   std::size_t n, cudaStream_t stream) {
  const std::size_t inner = is_nchw(c.layout) ? c.positions : 1;
  switch (c.form) {
    case Form::activation: return hardact::transform(hardact::HardSwish{}, x, out, n, stream);
    case Form::scale_shift:
      return hardact::transform(hardact::scale_shift_activation(hardact::HardSwish{}), x,
                                hardact::per_channel(scale, c.channels, inner),
                                hardact::per_channel(shift, c.channels, inner), out, n, stream);
    case Form::scale_shift_residual:
      return hardact::transform(hardact::scale_shift_residual_activation(hardact::ReLU6{}), x,
                                hardact::per_channel(scale, c.channels, inner),
                                hardact::per_channel(shift, c.channels, inner), residual, out, n, stream);
    case Form::bias_every_two_elements:
      return hardact::transform(hardact::bias_activation(hardact::HardSwish{}), x,
                                hardact::per_channel(shift, c.channels, 2), out, n, stream);
  }
  return cudaErrorInvalidValue;
}

/// What one case's run gives back.
template <class T, class TSum>
struct SumsRun {
  std::vector<T> outputs, plain;  ///< with sums, and from the same call with a plain output
  std::vector<TSum> sums;
};

/// Runs `c` with inputs x (and residual), the scale and shift values, writing outputs and sums
/// (scaled by `scale_by`), and the same call with a plain output; checks the guard bands.
template <class T, class TSum>
::testing::AssertionResult run_case(const SumsCase& c, const std::vector<T>& x, const std::vector<T>& residual,
                                    const std::vector<float>& scale, const std::vector<float>& shift, double scale_by,
                                    SumsRun<T, TSum>& run, cudaStream_t stream = nullptr) {
  const std::size_t n = x.size(), count = sum_count(c);
  GuardedBuffer<T> input(n, c.offset), added(n, c.offset), output(n, c.offset), plain(n, c.offset);
  GuardedBuffer<float> scales(c.channels), shifts(c.channels);
  GuardedBuffer<TSum> sums(count, c.offset);
  for (cudaError_t status : {input.status(), added.status(), output.status(), plain.status(), scales.status(),
                             shifts.status(), sums.status()}) {
    if (status != cudaSuccess) return ::testing::AssertionFailure() << "alloc: " << cudaGetErrorName(status);
  }
  if (input.upload(x) != cudaSuccess || added.upload(residual) != cudaSuccess || scales.upload(scale) != cudaSuccess ||
      shifts.upload(shift) != cudaSuccess) {
    return ::testing::AssertionFailure() << "upload";
  }
  hardact::OutputWithSums<T, TSum> out = output_for<T, TSum>(c, output.data(), sums.data(), scale_by);
  const std::size_t bytes = hardact::temp_storage_bytes(out, n);
  GuardedBuffer<unsigned char> temp(bytes);
  if (temp.status() != cudaSuccess) return ::testing::AssertionFailure() << "temp alloc";
  out.temp_storage = bytes > 0 ? static_cast<void*>(temp.data()) : nullptr;
  out.temp_storage_bytes = bytes;
  // The buffers were poisoned on the legacy stream, which a non-blocking stream does not wait for.
  if (cudaDeviceSynchronize() != cudaSuccess) return ::testing::AssertionFailure() << "synchronize";
  cudaError_t status = launch(c, input.data(), scales.data(), shifts.data(), added.data(), out, n, stream);
  if (status != cudaSuccess) return ::testing::AssertionFailure() << "summing call: " << cudaGetErrorName(status);
  status = launch(c, input.data(), scales.data(), shifts.data(), added.data(), plain.data(), n, stream);
  if (status != cudaSuccess) return ::testing::AssertionFailure() << "plain call: " << cudaGetErrorName(status);
  status = cudaDeviceSynchronize();
  if (status == cudaSuccess) status = cudaGetLastError();
  if (status != cudaSuccess) return ::testing::AssertionFailure() << "kernel: " << cudaGetErrorName(status);
  if (output.download(run.outputs) != cudaSuccess || plain.download(run.plain) != cudaSuccess ||
      sums.download(run.sums) != cudaSuccess) {
    return ::testing::AssertionFailure() << "download";
  }
  if (!output.guards_intact() || !sums.guards_intact() || !temp.guards_intact()) {
    return ::testing::AssertionFailure() << "a guard band was overwritten";
  }
  return ::testing::AssertionSuccess();
}

/// The cases: per-(n, c) squeezes of small images (odd sizes included, and planes of 1001 and 4999
/// elements, runs longer than a team's loads), NCHW per channel (partial sums per sample), column
/// sums of a long row-major array (chunks), channel counts whose rows are not whole vectors, one
/// channel, a group wider than a block, samples whose rows one block takes across a slice of
/// their channels (plan_rows: on 132 multiprocessors, 64 x 14 x 14 x 672's 8 chunks a sample
/// become 6 slices, and small calls take 8-vector slices), chunks made whole rounds (64 x 28 x 28
/// x 120); aligned and offset pointers.
std::vector<SumsCase> cases(bool wide_elements) {
  std::vector<SumsCase> all;
  const std::size_t shapes[][3] = {{2, 72, 49}, {3, 20, 7}, {1, 1, 5}, {2, 960, 9}, {4, 3, 1}, {1, 1000, 3},
                                   {2, 40, 196}, {1, 5, 33}, {2, 3, 1001}, {1, 2, 4999}};
  for (const auto& s : shapes) {
    for (SumsLayout layout : {SumsLayout::channels_last, SumsLayout::nchw_planes, SumsLayout::nchw_channels}) {
      for (Form form : {Form::activation, Form::scale_shift, Form::scale_shift_residual}) {
        for (std::size_t offset : {std::size_t{0}, std::size_t{1}}) all.push_back({layout, s[0], s[1], s[2], form, offset});
      }
    }
  }
  for (SumsLayout layout : {SumsLayout::channels_last, SumsLayout::nchw_planes, SumsLayout::nchw_channels,
                            SumsLayout::rows}) {
    all.push_back({layout, 2, 24, 49, Form::bias_every_two_elements, 0});
    all.push_back({layout, 2, 40, 196, Form::bias_every_two_elements, 1});
  }
  all.push_back({SumsLayout::rows, 1, 64, 4099, Form::scale_shift, 0});
  all.push_back({SumsLayout::rows, 1, 7, 5000, Form::activation, 3});
  all.push_back({SumsLayout::rows, 1, std::size_t{wide_elements ? 1024u : 4096u}, 5, Form::scale_shift, 0});  // group past a block
  all.push_back({SumsLayout::channels_last, 2, 16, 3000, Form::scale_shift_residual, 0});      // chunks per sample
  if (!family::quick_mode()) {
    all.push_back({SumsLayout::channels_last, 64, 120, 784, Form::scale_shift, 0});
    all.push_back({SumsLayout::channels_last, 64, 672, 196, Form::scale_shift, 0});  // whole samples, 6 slices
    all.push_back({SumsLayout::nchw_planes, 64, 120, 784, Form::scale_shift, 0});
    all.push_back({SumsLayout::rows, 1, 3, 300000, Form::activation, 0});  // a hundred chunks
    all.push_back({SumsLayout::nchw_channels, 16, 24, 3136, Form::scale_shift_residual, 1});
  }
  return all;
}

/// Sums of the outputs in double, and of their magnitudes, and how many values each sum adds.
struct Reference {
  std::vector<double> sums, magnitudes;
  std::size_t count = 0;
};

template <class T>
Reference reference_sums(const SumsCase& c, const std::vector<T>& outputs) {
  Reference r{std::vector<double>(sum_count(c), 0.0), std::vector<double>(sum_count(c), 0.0),
              outputs.size() / sum_count(c)};
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const double value = family::value_of(outputs[i]);
    r.sums[sum_index(c, i)] += value;
    r.magnitudes[sum_index(c, i)] += std::fabs(value);
  }
  return r;
}

/// Every case with values in [-4, 4] (HardSwish's and ReLU6's interesting range) and per-channel
/// scales and shifts near 1 and 0; then a mean (scale 1 / count), again, for the same bits.
template <class T, class TSum>
void check_sums() {
  using Acc = hardact::detail::accumulate_t<T>;
  const double unit = std::is_same_v<Acc, double> ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  const double out_unit = std::ldexp(1.0, -(family::is_narrow<TSum> ? 8 : std::is_same_v<TSum, double> ? 53 : 24));
  for (const SumsCase& c : cases(sizeof(T) == 8)) {
    SCOPED_TRACE(describe_case(c));
    const std::size_t n = c.samples * c.channels * c.positions;
    std::mt19937_64 engine(n * 7 + c.channels);
    std::uniform_real_distribution<double> values(-4.0, 4.0), near_one(0.5, 1.5), near_zero(-0.5, 0.5);
    std::vector<T> x(n), residual(n);
    for (T& v : x) v = from_double<T>(values(engine));
    for (T& v : residual) v = from_double<T>(values(engine));
    std::vector<float> scale(c.channels), shift(c.channels);
    for (float& v : scale) v = static_cast<float>(near_one(engine));
    for (float& v : shift) v = static_cast<float>(near_zero(engine));
    SumsRun<T, TSum> run, again;
    ASSERT_TRUE((run_case<T, TSum>(c, x, residual, scale, shift, 1.0, run)));
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(to_bits(run.outputs[i]), to_bits(run.plain[i])) << "output " << i << " differs from the plain call's";
    }
    const Reference r = reference_sums(c, run.outputs);
    for (std::size_t k = 0; k < r.sums.size(); ++k) {
      const double got = family::value_of(run.sums[k]);
      const double tolerance = static_cast<double>(r.count) * unit * r.magnitudes[k] + out_unit * std::fabs(r.sums[k]);
      ASSERT_LE(std::fabs(got - r.sums[k]), tolerance) << "sum " << k << ": got " << got << ", reference " << r.sums[k];
    }
    // A mean, twice: the same bits.
    const double mean_scale = 1.0 / static_cast<double>(r.count);
    ASSERT_TRUE((run_case<T, TSum>(c, x, residual, scale, shift, mean_scale, run)));
    ASSERT_TRUE((run_case<T, TSum>(c, x, residual, scale, shift, mean_scale, again)));
    for (std::size_t k = 0; k < r.sums.size(); ++k) {
      const double mean = r.sums[k] * mean_scale;
      const double got = family::value_of(run.sums[k]);
      const double tolerance = static_cast<double>(r.count) * unit * r.magnitudes[k] * mean_scale +
                               2 * out_unit * std::fabs(mean) + 1e-300;
      ASSERT_LE(std::fabs(got - mean), tolerance) << "mean " << k << ": got " << got << ", reference " << mean;
      ASSERT_EQ(to_bits(again.sums[k]), to_bits(run.sums[k])) << "mean " << k << " changed on a second run";
    }
  }
}

/// Small integers through HardTanh with wide bounds, which keeps them: every float partial sum is
/// an exact integer, so the sums are the exact sums rounded once.
template <class T, class TSum>
void check_exact_integer_sums() {
  for (const SumsCase& c : cases(sizeof(T) == 8)) {
    if (c.form != Form::activation) continue;
    SCOPED_TRACE(describe_case(c));
    const std::size_t n = c.samples * c.channels * c.positions;
    std::vector<T> x(n);
    std::mt19937_64 engine(n + 3);
    for (T& v : x) v = from_double<T>(static_cast<double>(static_cast<int>(engine() % 17) - 8));
    GuardedBuffer<T> input(n, c.offset), output(n, c.offset);
    GuardedBuffer<TSum> sums(sum_count(c), c.offset);
    HARDACT_ASSERT_CUDA(input.status());
    HARDACT_ASSERT_CUDA(output.status());
    HARDACT_ASSERT_CUDA(sums.status());
    HARDACT_ASSERT_CUDA(input.upload(x));
    hardact::OutputWithSums<T, TSum> out = output_for<T, TSum>(c, output.data(), sums.data(), 1.0);
    GuardedBuffer<unsigned char> temp(hardact::temp_storage_bytes(out, n));
    HARDACT_ASSERT_CUDA(temp.status());
    out.temp_storage = temp.data();
    out.temp_storage_bytes = temp.size();
    HARDACT_ASSERT_CUDA(hardact::transform(hardact::HardTanh{-100.0, 100.0}, static_cast<const T*>(input.data()), out, n));
    HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
    std::vector<TSum> got;
    HARDACT_ASSERT_CUDA(sums.download(got));
    const Reference r = reference_sums(c, x);
    for (std::size_t k = 0; k < r.sums.size(); ++k) {
      ASSERT_EQ(to_bits(got[k]), to_bits(family::round_to<TSum>(r.sums[k])))
          << "sum " << k << ": got " << family::show(got[k]) << ", exact " << r.sums[k];
    }
  }
}

// Built in two executables (tests/CMakeLists.txt, HARDACT_TESTS_BY_TYPE): part 1 holds the float and
// double cases and the ones of no element type, part 2 the bfloat16 and half cases.
#if !defined(HARDACT_TEST_TYPE_PART) || HARDACT_TEST_TYPE_PART == 1
TEST(DeviceSummedOutput, FloatOutputsAsPlainSumsWithinFloatError) {
  HARDACT_REQUIRE_DEVICE();
  check_sums<float, float>();
  check_exact_integer_sums<float, float>();
}

TEST(DeviceSummedOutput, DoubleSumsInDouble) {
  HARDACT_REQUIRE_DEVICE();
  check_sums<double, double>();
  check_exact_integer_sums<double, double>();
}
#endif

#if !defined(HARDACT_TEST_TYPE_PART) || HARDACT_TEST_TYPE_PART == 2
TEST(DeviceSummedOutput, Bfloat16SumsInFloatRoundedOnce) {
  HARDACT_REQUIRE_DEVICE();
  check_sums<__nv_bfloat16, __nv_bfloat16>();
  check_sums<__nv_bfloat16, float>();
  check_exact_integer_sums<__nv_bfloat16, float>();
}

TEST(DeviceSummedOutput, HalfSumsInFloat) {
  HARDACT_REQUIRE_DEVICE();
  check_sums<__half, float>();  // a sum of a large span can pass half's largest value
}
#endif

// Each of the summing path's adopted forms switched off in turn (dispatch/test_overrides.cuh), as
// the measurements that adopted them ran the calls: rows cut for the device (the shape's chunks
// instead), the partial sums' dependent launch (every case of several parts), the tiles form (the
// NCHW runs of 5 to 49 elements, not whole vectors). The same checks hold without each.
constexpr ScopedSummedFormOff::Form kAdoptedForms[] = {&hardact::detail::TransformTuning::summed_rows_plan,
                                                       &hardact::detail::TransformTuning::summed_dependent_launch,
                                                       &hardact::detail::TransformTuning::summed_tiles};

#if !defined(HARDACT_TEST_TYPE_PART) || HARDACT_TEST_TYPE_PART == 1
TEST(DeviceSummedOutput, EachAdoptedFormSwitchedOff) {
  HARDACT_REQUIRE_DEVICE();
  for (ScopedSummedFormOff::Form form : kAdoptedForms) {
    const ScopedSummedFormOff off(form);
    check_sums<float, float>();
    check_exact_integer_sums<float, float>();
  }
}
#endif

#if !defined(HARDACT_TEST_TYPE_PART) || HARDACT_TEST_TYPE_PART == 2
TEST(DeviceSummedOutput, EachAdoptedFormSwitchedOffBfloat16) {
  HARDACT_REQUIRE_DEVICE();
  for (ScopedSummedFormOff::Form form : kAdoptedForms) {
    const ScopedSummedFormOff off(form);
    check_sums<__nv_bfloat16, float>();
  }
}
#endif

#if !defined(HARDACT_TEST_TYPE_PART) || HARDACT_TEST_TYPE_PART == 1
// On a non-blocking stream: everything enqueued there.
TEST(DeviceSummedOutput, OnAStream) {
  HARDACT_REQUIRE_DEVICE();
  Stream stream;
  HARDACT_ASSERT_CUDA(stream.status());
  const SumsCase c{SumsLayout::nchw_channels, 6, 24, 49, Form::scale_shift, 0};
  const std::size_t n = c.samples * c.channels * c.positions;
  std::vector<float> x(n), residual(n, 0.0f), scale(c.channels, 1.0f), shift(c.channels, 0.0f);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(static_cast<int>(i % 9)) - 4.0f;
  SumsRun<float, float> run;
  ASSERT_TRUE((run_case<float, float>(c, x, residual, scale, shift, 1.0, run, stream.get())));
  const Reference r = reference_sums(c, run.outputs);
  for (std::size_t k = 0; k < r.sums.size(); ++k) {
    EXPECT_NEAR(run.sums[k], r.sums[k], 1e-5 * r.magnitudes[k]) << "sum " << k;
  }
}

// Refusals: cudaErrorInvalidValue, nothing written.
TEST(DeviceSummedOutput, BadArgumentsWriteNothing) {
  HARDACT_REQUIRE_DEVICE();
  const std::size_t channels = 8, positions = 6, samples = 3, n = channels * positions * samples;
  GuardedBuffer<float> input(n), output(n), sums(samples * channels + 1), scale(channels);
  for (cudaError_t status : {input.status(), output.status(), sums.status(), scale.status()}) HARDACT_ASSERT_CUDA(status);
  HARDACT_ASSERT_CUDA(input.upload(std::vector<float>(n, 1.0f)));
  HARDACT_ASSERT_CUDA(scale.upload(std::vector<float>(channels, 1.0f)));
  const float* const in = input.data();
  float* const y = output.data();
  const auto call = [&](hardact::OutputWithSums<float, float> out, std::size_t count) {
    return hardact::transform(hardact::ReLU6{}, in, out, count);
  };
  const auto good = hardact::with_sample_channel_sums(y, sums.data(), channels, positions);
  ASSERT_EQ(hardact::temp_storage_bytes(good, n), 0u);
  auto bad = good;
  bad.inner = 0;
  EXPECT_EQ(call(bad, n), cudaErrorInvalidValue) << "inner 0";
  EXPECT_EQ(call(bad, 0), cudaErrorInvalidValue) << "inner 0, n 0";
  bad = good;
  bad.period = 0;
  EXPECT_EQ(call(bad, 0), cudaErrorInvalidValue) << "period 0";
  bad = good;
  bad.span = channels * positions + 1;
  EXPECT_EQ(call(bad, 0), cudaErrorInvalidValue) << "span not whole rows";
  EXPECT_EQ(call(good, n - channels), cudaErrorInvalidValue) << "n not whole spans";
  bad = good;
  bad.sums = nullptr;
  EXPECT_EQ(call(bad, n), cudaErrorInvalidValue) << "null sums";
  bad = good;
  bad.sums = reinterpret_cast<float*>(reinterpret_cast<std::uintptr_t>(sums.data()) + 2);
  EXPECT_EQ(call(bad, n), cudaErrorInvalidValue) << "misaligned sums";
  bad = good;
  bad.sums = y + 5;
  EXPECT_EQ(call(bad, n), cudaErrorInvalidValue) << "sums inside the outputs";
  bad.sums = input.data() + 5;
  EXPECT_EQ(call(bad, n), cudaErrorInvalidValue) << "sums inside the input";
  // Sums over the broadcast's values.
  EXPECT_EQ(hardact::transform(hardact::HardSigmoidGate{}, in,
                               hardact::per_channel(static_cast<const float*>(scale.data()), channels),
                               hardact::with_channel_sums(y, scale.data(), channels), n),
            cudaErrorInvalidValue)
      << "sums over a broadcast's values";
  // Partial sums (per channel of NCHW, one per sample) need temporary storage: none, too little,
  // misaligned.
  const auto long_rows = hardact::with_channel_sums(y, sums.data(), channels, positions);
  const std::size_t bytes = hardact::temp_storage_bytes(long_rows, n);
  ASSERT_EQ(bytes, channels * samples * sizeof(float)) << "one partial sum per channel and sample";
  GuardedBuffer<unsigned char> temp(bytes + 4);
  HARDACT_ASSERT_CUDA(temp.status());
  EXPECT_EQ(call(long_rows, n), cudaErrorInvalidValue) << "no temporary storage";
  bad = long_rows;
  bad.temp_storage = temp.data();
  bad.temp_storage_bytes = bytes - 1;
  EXPECT_EQ(call(bad, n), cudaErrorInvalidValue) << "too little";
  bad.temp_storage = temp.data() + 1;
  bad.temp_storage_bytes = bytes;
  EXPECT_EQ(call(bad, n), cudaErrorInvalidValue) << "misaligned";
  // n == 0: nothing to do, no pointer looked at.
  EXPECT_EQ(call(hardact::with_sample_channel_sums(static_cast<float*>(nullptr), static_cast<float*>(nullptr), channels,
                                                   positions),
                 0),
            cudaSuccess);
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  HARDACT_ASSERT_CUDA(cudaGetLastError());
  EXPECT_TRUE(family::payload_untouched(output));
  EXPECT_TRUE(family::payload_untouched(sums));
  EXPECT_TRUE(output.guards_intact() && sums.guards_intact());
}
#endif

}  // namespace
