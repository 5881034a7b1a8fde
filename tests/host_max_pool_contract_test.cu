// The launch contract of hardact::max_pool on the host (no GPU needed): the output size as PyTorch
// computes it (floor and ceil mode, the last window PyTorch drops), shapes that are no pooling
// (cudaErrorInvalidValue) and shapes the kernel does not cover (cudaErrorNotSupported) refused
// whatever the sample count, no samples a no-op that looks at no pointer, then the refusals of a call
// with samples (2^31 samples or more, null or misaligned arrays, an output sharing a byte with x).
// Refusals return before any CUDA call (made-up addresses stand in for device memory and are never
// dereferenced).
#include <hardact/hardact.cuh>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <climits>
#include <cstddef>
#include <cstdint>

namespace {

using hardact::MaxPoolShape;

/// 2 samples of 6 x 6 x 8 floats, 3 x 3 windows, stride 2, padding 1: y 2 x 3 x 3 x 8.
constexpr MaxPoolShape kPool{2, 6, 6, 8, 3, 3, 2, 2, 1, 1, false};

/// An address standing in for device memory: never dereferenced.
template <class T>
T* fake_address(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

const float* const kPoolX = fake_address<const float>(0x10000000);
float* const kPoolY = fake_address<float>(0x20000000);

std::size_t pooled_extent(std::size_t extent, int kernel, int stride, int pad, bool ceil) {
  const MaxPoolShape s{1, extent, 1, 1, kernel, 1, stride, 1, pad, 0, ceil};
  return s.out_height();
}

TEST(HostMaxPoolContract, OutputSizeIsPyTorchs) {
  // torch.nn.functional.max_pool2d's output sizes (PyTorch 2.11, on the CPU).
  EXPECT_EQ(pooled_extent(7, 3, 2, 0, false), 3u);
  EXPECT_EQ(pooled_extent(7, 3, 2, 0, true), 3u);
  EXPECT_EQ(pooled_extent(56, 3, 2, 0, false), 27u);
  EXPECT_EQ(pooled_extent(56, 3, 2, 0, true), 28u);  // VoVNet's stages
  EXPECT_EQ(pooled_extent(5, 3, 2, 1, true), 3u);
  EXPECT_EQ(pooled_extent(5, 3, 3, 1, true), 2u);  // the third window would start in the padding: dropped
  EXPECT_EQ(pooled_extent(6, 2, 2, 1, true), 4u);
  EXPECT_EQ(pooled_extent(2, 3, 2, 1, true), 2u);
  EXPECT_EQ(pooled_extent(1, 1, 1, 0, true), 1u);
  EXPECT_EQ(pooled_extent(2, 3, 1, 0, false), 0u);  // smaller than the window
  EXPECT_EQ(pooled_extent(9, 3, 2, 2, false), 0u);  // padding over half the window
  EXPECT_EQ(pooled_extent(9, 0, 1, 0, false), 0u);
  EXPECT_EQ(pooled_extent(9, 3, 0, 0, false), 0u);
  EXPECT_EQ(pooled_extent(0, 1, 1, 0, false), 0u);
}

TEST(HostMaxPoolContract, ShapesRefusedWhateverTheSamples) {
  for (const std::size_t samples : {std::size_t{0}, std::size_t{2}}) {
    MaxPoolShape s = kPool;
    s.samples = samples;
    MaxPoolShape no_channels = s, small = s, padded = s, no_kernel = s, no_stride = s;
    no_channels.channels = 0;
    small.height = 1;
    small.pad_h = 0;  // 1 row under a 3-row window
    padded.pad_w = 2;
    no_kernel.kernel_w = 0;
    no_stride.stride_h = -1;
    for (const MaxPoolShape& bad : {no_channels, small, padded, no_kernel, no_stride}) {
      EXPECT_EQ(hardact::max_pool(bad, kPoolX, kPoolY), cudaErrorInvalidValue) << "samples " << samples;
    }
    MaxPoolShape huge = s;
    huge.height = std::size_t{1} << 16;
    huge.width = std::size_t{1} << 16;  // 2^32 positions of 8 channels a sample
    EXPECT_EQ(hardact::max_pool(huge, kPoolX, kPoolY), cudaErrorNotSupported) << "samples " << samples;
  }
}

TEST(HostMaxPoolContract, NoSamplesLooksAtNoPointer) {
  MaxPoolShape s = kPool;
  s.samples = 0;
  EXPECT_EQ(hardact::max_pool(s, static_cast<const float*>(nullptr), static_cast<float*>(nullptr)), cudaSuccess);
}

TEST(HostMaxPoolContract, TooManySamplesRefusedBeforeThePointers) {
  MaxPoolShape s = kPool;
  s.samples = std::size_t{1} << 31;
  EXPECT_EQ(hardact::max_pool(s, static_cast<const float*>(nullptr), static_cast<float*>(nullptr)),
            cudaErrorNotSupported);
}

TEST(HostMaxPoolContract, BadPointersRefused) {
  EXPECT_EQ(hardact::max_pool(kPool, static_cast<const float*>(nullptr), kPoolY), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::max_pool(kPool, kPoolX, static_cast<float*>(nullptr)), cudaErrorInvalidValue);
  const float* misaligned = reinterpret_cast<const float*>(reinterpret_cast<std::uintptr_t>(kPoolX) + 2);
  EXPECT_EQ(hardact::max_pool(kPool, misaligned, kPoolY), cudaErrorInvalidValue);
  const __nv_bfloat16* bx = fake_address<const __nv_bfloat16>(0x10000001);
  EXPECT_EQ(hardact::max_pool(kPool, bx, fake_address<__nv_bfloat16>(0x20000000)), cudaErrorInvalidValue);
  const float* at_the_top = fake_address<const float>(UINTPTR_MAX - 64 + 1);  // its bytes would wrap around
  EXPECT_EQ(hardact::max_pool(kPool, at_the_top, kPoolY), cudaErrorInvalidValue);
}

TEST(HostMaxPoolContract, OverlapsRefused) {
  const std::size_t in_elements = 2 * 6 * 6 * 8, out_elements = 2 * 3 * 3 * 8;
  float* const x = fake_address<float>(0x10000000);
  EXPECT_EQ(hardact::max_pool(kPool, static_cast<const float*>(x), x), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::max_pool(kPool, static_cast<const float*>(x), x + in_elements - 1), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::max_pool(kPool, static_cast<const float*>(x + out_elements - 1), x), cudaErrorInvalidValue);
}

}  // namespace
