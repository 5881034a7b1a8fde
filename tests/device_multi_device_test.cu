// Several GPUs in one process: every visible device at once, one host thread per device,
// each on its own non-blocking stream, running hardsigmoid, hardtanh with non-default bounds, a
// backward policy and float -> bfloat16 over sizes from 1 to 4M and relatively misaligned offsets,
// every element checked. The first hardact call of this executable happens in those threads, so the
// per-device property cache fills for all devices concurrently. Then a call on device 0 whose
// pointers live on device 1, with peer access enabled (needs two GPUs that can reach each other).
//
// Each test prints a "hardact-multi:" line saying how many devices it used; scripts/gpu-check's
// multigpu stage quotes those lines.
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/device_family.hpp"
#include "support/pointer_access.hpp"
#include "support/stream_run.hpp"

#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace hardact_test;

/// sweep_sizes (1 ... 2^22 + 13; up to 65,543 in quick mode) at every offset triple of
/// sweep_offsets: aligned, one pointer at +1 element, and all relatively misaligned.
SweepPlan every_device_plan() { return SweepPlan{family::sweep_sizes(), family::sweep_offsets()}; }

TEST(MultiDevice, EveryDeviceAtOnceOneThreadEach) {
  HARDACT_REQUIRE_DEVICE();
  const int devices = visible_device_count();
  ASSERT_GE(devices, 1);
  const SweepPlan plan = every_device_plan();
  std::printf("hardact-multi: EveryDeviceAtOnceOneThreadEach on %d device(s) [%s]: %zu calls per device\n", devices,
              describe_devices(devices).c_str(), plan.calls());

  std::vector<ThreadReport> reports(static_cast<std::size_t>(devices));
  std::vector<std::thread> threads;
  for (int device = 0; device < devices; ++device) {
    ThreadReport& report = reports[static_cast<std::size_t>(device)];
    report.label = "device " + std::to_string(device);
    threads.emplace_back([device, &plan, &report] { run_four_ops_on_device(device, plan, 1000u * device, report); });
  }
  for (std::thread& thread : threads) thread.join();

  expect_no_failures(reports);
  for (const ThreadReport& report : reports) EXPECT_EQ(report.checked_calls, plan.calls()) << report.label;
  HARDACT_ASSERT_CUDA(cudaGetLastError());
}

// The launch contract's peer case: kernels on device 0 read and write device 1's memory once peer
// access from device 0 to device 1 is enabled. The plain launchers (no check compiled in here).
TEST(MultiDevice, PointersOnAPeerWithPeerAccessEnabled) {
  HARDACT_REQUIRE_DEVICE();
  std::printf("hardact-multi: PointersOnAPeerWithPeerAccessEnabled with %d device(s)\n", visible_device_count());
  pointer_access::accepted_on_peer_with_peer_access<pointer_access::PlainLaunchers>();
}

}  // namespace
