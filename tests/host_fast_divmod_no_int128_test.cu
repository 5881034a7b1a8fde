// FastDivmod and multiply_high on their portable path: numeric/fast_divmod.cuh divides 2^(63 + l) by d by long
// division and forms 64 x 64 -> 128-bit products from 32-bit halves where the host compiler has no
// 128-bit integers (the #else branches). This translation unit takes those branches by hiding
// __SIZEOF_INT128__ before anything is included, and checks them against the same cases as
// host_broadcast_operand_test.cu (whose translation unit takes the __int128 branches). A separate
// executable, so that the two definitions of the inline functions never meet in one program.
#undef __SIZEOF_INT128__

#include <hardact/numeric/fast_divmod.cuh>

#ifdef __SIZEOF_INT128__
#error "host_fast_divmod_no_int128_test must compile fast_divmod.cuh without __SIZEOF_INT128__"
#endif

#include "support/divmod_cases.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

using namespace hardact_test;
using hardact::detail::FastDivmod;

TEST(HostFastDivmodPortable, MatchesDivisionAndRemainder) {
  EXPECT_TRUE(divmod::host_divmod_matches<FastDivmod>(divmod::cases()));
}

TEST(HostFastDivmodPortable, Divmod32MatchesDivisionBelow2To31) {
  EXPECT_TRUE(divmod::host_divmod32_matches<FastDivmod>(divmod::cases32()));
}

// The multipliers themselves equal floor(2^(63 + l) / d) + 1, computed here with 128-bit integers.
TEST(HostFastDivmodPortable, MultipliersMatch128BitDivision) {
  __extension__ using Wide = unsigned __int128;
  std::size_t mismatches = 0;
  for (const std::uint64_t d : divmod::divisors()) {
    if (d == 1) continue;
    unsigned l = 0;
    while ((std::uint64_t{1} << l) < d) ++l;
    const std::uint64_t expected = static_cast<std::uint64_t>((Wide{1} << (63 + l)) / d) + 1;
    const FastDivmod f = FastDivmod::make(d);
    if ((f.multiplier != expected || f.shift != l - 1) && ++mismatches <= 5) {
      ADD_FAILURE() << "d " << d << ": multiplier " << f.multiplier << " shift " << f.shift << ", expected "
                    << expected << " and " << l - 1;
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(HostFastDivmodPortable, MultiplyHighFromHalves) {
  EXPECT_TRUE(divmod::multiply_high_matches(
      [](std::uint64_t a, std::uint64_t b) { return hardact::detail::multiply_high(a, b); }));
}

}  // namespace
