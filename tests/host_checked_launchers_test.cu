// hardact::checked and hardact::check_pointer_devices where no kernel can run: plain
// host memory is refused (cudaErrorInvalidDevice on a GPU machine whose device cannot access
// pageable memory; the runtime's own error where there is no GPU), nothing is written, and the
// answers that need no CUDA call (n == 0, null pointers, an invalid policy) stay those of the plain
// launchers. Runs everywhere; the device tests check real refusals and accepted memory kinds.
#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

namespace {

/// Whether kernels on the current device could dereference plain host memory; false without a GPU.
bool device_reads_pageable_memory() {
  int device = 0, pageable_access = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&pageable_access, cudaDevAttrPageableMemoryAccess, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return pageable_access != 0;
}

TEST(HostCheckedLaunchers, AnswersThatNeedNoCudaCallAreUnchanged) {
  std::vector<float> data(64, 0.5f);
  EXPECT_EQ(hardact::checked::hardsigmoid(data.data(), data.data(), 0), cudaSuccess);
  EXPECT_EQ(hardact::checked::hardsigmoid(static_cast<const float*>(nullptr), data.data(), data.size()),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::checked::hardsigmoid(data.data(), static_cast<float*>(nullptr), data.size()),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::checked::hardtanh(data.data(), data.data(), 0, 2.0, 1.0), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::checked::transform(hardact::HardSigmoidBackward{}, data.data(), data.data(),
                                        static_cast<float*>(nullptr), data.size()),
            cudaErrorInvalidValue);
  for (const float value : data) EXPECT_EQ(value, 0.5f);
}

TEST(HostCheckedLaunchers, PlainHostMemoryIsRefusedAndLeftAlone) {
  if (device_reads_pageable_memory()) {
    GTEST_SKIP() << "this device accesses pageable host memory, so plain host memory is reachable here";
  }
  const std::vector<float> in(1000, 2.0f);
  std::vector<float> out(1000, -7.0f);
  const cudaError_t verdict = hardact::check_pointer_devices(in.data(), static_cast<const float*>(out.data()));
  EXPECT_NE(verdict, cudaSuccess) << "plain host memory must never pass the check here";
  const bool has_gpu = verdict == cudaErrorInvalidDevice;
  if (has_gpu) EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a refusal must not leave an error behind";
  (void)cudaGetLastError();  // without a GPU the runtime records its own error

  EXPECT_NE(hardact::checked::hardsigmoid(in.data(), out.data(), in.size()), cudaSuccess);
  EXPECT_NE(hardact::checked::hardtanh(in.data(), out.data(), in.size(), -0.5, 0.5), cudaSuccess);
  EXPECT_NE(hardact::checked::transform(hardact::HardSigmoidBackward{}, in.data(), in.data(), out.data(), in.size()),
            cudaSuccess);
  if (has_gpu) {
    EXPECT_EQ(hardact::checked::hardsigmoid(in.data(), out.data(), in.size()), cudaErrorInvalidDevice);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  }
  (void)cudaGetLastError();
  for (const float value : out) ASSERT_EQ(value, -7.0f) << "a refused call wrote to its output";
}

}  // namespace
