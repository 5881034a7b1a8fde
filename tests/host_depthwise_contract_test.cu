// The launch contract of hardact::depthwise_conv on the host (no GPU needed): shapes that are no
// convolution (cudaErrorInvalidValue) and shapes the kernel does not cover (cudaErrorNotSupported)
// refused whatever the sample count, an invalid policy likewise, no samples a no-op that looks at
// no pointer, then the refusals of a call with samples (null, misaligned or overlapping arrays, a
// missing or short temporary storage), and depthwise_conv_temp_storage_bytes, which depends on the
// shape alone. Refusals return before any CUDA call (made-up addresses stand in for device memory
// and are never dereferenced).
#include <hardact/hardact.cuh>

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>

namespace {

using hardact::DepthwiseConvShape;

/// 2 samples of 3 x 3 x 4 floats, 3 x 3 filters, stride 1, padding 1: x 72 floats, y 72, taps 36,
/// mean 8; one block a sample, so no temporary storage.
constexpr DepthwiseConvShape kSmall{2, 3, 3, 4, 3, 1, 1, 1};

/// An address standing in for device memory: never dereferenced.
template <class T>
T* fake(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

/// Arrays far apart, each 256-byte aligned, so that only the change a case makes is refused.
struct Arrays {
  const float* x() { return fake<const float>(0x10000000); }
  float* y() { return fake<float>(0x20000000); }
  const float* taps() { return fake<const float>(0x30000000); }
  const float* scale() { return fake<const float>(0x30010000); }
  const float* shift() { return fake<const float>(0x30020000); }
  float* mean() { return fake<float>(0x30030000); }
  void* temp() { return fake<void>(0x40000000); }
};

cudaError_t call(Arrays& a, const DepthwiseConvShape& s) {
  return hardact::depthwise_conv(hardact::HardSwish{}, s, a.x(), a.taps(), a.scale(), a.shift(), a.y());
}

cudaError_t call_with_mean(Arrays& a, const DepthwiseConvShape& s, void* temp = nullptr, std::size_t bytes = 0) {
  return hardact::depthwise_conv(hardact::HardSwish{}, s, a.x(), a.taps(), a.scale(), a.shift(), a.y(), a.mean(), temp,
                                 bytes);
}

TEST(HostDepthwiseContract, OutputSize) {
  EXPECT_EQ(kSmall.out_height(), 3u);
  EXPECT_EQ(kSmall.out_width(), 3u);
  const DepthwiseConvShape strided{1, 7, 9, 4, 3, 2, 0, 0};
  EXPECT_EQ(strided.out_height(), 3u);  // (7 - 3) / 2 + 1
  EXPECT_EQ(strided.out_width(), 4u);   // (9 - 3) / 2 + 1
  const DepthwiseConvShape padded{1, 1, 1, 4, 5, 1, 4, 2};
  EXPECT_EQ(padded.out_height(), 5u);  // 1 + 8 - 5 + 1
  EXPECT_EQ(padded.out_width(), 1u);
  const DepthwiseConvShape small{1, 1, 2, 4, 3, 1, 0, 0};
  EXPECT_EQ(small.out_height(), 0u) << "smaller than the filter";
  EXPECT_EQ(kSmall.out_channels(), 4u);
  DepthwiseConvShape concatenated = kSmall;
  concatenated.concatenate_input = true;
  EXPECT_EQ(concatenated.out_channels(), 8u) << "x's channels, then the convolution's";
  EXPECT_EQ(concatenated.out_height(), 3u);
}

TEST(HostDepthwiseContract, ShapesRefusedWhateverTheSamples) {
  Arrays a;
  struct Refusal {
    const char* what;
    DepthwiseConvShape shape;
    cudaError_t expected;
  };
  const Refusal refusals[] = {
      {"no channels", {2, 3, 3, 0, 3, 1, 1, 1}, cudaErrorInvalidValue},
      {"negative pad_h", {2, 3, 3, 4, 3, 1, -1, 1}, cudaErrorInvalidValue},
      {"negative pad_w", {2, 3, 3, 4, 3, 1, 1, -1}, cudaErrorInvalidValue},
      {"padded height under the filter", {2, 1, 5, 4, 5, 1, 1, 2}, cudaErrorInvalidValue},
      {"padded width under the filter", {2, 3, 2, 4, 3, 1, 1, 0}, cudaErrorInvalidValue},
      {"a 7 x 7 filter", {2, 9, 9, 4, 7, 1, 3, 3}, cudaErrorNotSupported},
      {"a 1 x 1 filter", {2, 3, 3, 4, 1, 1, 0, 0}, cudaErrorNotSupported},
      {"a 4 x 4 filter", {2, 9, 9, 4, 4, 1, 1, 1}, cudaErrorNotSupported},
      {"stride 3", {2, 9, 9, 4, 3, 3, 1, 1}, cudaErrorNotSupported},
      {"stride 0", {2, 9, 9, 4, 3, 0, 1, 1}, cudaErrorNotSupported},
      {"pad_h = kernel_size", {2, 3, 3, 4, 3, 1, 3, 1}, cudaErrorNotSupported},
      {"pad_w = kernel_size", {2, 3, 3, 4, 5, 1, 1, 5}, cudaErrorNotSupported},
      {"14 channels", {2, 3, 3, 14, 3, 1, 1, 1}, cudaErrorNotSupported},
      {"2 channels", {2, 3, 3, 2, 3, 1, 1, 1}, cudaErrorNotSupported},
      {"1028 channels", {2, 3, 3, 1028, 3, 1, 1, 1}, cudaErrorNotSupported},
      {"65536 samples", {65536, 3, 3, 4, 3, 1, 1, 1}, cudaErrorNotSupported},
      {"2^31 input elements a sample", {2, 1u << 16, 1u << 13, 4, 3, 1, 1, 1}, cudaErrorNotSupported},
      {"2^31 - 4 input elements, more output elements", {2, 1, (1u << 29) - 1, 4, 5, 1, 4, 4}, cudaErrorNotSupported},
      {"a height past INT_MAX", {2, std::size_t{INT_MAX} + 1, 1, 4, 3, 1, 1, 1}, cudaErrorNotSupported},
      {"the input concatenated at stride 2", {2, 9, 9, 4, 3, 2, 1, 1, true}, cudaErrorNotSupported},
      {"the input concatenated to a smaller output", {2, 9, 9, 4, 3, 1, 0, 0, true}, cudaErrorNotSupported},
      {"the input concatenated to a larger output", {2, 9, 9, 4, 3, 1, 2, 2, true}, cudaErrorNotSupported},
      {"the input concatenated, 5 x 5 with padding 1", {2, 9, 9, 4, 5, 1, 1, 1, true}, cudaErrorNotSupported},
      {"the input concatenated to 2^31 output elements a sample", {2, 1u << 16, 1u << 12, 4, 3, 1, 1, 1, true},
       cudaErrorNotSupported},
  };
  for (const Refusal& r : refusals) {
    for (const std::size_t samples : {std::size_t{0}, r.shape.samples}) {
      DepthwiseConvShape s = r.shape;
      s.samples = samples;
      if (samples == 0 && r.shape.samples > 65535) continue;  // 0 samples is no longer too many
      EXPECT_EQ(call(a, s), r.expected) << r.what << ", " << samples << " samples";
      EXPECT_EQ(call_with_mean(a, s), r.expected) << r.what << ", " << samples << " samples, with the mean";
      EXPECT_EQ(hardact::depthwise_conv_temp_storage_bytes(s), 0u) << r.what;
    }
  }
  // The largest that fit, with no samples a no-op: 1024 channels; just under 2^31 elements a sample.
  for (const DepthwiseConvShape s : {DepthwiseConvShape{0, 3, 3, 1024, 3, 1, 1, 1},
                                     DepthwiseConvShape{0, 1u << 16, (1u << 13) - 1, 4, 3, 1, 1, 1},
                                     DepthwiseConvShape{0, 1u << 16, (1u << 12) - 1, 4, 3, 1, 1, 1, true},
                                     DepthwiseConvShape{0, 3, 3, 1024, 5, 1, 2, 2, true}}) {
    EXPECT_EQ(call(a, s), cudaSuccess) << s.channels << " channels" << (s.concatenate_input ? ", concatenated" : "");
  }
  // 65535 samples pass the shape's checks and reach the pointers' (null here); 65536 do not.
  const float* const none = nullptr;
  EXPECT_EQ(hardact::depthwise_conv(hardact::HardSwish{}, DepthwiseConvShape{65535, 3, 3, 4, 3, 1, 1, 1}, none, none,
                                    none, none, static_cast<float*>(nullptr)),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::depthwise_conv(hardact::HardSwish{}, DepthwiseConvShape{65536, 3, 3, 4, 3, 1, 1, 1}, none, none,
                                    none, none, static_cast<float*>(nullptr)),
            cudaErrorNotSupported);
}

TEST(HostDepthwiseContract, InvalidPolicyRefusedWhateverTheSamples) {
  Arrays a;
  for (const std::size_t samples : {std::size_t{0}, std::size_t{2}}) {
    DepthwiseConvShape s = kSmall;
    s.samples = samples;
    EXPECT_EQ(hardact::depthwise_conv(hardact::HardTanh{1.0, -1.0}, s, a.x(), a.taps(), a.scale(), a.shift(), a.y()),
              cudaErrorInvalidValue)
        << samples;
  }
}

TEST(HostDepthwiseContract, NoSamplesLooksAtNoPointer) {
  DepthwiseConvShape s = kSmall;
  s.samples = 0;
  const float* none = nullptr;
  EXPECT_EQ(hardact::depthwise_conv(hardact::ReLU6{}, s, none, none, none, none, static_cast<float*>(nullptr)),
            cudaSuccess);
  EXPECT_EQ(hardact::depthwise_conv(hardact::ReLU6{}, s, none, none, none, none, static_cast<float*>(nullptr),
                                    static_cast<float*>(nullptr), nullptr, 0),
            cudaSuccess);
}

TEST(HostDepthwiseContract, BadPointersRefused) {
  Arrays a;
  const float* const none = nullptr;
  const auto with = [&](const float* x, const float* taps, const float* scale, const float* shift, float* y) {
    return hardact::depthwise_conv(hardact::HardSwish{}, kSmall, x, taps, scale, shift, y);
  };
  EXPECT_EQ(with(none, a.taps(), a.scale(), a.shift(), a.y()), cudaErrorInvalidValue) << "null x";
  EXPECT_EQ(with(a.x(), none, a.scale(), a.shift(), a.y()), cudaErrorInvalidValue) << "null taps";
  EXPECT_EQ(with(a.x(), a.taps(), none, a.shift(), a.y()), cudaErrorInvalidValue) << "null scale";
  EXPECT_EQ(with(a.x(), a.taps(), a.scale(), none, a.y()), cudaErrorInvalidValue) << "null shift";
  EXPECT_EQ(with(a.x(), a.taps(), a.scale(), a.shift(), nullptr), cudaErrorInvalidValue) << "null y";
  // x and y to 4 elements (16 bytes of float), the float parameters to 16 bytes.
  EXPECT_EQ(with(a.x() + 2, a.taps(), a.scale(), a.shift(), a.y()), cudaErrorInvalidValue) << "x by 2 elements";
  EXPECT_EQ(with(a.x(), a.taps(), a.scale(), a.shift(), a.y() + 1), cudaErrorInvalidValue) << "y by 1 element";
  EXPECT_EQ(with(a.x(), a.taps() + 1, a.scale(), a.shift(), a.y()), cudaErrorInvalidValue) << "taps by 4 bytes";
  EXPECT_EQ(with(a.x(), a.taps(), a.scale() + 2, a.shift(), a.y()), cudaErrorInvalidValue) << "scale by 8 bytes";
  EXPECT_EQ(with(a.x(), a.taps(), a.scale(), a.shift() + 3, a.y()), cudaErrorInvalidValue) << "shift by 12 bytes";
  // Half: vectors of 4 elements are 8 bytes.
  const __half* hx = fake<const __half>(0x50000000);
  __half* hy = fake<__half>(0x60000000);
  EXPECT_EQ(hardact::depthwise_conv(hardact::HardSwish{}, kSmall, hx + 2, a.taps(), a.scale(), a.shift(), hy),
            cudaErrorInvalidValue)
      << "half x by 4 bytes";
  EXPECT_EQ(hardact::depthwise_conv(hardact::HardSwish{}, kSmall, hx, a.taps(), a.scale(), a.shift(), hy + 1),
            cudaErrorInvalidValue)
      << "half y by 2 bytes";
  // The mean: non-null, aligned.
  EXPECT_EQ(hardact::depthwise_conv(hardact::HardSwish{}, kSmall, a.x(), a.taps(), a.scale(), a.shift(), a.y(),
                                    static_cast<float*>(nullptr), nullptr, 0),
            cudaErrorInvalidValue)
      << "null mean";
  EXPECT_EQ(hardact::depthwise_conv(hardact::HardSwish{}, kSmall, a.x(), a.taps(), a.scale(), a.shift(), a.y(),
                                    a.mean() + 1, nullptr, 0),
            cudaErrorInvalidValue)
      << "mean by 1 element";
}

TEST(HostDepthwiseContract, OverlapsRefused) {
  Arrays a;
  // y (72 floats) over x's last vector, and over the taps; the mean over y's last vector, over
  // the shift.
  float* const x_end = const_cast<float*>(a.x()) + 68;
  EXPECT_EQ(hardact::depthwise_conv(hardact::HardSwish{}, kSmall, a.x(), a.taps(), a.scale(), a.shift(), x_end),
            cudaErrorInvalidValue)
      << "y over x";
  EXPECT_EQ(hardact::depthwise_conv(hardact::HardSwish{}, kSmall, a.x(), a.taps(), a.scale(), a.shift(),
                                    const_cast<float*>(a.taps()) - 4),
            cudaErrorInvalidValue)
      << "y over the taps";
  EXPECT_EQ(hardact::depthwise_conv(hardact::HardSwish{}, kSmall, a.x(), a.taps(), a.scale(), a.shift(), a.y(),
                                    a.y() + 68, nullptr, 0),
            cudaErrorInvalidValue)
      << "mean over y";
  EXPECT_EQ(hardact::depthwise_conv(hardact::HardSwish{}, kSmall, a.x(), a.taps(), a.scale(), a.shift(), a.y(),
                                    const_cast<float*>(a.shift()), nullptr, 0),
            cudaErrorInvalidValue)
      << "mean over the shift";
  // With the input concatenated y is 144 floats: ending 4 floats into x it overlaps.
  DepthwiseConvShape concatenated = kSmall;
  concatenated.concatenate_input = true;
  EXPECT_EQ(hardact::depthwise_conv(hardact::HardSwish{}, concatenated, a.x(), a.taps(), a.scale(), a.shift(),
                                    const_cast<float*>(a.x()) - 140),
            cudaErrorInvalidValue)
      << "a concatenated y over x's first vector";
  EXPECT_EQ(hardact::depthwise_conv(hardact::HardSwish{}, concatenated, a.x(), a.taps(), a.scale(), a.shift(), a.y(),
                                    a.y() + 140, nullptr, 0),
            cudaErrorInvalidValue)
      << "mean over a concatenated y's last vector";
}

/// 2 samples of 56 x 56 x 4: 256 lanes, 784 position groups, 4 blocks a sample.
constexpr DepthwiseConvShape kSeveralBlocks{2, 56, 56, 4, 3, 1, 1, 1};

TEST(HostDepthwiseContract, BlocksSumsNeedTheirStorage) {
  Arrays a;
  const std::size_t bytes = hardact::depthwise_conv_temp_storage_bytes(kSeveralBlocks);
  ASSERT_EQ(bytes, 2u * 4u * 4u * sizeof(float));
  EXPECT_EQ(call_with_mean(a, kSeveralBlocks), cudaErrorInvalidValue) << "no storage";
  EXPECT_EQ(call_with_mean(a, kSeveralBlocks, a.temp(), bytes - 1), cudaErrorInvalidValue) << "one byte short";
  EXPECT_EQ(call_with_mean(a, kSeveralBlocks, static_cast<unsigned char*>(a.temp()) + 4, bytes), cudaErrorInvalidValue)
      << "misaligned";
  EXPECT_EQ(call_with_mean(a, kSeveralBlocks, a.y(), bytes), cudaErrorInvalidValue) << "the storage over y";
}

// Bytes: samples x blocks x channels floats, blocks = ceil(position groups / lanes), lanes = 256 /
// (C / 4) at least 1, a group 4 output positions of a row at stride 1, 2 at stride 2.
TEST(HostDepthwiseContract, StorageDependsOnTheShapeAlone) {
  // 56 x 56 x 72, 3 x 3: 18 vectors, 14 lanes, 56 rows x 14 groups = 784 groups, 56 blocks.
  EXPECT_EQ(hardact::depthwise_conv_temp_storage_bytes({64, 56, 56, 72, 3, 1, 1, 1}), 64u * 56u * 72u * 4u);
  // 28 x 28 x 240, 5 x 5: 60 vectors, 4 lanes, 28 x 7 = 196 groups, 49 blocks.
  EXPECT_EQ(hardact::depthwise_conv_temp_storage_bytes({64, 28, 28, 240, 5, 1, 2, 2}), 64u * 49u * 240u * 4u);
  // 14 x 14 x 672, 5 x 5 stride 2: 7 x 7 outputs, 168 vectors, 1 lane, 7 x 4 = 28 groups, 28 blocks.
  EXPECT_EQ(hardact::depthwise_conv_temp_storage_bytes({64, 14, 14, 672, 5, 2, 2, 2}), 64u * 28u * 672u * 4u);
  // 7 x 9 x 12: 3 vectors, 85 lanes, 7 x 3 = 21 groups: one block, no storage.
  EXPECT_EQ(hardact::depthwise_conv_temp_storage_bytes({2, 7, 9, 12, 3, 1, 1, 1}), 0u);
  // 1 x 1 x 1024: one lane, one group.
  EXPECT_EQ(hardact::depthwise_conv_temp_storage_bytes({2, 1, 1, 1024, 3, 1, 1, 1}), 0u);
  // No samples.
  EXPECT_EQ(hardact::depthwise_conv_temp_storage_bytes({0, 56, 56, 72, 3, 1, 1, 1}), 0u);
  // The input concatenated: the same blocks, the same storage.
  EXPECT_EQ(hardact::depthwise_conv_temp_storage_bytes({64, 56, 56, 72, 3, 1, 1, 1, true}), 64u * 56u * 72u * 4u);
}

}  // namespace
