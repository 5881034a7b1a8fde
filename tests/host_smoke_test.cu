#include <hardact/hardact.cuh>
#include <gtest/gtest.h>
TEST(Smoke, HardSigmoidSample) { EXPECT_EQ(hardact::HardSigmoid{}(0.1f), 0.51666665f); }
