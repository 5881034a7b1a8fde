// Test support: element-by-element comparison of results with a reference, reporting the first
// few mismatches with their inputs.
#pragma once

#include "support/bits.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace hardact_test {

/// How NaN results are compared: any NaN for any NaN (arithmetic may canonicalise the payload,
/// and does so differently on host and device), or bit for bit (pass-through operations).
enum class NanBits { Any, Exact };

template <class T>
bool same_result(T actual, T expected, NanBits nan) {
  return nan == NanBits::Exact ? to_bits(actual) == to_bits(expected) : same_bits_or_both_nan(actual, expected);
}

/// outputs[i] against reference(inputs[i]) for every i.
template <class T, class Reference>
::testing::AssertionResult outputs_match_reference(const std::vector<T>& inputs, const std::vector<T>& outputs,
                                                   const Reference& reference, NanBits nan) {
  if (inputs.size() != outputs.size()) {
    return ::testing::AssertionFailure() << inputs.size() << " inputs but " << outputs.size() << " outputs";
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
