// The launch contract of an OutputWithSums on the host (no GPU needed): a malformed one refused
// whatever n, n == 0 a no-op that looks at no pointer, then the refusals of n > 0 (n not whole
// spans, null, misaligned or overlapping sums, missing or short temporary storage), and
// temp_storage_bytes, which depends on the shape and output type alone. Refusals return before any
// CUDA call (host addresses stand in for device memory and are never dereferenced, as in
// host_launch_contract_test.cu).
#include "support/fake_device_memory.hpp"

#include <hardact/hardact.cuh>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>

namespace {

using hardact_test::FakeDeviceMemory;

constexpr std::size_t kChannels = 8, kPositions = 6, kSamples = 3, kN = kChannels * kPositions * kSamples;

struct SummedArrays {
  FakeDeviceMemory memory;
  const float* x() { return memory.at<float>(0); }
  float* y() { return memory.at<float>(1024); }
  float* sums() { return memory.at<float>(2048); }
  const float* scale() { return memory.at<float>(2560); }
  void* temp() { return memory.at<unsigned char>(3072); }
};

cudaError_t call(SummedArrays& a, const hardact::OutputWithSums<float, float>& out, std::size_t n) {
  return hardact::transform(hardact::ReLU6{}, a.x(), out, n);
}

TEST(HostSummedOutputContract, MalformedIsRefusedWhateverN) {
  SummedArrays a;
  const auto good = hardact::with_sample_channel_sums(a.y(), a.sums(), kChannels, kPositions);
  for (const std::size_t n : {std::size_t{0}, kN}) {
    auto bad = good;
    bad.inner = 0;
    EXPECT_EQ(call(a, bad, n), cudaErrorInvalidValue) << "inner 0, n " << n;
    bad = good;
    bad.period = 0;
    EXPECT_EQ(call(a, bad, n), cudaErrorInvalidValue) << "period 0, n " << n;
    bad = good;
    bad.span = kChannels * kPositions + 1;
    EXPECT_EQ(call(a, bad, n), cudaErrorInvalidValue) << "span not whole rows, n " << n;
    bad = hardact::with_channel_sums(a.y(), a.sums(), kChannels, kPositions);
    bad.span = kChannels;  // shorter than one run of inner * period
    EXPECT_EQ(call(a, bad, n), cudaErrorInvalidValue) << "span under inner * period, n " << n;
  }
  // Three inputs with broadcasts go through the same checks first.
  auto bad = good;
  bad.period = 0;
  EXPECT_EQ(hardact::transform(hardact::scale_shift_activation(hardact::ReLU6{}), a.x(),
                               hardact::per_channel(a.scale(), kChannels), hardact::per_channel(a.scale(), kChannels),
                               bad, 0),
            cudaErrorInvalidValue);
}

TEST(HostSummedOutputContract, EmptyCallLooksAtNoPointer) {
  EXPECT_EQ(hardact::transform(hardact::ReLU6{}, static_cast<const float*>(nullptr),
                               hardact::with_sample_channel_sums(static_cast<float*>(nullptr),
                                                                 static_cast<float*>(nullptr), kChannels, kPositions),
                               0),
            cudaSuccess);
}

TEST(HostSummedOutputContract, BadPointersAndSizesAreRefused) {
  SummedArrays a;
  const auto good = hardact::with_sample_channel_sums(a.y(), a.sums(), kChannels, kPositions);
  EXPECT_EQ(call(a, good, kN - kChannels), cudaErrorInvalidValue) << "n not whole spans";
  EXPECT_EQ(call(a, hardact::with_channel_sums(a.y(), a.sums(), kChannels, kPositions), kN - 1), cudaErrorInvalidValue)
      << "n not whole runs of one span";
  auto bad = good;
  bad.sums = nullptr;
  EXPECT_EQ(call(a, bad, kN), cudaErrorInvalidValue) << "null sums";
  bad.sums = reinterpret_cast<float*>(reinterpret_cast<std::uintptr_t>(a.sums()) + 2);
  EXPECT_EQ(call(a, bad, kN), cudaErrorInvalidValue) << "misaligned sums";
  bad.sums = a.y() + kN - 1;
  EXPECT_EQ(call(a, bad, kN), cudaErrorInvalidValue) << "sums sharing the outputs' last element";
  bad.sums = const_cast<float*>(a.x()) + 4;
  EXPECT_EQ(call(a, bad, kN), cudaErrorInvalidValue) << "sums inside the input";
  EXPECT_EQ(hardact::transform(hardact::HardSigmoidGate{}, a.x(), hardact::per_channel(a.scale(), kChannels),
                               hardact::with_channel_sums(a.y(), const_cast<float*>(a.scale()) + 1, kChannels), kN),
            cudaErrorInvalidValue)
      << "sums over a broadcast's values";
  bad = good;
  bad.values = nullptr;
  EXPECT_EQ(call(a, bad, kN), cudaErrorInvalidValue) << "null outputs";
}

TEST(HostSummedOutputContract, PartialSumsNeedTheirStorage) {
  SummedArrays a;
  // Per channel of NCHW: one partial sum per channel and sample.
  auto per_channel = hardact::with_channel_sums(a.y(), a.sums(), kChannels, kPositions);
  const std::size_t bytes = hardact::temp_storage_bytes(per_channel, kN);
  EXPECT_EQ(bytes, kChannels * kSamples * sizeof(float));
  EXPECT_EQ(call(a, per_channel, kN), cudaErrorInvalidValue) << "no storage";
  per_channel.temp_storage = a.temp();
  per_channel.temp_storage_bytes = bytes - 1;
  EXPECT_EQ(call(a, per_channel, kN), cudaErrorInvalidValue) << "too little";
  per_channel.temp_storage = static_cast<unsigned char*>(a.temp()) + 2;
  per_channel.temp_storage_bytes = bytes;
  EXPECT_EQ(call(a, per_channel, kN), cudaErrorInvalidValue) << "misaligned";
}

TEST(HostSummedOutputContract, StorageDependsOnTheShapeAlone) {
  SummedArrays a, b;
  // Per (n, c) of NCHW: every sum one block's; none.
  EXPECT_EQ(hardact::temp_storage_bytes(hardact::with_channel_sums(a.y(), a.sums(), 64 * 72, 784), 64 * 72 * 784), 0u);
  // Channels-last squeezes of MobileNet-size images: whole partial sums, the same for any pointers.
  for (const auto& [channels, positions] : {std::pair<std::size_t, std::size_t>{72, 784}, {672, 196}, {960, 49}}) {
    const std::size_t n = 64 * channels * positions;
    const std::size_t bytes =
        hardact::temp_storage_bytes(hardact::with_sample_channel_sums(a.y(), a.sums(), channels, positions), n);
    EXPECT_GT(bytes, 0u) << channels;
    EXPECT_EQ(bytes % (64 * channels * sizeof(float)), 0u) << "whole partial sums, " << channels;
    EXPECT_EQ(bytes, hardact::temp_storage_bytes(
                         hardact::with_sample_channel_sums(b.y() + 1, b.sums() + 3, channels, positions), n))
        << channels;
    // bfloat16 outputs still sum in float: the same count of partial sums, of float.
    EXPECT_GT(hardact::temp_storage_bytes(
                  hardact::with_sample_channel_sums(b.memory.at<__nv_bfloat16>(0), b.sums(), channels, positions), n),
              0u);
  }
  // Malformed or empty: 0, and the launcher refuses the malformed.
  EXPECT_EQ(hardact::temp_storage_bytes(hardact::with_channel_sums(a.y(), a.sums(), std::size_t{0}), kN), 0u);
  EXPECT_EQ(hardact::temp_storage_bytes(hardact::with_channel_sums(a.y(), a.sums(), kChannels, kPositions), 0), 0u);
}

// A launch may cut a channels-last span into fewer chunks than its shape's (fit_chunks_to_one_wave)
// so that its blocks fit one wave of the device; never more, so the shape's temporary storage
// always holds the partial sums, and every chunk is still whole groups.
TEST(HostSummedOutputContract, ChunksFitToOneWaveOnlyLowerTheParts) {
  using hardact::detail::SummedLayout;
  struct Shape {
    std::size_t samples, channels, positions;
  };
  for (const Shape s : {Shape{64, 672, 196}, Shape{64, 72, 784}, Shape{64, 960, 49}, Shape{512, 120, 784},
                        Shape{2, 16, 3000}, Shape{4, 3, 100000}}) {
    SCOPED_TRACE(std::to_string(s.samples) + " x " + std::to_string(s.positions) + " x " + std::to_string(s.channels));
    const std::size_t n = s.samples * s.channels * s.positions;
    SummedLayout shape;
    ASSERT_TRUE(hardact::detail::summed_layout(n, 1, s.channels, s.channels * s.positions, 8, shape));
    for (const std::size_t resident : {std::size_t{1}, std::size_t{100}, std::size_t{396}, std::size_t{100000}}) {
      SummedLayout fitted = shape;
      hardact::detail::fit_chunks_to_one_wave(fitted, resident);
      EXPECT_LE(fitted.parts, shape.parts) << resident;
      EXPECT_EQ(fitted.entries, shape.entries);
      const std::size_t wave_chunks = resident / s.samples;
      if (s.samples * shape.parts > resident && wave_chunks >= 1) {
        EXPECT_LE(s.samples * fitted.parts, resident) << "one wave of " << resident;
      } else {
        EXPECT_EQ(fitted.parts, shape.parts) << resident;
      }
      if (fitted.parts > 1) {
        EXPECT_EQ(fitted.rows_per_chunk % (16 / std::gcd(s.channels, std::size_t{16})), 0u) << "whole groups";
        EXPECT_EQ((fitted.rows_per_span + fitted.rows_per_chunk - 1) / fitted.rows_per_chunk, fitted.parts);
      } else {
        EXPECT_EQ(fitted.rows_per_chunk, fitted.rows_per_span);
      }
    }
  }
  // MobileNetV3-large's 14 x 14 x 672 squeeze at batch 64, on 132 multiprocessors of 3 blocks:
  // 8 chunks a sample (512 blocks) become 6 (384).
  SummedLayout layout;
  ASSERT_TRUE(hardact::detail::summed_layout(64 * 672 * 196, 1, 672, 672 * 196, 8, layout));
  EXPECT_EQ(layout.parts, 8u);
  hardact::detail::fit_chunks_to_one_wave(layout, 132 * 3);
  EXPECT_EQ(layout.parts, 6u);
}

// A rows-form call's plan at its width (plan_rows): the chunks fit to one wave and made whole rounds
// of a block's loads, or, where the width divides a row and a wave holds them, one block a span's
// rows in each of a few slices of its channels, no narrower than kSummedRowsLeastColumns vectors
// (no partial sums); never more parts than the shape's, so its storage holds them; the shape's
// chunks and columns when not refit.
template <int Width>
void check_rows_plans() {
  using hardact::detail::RowsGeometry;
  using hardact::detail::SummedLayout;
  constexpr std::size_t kThreads = hardact::detail::kSummedBlockThreads;
  constexpr std::size_t kLeastColumns = hardact::detail::kSummedRowsLeastColumns;
  constexpr std::size_t kRound = hardact::detail::kSummedVectorsInFlight;
  struct Shape {
    std::size_t samples, channels, positions;
  };
  for (const Shape s : {Shape{64, 672, 196}, Shape{64, 72, 784}, Shape{64, 960, 49}, Shape{512, 120, 784},
                        Shape{8, 672, 196}, Shape{2, 16, 3000}, Shape{4, 3, 100000}, Shape{2, 960, 9},
                        Shape{1, 4096, 40}, Shape{1, 16, 12544}}) {
    const std::size_t n = s.samples * s.channels * s.positions;
    SummedLayout shape;
    ASSERT_TRUE(hardact::detail::summed_layout(n, 1, s.channels, s.channels * s.positions, 8, shape));
    const std::size_t group = std::lcm(s.channels, std::size_t{Width});
    const std::size_t group_vectors = group / Width, group_rows = group / s.channels;
    for (const std::size_t resident : {std::size_t{1}, std::size_t{100}, std::size_t{396}, std::size_t{100000}}) {
      for (const bool refit : {true, false}) {
        SCOPED_TRACE("width " + std::to_string(Width) + ", " + std::to_string(s.samples) + " x " +
                     std::to_string(s.positions) + " x " + std::to_string(s.channels) + ", " +
                     std::to_string(resident) + " resident" + (refit ? "" : ", not refit"));
        const auto plan = hardact::detail::plan_rows(shape, Width, kThreads, resident, refit);
        EXPECT_LE(plan.layout.parts, shape.parts);
        EXPECT_EQ(plan.layout.entries, shape.entries);
        RowsGeometry geometry{};
        ASSERT_TRUE((hardact::detail::rows_geometry<Width, kThreads>(plan.layout, plan.columns, geometry)));
        SummedLayout fitted = shape;
        if (refit) hardact::detail::fit_chunks_to_one_wave(fitted, resident);
        if (plan.columns == std::min(group_vectors, kThreads)) {  // chunked
          if (!refit || fitted.parts == 1) {
            EXPECT_EQ(plan.layout.parts, fitted.parts);
            EXPECT_EQ(plan.layout.rows_per_chunk, fitted.rows_per_chunk);
          } else {
            EXPECT_LE(plan.layout.parts, fitted.parts) << "no more than fill one wave";
          }
          if (refit && plan.layout.parts > 1) {
            EXPECT_EQ(plan.layout.rows_per_chunk % group_rows, 0u) << "whole groups";
            EXPECT_EQ(plan.layout.rows_per_chunk / group_rows % (kThreads / plan.columns * kRound), 0u)
                << "whole rounds";
            EXPECT_EQ((plan.layout.rows_per_span + plan.layout.rows_per_chunk - 1) / plan.layout.rows_per_chunk,
                      plan.layout.parts);
          }
          continue;
        }
        EXPECT_TRUE(refit) << "not refit: the shape's columns";
        EXPECT_EQ(s.channels % Width, 0u) << "narrower blocks only where the width divides a row";
        EXPECT_GE(plan.columns, std::min(group_vectors, kLeastColumns));
        EXPECT_EQ(plan.layout.parts, 1u);
        EXPECT_EQ(plan.layout.rows_per_chunk, plan.layout.rows_per_span);
        EXPECT_LE(geometry.blocks, resident) << "one wave";
      }
    }
  }
}

TEST(HostSummedOutputContract, RowsPlansTakeWholeSpansWhereTheyFitAWave) {
  check_rows_plans<8>();
  check_rows_plans<4>();
  check_rows_plans<2>();
  check_rows_plans<1>();
  // MobileNetV3-large's squeezes on 132 multiprocessors of 3 blocks, bfloat16 (8 a vector): at
  // batch 64, a block a sample's 49 rows across 20 of its 120 vectors (12 lanes, 6 blocks a
  // sample); 28 x 28 x 72 (9 vectors a row) and batch 512 keep the shape's chunks, as whole rounds
  // (228 rows over 28 lanes became 224, 2 rounds; 138 over 17, 136).
  using hardact::detail::SummedLayout;
  SummedLayout shape;
  ASSERT_TRUE(hardact::detail::summed_layout(64 * 960 * 49, 1, 960, 960 * 49, 8, shape));
  EXPECT_EQ(shape.parts, 3u);
  auto plan = hardact::detail::plan_rows(shape, 8, 256, 132 * 3, true);
  EXPECT_EQ(plan.layout.parts, 1u);
  EXPECT_EQ(plan.columns, 20u);
  ASSERT_TRUE(hardact::detail::summed_layout(64 * 72 * 784, 1, 72, 72 * 784, 8, shape));
  plan = hardact::detail::plan_rows(shape, 8, 256, 132 * 3, true);
  EXPECT_EQ(plan.layout.parts, shape.parts);
  EXPECT_EQ(plan.layout.rows_per_chunk, 224u);
  EXPECT_EQ(plan.columns, 9u);
  ASSERT_TRUE(hardact::detail::summed_layout(512 * 120 * 784, 1, 120, 120 * 784, 8, shape));
  plan = hardact::detail::plan_rows(shape, 8, 256, 132 * 3, true);
  EXPECT_EQ(plan.layout.parts, shape.parts);
  EXPECT_EQ(plan.layout.rows_per_chunk, 136u);
  EXPECT_EQ(plan.columns, 15u);
}

// A runs-form team gives each lane at least a round of loads of its run (runs_team_shift): the
// most lanes, a power of two up to a warp, that do.
TEST(HostSummedOutputContract, RunsTeamsGiveEachLaneARound) {
  using hardact::detail::runs_team_shift;
  constexpr std::size_t round = hardact::detail::kSummedRunsLeastLaneVectors;
  for (std::size_t vectors = 1; vectors <= 64 * round; ++vectors) {
    SCOPED_TRACE(vectors);
    const std::size_t lanes = std::size_t{1} << runs_team_shift(vectors);
    ASSERT_LE(lanes, 32u);
    if (vectors < 2 * round) {
      EXPECT_EQ(lanes, 1u);
    } else {
      EXPECT_GE(vectors / lanes, round) << lanes << " lanes";
      if (lanes < 32) EXPECT_LT(vectors / (2 * lanes), round) << "twice the lanes would still read a round each";
    }
  }
  // bfloat16 NCHW planes at 4 vectors a round: 14 x 14 in 49 vectors of 4 takes 8 lanes, 28 x 28 in
  // 98 of 8 takes 16 (one round across the team would take 16 and 32).
  EXPECT_EQ(runs_team_shift(49), 3u);
  EXPECT_EQ(runs_team_shift(98), 4u);
  EXPECT_EQ(runs_team_shift(std::size_t{1} << 40), 5u);
}

}  // namespace
