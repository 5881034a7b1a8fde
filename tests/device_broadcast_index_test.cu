// FastDivmod and DeviceBroadcast's index stepping in device code: divmod and divmod32 against
// division on the host's cases (divisors and numerators up to 2^63, and below 2^31), and
// DeviceBroadcast's at() and load<Count>() in calls of up to 2^31 elements (32-bit form) and up to
// 2^63 (64-bit form), for 32-bit values and for the 16-bit and 8-bit ones ValueArray packs, for
// Broadcasts and SampleBroadcasts, with general access and with the run or contiguous access the
// dispatch layer chooses for vectors on a grid.
// HARDACT_TEST_QUICK=1 (compute-sanitizer runs) keeps the cases few.
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/divmod_cases.hpp"
#include "support/transform_check.hpp"

#include <hardact/hardact.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace hardact_test;

constexpr std::uint64_t kTwo63 = divmod::kTwo63;

// =============================================================================================
// FastDivmod and DeviceBroadcast's index stepping in device code.

/// divmod (Wide) or divmod32 of each case's FastDivmod, in device code.
template <bool Wide>
__global__ void divide_on_device(const hardact::detail::FastDivmod* divmods, const std::uint64_t* numerators,
                                 std::uint64_t* quotients, std::uint64_t* remainders, std::size_t count) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  if constexpr (Wide) {
    divmods[i].divmod(numerators[i], quotients[i], remainders[i]);
  } else {
    std::uint32_t q = 0, r = 0;
    divmods[i].divmod32(static_cast<std::uint32_t>(numerators[i]), q, r);
    quotients[i] = q;
    remainders[i] = r;
  }
}

template <bool Wide>
void check_device_division(const std::vector<divmod::Case>& cases) {
  const std::size_t count = cases.size();
  std::vector<hardact::detail::FastDivmod> divmods(count);
  std::vector<std::uint64_t> numerators(count);
  for (std::size_t i = 0; i < count; ++i) {
    divmods[i] = hardact::detail::FastDivmod::make(cases[i].divisor);
    numerators[i] = cases[i].numerator;
  }
  GuardedBuffer<hardact::detail::FastDivmod> device_divmods(count);
  GuardedBuffer<std::uint64_t> device_numerators(count), quotients(count), remainders(count);
  HARDACT_ASSERT_CUDA(device_divmods.status());
  HARDACT_ASSERT_CUDA(device_numerators.status());
  HARDACT_ASSERT_CUDA(quotients.status());
  HARDACT_ASSERT_CUDA(remainders.status());
  HARDACT_ASSERT_CUDA(device_divmods.upload(divmods));
  HARDACT_ASSERT_CUDA(device_numerators.upload(numerators));
  const unsigned blocks = static_cast<unsigned>((count + 255) / 256);
  divide_on_device<Wide><<<blocks, 256>>>(device_divmods.data(), device_numerators.data(), quotients.data(),
                                          remainders.data(), count);
  HARDACT_ASSERT_CUDA(cudaGetLastError());
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  std::vector<std::uint64_t> q, r;
  HARDACT_ASSERT_CUDA(quotients.download(q));
  HARDACT_ASSERT_CUDA(remainders.download(r));
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (q[i] == cases[i].quotient && r[i] == cases[i].remainder) continue;
    if (++mismatches <= 10) {
      ADD_FAILURE() << (Wide ? "" : "divmod32: ") << cases[i].numerator << " / " << cases[i].divisor << ": got (" << q[i] << ", " << r[i]
                    << "), expected (" << cases[i].quotient << ", " << cases[i].remainder << ")";
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << count << (Wide ? "" : " (divmod32)");
}

TEST(DeviceFastDivmod, MatchesDivisionAndRemainder) {
  HARDACT_REQUIRE_DEVICE();
  check_device_division<true>(quick_mode() ? divmod::cases(300, 300, 4) : divmod::cases(5000, 4000, 12));
}

TEST(DeviceFastDivmod, Divmod32MatchesDivisionBelow2To31) {
  HARDACT_REQUIRE_DEVICE();
  check_device_division<false>(quick_mode() ? divmod::cases32(300, 300, 4) : divmod::cases32(5000, 4000, 12));
}

/// For each first index: load<Count>(first) and at(first + j), as the kernels read broadcasts.
/// Values narrower than 32 bits are held packed (ValueArray), two or four to a word.
template <class V, int Count, class Prepared>
__global__ void broadcast_reads(Prepared broadcast, const std::uint64_t* firsts, V* loaded, V* single,
                                std::size_t count) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  hardact::detail::ValueArray<V, Count> values;
  broadcast.template load<Count>(firsts[i], values);
  for (int j = 0; j < Count; ++j) {
    loaded[i * Count + static_cast<std::size_t>(j)] = values.get(j);
    single[i * Count + static_cast<std::size_t>(j)] = broadcast.at(firsts[i] + static_cast<std::size_t>(j));
  }
}

/// Drops the first indexes whose Count elements would pass call_size, reads `broadcast` on the
/// device at each (load<Count>(first) and at(first + j)), and checks both against expected(index);
/// `where` names the case in failure messages.
template <int Count, class V, bool Spanned, class Expected>
void expect_reads_as_prepared(const hardact::detail::DeviceBroadcast<V, Spanned>& broadcast, std::size_t call_size,
                              std::vector<std::uint64_t> firsts, Expected expected, const std::string& where) {
  std::vector<std::uint64_t> in_range;
  for (const std::uint64_t first : firsts)
    if (first <= call_size - Count) in_range.push_back(first);
  firsts.swap(in_range);
  const std::size_t count = firsts.size();
  GuardedBuffer<std::uint64_t> device_firsts(count);
  GuardedBuffer<V> device_loaded(count * Count), device_single(count * Count);
  HARDACT_ASSERT_CUDA(device_firsts.status());
  HARDACT_ASSERT_CUDA(device_loaded.status());
  HARDACT_ASSERT_CUDA(device_single.status());
  HARDACT_ASSERT_CUDA(device_firsts.upload(firsts));
  broadcast_reads<V, Count><<<static_cast<unsigned>((count + 127) / 128), 128>>>(
      broadcast, device_firsts.data(), device_loaded.data(), device_single.data(), count);
  HARDACT_ASSERT_CUDA(cudaGetLastError());
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  std::vector<V> loaded, single;
  HARDACT_ASSERT_CUDA(device_loaded.download(loaded));
  HARDACT_ASSERT_CUDA(device_single.download(single));
  for (std::size_t i = 0; i < count; ++i) {
    for (std::size_t j = 0; j < static_cast<std::size_t>(Count); ++j) {
      const std::uint64_t index = firsts[i] + j;
      ASSERT_EQ(loaded[i * Count + j], expected(index)) << "load<" << Count << ">(" << firsts[i] << ")[" << j << "]" << where;
      ASSERT_EQ(single[i * Count + j], expected(index)) << "at(" << index << ")" << where;
    }
  }
}

/// expect_reads_as_prepared with general access, then with the access the dispatch layer would
/// choose for vectors of Count elements starting at 0, 1 and Count, at the same first indexes moved
/// onto that grid of vectors (where it chooses run or contiguous access).
template <int Count, class V, bool Spanned, class Expected>
void expect_reads(const hardact::detail::DeviceBroadcast<V, Spanned>& broadcast, std::size_t call_size,
                  const std::vector<std::uint64_t>& firsts, Expected expected, const std::string& where) {
  expect_reads_as_prepared<Count>(broadcast, call_size, firsts, expected, where);
  for (const std::uint64_t begin : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{Count}}) {
    if (::testing::Test::HasFatalFailure()) return;
    hardact::detail::DeviceBroadcast<V, Spanned> chosen = broadcast;
    chosen.template choose_access<Count>(begin);
    if (chosen.access == hardact::detail::BroadcastAccess::general) continue;
    std::vector<std::uint64_t> on_grid;
    for (const std::uint64_t first : firsts)
      if (first >= begin) on_grid.push_back(first - (first - begin) % Count);
    const char* const name = chosen.access == hardact::detail::BroadcastAccess::run ? "run" : "contiguous";
    expect_reads_as_prepared<Count>(chosen, call_size, on_grid, expected,
                                    where + ", " + name + " access from " + std::to_string(begin));
  }
}

/// The broadcast {values + skew, inner, period} of a call of `call_size` elements, prepared as the
/// launchers prepare it (the 32-bit form up to 2^31 elements), read at first indexes next to the
/// ends of runs and cycles, of the call, and at random, every index read below call_size.
template <int Count, class V>
void check_broadcast_reads(std::size_t call_size, std::size_t inner, std::size_t period, std::size_t skew,
                           const std::vector<V>& values, GuardedBuffer<V>& device_values) {
  std::vector<std::uint64_t> firsts = {0, 1, inner - 1, inner, call_size - Count, call_size - 64};
  if (inner <= kTwo63 / period) {
    firsts.push_back(inner * period - 1);
    firsts.push_back(inner * period - Count / 2);
    firsts.push_back(3 * inner * period - 2);
  }
  std::mt19937_64 engine(inner * 31 + period);
  for (int k = 0; k < 64; ++k) firsts.push_back((engine() >> (1 + engine() % 63)) % (call_size - Count));
  const hardact::detail::DeviceBroadcast<V> broadcast =
      hardact::detail::prepare_broadcast(hardact::Broadcast<V>{device_values.data() + skew, inner, period}, call_size);
  expect_reads<Count>(
      broadcast, call_size, firsts, [&](std::uint64_t index) { return values[skew + (index / inner) % period]; },
      ", inner " + std::to_string(inner) + ", period " + std::to_string(period) + ", skew " + std::to_string(skew) +
          ", call of " + std::to_string(call_size));
}

// DeviceBroadcast's at() and load<Count>() (one value for a run, contiguous values 16 bytes at a time
// when aligned, a step per element otherwise) in calls of up to 2^31 elements (32-bit form) and up
// to 2^63 (64-bit form), values aligned to 16 bytes and not; 32-bit values, and 16-bit and 8-bit
// ones, which ValueArray packs (8-bit: periods up to 64, so that the values stay distinct).
template <class V>
void check_broadcast_reads_of(std::size_t max_period) {
  std::vector<V> values(max_period + 1);
  for (std::size_t k = 0; k <= max_period; ++k) values[k] = static_cast<V>(k * 2654435761u + 12345u);
  GuardedBuffer<V> device_values(max_period + 1);
  HARDACT_ASSERT_CUDA(device_values.status());
  HARDACT_ASSERT_CUDA(device_values.upload(values));
  const bool quick = quick_mode();
  const std::vector<std::size_t> inners =
      quick ? std::vector<std::size_t>{1, 3, 49, std::size_t{1} << 40}
            : std::vector<std::size_t>{1, 2, 3, 7, 49, 3136, (std::size_t{1} << 20) + 1, std::size_t{1} << 40,
                                       std::size_t{1} << 62, std::size_t{kTwo63}};
  std::vector<std::size_t> periods;
  for (const std::size_t period : quick ? std::vector<std::size_t>{1, 3, 64} : std::vector<std::size_t>{1, 2, 3, 5, 64, 1000})
    if (period <= max_period) periods.push_back(period);
  const std::vector<std::size_t> call_sizes =
      quick ? std::vector<std::size_t>{divmod::kTwo31, kTwo63}
            : std::vector<std::size_t>{std::size_t{1} << 20, divmod::kTwo31, divmod::kTwo31 + 1, kTwo63};
  for (const std::size_t inner : inners) {
    for (const std::size_t period : periods) {
      for (const std::size_t call_size : call_sizes) {
        for (const std::size_t skew : {std::size_t{0}, std::size_t{1}}) {
          check_broadcast_reads<1>(call_size, inner, period, skew, values, device_values);
          check_broadcast_reads<4>(call_size, inner, period, skew, values, device_values);
          check_broadcast_reads<8>(call_size, inner, period, skew, values, device_values);
          check_broadcast_reads<16>(call_size, inner, period, skew, values, device_values);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

// A SampleBroadcast {values + skew, inner, period, span} of a call of `call_size` elements, prepared
// as the launchers prepare it, read as above at first indexes next to the ends of runs, cycles and
// spans: element i reads values[skew + (i / inner) % period + period * (i / span)].
template <int Count, class V>
void check_sample_broadcast_reads(std::size_t call_size, std::size_t inner, std::size_t period, std::size_t span,
                                  std::size_t skew) {
  const std::size_t spans = (call_size - 1) / span + 1;
  std::vector<V> values(skew + period * spans);
  for (std::size_t k = 0; k < values.size(); ++k) values[k] = static_cast<V>(k * 2654435761u + 12345u);
  GuardedBuffer<V> device_values(values.size());
  HARDACT_ASSERT_CUDA(device_values.status());
  HARDACT_ASSERT_CUDA(device_values.upload(values));
  std::vector<std::uint64_t> firsts = {0, 1, inner - 1, inner, span - 1, span - Count / 2, span, call_size - Count,
                                       call_size - 64};
  if (inner <= kTwo63 / period) firsts.push_back(inner * period - Count / 2);
  if (span <= kTwo63 / 3) firsts.push_back(2 * span - 1);
  std::mt19937_64 engine(inner * 31 + period + span);
  for (int k = 0; k < 64; ++k) firsts.push_back((engine() >> (1 + engine() % 63)) % (call_size - Count));
  const hardact::detail::DeviceBroadcast<V, true> broadcast = hardact::detail::prepare_broadcast(
      hardact::SampleBroadcast<V>{device_values.data() + skew, inner, period, span}, call_size);
  expect_reads<Count>(
      broadcast, call_size, firsts,
      [&](std::uint64_t index) { return values[skew + (index / inner) % period + period * (index / span)]; },
      ", inner " + std::to_string(inner) + ", period " + std::to_string(period) + ", span " + std::to_string(span) +
          ", skew " + std::to_string(skew) + ", call of " + std::to_string(call_size));
}

// SampleBroadcasts in the 32-bit form (calls up to 2^31) and the 64-bit one: spans of one period
// (a channels-last gate of 1 x 1 images), of many, and long ones; runs of one element and longer;
// 32-bit and 16-bit values (at most max_values of them, so that they stay distinct).
template <class V>
void check_sample_broadcast_reads_of(std::size_t max_values) {
  struct Shape {
    std::size_t inner, period, periods_per_span;
  };
  const Shape shapes[] = {{1, 3, 1}, {1, 16, 49}, {1, 5, 7}, {2, 3, 4}, {49, 6, 1}, {7, 1000, 3}};
  const std::vector<std::size_t> call_sizes = quick_mode() ? std::vector<std::size_t>{4097, divmod::kTwo31}
                                                           : std::vector<std::size_t>{4097, std::size_t{1} << 20,
                                                                                      divmod::kTwo31, divmod::kTwo31 + 1,
                                                                                      kTwo63};
  for (const Shape& shape : shapes) {
    for (const std::size_t call_size : call_sizes) {
      std::size_t span = shape.inner * shape.period * shape.periods_per_span;
      // At most max_values values: longer spans (a whole multiple still) for the long calls.
      const std::size_t max_spans = max_values / shape.period;
      if ((call_size - 1) / span + 1 > max_spans) span *= (call_size - 1) / (span * max_spans) + 1;
      for (const std::size_t skew : {std::size_t{0}, std::size_t{1}}) {
        check_sample_broadcast_reads<1, V>(call_size, shape.inner, shape.period, span, skew);
        check_sample_broadcast_reads<8, V>(call_size, shape.inner, shape.period, span, skew);
        check_sample_broadcast_reads<16, V>(call_size, shape.inner, shape.period, span, skew);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TEST(DeviceFastDivmod, SampleBroadcastReadsUpTo2To63) {
  HARDACT_REQUIRE_DEVICE();
  check_sample_broadcast_reads_of<std::uint32_t>(1 << 22);
  if (::testing::Test::HasFatalFailure()) return;
  check_sample_broadcast_reads_of<std::uint16_t>(60000);
}

TEST(DeviceFastDivmod, BroadcastReadsUpTo2To63) {
  HARDACT_REQUIRE_DEVICE();
  check_broadcast_reads_of<std::uint32_t>(1000);
}

TEST(DeviceFastDivmod, PackedBroadcastReadsUpTo2To63) {
  HARDACT_REQUIRE_DEVICE();
  check_broadcast_reads_of<std::uint16_t>(1000);
  if (::testing::Test::HasFatalFailure()) return;
  check_broadcast_reads_of<std::uint8_t>(64);
}

}  // namespace
