// Broadcast operands and the fused epilogue policies on the host (no GPU needed):
//  - detail::FastDivmod against the 64-bit `/` and `%` on its whole domain (divisors in [1, 2^63],
//    numerators below 2^63), its 32-bit form divmod32 on its own (divisors up to 2^31, numerators
//    below 2^31), and multiply_high against 128-bit products;
//  - Broadcast / per_channel and the operand traits; prepare_broadcast's clamping to n and its
//    choice of the 32-bit form;
//  - detail::OperandOrder: a policy that records its arguments gets them in the user's order for
//    every pattern of broadcast and full-length operands of 2 to 4 inputs, and the dispatch layer's
//    split (OperandSplit) puts them in the kernel's order that OperandOrder undoes;
//  - the fused policies (Add, MultiplyAdd, bias_activation, residual_activation,
//    scale_shift_activation, HardSigmoidGate, BiasActivationBackward, ScaleShiftActivationBackward)
//    against the documented formulas on the independent reference of support/reference_family.hpp,
//    in float, double, half and bfloat16, and the kernels' type rule (detail::apply_op) for mixed
//    broadcast types;
//  - the launch contract's refusals with broadcast operands, and channel_sum's argument refusals,
//    which return before any CUDA call (host addresses stand in for device memory and are never
//    dereferenced, as in host_launch_contract_test.cu).
#include "support/bits.hpp"
#include "support/divmod_cases.hpp"
#include "support/reference_family.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using namespace hardact_test;
using family::on_elements;
using hardact::detail::FastDivmod;

constexpr std::uint64_t kTwo63 = divmod::kTwo63;

// =============================================================================================
// FastDivmod and multiply_high.

TEST(HostFastDivmod, MatchesDivisionAndRemainder) {
  EXPECT_TRUE(divmod::host_divmod_matches<FastDivmod>(divmod::cases()));
}

// The 32-bit form the kernels take for calls of at most 2^31 elements: divisors up to 2^31,
// numerators below 2^31.
TEST(HostFastDivmod, Divmod32MatchesDivisionBelow2To31) {
  EXPECT_TRUE(divmod::host_divmod32_matches<FastDivmod>(divmod::cases32()));
  // Divisor 2^31 (the largest in that domain) and the divisors with the largest 32-bit multipliers.
  for (const std::uint64_t d : {divmod::kTwo31, (divmod::kTwo31 >> 1) + 1, std::uint64_t{3}, std::uint64_t{1}}) {
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
  for (const std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, kTwo63 - 1}) EXPECT_EQ(one.divide(n), n);
  const FastDivmod top = FastDivmod::make(kTwo63);
  for (const std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, kTwo63 / 2, kTwo63 - 1}) {
    std::uint64_t q = 1, r = 0;
    top.divmod(n, q, r);
    EXPECT_EQ(q, 0u) << n;
    EXPECT_EQ(r, n);
  }
  // Multipliers fit 64 bits: the largest ones are for divisors just above a power of two.
  for (int k = 1; k < 63; ++k) {
    const std::uint64_t d = (std::uint64_t{1} << k) + 1;
    const FastDivmod f = FastDivmod::make(d);
    EXPECT_EQ(f.divide(kTwo63 - 1), (kTwo63 - 1) / d) << d;
    EXPECT_EQ(f.divide((kTwo63 - 1) / d * d - 1), (kTwo63 - 1) / d - 1) << d;
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
static_assert(hardact::detail::kMaxBroadcastElements == kTwo63);

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
  const std::size_t kHuge[] = {std::size_t{1} << 40, std::size_t{kTwo63}, std::size_t{kTwo63} + 1, SIZE_MAX};
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
    for (const std::size_t inner : {std::size_t{1}, std::size_t{49}, std::size_t{kTwo63}, SIZE_MAX}) {
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
    for (const std::size_t period : {std::size_t{1}, std::size_t{7}, std::size_t{kTwo63}, SIZE_MAX}) {
      const auto prepared =
          hardact::detail::prepare_broadcast(hardact::Broadcast<float>{values, inner, period}, kTwo63);
      EXPECT_FALSE(prepared.narrow);
      for (std::uint64_t i = kTwo63 - 5; i < kTwo63; ++i) {
        std::uint64_t row = 0, offset = 0, cycle = 0, channel = 0;
        prepared.inner.divmod(i, row, offset);
        prepared.period.divmod(row, cycle, channel);
        EXPECT_EQ(channel, (i / inner) % period) << "i " << i << ", inner " << inner << ", period " << period;
      }
    }
  }
  EXPECT_GT(checked, 0u);
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

// =============================================================================================
// Fused policies against their documented formulas.

/// PyTorch's float arithmetic, one rounding per operation (see reference_family.hpp), and double's.
inline float add_ref(float a, float b) { return family::to_float(static_cast<double>(a) + static_cast<double>(b)); }
inline double add_ref(double a, double b) { return a + b; }
inline float mul_ref(float a, float b) { return family::to_float(static_cast<double>(a) * static_cast<double>(b)); }
inline double mul_ref(double a, double b) { return a * b; }

/// Activations and gradients of the reference, as generic callables on float and double.
struct SwishRef {
  template <class C>
  C operator()(C v) const {
    return family::hard_swish(v);
  }
};
struct SigmoidRef {
  template <class C>
  C operator()(C v) const {
    return family::hard_sigmoid(v);
  }
};
struct Relu6Ref {
  template <class C>
  C operator()(C v) const {
    return family::relu6(v);
  }
};
struct TanhRef {
  double lo, hi;
  template <class C>
  C operator()(C v) const {
    return family::hard_tanh(v, lo, hi);
  }
};
struct SwishBackwardRef {
  template <class C>
  C operator()(C g, C v) const {
    return family::hard_swish_backward(g, v);
  }
};
struct SigmoidBackwardRef {
  template <class C>
  C operator()(C g, C v) const {
    return family::hard_sigmoid_backward(g, v);
  }
};
struct TanhBackwardRef {
  double lo, hi;
  template <class C>
  C operator()(C g, C v) const {
    return family::hard_tanh_backward(g, v, lo, hi);
  }
};

/// Values each column of a row draws from: the x column every 16-bit pattern, or special values
/// and random ones; the others random (with special values mixed in) from their own seeds.
template <class T>
std::vector<T> column_values(std::size_t column, std::size_t count) {
  if (column == 0) {
    std::vector<T> xs = family::host_inputs<T>({-3.0, 3.0, -2.5, 2.5, 0.5}, count, 0xb0a5);
    return xs;
  }
  return random_values<T>(count, 0xc0105 + column, {-3.0, 3.0, 0.5, 2.0});
}

/// A few values every operand takes in the cross product: zeros, ones, the bends, a subnormal,
/// the largest finite, infinities, NaN.
template <class T>
std::vector<T> cross_values() {
  std::vector<T> values;
  for (const double v : {0.0, -0.0, 1.0, -1.0, 3.0, -3.0, 0.5, 6.0, 1e-3, HUGE_VAL, -HUGE_VAL}) {
    values.push_back(family::round_to<T>(v));
  }
  values.push_back(from_bits<T>(1));                                             // smallest subnormal
  values.push_back(from_bits<T>(Patterns<T>::kMaxFinite));                       // largest finite
  values.push_back(from_bits<T>(bits_t<T>(Patterns<T>::kInfinity | Patterns<T>::kQuietBit)));  // NaN
  return values;
}

/// Argument rows: every x with partners from the other columns (zipped), then the cross product of
/// cross_values() over every column.
template <class T, std::size_t Arity>
std::vector<std::array<T, Arity>> argument_rows() {
  const std::size_t random_count = sizeof(T) == 2 ? 0 : std::size_t{1} << 16;
  const std::vector<T> xs = column_values<T>(0, random_count);
  std::array<std::vector<T>, Arity> columns;
  columns[0] = xs;
  for (std::size_t c = 1; c < Arity; ++c) columns[c] = column_values<T>(c, xs.size());
  std::vector<std::array<T, Arity>> rows(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i)
    for (std::size_t c = 0; c < Arity; ++c) rows[i][c] = columns[c][i];
  const std::vector<T> cross = cross_values<T>();
  std::size_t total = 1;
  for (std::size_t c = 0; c < Arity; ++c) total *= cross.size();
  for (std::size_t index = 0; index < total; ++index) {
    std::array<T, Arity> row;
    std::size_t rest = index;
    for (std::size_t c = 0; c < Arity; ++c, rest /= cross.size()) row[c] = cross[rest % cross.size()];
    rows.push_back(row);
  }
  return rows;
}

template <class T>
std::string show_row(const T* row, std::size_t arity) {
  std::string text;
  for (std::size_t c = 0; c < arity; ++c) text += (c > 0 ? ", " : "") + family::show(row[c]);
  return text;
}

/// op(row...) against on_elements<T>(reference, row...) (the reference on the compute type, rounded
/// once) for every row of argument_rows<T, Arity>().
template <class T, std::size_t Arity, class Op, class Reference>
::testing::AssertionResult fused_matches(const Op& op, const Reference& reference) {
  const std::vector<std::array<T, Arity>> rows = argument_rows<T, Arity>();
  std::size_t mismatches = 0;
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  for (const auto& row : rows) {
    const T actual = std::apply([&](auto... v) { return op(v...); }, row);
    const T expected = std::apply([&](auto... v) { return on_elements<T>(reference, v...); }, row);
    if (family::same_or_both_nan(actual, expected)) continue;
    if (++mismatches <= 5) {
      failure << "\n  (" << show_row(row.data(), Arity) << "): got " << family::show(actual) << ", expected "
              << family::show(expected);
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return failure << "\n  " << mismatches << " of " << rows.size() << " rows differ";
}

template <class T>
class HostFusedPolicies : public ::testing::Test {};
TYPED_TEST_SUITE(HostFusedPolicies, ElementTypes, TypeNames);

TYPED_TEST(HostFusedPolicies, AddAndMultiplyAdd) {
  using T = TypeParam;
  EXPECT_TRUE((fused_matches<T, 2>(hardact::Add{}, [](auto x, auto b) { return add_ref(x, b); })));
  EXPECT_TRUE((fused_matches<T, 3>(hardact::MultiplyAdd{},
                                   [](auto x, auto s, auto t) { return add_ref(mul_ref(x, s), t); })));
}

/// check(policy, reference activation) for HardSwish, HardSigmoid, ReLU6 and HardTanh{-2, 0.5}.
template <class Check>
void for_each_activation(const Check& check) {
  check(hardact::HardSwish{}, SwishRef{}, "HardSwish");
  check(hardact::HardSigmoid{}, SigmoidRef{}, "HardSigmoid");
  check(hardact::ReLU6{}, Relu6Ref{}, "ReLU6");
  check(hardact::HardTanh{-2.0, 0.5}, TanhRef{-2.0, 0.5}, "HardTanh{-2, 0.5}");
}

/// The same for the gradients: HardSwishBackward, HardSigmoidBackward, HardTanhBackward{-2, 0.5}.
template <class Check>
void for_each_backward(const Check& check) {
  check(hardact::HardSwishBackward{}, SwishBackwardRef{}, "HardSwishBackward");
  check(hardact::HardSigmoidBackward{}, SigmoidBackwardRef{}, "HardSigmoidBackward");
  check(hardact::HardTanhBackward{-2.0, 0.5}, TanhBackwardRef{-2.0, 0.5}, "HardTanhBackward{-2, 0.5}");
}

// bias_activation(act)(x, b) = act(x + b); residual_activation is the same policy.
TYPED_TEST(HostFusedPolicies, BiasAndResidualActivation) {
  using T = TypeParam;
  for_each_activation([](auto activation, auto act, const char* name) {
    EXPECT_TRUE((fused_matches<T, 2>(hardact::bias_activation(activation),
                                     [act](auto x, auto b) { return act(add_ref(x, b)); })))
        << name;
    EXPECT_TRUE((fused_matches<T, 2>(hardact::residual_activation(activation),
                                     [act](auto x, auto r) { return act(add_ref(x, r)); })))
        << name;
  });
  static_assert(std::is_same_v<decltype(hardact::bias_activation(hardact::HardSwish{})),
                               decltype(hardact::residual_activation(hardact::HardSwish{}))>);
}

// scale_shift_activation(act)(x, s, t) = act(x * s + t), the product rounded before the add.
TYPED_TEST(HostFusedPolicies, ScaleShiftActivation) {
  using T = TypeParam;
  for_each_activation([](auto activation, auto act, const char* name) {
    EXPECT_TRUE((fused_matches<T, 3>(hardact::scale_shift_activation(activation),
                                     [act](auto x, auto s, auto t) { return act(add_ref(mul_ref(x, s), t)); })))
        << name;
  });
}

// HardSigmoidGate(x, g) = x * HardSigmoid(g).
TYPED_TEST(HostFusedPolicies, HardSigmoidGate) {
  using T = TypeParam;
  EXPECT_TRUE((fused_matches<T, 2>(hardact::HardSigmoidGate{},
                                   [](auto x, auto g) { return mul_ref(x, family::hard_sigmoid(g)); })));
}

// BiasActivationBackward<Bw>(grad, x, b) = Bw(grad, x + b).
TYPED_TEST(HostFusedPolicies, BiasActivationBackward) {
  using T = TypeParam;
  for_each_backward([](auto backward, auto bw, const char* name) {
    using Backward = decltype(backward);
    EXPECT_TRUE((fused_matches<T, 3>(hardact::BiasActivationBackward<Backward>{backward},
                                     [bw](auto g, auto x, auto b) { return bw(g, add_ref(x, b)); })))
        << name;
  });
}

// ScaleShiftActivationBackward<Bw>(grad, x, s, t) = Bw(grad, x * s + t) * s, rounded once.
TYPED_TEST(HostFusedPolicies, ScaleShiftActivationBackward) {
  using T = TypeParam;
  for_each_backward([](auto backward, auto bw, const char* name) {
    using Backward = decltype(backward);
    EXPECT_TRUE((fused_matches<T, 4>(
        hardact::ScaleShiftActivationBackward<Backward>{backward},
        [bw](auto g, auto x, auto s, auto t) { return mul_ref(bw(g, add_ref(mul_ref(x, s), t)), s); })))
        << name;
  });
}

TEST(HostFusedPolicyFacts, ValidityIsForwarded) {
  const double nan = std::nan("");
  EXPECT_TRUE(hardact::bias_activation(hardact::HardTanh{}).is_valid());
  EXPECT_FALSE(hardact::bias_activation(hardact::HardTanh{1.0, -1.0}).is_valid());
  EXPECT_FALSE(hardact::scale_shift_activation(hardact::HardTanh{nan, 1.0}).is_valid());
  EXPECT_TRUE(hardact::BiasActivationBackward<hardact::HardSwishBackward>{}.is_valid());
  EXPECT_FALSE((hardact::BiasActivationBackward<hardact::HardTanhBackward>{{0.5, -0.5}}.is_valid()));
  EXPECT_FALSE((hardact::ScaleShiftActivationBackward<hardact::HardTanhBackward>{{-1.0, nan}}.is_valid()));
  EXPECT_TRUE((hardact::ScaleShiftActivationBackward<hardact::HardTanhBackward>{{0.0, 6.0}}.is_valid()));
}

TEST(HostFusedPolicyFacts, TriviallyCopyableKernelArguments) {
  static_assert(std::is_trivially_copyable_v<hardact::Add> && std::is_trivially_copyable_v<hardact::MultiplyAdd> &&
                std::is_trivially_copyable_v<hardact::HardSigmoidGate>);
  static_assert(std::is_trivially_copyable_v<decltype(hardact::scale_shift_activation(hardact::HardTanh{}))>);
  static_assert(std::is_trivially_copyable_v<hardact::ScaleShiftActivationBackward<hardact::HardTanhBackward>>);
  static_assert(std::is_same_v<decltype(hardact::bias_activation(hardact::ReLU6{})),
                               hardact::Chain<hardact::Add, hardact::ReLU6>>);
  static_assert(std::is_same_v<decltype(hardact::scale_shift_activation(hardact::ReLU6{})),
                               hardact::Chain<hardact::MultiplyAdd, hardact::ReLU6>>);
  SUCCEED();
}

// In float, x * s + t is two roundings, never one FMA: find inputs where they differ and check
// MultiplyAdd and scale_shift_activation take the two roundings.
TEST(HostFusedPolicyFacts, MultiplyAddNeverFuses) {
  std::mt19937_64 engine(0xf3a);
  std::uniform_real_distribution<float> wide(-8.0f, 8.0f);
  std::size_t witnesses = 0;
  for (int i = 0; i < 100000 && witnesses < 1000; ++i) {
    const float x = wide(engine), s = wide(engine), t = wide(engine);
    const float separate = add_ref(mul_ref(x, s), t);
    if (std::fma(x, s, t) == separate) continue;
    ++witnesses;
    ASSERT_EQ(to_bits(hardact::MultiplyAdd{}(x, s, t)), to_bits(separate)) << x << " " << s << " " << t;
    ASSERT_EQ(to_bits(hardact::scale_shift_activation(hardact::HardTanh{-100.0, 100.0})(x, s, t)), to_bits(separate));
  }
  EXPECT_GT(witnesses, 0u) << "no input where an FMA rounds differently";
}

// On bfloat16, bias_activation keeps x + b in float and rounds once at the end (PyTorch eager rounds
// the sum first): find inputs where the two differ and check the single rounding.
TEST(HostFusedPolicyFacts, Bfloat16BiasActivationRoundsOnce) {
  using T = __nv_bfloat16;
  const auto per_step = [](T x, T b) {
    const T sum = family::round_to<T>(add_ref(static_cast<float>(family::value_of(x)), static_cast<float>(family::value_of(b))));
    return family::round_to<T>(family::hard_swish(static_cast<float>(family::value_of(sum))));
  };
  const auto once = [](T x, T b) {
    return family::round_to<T>(
        family::hard_swish(add_ref(static_cast<float>(family::value_of(x)), static_cast<float>(family::value_of(b)))));
  };
  const auto fused = hardact::bias_activation(hardact::HardSwish{});
  std::size_t witnesses = 0;
  for (const double bias : {0.1, -0.3, 1.7}) {
    const T b = family::round_to<T>(bias);
    for (const T x : all_patterns<T>()) {
      if (std::isnan(family::value_of(x)) || family::same_or_both_nan(per_step(x, b), once(x, b))) continue;
      ++witnesses;
      ASSERT_EQ(to_bits(fused(x, b)), to_bits(once(x, b))) << family::show(x) << " + " << family::show(b);
    }
  }
  EXPECT_GT(witnesses, 0u);
}

// The kernels' type rule for broadcast operands of another type than the output (detail::apply_op):
// the policy gets the common compute type and the result is rounded once. bfloat16 x with float
// scale and shift, written as bfloat16; float x with a double bias computes in double.
TEST(HostFusedPolicyFacts, MixedTypesRoundOnceFromTheCommonComputeType) {
  using B = __nv_bfloat16;
  using hardact::detail::apply_op;
  const auto op = hardact::scale_shift_activation(hardact::HardSwish{});
  const float scales[] = {0.37f, -1.5f, 3.0f, 1e-20f};
  const float shifts[] = {0.1f, -2.75f, 0.0f, 1e3f};
  std::size_t mismatches = 0;
  for (const B x : all_patterns<B>()) {
    for (const float s : scales) {
      for (const float t : shifts) {
        const float xf = static_cast<float>(family::value_of(x));
        const B expected = family::round_to<B>(family::hard_swish(add_ref(mul_ref(xf, s), t)));
        const B actual = apply_op<B>(op, x, s, t);
        if (!family::same_or_both_nan(actual, expected) && ++mismatches <= 5) {
          ADD_FAILURE() << family::show(x) << " * " << s << " + " << t << ": got " << family::show(actual)
                        << ", expected " << family::show(expected);
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0u);
  // float x + double bias -> float: added in double, rounded to float once.
  for (const float x : random_values<float>(1 << 14, 0xdb1)) {
    const double bias = 0.1;
    const float expected = family::to_float(family::hard_sigmoid(static_cast<double>(x) + bias));
    const float actual = apply_op<float>(hardact::bias_activation(hardact::HardSigmoid{}), x, bias);
    ASSERT_TRUE(family::same_or_both_nan(actual, expected)) << family::show(x);
  }
}

// =============================================================================================
// Launch contract with broadcast operands, without a GPU: refusals return before any CUDA call.

/// Host storage standing in for device memory: aligned for every type, never dereferenced.
struct FakeDeviceMemory {
  alignas(256) unsigned char bytes[4096];
  template <class T>
  T* at(std::size_t byte_offset) {
    return reinterpret_cast<T*>(bytes + byte_offset);
  }
};

template <class T>
class HostBroadcastContract : public ::testing::Test {
 protected:
  static constexpr std::size_t kN = 64;
  FakeDeviceMemory memory_;
  const T* x() { return memory_.at<T>(0); }
  const T* residual() { return memory_.at<T>(1024); }
  T* out() { return memory_.at<T>(2048); }
  const T* values() { return memory_.at<T>(3072); }

  /// Expects cudaErrorInvalidValue from every launcher form that takes `b`: the broadcast as the
  /// second, first and last of two inputs, the middle of three and each of four.
  void expect_refused(const hardact::Broadcast<T>& b, T* out, std::size_t n, const std::string& what) {
    const hardact::Broadcast<T> good = hardact::per_channel(values(), 4);
    const auto bias = hardact::bias_activation(hardact::HardSwish{});
    EXPECT_EQ(hardact::transform(bias, x(), b, out, n), cudaErrorInvalidValue) << what;
    EXPECT_EQ(hardact::transform(hardact::HardSigmoidGate{}, b, x(), out, n), cudaErrorInvalidValue) << what;
    EXPECT_EQ(hardact::transform<1>(bias, x(), b, out, n), cudaErrorInvalidValue) << what;
    EXPECT_EQ(hardact::transform(hardact::scale_shift_activation(hardact::ReLU6{}), x(), b, good, out, n),
              cudaErrorInvalidValue)
        << what;
    EXPECT_EQ(hardact::transform(hardact::scale_shift_activation(hardact::ReLU6{}), x(), good, b, out, n),
              cudaErrorInvalidValue)
        << what;
    EXPECT_EQ(hardact::transform(hardact::BiasActivationBackward<hardact::HardSwishBackward>{}, x(), residual(), b,
                                 out, n),
              cudaErrorInvalidValue)
        << what;
    EXPECT_EQ(hardact::transform(hardact::ScaleShiftActivationBackward<hardact::HardSwishBackward>{}, x(),
                                 residual(), b, good, out, n),
              cudaErrorInvalidValue)
        << what;
    EXPECT_EQ(hardact::transform(hardact::ScaleShiftActivationBackward<hardact::HardSwishBackward>{}, b, x(), good,
                                 residual(), out, n),
              cudaErrorInvalidValue)
        << what;
  }
};
TYPED_TEST_SUITE(HostBroadcastContract, ElementTypes, TypeNames);

TYPED_TEST(HostBroadcastContract, ZeroElementsSucceedsWithoutLookingAtOperands) {
  using T = TypeParam;
  const auto bias = hardact::bias_activation(hardact::HardSwish{});
  const T* const null_in = nullptr;
  T* const null_out = nullptr;
  const hardact::Broadcast<T> broken[] = {{nullptr, 1, 1}, {this->values(), 0, 4}, {this->values(), 1, 0},
                                          {reinterpret_cast<const T*>(this->out()), 1, 4}};
  for (const hardact::Broadcast<T>& b : broken) {
    EXPECT_EQ(hardact::transform(bias, null_in, b, null_out, 0), cudaSuccess);
    EXPECT_EQ(hardact::transform(bias, this->x(), b, this->out(), 0), cudaSuccess);
    EXPECT_EQ(hardact::transform(hardact::HardSigmoidGate{}, b, null_in, null_out, 0), cudaSuccess);
    EXPECT_EQ(hardact::transform(hardact::scale_shift_activation(hardact::HardSigmoid{}), null_in, b, b, null_out, 0),
              cudaSuccess);
    EXPECT_EQ(hardact::transform(hardact::ScaleShiftActivationBackward<hardact::HardSigmoidBackward>{}, null_in,
                                 null_in, b, b, null_out, 0),
              cudaSuccess);
  }
}

TYPED_TEST(HostBroadcastContract, NullValuesAreRefused) {
  for (const std::size_t n : {std::size_t{1}, this->kN}) {
    this->expect_refused(hardact::per_channel(static_cast<const TypeParam*>(nullptr), 4), this->out(), n, "null");
    this->expect_refused(hardact::per_channel(static_cast<const TypeParam*>(nullptr), 1, 8), this->out(), n, "null");
  }
}

TYPED_TEST(HostBroadcastContract, ZeroInnerOrPeriodIsRefused) {
  using T = TypeParam;
  this->expect_refused(hardact::Broadcast<T>{this->values(), 0, 4}, this->out(), this->kN, "inner 0");
  this->expect_refused(hardact::per_channel(this->values(), 4, 0), this->out(), this->kN, "inner 0");
  this->expect_refused(hardact::Broadcast<T>{this->values(), 3, 0}, this->out(), this->kN, "period 0");
  this->expect_refused(hardact::per_channel(this->values(), 0), this->out(), this->kN, "channels 0");
  this->expect_refused(hardact::Broadcast<T>{this->values(), 0, 0}, this->out(), this->kN, "both 0");
}

TYPED_TEST(HostBroadcastContract, MisalignedValuesAreRefused) {
  using T = TypeParam;
  for (std::size_t skew = 1; skew < alignof(T); ++skew) {
    const T* const misaligned = this->memory_.template at<T>(3072 + skew);
    this->expect_refused(hardact::per_channel(misaligned, 4), this->out(), this->kN, "skew " + std::to_string(skew));
  }
}

// Values inside the output would change while being read: any shared byte is refused, in place too.
TYPED_TEST(HostBroadcastContract, ValuesOverlappingTheOutputAreRefused) {
  using T = TypeParam;
  const std::size_t n = this->kN;
  T* const out = this->out();
  this->expect_refused(hardact::per_channel(static_cast<const T*>(out), 4), out, n, "values at out");
  this->expect_refused(hardact::per_channel(static_cast<const T*>(out + 10), 4, 3), out, n, "values inside out");
  this->expect_refused(hardact::per_channel(static_cast<const T*>(out + n - 1), 1), out, n, "last element");
  this->expect_refused(hardact::per_channel(static_cast<const T*>(out - 1), 2), out, n, "first element");
  this->expect_refused(hardact::per_channel(static_cast<const T*>(out - 2), n + 4), out, n, "covering out");
  // In place on x: the output is x, and values inside x are then inside the output.
  T* const x_as_out = this->memory_.template at<T>(0);
  const auto bias = hardact::bias_activation(hardact::HardSigmoid{});
  EXPECT_EQ(hardact::transform(bias, this->x(), hardact::per_channel(this->x() + 3, 4), x_as_out, n),
            cudaErrorInvalidValue);
}

// A values range that wraps around the address space, or whose size overflows, is refused.
TYPED_TEST(HostBroadcastContract, ValuesRangeMustFitTheAddressSpace) {
  using T = TypeParam;
  this->expect_refused(hardact::per_channel(this->values(), SIZE_MAX), this->out(), this->kN, "period SIZE_MAX");
  this->expect_refused(hardact::per_channel(this->values(), SIZE_MAX / sizeof(T) + 1), this->out(), this->kN,
                       "period * sizeof(T) overflows");
}

TYPED_TEST(HostBroadcastContract, InvalidPoliciesAreRefused) {
  using T = TypeParam;
  const double nan = std::nan("");
  const hardact::Broadcast<T> b = hardact::per_channel(this->values(), 4);
  T* const out = this->out();
  const std::size_t n = this->kN;
  EXPECT_EQ(hardact::transform(hardact::bias_activation(hardact::HardTanh{1.0, -1.0}), this->x(), b, out, n),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(hardact::scale_shift_activation(hardact::HardTanh{nan, 1.0}), this->x(), b, b, out, n),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(hardact::BiasActivationBackward<hardact::HardTanhBackward>{{2.0, 1.0}}, this->x(),
                               this->residual(), b, out, n),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(hardact::ScaleShiftActivationBackward<hardact::HardTanhBackward>{{-1.0, nan}},
                               this->x(), this->residual(), b, b, out, n),
            cudaErrorInvalidValue);
  // n == 0 with an invalid policy: the same answer as the same call with full-length inputs only.
  const auto invalid = hardact::bias_activation(hardact::HardTanh{1.0, -1.0});
  EXPECT_EQ(hardact::transform(invalid, this->x(), b, out, 0), hardact::transform(invalid, this->x(), this->residual(), out, 0));
}

// The full-length operands and the output are checked as without broadcasts.
TYPED_TEST(HostBroadcastContract, FullLengthOperandsAreStillChecked) {
  using T = TypeParam;
  const hardact::Broadcast<T> b = hardact::per_channel(this->values(), 4);
  const auto bias = hardact::bias_activation(hardact::HardSwish{});
  const std::size_t n = this->kN;
  T* const out = this->out();
  EXPECT_EQ(hardact::transform(bias, static_cast<const T*>(nullptr), b, out, n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(bias, this->x(), b, static_cast<T*>(nullptr), n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(hardact::HardSigmoidGate{}, b, this->x(), static_cast<T*>(nullptr), n),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(bias, static_cast<const T*>(out + 1), b, out, n), cudaErrorInvalidValue);  // overlap
  EXPECT_EQ(hardact::transform(hardact::BiasActivationBackward<hardact::HardSwishBackward>{}, this->x(),
                               static_cast<const T*>(out + 3), b, out, n),
            cudaErrorInvalidValue);
  for (std::size_t skew = 1; skew < alignof(T); ++skew) {
    EXPECT_EQ(hardact::transform(bias, this->memory_.template at<const T>(skew), b, out, n), cudaErrorInvalidValue);
    EXPECT_EQ(hardact::transform(bias, this->x(), b, this->memory_.template at<T>(2048 + skew), n),
              cudaErrorInvalidValue);
  }
}

TYPED_TEST(HostBroadcastContract, MoreThan2To63ElementsAreRefused) {
  using T = TypeParam;
  const hardact::Broadcast<T> b = hardact::per_channel(this->values(), 4);
  const auto bias = hardact::bias_activation(hardact::HardSwish{});
  for (const std::size_t n : {std::size_t{kTwo63} + 1, SIZE_MAX / 2 + 2, SIZE_MAX}) {
    EXPECT_EQ(hardact::transform(bias, this->x(), b, this->out(), n), cudaErrorInvalidValue) << n;
  }
}

// The element-count limit on its own: one-byte elements in place, so that every other check passes
// for n = 2^63 + 1 ([out, out + n) fits the address space above these host addresses, and the
// values lie below it). Without the limit this call would go on to the device query.
TEST(HostBroadcastContractLimit, MoreThan2To63ElementsIsTheOnlyReason) {
  using E = __nv_fp8_e4m3;
  FakeDeviceMemory memory;
  E* const data = memory.at<E>(2048);
  const float* const values = memory.at<float>(0);
  const std::size_t n = std::size_t{kTwo63} + 1;
  ASSERT_LT(reinterpret_cast<std::uintptr_t>(data), UINTPTR_MAX - n) << "host addresses below 2^63 expected";
  EXPECT_EQ(hardact::transform(hardact::Add{}, static_cast<const E*>(data), hardact::per_channel(values, 4), data, n),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(hardact::Add{}, hardact::per_channel(values, 4, 1000), static_cast<const E*>(data),
                               data, SIZE_MAX - 4096),
            cudaErrorInvalidValue);
}

// channel_sum's argument checks that come before any CUDA call, for the size query and the run.
TEST(HostChannelSumContract, BadShapesAreRefused) {
  FakeDeviceMemory memory;
  const float* const in = memory.at<float>(0);
  float* const sums = memory.at<float>(2048);
  void* const temp = memory.at<unsigned char>(3072);
  struct Shape {
    std::size_t n, channels, inner;
    const char* what;
  };
  const Shape shapes[] = {{12, 0, 1, "channels 0"},
                          {12, 3, 0, "inner 0"},
                          {0, 0, 0, "both 0, n 0"},
                          {10, 3, 1, "n not a multiple of channels"},
                          {15, 3, 2, "n not a multiple of channels * inner"},
                          {7, 7, 2, "n smaller than one row"},
                          {0, std::size_t{1} << 62, 4, "channels * inner past 2^63"},
                          {0, SIZE_MAX, SIZE_MAX, "channels * inner overflows"},
                          {std::size_t{kTwo63} + 1, 1, 1, "n past 2^63"},
                          {SIZE_MAX, 1, 1, "n = SIZE_MAX"}};
  for (const Shape& shape : shapes) {
    std::size_t bytes = 0;
    EXPECT_EQ(hardact::channel_sum(nullptr, bytes, in, shape.n, shape.channels, shape.inner, sums),
              cudaErrorInvalidValue)
        << shape.what << " (size query)";
    bytes = 1024;
    EXPECT_EQ(hardact::channel_sum(temp, bytes, in, shape.n, shape.channels, shape.inner, sums), cudaErrorInvalidValue)
        << shape.what;
    __nv_bfloat16* const narrow_sums = memory.at<__nv_bfloat16>(2048);
    EXPECT_EQ(hardact::channel_sum(temp, bytes, reinterpret_cast<const __nv_bfloat16*>(in), shape.n, shape.channels,
                                   shape.inner, narrow_sums),
              cudaErrorInvalidValue)
        << shape.what << " (bfloat16)";
  }
}

}  // namespace
