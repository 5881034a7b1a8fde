// Broadcast operands through the launchers on the device, in float, double, half and bfloat16:
//  - layouts: a row-major bias per_channel(b, C) (inner 1, also channels-last), NCHW
//    per_channel(v, C, HW) with HW a multiple of the vector width and not (1, 49, 64, 196, 3136), a
//    per-(n, c) gate per_channel(g, N * C, HW), a channels-last per-(n, c) gate
//    per_sample_channel(g, C, HW) (a SampleBroadcast), over device_family.hpp's sweep of sizes;
//  - broadcast shapes beyond the array (inner past n, a period longer than n);
//  - the sizes and offsets of transform_check.hpp (short, boundary and large lengths, head offset
//    pairs, in place) on a bias and on an NCHW scale and shift;
//  - refusals on the device (values inside the output, null, misaligned, zero shapes): nothing
//    written; values next to the output or inside an input are fine.
// Checked calls go through support/broadcast_check.hpp's check_call: bit for bit (NaN as a class)
// against the policy applied on the host to each element's values, a broadcast's value for element
// i being values[(i / inner) % period], on the direct and on the staged path, forced. (The broadcast
// device tests are split over device_broadcast_*_test.cu so that they compile in parallel.)
// HARDACT_TEST_QUICK=1 (compute-sanitizer runs) keeps the sizes small and the placements few.
#include "support/bits.hpp"
#include "support/broadcast_check.hpp"
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/device_family.hpp"
#include "support/divmod_cases.hpp"
#include "support/launch_batch.hpp"
#include "support/paths.hpp"
#include "support/transform_check.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace {

using namespace hardact_test;
using namespace hardact_test::broadcast;

template <class T>
class DeviceBroadcast : public ::testing::Test {};
TYPED_TEST_SUITE(DeviceBroadcast, ElementTypes, TypeNames);

// =============================================================================================
// Layouts.

// A row-major [rows, C] bias (and any channels-last tensor): per_channel(b, C), inner 1.
TYPED_TEST(DeviceBroadcast, RowMajorBias) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const auto op = hardact::bias_activation(hardact::HardSwish{});
  for (const std::size_t n : sweep_sizes()) {
    for (const std::size_t channels : {std::size_t{1}, std::size_t{7}, std::size_t{64}, std::size_t{1000}}) {
      if (n > (std::size_t{1} << 17) && channels != 1000) continue;  // one shape for the largest arrays
      SCOPED_TRACE("C " + std::to_string(channels));
      check_call<T>(op, n, full_input<T>(n, n), channel_input<T>(channels, 1, 17 * n + channels));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  // Whole [rows, C] arrays, C a multiple of the vector width and not.
  const std::size_t shapes[][2] = {{128, 64}, {3, 1000}, {777, 3}, {4096, 1000}};
  for (const auto& shape : shapes) {
    if (family::quick_mode() && shape[0] * shape[1] > 100000) continue;
    const std::size_t n = shape[0] * shape[1];
    SCOPED_TRACE("rows " + std::to_string(shape[0]) + ", C " + std::to_string(shape[1]));
    check_call<T>(op, n, full_input<T>(n, 5 * n), channel_input<T>(shape[1], 1, 91));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// NCHW folded BatchNorm: scale_shift_activation with per_channel(s, C, HW) and per_channel(t, C, HW),
// HW a multiple of every vector width (64, 3136 = 56 x 56) and not (1, 49; 196 = 14 x 14, which
// 16-bit calls take in vectors of half their width).
TYPED_TEST(DeviceBroadcast, NchwScaleShift) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const auto op = hardact::scale_shift_activation(hardact::HardSwish{});
  for (const std::size_t n : sweep_sizes()) {
    for (const std::size_t hw :
         {std::size_t{1}, std::size_t{49}, std::size_t{64}, std::size_t{196}, std::size_t{3136}}) {
      if (n > (std::size_t{1} << 17) && hw != 49) continue;
      SCOPED_TRACE("C 5, HW " + std::to_string(hw));
      check_call<T>(op, n, full_input<T>(n, n + 3), channel_input<T>(5, hw, hw), channel_input<T>(5, hw, hw + 1));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  const std::size_t shapes[][3] = {{2, 3, 3136}, {4, 32, 49}, {3, 64, 1}, {2, 8, 64}, {8, 64, 3136}, {3, 24, 196}};
  for (const auto& shape : shapes) {
    const std::size_t n = shape[0] * shape[1] * shape[2];
    if (family::quick_mode() && n > 100000) continue;
    SCOPED_TRACE("N " + std::to_string(shape[0]) + ", C " + std::to_string(shape[1]) + ", HW " +
                 std::to_string(shape[2]));
    check_call<T>(op, n, full_input<T>(n, 7 * n), channel_input<T>(shape[1], shape[2], 33),
                  channel_input<T>(shape[1], shape[2], 34));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Squeeze-excitation: a per-(n, c) gate per_channel(g, N * C, HW) over NCHW.
TYPED_TEST(DeviceBroadcast, PerSampleChannelGate) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  for (const std::size_t n : sweep_sizes()) {
    for (const std::size_t hw : {std::size_t{1}, std::size_t{8}, std::size_t{49}, std::size_t{196}, std::size_t{3136}}) {
      if (n > (std::size_t{1} << 17) && hw != 3136) continue;
      SCOPED_TRACE("N * C 48, HW " + std::to_string(hw));
      check_call<T>(hardact::HardSigmoidGate{}, n, full_input<T>(n, n + 11), channel_input<T>(48, hw, 3 * hw));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  const std::size_t shapes[][3] = {{2, 24, 49}, {4, 16, 3136}, {1, 960, 1}};
  for (const auto& shape : shapes) {
    const std::size_t n = shape[0] * shape[1] * shape[2];
    if (family::quick_mode() && n > 100000) continue;
    check_call<T>(hardact::HardSigmoidGate{}, n, full_input<T>(n, n), channel_input<T>(shape[0] * shape[1], shape[2], 5));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// A per-(n, c) gate of a channels-last tensor, per_sample_channel(g, C, HW): a SampleBroadcast of
// inner 1, period C, span C * HW. Channel counts that are multiples of every vector width (one
// contiguous load per vector) and odd ones (vectors stepping across a channel wrap and a span's
// end, the per-element path); the NCHW gate written as a span (inner HW, vectors across a run's
// end: two channels), one span or two periods long; whole batches; two
// SampleBroadcasts of one shape (sharing positions) and one beside a plain Broadcast.
TYPED_TEST(DeviceBroadcast, ChannelsLastPerSampleChannelGate) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const hardact::HardSigmoidGate gate;
  const std::size_t shapes[][2] = {{16, 1}, {48, 49}, {3, 7}, {5, 1}, {24, 9}};  // C, HW
  for (const std::size_t n : sweep_sizes()) {
    for (const auto& shape : shapes) {
      const std::size_t c = shape[0], hw = shape[1];
      if (n > (std::size_t{1} << 17) && c != 48) continue;
      SCOPED_TRACE("channels-last gate, C " + std::to_string(c) + ", HW " + std::to_string(hw));
      check_call<T>(gate, n, full_input<T>(n, n + 13), sample_channel_input<T>(n, 1, c, c * hw, 7 * c + hw));
      if (::testing::Test::HasFatalFailure()) return;
    }
    if (n > (std::size_t{1} << 17)) continue;
    SCOPED_TRACE("NCHW gate as a span: inner 49, period 6");
    check_call<T>(gate, n, full_input<T>(n, n + 17), sample_channel_input<T>(n, 49, 6, 6 * 49, 19));
    if (::testing::Test::HasFatalFailure()) return;
    // Two periods a span: a run's end wraps the channel without ending the span.
    SCOPED_TRACE("a span of two periods: inner 49, period 6");
    check_call<T>(gate, n, full_input<T>(n, n + 18), sample_channel_input<T>(n, 49, 6, 2 * 6 * 49, 20));
    if (::testing::Test::HasFatalFailure()) return;
  }
  const std::size_t batches[][3] = {{2, 24, 49}, {8, 960, 49}, {4, 72, 3136}};  // N, C, HW
  for (const auto& batch : batches) {
    const std::size_t c = batch[1], hw = batch[2], n = batch[0] * c * hw;
    if (family::quick_mode() && n > 100000) continue;
    SCOPED_TRACE("channels-last batch " + std::to_string(batch[0]) + " x " + std::to_string(c) + " x " +
                 std::to_string(hw));
    check_call<T>(gate, n, full_input<T>(n, n), sample_channel_input<T>(n, 1, c, c * hw, 23));
    if (::testing::Test::HasFatalFailure()) return;
  }
  const auto batch_norm = hardact::scale_shift_activation(hardact::HardSwish{});
  for (const std::size_t n : {std::size_t{1000}, std::size_t{4 * 72 * 49}}) {
    SCOPED_TRACE("two SampleBroadcasts, and one beside a Broadcast, n " + std::to_string(n));
    check_call<T>(batch_norm, n, full_input<T>(n, n + 1), sample_channel_input<T>(n, 1, 72, 72 * 49, 29),
                  sample_channel_input<T>(n, 1, 72, 72 * 49, 31));
    check_call<T>(batch_norm, n, full_input<T>(n, n + 2), sample_channel_input<T>(n, 1, 72, 72 * 49, 37),
                  channel_input<T>(72, 1, 41));
    check_call<T>(batch_norm, n, full_input<T>(n, n + 3), channel_input<T>(72, 1, 43),
                  sample_channel_input<T>(n, 1, 72, 72 * 49, 47));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// =============================================================================================
// Broadcast shapes beyond the array: inner past n (one value for all), a period longer than n.

TYPED_TEST(DeviceBroadcast, ShapesLargerThanTheArray) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const auto op = hardact::bias_activation(hardact::HardSwish{});
  for (const std::size_t n : {std::size_t{5}, std::size_t{4097}}) {
    check_call<T>(op, n, full_input<T>(n, n), Channels<T>{random_values<T>(3, 9), std::size_t{1} << 62});
    check_call<T>(op, n, full_input<T>(n, n), Channels<T>{random_values<T>(3, 9), SIZE_MAX});
    check_call<T>(op, n, full_input<T>(n, n), channel_input<T>(n + 5, 1, 10));
    check_call<T>(op, n, full_input<T>(n, n), channel_input<T>(n, 1, 11));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// =============================================================================================
// The sweeps of transform_check.hpp (every short length, lengths around vector, block and tile
// multiples, the large lengths, every pair of head offsets, in place at every head offset), on a
// bias over a row-major array and on an NCHW scale and shift.

TYPED_TEST(DeviceBroadcast, TransformCheckSweeps) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const auto bias = hardact::bias_activation(hardact::HardSwish{});
  const auto scale_shift = hardact::scale_shift_activation(hardact::HardSwish{});
  LaunchBatch batch;  // every call below in a few batches: a few round trips in all
  const auto both_paths = [&](std::size_t n, const Placement& placement, auto& op, const auto&... inputs) {
    const auto expected = std::make_shared<const std::vector<T>>(expected_outputs<T>(op, n, inputs...));
    const auto held = std::make_shared<const std::tuple<std::decay_t<decltype(inputs)>...>>(inputs...);
    for (const TransformPath path : paths_under_test<0>()) {
      ASSERT_TRUE(add_call<T>(batch, op, n, expected, placement, path, held));
    }
  };
  const Channels<T> columns = channel_input<T>(7, 1, 70);
  const Channels<T> scales = channel_input<T>(3, 5, 71), shifts = channel_input<T>(3, 5, 72);
  for (const std::size_t n : short_lengths()) {
    const Full<T> x = full_input<T>(n, 1000 + n);
    both_paths(n, {{0, 0, 0}}, bias, x, columns);
    both_paths(n, {{3, 0, 3}}, bias, x, columns);
    both_paths(n, {{3, 1, 2, 3}}, scale_shift, x, scales, shifts);
    if (n % 5 == 0) both_paths(n, {{1, 4, 2}}, bias, x, columns);
    if (::testing::Test::HasFatalFailure()) return;
  }
  for (const std::size_t n : boundary_lengths<T>()) {
    const Full<T> x = full_input<T>(n, 2000 + n);
    both_paths(n, {{0, 0, 0}}, bias, x, columns);
    both_paths(n, {{1, 0, 1}}, bias, x, columns);
    both_paths(n, {{5, 3, 7, 2}}, scale_shift, x, scales, shifts);
    if (::testing::Test::HasFatalFailure()) return;
  }
  for (const std::size_t n : large_lengths<T>()) {
    const Full<T> x = full_input<T>(n, 2000 + n);
    both_paths(n, {{0, 0, 0}}, bias, x, columns);
    both_paths(n, {{5, 1, 1, 2}}, scale_shift, x, scales, shifts);
    if (::testing::Test::HasFatalFailure()) return;
  }
  for (const std::size_t n : quick_mode() ? std::vector<std::size_t>{30, 1000} : std::vector<std::size_t>{1, 30, 1000, 4099}) {
    const Full<T> x = full_input<T>(n, 3000 + n);
    for (const std::size_t in_offset : head_offsets()) {
      for (const std::size_t out_offset : head_offsets()) {
        both_paths(n, {{in_offset, 0, out_offset}}, bias, x, columns);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
  for (const std::size_t n : quick_mode() ? std::vector<std::size_t>{7, 1001}
                                          : std::vector<std::size_t>{1, 7, 100, 1001, 4099, 65539}) {
    const Full<T> x = full_input<T>(n, 4000 + n);
    for (const std::size_t offset : head_offsets()) {
      both_paths(n, {{offset, 2, 0}, 0}, bias, x, columns);
      both_paths(n, {{offset, 1, 3, 0}, 0}, scale_shift, x, scales, shifts);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  ASSERT_TRUE(batch.execute());
}

// =============================================================================================
// Refusals on the device: nothing launched, nothing written; the boundaries that are allowed.

TYPED_TEST(DeviceBroadcast, ValuesInsideTheOutputAreRefused) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  constexpr std::size_t n = 1000, margin = 64;
  const auto op = hardact::bias_activation(hardact::HardSwish{});
  const Full<T> x = full_input<T>(n, 1);
  GuardedBuffer<T> in(n), region(n + 2 * margin), values(8);
  HARDACT_ASSERT_CUDA(in.status());
  HARDACT_ASSERT_CUDA(region.status());
  HARDACT_ASSERT_CUDA(values.status());
  HARDACT_ASSERT_CUDA(in.upload(x.values));
  const std::vector<T> value_data = random_values<T>(8, 2);
  HARDACT_ASSERT_CUDA(values.upload(value_data));
  const T* const x_data = in.data();
  T* const out = region.data() + margin;
  const auto at = [](T* pointer) { return static_cast<const T*>(pointer); };
  const std::size_t refused_shapes[][2] = {{0, 4}, {10, 3}, {n - 1, 1}, {static_cast<std::size_t>(-1), 2}};
  for (const auto& shape : refused_shapes) {
    const hardact::Broadcast<T> b = hardact::per_channel(at(out + static_cast<std::ptrdiff_t>(shape[0])), shape[1]);
    EXPECT_EQ(hardact::transform(op, x_data, b, out, n), cudaErrorInvalidValue) << shape[0];
    EXPECT_EQ(hardact::transform(hardact::HardSigmoidGate{}, b, x_data, out, n), cudaErrorInvalidValue) << shape[0];
  }
  EXPECT_EQ(hardact::transform(op, x_data, hardact::per_channel(at(out - 2), n + 4), out, n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(op, x_data, hardact::per_channel(static_cast<const T*>(nullptr), 4), out, n),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(op, x_data, hardact::Broadcast<T>{values.data(), 0, 4}, out, n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(op, x_data, hardact::Broadcast<T>{values.data(), 1, 0}, out, n), cudaErrorInvalidValue);
  if constexpr (alignof(T) > 1) {
    const T* const misaligned = reinterpret_cast<const T*>(reinterpret_cast<const unsigned char*>(values.data()) + 1);
    EXPECT_EQ(hardact::transform(op, x_data, hardact::per_channel(misaligned, 4), out, n), cudaErrorInvalidValue);
  }
  EXPECT_EQ(hardact::transform(op, x_data, hardact::per_channel(at(values.data()), 4), out,
                               std::size_t{divmod::kTwo63} + 1),
            cudaErrorInvalidValue);
  // In place: values inside x are inside the output.
  EXPECT_EQ(hardact::transform(op, x_data, hardact::per_channel(x_data + 3, 4), in.data(), n), cudaErrorInvalidValue);
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  HARDACT_ASSERT_CUDA(cudaGetLastError());
  EXPECT_TRUE(family::payload_untouched(region));
  EXPECT_TRUE(region.guards_intact());
  std::vector<T> after;
  HARDACT_ASSERT_CUDA(in.download(after));
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(to_bits(after[i]), to_bits(x.values[i])) << "x element " << i;

  // Allowed: values ending right where the output starts, starting right after it, inside x.
  const std::size_t period = 4;
  const std::vector<T> before_values = random_values<T>(period, 3), after_values = random_values<T>(period, 4);
  HARDACT_ASSERT_CUDA(cudaMemcpy(out - period, before_values.data(), period * sizeof(T), cudaMemcpyHostToDevice));
  HARDACT_ASSERT_CUDA(cudaMemcpy(out + n, after_values.data(), period * sizeof(T), cudaMemcpyHostToDevice));
  const struct {
    const T* values;
    std::vector<T> host;
  } allowed[] = {{at(out - period), before_values},
                 {at(out + n), after_values},
                 {x_data + 3, std::vector<T>(x.values.begin() + 3, x.values.begin() + 3 + period)}};
  for (const auto& case_ : allowed) {
    const Channels<T> b{case_.host, 1};
    const std::vector<T> expected = expected_outputs<T>(op, n, x, b);
    for (const TransformPath path : paths_under_test<0>()) {
      const ScopedTransformPath forced(path);
      HARDACT_ASSERT_CUDA(cudaMemset(out, kPoisonByte, n * sizeof(T)));
      HARDACT_ASSERT_CUDA(hardact::transform(op, x_data, hardact::per_channel(case_.values, period), out, n));
      HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
      std::vector<T> outputs(n);
      HARDACT_ASSERT_CUDA(cudaMemcpy(outputs.data(), out, n * sizeof(T), cudaMemcpyDeviceToHost));
      EXPECT_TRUE(family::all_match(x.values, outputs, expected)) << path_name(path);
    }
  }
  std::vector<T> kept(period);
  HARDACT_ASSERT_CUDA(cudaMemcpy(kept.data(), out - period, period * sizeof(T), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < period; ++i) EXPECT_EQ(to_bits(kept[i]), to_bits(before_values[i]));
  HARDACT_ASSERT_CUDA(cudaMemcpy(kept.data(), out + n, period * sizeof(T), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < period; ++i) EXPECT_EQ(to_bits(kept[i]), to_bits(after_values[i]));
  EXPECT_TRUE(region.guards_intact());
}

}  // namespace
