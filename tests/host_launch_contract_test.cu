// The launch contract's checks that need no GPU: every rejected call returns before any CUDA
// call, so the pointers here are host addresses that are never dereferenced. Without a GPU, any
// CUDA call would return cudaErrorNoDevice or similar instead of the codes expected here. Also
// compile-time checks of the public names and signatures of the launchers.
#include "support/fake_device_memory.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

namespace {

using hardact_test::FakeDeviceMemory;

using hardact::HardSigmoid;
using hardact::HardTanh;

// ---- Compile-time: the public interface exactly as documented. ----

template <class T>
using Launcher = cudaError_t (*)(HardSigmoid, const T*, T*, std::size_t, cudaStream_t);

// transform<VecWidth>(op, in, out, n, stream) for every valid width; the default width is 0.
static_assert(std::is_same_v<decltype(&hardact::transform<0, HardSigmoid, float>), Launcher<float>>);
constexpr Launcher<float> kFloatLaunchers[] = {
    &hardact::transform<0, HardSigmoid, float>, &hardact::transform<1, HardSigmoid, float>,
    &hardact::transform<2, HardSigmoid, float>, &hardact::transform<4, HardSigmoid, float>};
constexpr Launcher<double> kDoubleLaunchers[] = {&hardact::transform<0, HardSigmoid, double>,
                                                 &hardact::transform<1, HardSigmoid, double>,
                                                 &hardact::transform<2, HardSigmoid, double>};
constexpr Launcher<__half> kHalfLaunchers[] = {
    &hardact::transform<0, HardSigmoid, __half>, &hardact::transform<1, HardSigmoid, __half>,
    &hardact::transform<2, HardSigmoid, __half>, &hardact::transform<4, HardSigmoid, __half>,
    &hardact::transform<8, HardSigmoid, __half>};
constexpr Launcher<__nv_bfloat16> kBFloat16Launchers[] = {
    &hardact::transform<0, HardSigmoid, __nv_bfloat16>, &hardact::transform<1, HardSigmoid, __nv_bfloat16>,
    &hardact::transform<2, HardSigmoid, __nv_bfloat16>, &hardact::transform<4, HardSigmoid, __nv_bfloat16>,
    &hardact::transform<8, HardSigmoid, __nv_bfloat16>};

static_assert(sizeof(kFloatLaunchers) + sizeof(kDoubleLaunchers) + sizeof(kHalfLaunchers) + sizeof(kBFloat16Launchers) ==
              17 * sizeof(void (*)()), "one launcher per valid (type, width) pair");

template <class T>
constexpr const T* kX = nullptr;  // a null input (x) and output (y) of each element type
template <class T>
constexpr T* kY = nullptr;

// Stream defaults to nullptr; VecWidth defaults to automatic.
static_assert(std::is_same_v<decltype(hardact::transform(HardSigmoid{}, kX<float>, kY<float>, std::size_t{})),
                             cudaError_t>);
static_assert(std::is_same_v<decltype(hardact::transform(HardTanh{}, kX<__half>, kY<__half>, std::size_t{},
                                                         cudaStream_t{})),
                             cudaError_t>);
static_assert(std::is_same_v<decltype(hardact::transform<8>(HardTanh{0.0, 6.0}, kX<__nv_bfloat16>,
                                                            kY<__nv_bfloat16>, std::size_t{})),
                             cudaError_t>);

// Convenience launchers, templated on T, with PyTorch's defaults.
static_assert(std::is_same_v<decltype(&hardact::hardsigmoid<float>),
                             cudaError_t (*)(const float*, float*, std::size_t, cudaStream_t)>);
static_assert(std::is_same_v<decltype(&hardact::hardtanh<double>),
                             cudaError_t (*)(const double*, double*, std::size_t, double, double, cudaStream_t)>);
static_assert(std::is_same_v<decltype(hardact::hardsigmoid(kX<__half>, kY<__half>, std::size_t{})), cudaError_t>);
static_assert(std::is_same_v<decltype(hardact::hardtanh(kX<__nv_bfloat16>, kY<__nv_bfloat16>, std::size_t{})),
                             cudaError_t>);
static_assert(std::is_same_v<decltype(hardact::hardtanh(kX<float>, kY<float>, std::size_t{}, 0.0)), cudaError_t>);
static_assert(std::is_same_v<decltype(hardact::hardtanh(kX<float>, kY<float>, std::size_t{}, 0.0, 6.0,
                                                        cudaStream_t{})),
                             cudaError_t>);

// Policies: copyable functors with operator() returning the element type, for all four types.
template <class Op, class T>
constexpr bool kReturnsSameType = std::is_same_v<decltype(std::declval<const Op&>()(std::declval<T>())), T>;
template <class Op>
constexpr bool kCallableOnAllTypes = kReturnsSameType<Op, float> && kReturnsSameType<Op, double> &&
                                     kReturnsSameType<Op, __half> && kReturnsSameType<Op, __nv_bfloat16>;
static_assert(kCallableOnAllTypes<HardSigmoid>);
static_assert(kCallableOnAllTypes<HardTanh>);
static_assert(std::is_trivially_copyable_v<HardSigmoid> && std::is_trivially_copyable_v<HardTanh>);
static_assert(std::is_default_constructible_v<HardSigmoid> && std::is_default_constructible_v<HardTanh>);

// ---- Run time: rejected calls. ----

template <class T>
class HostLaunchContract : public ::testing::Test {
 protected:
  FakeDeviceMemory memory_;
  T* in() { return memory_.at<T>(0); }
  T* out() { return memory_.at<T>(2048); }
};
TYPED_TEST_SUITE(HostLaunchContract, hardact_test::ElementTypes, hardact_test::TypeNames);

TYPED_TEST(HostLaunchContract, ZeroElementsSucceedsWithoutLookingAtPointers) {
  using T = TypeParam;
  T* const misaligned = this->memory_.template at<T>(1);
  EXPECT_EQ(hardact::transform(HardSigmoid{}, this->in(), this->out(), 0), cudaSuccess);
  EXPECT_EQ(hardact::transform(HardSigmoid{}, static_cast<const T*>(nullptr), static_cast<T*>(nullptr), 0), cudaSuccess);
  EXPECT_EQ(hardact::transform<1>(HardSigmoid{}, misaligned, misaligned, 0), cudaSuccess);
  EXPECT_EQ(hardact::transform(HardSigmoid{}, this->in(), this->in() + 1, 0), cudaSuccess);
  EXPECT_EQ(hardact::hardsigmoid(static_cast<const T*>(nullptr), static_cast<T*>(nullptr), 0), cudaSuccess);
  EXPECT_EQ(hardact::hardtanh(static_cast<const T*>(nullptr), static_cast<T*>(nullptr), 0), cudaSuccess);
}

TYPED_TEST(HostLaunchContract, NullPointersAreRejected) {
  using T = TypeParam;
  const T* const null_in = nullptr;
  T* const null_out = nullptr;
  for (const std::size_t n : {std::size_t{1}, std::size_t{1000}}) {
    EXPECT_EQ(hardact::transform(HardSigmoid{}, null_in, this->out(), n), cudaErrorInvalidValue);
    EXPECT_EQ(hardact::transform(HardSigmoid{}, this->in(), null_out, n), cudaErrorInvalidValue);
    EXPECT_EQ(hardact::transform(HardSigmoid{}, null_in, null_out, n), cudaErrorInvalidValue);
    EXPECT_EQ(hardact::transform<1>(HardSigmoid{}, null_in, this->out(), n), cudaErrorInvalidValue);
    EXPECT_EQ(hardact::hardtanh(this->in(), null_out, n), cudaErrorInvalidValue);
  }
}

TYPED_TEST(HostLaunchContract, PointersMisalignedForTheirTypeAreRejected) {
  using T = TypeParam;
  // Every byte offset that is not a multiple of alignof(T), on either side.
  for (std::size_t skew = 1; skew < alignof(T); ++skew) {
    T* const misaligned_in = this->memory_.template at<T>(skew);
    T* const misaligned_out = this->memory_.template at<T>(2048 + skew);
    EXPECT_EQ(hardact::transform(HardSigmoid{}, misaligned_in, this->out(), 100), cudaErrorInvalidValue) << skew;
    EXPECT_EQ(hardact::transform(HardSigmoid{}, this->in(), misaligned_out, 100), cudaErrorInvalidValue) << skew;
    EXPECT_EQ(hardact::transform(HardSigmoid{}, misaligned_in, misaligned_out, 1), cudaErrorInvalidValue) << skew;
    EXPECT_EQ(hardact::transform<1>(HardTanh{}, misaligned_in, misaligned_in, 7), cudaErrorInvalidValue) << skew;
  }
}

TYPED_TEST(HostLaunchContract, PartialOverlapIsRejected) {
  using T = TypeParam;
  T* const base = this->in();
  const std::size_t n = 64;
  EXPECT_EQ(hardact::transform(HardSigmoid{}, base, base + 1, n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(HardSigmoid{}, base + 1, base, n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(HardSigmoid{}, base, base + (n - 1), n), cudaErrorInvalidValue);  // one shared element
  EXPECT_EQ(hardact::transform(HardSigmoid{}, base + (n - 1), base, n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform<1>(HardSigmoid{}, base, base + 1, n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::hardtanh(base + 3, base, n), cudaErrorInvalidValue);
}

TYPED_TEST(HostLaunchContract, InvalidHardTanhBoundsAreRejected) {
  using T = TypeParam;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const HardTanh invalid[] = {{2.0, 1.0}, {nan, 1.0}, {-1.0, nan}, {nan, nan}, {inf, -inf}, {0.0, -1e-300}};
  for (const HardTanh& op : invalid) {
    EXPECT_EQ(hardact::transform(op, this->in(), this->out(), 10), cudaErrorInvalidValue) << op.min_val << " " << op.max_val;
    EXPECT_EQ(hardact::transform(op, this->in(), this->in(), 10), cudaErrorInvalidValue) << op.min_val << " " << op.max_val;
    EXPECT_EQ(hardact::transform<1>(op, this->in(), this->out(), 10), cudaErrorInvalidValue);
    EXPECT_EQ(hardact::hardtanh(this->in(), this->out(), 10, op.min_val, op.max_val), cudaErrorInvalidValue);
  }
}

// A functor that is not a hardact policy goes through the same checks.
struct NegateFloat {
  __host__ __device__ float operator()(float x) const { return -x; }
};

TEST(HostLaunchContractUserFunctor, SameChecksApply) {
  FakeDeviceMemory memory;
  float* const data = memory.at<float>(0);
  EXPECT_EQ(hardact::transform(NegateFloat{}, data, data + 512, 0), cudaSuccess);
  EXPECT_EQ(hardact::transform(NegateFloat{}, static_cast<const float*>(nullptr), data, 4), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(NegateFloat{}, data, data + 1, 4), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(NegateFloat{}, memory.at<float>(2), data + 512, 4), cudaErrorInvalidValue);
}

}  // namespace
