#include "support/device.hpp"
#include <hardact/hardact.cuh>
TEST(DeviceSmoke, Runs) { HARDACT_REQUIRE_DEVICE(); }
