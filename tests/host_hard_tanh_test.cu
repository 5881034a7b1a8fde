// HardTanh on the host, per element type and per pair of bounds, against the independent
// reference and against facts that need no reference (NaN bits, signed zeros, subnormals,
// bounds), plus is_valid() and the aggregate interface.
#include "support/bits.hpp"
#include "support/compare.hpp"
#include "support/reference.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using namespace hardact_test;


struct Bounds {
  double min_val, max_val;
};

std::string describe_bounds(const Bounds& bounds) {
  std::ostringstream out;
  out.precision(17);
  out << "HardTanh{" << bounds.min_val << ", " << bounds.max_val << "}";
  return out.str();
}

constexpr double kInf = std::numeric_limits<double>::infinity();

// Defaults, ReLU6, signed-zero bounds, equal bounds, bounds not representable in the element
// type, bounds beyond its range, float-subnormal bounds and bounds that round to zero in float.
const Bounds kBoundSets[] = {
    {-1.0, 1.0},   {0.0, 6.0},      {-0.0, 6.0},     {-6.0, -0.0},    {-0.0, 0.0},     {0.0, -0.0},
    {0.25, 0.25},  {-kInf, kInf},   {-0.1, 0.3},     {-1e10, 1e10},   {-70000.0, 70000.0},
    {-1e-40, 1e-40}, {0.0, 1e-40},  {-1e300, -1e-300}, {1e-300, 1e300}, {-3.0, 3.0},
};

template <class T>
std::vector<T> inputs_for(const Bounds& bounds) {
  std::vector<T> inputs = special_values<T>({bounds.min_val, bounds.max_val});
  const std::vector<T> random = random_values<T>(1 << 16, 0x7a4b, {bounds.min_val, bounds.max_val});
  inputs.insert(inputs.end(), random.begin(), random.end());
  return inputs;
}

template <class T>
class HostHardTanh : public ::testing::Test {};
TYPED_TEST_SUITE(HostHardTanh, ElementTypes, TypeNames);

TYPED_TEST(HostHardTanh, MatchesReferenceForEveryBoundSet) {
  using T = TypeParam;
  for (const Bounds& bounds : kBoundSets) {
    const hardact::HardTanh op{bounds.min_val, bounds.max_val};
    ASSERT_TRUE(op.is_valid()) << describe_bounds(bounds);
    EXPECT_TRUE(host_op_matches_reference(op, reference::HardTanh{bounds.min_val, bounds.max_val},
                                          inputs_for<T>(bounds), NanBits::Exact))
        << describe_bounds(bounds);
  }
}

TYPED_TEST(HostHardTanh, NanPassesThroughBitForBit) {
  using T = TypeParam;
  using P = Patterns<T>;
  using Bits = typename P::Bits;
  for (const Bits magnitude : {Bits(P::kInfinity | P::kQuietBit), Bits(P::kInfinity | 1), Bits(P::kInfinity | P::kMantissa),
                               Bits(P::kInfinity | P::kQuietBit | 5)}) {
    for (const Bits sign : {Bits(0), P::kSign}) {
      const T x = from_bits<T>(Bits(magnitude | sign));
      for (const Bounds& bounds : kBoundSets) {
        const T y = hardact::HardTanh{bounds.min_val, bounds.max_val}(x);
        EXPECT_EQ(to_bits(y), to_bits(x)) << describe(x) << " " << describe_bounds(bounds);
      }
    }
  }
}

TYPED_TEST(HostHardTanh, SignedZerosAndSubnormals) {
  using T = TypeParam;
  using P = Patterns<T>;
  using Bits = typename P::Bits;
  const T negative_zero = from_bits<T>(P::kSign);
  const T positive_zero = from_bits<T>(Bits(0));
  const T tiny = from_bits<T>(Bits(1));                       // smallest positive subnormal
  const T negative_tiny = from_bits<T>(Bits(P::kSign | 1));   // and its negative
  const T largest_subnormal = from_bits<T>(P::kMantissa);

  // Default bounds keep -0.0 and subnormals as they are (no flush to zero).
  const hardact::HardTanh defaults{};
  EXPECT_EQ(to_bits(defaults(negative_zero)), to_bits(negative_zero));
  EXPECT_EQ(to_bits(defaults(positive_zero)), to_bits(positive_zero));
  EXPECT_EQ(to_bits(defaults(tiny)), to_bits(tiny));
  EXPECT_EQ(to_bits(defaults(negative_tiny)), to_bits(negative_tiny));
  EXPECT_EQ(to_bits(defaults(largest_subnormal)), to_bits(largest_subnormal));

  // A lower bound of exactly 0 (ReLU6) turns -0.0 and tiny negatives into +0.0, as PyTorch does.
  const hardact::HardTanh relu6{0.0, 6.0};
  EXPECT_EQ(to_bits(relu6(negative_zero)), to_bits(positive_zero));
  EXPECT_EQ(to_bits(relu6(negative_tiny)), to_bits(positive_zero));
  EXPECT_EQ(to_bits(relu6(tiny)), to_bits(tiny));

  // An upper bound of -0.0 turns +0.0 into -0.0 (min orders -0.0 below +0.0).
  const hardact::HardTanh nonpositive{-6.0, -0.0};
  EXPECT_EQ(to_bits(nonpositive(positive_zero)), to_bits(negative_zero));
  EXPECT_EQ(to_bits(nonpositive(tiny)), to_bits(negative_zero));
  EXPECT_EQ(to_bits(nonpositive(negative_tiny)), to_bits(negative_tiny));
}

TYPED_TEST(HostHardTanh, InfinitiesSaturateToTheBounds) {
  using T = TypeParam;
  const T plus_inf = from_double<T>(kInf);
  const T minus_inf = from_double<T>(-kInf);
  EXPECT_EQ(to_double(hardact::HardTanh{}(plus_inf)), 1.0);
  EXPECT_EQ(to_double(hardact::HardTanh{}(minus_inf)), -1.0);
  EXPECT_EQ(to_double(hardact::HardTanh{0.0, 6.0}(plus_inf)), 6.0);
  EXPECT_EQ(to_bits(hardact::HardTanh{0.0, 6.0}(minus_inf)), to_bits(from_double<T>(0.0)));
  EXPECT_EQ(to_bits(hardact::HardTanh{-kInf, kInf}(plus_inf)), to_bits(plus_inf));
}

TYPED_TEST(HostHardTanh, ResultsStayWithinTheBoundsInTheComputeType) {
  using T = TypeParam;
  using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;
  for (const Bounds& bounds : {Bounds{-1.0, 1.0}, Bounds{0.0, 6.0}, Bounds{-0.1, 0.3}, Bounds{-2.5, -0.5}}) {
    const hardact::HardTanh op{bounds.min_val, bounds.max_val};
    // The bounds, rounded to T the way a result is: the tightest interval a result can occupy.
    const double lo = to_double(from_double<T>(static_cast<Compute>(bounds.min_val)));
    const double hi = to_double(from_double<T>(static_cast<Compute>(bounds.max_val)));
    for (const T x : random_values<T>(1 << 14, 0x1b0d)) {
      if (is_nan(x)) continue;
      const double y = to_double(op(x));
      ASSERT_GE(y, lo) << describe(x) << " " << describe_bounds(bounds);
      ASSERT_LE(y, hi) << describe(x) << " " << describe_bounds(bounds);
      const double value = to_double(x);
      if (value > bounds.min_val && value < bounds.max_val) ASSERT_EQ(y, value) << describe(x);
    }
  }
}

template <class T>
class HostHardTanhHalfWidth : public ::testing::Test {};
using HalfWidthTypes = ::testing::Types<__half, __nv_bfloat16>;
TYPED_TEST_SUITE(HostHardTanhHalfWidth, HalfWidthTypes, TypeNames);

TYPED_TEST(HostHardTanhHalfWidth, EveryBitPatternMatchesReference) {
  using T = TypeParam;
  const std::vector<T> inputs = all_patterns<T>();
  for (const Bounds& bounds : kBoundSets) {
    EXPECT_TRUE(host_op_matches_reference(hardact::HardTanh{bounds.min_val, bounds.max_val},
                                          reference::HardTanh{bounds.min_val, bounds.max_val}, inputs, NanBits::Exact))
        << describe_bounds(bounds);
  }
}

TEST(HostHardTanhInterface, AggregateWithPyTorchDefaults) {
  static_assert(std::is_aggregate_v<hardact::HardTanh>, "HardTanh{min, max} must be aggregate initialisation");
  static_assert(std::is_trivially_copyable_v<hardact::HardTanh>, "policies are passed to kernels by value");
  static_assert(std::is_same_v<decltype(hardact::HardTanh{}.min_val), double>, "bounds are doubles");
  static_assert(std::is_same_v<decltype(hardact::HardTanh{}.max_val), double>, "bounds are doubles");
  constexpr hardact::HardTanh defaults{};
  static_assert(defaults.min_val == -1.0 && defaults.max_val == 1.0, "PyTorch's default bounds");
  constexpr hardact::HardTanh relu6{0.0, 6.0};
  static_assert(relu6.min_val == 0.0 && relu6.max_val == 6.0, "aggregate order is min, max");
  static_assert(relu6.is_valid(), "is_valid() is usable in constant expressions");
  SUCCEED();
}

TEST(HostHardTanhInterface, IsValidRejectsOutOfOrderAndNanBounds) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE((hardact::HardTanh{}.is_valid()));
  EXPECT_TRUE((hardact::HardTanh{1.0, 1.0}.is_valid()));
  EXPECT_TRUE((hardact::HardTanh{-kInf, kInf}.is_valid()));
  EXPECT_TRUE((hardact::HardTanh{-0.0, 0.0}.is_valid()));
  EXPECT_TRUE((hardact::HardTanh{0.0, -0.0}.is_valid()));  // equal values, as PyTorch accepts
  EXPECT_FALSE((hardact::HardTanh{2.0, 1.0}.is_valid()));
  EXPECT_FALSE((hardact::HardTanh{1.0, std::nextafter(1.0, 0.0)}.is_valid()));
  EXPECT_FALSE((hardact::HardTanh{kInf, -kInf}.is_valid()));
  EXPECT_FALSE((hardact::HardTanh{nan, 1.0}.is_valid()));
  EXPECT_FALSE((hardact::HardTanh{-1.0, nan}.is_valid()));
  EXPECT_FALSE((hardact::HardTanh{nan, nan}.is_valid()));
}

}  // namespace
