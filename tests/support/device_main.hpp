// main() for device test executables, included by each one's single translation unit (a library
// of its own made every device test wait for it to compile, so make started the small host tests
// first): without a CUDA device it says why, lets every test skip, and exits with 77, which ctest
// reports as "Skipped" (SKIP_RETURN_CODE; see tests/CMakeLists.txt). Listing the tests
// (--gtest_list_tests, which ctest's test discovery runs) exits 0 with the plain list, GPU or not.
#pragma once

#include "support/device.hpp"

#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
#ifdef GTEST_FLAG_GET
  const bool listing = GTEST_FLAG_GET(list_tests);
#else
  const bool listing = ::testing::GTEST_FLAG(list_tests);
#endif
  if (listing) return RUN_ALL_TESTS();
  const std::string reason = hardact_test::no_device_reason();
  const int result = RUN_ALL_TESTS();
  if (!reason.empty() && result == 0) {
    std::printf("hardact device tests SKIPPED: %s. Run scripts/gpu-check on a machine with a GPU.\n",
                reason.c_str());
    return 77;
  }
  return result;
}
