// Many host threads in one process. First test: 16 threads on device 0, each with its own
// non-blocking stream, released together at a start line right before their first hardact call,
// which is also this executable's first: the per-device property cache (a process singleton) is
// cold, so all 16 race to create and fill it. Second test: 16 threads spread over every visible
// device (thread i on device i % count), so devices other than 0 are filled concurrently too.
// Every call's output is checked element by element. Keep these the only tests in this executable
// and the cold-cache one first: another test's hardact call would warm the cache.
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/device_family.hpp"
#include "support/stream_run.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace hardact_test;

constexpr int kThreads = 16;

/// Sizes of sweep_sizes up to 2^20 + 3 (16 threads share one device and the host's cores), at
/// every offset triple of sweep_offsets.
SweepPlan per_thread_plan() {
  SweepPlan plan{{}, family::sweep_offsets()};
  for (const std::size_t n : family::sweep_sizes())
    if (n <= (std::size_t(1) << 20) + 3) plan.sizes.push_back(n);
  return plan;
}

/// kThreads workers, thread i on device_of(i), all released together before their first call.
template <class DeviceOf>
void run_threads_from_a_start_line(const DeviceOf& device_of) {
  const SweepPlan plan = per_thread_plan();
  StartLine start(kThreads);
  std::vector<ThreadReport> reports(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    ThreadReport& report = reports[static_cast<std::size_t>(i)];
    const int device = device_of(i);
    report.label = "thread " + std::to_string(i) + " on device " + std::to_string(device);
    threads.emplace_back([i, device, &plan, &report, &start] {
      run_four_ops_on_device(device, plan, 7919u * static_cast<unsigned>(i), report, [&start] { start.arrive_and_wait(); });
    });
  }
  for (std::thread& thread : threads) thread.join();

  expect_no_failures(reports);
  for (const ThreadReport& report : reports) EXPECT_EQ(report.checked_calls, plan.calls()) << report.label;
}

TEST(MultiThread, SixteenThreadsOnOneDeviceColdCache) {
  HARDACT_REQUIRE_DEVICE();
  std::printf("hardact-multi: SixteenThreadsOnOneDeviceColdCache: %d threads on device 0 [%s], %zu calls each\n",
              kThreads, describe_devices(1).c_str(), per_thread_plan().calls());
  run_threads_from_a_start_line([](int) { return 0; });
  HARDACT_ASSERT_CUDA(cudaGetLastError());
}

TEST(MultiThread, SixteenThreadsOverEveryDevice) {
  HARDACT_REQUIRE_DEVICE();
  const int devices = visible_device_count();
  ASSERT_GE(devices, 1);
  std::printf("hardact-multi: SixteenThreadsOverEveryDevice: %d threads over %d device(s) [%s]\n", kThreads, devices,
              describe_devices(devices).c_str());
  run_threads_from_a_start_line([devices](int i) { return i % devices; });
  HARDACT_ASSERT_CUDA(cudaGetLastError());
}

}  // namespace
