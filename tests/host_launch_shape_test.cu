// The dispatch layer's shape rule (dispatch/launch_shape.cuh) on the properties of the two Hopper
// cards it was measured on and of cards it was not: which path, how large a staged tile, and when
// the persistent grid takes over. Host only: the rule is arithmetic on cached properties.
#include "support/scoped_tuning.hpp"

#include <hardact/hardact.cuh>
#include <hardact/fp8.cuh>

#include <gtest/gtest.h>

namespace {

using hardact::detail::choose_path;
using hardact::detail::DeviceProperties;
using hardact::detail::peak_bandwidth_from;
using hardact::detail::staged_shape;
using hardact::detail::StagedShape;
using hardact::detail::TransformPath;

/// Properties as cudaDeviceGetAttribute reports them (memory clock in kHz, bus width in bits).
DeviceProperties hopper(int memory_clock_khz, int bus_width_bits, int l2_bytes) {
  DeviceProperties p;
  p.max_grid_dim_x = 2147483647;
  p.compute_capability_major = 9;
  p.multiprocessor_count = 132;
  p.max_threads_per_multiprocessor = 2048;
  p.max_blocks_per_multiprocessor = 32;
  p.shared_memory_per_multiprocessor = 233472;
  p.l2_cache_bytes = l2_bytes;
  p.peak_memory_bandwidth = peak_bandwidth_from(memory_clock_khz, bus_width_bits);
  return p;
}

const DeviceProperties kH100 = hopper(2619000, 5120, 52428800);  // H100 SXM 80GB: 3.35 TB/s
const DeviceProperties kH200 = hopper(3201000, 6144, 62914560);  // H200 SXM 141GB: 4.9 TB/s

TEST(LaunchShape, PeakBandwidthFromClockAndBusWidth) {
  EXPECT_NEAR(kH100.peak_memory_bandwidth, 3.352e12, 1e9);
  EXPECT_NEAR(kH200.peak_memory_bandwidth, 4.917e12, 1e9);
  EXPECT_EQ(peak_bandwidth_from(0, 5120), 0.0);
}

TEST(LaunchShape, OneTileBlocksSizedByLittlesLaw) {
  // 32 KiB in flight per SM on the H100 is met by 16 blocks of 2 KiB; the H200 needs 48 KiB: 4 KiB.
  const StagedShape h100 = staged_shape<float, float>(kH100);
  EXPECT_EQ(h100.tiles_per_block, 1);
  EXPECT_EQ(h100.stages, 1);
  EXPECT_EQ(h100.units_per_thread, 1);
  const StagedShape h200 = staged_shape<float, float>(kH200);
  EXPECT_EQ(h200.tiles_per_block, 1);
  EXPECT_EQ(h200.units_per_thread, 2);
  // Two inputs load twice the bytes per unit: one unit is enough on both cards.
  EXPECT_EQ((staged_shape<float, float, float>(kH200).units_per_thread), 1);
  EXPECT_EQ((staged_shape<float, float, float>(kH100).units_per_thread), 1);
}

TEST(LaunchShape, WideningTilesAreSizedByWhatTheyLoadWhenMarkedAndByWhatTheyStoreWhenPlain) {
  // bfloat16 -> float (copies marked evict-last) loads 8 bytes per unit: 16 blocks x 1 KiB hold
  // neither card's bytes in flight at one unit.
  EXPECT_EQ((staged_shape<float, __nv_bfloat16>(kH100).units_per_thread), 2);
  EXPECT_EQ((staged_shape<float, __nv_bfloat16>(kH200).units_per_thread), 2);
  // float -> double (plain copies) stores 16 bytes per unit: 16 blocks x 2 KiB stored hold the
  // H100's 33 KB at one unit, not the H200's 48 KB.
  EXPECT_EQ((hardact::detail::kStagedSizedTileBytes<double, float>), 128u * 16u);
  EXPECT_EQ((hardact::detail::kStagedSizedTileBytes<float, __nv_bfloat16>), 128u * 8u);
  EXPECT_EQ((staged_shape<double, float>(kH100).units_per_thread), 1);
  EXPECT_EQ((staged_shape<double, float>(kH200).units_per_thread), 2);
}

TEST(LaunchShape, FewerResidentBlocksGetLargerTiles) {
  // A policy that needs many registers (double HardSigmoid: 12 resident blocks of 128 threads, not
  // 16): 12 x 2 KiB holds too little even on the H100, so both cards take 4 KiB.
  hardact::detail::StagedResidency twelve;
  twelve.blocks[0] = twelve.blocks[1] = 12;
  EXPECT_EQ((staged_shape<double, double>(kH100, twelve).units_per_thread), 2);
  EXPECT_EQ((staged_shape<double, double>(kH200, twelve).units_per_thread), 2);
  EXPECT_EQ((staged_shape<double, double>(kH200, twelve).tiles_per_block), 1);
  // With all 16 resident the H100 keeps 2 KiB tiles (within 10% of its 33 KB), the H200 does not.
  EXPECT_EQ((staged_shape<double, double>(kH100).units_per_thread), 1);
  EXPECT_EQ((staged_shape<double, double>(kH200).units_per_thread), 2);
}

TEST(LaunchShape, BroadcastCallsOfSixteenBitOutputsTakeMoreUnits) {
  using hardact::detail::DeviceBroadcasts;
  using hardact::detail::kStagedLeastUnitsPerThread;
  using hardact::detail::kStagedMostUnitsPerThread;
  using hardact::detail::NoBroadcasts;
  using bf16 = __nv_bfloat16;
  // One-input calls (128-thread blocks) take 4; two-input ones 2 (a 4-unit tile of theirs would
  // not fit 48 KiB); float one-input calls with two broadcast operands take 4 (row 51); other float
  // calls and plain calls keep the rule, and never instantiate 4 units.
  EXPECT_EQ((kStagedLeastUnitsPerThread<DeviceBroadcasts<bf16, bf16>, bf16, bf16>), 4);  // a BatchNorm
  EXPECT_EQ((kStagedLeastUnitsPerThread<DeviceBroadcasts<float>, __half, __half>), 4);
  EXPECT_EQ((kStagedLeastUnitsPerThread<DeviceBroadcasts<bf16>, bf16, bf16, bf16>), 2);  // bias backward
  EXPECT_EQ((kStagedLeastUnitsPerThread<DeviceBroadcasts<float, float>, float, float>), 4);  // float BatchNorm
  EXPECT_EQ((kStagedLeastUnitsPerThread<DeviceBroadcasts<float>, float, float>), 1);         // float bias
  EXPECT_EQ((kStagedLeastUnitsPerThread<DeviceBroadcasts<float, float>, float, float, float>), 1);
  EXPECT_EQ((kStagedLeastUnitsPerThread<DeviceBroadcasts<double, double>, double, double>), 1);
  EXPECT_EQ((kStagedLeastUnitsPerThread<NoBroadcasts, bf16, bf16>), 1);
  EXPECT_EQ((kStagedMostUnitsPerThread<DeviceBroadcasts<bf16, bf16>, bf16, bf16>), 4);
  EXPECT_EQ((kStagedMostUnitsPerThread<DeviceBroadcasts<bf16>, bf16, bf16, bf16>), 2);
  EXPECT_EQ((kStagedMostUnitsPerThread<NoBroadcasts, bf16, bf16>), 2);
  EXPECT_EQ((kStagedMostUnitsPerThread<DeviceBroadcasts<float, float>, float, float>), 4);
  EXPECT_EQ((kStagedMostUnitsPerThread<DeviceBroadcasts<float>, float, float>), 2);
  // 16 resident blocks of 2 KiB meet the H100's bytes in flight at one unit; the least wins.
  EXPECT_EQ((staged_shape<bf16, bf16>(kH100).units_per_thread), 1);
  for (const auto& device : {kH100, kH200}) {
    const StagedShape bf16_batchnorm =
        staged_shape<bf16, bf16>(device, hardact::detail::estimated_residency<bf16, bf16>(device), 4, 4);
    EXPECT_EQ(bf16_batchnorm.units_per_thread, 4);
    EXPECT_EQ(bf16_batchnorm.tiles_per_block, 1);  // 8 KiB tiles, 16 resident blocks: one-tile blocks
    EXPECT_EQ(bf16_batchnorm.stages, 1);
  }
  // A least below one is one; above the most, the most.
  EXPECT_EQ((staged_shape<bf16, bf16>(kH100, hardact::detail::estimated_residency<bf16, bf16>(kH100), 0)
                 .units_per_thread),
            1);
  EXPECT_EQ((staged_shape<bf16, bf16>(kH100, hardact::detail::estimated_residency<bf16, bf16>(kH100), 4)
                 .units_per_thread),
            2);
}

// A forced unit count (the tuning knob) below a call's least does not count: the dispatch layer
// instantiates no kernel for it.
TEST(LaunchShape, ForcedUnitsBelowTheLeastDoNotCount) {
  using bf16 = __nv_bfloat16;
  auto& tuning = hardact::detail::transform_tuning();
  const int previous = tuning.staged_units_per_thread.exchange(1);
  const auto residency = hardact::detail::estimated_residency<bf16, bf16>(kH100);
  const int one_with_least_four = staged_shape<bf16, bf16>(kH100, residency, 4, 4).units_per_thread;
  const int one_with_least_one = staged_shape<bf16, bf16>(kH100, residency, 1, 4).units_per_thread;
  tuning.staged_units_per_thread.store(2);
  const int two_with_least_four = staged_shape<bf16, bf16>(kH100, residency, 4, 4).units_per_thread;
  const int two_with_least_two = staged_shape<bf16, bf16>(kH100, residency, 2, 2).units_per_thread;
  tuning.staged_units_per_thread.store(previous);
  EXPECT_EQ(one_with_least_four, 4);
  EXPECT_EQ(one_with_least_one, 1);
  EXPECT_EQ(two_with_least_four, 4);
  EXPECT_EQ(two_with_least_two, 2);
}

TEST(LaunchShape, BroadcastValuesBeyondWhatAThreadHoldsAcrossTheWaitLoadAfterIt) {
  using hardact::detail::DeviceBroadcasts;
  using hardact::detail::kPrefetchedBroadcastUnits;
  using hardact::detail::NoBroadcasts;
  using bf16 = __nv_bfloat16;
  // Units whose values a thread holds across the tile's wait: the most, a power of two, within 64
  // bytes; at least one.
  EXPECT_EQ((kPrefetchedBroadcastUnits<4, DeviceBroadcasts<bf16>, bf16, bf16>), 4);  // 16 bytes a unit
  EXPECT_EQ((kPrefetchedBroadcastUnits<4, DeviceBroadcasts<bf16, bf16>, bf16, bf16>), 2);
  EXPECT_EQ((kPrefetchedBroadcastUnits<4, DeviceBroadcasts<float>, bf16, bf16>), 2);
  EXPECT_EQ((kPrefetchedBroadcastUnits<4, DeviceBroadcasts<float, float>, bf16, bf16>), 1);  // PyTorch's BatchNorm
  EXPECT_EQ((kPrefetchedBroadcastUnits<4, DeviceBroadcasts<float, float>, __half, __half>), 1);
  EXPECT_EQ((kPrefetchedBroadcastUnits<2, DeviceBroadcasts<float, float>, float, float>), 2);  // 32 bytes a unit
  EXPECT_EQ((kPrefetchedBroadcastUnits<2, DeviceBroadcasts<double, double>, float, float>), 1);
  EXPECT_EQ((kPrefetchedBroadcastUnits<2, DeviceBroadcasts<float, float, float>, bf16, bf16>), 1);  // 96 bytes a unit
  EXPECT_EQ((kPrefetchedBroadcastUnits<4, NoBroadcasts, bf16, bf16>), 4);  // nothing to load
}

TEST(LaunchShape, UnitIsOneSixteenByteStoreOfTheOutput) {
  using hardact::detail::kUnitElements;
  EXPECT_EQ((kUnitElements<float, float>), 4);
  EXPECT_EQ((kUnitElements<double, double>), 2);
  EXPECT_EQ((kUnitElements<__nv_bfloat16, float>), 8);   // narrowing: 32 input bytes per 16 stored
  EXPECT_EQ((kUnitElements<float, __nv_bfloat16>), 4);   // widening: 8 input bytes per 16 stored
  EXPECT_EQ((kUnitElements<double, __nv_bfloat16>), 2);  // 4 input bytes, the least a thread reads
  EXPECT_EQ((kUnitElements<double, __nv_fp8_e4m3>), 4);  // so 1-byte inputs give 32-byte stores
}

TEST(LaunchShape, BlocksOfUnitsLoadingThirtyTwoBytesAreLarger) {
  using hardact::detail::kStagedBlockThreads;
  using bf16 = __nv_bfloat16;
  EXPECT_EQ((kStagedBlockThreads<float, float>), 128);         // 16 bytes loaded per unit
  EXPECT_EQ((kStagedBlockThreads<double, double>), 128);
  EXPECT_EQ((kStagedBlockThreads<float, bf16>), 128);          // widening: 8 bytes
  EXPECT_EQ((kStagedBlockThreads<float, float, float>), 384);  // two inputs: 32 bytes
  EXPECT_EQ((kStagedBlockThreads<bf16, bf16, bf16>), 384);
  EXPECT_EQ((kStagedBlockThreads<bf16, float>), 384);          // narrowing: 32 bytes
  // 5 resident blocks of 384 threads x 12 KiB hold Little's law's bytes on both cards at one unit.
  EXPECT_EQ((staged_shape<bf16, float>(kH200).units_per_thread), 1);
  EXPECT_EQ((staged_shape<bf16, float>(kH200).tiles_per_block), 1);
}

TEST(LaunchShape, EvictLastCopiesForSixteenBytesOfEachUnitOfSmallElements) {
  using hardact::detail::evict_last_unit_bytes;
  using hardact::detail::kStagedCaching;
  using hardact::detail::StagedCaching;
  using bf16 = __nv_bfloat16;
  constexpr StagedCaching kHinted = StagedCaching::evict_last_in_flight;
  EXPECT_EQ((kStagedCaching<float, float>), kHinted);
  EXPECT_EQ((kStagedCaching<bf16, bf16>), kHinted);
  EXPECT_EQ((kStagedCaching<__half, __half>), kHinted);
  EXPECT_EQ((kStagedCaching<float, bf16>), kHinted);  // widening
  EXPECT_EQ((kStagedCaching<bf16, float>), kHinted);  // narrowing
  EXPECT_EQ((kStagedCaching<float, float, float>), kHinted);
  EXPECT_EQ((kStagedCaching<bf16, bf16, bf16>), kHinted);
  EXPECT_EQ((kStagedCaching<double, double>), StagedCaching::plain);  // 8-byte elements
  EXPECT_EQ((kStagedCaching<double, float>), StagedCaching::plain);
  EXPECT_EQ((kStagedCaching<float, double>), StagedCaching::plain);
  // 16 bytes of each unit, the last inputs first.
  EXPECT_EQ((evict_last_unit_bytes<0, float, float>()), 16u);
  EXPECT_EQ((evict_last_unit_bytes<0, float, float, float>()), 0u);
  EXPECT_EQ((evict_last_unit_bytes<1, float, float, float>()), 16u);
  EXPECT_EQ((evict_last_unit_bytes<0, bf16, bf16, bf16>()), 0u);
  EXPECT_EQ((evict_last_unit_bytes<1, bf16, bf16, bf16>()), 16u);
  EXPECT_EQ((evict_last_unit_bytes<0, float, bf16>()), 8u);   // all of its 8-byte unit
  EXPECT_EQ((evict_last_unit_bytes<0, bf16, float>()), 16u);  // half of its 32-byte unit
  EXPECT_EQ((evict_last_unit_bytes<0, bf16, float, float>()), 0u);
  EXPECT_EQ((evict_last_unit_bytes<1, bf16, float, float>()), 16u);
  EXPECT_EQ((evict_last_unit_bytes<0, float, bf16, bf16>()), 8u);  // 8 + 8
  EXPECT_EQ((evict_last_unit_bytes<1, float, bf16, bf16>()), 8u);
  EXPECT_FALSE(hardact::detail::caching_has(StagedCaching::plain, kHinted));
  EXPECT_TRUE(hardact::detail::caching_has(kHinted, kHinted));
}

TEST(LaunchShape, MarkedPartIsTheWindowsEndFromAnL2Line) {
  using hardact::detail::GranuleWindow;
  using hardact::detail::marked_part;
  // Half of a 4 KiB window on lines: its second half.
  GranuleWindow window{0x10000, 4096};
  GranuleWindow marked = marked_part<16, 32>(window);
  EXPECT_EQ(marked.begin, 0x10000u + 2048u);
  EXPECT_EQ(marked.bytes, 2048u);
  // A shifted window (one granule more, off a line): the cut goes down to a line, so at least the
  // share asked for is marked, and the part ends where the window does.
  window = GranuleWindow{0x10010, 4112};
  marked = marked_part<16, 32>(window);
  EXPECT_EQ(marked.begin % 128, 0u);
  EXPECT_LE(marked.begin, 0x10010u + 4112u / 2);
  EXPECT_EQ(marked.begin + marked.bytes, 0x10010u + 4112u);
  // A window shorter than a line is marked whole; a whole unit marks the whole window.
  window = GranuleWindow{0x10040, 32};
  EXPECT_EQ((marked_part<16, 32>(window).begin), 0x10040u);
  EXPECT_EQ((marked_part<16, 32>(window).bytes), 32u);
  EXPECT_EQ((marked_part<16, 16>(GranuleWindow{0x10010, 4112}).bytes), 4112u);
}

TEST(LaunchShape, StagedRangeStartsOnAKibibyteBoundaryOfTheOutput) {
  using hardact::detail::kStagedBoundaryBytes;
  using hardact::detail::staged_range;
  using Tile = hardact::detail::StagedTileOf<1, float, float>;
  // Addresses only: the range is arithmetic on them. The output is 4 bytes past a boundary, the
  // input 8 bytes past a granule (misaligned relative to the output).
  const std::uintptr_t out_base = std::uintptr_t(1) << 30, in_base = (std::uintptr_t(3) << 30) + 64;
  float* out = reinterpret_cast<float*>(out_base + 4);
  const float* in = reinterpret_cast<const float*>(in_base + 8);
  const std::size_t n = (std::size_t(1) << 20) + 5;
  const auto range = staged_range<Tile>(n, static_cast<const float*>(out), in);
  EXPECT_EQ(range.staged_begin, (kStagedBoundaryBytes - 4) / sizeof(float));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(out + range.staged_begin) % kStagedBoundaryBytes, 0u);
  EXPECT_EQ((range.staged_end - range.staged_begin) % Tile::kUnit, 0u);
  EXPECT_LE(reinterpret_cast<std::uintptr_t>(in + range.staged_end), (reinterpret_cast<std::uintptr_t>(in + n) & ~std::uintptr_t(15)));
  EXPECT_EQ(range.num_tiles, (range.staged_end - range.staged_begin + Tile::kElements - 1) / Tile::kElements);
  // Shorter than the distance to the boundary: nothing is staged, the ends do it all.
  const auto short_range = staged_range<Tile>(200, static_cast<const float*>(out), in);
  EXPECT_EQ(short_range.num_tiles, 0u);
  EXPECT_EQ(short_range.staged_begin, short_range.staged_end);
}

TEST(LaunchShape, TwoRowsFormForLongRunsOfOneElementOnTheH200) {
  using hardact_test::ScopedTwoRows;
  using hardact::per_channel;
  using hardact::detail::prepare_broadcast;
  using hardact::detail::staged_range;
  using hardact::detail::two_rows_halves_apart;
  using bf16 = __nv_bfloat16;
  using Tile = hardact::detail::StagedTileOf<4, bf16, bf16>;
  static_assert(Tile::kElements == 4096, "the cases below count bfloat16 tiles of 4096 elements");
  const std::size_t max_blocks = 2147483647;
  // Addresses only: the rule is arithmetic on them.
  bf16* out = reinterpret_cast<bf16*>(std::uintptr_t(1) << 30);
  const bf16* x = reinterpret_cast<const bf16*>(std::uintptr_t(3) << 30);
  const float* bias = reinterpret_cast<const float*>(std::uintptr_t(5) << 30);
  const auto apart = [&](const DeviceProperties& device, std::size_t period, std::size_t n, const bf16* in,
                         std::size_t inner = 1) {
    const auto broadcasts = hardact::detail::DeviceBroadcasts<float>(prepare_broadcast(per_channel(bias, period, inner), n));
    return two_rows_halves_apart<Tile>(device, broadcasts, staged_range<Tile>(n, static_cast<const bf16*>(out), in),
                                       max_blocks, in);
  };
  const std::size_t row = 393216, n = 64 * row;  // bench_fused.py's bias over the last dimension
  // The rule: the H200 takes the form, its halves a row (192 half tiles) apart; the H100 does not.
  EXPECT_EQ(apart(kH200, row, n, x), 192u);
  EXPECT_EQ(apart(kH100, row, n, x), 0u);
  // Runs longer than one element, periods of less than a tile or not whole half tiles, and calls
  // of less than two periods keep the one-tile form.
  EXPECT_EQ(apart(kH200, row, n, x, 2), 0u);
  EXPECT_EQ(apart(kH200, 2048, n, x), 0u);
  EXPECT_EQ(apart(kH200, 4096, n, x), 2u);
  EXPECT_EQ(apart(kH200, 4096 + 1024, n, x), 0u);
  EXPECT_EQ(apart(kH200, row, row + row / 2, x), 0u);
  // An input off its granule where the staged range starts keeps it too (the halves land whole).
  EXPECT_EQ(apart(kH200, row, n - 64, x + 1), 0u);
  // Operands of different periods cannot share their values between the rows.
  {
    const auto two = hardact::detail::DeviceBroadcasts<float, float>(
        prepare_broadcast(per_channel(bias, row), n), prepare_broadcast(per_channel(bias, 2 * row), n));
    EXPECT_EQ(two_rows_halves_apart<Tile>(kH200, two, staged_range<Tile>(n, static_cast<const bf16*>(out), x),
                                          max_blocks, x),
              0u);
  }
  // Forced (tests): every device, down to half a tile; never: not even the H200.
  {
    const ScopedTwoRows forced(1);
    EXPECT_EQ(apart(kH100, row, n, x), 192u);
    EXPECT_EQ(apart(kH100, 2048, n, x), 1u);
  }
  {
    const ScopedTwoRows never(-1);
    EXPECT_EQ(apart(kH200, row, n, x), 0u);
  }
}

TEST(LaunchShape, PersistentRingWhenOneTileBlocksCannotHoldEnough) {
  // A card with the H200's bandwidth on a quarter of the multiprocessors and an eighth of the
  // threads: 2 resident one-tile blocks cannot cover Little's law, so blocks keep several tiles
  // in flight.
  DeviceProperties narrow = kH200;
  narrow.multiprocessor_count = 33;
  narrow.max_threads_per_multiprocessor = 256;
  const StagedShape shape = staged_shape<float, float>(narrow);
  EXPECT_EQ(shape.tiles_per_block, 0);
  EXPECT_GE(shape.stages, 2);
  EXPECT_GT(shape.blocks_per_multiprocessor, 0);
}

TEST(LaunchShape, PathBySizeAndArchitecture) {
  using hardact::detail::DirectAccess;
  const StagedShape shape = staged_shape<float, float>(kH100);
  const DirectAccess full_width;
  const double l2 = static_cast<double>(kH100.l2_cache_bytes);
  EXPECT_EQ(choose_path(kH100, static_cast<std::size_t>(l2), full_width, shape), TransformPath::direct);
  EXPECT_EQ(choose_path(kH100, static_cast<std::size_t>(64 * l2), full_width, shape), TransformPath::staged);
  DeviceProperties ampere = kH100;
  ampere.compute_capability_major = 8;
  EXPECT_EQ(choose_path(ampere, static_cast<std::size_t>(64 * l2), full_width, shape), TransformPath::direct);
}

TEST(LaunchShape, StagedPathFromWhereTheDirectPathFallsBehind) {
  using hardact::detail::DirectAccess;
  using hardact::detail::staged_path_minimum_bytes;
  // The direct kernel's 2048 threads x 16 bytes hold the H100's 32 KiB of Little's law, not the
  // H200's 48 KiB: staged from 4 x L2 on the one, 2 x L2 on the other.
  const DirectAccess full_width;
  EXPECT_DOUBLE_EQ(staged_path_minimum_bytes(kH100, full_width), 4.0 * kH100.l2_cache_bytes);
  EXPECT_DOUBLE_EQ(staged_path_minimum_bytes(kH200, full_width), 2.0 * kH200.l2_cache_bytes);
  // double: 32 bytes per thread hold both.
  DirectAccess two_vectors;
  two_vectors.bytes_per_thread = 32;
  EXPECT_DOUBLE_EQ(staged_path_minimum_bytes(kH200, two_vectors), 4.0 * kH200.l2_cache_bytes);
  // Accesses narrower than 4 bytes (16-bit elements misaligned relative to each other): from 1 x L2.
  DirectAccess narrow;
  narrow.narrowest_access_bytes = 2;
  EXPECT_DOUBLE_EQ(staged_path_minimum_bytes(kH100, narrow), 1.0 * kH100.l2_cache_bytes);
  EXPECT_DOUBLE_EQ(staged_path_minimum_bytes(kH200, narrow), 1.0 * kH200.l2_cache_bytes);
  DirectAccess four_bytes;
  four_bytes.narrowest_access_bytes = 4;
  EXPECT_DOUBLE_EQ(staged_path_minimum_bytes(kH100, four_bytes), 4.0 * kH100.l2_cache_bytes);
}

TEST(LaunchShape, DirectBlocksOfBroadcastCallsAreSmallerWithMoreBytesPerThread) {
  using hardact::detail::kBlockThreads;
  using hardact::detail::kBytesPerThread;
  using hardact::detail::NoBroadcasts;
  using OneBroadcast = cuda::std::tuple<hardact::detail::DeviceBroadcast<float>>;
  // Plain calls of elements up to 4 bytes: 1024 threads x 16 bytes (unless a knob says otherwise).
  EXPECT_EQ((kBlockThreads<NoBroadcasts, float, float>), HARDACT_BLOCK_THREADS);
  EXPECT_EQ((kBytesPerThread<NoBroadcasts, __nv_bfloat16, __nv_bfloat16>), HARDACT_BYTES_PER_THREAD);
  // With a broadcast operand, and for 8-byte elements: 256 threads x at least 32 bytes.
  EXPECT_EQ((kBlockThreads<OneBroadcast, float, float>), 256);
  EXPECT_GE((kBytesPerThread<OneBroadcast, __nv_bfloat16, __nv_bfloat16>), 32);
  EXPECT_EQ((kBlockThreads<NoBroadcasts, double, double>), 256);
  EXPECT_GE((kBytesPerThread<NoBroadcasts, double, double>), 32);
}

TEST(LaunchShape, DirectWidthFollowsRelativeAlignment) {
  using bf16 = __nv_bfloat16;
  alignas(256) static bf16 out[64];
  alignas(256) static bf16 in[64];
  const auto width = [](const bf16* o, const bf16* i) { return hardact::detail::widest_aligned_width<8>(o, i); };
  EXPECT_EQ(width(out, in), 8);
  EXPECT_EQ(width(out + 1, in + 1), 8);  // misaligned together: a scalar head, then full width
  EXPECT_EQ(width(out, in + 1), 1);      // relatively misaligned by 2 bytes: 2-byte accesses
  EXPECT_EQ(width(out, in + 2), 2);
  EXPECT_EQ(width(out, in + 4), 4);
}

TEST(LaunchShape, StagedShapeIsWorkedOutOnlyWhenTheStagedPathIsWanted) {
  using hardact::detail::DirectAccess;
  using hardact::detail::staged_path_wanted;
  const DirectAccess full_width;
  const double l2 = static_cast<double>(kH200.l2_cache_bytes);
  EXPECT_FALSE(staged_path_wanted(kH200, static_cast<std::size_t>(l2), full_width));
  EXPECT_TRUE(staged_path_wanted(kH200, static_cast<std::size_t>(2 * l2), full_width));
  DeviceProperties ampere = kH200;
  ampere.compute_capability_major = 8;
  EXPECT_FALSE(staged_path_wanted(ampere, static_cast<std::size_t>(64 * l2), full_width));
  // A staged shape that does not fit leaves the direct path even when the staged one is wanted.
  StagedShape unfit = staged_shape<float, float>(kH200);
  unfit.stages = 0;
  EXPECT_EQ(choose_path(kH200, static_cast<std::size_t>(64 * l2), full_width, unfit), TransformPath::direct);
  const hardact::detail::ScopedTransformPath staged(TransformPath::staged);
  EXPECT_TRUE(staged_path_wanted(ampere, 16, full_width));
}

TEST(LaunchShape, ForcedPathWins) {
  const StagedShape shape = staged_shape<float, float>(kH100);
  const hardact::detail::DirectAccess full_width;
  {
    const hardact::detail::ScopedTransformPath staged(TransformPath::staged);
    EXPECT_EQ(choose_path(kH100, 16, full_width, shape), TransformPath::staged);
  }
  {
    const hardact::detail::ScopedTransformPath direct(TransformPath::direct);
    EXPECT_EQ(choose_path(kH100, std::size_t(1) << 40, full_width, shape), TransformPath::direct);
  }
  EXPECT_EQ(choose_path(kH100, 16, full_width, shape), TransformPath::direct);
}

}  // namespace
