// hardact::depthwise_conv on the device against a host reference that computes each output in the
// kernel's order (fmaf over the filter rows, then columns, from 0; padding rows skipped, padding
// columns adding 0 * tap; the scale's product and the shift rounded in turn; the policy; one
// rounding to T): y bit for bit, in float, half and bfloat16. Every filter size and stride with
// every padding, odd sizes, a 1 x 1 input, an input with no rows (x never read), channel counts 4,
// 12, 1020 and 1024 (the largest; 1028 is refused), samples of one block and of several (their
// blocks' sums in the caller's temporary storage), the library's policies and one of the test's
// own. The mean against a double sum of the y written, within float accumulation error, the same
// bits on a second run; y the same bits with and without it. With the input concatenated (a ghost
// module's cat([x, conv(x)], 1)): each position x's bits, then the convolution's. Refusals write nothing.
// HARDACT_TEST_QUICK=1 (compute-sanitizer runs) leaves out the MobileNet-size shapes.
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
#include <type_traits>
#include <vector>

namespace {

using namespace hardact_test;

/// A policy of the test's own: the library takes any functor callable as float(float).
struct Identity {
  __host__ __device__ float operator()(float z) const { return z; }
};

enum class Act { hardswish, hardsigmoid, relu6, hardtanh, identity };
constexpr Act kActs[] = {Act::hardswish, Act::hardsigmoid, Act::relu6, Act::hardtanh, Act::identity};

std::string act_name(Act a) {
  static const char* const kNames[] = {"hardswish", "hardsigmoid", "relu6", "hardtanh(-0.5, 2)", "identity"};
  return kNames[static_cast<int>(a)];
}

/// Calls f(policy) with the policy `a` names.
template <class F>
auto with_policy(Act a, F&& f) {
  switch (a) {
    case Act::hardswish: return f(hardact::HardSwish{});
    case Act::hardsigmoid: return f(hardact::HardSigmoid{});
    case Act::relu6: return f(hardact::ReLU6{});
    case Act::hardtanh: return f(hardact::HardTanh{-0.5, 2.0});
    case Act::identity: break;
  }
  return f(Identity{});
}

std::string describe_shape(const hardact::DepthwiseConvShape& s) {
  return "N " + std::to_string(s.samples) + " H " + std::to_string(s.height) + " W " + std::to_string(s.width) +
         " C " + std::to_string(s.channels) + " K " + std::to_string(s.kernel_size) + " stride " +
         std::to_string(s.stride) + " pad (" + std::to_string(s.pad_h) + ", " + std::to_string(s.pad_w) + ")";
}

template <class T>
T to_element(float v) {
  return hardact::from_compute<T>(v);
}

template <class T>
float to_float(T v) {
  return static_cast<float>(hardact::to_compute(v));
}

/// x, taps, scale and shift of a shape: x in [-2, 2] rounded to T with a few exact zeros of both
/// signs, taps in [-1, 1] / K, scale in [0.5, 1.5], shift in [-0.5, 0.5].
template <class T>
struct Inputs {
  std::vector<T> x;
  std::vector<float> taps, scale, shift;
};

template <class T>
Inputs<T> make_inputs(const hardact::DepthwiseConvShape& s, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  Inputs<T> in;
  in.x.resize(s.samples * s.height * s.width * s.channels);
  for (std::size_t i = 0; i < in.x.size(); ++i) {
    const float v = i % 97 == 5 ? 0.0f : i % 89 == 7 ? -0.0f : 2.0f * unit(random);
    in.x[i] = to_element<T>(v);
  }
  const std::size_t k = static_cast<std::size_t>(s.kernel_size);
  in.taps.resize(k * k * s.channels);
  for (float& t : in.taps) t = unit(random) / static_cast<float>(k);
  in.scale.resize(s.channels);
  in.shift.resize(s.channels);
  for (float& v : in.scale) v = 1.0f + 0.5f * unit(random);
  for (float& v : in.shift) v = 0.5f * unit(random);
  return in;
}

/// y as the kernel computes it, element for element (see the file's comment).
template <class T, class Policy>
std::vector<T> reference_y(const hardact::DepthwiseConvShape& s, const Inputs<T>& in, const Policy& act) {
  const long long H = static_cast<long long>(s.height), W = static_cast<long long>(s.width);
  const long long C = static_cast<long long>(s.channels), K = s.kernel_size, S = s.stride;
  const long long OH = static_cast<long long>(s.out_height()), OW = static_cast<long long>(s.out_width());
  std::vector<T> y(static_cast<std::size_t>(static_cast<long long>(s.samples) * OH * OW * C));
  for (long long n = 0; n < static_cast<long long>(s.samples); ++n) {
    for (long long oh = 0; oh < OH; ++oh) {
      for (long long ow = 0; ow < OW; ++ow) {
        for (long long c = 0; c < C; ++c) {
          float acc = 0.0f;
          for (long long kh = 0; kh < K; ++kh) {
            const long long ih = oh * S - s.pad_h + kh;
            if (ih < 0 || ih >= H) continue;  // a padding row: skipped
            for (long long kw = 0; kw < K; ++kw) {
              const long long iw = ow * S - s.pad_w + kw;
              const float v = iw >= 0 && iw < W ? to_float(in.x[static_cast<std::size_t>(((n * H + ih) * W + iw) * C + c)])
                                                : 0.0f;  // a padding column: 0 * tap
              acc = std::fma(v, in.taps[static_cast<std::size_t>((kh * K + kw) * C + c)], acc);
            }
          }
          // volatile: the product rounded before the add, whatever the host compiler contracts.
          const volatile float product = acc * in.scale[static_cast<std::size_t>(c)];
          const float z = product + in.shift[static_cast<std::size_t>(c)];
          y[static_cast<std::size_t>(((n * OH + oh) * OW + ow) * C + c)] = hardact::from_compute<T>(act(z));
        }
      }
    }
  }
  return y;
}

/// The mean's tolerance: the float sums' accumulation error over `positions` terms (and the
/// product by 1 / positions), then T's rounding; half's subnormal step near 0.
template <class T>
double mean_tolerance(double magnitude_sum, double positions, double expected) {
  const double float_error = (positions + 3.0) * std::ldexp(1.0, -23) * magnitude_sum / positions;
  const double element_epsilon = std::is_same_v<T, float> ? std::ldexp(1.0, -23)
                                 : std::is_same_v<T, __half> ? std::ldexp(1.0, -10)
                                                             : std::ldexp(1.0, -7);
  const double smallest = std::is_same_v<T, __half> ? std::ldexp(1.0, -24) : 0.0;
  return float_error + element_epsilon * std::fabs(expected) + smallest;
}

/// One shape's buffers on the device, between guard bands.
template <class T>
struct DeviceCase {
  hardact::DepthwiseConvShape shape;
  GuardedBuffer<T> x, y, mean;
  GuardedBuffer<float> taps, scale, shift;
  GuardedBuffer<unsigned char> temp;

  explicit DeviceCase(const hardact::DepthwiseConvShape& s)
      : shape(s),
        x(s.samples * s.height * s.width * s.channels),
        y(s.samples * s.out_height() * s.out_width() * s.out_channels()),
        mean(s.samples * s.channels),
        taps(static_cast<std::size_t>(s.kernel_size * s.kernel_size) * s.channels),
        scale(s.channels),
        shift(s.channels),
        temp(hardact::depthwise_conv_temp_storage_bytes(s)) {}

  cudaError_t status() const {
    for (const cudaError_t st :
         {x.status(), y.status(), mean.status(), taps.status(), scale.status(), shift.status(), temp.status()}) {
      if (st != cudaSuccess) return st;
    }
    return cudaSuccess;
  }
  cudaError_t upload(const Inputs<T>& in) {
    cudaError_t st = in.x.empty() ? cudaSuccess : x.upload(in.x);
    if (st == cudaSuccess) st = taps.upload(in.taps);
    if (st == cudaSuccess) st = scale.upload(in.scale);
    if (st == cudaSuccess) st = shift.upload(in.shift);
    return st;
  }
  void* temp_storage() { return temp.size() > 0 ? static_cast<void*>(temp.data()) : nullptr; }

  template <class Policy>
  cudaError_t run(const Policy& act, bool with_mean, cudaStream_t stream = nullptr) {
    const T* input = x.size() > 0 ? x.data() : nullptr;  // no rows: x may be null
    if (!with_mean) return hardact::depthwise_conv(act, shape, input, taps.data(), scale.data(), shift.data(), y.data(), stream);
    return hardact::depthwise_conv(act, shape, input, taps.data(), scale.data(), shift.data(), y.data(), mean.data(),
                                   temp_storage(), temp.size(), stream);
  }
};

template <class T>
class DeviceDepthwise : public ::testing::Test {};
using DepthwiseTypes = ::testing::Types<float, __half, __nv_bfloat16>;
TYPED_TEST_SUITE(DeviceDepthwise, DepthwiseTypes, TypeNames);

/// Whether a buffer holds the poison pattern still, its payload and its guards.
template <class T>
bool untouched(GuardedBuffer<T>& buffer) {
  return family::payload_untouched(buffer) && buffer.guards_intact();
}

/// y with the input concatenated: at each position x's C values, then the convolution's C.
template <class T>
std::vector<T> concatenated(const std::vector<T>& x, const std::vector<T>& convolution, std::size_t channels) {
  std::vector<T> y;
  y.reserve(2 * convolution.size());
  for (std::size_t p = 0; p < convolution.size(); p += channels) {
    y.insert(y.end(), x.begin() + static_cast<std::ptrdiff_t>(p), x.begin() + static_cast<std::ptrdiff_t>(p + channels));
    y.insert(y.end(), convolution.begin() + static_cast<std::ptrdiff_t>(p),
             convolution.begin() + static_cast<std::ptrdiff_t>(p + channels));
  }
  return y;
}

/// Runs `s` with policy `a` without and with the mean, twice with it: y bit for bit the
/// reference's each time, the mean within mean_tolerance of the double mean of the convolution's
/// y, the second run the same bits, the guards intact.
template <class T>
void check_case(const hardact::DepthwiseConvShape& s, Act a, std::uint32_t seed) {
  SCOPED_TRACE(describe_shape(s) + (s.concatenate_input ? ", input concatenated, " : ", ") + act_name(a) + ", " +
               type_name<T>());
  const Inputs<T> in = make_inputs<T>(s, seed);
  std::vector<T> expected = with_policy(a, [&](auto act) { return reference_y<T>(s, in, act); });
  if (s.concatenate_input) expected = concatenated(in.x, expected, s.channels);
  DeviceCase<T> d(s);
  HARDACT_ASSERT_CUDA(d.status());
  HARDACT_ASSERT_CUDA(d.upload(in));
  std::vector<T> first_y, first_mean;
  for (const int run : {0, 1, 2}) {
    const bool with_mean = run > 0;
    SCOPED_TRACE(with_mean ? "with the mean, run " + std::to_string(run) : std::string("without the mean"));
    HARDACT_ASSERT_CUDA(d.y.poison_payload());
    HARDACT_ASSERT_CUDA(d.mean.poison_payload());
    HARDACT_ASSERT_CUDA(with_policy(a, [&](auto act) { return d.run(act, with_mean); }));
    HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
    HARDACT_ASSERT_CUDA(cudaGetLastError());
    std::vector<T> y, mean;
    HARDACT_ASSERT_CUDA(d.y.download(y));
    HARDACT_ASSERT_CUDA(d.mean.download(mean));
    ASSERT_TRUE(d.y.guards_intact() && d.mean.guards_intact() && d.temp.guards_intact()) << "a guard was overwritten";
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      if (!same_bits_or_both_nan(y[i], expected[i]) && ++wrong <= 5) {
        ADD_FAILURE() << "y[" << i << "] " << hardact_test::describe(y[i]) << ", expected "
                      << hardact_test::describe(expected[i]);
      }
    }
    ASSERT_EQ(wrong, 0u) << "of " << y.size() << " outputs";
    if (!with_mean) {
      ASSERT_TRUE(untouched(d.mean)) << "the mean written without being asked for";
      continue;
    }
    const std::size_t positions = s.out_height() * s.out_width(), C = s.channels, stride = s.out_channels();
    const std::size_t first = s.concatenate_input ? C : 0;  // the convolution's channels
    for (std::size_t n = 0; n < s.samples; ++n) {
      for (std::size_t c = 0; c < C; ++c) {
        double sum = 0.0, magnitudes = 0.0;
        for (std::size_t p = 0; p < positions; ++p) {
          const double v = to_double(y[(n * positions + p) * stride + first + c]);
          sum += v;
          magnitudes += std::fabs(v);
        }
        const double want = sum / static_cast<double>(positions);
        const double got = to_double(mean[n * C + c]);
        ASSERT_LE(std::fabs(got - want), mean_tolerance<T>(magnitudes, static_cast<double>(positions), want))
            << "mean[" << n << "][" << c << "] " << got << ", expected " << want;
      }
    }
    if (run == 1) {
      first_y = y;
      first_mean = mean;
    } else {
      for (std::size_t i = 0; i < mean.size(); ++i) {
        ASSERT_EQ(to_bits(mean[i]), to_bits(first_mean[i])) << "mean[" << i << "] differs on a second run";
      }
      for (std::size_t i = 0; i < y.size(); ++i) ASSERT_EQ(to_bits(y[i]), to_bits(first_y[i])) << "y[" << i << "]";
    }
  }
}

hardact::DepthwiseConvShape shape(std::size_t n, std::size_t h, std::size_t w, std::size_t c, int k, int stride,
                                  int pad_h, int pad_w) {
  return hardact::DepthwiseConvShape{n, h, w, c, k, stride, pad_h, pad_w};
}

// Every filter size and stride, every padding in each direction (equal, and unequal: pad_w the
// next one round), on odd sizes, 12 channels (3 vectors, 85 lanes: one block a sample), 2 samples.
TYPED_TEST(DeviceDepthwise, EveryFilterStrideAndPadding) {
  HARDACT_REQUIRE_DEVICE();
  std::uint32_t seed = 1;
  int index = 0;
  for (const int k : {3, 5}) {
    for (const int stride : {1, 2}) {
      for (int pad = 0; pad < k; ++pad) {
        for (const int pad_w : {pad, (pad + 1) % k}) {
          const bool odd = index % 2 == 0;
          const auto s = shape(2, odd ? 7 : 13, odd ? 9 : 11, 12, k, stride, pad, pad_w);
          check_case<TypeParam>(s, kActs[index % 5], seed++);
          ++index;
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

// Channel counts: one vector (256 lanes), 12, 1020 (255 threads, one lane) and 1024, the most (a
// block of 256 vectors); 1 x 1 inputs with padding; samples of one block
// and of several (the blocks' sums added by the second kernel from the temporary storage); every
// policy on each.
TYPED_TEST(DeviceDepthwise, ChannelsAndBlocksPerSample) {
  HARDACT_REQUIRE_DEVICE();
  const hardact::DepthwiseConvShape shapes[] = {
      shape(3, 1, 1, 4, 3, 1, 1, 1),      shape(2, 1, 1, 1024, 5, 2, 2, 2), shape(2, 1, 1, 12, 5, 1, 2, 4),
      shape(2, 56, 56, 4, 3, 1, 1, 1),    // 784 groups over 256 lanes: 4 blocks a sample
      shape(2, 7, 9, 4, 3, 1, 1, 1),      // 21 groups: one block
      shape(2, 7, 7, 1020, 5, 1, 2, 2),   // one lane: a block per group
      shape(2, 9, 7, 1024, 3, 2, 1, 0),   shape(1, 5, 6, 1024, 3, 1, 1, 1),
      shape(3, 13, 11, 12, 5, 2, 2, 1),   shape(70, 4, 4, 12, 3, 1, 1, 1)};
  std::uint32_t seed = 100;
  int index = 0;
  for (const auto& s : shapes) {
    for (const Act a : kActs) {
      // Quick (compute-sanitizer): one policy a shape, in turn.
      if (family::quick_mode() && a != kActs[index % 5]) continue;
      check_case<TypeParam>(s, a, seed++);
      if (::testing::Test::HasFatalFailure()) return;
    }
    ++index;
  }
}

// MobileNetV3's depthwise stages at a small batch (full runs only).
TYPED_TEST(DeviceDepthwise, MobileNetShapes) {
  HARDACT_REQUIRE_DEVICE();
  if (family::quick_mode()) GTEST_SKIP() << "HARDACT_TEST_QUICK: the MobileNet shapes are left out";
  const hardact::DepthwiseConvShape shapes[] = {shape(4, 112, 112, 16, 3, 1, 1, 1), shape(4, 56, 56, 72, 3, 2, 1, 1),
                                                shape(4, 28, 28, 240, 5, 1, 2, 2), shape(4, 14, 14, 672, 5, 2, 2, 2),
                                                shape(4, 7, 7, 960, 5, 1, 2, 2)};
  std::uint32_t seed = 200;
  int index = 0;
  for (const auto& s : shapes) {
    check_case<TypeParam>(s, kActs[index++ % 5], seed++);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// The input concatenated before the convolution's output (stride 1, an output of the input's size):
// both filter sizes, one vector and 1024 channels, samples of one block and of several, GhostNet's
// ghost-module shapes (full runs).
TYPED_TEST(DeviceDepthwise, InputConcatenated) {
  HARDACT_REQUIRE_DEVICE();
  std::vector<hardact::DepthwiseConvShape> shapes = {
      shape(2, 7, 9, 12, 3, 1, 1, 1), shape(2, 13, 11, 12, 5, 1, 2, 2), shape(3, 1, 1, 4, 3, 1, 1, 1),
      shape(2, 56, 56, 4, 3, 1, 1, 1),  // 4 blocks a sample
      shape(2, 5, 6, 1024, 3, 1, 1, 1)};
  if (!family::quick_mode()) {
    for (const auto& ghost : {shape(2, 112, 112, 8, 3, 1, 1, 1), shape(2, 28, 28, 60, 3, 1, 1, 1),
                              shape(2, 14, 14, 336, 3, 1, 1, 1), shape(2, 7, 7, 480, 3, 1, 1, 1)}) {
      shapes.push_back(ghost);
    }
  }
  std::uint32_t seed = 250;
  int index = 0;
  for (auto s : shapes) {
    s.concatenate_input = true;
    check_case<TypeParam>(s, kActs[index++ % 5], seed++);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// An input with no rows: every filter row is padding, y = act(0 * scale + shift), x never read
// (null here).
TYPED_TEST(DeviceDepthwise, InputWithoutRows) {
  HARDACT_REQUIRE_DEVICE();
  check_case<TypeParam>(shape(2, 0, 5, 8, 3, 1, 2, 1), Act::hardswish, 300);
}

// On a non-blocking stream, with a mean whose samples take several blocks: the same results.
TYPED_TEST(DeviceDepthwise, OnAStream) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const auto s = shape(2, 56, 56, 4, 3, 1, 1, 1);
  ASSERT_GT(hardact::depthwise_conv_temp_storage_bytes(s), 0u);
  const Inputs<T> in = make_inputs<T>(s, 400);
  const std::vector<T> expected = reference_y<T>(s, in, hardact::ReLU6{});
  DeviceCase<T> d(s);
  HARDACT_ASSERT_CUDA(d.status());
  HARDACT_ASSERT_CUDA(d.upload(in));
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());  // the buffers were poisoned on the legacy stream
  Stream stream;
  HARDACT_ASSERT_CUDA(stream.status());
  HARDACT_ASSERT_CUDA(d.run(hardact::ReLU6{}, true, stream.get()));
  HARDACT_ASSERT_CUDA(cudaStreamSynchronize(stream.get()));
  std::vector<T> y;
  HARDACT_ASSERT_CUDA(d.y.download(y));
  for (std::size_t i = 0; i < y.size(); ++i) ASSERT_TRUE(same_bits_or_both_nan(y[i], expected[i])) << "y[" << i << "]";
}

// Refused calls on real device buffers write nothing: 1028 channels (past the most), a filter of
// 7, the input concatenated at stride 2 or to a smaller output, a misaligned x, y or mean,
// temporary storage one byte short.
TYPED_TEST(DeviceDepthwise, RefusalsWriteNothing) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  {
    const auto s = shape(2, 5, 5, 1028, 3, 1, 1, 1);
    DeviceCase<T> d(s);
    HARDACT_ASSERT_CUDA(d.status());
    EXPECT_EQ(d.run(hardact::HardSwish{}, false), cudaErrorNotSupported);
    EXPECT_EQ(d.run(hardact::HardSwish{}, true), cudaErrorNotSupported);
    HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
    EXPECT_TRUE(untouched(d.y) && untouched(d.mean)) << "1028 channels";
  }
  const auto s = shape(2, 56, 56, 4, 3, 1, 1, 1);
  DeviceCase<T> d(s);
  HARDACT_ASSERT_CUDA(d.status());
  HARDACT_ASSERT_CUDA(d.upload(make_inputs<T>(s, 500)));
  auto seven = s;
  seven.kernel_size = 7;
  EXPECT_EQ(hardact::depthwise_conv(hardact::HardSwish{}, seven, d.x.data(), d.taps.data(), d.scale.data(),
                                    d.shift.data(), d.y.data()),
            cudaErrorNotSupported);
  for (auto concatenated_shape : {shape(2, 56, 56, 4, 3, 2, 1, 1), shape(2, 56, 56, 4, 3, 1, 0, 0)}) {
    concatenated_shape.concatenate_input = true;  // y holds what either output needs
    EXPECT_EQ(hardact::depthwise_conv(hardact::HardSwish{}, concatenated_shape, d.x.data(), d.taps.data(),
                                      d.scale.data(), d.shift.data(), d.y.data()),
              cudaErrorNotSupported);
  }
  EXPECT_EQ(hardact::depthwise_conv(hardact::HardSwish{}, s, d.x.data() + 1, d.taps.data(), d.scale.data(),
                                    d.shift.data(), d.y.data()),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::depthwise_conv(hardact::HardSwish{}, s, d.x.data(), d.taps.data(), d.scale.data(), d.shift.data(),
                                    d.y.data(), d.mean.data() + 2, d.temp_storage(), d.temp.size()),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::depthwise_conv(hardact::HardSwish{}, s, d.x.data(), d.taps.data(), d.scale.data(), d.shift.data(),
                                    d.y.data(), d.mean.data(), d.temp_storage(), d.temp.size() - 1),
            cudaErrorInvalidValue);
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(untouched(d.y) && untouched(d.mean) && untouched(d.temp)) << "refused calls";
}

}  // namespace
