// channel_sum on the device for float, bfloat16 and double (and bfloat16 summed to float, float to
// double), inner 1 and inner > 1, n == 0, on a stream, against a double reference (exact for small
// integers, within float accumulation error otherwise), deterministic; its refusals write nothing.
// HARDACT_TEST_QUICK=1 (compute-sanitizer runs) keeps the shapes small.
#include "support/bits.hpp"
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/device_family.hpp"
#include "support/reference_family.hpp"
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
#include <utility>
#include <vector>

namespace {

using namespace hardact_test;

// =============================================================================================
// channel_sum.

/// Per-channel sums in double, with the sum of magnitudes and the count of each channel.
struct ChannelTotals {
  std::vector<double> sums, magnitudes;
  std::size_t count = 0;
};

template <class T>
ChannelTotals channel_totals(const std::vector<T>& in, std::size_t channels, std::size_t inner) {
  ChannelTotals totals{std::vector<double>(channels, 0.0), std::vector<double>(channels, 0.0),
                       channels > 0 ? in.size() / channels : 0};
  for (std::size_t i = 0; i < in.size(); ++i) {
    const double value = family::value_of(in[i]);
    totals.sums[(i / inner) % channels] += value;
    totals.magnitudes[(i / inner) % channels] += std::fabs(value);
  }
  return totals;
}

/// channel_sum on `in` as [outer, channels, inner], at the given offsets, checking guard bands and
/// that the input and the temporary storage past its size are untouched.
template <class T, class TOut>
::testing::AssertionResult run_channel_sum(const std::vector<T>& in, std::size_t channels, std::size_t inner,
                                           std::vector<TOut>& sums, std::size_t in_offset = 0,
                                           std::size_t out_offset = 0, cudaStream_t stream = nullptr) {
  const std::size_t n = in.size();
  GuardedBuffer<T> input(n, in_offset);
  GuardedBuffer<TOut> output(channels, out_offset);
  if (input.status() != cudaSuccess || output.status() != cudaSuccess) return ::testing::AssertionFailure() << "alloc";
  if (input.upload(in) != cudaSuccess) return ::testing::AssertionFailure() << "upload";
  std::size_t bytes = 0;
  cudaError_t status = hardact::channel_sum(nullptr, bytes, static_cast<const T*>(input.data()), n, channels, inner,
                                            output.data(), stream);
  if (status != cudaSuccess) return ::testing::AssertionFailure() << "size query: " << cudaGetErrorName(status);
  GuardedBuffer<unsigned char> temp(bytes);
  if (temp.status() != cudaSuccess) return ::testing::AssertionFailure() << "temp alloc";
  // The buffers were poisoned on the legacy stream, which a non-blocking stream does not wait for.
  if (cudaDeviceSynchronize() != cudaSuccess) return ::testing::AssertionFailure() << "synchronize";
  status = hardact::channel_sum(static_cast<void*>(temp.data()), bytes, static_cast<const T*>(input.data()), n,
                                channels, inner, output.data(), stream);
  if (status != cudaSuccess) return ::testing::AssertionFailure() << "channel_sum: " << cudaGetErrorName(status);
  status = cudaDeviceSynchronize();
  if (status == cudaSuccess) status = cudaGetLastError();
  if (status != cudaSuccess) return ::testing::AssertionFailure() << "kernel: " << cudaGetErrorName(status);
  if (output.download(sums) != cudaSuccess) return ::testing::AssertionFailure() << "download";
  if (!output.guards_intact()) return ::testing::AssertionFailure() << "sums guard band overwritten";
  if (!temp.guards_intact()) return ::testing::AssertionFailure() << "write past the temporary storage";
  std::vector<T> after;
  if (input.download(after) != cudaSuccess) return ::testing::AssertionFailure() << "download input";
  for (std::size_t i = 0; i < n; ++i) {
    if (to_bits(after[i]) != to_bits(in[i])) return ::testing::AssertionFailure() << "input element " << i << " modified";
  }
  if (!input.guards_intact()) return ::testing::AssertionFailure() << "input guard band overwritten";
  return ::testing::AssertionSuccess();
}

struct SumShape {
  std::size_t channels, inner, outer;
};

/// Shapes: inner 1 (rows of a row-major array) and inner > 1 (NCHW), a single row, many rows per
/// channel, and (unless quick) a row of more than 2^20 elements and a million-element NCHW.
std::vector<SumShape> sum_shapes() {
  std::vector<SumShape> shapes = {{1, 1, 1},  {7, 1, 1},   {3, 1, 1000}, {64, 1, 4097}, {1000, 1, 257},
                                  {3, 49, 5}, {16, 7, 1},  {5, 1, 3},    {8, 64, 33},   {2, 3136, 3}};
  if (!family::quick_mode()) {
    shapes.push_back({64, 3136, 2});
    shapes.push_back({32, 49, 700});
    shapes.push_back({1100, 1000, 2});
    shapes.push_back({1, 1, (std::size_t{1} << 22) + 1});
  }
  return shapes;
}

std::string describe_shape(const SumShape& shape) {
  return "C " + std::to_string(shape.channels) + ", inner " + std::to_string(shape.inner) + ", outer " +
         std::to_string(shape.outer);
}

/// Small integers (|x| <= 8): every partial sum is an integer below 2^24, so float accumulation is
/// exact and the result is the exact sum rounded once to TOut.
template <class T, class TOut>
void check_exact_sums() {
  for (const SumShape& shape : sum_shapes()) {
    SCOPED_TRACE(describe_shape(shape));
    const std::size_t n = shape.channels * shape.inner * shape.outer;
    // Float accumulation stays exact while every partial sum is an integer below 2^24.
    if (!std::is_same_v<hardact::detail::accumulate_t<T>, double> && n / shape.channels * 8 >= (std::size_t{1} << 24)) {
      continue;
    }
    std::vector<T> in(n);
    std::mt19937_64 engine(n);
    for (T& value : in) value = from_double<T>(static_cast<double>(static_cast<int>(engine() % 17) - 8));
    const ChannelTotals totals = channel_totals(in, shape.channels, shape.inner);
    std::vector<TOut> sums;
    ASSERT_TRUE((run_channel_sum<T, TOut>(in, shape.channels, shape.inner, sums, 1, 1)));
    for (std::size_t c = 0; c < shape.channels; ++c) {
      ASSERT_EQ(to_bits(sums[c]), to_bits(family::round_to<TOut>(totals.sums[c])))
          << "channel " << c << ": got " << family::show(sums[c]) << ", exact " << totals.sums[c];
    }
  }
}

/// Random values in [-1, 1]: within the accumulation error bound, count * u * sum of |x| (any order
/// of summation), plus half an ulp of TOut for the final rounding.
template <class T, class TOut>
void check_random_sums() {
  using Acc = hardact::detail::accumulate_t<T>;
  const double unit = std::is_same_v<Acc, double> ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  const double out_unit = std::ldexp(1.0, -(family::is_narrow<TOut> ? 8 : std::is_same_v<TOut, double> ? 53 : 24));
  for (const SumShape& shape : sum_shapes()) {
    SCOPED_TRACE(describe_shape(shape));
    const std::size_t n = shape.channels * shape.inner * shape.outer;
    std::vector<T> in(n);
    std::mt19937_64 engine(n + 1);
    std::uniform_real_distribution<double> unit_interval(-1.0, 1.0);
    for (T& value : in) value = from_double<T>(unit_interval(engine));
    const ChannelTotals totals = channel_totals(in, shape.channels, shape.inner);
    std::vector<TOut> sums, again;
    ASSERT_TRUE((run_channel_sum<T, TOut>(in, shape.channels, shape.inner, sums, 3, 0)));
    for (std::size_t c = 0; c < shape.channels; ++c) {
      const double got = family::value_of(sums[c]);
      const double tolerance = static_cast<double>(totals.count) * unit * totals.magnitudes[c] +
                               out_unit * std::fabs(totals.sums[c]) + 1e-300;
      ASSERT_LE(std::fabs(got - totals.sums[c]), tolerance)
          << "channel " << c << ": got " << got << ", reference " << totals.sums[c];
    }
    // Deterministic: the same bits on a second run, at other offsets.
    ASSERT_TRUE((run_channel_sum<T, TOut>(in, shape.channels, shape.inner, again, 0, 2)));
    for (std::size_t c = 0; c < shape.channels; ++c) ASSERT_EQ(to_bits(again[c]), to_bits(sums[c])) << "channel " << c;
  }
}

/// n == 0 writes zeros (the sums start poisoned), with or without an input pointer.
template <class T, class TOut>
void check_empty_sums() {
  for (const bool null_input : {false, true}) {
    for (const auto& [channels, inner] : {std::pair<std::size_t, std::size_t>{5, 3}, {1, 1}, {64, 1}}) {
      GuardedBuffer<T> input(4);
      GuardedBuffer<TOut> output(channels, 1);
      HARDACT_ASSERT_CUDA(input.status());
      HARDACT_ASSERT_CUDA(output.status());
      const T* const in = null_input ? nullptr : input.data();
      std::size_t bytes = 0;
      HARDACT_ASSERT_CUDA(hardact::channel_sum(nullptr, bytes, in, 0, channels, inner, output.data()));
      GuardedBuffer<unsigned char> temp(bytes);
      HARDACT_ASSERT_CUDA(temp.status());
      HARDACT_ASSERT_CUDA(hardact::channel_sum(static_cast<void*>(temp.data()), bytes, in, 0, channels, inner,
                                               output.data()));
      HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
      std::vector<TOut> sums;
      HARDACT_ASSERT_CUDA(output.download(sums));
      for (std::size_t c = 0; c < channels; ++c) {
        EXPECT_EQ(to_bits(sums[c]), to_bits(family::round_to<TOut>(0.0))) << "channel " << c << " of " << channels;
      }
      EXPECT_TRUE(output.guards_intact() && temp.guards_intact());
    }
  }
}

TEST(DeviceChannelSum, FloatExactAndWithinFloatError) {
  HARDACT_REQUIRE_DEVICE();
  check_exact_sums<float, float>();
  check_random_sums<float, float>();
  check_empty_sums<float, float>();
}

TEST(DeviceChannelSum, Bfloat16AccumulatesInFloatRoundsOnce) {
  HARDACT_REQUIRE_DEVICE();
  check_exact_sums<__nv_bfloat16, __nv_bfloat16>();
  check_random_sums<__nv_bfloat16, __nv_bfloat16>();
  check_empty_sums<__nv_bfloat16, __nv_bfloat16>();
  check_exact_sums<__nv_bfloat16, float>();
  check_random_sums<__nv_bfloat16, float>();
}

TEST(DeviceChannelSum, DoubleAccumulatesInDouble) {
  HARDACT_REQUIRE_DEVICE();
  check_exact_sums<double, double>();
  check_random_sums<double, double>();
  check_empty_sums<double, double>();
  check_exact_sums<float, double>();
}

// On a non-blocking stream: everything enqueued there, nothing on the legacy stream.
TEST(DeviceChannelSum, OnAStream) {
  HARDACT_REQUIRE_DEVICE();
  Stream stream;
  HARDACT_ASSERT_CUDA(stream.status());
  const std::size_t channels = 24, inner = 49, outer = 9;
  std::vector<float> in(channels * inner * outer);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(static_cast<int>(i % 13) - 6);
  const ChannelTotals totals = channel_totals(in, channels, inner);
  std::vector<float> sums;
  ASSERT_TRUE((run_channel_sum<float, float>(in, channels, inner, sums, 0, 0, stream.get())));
  for (std::size_t c = 0; c < channels; ++c) EXPECT_EQ(sums[c], static_cast<float>(totals.sums[c])) << c;
}

// Refusals: cudaErrorInvalidValue, the sums untouched.
TEST(DeviceChannelSum, BadArgumentsWriteNothing) {
  HARDACT_REQUIRE_DEVICE();
  const std::size_t channels = 6, inner = 7, outer = 5, n = channels * inner * outer;
  GuardedBuffer<float> input(n + 1), output(channels + 1);
  HARDACT_ASSERT_CUDA(input.status());
  HARDACT_ASSERT_CUDA(output.status());
  HARDACT_ASSERT_CUDA(input.upload(std::vector<float>(n + 1, 1.0f)));
  const float* const in = input.data();
  float* const sums = output.data();
  std::size_t bytes = 0;
  HARDACT_ASSERT_CUDA(hardact::channel_sum(nullptr, bytes, in, n, channels, inner, sums));
  ASSERT_GT(bytes, 0u);
  GuardedBuffer<unsigned char> temp(bytes);
  HARDACT_ASSERT_CUDA(temp.status());
  void* const storage = temp.data();
  std::size_t small = bytes - 1, none = 0;
  EXPECT_EQ(hardact::channel_sum(storage, small, in, n, channels, inner, sums), cudaErrorInvalidValue) << "too small";
  EXPECT_EQ(hardact::channel_sum(storage, none, in, n, channels, inner, sums), cudaErrorInvalidValue) << "0 bytes";
  EXPECT_EQ(hardact::channel_sum(storage, bytes, in, n + 1, channels, inner, sums), cudaErrorInvalidValue)
      << "n not a multiple of channels * inner";
  EXPECT_EQ(hardact::channel_sum(storage, bytes, in, n - inner, channels, inner, sums), cudaErrorInvalidValue)
      << "n not a multiple of channels * inner";
  EXPECT_EQ(hardact::channel_sum(storage, bytes, in, n, std::size_t{0}, inner, sums), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::channel_sum(storage, bytes, in, n, channels, std::size_t{0}, sums), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::channel_sum(storage, bytes, in, n, channels, inner, static_cast<float*>(nullptr)),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::channel_sum(storage, bytes, static_cast<const float*>(nullptr), n, channels, inner, sums),
            cudaErrorInvalidValue);
  const auto skew = [](auto* pointer) {
    using P = decltype(pointer);
    return reinterpret_cast<P>(reinterpret_cast<std::uintptr_t>(pointer) + 2);
  };
  EXPECT_EQ(hardact::channel_sum(storage, bytes, skew(in), n, channels, inner, sums), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::channel_sum(storage, bytes, in, n, channels, inner, skew(sums)), cudaErrorInvalidValue);
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  HARDACT_ASSERT_CUDA(cudaGetLastError());
  EXPECT_TRUE(family::payload_untouched(output));
  EXPECT_TRUE(output.guards_intact() && temp.guards_intact());
}

}  // namespace
