/// @file test_overrides.cuh
/// @brief The two paths, and the switches tests and tuning tools use to force a path or a staged
///        shape, or to turn off an adopted form (the summing path's, the direct path's half-width
///        vectors). Compiled in only where HARDACT_TESTING_OVERRIDES is defined (the test suite,
///        the benchmarks): elsewhere every switch is a constant "use the rule", and a launch reads
///        no process-wide state. Run-time switches rather than macros: one binary measures both
///        sides, and no two translation units of a program can disagree.
#pragma once

#ifdef HARDACT_TESTING_OVERRIDES
#include <atomic>
#endif

namespace hardact {
namespace detail {

/// The two kernels: `direct` loads global memory straight into registers (every architecture,
/// explicit VecWidth, small arrays); `staged` copies tiles into shared memory with the bulk-copy
/// engine (sm_90 and later, large arrays, automatic width).
enum class TransformPath { automatic, direct, staged };

#ifdef HARDACT_TESTING_OVERRIDES

/// Process-wide overrides of the rules, for tests (both paths at every size, every staged shape)
/// and tuning runs; zero means "use the rule". Forcing blocks or stages selects the persistent
/// grid.
struct TransformTuning {
  std::atomic<TransformPath> path{TransformPath::automatic};
  std::atomic<int> staged_units_per_thread{0};
  std::atomic<int> staged_blocks_per_multiprocessor{0};
  std::atomic<int> staged_stages{0};
  /// StagedLoop::two_rows: 1 wherever a call can take it (periods down to half a tile), -1 never,
  /// 0 the rule (two_rows_halves_apart).
  std::atomic<int> staged_two_rows{0};
  /// The summing path's adopted forms (TUNING.md#summing-path), true (the rule) or false (off, to
  /// measure or test a call without it): a rows-form call cut for the device at its width
  /// (plan_rows; off: the shape's chunks), the partial sums' kernel as a programmatic dependent launch,
  /// the tiles form for short NCHW runs that are not whole vectors (runs_per_tile).
  std::atomic<bool> summed_rows_plan{true};
  std::atomic<bool> summed_dependent_launch{true};
  std::atomic<bool> summed_tiles{true};
  /// The direct path's half-width vectors where they put a broadcast operand's values in whole runs
  /// (half_width_keeps_runs), true (the rule) or false (off).
  std::atomic<bool> direct_half_width_runs{true};
};

inline TransformTuning& transform_tuning() {
  static TransformTuning tuning;
  return tuning;
}

/// Forces a path for the lifetime of the object (not thread-safe with respect to other threads'
/// calls, which see the forced path too).
class ScopedTransformPath {
 public:
  explicit ScopedTransformPath(TransformPath path) : previous_(transform_tuning().path.exchange(path)) {}
  ~ScopedTransformPath() { transform_tuning().path.store(previous_); }
  ScopedTransformPath(const ScopedTransformPath&) = delete;
  ScopedTransformPath& operator=(const ScopedTransformPath&) = delete;

 private:
  TransformPath previous_;
};

inline TransformPath forced_path() { return transform_tuning().path.load(std::memory_order_relaxed); }
inline int forced_staged_units_per_thread() {
  return transform_tuning().staged_units_per_thread.load(std::memory_order_relaxed);
}
inline int forced_staged_blocks_per_multiprocessor() {
  return transform_tuning().staged_blocks_per_multiprocessor.load(std::memory_order_relaxed);
}
inline int forced_staged_stages() { return transform_tuning().staged_stages.load(std::memory_order_relaxed); }
inline int forced_staged_two_rows() { return transform_tuning().staged_two_rows.load(std::memory_order_relaxed); }
inline bool summed_rows_plan_enabled() { return transform_tuning().summed_rows_plan.load(std::memory_order_relaxed); }
inline bool summed_dependent_launch_enabled() {
  return transform_tuning().summed_dependent_launch.load(std::memory_order_relaxed);
}
inline bool summed_tiles_enabled() { return transform_tuning().summed_tiles.load(std::memory_order_relaxed); }
inline bool direct_half_width_runs_enabled() {
  return transform_tuning().direct_half_width_runs.load(std::memory_order_relaxed);
}

#else  // the shipping build: every switch says "use the rule"

constexpr TransformPath forced_path() { return TransformPath::automatic; }
constexpr int forced_staged_units_per_thread() { return 0; }
constexpr int forced_staged_blocks_per_multiprocessor() { return 0; }
constexpr int forced_staged_stages() { return 0; }
constexpr int forced_staged_two_rows() { return 0; }
constexpr bool summed_rows_plan_enabled() { return true; }
constexpr bool summed_dependent_launch_enabled() { return true; }
constexpr bool summed_tiles_enabled() { return true; }
constexpr bool direct_half_width_runs_enabled() { return true; }

#endif

}  // namespace detail
}  // namespace hardact
