// HardSigmoid through hardact::transform on the device, for every element type and VecWidth:
// all short lengths, lengths around vector/block/tile multiples and large ones, every pair of
// head offsets, in place, and rejected calls. Compared bit for bit with the host reference (any
// NaN matches any NaN: the device returns the canonical NaN).
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/reference.hpp"
#include "support/transform_check.hpp"

#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

namespace {

using namespace hardact_test;

template <class C>
class DeviceHardSigmoid : public ::testing::Test {};
TYPED_TEST_SUITE(DeviceHardSigmoid, AllCases, CaseNames);

TYPED_TEST(DeviceHardSigmoid, EveryLengthUpTo1100) {
  HARDACT_REQUIRE_DEVICE();
  sweep_short_lengths<TypeParam::kVecWidth, typename TypeParam::Element>(hardact::HardSigmoid{},
                                                                         reference::HardSigmoid{}, NanBits::Any);
}

TYPED_TEST(DeviceHardSigmoid, LengthsAroundVectorBlockAndTileMultiples) {
  HARDACT_REQUIRE_DEVICE();
  sweep_boundary_lengths<TypeParam::kVecWidth, typename TypeParam::Element>(hardact::HardSigmoid{},
                                                                            reference::HardSigmoid{}, NanBits::Any);
}

TYPED_TEST(DeviceHardSigmoid, EveryPairOfHeadOffsets) {
  HARDACT_REQUIRE_DEVICE();
  sweep_offset_pairs<TypeParam::kVecWidth, typename TypeParam::Element>(hardact::HardSigmoid{},
                                                                        reference::HardSigmoid{}, NanBits::Any);
}

TYPED_TEST(DeviceHardSigmoid, InPlace) {
  HARDACT_REQUIRE_DEVICE();
  sweep_in_place<TypeParam::kVecWidth, typename TypeParam::Element>(hardact::HardSigmoid{}, reference::HardSigmoid{},
                                                                    NanBits::Any);
}

TYPED_TEST(DeviceHardSigmoid, BadInputsReturnInvalidValueAndWriteNothing) {
  HARDACT_REQUIRE_DEVICE();
  expect_bad_inputs_write_nothing<TypeParam::kVecWidth, typename TypeParam::Element>(hardact::HardSigmoid{});
}

// The convenience launcher is transform(HardSigmoid{}) with the automatic width.
template <class C>
class DeviceHardSigmoidShorthand : public ::testing::Test {};
TYPED_TEST_SUITE(DeviceHardSigmoidShorthand, AutoWidthCases, CaseNames);

TYPED_TEST(DeviceHardSigmoidShorthand, ConvenienceLauncher) {
  HARDACT_REQUIRE_DEVICE();
  using T = typename TypeParam::Element;
  const std::size_t n = 5003;
  GuardedBuffer<T> in(n, 1), out(n, 2);
  ASSERT_EQ(in.status(), cudaSuccess);
  ASSERT_EQ(out.status(), cudaSuccess);
  const std::vector<T> inputs = device_inputs<T>(n, 77);
  ASSERT_EQ(in.upload(inputs), cudaSuccess);
  ASSERT_EQ(hardact::hardsigmoid(static_cast<const T*>(in.data()), out.data(), n), cudaSuccess);
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  std::vector<T> outputs;
  ASSERT_EQ(out.download(outputs), cudaSuccess);
  EXPECT_TRUE(outputs_match_reference(inputs, outputs, reference::HardSigmoid{}, NanBits::Any));
  EXPECT_TRUE(out.guards_intact());
}

}  // namespace
