// Broadcast operands on the host (no GPU needed):
//  - detail::FastDivmod against the 64-bit `/` and `%` on its whole domain (divisors in [1, 2^63],
//    numerators below 2^63), its 32-bit form divmod32 on its own (divisors up to 2^31, numerators
//    below 2^31), and multiply_high against 128-bit products;
//  - Broadcast / per_channel and the operand traits; prepare_broadcast's clamping to n and its
//    choice of the 32-bit form;
//  - detail::OperandOrder: a policy that records its arguments gets them in the user's order for
//    every pattern of broadcast and full-length operands of 2 to 4 inputs, and the dispatch layer's
//    split (OperandSplit) puts them in the kernel's order that OperandOrder undoes.
// (The host broadcast tests are split over host_broadcast_*_test.cu so that they compile in
// parallel.)
#include "support/bits.hpp"
#include "support/divmod_cases.hpp"

#include <hardact/hardact.cuh>

#include <cuda/std/tuple>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using namespace hardact_test;
using hardact::detail::FastDivmod;


// =============================================================================================
// FastDivmod and multiply_high.

TEST(HostFastDivmod, MatchesDivisionAndRemainder) {
  EXPECT_TRUE(divmod::host_divmod_matches<FastDivmod>(divmod::cases()));
}

// The 32-bit form the kernels take for calls of at most 2^31 elements: divisors up to 2^31,
// numerators below 2^31.
TEST(HostFastDivmod, Divmod32MatchesDivisionBelow2To31) {
  EXPECT_TRUE(divmod::host_divmod32_matches<FastDivmod>(divmod::cases32()));
  // Divisor 2^31 (the largest in that domain), and the divisors on each side of every power of two,
  // where the multiplier (less 2^32) is smallest (1 at 2^k) and largest (just above 2^k).
  std::vector<std::uint64_t> divisors = {divmod::kTwo31, 3, 1};
  for (unsigned k = 1; k < 31; ++k) {
    for (const std::uint64_t d : {(std::uint64_t{1} << k) - 1, std::uint64_t{1} << k, (std::uint64_t{1} << k) + 1}) {
      divisors.push_back(d);
    }
  }
  for (const std::uint64_t d : divisors) {
    const FastDivmod f = FastDivmod::make(d);
    for (const std::uint32_t n : {0u, 1u, 0x7fffffffu, 0x7ffffffeu, 0x40000000u, 0x40000001u}) {
      std::uint32_t q = 0, r = 0;
      f.divmod32(n, q, r);
      EXPECT_EQ(q, n / d) << n << " / " << d;
      EXPECT_EQ(r, n % d) << n << " % " << d;
    }
  }
}

// Every numerator of a small range against every small divisor: no gaps between the chosen points.
TEST(HostFastDivmod, EveryNumeratorBelow4096ForDivisorsBelow300) {
  std::size_t mismatches = 0;
  for (std::uint64_t d = 1; d < 300; ++d) {
    const FastDivmod divmod = FastDivmod::make(d);
    for (std::uint64_t n = 0; n < 4096; ++n) {
      std::uint64_t q = 0, r = 0;
      divmod.divmod(n, q, r);
      std::uint32_t q32 = 0, r32 = 0;
      divmod.divmod32(static_cast<std::uint32_t>(n), q32, r32);
      if (q != n / d || r != n % d || q32 != n / d || r32 != n % d) {
        if (++mismatches <= 5) {
          ADD_FAILURE() << n << " / " << d << ": got (" << q << ", " << r << "), 32-bit (" << q32 << ", " << r32 << ")";
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(HostFastDivmod, DomainEnds) {
  // Divisor 1 is n itself; divisor 2^63 (the largest FastDivmod takes) gives 0 below 2^63.
  const FastDivmod one = FastDivmod::make(1);
  EXPECT_EQ(one.divisor, 1u);
  for (const std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, divmod::kTwo63 - 1}) EXPECT_EQ(one.divide(n), n);
  const FastDivmod top = FastDivmod::make(divmod::kTwo63);
  for (const std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, divmod::kTwo63 / 2, divmod::kTwo63 - 1}) {
    std::uint64_t q = 1, r = 0;
    top.divmod(n, q, r);
    EXPECT_EQ(q, 0u) << n;
    EXPECT_EQ(r, n);
  }
  // Multipliers fit 64 bits: the largest ones are for divisors just above a power of two.
  for (int k = 1; k < 63; ++k) {
    const std::uint64_t d = (std::uint64_t{1} << k) + 1;
    const FastDivmod f = FastDivmod::make(d);
    EXPECT_EQ(f.divide(divmod::kTwo63 - 1), (divmod::kTwo63 - 1) / d) << d;
    EXPECT_EQ(f.divide((divmod::kTwo63 - 1) / d * d - 1), (divmod::kTwo63 - 1) / d - 1) << d;
  }
}

TEST(HostFastDivmod, MultiplyHighMatches128BitProducts) {
  EXPECT_TRUE(divmod::multiply_high_matches(
      [](std::uint64_t a, std::uint64_t b) { return hardact::detail::multiply_high(a, b); }));
}

// =============================================================================================
// Broadcast, per_channel and the operand traits.

constexpr float kChannelValues[4] = {1.0f, 2.0f, 3.0f, 4.0f};

static_assert(hardact::per_channel(kChannelValues, 4).values == kChannelValues);
static_assert(hardact::per_channel(kChannelValues, 4).period == 4 && hardact::per_channel(kChannelValues, 4).inner == 1,
              "per_channel(v, C): a row-major bias, inner 1");
static_assert(hardact::per_channel(kChannelValues, 4, 49).period == 4 &&
                  hardact::per_channel(kChannelValues, 4, 49).inner == 49,
              "per_channel(v, C, HW): {v, inner HW, period C}");
static_assert(hardact::Broadcast<float>{}.values == nullptr && hardact::Broadcast<float>{}.inner == 1 &&
                  hardact::Broadcast<float>{}.period == 1,
              "defaults");
static_assert(std::is_same_v<decltype(hardact::per_channel(kChannelValues, 4)), hardact::Broadcast<float>>);
static_assert(std::is_trivially_copyable_v<hardact::Broadcast<__nv_bfloat16>> &&
              std::is_aggregate_v<hardact::Broadcast<double>>);

using hardact::detail::is_operand_v;
static_assert(is_operand_v<const float*> && is_operand_v<float*> && is_operand_v<const __half*>);
static_assert(is_operand_v<hardact::Broadcast<float>> && is_operand_v<hardact::Broadcast<__nv_bfloat16>>);
static_assert(!is_operand_v<float> && !is_operand_v<int> && !is_operand_v<std::size_t>);
static_assert(std::is_same_v<hardact::detail::operand_element<const float*>::type, float>);
static_assert(std::is_same_v<hardact::detail::operand_element<hardact::Broadcast<const double>>::type, double>);
static_assert(hardact::detail::kMaxBroadcastElements == divmod::kTwo63);

// The launchers' new overloads: 2, 3 and 4 inputs, each a pointer or a Broadcast, and unchanged
// one-input overloads.
template <class T>
constexpr const T* kIn = nullptr;
template <class T>
constexpr T* kOut = nullptr;
template <class T>
constexpr hardact::Broadcast<T> kB{};
constexpr std::size_t kNoElements = 0;
static_assert(std::is_same_v<decltype(hardact::transform(hardact::Add{}, kIn<float>, kB<float>, kOut<float>, kNoElements)),
                             cudaError_t>);
static_assert(std::is_same_v<decltype(hardact::transform(hardact::Add{}, kB<float>, kIn<float>, kOut<float>, kNoElements,
                                                         cudaStream_t{})),
                             cudaError_t>);
static_assert(std::is_same_v<decltype(hardact::transform(hardact::scale_shift_activation(hardact::HardSwish{}),
                                                         kIn<__nv_bfloat16>, kB<float>, kB<float>,
                                                         kOut<__nv_bfloat16>, kNoElements)),
                             cudaError_t>);
static_assert(std::is_same_v<decltype(hardact::transform<2>(
                                 hardact::ScaleShiftActivationBackward<hardact::HardSwishBackward>{}, kIn<double>,
                                 kIn<double>, kB<double>, kB<double>, kOut<double>, kNoElements)),
                             cudaError_t>);
static_assert(std::is_same_v<decltype(hardact::transform(hardact::HardSigmoid{}, kIn<float>, kOut<float>, kNoElements)),
                             cudaError_t>);

// prepare_broadcast clamps inner and period to n (keeping FastDivmod's divisors within 2^63, and
// within 2^31 for the 32-bit form calls of at most 2^31 elements take) without changing
// (i / inner) % period for any i < n, with either form.
TEST(HostBroadcastOperand, PrepareBroadcastKeepsEveryIndex) {
  const float* const values = kChannelValues;
  const std::size_t kHuge[] = {std::size_t{1} << 40, std::size_t{divmod::kTwo63}, std::size_t{divmod::kTwo63} + 1,
                               SIZE_MAX};
  std::size_t checked = 0;
  for (std::size_t n = 1; n <= 130; ++n) {
    std::vector<std::size_t> shapes = {1, 2, 3, 7, 49, n - 1 > 0 ? n - 1 : 1, n, n + 1, 2 * n};
    shapes.insert(shapes.end(), std::begin(kHuge), std::end(kHuge));
    for (const std::size_t inner : shapes) {
      for (const std::size_t period : shapes) {
        const auto prepared = hardact::detail::prepare_broadcast(hardact::Broadcast<float>{values, inner, period}, n);
        ASSERT_EQ(prepared.values, values);
        ASSERT_LE(prepared.inner.divisor, n);
        ASSERT_LE(prepared.period.divisor, n);
        ASSERT_TRUE(prepared.narrow) << "a call of " << n << " elements takes the 32-bit form";
        for (std::size_t i = 0; i < n; ++i) {
          std::uint64_t row = 0, offset = 0, cycle = 0, channel = 0;
          prepared.inner.divmod(i, row, offset);
          prepared.period.divmod(row, cycle, channel);
          ASSERT_EQ(channel, (i / inner) % period) << "i " << i << ", n " << n << ", inner " << inner << ", period "
                                                   << period;
          ASSERT_EQ(offset, i % std::min(inner, n));
          std::uint32_t row32 = 0, offset32 = 0, cycle32 = 0, channel32 = 0;
          prepared.inner.divmod32(static_cast<std::uint32_t>(i), row32, offset32);
          prepared.period.divmod32(row32, cycle32, channel32);
          ASSERT_EQ(channel32, channel) << "32-bit form, i " << i << ", inner " << inner << ", period " << period;
          ASSERT_EQ(offset32, offset);
          ++checked;
        }
      }
    }
  }
  // The largest call of the 32-bit form, n = 2^31, and the smallest past it; their last indexes.
  for (const std::size_t n : {std::size_t{divmod::kTwo31}, std::size_t{divmod::kTwo31} + 1}) {
    for (const std::size_t inner : {std::size_t{1}, std::size_t{49}, std::size_t{divmod::kTwo63}, SIZE_MAX}) {
      for (const std::size_t period : {std::size_t{3}, std::size_t{1000}, std::size_t{1} << 40, SIZE_MAX}) {
        const auto prepared = hardact::detail::prepare_broadcast(hardact::Broadcast<float>{values, inner, period}, n);
        EXPECT_EQ(prepared.narrow, n <= divmod::kTwo31) << n;
        for (std::uint64_t i = n - 5; i < n; ++i) {
          std::uint64_t row = 0, offset = 0, cycle = 0, channel = 0;
          prepared.inner.divmod(i, row, offset);
          prepared.period.divmod(row, cycle, channel);
          EXPECT_EQ(channel, (i / inner) % period) << "i " << i << ", inner " << inner << ", period " << period;
          if (prepared.narrow) {
            std::uint32_t row32 = 0, offset32 = 0, cycle32 = 0, channel32 = 0;
            prepared.inner.divmod32(static_cast<std::uint32_t>(i), row32, offset32);
            prepared.period.divmod32(row32, cycle32, channel32);
            EXPECT_EQ(channel32, (i / inner) % period) << "32-bit form, i " << i << ", inner " << inner;
          }
        }
      }
    }
  }
  // The largest call a broadcast takes: n = 2^63, the last indexes.
  for (const std::size_t inner : {std::size_t{1}, std::size_t{3}, std::size_t{1} << 40, SIZE_MAX}) {
    for (const std::size_t period : {std::size_t{1}, std::size_t{7}, std::size_t{divmod::kTwo63}, SIZE_MAX}) {
      const auto prepared =
          hardact::detail::prepare_broadcast(hardact::Broadcast<float>{values, inner, period}, divmod::kTwo63);
      EXPECT_FALSE(prepared.narrow);
      for (std::uint64_t i = divmod::kTwo63 - 5; i < divmod::kTwo63; ++i) {
        std::uint64_t row = 0, offset = 0, cycle = 0, channel = 0;
        prepared.inner.divmod(i, row, offset);
        prepared.period.divmod(row, cycle, channel);
        EXPECT_EQ(channel, (i / inner) % period) << "i " << i << ", inner " << inner << ", period " << period;
      }
    }
  }
  EXPECT_GT(checked, 0u);
}

// choose_access: `run` only where every vector of the call lies inside one run of inner elements,
// `contiguous` only where inner is 1, every vector's values are consecutive inside one period (of
// one span) and its vector loads are aligned; and the layouts the fused rows use get them (NCHW:
// run; channels-last and a row's bias: contiguous).
template <class T, int Count, bool Spanned>
void check_access_choice(std::size_t n, std::size_t inner, std::size_t period, std::size_t span, std::size_t begin,
                         std::size_t skew, std::size_t& fast) {
  alignas(16) static T storage[64];
  const T* const values = storage + skew;
  hardact::detail::DeviceBroadcast<T, Spanned> b = [&] {
    if constexpr (Spanned) {
      return hardact::detail::prepare_broadcast(hardact::SampleBroadcast<T>{values, inner, period, span}, n);
    } else {
      (void)span;
      return hardact::detail::prepare_broadcast(hardact::Broadcast<T>{values, inner, period}, n);
    }
  }();
  b.template choose_access<Count>(begin);
  const auto where = [&] {
    return "Count " + std::to_string(Count) + ", n " + std::to_string(n) + ", inner " + std::to_string(inner) +
           ", period " + std::to_string(period) + ", span " + std::to_string(span) + ", begin " + std::to_string(begin) +
           ", skew " + std::to_string(skew);
  };
  const auto index_of = [&](std::size_t i) {
    const std::size_t base = Spanned ? i / span * period : 0;
    return base + (i / inner) % period;
  };
  using hardact::detail::BroadcastAccess;
  if (b.access == BroadcastAccess::general) return;
  ++fast;
  ASSERT_EQ(begin % Count, 0u) << where();
  for (std::size_t first = begin; first + Count <= n; first += Count) {
    for (std::size_t j = 1; j < Count; ++j) {
      if (b.access == BroadcastAccess::run) {
        ASSERT_EQ(index_of(first + j), index_of(first)) << "run: vector at " << first << ", " << where();
      } else {
        ASSERT_EQ(index_of(first + j), index_of(first) + j) << "contiguous: vector at " << first << ", " << where();
      }
    }
    if (b.access == BroadcastAccess::contiguous) {
      ASSERT_EQ(inner, 1u) << where();
      using Prepared = hardact::detail::DeviceBroadcast<T, Spanned>;
      constexpr std::size_t kChunkBytes = sizeof(T) * Prepared::template kContiguousChunk<Count>;
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(values + index_of(first)) % kChunkBytes, 0u)
          << "vector at " << first << ", " << where();
    }
  }
}

template <class T, int Count>
void check_access_choices() {
  std::size_t fast = 0;
  for (const std::size_t n : {std::size_t{Count}, std::size_t{1000}, std::size_t{4096 + 8}}) {
    for (const std::size_t inner : {std::size_t{1}, std::size_t{3}, std::size_t{8}, std::size_t{49}, std::size_t{64}}) {
      for (const std::size_t period :
           {std::size_t{1}, std::size_t{4}, std::size_t{7}, std::size_t{16}, std::size_t{48}}) {
        for (const std::size_t begin : {std::size_t{0}, std::size_t{1}, std::size_t{Count}, std::size_t{3 * Count}}) {
          for (const std::size_t skew : {std::size_t{0}, std::size_t{1}, std::size_t{4}}) {
            check_access_choice<T, Count, false>(n, inner, period, 0, begin, skew, fast);
            for (const std::size_t spans : {std::size_t{1}, std::size_t{3}}) {
              check_access_choice<T, Count, true>(n, inner, period, inner * period * spans, begin, skew, fast);
            }
            if (::testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
  EXPECT_GT(fast, 0u);
  using hardact::detail::BroadcastAccess;
  alignas(16) static T storage[64];
  const std::size_t n = std::size_t{Count} * 6 * 49 * 16;
  // NCHW: a per-channel vector over H * W = 56 * 56; channels-last and a row's bias: 96 channels.
  auto nchw = hardact::detail::prepare_broadcast(hardact::per_channel(static_cast<const T*>(storage), 16, 56 * 56), n);
  nchw.template choose_access<Count>(0);
  EXPECT_EQ(nchw.access, BroadcastAccess::run) << Count;
  auto nhwc = hardact::detail::prepare_broadcast(hardact::per_channel(static_cast<const T*>(storage), 96), n);
  nhwc.template choose_access<Count>(0);
  EXPECT_EQ(nhwc.access, Count == 1 ? BroadcastAccess::run : BroadcastAccess::contiguous) << Count;
  auto gate = hardact::detail::prepare_broadcast(hardact::per_sample_channel(static_cast<const T*>(storage), 32, 49), n);
  gate.template choose_access<Count>(0);
  EXPECT_EQ(gate.access, Count == 1 ? BroadcastAccess::run : BroadcastAccess::contiguous) << Count;
  nhwc.template choose_access<Count>(Count == 1 ? 0 : 1);  // vectors off the channels' grid
  EXPECT_EQ(nhwc.access, Count == 1 ? BroadcastAccess::run : BroadcastAccess::general) << Count;
}

TEST(HostBroadcastOperand, ChooseAccessOnlyWhereEveryVectorFitsIt) {
  check_access_choices<float, 1>();
  check_access_choices<float, 4>();
  check_access_choices<float, 8>();
  check_access_choices<std::uint16_t, 2>();
  check_access_choices<std::uint16_t, 8>();
  check_access_choices<std::uint16_t, 16>();
  check_access_choices<std::uint8_t, 16>();
}

// half_width_keeps_runs: the direct path takes half its width only where that makes some operand's
// vectors runs that were not (a 16-bit NCHW 14 x 14 plane: runs of 196, whole vectors of 4, not 8),
// never below 8 bytes a vector, and only from a begin on the half width's grid.
TEST(HostBroadcastOperand, HalfWidthOnlyWhereItMakesRuns) {
  using hardact::detail::half_width_keeps_runs;
  alignas(16) static float storage[64];
  const float* const values = storage;
  const std::size_t n = std::size_t{64} * 672 * 196;
  const auto prepared = [&](std::size_t inner, std::size_t period) {
    return hardact::detail::prepare_broadcast(hardact::per_channel(values, period, inner), n);
  };
  const auto plane196 = cuda::std::make_tuple(prepared(196, 672), prepared(196, 672));
  EXPECT_TRUE((half_width_keeps_runs<8, 2>(plane196, 0)));
  EXPECT_TRUE((half_width_keeps_runs<8, 2>(plane196, 4)));   // off the grid of 8, on the grid of 4
  EXPECT_FALSE((half_width_keeps_runs<8, 2>(plane196, 2)));  // off both
  EXPECT_FALSE((half_width_keeps_runs<4, 2>(cuda::std::make_tuple(prepared(98, 672)), 0)));  // 4-byte vectors
  EXPECT_TRUE((half_width_keeps_runs<4, 4>(cuda::std::make_tuple(prepared(98, 672)), 0)));   // float 7 x 14
  EXPECT_FALSE((half_width_keeps_runs<4, 4>(cuda::std::make_tuple(prepared(196, 672)), 0)));  // already runs
  EXPECT_TRUE((half_width_keeps_runs<2, 8>(cuda::std::make_tuple(prepared(49, 960)), 0)));    // double 7 x 7
  EXPECT_FALSE((half_width_keeps_runs<8, 2>(cuda::std::make_tuple(prepared(49, 960)), 0)));   // 49 is odd
  EXPECT_FALSE((half_width_keeps_runs<8, 2>(cuda::std::make_tuple(prepared(3136, 96)), 0)));  // whole vectors of 8
  EXPECT_FALSE((half_width_keeps_runs<8, 2>(cuda::std::make_tuple(prepared(1, 96)), 0)));     // contiguous
  EXPECT_FALSE((half_width_keeps_runs<8, 2>(cuda::std::make_tuple(prepared(2, 96)), 0)));     // runs under a vector
  // One operand gaining is enough; the others keep what they had.
  EXPECT_TRUE((half_width_keeps_runs<8, 2>(cuda::std::make_tuple(prepared(3136, 96), prepared(196, 672)), 0)));
  EXPECT_TRUE((half_width_keeps_runs<8, 2>(cuda::std::make_tuple(prepared(1, 96), prepared(100, 240)), 0)));
  EXPECT_FALSE((half_width_keeps_runs<8, 2>(cuda::std::tuple<>{}, 0)));
  // A per-(n, c) gate of channels-last samples (a SampleBroadcast over 14 x 14 positions) is
  // contiguous, not a run: nothing to gain.
  const auto spanned = hardact::detail::prepare_broadcast(hardact::per_sample_channel(values, 32, 196), n);
  EXPECT_FALSE((half_width_keeps_runs<8, 2>(cuda::std::make_tuple(spanned), 0)));
}

// =============================================================================================
// OperandOrder: arguments back in the user's order.

/// The value passed for the operand the user gave at position K, carrying `id`.
template <int K>
struct Arg {
  int id;
};
template <int K>
__host__ __device__ constexpr int position_of(Arg<K>) {
  return K;
}

/// Records its arguments as decimal digit pairs (position K of the argument's type, then its id),
/// first argument first: called with Arg<0>{1}, Arg<1>{2} it returns 112.
struct Recorder {
  template <class... A>
  __host__ __device__ long long operator()(A... args) const {
    long long code = 0;
    ((code = code * 100 + position_of(args) * 10 + args.id), ...);
    return code;
  }
};

template <std::size_t Count>
constexpr long long user_order_code() {
  long long code = 0;
  for (std::size_t k = 0; k < Count; ++k) code = code * 100 + static_cast<long long>(k) * 10 + static_cast<long long>(k) + 1;
  return code;
}

/// The kernels' order, written out independently: full-length operands first, then broadcasts,
/// each group in the user's order. Entry j is the user position of kernel argument j.
template <std::size_t Count>
constexpr std::array<std::size_t, Count> kernel_order(unsigned mask) {
  std::array<std::size_t, Count> order{};
  std::size_t j = 0;
  for (std::size_t i = 0; i < Count; ++i)
    if (((mask >> i) & 1u) == 0) order[j++] = i;
  for (std::size_t i = 0; i < Count; ++i)
    if (((mask >> i) & 1u) != 0) order[j++] = i;
  return order;
}

constexpr bool kIsBroadcastAt(unsigned mask, std::size_t k) { return ((mask >> k) & 1u) != 0; }

template <unsigned Mask, std::size_t K>
inline constexpr bool kIsBroadcast = ((Mask >> K) & 1u) != 0;

template <unsigned Mask, std::size_t K>
using OperandType = std::conditional_t<kIsBroadcast<Mask, K>, hardact::Broadcast<float>, const float*>;

template <std::size_t Count, unsigned Mask, std::size_t... K>
void check_operand_order(std::index_sequence<K...>) {
  static constexpr std::array<std::size_t, Count> kOrder = kernel_order<Count>(Mask);
  const std::tuple<Arg<static_cast<int>(K)>...> user{Arg<static_cast<int>(K)>{static_cast<int>(K) + 1}...};
  const hardact::detail::OperandOrder<Recorder, kIsBroadcast<Mask, K>...> ordered{Recorder{}};
  const std::string pattern = [] {
    std::string p;
    ((p += kIsBroadcast<Mask, K> ? 'B' : 'F'), ...);
    return p;
  }();
  // Kernel order in: the recorder sees the user's order.
  EXPECT_EQ(ordered(std::get<kOrder[K]>(user)...), user_order_code<Count>()) << pattern;
  EXPECT_TRUE(ordered.is_valid());

  // The dispatch layer's split of the same operands puts them in that kernel order.
  using Split = hardact::detail::OperandSplit<OperandType<Mask, K>...>;
  constexpr std::size_t kBroadcasts = (std::size_t{0} + ... + (kIsBroadcast<Mask, K> ? 1 : 0));
  static_assert(Split::kBroadcasts == kBroadcasts && Split::kFull == Count - kBroadcasts);
  std::size_t full = 0;
  for (std::size_t j = 0; j < Count; ++j) full += kIsBroadcastAt(Mask, j) ? 0 : 1;
  EXPECT_EQ(full, Split::kFull);
  for (std::size_t j = 0; j < Count; ++j) {
    const bool broadcast = j >= full;
    const std::size_t k = broadcast ? j - full : j;
    EXPECT_EQ(Split::position(k, broadcast), kOrder[j]) << pattern << " kernel argument " << j;
  }
}

template <std::size_t Count, unsigned... Mask>
void check_every_pattern(std::integer_sequence<unsigned, Mask...>) {
  (check_operand_order<Count, Mask>(std::make_index_sequence<Count>{}), ...);
}

TEST(HostOperandOrder, EveryPatternOfTwoToFourOperands) {
  check_every_pattern<2>(std::make_integer_sequence<unsigned, 4>{});
  check_every_pattern<3>(std::make_integer_sequence<unsigned, 8>{});
  check_every_pattern<4>(std::make_integer_sequence<unsigned, 16>{});
}

// A real policy through the kernels' path: apply_op on the kernel-ordered values of
// `x, per_channel(b)` ... equals the policy on the user's order.
TEST(HostOperandOrder, PolicyThroughApplyOp) {
  using hardact::detail::apply_op;
  using hardact::detail::OperandOrder;
  const hardact::HardSigmoidGate gate;
  // transform(gate, per_channel(x_values), g_full): the kernel passes (g, x).
  const OperandOrder<hardact::HardSigmoidGate, true, false> broadcast_first{gate};
  for (const float x : {-2.0f, 0.5f, 7.0f}) {
    for (const float g : {-4.0f, 0.25f, 1.5f, 3.5f}) {
      EXPECT_EQ(to_bits(apply_op<float>(broadcast_first, g, x)), to_bits(gate(x, g))) << x << " " << g;
    }
  }
  // ScaleShiftActivationBackward(grad, x, scale, shift) with grad and shift broadcast: kernel order
  // (x, scale, grad, shift).
  const hardact::ScaleShiftActivationBackward<hardact::HardSwishBackward> backward;
  const OperandOrder<decltype(backward), true, false, false, true> mixed{backward};
  EXPECT_EQ(to_bits(apply_op<double>(mixed, 0.75, 2.0, -1.5, 0.125)), to_bits(backward(-1.5, 0.75, 2.0, 0.125)));
  // is_valid is forwarded.
  EXPECT_FALSE((OperandOrder<hardact::BiasActivationBackward<hardact::HardTanhBackward>, false, false, true>{
                    {hardact::HardTanhBackward{1.0, -1.0}}}
                    .is_valid()));
  EXPECT_TRUE((OperandOrder<hardact::BiasActivationBackward<hardact::HardTanhBackward>, false, false, true>{
                   {hardact::HardTanhBackward{-1.0, 1.0}}}
                   .is_valid()));
  EXPECT_FALSE((OperandOrder<decltype(hardact::bias_activation(hardact::HardTanh{})), true, false>{
                    hardact::bias_activation(hardact::HardTanh{2.0, 1.0})}
                    .is_valid()));
}

}  // namespace
