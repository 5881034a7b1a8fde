// ReLU6 through hardact::transform on the device, for float, double, half and bfloat16: sizes x
// offsets x in place, bit for bit (NaN as a class) against the independent host reference
// (support/reference_family.hpp).
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/device_family.hpp"
#include "support/reference_family.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace {

using namespace hardact_test;
using family::on_elements;

template <class T>
class DeviceReLU6 : public ::testing::Test {};
TYPED_TEST_SUITE(DeviceReLU6, ElementTypes, TypeNames);

TYPED_TEST(DeviceReLU6, MatchesReference) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  family::check_one_input<T, T>(hardact::ReLU6{},
                                [](T x) { return on_elements<T>([](auto v) { return family::relu6(v); }, x); });
}

}  // namespace
