// SiLU on the device. Its float form is inline PTX that must equal what nvcc makes of PyTorch's CUDA
// formula, x / (1.0f + expf(-x)), compiled as PyTorch compiles it (no fast-math flags, as this file
// is): that formula, compiled here, is the reference, over every one of the 2^32 float patterns.
// Then through hardact::transform for float, double, half and bfloat16 against the same formula
// computed in each type's compute type and rounded once (double: exp in double). NaN as a class.
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using namespace hardact_test;

/// PyTorch's silu kernel formula (ATen's ActivationSiluKernel.cu), compiled by this file.
__device__ float pytorch_silu(float x) { return x / (1.0f + expf(-x)); }
__device__ double pytorch_silu(double x) { return x / (1.0 + exp(-x)); }

__device__ bool same_float(float a, float b) {
  return (a != a && b != b) || __float_as_uint(a) == __float_as_uint(b);
}

/// Compares the policy with the formula on the patterns first, first + stride, ...; counts the
/// differences and keeps the lowest differing pattern.
__global__ void compare_patterns(std::uint64_t first, std::uint64_t count, unsigned long long* mismatches,
                                 unsigned int* first_mismatch) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::uint64_t(gridDim.x) * blockDim.x) {
    const unsigned int bits = static_cast<unsigned int>(first + i);
    const float x = __uint_as_float(bits);
    if (!same_float(hardact::SiLU{}(x), pytorch_silu(x))) {
      atomicAdd(mismatches, 1ull);
      atomicMin(first_mismatch, bits);
    }
  }
}

TEST(DeviceSiLU, EveryFloatPatternMatchesPyTorchsFormula) {
  HARDACT_REQUIRE_DEVICE();
  GuardedBuffer<unsigned long long> mismatches(1);
  GuardedBuffer<unsigned int> first_mismatch(1);
  HARDACT_ASSERT_CUDA(mismatches.status());
  HARDACT_ASSERT_CUDA(first_mismatch.status());
  HARDACT_ASSERT_CUDA(mismatches.upload({0ull}));
  HARDACT_ASSERT_CUDA(first_mismatch.upload({0xffffffffu}));
  const std::uint64_t chunk = std::uint64_t(1) << 30;
  for (std::uint64_t first = 0; first < (std::uint64_t(1) << 32); first += chunk) {
    compare_patterns<<<4096, 256>>>(first, chunk, mismatches.data(), first_mismatch.data());
    HARDACT_ASSERT_CUDA(cudaGetLastError());
  }
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned long long> count;
  std::vector<unsigned int> first;
  HARDACT_ASSERT_CUDA(mismatches.download(count));
  HARDACT_ASSERT_CUDA(first_mismatch.download(first));
  float witness = 0.0f;
  std::memcpy(&witness, &first[0], sizeof(witness));
  EXPECT_EQ(count[0], 0ull) << "first differing input: " << describe(witness);
}

/// The formula in T's compute type, rounded once: the expected output of transform(SiLU{}).
template <class T>
__global__ void formula(const T* x, T* y, std::size_t n) {
  using C = hardact::compute_t<T>;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    y[i] = hardact::from_compute<T>(pytorch_silu(hardact::to_compute(x[i])));
}

template <class T>
std::vector<T> inputs() {
  if constexpr (sizeof(T) == 2) {
    return all_patterns<T>();
  } else {
    // Where the result changes form: around 0 (subnormals, x / 2), where exp(-x) overflows, -inf.
    return random_values<T>(std::size_t(1) << 20, 4200, {1e-40, -1e-40, -88.0, -89.0, 88.7, -103.9, 20.0, -20.0});
  }
}

template <class T>
class DeviceSiLUTransform : public ::testing::Test {};
TYPED_TEST_SUITE(DeviceSiLUTransform, ElementTypes, TypeNames);

TYPED_TEST(DeviceSiLUTransform, MatchesTheFormulaRoundedOnce) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const std::vector<T> host = inputs<T>();
  const std::size_t n = host.size();
  GuardedBuffer<T> x(n), y(n, 1), expected(n);  // y one element off alignment: the unaligned head too
  HARDACT_ASSERT_CUDA(x.status());
  HARDACT_ASSERT_CUDA(y.status());
  HARDACT_ASSERT_CUDA(expected.status());
  HARDACT_ASSERT_CUDA(x.upload(host));
  HARDACT_ASSERT_CUDA(hardact::transform(hardact::SiLU{}, x.data(), y.data(), n));
  formula<T><<<1024, 256>>>(x.data(), expected.data(), n);
  HARDACT_ASSERT_CUDA(cudaGetLastError());
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  std::vector<T> got, want;
  HARDACT_ASSERT_CUDA(y.download(got));
  HARDACT_ASSERT_CUDA(expected.download(want));
  EXPECT_TRUE(y.guards_intact());
  std::size_t differing = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (same_bits_or_both_nan(got[i], want[i])) continue;
    if (differing++ < 5)
      ADD_FAILURE() << type_name<T>() << " x=" << describe(host[i]) << ": got " << describe(got[i]) << ", want "
                    << describe(want[i]);
  }
  EXPECT_EQ(differing, 0u) << type_name<T>();
}

}  // namespace
