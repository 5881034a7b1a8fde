// The opt-in pointer/device check of the plain launchers: this file defines
// HARDACT_CHECK_POINTER_DEVICES before including hardact, so hardact::hardsigmoid / transform
// refuse, with cudaErrorInvalidDevice and without launching, pointers that kernels on the current
// device cannot reach: another device's memory without peer access (needs two GPUs), plain host
// memory (on devices without pageable memory access). Reachable memory (the current device's,
// managed, pinned host, a peer's with peer access enabled) runs and is checked element by element.
// device_checked_launchers_test.cu runs the same scenarios through hardact::checked::*.
#define HARDACT_CHECK_POINTER_DEVICES 1

#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/pointer_access.hpp"

#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

namespace {

using hardact_test::pointer_access::PlainLaunchers;
namespace scenario = hardact_test::pointer_access;

TEST(CheckPointerDevices, CurrentDeviceMemoryRuns) {
  HARDACT_REQUIRE_DEVICE();
  scenario::accepted_on_current_device<PlainLaunchers>();
}

TEST(CheckPointerDevices, ManagedMemoryRuns) {
  HARDACT_REQUIRE_DEVICE();
  scenario::accepted_in_managed_memory<PlainLaunchers>();
}

TEST(CheckPointerDevices, PinnedHostMemoryRuns) {
  HARDACT_REQUIRE_DEVICE();
  scenario::accepted_in_pinned_host_memory<PlainLaunchers>();
}

TEST(CheckPointerDevices, PlainHostMemoryRefusedUnlessPageableAccess) {
  HARDACT_REQUIRE_DEVICE();
  scenario::plain_host_memory<PlainLaunchers>();
}

TEST(CheckPointerDevices, ZeroLengthAndNullAnswersUnchanged) {
  HARDACT_REQUIRE_DEVICE();
  scenario::argument_answers_unchanged<PlainLaunchers>();
}

TEST(CheckPointerDevices, OtherDeviceWithoutPeerAccessRefused) {
  HARDACT_REQUIRE_DEVICE();
  scenario::refused_on_other_device_without_peer_access<PlainLaunchers>();
}

TEST(CheckPointerDevices, OtherDeviceWithPeerAccessRuns) {
  HARDACT_REQUIRE_DEVICE();
  scenario::accepted_on_peer_with_peer_access<PlainLaunchers>();
}

}  // namespace
