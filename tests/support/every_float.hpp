// Test support for the host tests that run every one of the 2^32 float bit patterns through a
// policy against the independent reference: the patterns are cut into chunks that all hardware
// threads take in turn (a Release build finishes in seconds on two cores), and a tally of what
// differed.
#pragma once

#include "support/bits.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hardact_test {
namespace every_float {

/// What a sweep found: mismatching patterns (count and the smallest one), and a count of
/// patterns for which an optional side condition held.
struct Tally {
  std::uint64_t mismatches = 0;
  std::uint32_t first_mismatch = std::numeric_limits<std::uint32_t>::max();
  std::uint64_t side_count = 0;

  void merge(const Tally& other) {
    mismatches += other.mismatches;
    first_mismatch = std::min(first_mismatch, other.first_mismatch);
    side_count += other.side_count;
  }
};

constexpr std::uint64_t kPatterns = std::uint64_t(1) << 32;
constexpr std::uint64_t kChunk = std::uint64_t(1) << 22;  // 1024 chunks: even load on any core count

/// Calls visit_range(begin, end, tally) on every chunk of [0, 2^32), in parallel.
template <class VisitRange>
Tally sweep_all_patterns(const VisitRange& visit_range) {
  std::atomic<std::uint64_t> next_chunk{0};
  std::mutex merge_mutex;
  Tally total;
  const unsigned num_threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> workers;
  workers.reserve(num_threads);
  for (unsigned t = 0; t < num_threads; ++t) {
    workers.emplace_back([&] {
      Tally local;
      for (;;) {
        const std::uint64_t chunk = next_chunk.fetch_add(1, std::memory_order_relaxed);
        if (chunk >= kPatterns / kChunk) break;
        visit_range(static_cast<std::uint32_t>(chunk * kChunk), static_cast<std::uint32_t>(chunk * kChunk + (kChunk - 1)),
                    local);
      }
      const std::lock_guard<std::mutex> lock(merge_mutex);
      total.merge(local);
    });
  }
  for (std::thread& worker : workers) worker.join();
  return total;
}

/// Compares op and reference on every pattern in [first, last] (inclusive, so the last chunk
/// needs no 33-bit end). `exact_nan` demands identical NaN bits; otherwise any NaN matches.
/// `side_condition(x)` is counted into tally.side_count.
struct NoSideCondition {
  bool operator()(float) const { return false; }
};

template <class Op, class Reference, class SideCondition = NoSideCondition>
void compare_range(const Op& op, const Reference& reference, bool exact_nan, std::uint32_t first, std::uint32_t last,
                   Tally& tally, const SideCondition& side_condition = SideCondition{}) {
  for (std::uint32_t bits = first;; ++bits) {
    const float x = from_bits<float>(bits);
    tally.side_count += side_condition(x) ? 1 : 0;
    const std::uint32_t actual = to_bits(op(x));
    const std::uint32_t expected = to_bits(reference(x));
    if (actual != expected) {
      const bool both_nan = (actual & 0x7fffffffu) > 0x7f800000u && (expected & 0x7fffffffu) > 0x7f800000u;
      if (exact_nan || !both_nan) {
        ++tally.mismatches;
        tally.first_mismatch = std::min(tally.first_mismatch, bits);
      }
    }
    if (bits == last) break;
  }
}

inline std::string report(const Tally& tally) {
  if (tally.mismatches == 0) return "no mismatches";
  const float x = from_bits<float>(tally.first_mismatch);
  return std::to_string(tally.mismatches) + " mismatching patterns, first " + describe(x);
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace every_float
}  // namespace hardact_test
