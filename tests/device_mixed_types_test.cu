// Mixed input and output types through hardact::transform on the device: float -> bfloat16/half,
// bfloat16/half -> float, bfloat16/float -> double, float/bfloat16 -> fp8 e4m3/e5m2 (saturating), for HardSigmoid and
// HardSwish (whose unbounded outputs reach the fp8 saturation) and a chain, sizes x offsets, bit
// for bit against the independent reference rounded once from float.
//
// Relation to PyTorch's F.hardsigmoid(x).to(dtype) (details in host_mixed_types_test.cu): equal
// for half, bfloat16 and float outputs (PyTorch rounds the same float result once); for fp8 equal
// wherever the result is within the fp8 range, as HardSigmoid's always is. Beyond it hardact
// saturates (e4m3: +-448, e5m2: +-57344), PyTorch <= 2.11 gives NaN (e4m3fn) or +-inf (e5m2).
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/device_family.hpp"
#include "support/reference_family.hpp"

#include <hardact/hardact.cuh>
#include <hardact/fp8.cuh>

#include <gtest/gtest.h>

namespace {

using namespace hardact_test;

/// HardSigmoid and HardSwish from TIn to TOut, against round_to<TOut>(float reference).
template <class TIn, class TOut>
void check_pair() {
  family::check_one_input<TIn, TOut>(hardact::HardSigmoid{}, [](TIn x) {
    return family::round_to<TOut>(family::hard_sigmoid(static_cast<float>(family::value_of(x))));
  });
  family::check_one_input<TIn, TOut>(hardact::HardSwish{}, [](TIn x) {
    return family::round_to<TOut>(family::hard_swish(static_cast<float>(family::value_of(x))));
  });
}

TEST(DeviceMixedTypes, FloatToBfloat16) {
  HARDACT_REQUIRE_DEVICE();
  check_pair<float, __nv_bfloat16>();
}
TEST(DeviceMixedTypes, FloatToHalf) {
  HARDACT_REQUIRE_DEVICE();
  check_pair<float, __half>();
}
TEST(DeviceMixedTypes, Bfloat16ToFloat) {
  HARDACT_REQUIRE_DEVICE();
  check_pair<__nv_bfloat16, float>();
}
TEST(DeviceMixedTypes, HalfToFloat) {
  HARDACT_REQUIRE_DEVICE();
  check_pair<__half, float>();
}
// Widening to double: on the staged path each thread reads 4 (bfloat16) or 8 (float) bytes of
// input per 16-byte store, the narrowest shared-memory reads it makes.
TEST(DeviceMixedTypes, Bfloat16ToDouble) {
  HARDACT_REQUIRE_DEVICE();
  check_pair<__nv_bfloat16, double>();
}
TEST(DeviceMixedTypes, FloatToDouble) {
  HARDACT_REQUIRE_DEVICE();
  check_pair<float, double>();
}
TEST(DeviceMixedTypes, FloatToE4M3) {
  HARDACT_REQUIRE_DEVICE();
  check_pair<float, __nv_fp8_e4m3>();
}
TEST(DeviceMixedTypes, FloatToE5M2) {
  HARDACT_REQUIRE_DEVICE();
  check_pair<float, __nv_fp8_e5m2>();
}
TEST(DeviceMixedTypes, Bfloat16ToE4M3) {
  HARDACT_REQUIRE_DEVICE();
  check_pair<__nv_bfloat16, __nv_fp8_e4m3>();
}
TEST(DeviceMixedTypes, Bfloat16ToE5M2) {
  HARDACT_REQUIRE_DEVICE();
  check_pair<__nv_bfloat16, __nv_fp8_e5m2>();
}

// A chain that writes fp8 straight from float: scale, activation and saturating cast in one pass.
TEST(DeviceMixedTypes, ChainFloatToE4M3) {
  HARDACT_REQUIRE_DEVICE();
  const auto fused = hardact::chain(hardact::Scale{300.0}, hardact::HardSwish{});
  family::check_one_input<float, __nv_fp8_e4m3>(
      fused, [](float x) { return family::round_to<__nv_fp8_e4m3>(family::hard_swish(family::scale(x, 300.0))); });
}

}  // namespace
