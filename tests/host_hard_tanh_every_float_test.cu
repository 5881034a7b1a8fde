// HardTanh, with PyTorch's default bounds and with ReLU6's, on every one of the 2^32 float bit
// patterns on the host, against the independent reference (support/every_float.hpp runs the sweep
// on every hardware thread).
#include "support/bits.hpp"
#include "support/every_float.hpp"
#include "support/reference.hpp"

#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>

namespace {

using namespace hardact_test;
using namespace hardact_test::every_float;

TEST(HostHardTanhEveryFloat, EveryPattern) {
  const auto start = std::chrono::steady_clock::now();
  // PyTorch's default bounds and ReLU6's (a zero bound, where -0.0 turns into +0.0).
  const hardact::HardTanh defaults{};
  const hardact::HardTanh relu6{0.0, 6.0};
  const reference::HardTanh defaults_reference{-1.0, 1.0};
  const reference::HardTanh relu6_reference{0.0, 6.0};
  Tally relu6_tally;
  std::mutex relu6_mutex;
  const Tally tally = sweep_all_patterns([&](std::uint32_t first, std::uint32_t last, Tally& local) {
    compare_range(defaults, defaults_reference, true, first, last, local);
    Tally relu6_local;
    compare_range(relu6, relu6_reference, true, first, last, relu6_local);
    const std::lock_guard<std::mutex> lock(relu6_mutex);
    relu6_tally.merge(relu6_local);
  });
  std::printf("[ timing   ] HardTanh (2 bound sets), 2^32 floats: %.1f s on %u threads\n", seconds_since(start),
              std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(tally.mismatches, 0u) << "HardTanh{-1, 1}: " << report(tally);
  EXPECT_EQ(relu6_tally.mismatches, 0u) << "HardTanh{0, 6}: " << report(relu6_tally);
}

}  // namespace
