// Test support: divisors and numerators for checking hardact::detail::FastDivmod (operand.cuh)
// against the plain 64-bit `/` and `%` (and its 32-bit form, divmod32, below 2^31), shared by the host tests (with and without the compiler's
// 128-bit integers) and the device test. Divisors cover [1, 2^63], FastDivmod's whole domain:
// 1..5000, every power of two with its neighbours, and reproducible random ones of every
// magnitude; numerators cover [0, 2^63), where FastDivmod is exact: the ends, the neighbours of
// the divisor and of the largest multiple of it below 2^63, and random ones.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <vector>

namespace hardact_test {
namespace divmod {

inline constexpr std::uint64_t kTwo63 = std::uint64_t{1} << 63;

/// Divisors in [1, 2^63]: 1..`small_limit`, 2^k - 1, 2^k, 2^k + 1 up to 2^63, a few known hard
/// ones, and `random_count` random ones (half uniform below 2^63, half of a random bit length).
inline std::vector<std::uint64_t> divisors(std::uint64_t small_limit = 5000, std::size_t random_count = 4000,
                                           std::uint64_t seed = 0xd1715011) {
  std::vector<std::uint64_t> result;
  for (std::uint64_t d = 1; d <= small_limit; ++d) result.push_back(d);
  for (int k = 1; k <= 63; ++k) {
    const std::uint64_t power = std::uint64_t{1} << k;
    result.push_back(power - 1);
    result.push_back(power);
    if (k < 63) result.push_back(power + 1);
  }
  // 3^39, 10^18, 2^32 +- 1 and their products with small primes, primes next to 2^63 and 2^62.
  for (const std::uint64_t d : std::initializer_list<std::uint64_t>{4052555153018976267ull, 1000000000000000000ull, 4294967295ull * 3, 4294967297ull * 7,
                                9223372036854775783ull, 4611686018427387847ull, 6700417ull * 641,
                                kTwo63 / 3, kTwo63 / 3 + 1, kTwo63 / 5 * 2, kTwo63 - 25}) {
    result.push_back(d);
  }
  std::mt19937_64 engine(seed);
  for (std::size_t i = 0; i < random_count; ++i) {
    const std::uint64_t bits = engine();
    const unsigned shift = (i % 2 == 0) ? 1u : 1u + static_cast<unsigned>(engine() % 63);  // 1..63
    const std::uint64_t d = bits >> shift;
    result.push_back(d == 0 ? 1 : d);
  }
  return result;
}

/// Numerators below 2^63 for divisor d: 0, 1, d - 1, d, d + 1, 2d - 1, 2d, 2^63 - 1, 2^63 - 2, the
/// largest multiple of d below 2^63 and its neighbours, and `random_count` random ones (half
/// uniform below 2^63, half of a random bit length). Values at or past 2^63 are left out.
inline std::vector<std::uint64_t> numerators(std::uint64_t d, std::mt19937_64& engine, std::size_t random_count = 12) {
  std::vector<std::uint64_t> candidates = {0, 1, d - 1, d, d + 1, kTwo63 - 1, kTwo63 - 2};
  if (d < kTwo63 / 2) {
    candidates.push_back(2 * d - 1);
    candidates.push_back(2 * d);
  }
  const std::uint64_t last_multiple = (kTwo63 - 1) / d * d;
  candidates.push_back(last_multiple);
  candidates.push_back(last_multiple - 1);
  candidates.push_back(last_multiple + 1);
  if (last_multiple >= d) candidates.push_back(last_multiple - d + 1);
  for (std::size_t i = 0; i < random_count; ++i) {
    const std::uint64_t bits = engine();
    const unsigned shift = (i % 2 == 0) ? 1u : 1u + static_cast<unsigned>(engine() % 63);
    candidates.push_back(bits >> shift);
  }
  std::vector<std::uint64_t> result;
  for (const std::uint64_t n : candidates) {
    if (n < kTwo63) result.push_back(n);
  }
  return result;
}

/// One (divisor, numerator) pair and what `/` and `%` give for it.
struct Case {
  std::uint64_t divisor, numerator, quotient, remainder;
};

/// Every divisor of divisors(...) with each of its numerators(...).
inline std::vector<Case> cases(std::uint64_t small_limit = 5000, std::size_t random_divisors = 4000,
                               std::size_t random_numerators = 12) {
  std::vector<Case> result;
  std::mt19937_64 engine(0x4e0e7a70);
  for (const std::uint64_t d : divisors(small_limit, random_divisors)) {
    for (const std::uint64_t n : numerators(d, engine, random_numerators)) result.push_back({d, n, n / d, n % d});
  }
  return result;
}

inline constexpr std::uint64_t kTwo31 = std::uint64_t{1} << 31;

/// Cases for the 32-bit form (divmod32), whose domain is divisors in [1, 2^31] and numerators below
/// 2^31 (a call of at most 2^31 elements): the cases() generation, kept within that domain, plus
/// every divisor 2^k - 1, 2^k, 2^k + 1 up to 2^31 with the numerators next to 2^31.
inline std::vector<Case> cases32(std::uint64_t small_limit = 5000, std::size_t random_divisors = 4000,
                                 std::size_t random_numerators = 12) {
  std::vector<Case> result;
  std::mt19937_64 engine(0x3232);
  for (std::uint64_t d : divisors(small_limit, random_divisors)) {
    if (d > kTwo31) d = d % kTwo31 + 1;  // a random divisor of any bit length up to 31
    for (std::uint64_t n : numerators(d, engine, random_numerators)) {
      if (n >= kTwo31) n %= kTwo31;
      result.push_back({d, n, n / d, n % d});
    }
    const std::uint64_t last_multiple = (kTwo31 - 1) / d * d;
    for (const std::uint64_t n : {kTwo31 - 1, kTwo31 - 2, last_multiple, last_multiple - 1, last_multiple + 1}) {
      if (n < kTwo31) result.push_back({d, n, n / d, n % d});
    }
  }
  return result;
}

/// divmod32(n) of Divmod::make(d) against `/` and `%` for every case of cases32(), on the host.
template <class Divmod>
::testing::AssertionResult host_divmod32_matches(const std::vector<Case>& all) {
  std::size_t mismatches = 0;
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  for (const Case& c : all) {
    const Divmod divmod = Divmod::make(c.divisor);
    std::uint32_t quotient = ~0u, remainder = ~0u;
    divmod.divmod32(static_cast<std::uint32_t>(c.numerator), quotient, remainder);
    if (quotient == c.quotient && remainder == c.remainder) continue;
    if (++mismatches <= 10) {
      failure << "\n  " << c.numerator << " / " << c.divisor << ": divmod32 (" << quotient << ", " << remainder
              << "), expected (" << c.quotient << ", " << c.remainder << ")";
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess() << all.size() << " cases";
  return failure << "\n  " << mismatches << " of " << all.size() << " cases differ";
}

/// divide(n) and divmod(n) of Divmod::make(d) against `/` and `%` for every case, on the host.
template <class Divmod>
::testing::AssertionResult host_divmod_matches(const std::vector<Case>& all) {
  std::size_t mismatches = 0;
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  for (const Case& c : all) {
    const Divmod divmod = Divmod::make(c.divisor);
    std::uint64_t quotient = ~std::uint64_t{0}, remainder = ~std::uint64_t{0};
    divmod.divmod(c.numerator, quotient, remainder);
    const std::uint64_t divided = divmod.divide(c.numerator);
    if (divided == c.quotient && quotient == c.quotient && remainder == c.remainder) continue;
    if (++mismatches <= 10) {
      failure << "\n  " << c.numerator << " / " << c.divisor << ": divide " << divided << ", divmod (" << quotient
              << ", " << remainder << "), expected (" << c.quotient << ", " << c.remainder << ")";
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess() << all.size() << " cases";
  return failure << "\n  " << mismatches << " of " << all.size() << " cases differ";
}

/// High 64 bits of a * b from the compiler's 128-bit integers (g++ has them even where the library
/// is made to take its portable path).
inline std::uint64_t reference_multiply_high(std::uint64_t a, std::uint64_t b) {
  __extension__ using Wide = unsigned __int128;
  return static_cast<std::uint64_t>((static_cast<Wide>(a) * b) >> 64);
}

/// multiply_high(a, b) against reference_multiply_high for edge pairs and `random_count` random ones.
template <class MultiplyHigh>
::testing::AssertionResult multiply_high_matches(const MultiplyHigh& multiply_high, std::size_t random_count = 200000) {
  std::vector<std::uint64_t> edges = {0, 1, 2, 3, 0xffffffffull, 0x100000000ull, 0x100000001ull, kTwo63 - 1, kTwo63,
                                      kTwo63 + 1, ~std::uint64_t{0}, ~std::uint64_t{0} - 1, 0xfffffffe00000001ull};
  std::vector<std::uint64_t> a_values, b_values;
  for (const std::uint64_t a : edges) {
    for (const std::uint64_t b : edges) {
      a_values.push_back(a);
      b_values.push_back(b);
    }
  }
  std::mt19937_64 engine(0x3a11);
  for (std::size_t i = 0; i < random_count; ++i) {
    a_values.push_back(engine() >> (engine() % 64));
    b_values.push_back(engine() >> (engine() % 64));
  }
  std::size_t mismatches = 0;
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  for (std::size_t i = 0; i < a_values.size(); ++i) {
    const std::uint64_t got = multiply_high(a_values[i], b_values[i]);
    const std::uint64_t expected = reference_multiply_high(a_values[i], b_values[i]);
    if (got == expected) continue;
    if (++mismatches <= 10) {
      failure << "\n  mulhi(" << a_values[i] << ", " << b_values[i] << ") = " << got << ", expected " << expected;
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return failure << "\n  " << mismatches << " of " << a_values.size() << " pairs differ";
}

}  // namespace divmod
}  // namespace hardact_test
