// The test support's own shortcuts, which every test's verdict rests on. Widening every half and
// bfloat16 pattern (support/bits.hpp) as CUDA's host conversions and MiniFormat::decode widen it.
// Rounding to half and bfloat16, which the family references and the input generator use, against
// CUDA's host conversions and MiniFormat::encode: from double and from float at the values where rounding decides (each
// finite pattern, the midpoints to its neighbours, one double and one float ulp either side, the
// overflow threshold) and at a stride through every float. The comparison with a reference's
// results looked up for 16-bit types (support/compare.hpp): a wrong element, a wrong NaN payload and
// a different reference value are all caught and reported.
#include "support/bits.hpp"
#include "support/compare.hpp"
#include "support/reference.hpp"
#include "support/reference_family.hpp"
#include "support/values.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace {

using namespace hardact_test;

template <class T>
class HostTestSupport : public ::testing::Test {};
using SixteenBitTypes = ::testing::Types<__half, __nv_bfloat16>;
struct SixteenBitNames {
  template <class T>
  static std::string GetName(int) {
    return std::is_same_v<T, __half> ? "half" : "bfloat16";
  }
};
TYPED_TEST_SUITE(HostTestSupport, SixteenBitTypes, SixteenBitNames);

/// CUDA's host rounding of a double or a float into T.
template <class T, class From>
std::uint16_t cuda_nearest(From value) {
  if constexpr (std::is_same_v<T, __half> && std::is_same_v<From, float>) {
    return to_bits(__float2half_rn(value));
  } else if constexpr (std::is_same_v<T, __half>) {
    return to_bits(__double2half(value));
  } else if constexpr (std::is_same_v<From, float>) {
    return to_bits(__float2bfloat16_rn(value));
  } else {
    return to_bits(__double2bfloat16(value));
  }
}

/// Rounds `value` both ways (and from float where it is a float); false, with a message, on a difference.
template <class T>
::testing::AssertionResult rounds_as_cuda(double value) {
  const std::uint16_t ours = to_bits(nearest_16bit<T>(value)), theirs = cuda_nearest<T>(value);
  if (ours != theirs) {
    return ::testing::AssertionFailure() << describe(value) << " rounds to " << describe(from_bits<T>(ours))
                                         << ", CUDA's to " << describe(from_bits<T>(theirs));
  }
  const std::uint32_t encoded = family::narrow_format<T>::value.encode(value, family::Overflow::ToInfinity);
  if (!std::isnan(value) && encoded != ours) {
    return ::testing::AssertionFailure() << describe(value) << " rounds to " << describe(from_bits<T>(ours))
                                         << ", MiniFormat::encode to "
                                         << describe(from_bits<T>(static_cast<std::uint16_t>(encoded)));
  }
  const float narrow = static_cast<float>(value);
  if (static_cast<double>(narrow) == value && cuda_nearest<T>(narrow) != ours) {
    return ::testing::AssertionFailure() << describe(value) << " as a float: CUDA rounds to "
                                         << describe(from_bits<T>(cuda_nearest<T>(narrow))) << ", we to "
                                         << describe(from_bits<T>(ours));
  }
  return ::testing::AssertionSuccess();
}

TYPED_TEST(HostTestSupport, EveryPatternWidensAsCudaAndMiniFormatWiden) {
  using T = TypeParam;
  for (std::uint32_t bits = 0; bits < 65536; ++bits) {
    const T value = from_bits<T>(static_cast<std::uint16_t>(bits));
    const float ours = widen_16bit(value), cuda = static_cast<float>(to_double(value));
    const double decoded = family::narrow_format<T>::value.decode(bits);
    if (std::isnan(cuda)) {
      ASSERT_TRUE(std::isnan(ours) && std::isnan(decoded)) << describe(value);
    } else {
      ASSERT_EQ(to_bits(ours), to_bits(cuda)) << describe(value);
      ASSERT_EQ(to_bits(static_cast<double>(ours)), to_bits(decoded)) << describe(value);
    }
  }
}

TYPED_TEST(HostTestSupport, RoundsAsCudaWhereRoundingDecides) {
  using T = TypeParam;
  std::size_t checked = 0;
  for (std::uint32_t bits = 0; bits < 65536; ++bits) {
    const T value = from_bits<T>(static_cast<std::uint16_t>(bits));
    const double here = to_double(value);
    if (!std::isfinite(here)) continue;
    // The next pattern away from zero, up to infinity: its midpoint with this one decides a tie.
    const double next = to_double(from_bits<T>(static_cast<std::uint16_t>(bits + 1)));
    const double toward = std::signbit(here) ? -std::numeric_limits<double>::infinity()
                                             : std::numeric_limits<double>::infinity();
    std::vector<double> points = {here, std::nextafter(here, toward), std::nextafter(here, -toward)};
    if (std::isfinite(next)) {
      const double middle = here + (next - here) / 2;  // exact: a 16-bit value has few significant bits
      const float middle_float = static_cast<float>(middle);
      points.insert(points.end(), {middle, std::nextafter(middle, toward), std::nextafter(middle, -toward),
                                   static_cast<double>(std::nextafter(middle_float, static_cast<float>(toward))),
                                   static_cast<double>(std::nextafter(middle_float, static_cast<float>(-toward)))});
    } else {  // the largest finite value: half an ulp past it is where infinity begins
      const double middle = here + (here - to_double(from_bits<T>(static_cast<std::uint16_t>(bits - 1)))) / 2;
      points.insert(points.end(), {middle, std::nextafter(middle, toward), std::nextafter(middle, -toward)});
    }
    for (const double point : points) {
      ASSERT_TRUE(rounds_as_cuda<T>(point));
      ++checked;
    }
  }
  EXPECT_GT(checked, 400000u);
}

TYPED_TEST(HostTestSupport, RoundsAsCudaAcrossTheFloats) {
  using T = TypeParam;
  // Every 1021st float pattern (a prime stride: every exponent, varied mantissas, NaN, infinity).
  for (std::uint64_t bits = 0; bits <= 0xffffffffu; bits += 1021) {
    const float value = from_bits<float>(static_cast<std::uint32_t>(bits));
    if (std::isnan(value)) continue;  // NaN goes to CUDA's conversion itself
    ASSERT_TRUE(rounds_as_cuda<T>(static_cast<double>(value)));
  }
  for (const double value : {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::denorm_min(), 1e300, -1e-300, 0.0, -0.0}) {
    ASSERT_TRUE(rounds_as_cuda<T>(value));
  }
}

TYPED_TEST(HostTestSupport, LookedUpComparisonCatchesEveryDifference) {
  using T = TypeParam;
  const std::vector<T> inputs = random_values<T>(5000, 41);
  const reference::HardTanh bounds{-1.0, 1.0};
  std::vector<T> outputs;
  for (const T x : inputs) outputs.push_back(bounds(x));
  EXPECT_TRUE(outputs_match_reference(inputs, outputs, bounds, NanBits::Exact));

  std::vector<T> wrong = outputs;  // one element's lowest bit
  wrong[1234] = from_bits<T>(static_cast<std::uint16_t>(to_bits(wrong[1234]) ^ 1u));
  const ::testing::AssertionResult caught = outputs_match_reference(inputs, wrong, bounds, NanBits::Exact);
  EXPECT_FALSE(caught);
  EXPECT_NE(std::string(caught.message()).find("[1234]"), std::string::npos) << caught.message();
  EXPECT_NE(std::string(caught.message()).find("1 of 5000 elements differ"), std::string::npos) << caught.message();

  // Another reference value with the first's results: not served from the first's table.
  EXPECT_FALSE(outputs_match_reference(inputs, outputs, reference::HardTanh{0.0, 6.0}, NanBits::Exact));
  EXPECT_TRUE(outputs_match_reference(inputs, outputs, bounds, NanBits::Exact));

  // A NaN passed through with another payload: caught bit for bit, accepted as any NaN.
  std::size_t nan_at = inputs.size();
  for (std::size_t i = 0; i < inputs.size() && nan_at == inputs.size(); ++i)
    if (is_nan(inputs[i])) nan_at = i;
  ASSERT_LT(nan_at, inputs.size());
  std::vector<T> payload = outputs;
  payload[nan_at] = from_bits<T>(static_cast<std::uint16_t>(to_bits(payload[nan_at]) ^ 1u));
  ASSERT_TRUE(is_nan(payload[nan_at]));
  EXPECT_FALSE(outputs_match_reference(inputs, payload, bounds, NanBits::Exact));
  EXPECT_TRUE(outputs_match_reference(inputs, payload, bounds, NanBits::Any));

  // HardSigmoid (an empty reference) looked up as well.
  std::vector<T> sigmoid;
  for (const T x : inputs) sigmoid.push_back(reference::HardSigmoid{}(x));
  EXPECT_TRUE(outputs_match_reference(inputs, sigmoid, reference::HardSigmoid{}, NanBits::Any));
  EXPECT_FALSE(outputs_match_reference(inputs, outputs, reference::HardSigmoid{}, NanBits::Any));
}

}  // namespace
