// Test support: TransformTuning switches held for a scope (dispatch/test_overrides.cuh).
#pragma once

#ifndef HARDACT_TESTING_OVERRIDES
#error "the test switches need HARDACT_TESTING_OVERRIDES (tests/CMakeLists.txt defines it)"
#endif

#include <hardact/hardact.cuh>

#include <atomic>

namespace hardact_test {

/// Sets TransformTuning::staged_two_rows for the lifetime of the object: 1 takes
/// StagedLoop::two_rows wherever a call can, on any device; -1 never; 0 the rule.
class ScopedTwoRows {
 public:
  explicit ScopedTwoRows(int mode) : previous_(hardact::detail::transform_tuning().staged_two_rows.exchange(mode)) {}
  ~ScopedTwoRows() { hardact::detail::transform_tuning().staged_two_rows.store(previous_); }
  ScopedTwoRows(const ScopedTwoRows&) = delete;
  ScopedTwoRows& operator=(const ScopedTwoRows&) = delete;

 private:
  int previous_;
};

/// Turns one of the summing path's adopted forms off for the lifetime of the object: `form` is
/// &TransformTuning::summed_rows_plan, ::summed_dependent_launch or ::summed_tiles.
class ScopedSummedFormOff {
 public:
  using Form = std::atomic<bool> hardact::detail::TransformTuning::*;
  explicit ScopedSummedFormOff(Form form)
      : form_(form), previous_((hardact::detail::transform_tuning().*form).exchange(false)) {}
  ~ScopedSummedFormOff() { (hardact::detail::transform_tuning().*form_).store(previous_); }
  ScopedSummedFormOff(const ScopedSummedFormOff&) = delete;
  ScopedSummedFormOff& operator=(const ScopedSummedFormOff&) = delete;

 private:
  Form form_;
  bool previous_;
};

}  // namespace hardact_test
