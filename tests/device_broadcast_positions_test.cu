// Broadcast operands on the device in every position: a policy whose every argument weighs
// differently, with broadcasts first, in the middle, last, and in other patterns of two to four
// inputs (float; bfloat16 first, middle and last), and broadcasts that share the first broadcast's
// element positions or have their own. (Mixed types: device_broadcast_mixed_test.cu.)
// Checked calls go through support/broadcast_check.hpp's check_call: bit for bit (NaN as a class)
// against the policy applied on the host to each element's values, a broadcast's value for element
// i being values[(i / inner) % period], on the direct and on the staged path, forced. (The broadcast
// device tests are split over device_broadcast_*_test.cu so that they compile in parallel.)
// HARDACT_TEST_QUICK=1 (compute-sanitizer runs) keeps the sizes small and the placements few.
#include "support/broadcast_check.hpp"
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/device_family.hpp"

#include <hardact/hardact.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace hardact_test;
using namespace hardact_test::broadcast;

// =============================================================================================
// Operand positions: a policy whose every argument weighs differently, with broadcasts first, in
// the middle, last, and in every other pattern of two to four inputs.

/// a - 2 b + 4 c - 8 d (as many terms as arguments) in the compute type, rounded once: every
/// argument moves the result differently, so a value passed in the wrong position shows. The
/// products are exact, so the device's FMA contraction could not change a bit either.
struct Positional {
  template <class T, class... More>
  __host__ __device__ T operator()(T first, More... more) const {
    using C = hardact::compute_t<T>;
    C sum = hardact::to_compute(first);
    C weight = C(1);
    ((weight = weight * C(-2), sum = hardact::detail::add_rn(sum, hardact::detail::mul_rn(weight, hardact::to_compute(more)))),
     ...);
    return hardact::from_compute<T>(sum);
  }
};

/// Input k of a positions test: full-length, or a broadcast with a shape of its own.
template <class T, bool IsBroadcast>
Input<T, IsBroadcast> positional_input(std::size_t n, std::size_t k) {
  if constexpr (IsBroadcast) {
    const std::size_t shapes[][2] = {{5, 1}, {3, 49}, {64, 7}, {2, 3136}};
    return channel_input<T>(shapes[k][0], shapes[k][1], 100 + k);
  } else {
    return full_input<T>(n, 200 + k + n);
  }
}

template <class T, bool... IsBroadcast, std::size_t... K>
void check_positions(std::index_sequence<K...>) {
  std::string pattern;
  ((pattern += IsBroadcast ? 'B' : 'F'), ...);
  SCOPED_TRACE("pattern " + pattern);
  for (const std::size_t n : family::quick_mode() ? std::vector<std::size_t>{1000, 4097}
                                                   : std::vector<std::size_t>{3, 1000, 4097, 65536 + 7, (1u << 20) + 3}) {
    check_call<T>(Positional{}, n, positional_input<T, IsBroadcast>(n, K)...);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

template <class T, bool... IsBroadcast>
void check_positions() {
  check_positions<T, IsBroadcast...>(std::make_index_sequence<sizeof...(IsBroadcast)>{});
}

// Built in two executables (HARDACT_TESTS_BY_TYPE): the float patterns in the first, the bfloat16
// ones and the shared positions (float and bfloat16) in the second.
#if !defined(HARDACT_TEST_TYPE_PART) || HARDACT_TEST_TYPE_PART == 1
TEST(DeviceBroadcastPositions, FloatEveryPattern) {
  HARDACT_REQUIRE_DEVICE();
  using T = float;
  check_positions<T, true, false>();
  check_positions<T, false, true>();
  check_positions<T, true, false, false>();
  check_positions<T, false, true, false>();
  check_positions<T, false, false, true>();
  check_positions<T, true, true, false>();
  check_positions<T, true, false, true>();
  check_positions<T, false, true, true>();
  check_positions<T, true, false, false, false>();
  check_positions<T, false, true, false, true>();
  check_positions<T, false, false, false, true>();
  check_positions<T, true, true, true, false>();
  check_positions<T, false, true, true, true>();
}

#endif

#if !defined(HARDACT_TEST_TYPE_PART) || HARDACT_TEST_TYPE_PART == 2
TEST(DeviceBroadcastPositions, Bfloat16FirstMiddleLast) {
  HARDACT_REQUIRE_DEVICE();
  using T = __nv_bfloat16;
  check_positions<T, true, false, false>();
  check_positions<T, false, true, false>();
  check_positions<T, false, false, true>();
}

// Broadcasts whose inner and period equal the first broadcast's share its element positions
// (located_like_first); one in between with a shape of its own must not.
TEST(DeviceBroadcastPositions, SharedAndOwnPositions) {
  HARDACT_REQUIRE_DEVICE();
  for (const std::size_t n : {std::size_t{1000}, std::size_t{65536 + 7}, std::size_t{(1u << 20) + 3}}) {
    check_call<float>(Positional{}, n, full_input<float>(n, n), channel_input<float>(64, 7, 300),
                      channel_input<float>(3, 49, 301), channel_input<float>(64, 7, 302));
    check_call<__nv_bfloat16>(Positional{}, n, full_input<__nv_bfloat16>(n, n), channel_input<__nv_bfloat16>(5, 1, 303),
                              channel_input<__nv_bfloat16>(5, 1, 304), channel_input<__nv_bfloat16>(2, 3136, 305));
    if (::testing::Test::HasFatalFailure()) return;
  }
}
#endif

}  // namespace
