// Test support: element-by-element comparison of results with a reference, reporting the first
// few mismatches with their inputs.
#pragma once

#include "support/bits.hpp"
#include "support/reference.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace hardact_test {

/// How NaN results are compared: any NaN for any NaN (arithmetic may canonicalise the payload,
/// and does so differently on host and device), or bit for bit (pass-through operations).
enum class NanBits { Any, Exact };

template <class T>
bool same_result(T actual, T expected, NanBits nan) {
  return nan == NanBits::Exact ? to_bits(actual) == to_bits(expected) : same_bits_or_both_nan(actual, expected);
}

/// References whose result depends on the input and their own bytes alone (no pointers, no state):
/// their results for every 16-bit input can be kept and looked up.
template <class Reference>
inline constexpr bool is_pure_reference =
    std::is_same_v<Reference, reference::HardSigmoid> || std::is_same_v<Reference, reference::HardTanh>;

/// reference(x) for each of the 65,536 patterns of T, made once per reference value and kept by the
/// calling thread (the last eight): the sweeps check thousands of runs against one reference, whose
/// branches on random inputs took 7-10 ns an element (TUNING.md#build-time).
template <class T, class Reference>
const std::uint16_t* reference_table(const Reference& reference) {
  static_assert(sizeof(T) == 2 && is_pure_reference<Reference> && std::is_trivially_copyable_v<Reference>);
  struct Entry {
    Reference key;
    std::vector<std::uint16_t> results;
  };
  thread_local std::vector<Entry> entries;
  const auto same_key = [&reference](const Entry& entry) {
    return std::is_empty_v<Reference> || std::memcmp(&entry.key, &reference, sizeof(Reference)) == 0;
  };
  for (const Entry& entry : entries)
    if (same_key(entry)) return entry.results.data();
  if (entries.size() == 8) entries.erase(entries.begin());
  std::vector<std::uint16_t> results(65536);
  for (std::uint32_t bits = 0; bits < 65536; ++bits) {
    results[bits] = to_bits(reference(from_bits<T>(static_cast<std::uint16_t>(bits))));
  }
  entries.push_back(Entry{reference, std::move(results)});
  return entries.back().results.data();
}

/// outputs[i] against reference(inputs[i]) for every i.
template <class T, class Reference>
::testing::AssertionResult outputs_match_reference(const std::vector<T>& inputs, const std::vector<T>& outputs,
                                                   const Reference& reference, NanBits nan) {
  if (inputs.size() != outputs.size()) {
    return ::testing::AssertionFailure() << inputs.size() << " inputs but " << outputs.size() << " outputs";
  }
  if constexpr (sizeof(T) == 2 && is_pure_reference<Reference>) {
    // Looked up, then (on a mismatch only) evaluated again below for the report.
    const std::uint16_t* const table = reference_table<T>(reference);
    bool all_same = true;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      all_same &= same_result(outputs[i], from_bits<T>(table[to_bits(inputs[i])]), nan);
    }
    if (all_same) return ::testing::AssertionSuccess();
  }
  std::size_t mismatches = 0;
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const T expected = reference(inputs[i]);
    if (same_result(outputs[i], expected, nan)) continue;
    if (++mismatches <= 5) {
      failure << "\n  [" << i << "] input " << describe(inputs[i]) << ": got " << describe(outputs[i])
              << ", expected " << describe(expected);
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return failure << "\n  " << mismatches << " of " << inputs.size() << " elements differ";
}

/// op(x) against reference(x), both evaluated on the host, for every x in `inputs`.
template <class T, class Op, class Reference>
::testing::AssertionResult host_op_matches_reference(const Op& op, const Reference& reference,
                                                     const std::vector<T>& inputs, NanBits nan) {
  std::vector<T> outputs;
  outputs.reserve(inputs.size());
  for (const T x : inputs) outputs.push_back(op(x));
  return outputs_match_reference(inputs, outputs, reference, nan);
}

}  // namespace hardact_test
