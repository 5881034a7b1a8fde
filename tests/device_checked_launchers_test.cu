// hardact::checked::hardsigmoid / transform: the launchers that always check that
// kernels on the current device can reach every pointer, compiled WITHOUT
// HARDACT_CHECK_POINTER_DEVICES. Same scenarios as device_check_pointer_devices_test.cu: refused
// with cudaErrorInvalidDevice, nothing launched or written, for another device's memory without
// peer access (needs two GPUs) and plain host memory (without pageable memory access); run and
// checked element by element for the current device's, managed, pinned host and peer memory.
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/pointer_access.hpp"

#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

#ifdef HARDACT_CHECK_POINTER_DEVICES
#error "this file tests hardact::checked without the HARDACT_CHECK_POINTER_DEVICES macro"
#endif

namespace {

using hardact_test::pointer_access::CheckedLaunchers;
namespace scenario = hardact_test::pointer_access;

TEST(CheckedLaunchers, CurrentDeviceMemoryRuns) {
  HARDACT_REQUIRE_DEVICE();
  scenario::accepted_on_current_device<CheckedLaunchers>();
}

TEST(CheckedLaunchers, ManagedMemoryRuns) {
  HARDACT_REQUIRE_DEVICE();
  scenario::accepted_in_managed_memory<CheckedLaunchers>();
}

TEST(CheckedLaunchers, PinnedHostMemoryRuns) {
  HARDACT_REQUIRE_DEVICE();
  scenario::accepted_in_pinned_host_memory<CheckedLaunchers>();
}

TEST(CheckedLaunchers, PlainHostMemoryRefusedUnlessPageableAccess) {
  HARDACT_REQUIRE_DEVICE();
  scenario::plain_host_memory<CheckedLaunchers>();
}

TEST(CheckedLaunchers, ZeroLengthAndNullAnswersUnchanged) {
  HARDACT_REQUIRE_DEVICE();
  scenario::argument_answers_unchanged<CheckedLaunchers>();
}

TEST(CheckedLaunchers, OtherDeviceWithoutPeerAccessRefused) {
  HARDACT_REQUIRE_DEVICE();
  scenario::refused_on_other_device_without_peer_access<CheckedLaunchers>();
}

TEST(CheckedLaunchers, OtherDeviceWithPeerAccessRuns) {
  HARDACT_REQUIRE_DEVICE();
  scenario::accepted_on_peer_with_peer_access<CheckedLaunchers>();
}

}  // namespace
