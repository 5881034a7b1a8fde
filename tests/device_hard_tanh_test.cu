// HardTanh through hardact::transform on the device, for every element type and VecWidth:
// all short lengths, lengths around vector/block/tile multiples and large ones, every pair of
// head offsets, in place, many bound sets, and rejected calls (invalid bounds included).
// Compared bit for bit with the host reference, NaN payloads included (HardTanh passes NaN
// through unchanged).
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/reference.hpp"
#include "support/transform_check.hpp"

#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

#include <limits>
#include <sstream>
#include <string>

namespace {

using namespace hardact_test;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

/// "HardTanh{min, max}", for messages.
std::string bounds_name(const reference::HardTanh& bounds) {
  std::ostringstream name;
  name << "HardTanh{" << bounds.min_val << ", " << bounds.max_val << "}";
  return name.str();
}

template <class C>
class DeviceHardTanh : public ::testing::Test {};
TYPED_TEST_SUITE(DeviceHardTanh, AllCases, CaseNames);

TYPED_TEST(DeviceHardTanh, EveryLengthUpTo1100) {
  HARDACT_REQUIRE_DEVICE();
  using T = typename TypeParam::Element;
  constexpr int W = TypeParam::kVecWidth;
  sweep_short_lengths<W, T>(hardact::HardTanh{}, reference::HardTanh{-1.0, 1.0}, NanBits::Exact);
  if (quick_mode()) return;  // under the sanitizer one bound set is enough: the code path is the same
  sweep_short_lengths<W, T>(hardact::HardTanh{0.0, 6.0}, reference::HardTanh{0.0, 6.0}, NanBits::Exact);
}

TYPED_TEST(DeviceHardTanh, LengthsAroundVectorBlockAndTileMultiples) {
  HARDACT_REQUIRE_DEVICE();
  using T = typename TypeParam::Element;
  constexpr int W = TypeParam::kVecWidth;
  sweep_boundary_lengths<W, T>(hardact::HardTanh{}, reference::HardTanh{-1.0, 1.0}, NanBits::Exact);
  if (quick_mode()) return;
  sweep_boundary_lengths<W, T>(hardact::HardTanh{0.0, 6.0}, reference::HardTanh{0.0, 6.0}, NanBits::Exact);
}

TYPED_TEST(DeviceHardTanh, EveryPairOfHeadOffsets) {
  HARDACT_REQUIRE_DEVICE();
  sweep_offset_pairs<TypeParam::kVecWidth, typename TypeParam::Element>(
      hardact::HardTanh{}, reference::HardTanh{-1.0, 1.0}, NanBits::Exact);
}

TYPED_TEST(DeviceHardTanh, InPlace) {
  HARDACT_REQUIRE_DEVICE();
  sweep_in_place<TypeParam::kVecWidth, typename TypeParam::Element>(hardact::HardTanh{}, reference::HardTanh{-1.0, 1.0},
                                                                    NanBits::Exact);
}

// Signed-zero bounds, equal bounds, bounds not representable in the element type, bounds beyond
// its range, infinite bounds, float-subnormal bounds and bounds that round to zero in float.
TYPED_TEST(DeviceHardTanh, ManyBoundSets) {
  HARDACT_REQUIRE_DEVICE();
  using T = typename TypeParam::Element;
  constexpr int W = TypeParam::kVecWidth;
  const reference::HardTanh bound_sets[] = {
      {-1.0, 1.0},     {0.0, 6.0},       {-0.0, 6.0},    {-6.0, -0.0},       {-0.0, 0.0},    {0.0, -0.0},
      {0.25, 0.25},    {-kInf, kInf},    {-0.1, 0.3},    {-1e10, 1e10},      {-70000.0, 70000.0},
      {-1e-40, 1e-40}, {0.0, 1e-40},     {-3.0, 3.0},    {-1e300, -1e-300},  {1e-300, 1e300},
  };
  TransformBatch<W, T> batch(70001, 3);
  for (const reference::HardTanh& bounds : bound_sets) {
    const hardact::HardTanh op{bounds.min_val, bounds.max_val};
    const std::string name = bounds_name(bounds);
    for (const std::size_t n : {std::size_t{1000}, std::size_t{70001}}) {
      if (quick_mode() && n > 1000) continue;
      const std::vector<T> inputs = device_inputs<T>(n, 6000 + n, {bounds.min_val, bounds.max_val});
      ASSERT_TRUE((batch.add(op, bounds, NanBits::Exact, inputs, 0, 0, false, name)));
      ASSERT_TRUE((batch.add(op, bounds, NanBits::Exact, inputs, 1, 2, false, name)));
      ASSERT_TRUE((batch.add(op, bounds, NanBits::Exact, inputs, 3, 3, true, name + " in place")));
    }
  }
  ASSERT_TRUE(batch.finish());
}

TYPED_TEST(DeviceHardTanh, BadInputsReturnInvalidValueAndWriteNothing) {
  HARDACT_REQUIRE_DEVICE();
  expect_bad_inputs_write_nothing<TypeParam::kVecWidth, typename TypeParam::Element>(
      hardact::HardTanh{}, hardact::HardTanh{2.0, 1.0}, hardact::HardTanh{kNan, 1.0}, hardact::HardTanh{-1.0, kNan},
      hardact::HardTanh{kInf, -kInf});
}

// hardtanh(in, out, n, min_val, max_val) is transform(HardTanh{min_val, max_val}) with the
// automatic width; invalid bounds are rejected there too.
template <class C>
class DeviceHardTanhShorthand : public ::testing::Test {};
TYPED_TEST_SUITE(DeviceHardTanhShorthand, AutoWidthCases, CaseNames);

TYPED_TEST(DeviceHardTanhShorthand, ConvenienceLauncher) {
  HARDACT_REQUIRE_DEVICE();
  using T = typename TypeParam::Element;
  const std::size_t n = 5003;
  GuardedBuffer<T> in(n, 1), out(n, 2);
  ASSERT_EQ(in.status(), cudaSuccess);
  ASSERT_EQ(out.status(), cudaSuccess);
  const std::vector<T> inputs = device_inputs<T>(n, 78);
  ASSERT_EQ(in.upload(inputs), cudaSuccess);
  const T* const in_data = in.data();

  EXPECT_EQ(hardact::hardtanh(in_data, out.data(), n, 2.0, 1.0), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::hardtanh(in_data, out.data(), n, kNan), cudaErrorInvalidValue);
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(all_poisoned(out));

  std::vector<T> outputs;
  ASSERT_EQ(hardact::hardtanh(in_data, out.data(), n), cudaSuccess);
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  ASSERT_EQ(out.download(outputs), cudaSuccess);
  EXPECT_TRUE(outputs_match_reference(inputs, outputs, reference::HardTanh{-1.0, 1.0}, NanBits::Exact));

  ASSERT_EQ(hardact::hardtanh(in_data, out.data(), n, 0.0, 6.0), cudaSuccess);
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  ASSERT_EQ(out.download(outputs), cudaSuccess);
  EXPECT_TRUE(outputs_match_reference(inputs, outputs, reference::HardTanh{0.0, 6.0}, NanBits::Exact));
  EXPECT_TRUE(out.guards_intact());
}

}  // namespace
