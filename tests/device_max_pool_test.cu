// hardact::max_pool on the device against a host reference that keeps, per output element, what
// ATen's max_pool2d keeps (the window in order, rows then columns; a value replaces the kept one
// where it compares greater or is a NaN, from -infinity): y bit for bit in float, double, half and
// bfloat16, with inputs full of ties (+0 and -0, repeated values), infinities and NaNs of several
// payloads, so that which element is kept shows in the bits. Every window of 1 to 5 (and 2 x 3,
// 3 x 2, 13 x 13), stride 1 to 3, every padding PyTorch allows, floor and ceil mode, odd sizes;
// channels that are 16-byte vectors and channels that are not, an x one element off 16-byte
// alignment (both take the one-element kernel); the 3 x 3 kernel and the general one (its columns
// four at a time); a stream; VoVNet's pooling at batch 64. Refusals write nothing.
// HARDACT_TEST_QUICK=1 (compute-sanitizer runs) leaves out the VoVNet shape.
#include "support/bits.hpp"
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/device_family.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace hardact_test;
using hardact::MaxPoolShape;

std::string describe_pool(const MaxPoolShape& s) {
  return "N " + std::to_string(s.samples) + " H " + std::to_string(s.height) + " W " + std::to_string(s.width) +
         " C " + std::to_string(s.channels) + " kernel " + std::to_string(s.kernel_h) + "x" +
         std::to_string(s.kernel_w) + " stride " + std::to_string(s.stride_h) + "," + std::to_string(s.stride_w) +
         " pad " + std::to_string(s.pad_h) + "," + std::to_string(s.pad_w) + (s.ceil_mode ? " ceil" : " floor");
}

template <class T>
double pool_value(T v) {
  return static_cast<double>(hardact::to_compute(v));
}

/// x of a shape: small integers (many ties, both zeros), with infinities of both signs and NaNs of
/// distinct payloads sprinkled in (NaNs only where `nans`).
template <class T>
std::vector<T> pool_input(const MaxPoolShape& s, std::uint32_t seed, bool nans = true) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> small(-3, 3), pick(0, 199);
  std::vector<T> x(s.samples * s.height * s.width * s.channels);
  const bits_t<T> quiet_nan = to_bits(from_double<T>(NAN));
  unsigned nan_count = 0;
  for (T& v : x) {
    const int p = pick(random);
    if (nans && p < 3) {  // payloads 1 to 63, which every type's mantissa holds
      v = from_bits<T>(static_cast<bits_t<T>>(quiet_nan | (1u + nan_count++ % 63u)));
    } else if (p < 5) {
      v = from_double<T>(p == 3 ? INFINITY : -INFINITY);
    } else {
      const int k = small(random);
      v = k == 0 && p % 2 == 1 ? from_double<T>(-0.0) : from_double<T>(static_cast<double>(k) * 0.75);
    }
  }
  return x;
}

/// y as ATen's max_pool2d computes it (see the file's comment).
template <class T>
std::vector<T> reference_pool(const MaxPoolShape& s, const std::vector<T>& x) {
  const long long H = static_cast<long long>(s.height), W = static_cast<long long>(s.width);
  const long long C = static_cast<long long>(s.channels);
  const long long OH = static_cast<long long>(s.out_height()), OW = static_cast<long long>(s.out_width());
  std::vector<T> y(static_cast<std::size_t>(static_cast<long long>(s.samples) * OH * OW * C));
  for (long long n = 0; n < static_cast<long long>(s.samples); ++n) {
    for (long long oh = 0; oh < OH; ++oh) {
      for (long long ow = 0; ow < OW; ++ow) {
        for (long long c = 0; c < C; ++c) {
          T best = from_double<T>(-INFINITY);
          double best_value = -INFINITY;
          for (long long kh = 0; kh < s.kernel_h; ++kh) {
            const long long ih = oh * s.stride_h - s.pad_h + kh;
            if (ih < 0 || ih >= H) continue;
            for (long long kw = 0; kw < s.kernel_w; ++kw) {
              const long long iw = ow * s.stride_w - s.pad_w + kw;
              if (iw < 0 || iw >= W) continue;
              const T v = x[static_cast<std::size_t>(((n * H + ih) * W + iw) * C + c)];
              if (pool_value(v) > best_value || std::isnan(pool_value(v))) {
                best = v;
                best_value = pool_value(v);
              }
            }
          }
          y[static_cast<std::size_t>(((n * OH + oh) * OW + ow) * C + c)] = best;
        }
      }
    }
  }
  return y;
}

template <class T>
class DeviceMaxPool : public ::testing::Test {};
TYPED_TEST_SUITE(DeviceMaxPool, ElementTypes, TypeNames);

/// Runs one shape (x `offset` elements past 256-byte alignment) and compares y's bits.
template <class T>
void check_pool(const MaxPoolShape& s, std::uint32_t seed, std::size_t offset = 0, cudaStream_t stream = nullptr) {
  SCOPED_TRACE(describe_pool(s) + " offset " + std::to_string(offset));
  const std::vector<T> in = pool_input<T>(s, seed);
  GuardedBuffer<T> x(in.size(), offset), y(s.samples * s.out_height() * s.out_width() * s.channels);
  HARDACT_ASSERT_CUDA(x.status());
  HARDACT_ASSERT_CUDA(y.status());
  HARDACT_ASSERT_CUDA(x.upload(in));
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());  // the buffers were poisoned on the legacy stream
  HARDACT_ASSERT_CUDA(hardact::max_pool(s, static_cast<const T*>(x.data()), y.data(), stream));
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  std::vector<T> got;
  HARDACT_ASSERT_CUDA(y.download(got));
  ASSERT_TRUE(y.guards_intact()) << "a guard was overwritten";
  const std::vector<T> want = reference_pool(s, in);
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (to_bits(got[i]) != to_bits(want[i]) && wrong++ == 0) first = i;
  }
  ASSERT_EQ(wrong, 0u) << "of " << want.size() << " outputs; the first y[" << first << "]: "
                       << pool_value(got[first]) << " where " << pool_value(want[first]);
}

TYPED_TEST(DeviceMaxPool, EveryWindowStrideAndPadding) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  std::uint32_t seed = 1;
  const int windows[][2] = {{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {2, 3}};
  for (const auto& window : windows) {
    for (int stride = 1; stride <= 3; ++stride) {
      for (int pad = 0; pad <= window[0] / 2 && pad <= window[1] / 2; ++pad) {
        for (const bool ceil : {false, true}) {
          for (const std::size_t channels : {std::size_t{3}, std::size_t{16}}) {
            const MaxPoolShape s{2, 7, 9, channels, window[0], window[1], stride, stride, pad, pad, ceil};
            check_pool<T>(s, seed++);
            if (::testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

TYPED_TEST(DeviceMaxPool, SizesAndChannels) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const MaxPoolShape shapes[] = {
      {1, 1, 1, 8, 1, 1, 1, 1, 0, 0, false},    // one position
      {3, 2, 2, 24, 3, 3, 2, 2, 1, 1, true},     // windows clipped on every side
      {2, 5, 6, 40, 3, 3, 2, 2, 0, 0, true},     // VoVNet's pooling, odd sizes: the last windows clipped
      {2, 11, 13, 20, 3, 3, 2, 2, 0, 0, true},   // 20 channels: whole vectors of float, not of 16-bit types
      {1, 9, 9, 7, 3, 2, 1, 2, 1, 0, false},     // different steps and padding by axis
      {2, 7, 7, 16, 13, 13, 1, 1, 6, 6, false},  // CSPNeXt's widest pyramid pooling: every window clipped
  };
  std::uint32_t seed = 100;
  for (const MaxPoolShape& s : shapes) {
    check_pool<T>(s, seed++);
    if (::testing::Test::HasFatalFailure()) return;
  }
  check_pool<T>(shapes[2], seed++, 1);  // x off 16-byte alignment: the one-element kernel
}

TYPED_TEST(DeviceMaxPool, OnAStream) {
  HARDACT_REQUIRE_DEVICE();
  Stream stream;
  HARDACT_ASSERT_CUDA(stream.status());
  check_pool<TypeParam>(MaxPoolShape{4, 14, 14, 32, 3, 3, 2, 2, 0, 0, true}, 7, 0, stream.get());
}

TYPED_TEST(DeviceMaxPool, VoVNetShape) {
  HARDACT_REQUIRE_DEVICE();
  if (family::quick_mode()) GTEST_SKIP() << "HARDACT_TEST_QUICK: the VoVNet shape is left out";
  check_pool<TypeParam>(MaxPoolShape{64, 28, 28, 512, 3, 3, 2, 2, 0, 0, true}, 11);
}

TYPED_TEST(DeviceMaxPool, RefusalsWriteNothing) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const MaxPoolShape s{2, 6, 6, 8, 3, 3, 2, 2, 1, 1, false};
  GuardedBuffer<T> x(s.samples * s.height * s.width * s.channels), y(s.samples * s.out_height() * s.out_width() * 8);
  HARDACT_ASSERT_CUDA(x.status());
  HARDACT_ASSERT_CUDA(y.status());
  HARDACT_ASSERT_CUDA(x.upload(pool_input<T>(s, 3)));
  MaxPoolShape too_much_padding = s;
  too_much_padding.pad_h = 2;
  EXPECT_EQ(hardact::max_pool(too_much_padding, static_cast<const T*>(x.data()), y.data()), cudaErrorInvalidValue);
  MaxPoolShape no_stride = s;
  no_stride.stride_w = 0;
  EXPECT_EQ(hardact::max_pool(no_stride, static_cast<const T*>(x.data()), y.data()), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::max_pool(s, static_cast<const T*>(nullptr), y.data()), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::max_pool(s, static_cast<const T*>(x.data()), x.data() + 1), cudaErrorInvalidValue);  // overlap
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(family::payload_untouched(y) && y.guards_intact()) << "refused calls";
}

}  // namespace
