// The launch contract of hardact::concatenate on the host (no GPU needed), in the order it is
// checked: no inputs (cudaErrorInvalidValue); no rows or rows of no elements, a no-op that looks at
// no data pointer; a y of 2^62 bytes or more (cudaErrorNotSupported), at its exact bound; then null
// or misaligned pointers and a y sharing a byte with an input (cudaErrorInvalidValue). Refusals
// return before any CUDA call: made-up addresses stand in for device memory and are never
// dereferenced, and without a GPU a call that got as far as a CUDA call would return the runtime's
// error (cudaErrorNoDevice or the like) instead. The calls the contract lets through (y next to an
// input, inputs sharing bytes, empty inputs with any data) are shown to get that far, where no GPU
// is present.
#include <hardact/concatenate.cuh>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace {

using hardact::ConcatenationInput;

/// An address standing in for device memory: never dereferenced.
template <class T>
T* concat_fake_address(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

constexpr std::uintptr_t kConcatFirst = 0x10000000, kConcatSecond = 0x11000000, kConcatY = 0x20000000;

/// An element of three bytes, aligned to one: y's size bound is not a whole number of them.
struct ConcatHostTriple {
  unsigned char bytes[3];
};
static_assert(sizeof(ConcatHostTriple) == 3 && alignof(ConcatHostTriple) == 1);

static_assert(std::is_same_v<decltype(hardact::concatenate(static_cast<const ConcatenationInput<float>*>(nullptr),
                                                           std::size_t{}, std::size_t{}, static_cast<float*>(nullptr))),
                             cudaError_t>,
              "the stream defaults to the legacy stream");

/// An input of floats at a made-up address.
ConcatenationInput<float> concat_float_input(std::uintptr_t address, std::size_t row_elements) {
  return {concat_fake_address<const float>(address), row_elements};
}

TEST(HostConcatenateContract, NoInputsRefusedFirst) {
  const ConcatenationInput<float> inputs[] = {concat_float_input(kConcatFirst, 3)};
  float* const y = concat_fake_address<float>(kConcatY);
  EXPECT_EQ(hardact::concatenate(inputs, 0, 4, y), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::concatenate<float>(nullptr, 1, 4, y), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::concatenate<float>(nullptr, 0, 4, y), cudaErrorInvalidValue);
  // Before the no-op of no rows, and before y's size and pointer are looked at.
  EXPECT_EQ(hardact::concatenate(inputs, 0, 0, y), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::concatenate<float>(nullptr, 2, 0, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::concatenate<float>(nullptr, 1, std::size_t{1} << 62, nullptr), cudaErrorInvalidValue);
}

TEST(HostConcatenateContract, NoRowsLooksAtNoPointer) {
  const ConcatenationInput<float> garbage[] = {{nullptr, 3}, concat_float_input(kConcatFirst + 1, 5),
                                               concat_float_input(kConcatY, 2)};  // null, misaligned, y's bytes
  EXPECT_EQ(hardact::concatenate(garbage, 3, 0, static_cast<float*>(nullptr)), cudaSuccess);
  EXPECT_EQ(hardact::concatenate(garbage, 3, 0, concat_fake_address<float>(kConcatY)), cudaSuccess);
  EXPECT_EQ(hardact::concatenate(garbage, 3, 0, concat_fake_address<float>(kConcatY + 2)), cudaSuccess);
  // No rows comes before y's size: rows of any length, even ones whose sum wraps around.
  const ConcatenationInput<float> huge[] = {{nullptr, SIZE_MAX}, {nullptr, 2}};
  EXPECT_EQ(hardact::concatenate(huge, 2, 0, static_cast<float*>(nullptr)), cudaSuccess);
}

TEST(HostConcatenateContract, RowsOfNoElementsLookAtNoPointer) {
  const ConcatenationInput<float> empty[] = {{nullptr, 0}, concat_float_input(kConcatFirst + 1, 0),
                                             concat_float_input(kConcatY, 0)};
  for (const std::size_t rows : {std::size_t{1}, std::size_t{1000}, SIZE_MAX}) {
    EXPECT_EQ(hardact::concatenate(empty, 3, rows, static_cast<float*>(nullptr)), cudaSuccess) << rows << " rows";
    EXPECT_EQ(hardact::concatenate(empty, 3, rows, concat_fake_address<float>(kConcatY + 1)), cudaSuccess)
        << rows << " rows";
    EXPECT_EQ(hardact::concatenate(empty, 1, rows, static_cast<float*>(nullptr)), cudaSuccess) << rows << " rows";
  }
}

// y's size is refused before any pointer is looked at (all null here); a y one element under the
// bound passes on to the pointer checks, where the null y is refused.
TEST(HostConcatenateContract, SizeBoundBeforeThePointers) {
  constexpr std::size_t kBound = std::size_t{1} << 62;  // bytes
  const ConcatenationInput<float> exactly[] = {{nullptr, std::size_t{1} << 29}};
  EXPECT_EQ(hardact::concatenate(exactly, 1, std::size_t{1} << 31, static_cast<float*>(nullptr)),
            cudaErrorNotSupported);
  const ConcatenationInput<float> under[] = {{nullptr, (std::size_t{1} << 29) - 1}};
  EXPECT_EQ(hardact::concatenate(under, 1, std::size_t{1} << 31, static_cast<float*>(nullptr)), cudaErrorInvalidValue);

  // Rows of 3 floats: 2^62 - 4 bytes in (2^60 - 1) / 3 rows, one row more is over.
  const ConcatenationInput<float> three[] = {{nullptr, 1}, {nullptr, 2}};
  const std::size_t most_rows = ((std::size_t{1} << 60) - 1) / 3;
  EXPECT_EQ(hardact::concatenate(three, 2, most_rows, static_cast<float*>(nullptr)), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::concatenate(three, 2, most_rows + 1, static_cast<float*>(nullptr)), cudaErrorNotSupported);

  // 3-byte elements: 2^62 is no multiple of 3, so (2^62 - 1) / 3 of them are 2^62 - 1 bytes.
  const ConcatenationInput<ConcatHostTriple> triples[] = {{nullptr, 1}};
  const std::size_t most_triples = (kBound - 1) / 3;
  EXPECT_EQ(hardact::concatenate(triples, 1, most_triples, static_cast<ConcatHostTriple*>(nullptr)),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::concatenate(triples, 1, most_triples + 1, static_cast<ConcatHostTriple*>(nullptr)),
            cudaErrorNotSupported);
  const ConcatenationInput<ConcatHostTriple> one_wide_row[] = {{nullptr, most_triples}};
  EXPECT_EQ(hardact::concatenate(one_wide_row, 1, 1, static_cast<ConcatHostTriple*>(nullptr)), cudaErrorInvalidValue);
}

// Sizes whose products or sums wrap around 64 bits must not pass for small ones.
TEST(HostConcatenateContract, SizesThatWrapAroundRefused) {
  const auto y = static_cast<std::uint8_t*>(nullptr);
  const ConcatenationInput<std::uint8_t> sum_wraps[] = {{nullptr, SIZE_MAX}, {nullptr, 2}};  // sums to 1
  EXPECT_EQ(hardact::concatenate(sum_wraps, 2, 1, y), cudaErrorNotSupported);
  const ConcatenationInput<std::uint8_t> halves[] = {{nullptr, std::size_t{1} << 61}, {nullptr, std::size_t{1} << 61}};
  EXPECT_EQ(hardact::concatenate(halves, 2, 1, y), cudaErrorNotSupported);
  EXPECT_EQ(hardact::concatenate(halves, 1, 2, y), cudaErrorNotSupported);
  const ConcatenationInput<std::uint8_t> wide[] = {{nullptr, std::size_t{1} << 32}};
  EXPECT_EQ(hardact::concatenate(wide, 1, std::size_t{1} << 32, y), cudaErrorNotSupported);  // 2^64 bytes: 0
  const ConcatenationInput<std::uint8_t> narrow[] = {{nullptr, 1}};
  EXPECT_EQ(hardact::concatenate(narrow, 1, SIZE_MAX, y), cudaErrorNotSupported);
  const ConcatenationInput<double> doubles[] = {{nullptr, std::size_t{1} << 61}};  // 2^64 bytes a row
  EXPECT_EQ(hardact::concatenate(doubles, 1, 1, static_cast<double*>(nullptr)), cudaErrorNotSupported);
}

TEST(HostConcatenateContract, NullOrMisalignedYRefused) {
  const ConcatenationInput<float> inputs[] = {concat_float_input(kConcatFirst, 3),
                                              concat_float_input(kConcatSecond, 5)};
  EXPECT_EQ(hardact::concatenate(inputs, 2, 4, static_cast<float*>(nullptr)), cudaErrorInvalidValue);
  for (const std::uintptr_t off : {1u, 2u, 3u}) {
    EXPECT_EQ(hardact::concatenate(inputs, 2, 4, concat_fake_address<float>(kConcatY + off)), cudaErrorInvalidValue)
        << "y " << off << " bytes off";
  }
  const ConcatenationInput<double> doubles[] = {{concat_fake_address<const double>(kConcatFirst), 2}};
  EXPECT_EQ(hardact::concatenate(doubles, 1, 4, concat_fake_address<double>(kConcatY + 4)), cudaErrorInvalidValue);
  const ConcatenationInput<__nv_bfloat16> halves[] = {{concat_fake_address<const __nv_bfloat16>(kConcatFirst), 2}};
  EXPECT_EQ(hardact::concatenate(halves, 1, 4, concat_fake_address<__nv_bfloat16>(kConcatY + 1)),
            cudaErrorInvalidValue);
  // y's 128 bytes would run past the top of the address space.
  EXPECT_EQ(hardact::concatenate(inputs, 2, 4, concat_fake_address<float>(UINTPTR_MAX - 63)), cudaErrorInvalidValue);
}

TEST(HostConcatenateContract, NullOrMisalignedInputRefused) {
  float* const y = concat_fake_address<float>(kConcatY);
  const ConcatenationInput<float> null_first[] = {{nullptr, 3}, concat_float_input(kConcatSecond, 5)};
  EXPECT_EQ(hardact::concatenate(null_first, 2, 4, y), cudaErrorInvalidValue);
  const ConcatenationInput<float> null_last[] = {concat_float_input(kConcatFirst, 3), {nullptr, 5}};
  EXPECT_EQ(hardact::concatenate(null_last, 2, 4, y), cudaErrorInvalidValue);
  for (const std::uintptr_t off : {1u, 2u, 3u}) {
    const ConcatenationInput<float> misaligned[] = {concat_float_input(kConcatFirst, 3),
                                                    concat_float_input(kConcatSecond + off, 5)};
    EXPECT_EQ(hardact::concatenate(misaligned, 2, 4, y), cudaErrorInvalidValue) << "input " << off << " bytes off";
  }
  const ConcatenationInput<double> doubles[] = {{concat_fake_address<const double>(kConcatFirst + 4), 2}};
  EXPECT_EQ(hardact::concatenate(doubles, 1, 4, concat_fake_address<double>(kConcatY)), cudaErrorInvalidValue);
  const ConcatenationInput<__half> halves[] = {{concat_fake_address<const __half>(kConcatFirst + 3), 2}};
  EXPECT_EQ(hardact::concatenate(halves, 1, 4, concat_fake_address<__half>(kConcatY)), cudaErrorInvalidValue);
  // An input's 48 bytes would run past the top of the address space.
  const ConcatenationInput<float> at_the_top[] = {concat_float_input(UINTPTR_MAX - 31, 3)};
  EXPECT_EQ(hardact::concatenate(at_the_top, 1, 4, y), cudaErrorInvalidValue);
}

// An empty input's null data is skipped: the checks go on to the inputs after it, and refuse them.
TEST(HostConcatenateContract, EmptyInputSkippedThenTheOthersChecked) {
  float* const y = concat_fake_address<float>(kConcatY);
  const ConcatenationInput<float> then_null[] = {{nullptr, 0}, {nullptr, 5}};
  EXPECT_EQ(hardact::concatenate(then_null, 2, 4, y), cudaErrorInvalidValue);
  const ConcatenationInput<float> then_misaligned[] = {concat_float_input(kConcatFirst, 3), {nullptr, 0},
                                                       concat_float_input(kConcatSecond + 2, 5)};
  EXPECT_EQ(hardact::concatenate(then_misaligned, 3, 4, y), cudaErrorInvalidValue);
  const ConcatenationInput<float> then_overlapping[] = {{nullptr, 0}, concat_float_input(kConcatY + 4, 5)};
  EXPECT_EQ(hardact::concatenate(then_overlapping, 2, 4, y), cudaErrorInvalidValue);
  const ConcatenationInput<float> fine_inputs[] = {concat_float_input(kConcatFirst, 3), {nullptr, 0}};
  EXPECT_EQ(hardact::concatenate(fine_inputs, 2, 4, static_cast<float*>(nullptr)), cudaErrorInvalidValue);
}

// Bytes, so that the overlap is exactly one byte: inputs of 3 and 5 bytes a row, 4 rows, y 32 bytes.
TEST(HostConcatenateContract, YSharingAByteRefused) {
  constexpr std::size_t kRows = 4, kYBytes = 4 * 8;
  const std::size_t widths[] = {3, 5};
  const std::uintptr_t at[] = {kConcatFirst, kConcatSecond};
  for (int k = 0; k < 2; ++k) {
    const ConcatenationInput<std::uint8_t> inputs[] = {
        {concat_fake_address<const std::uint8_t>(at[0]), widths[0]},
        {concat_fake_address<const std::uint8_t>(at[1]), widths[1]}};
    const std::size_t bytes = kRows * widths[k];
    const std::uintptr_t overlaps[] = {at[k] - kYBytes + 1, at[k] + bytes - 1, at[k], at[k] + 1};
    for (const std::uintptr_t y : overlaps) {
      EXPECT_EQ(hardact::concatenate(inputs, 2, kRows, concat_fake_address<std::uint8_t>(y)), cudaErrorInvalidValue)
          << "y at input " << k << "'s byte " << static_cast<long long>(y - at[k]);
    }
  }
  // In floats: y on the first or the last element of an input, or the same address.
  const ConcatenationInput<float> inputs[] = {concat_float_input(kConcatFirst, 3),
                                              concat_float_input(kConcatSecond, 5)};
  float* const second = concat_fake_address<float>(kConcatSecond);
  EXPECT_EQ(hardact::concatenate(inputs, 2, 4, second), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::concatenate(inputs, 2, 4, second + 4 * 5 - 1), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::concatenate(inputs, 2, 4, second - 4 * 8 + 1), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::concatenate(inputs, 2, 4, concat_fake_address<float>(kConcatFirst) + 4), cudaErrorInvalidValue);
}

// Calls the contract lets through, shown where no GPU is present (with one, their made-up
// addresses would reach a kernel): each returns what a call with distant, aligned pointers
// returns, the error of the first CUDA call, never a refusal of the contract.
TEST(HostConcatenateContract, CallsItLetsThroughReachTheRuntime) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) {
    GTEST_SKIP() << "a GPU is present: these calls would launch kernels on made-up addresses "
                    "(device_concatenate_test runs them on real memory)";
  }
  constexpr std::size_t kRows = 4, kYBytes = 4 * 8;
  const ConcatenationInput<std::uint8_t> inputs[] = {{concat_fake_address<const std::uint8_t>(kConcatFirst), 3},
                                                     {concat_fake_address<const std::uint8_t>(kConcatSecond), 5}};
  const cudaError_t baseline = hardact::concatenate(inputs, 2, kRows, concat_fake_address<std::uint8_t>(kConcatY));
  ASSERT_NE(baseline, cudaSuccess) << "no GPU, yet a launch succeeded";
  ASSERT_NE(baseline, cudaErrorInvalidValue) << cudaGetErrorName(baseline);
  ASSERT_NE(baseline, cudaErrorNotSupported) << cudaGetErrorName(baseline);

  const std::uintptr_t adjacent[] = {kConcatFirst - kYBytes, kConcatFirst + kRows * 3, kConcatSecond - kYBytes,
                                     kConcatSecond + kRows * 5};
  for (const std::uintptr_t y : adjacent) {
    EXPECT_EQ(hardact::concatenate(inputs, 2, kRows, concat_fake_address<std::uint8_t>(y)), baseline)
        << "y next to an input, at " << std::hex << y;
  }
  std::uint8_t* const y = concat_fake_address<std::uint8_t>(kConcatY);
  const ConcatenationInput<std::uint8_t> sharing[] = {inputs[0], inputs[0],
                                                      {concat_fake_address<const std::uint8_t>(kConcatFirst + 1), 7}};
  EXPECT_EQ(hardact::concatenate(sharing, 3, kRows, y), baseline) << "inputs sharing bytes";
  // Empty inputs' data is never looked at: null, misaligned, inside y.
  const ConcatenationInput<float> with_empty[] = {
      concat_float_input(kConcatFirst, 3), {nullptr, 0}, concat_float_input(kConcatY + 1, 0),
      concat_float_input(kConcatY + 8, 0), concat_float_input(kConcatSecond, 5)};
  EXPECT_EQ(hardact::concatenate(with_empty, 5, kRows, concat_fake_address<float>(kConcatY)), baseline)
      << "empty inputs with any data";
  // One more float a row under the size bound is no refusal.
  const ConcatenationInput<float> under_bound[] = {concat_float_input(kConcatFirst, (std::size_t{1} << 29) - 1)};
  float* const far_y = concat_fake_address<float>(std::uintptr_t{1} << 62);
  EXPECT_EQ(hardact::concatenate(under_bound, 1, std::size_t{1} << 31, far_y), baseline) << "y just under 2^62 bytes";
}

}  // namespace
