// main() for device test executables: without a CUDA device it says why, lets every test skip,
// and exits with 77, which ctest reports as "Skipped" (SKIP_RETURN_CODE).
#include "support/device.hpp"

#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::string reason = hardact_test::no_device_reason();
  const int result = RUN_ALL_TESTS();
  if (!reason.empty() && result == 0) {
    std::printf("hardact device tests SKIPPED: %s. Run scripts/gpu-check on a machine with a GPU.\n",
                reason.c_str());
    return 77;
  }
  return result;
}
