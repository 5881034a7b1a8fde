// hardact::concatenate on the device, bit for bit against a host reference (plain loops over rows
// and inputs), on random bytes (NaNs of every payload included) in float, double, half, bfloat16,
// bytes and a 3-byte struct: VoVNet's concatenations, one to forty inputs (a launch per 16), rows
// and pointers that allow only 16-, 8-, 4-, 2- or 1-byte accesses, very wide rows (a contiguous
// batch of one) and a million narrow ones, empty inputs without data, inputs sharing bytes, y next
// to its inputs, no rows, refusals, a stream and a CUDA graph. Every array sits between poisoned
// guard bands; after a call every byte of every array is compared, so y's bytes past its rows and
// the inputs must be as they were. HARDACT_TEST_QUICK=1 (compute-sanitizer runs) shrinks the
// largest cases.
#include "support/device.hpp"
#include "support/device_family.hpp"  // quick_mode
#include "support/device_main.hpp"    // main()
#include "support/values.hpp"         // TestRandom

#include <hardact/concatenate.cuh>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using namespace hardact_test;
using hardact::ConcatenationInput;

/// Three bytes aligned to one: rows of them allow any access size, pointers to them any alignment.
struct ConcatTriple {
  unsigned char bytes[3];
};
static_assert(sizeof(ConcatTriple) == 3 && alignof(ConcatTriple) == 1 && std::is_trivially_copyable_v<ConcatTriple>);

using ConcatElementTypes = ::testing::Types<float, double, __half, __nv_bfloat16, std::uint8_t, ConcatTriple>;

struct ConcatTypeNames {
  template <class T>
  static std::string GetName(int) {
    if constexpr (std::is_same_v<T, float>) return "float";
    if constexpr (std::is_same_v<T, double>) return "double";
    if constexpr (std::is_same_v<T, __half>) return "half";
    if constexpr (std::is_same_v<T, __nv_bfloat16>) return "bfloat16";
    if constexpr (std::is_same_v<T, std::uint8_t>) return "uint8";
    return "triple";
  }
};

/// `count` elements of random bytes: every bit pattern, NaNs of any payload among them.
template <class T>
std::vector<T> concat_random(std::size_t count, std::uint64_t seed) {
  std::vector<T> values(count);
  unsigned char* const bytes = static_cast<unsigned char*>(static_cast<void*>(values.data()));
  const std::size_t size = count * sizeof(T);
  TestRandom random(seed);
  for (std::size_t i = 0; i < size; i += 8) {
    const std::uint64_t word = random.next();
    std::memcpy(bytes + i, &word, std::min<std::size_t>(8, size - i));
  }
  return values;
}

/// Where an input's rows lie: element `at` of array `array` on, `width` elements a row; an array
/// of kConcatNoData gives the input null data.
struct ConcatPiece {
  int array;
  std::size_t at;
  std::size_t width;
};
constexpr int kConcatNoData = -1;

/// The device arrays of a case, each between guard bands, with the host copies of what they hold.
/// Inputs point anywhere into them, and y is one of them.
template <class T>
class ConcatArrays {
 public:
  /// A new array of `count` random elements, `offset` elements past a 256-byte boundary: its index.
  int add(std::size_t count, std::size_t offset, std::uint64_t seed) {
    device_.push_back(std::make_unique<GuardedBuffer<T>>(count, offset));
    host_.push_back(concat_random<T>(count, seed));
    return static_cast<int>(device_.size()) - 1;
  }
  /// New random contents for an array's host copy (upload() sends them).
  void refill(int array, std::uint64_t seed) {
    host_[index(array)] = concat_random<T>(host_[index(array)].size(), seed);
  }

  cudaError_t upload() {
    for (std::size_t i = 0; i < device_.size(); ++i) {
      if (device_[i]->status() != cudaSuccess) return device_[i]->status();
      if (const cudaError_t status = device_[i]->upload(host_[i]); status != cudaSuccess) return status;
    }
    return cudaSuccess;
  }

  T* device(int array, std::size_t at) { return device_[index(array)]->data() + at; }
  const std::vector<T>& host(int array) const { return host_[index(array)]; }

  std::vector<ConcatenationInput<T>> inputs(const std::vector<ConcatPiece>& pieces) {
    std::vector<ConcatenationInput<T>> inputs;
    for (const ConcatPiece& p : pieces) {
      inputs.push_back({p.array == kConcatNoData ? nullptr : static_cast<const T*>(device(p.array, p.at)), p.width});
    }
    return inputs;
  }

  /// Array `y_array` as the reference leaves it: what it holds, with `rows` rows of the pieces side
  /// by side from element `y_at` on.
  std::vector<T> expected(std::size_t rows, const std::vector<ConcatPiece>& pieces, int y_array,
                          std::size_t y_at) const {
    std::vector<T> y = host(y_array);
    std::size_t total = 0;
    for (const ConcatPiece& p : pieces) total += p.width;
    std::size_t column = 0;
    for (const ConcatPiece& p : pieces) {
      if (p.width == 0) continue;
      const std::vector<T>& x = host(p.array);
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t e = 0; e < p.width; ++e) y[y_at + r * total + column + e] = x[p.at + r * p.width + e];
      }
      column += p.width;
    }
    return y;
  }

  /// Every array downloaded and compared with `y` (array `y_array`) or with its host copy, byte
  /// for byte, guard bands included.
  ::testing::AssertionResult hold(int y_array, const std::vector<T>& y) {
    for (std::size_t i = 0; i < device_.size(); ++i) {
      std::vector<T> got;
      if (const cudaError_t status = device_[i]->download(got); status != cudaSuccess) {
        return ::testing::AssertionFailure() << "download: " << cudaGetErrorName(status);
      }
      const std::vector<T>& want = static_cast<int>(i) == y_array ? y : host_[i];
      if (std::memcmp(static_cast<const void*>(got.data()), static_cast<const void*>(want.data()),
                      want.size() * sizeof(T)) != 0) {
        std::size_t wrong = 0, first = 0;
        for (std::size_t e = 0; e < want.size(); ++e) {
          if (std::memcmp(static_cast<const void*>(&got[e]), static_cast<const void*>(&want[e]), sizeof(T)) != 0 &&
              wrong++ == 0) {
            first = e;
          }
        }
        return ::testing::AssertionFailure() << (static_cast<int>(i) == y_array ? "y's array" : "an input's array")
                                             << " (array " << i << "): " << wrong << " of " << want.size()
                                             << " elements differ, the first at element " << first;
      }
      if (!device_[i]->guards_intact()) {
        return ::testing::AssertionFailure() << "array " << i << "'s guards overwritten";
      }
    }
    return ::testing::AssertionSuccess();
  }

 private:
  std::size_t index(int array) const { return static_cast<std::size_t>(array); }
  std::vector<std::unique_ptr<GuardedBuffer<T>>> device_;
  std::vector<std::vector<T>> host_;
};

std::string concat_describe(std::size_t rows, const std::vector<ConcatPiece>& pieces, std::size_t y_at) {
  std::string s = std::to_string(rows) + " rows of";
  for (const ConcatPiece& p : pieces) {
    s += " " + std::to_string(p.width) + (p.array == kConcatNoData ? "(no data)" : "@" + std::to_string(p.at));
  }
  return s + ", y @" + std::to_string(y_at);
}

/// Concatenates the pieces' rows into array `y_array` from element `y_at` on, on the legacy stream,
/// and compares every array with the reference.
template <class T>
void concat_check(ConcatArrays<T>& arrays, std::size_t rows, const std::vector<ConcatPiece>& pieces, int y_array,
                  std::size_t y_at) {
  SCOPED_TRACE(concat_describe(rows, pieces, y_at));
  HARDACT_ASSERT_CUDA(arrays.upload());
  const std::vector<ConcatenationInput<T>> inputs = arrays.inputs(pieces);
  HARDACT_ASSERT_CUDA(hardact::concatenate(inputs.data(), inputs.size(), rows, arrays.device(y_array, y_at)));
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(arrays.hold(y_array, arrays.expected(rows, pieces, y_array, y_at)));
}

/// Inputs of these widths, each an array of its own `offsets[k]` elements past a 256-byte boundary
/// (none given: aligned), a width of 0 an input with null data; y an array `y_offset` past one.
template <class T>
void concat_check_widths(std::size_t rows, const std::vector<std::size_t>& widths, std::uint64_t seed,
                         const std::vector<std::size_t>& offsets = {}, std::size_t y_offset = 0) {
  ConcatArrays<T> arrays;
  std::vector<ConcatPiece> pieces;
  for (std::size_t k = 0; k < widths.size(); ++k) {
    if (widths[k] == 0) {
      pieces.push_back({kConcatNoData, 0, 0});
      continue;
    }
    const int array = arrays.add(rows * widths[k], offsets.empty() ? 0 : offsets[k], seed * 1000 + k);
    pieces.push_back({array, 0, widths[k]});
  }
  const std::size_t total = std::accumulate(widths.begin(), widths.end(), std::size_t{0});
  const int y = arrays.add(rows * total, y_offset, seed * 1000 + 999);
  concat_check(arrays, rows, pieces, y, 0);
}

template <class T>
class DeviceConcatenate : public ::testing::Test {};
TYPED_TEST_SUITE(DeviceConcatenate, ConcatElementTypes, ConcatTypeNames);

// VoVNet's one-shot aggregations at batch 8, channels last: a stage's input and its three layers.
TEST(DeviceConcatenate, VoVNetStagesBFloat16) {
  HARDACT_REQUIRE_DEVICE();
  const bool quick = family::quick_mode();
  concat_check_widths<__nv_bfloat16>((quick ? 1 : 8) * 56 * 56, {64, 64, 64, 64}, 1);
  if (::testing::Test::HasFatalFailure()) return;
  concat_check_widths<__nv_bfloat16>(8 * 28 * 28, {112, 80, 80, 80}, 2);
}

TYPED_TEST(DeviceConcatenate, VoVNetLastStages) {
  HARDACT_REQUIRE_DEVICE();
  concat_check_widths<TypeParam>(8 * 14 * 14, {256, 96, 96, 96}, 3);
  if (::testing::Test::HasFatalFailure()) return;
  concat_check_widths<TypeParam>(8 * 7 * 7, {384, 112, 112, 112}, 4);
}

TYPED_TEST(DeviceConcatenate, OneAndTwoInputs) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  concat_check_widths<T>(513, {37, 91}, 10);
  if (::testing::Test::HasFatalFailure()) return;
  concat_check_widths<T>(1000, {45}, 11);  // a plain copy
  if (::testing::Test::HasFatalFailure()) return;
  concat_check_widths<T>(3, {1}, 12);
  if (::testing::Test::HasFatalFailure()) return;
  concat_check_widths<T>(1, {7, 5}, 13);
}

// Inputs past 16 take a launch per 16: exactly 16, one over, 40 (the last launch partial), of
// widths that mix access sizes and of 16-byte multiples.
TYPED_TEST(DeviceConcatenate, ManyInputsSeveralLaunches) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  for (const std::size_t count : {std::size_t{16}, std::size_t{17}, std::size_t{40}}) {
    std::vector<std::size_t> mixed, wide;
    for (std::size_t k = 0; k < count; ++k) {
      mixed.push_back(1 + (k * 5) % 11);
      wide.push_back(48 * (1 + k % 3));
    }
    concat_check_widths<T>(129, mixed, 20 + count);
    if (::testing::Test::HasFatalFailure()) return;
    concat_check_widths<T>(37, wide, 60 + count);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

/// The widest access a row of `width` elements of T allows: the lowest set bit of its bytes, at most 16.
template <class T>
std::size_t concat_row_access(std::size_t width) {
  const std::size_t bytes = width * sizeof(T);
  return std::min<std::size_t>(16, bytes & (~bytes + 1));
}

// Each access size by what forces it: the rows' bytes (an odd multiple of the size), an input's
// address, y's address. Elements of T such that `size` bytes are a whole number of them (lcm / sizeof).
TYPED_TEST(DeviceConcatenate, EveryAccessSize) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const std::size_t rows = 777;
  std::uint64_t seed = 100;
  const std::size_t vector_step = std::lcm(std::size_t{16}, sizeof(T)) / sizeof(T);  // a 16-byte multiple
  for (const std::size_t size : {std::size_t{16}, std::size_t{8}, std::size_t{4}, std::size_t{2}, std::size_t{1}}) {
    const std::size_t step = std::lcm(size, sizeof(T)) / sizeof(T);
    if (concat_row_access<T>(step) != size) continue;  // not one T's rows can force (8-byte rows of double)
    SCOPED_TRACE(std::to_string(size) + "-byte access");
    concat_check_widths<T>(rows, {step, 3 * step, step}, seed++);
    if (::testing::Test::HasFatalFailure()) return;
    if (size == 16) continue;
    concat_check_widths<T>(rows, {vector_step, 2 * vector_step}, seed++, {0, step});
    if (::testing::Test::HasFatalFailure()) return;
    concat_check_widths<T>(rows, {2 * vector_step, vector_step}, seed++, {step, 0});
    if (::testing::Test::HasFatalFailure()) return;
    concat_check_widths<T>(rows, {vector_step, vector_step}, seed++, {0, 0}, step);
    if (::testing::Test::HasFatalFailure()) return;
  }
  // One element off a 16-byte boundary: an input, then y, then both.
  concat_check_widths<T>(rows, {vector_step, vector_step}, seed++, {1, 0});
  if (::testing::Test::HasFatalFailure()) return;
  concat_check_widths<T>(rows, {vector_step, vector_step}, seed++, {0, 0}, 1);
  if (::testing::Test::HasFatalFailure()) return;
  concat_check_widths<T>(rows, {vector_step, 3, vector_step}, seed++, {1, 2, 3}, 1);
}

// Rows longer than a block's share: a contiguous batch of one (NCHW tensors concatenated along C),
// and a few rows split into segments.
TYPED_TEST(DeviceConcatenate, VeryWideRows) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const bool quick = family::quick_mode();
  concat_check_widths<T>(1, {quick ? 300000u : 3000000u, quick ? 123457u : 1234567u}, 200);
  if (::testing::Test::HasFatalFailure()) return;
  concat_check_widths<T>(5, {20000, 3001, 1}, 201);
  if (::testing::Test::HasFatalFailure()) return;
  concat_check_widths<T>(3, {4096, 8192}, 202, {1, 0});
}

TYPED_TEST(DeviceConcatenate, ManyNarrowRows) {
  HARDACT_REQUIRE_DEVICE();
  concat_check_widths<TypeParam>(family::quick_mode() ? 100003 : 1000003, {1, 2, 3}, 300);
}

// An input of no elements adds nothing and its data is not looked at: null, in the middle, first
// and last; pointing into y; a whole launch's 16 inputs empty, before and after one with elements.
TYPED_TEST(DeviceConcatenate, EmptyInputsWithoutData) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  concat_check_widths<T>(301, {5, 0, 7}, 400);
  if (::testing::Test::HasFatalFailure()) return;
  concat_check_widths<T>(301, {0, 5, 0, 0, 7, 0}, 401);
  if (::testing::Test::HasFatalFailure()) return;
  std::vector<std::size_t> first_launch_empty(20, 0), second_launch_empty(20, 0);
  for (std::size_t k = 16; k < 20; ++k) first_launch_empty[k] = k - 13;
  for (std::size_t k = 0; k < 16; k += 5) second_launch_empty[k] = k + 2;
  concat_check_widths<T>(65, first_launch_empty, 402);
  if (::testing::Test::HasFatalFailure()) return;
  concat_check_widths<T>(65, second_launch_empty, 403);
  if (::testing::Test::HasFatalFailure()) return;

  ConcatArrays<T> arrays;
  const std::size_t rows = 99;
  const int a = arrays.add(rows * 6, 0, 404), y = arrays.add(rows * 10, 0, 405);
  concat_check(arrays, rows, {{a, 0, 6}, {y, 0, 0}, {y, 1, 0}, {a, 0, 4}}, y, 0);
}

// Inputs may share bytes with each other: one array read twice, and again shifted by an element
// and with a shorter row.
TYPED_TEST(DeviceConcatenate, InputsSharingBytes) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  ConcatArrays<T> arrays;
  const std::size_t rows = 257, width = 24;
  const int a = arrays.add(rows * width + 1, 0, 500), y = arrays.add(rows * (4 * width - 1), 0, 501);
  concat_check(arrays, rows, {{a, 0, width}, {a, 0, width}}, y, 0);
  if (::testing::Test::HasFatalFailure()) return;
  concat_check(arrays, rows, {{a, 0, width}, {a, 1, width}, {a, 0, width}, {a, 0, width - 1}}, y, 0);
}

// y right after one input's last byte and right before another's first, in one array: no overlap,
// so the call runs, and the neighbours keep their bytes.
TYPED_TEST(DeviceConcatenate, YNextToItsInputs) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  ConcatArrays<T> arrays;
  const std::size_t rows = 131, w0 = 12, w1 = 20, total = w0 + w1;
  const int block = arrays.add(rows * (w0 + total + w1), 0, 600);
  concat_check(arrays, rows, {{block, 0, w0}, {block, rows * (w0 + total), w1}}, block, rows * w0);
}

// No rows, or rows of no elements: cudaSuccess, and y (random bytes, a sentinel) keeps every byte,
// whatever the pointers.
TYPED_TEST(DeviceConcatenate, NothingToCopyWritesNothing) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  ConcatArrays<T> arrays;
  const int a = arrays.add(64 * 8, 0, 700), y = arrays.add(64 * 8, 0, 701);
  HARDACT_ASSERT_CUDA(arrays.upload());
  const std::vector<ConcatenationInput<T>> inputs = arrays.inputs({{a, 0, 4}, {a, 0, 4}});
  T* const out = arrays.device(y, 0);
  EXPECT_EQ(hardact::concatenate(inputs.data(), inputs.size(), 0, out), cudaSuccess);
  const ConcatenationInput<T> null_data[] = {{nullptr, 4}, {nullptr, 4}};
  EXPECT_EQ(hardact::concatenate(null_data, 2, 0, static_cast<T*>(nullptr)), cudaSuccess);
  const std::vector<ConcatenationInput<T>> empty = arrays.inputs({{a, 0, 0}, {kConcatNoData, 0, 0}});
  EXPECT_EQ(hardact::concatenate(empty.data(), empty.size(), 64, out), cudaSuccess);
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(arrays.hold(y, arrays.host(y)));
}

// Refused calls launch nothing, even where the refused input is in the second launch's share.
TYPED_TEST(DeviceConcatenate, RefusalsWriteNothing) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  ConcatArrays<T> arrays;
  const std::size_t rows = 50, input_elements = rows * 3, y_elements = rows * 17 * 3;
  std::vector<ConcatPiece> pieces;
  for (int k = 0; k < 17; ++k) pieces.push_back({arrays.add(input_elements, 0, 800 + static_cast<unsigned>(k)), 0, 3});
  // y with an input's room on either side, for the input that overlaps it by one element.
  const int y = arrays.add(input_elements + y_elements + input_elements, 0, 850);
  HARDACT_ASSERT_CUDA(arrays.upload());
  std::vector<ConcatenationInput<T>> inputs = arrays.inputs(pieces);
  T* const out = arrays.device(y, input_elements);
  inputs[16].data = arrays.device(y, input_elements + y_elements - 1);  // its first element on y's last
  EXPECT_EQ(hardact::concatenate(inputs.data(), inputs.size(), rows, out), cudaErrorInvalidValue);
  inputs[16].data = arrays.device(y, 1);  // its last element on y's first
  EXPECT_EQ(hardact::concatenate(inputs.data(), inputs.size(), rows, out), cudaErrorInvalidValue);
  inputs[16].data = nullptr;
  EXPECT_EQ(hardact::concatenate(inputs.data(), inputs.size(), rows, out), cudaErrorInvalidValue);
  if constexpr (alignof(T) > 1) {
    inputs[16] = inputs[15];
    inputs[16].data = reinterpret_cast<const T*>(reinterpret_cast<const unsigned char*>(inputs[15].data) + 1);
    EXPECT_EQ(hardact::concatenate(inputs.data(), inputs.size(), rows, out), cudaErrorInvalidValue);
    inputs[16] = inputs[15];
    EXPECT_EQ(hardact::concatenate(inputs.data(), inputs.size(), rows,
                                   reinterpret_cast<T*>(reinterpret_cast<unsigned char*>(out) + 1)),
              cudaErrorInvalidValue);
  }
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(arrays.hold(y, arrays.host(y)));
}

// On a non-blocking stream (no implicit ordering with the legacy stream) the copy is done once that
// stream alone is synchronised. That it runs on the stream given, not another, the graph case shows:
// a capture records its node.
TYPED_TEST(DeviceConcatenate, OnANonBlockingStream) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  ConcatArrays<T> arrays;
  const std::size_t rows = 1001;
  const int a = arrays.add(rows * 33, 0, 900), b = arrays.add(rows * 70, 1, 901), y = arrays.add(rows * 103, 0, 902);
  const std::vector<ConcatPiece> pieces = {{a, 0, 33}, {b, 0, 70}};
  HARDACT_ASSERT_CUDA(arrays.upload());
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());  // the uploads and guards, on the legacy stream
  Stream stream;
  HARDACT_ASSERT_CUDA(stream.status());
  const std::vector<ConcatenationInput<T>> inputs = arrays.inputs(pieces);
  HARDACT_ASSERT_CUDA(hardact::concatenate(inputs.data(), inputs.size(), rows, arrays.device(y, 0), stream.get()));
  HARDACT_ASSERT_CUDA(cudaStreamSynchronize(stream.get()));
  EXPECT_TRUE(arrays.hold(y, arrays.expected(rows, pieces, y, 0)));
}

// One launch captured in a graph: replays copy what the call described when captured (the host
// array of inputs is rewritten after capture), reading the inputs' bytes as they are at replay.
TYPED_TEST(DeviceConcatenate, GraphReplaysTheCapturedCall) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  ConcatArrays<T> arrays;
  const std::size_t rows = 300;
  const int a = arrays.add(rows * 24, 0, 1000), b = arrays.add(rows * 9, 3, 1001), c = arrays.add(rows * 40, 0, 1002);
  const int decoy = arrays.add(rows * 80, 0, 1003), y = arrays.add(rows * 73, 0, 1004);
  const std::vector<ConcatPiece> pieces = {{a, 0, 24}, {kConcatNoData, 0, 0}, {b, 0, 9}, {c, 0, 40}};
  HARDACT_ASSERT_CUDA(arrays.upload());
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  Stream stream;
  HARDACT_ASSERT_CUDA(stream.status());
  std::vector<ConcatenationInput<T>> inputs = arrays.inputs(pieces);

  HARDACT_ASSERT_CUDA(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeGlobal));
  const cudaError_t captured = hardact::concatenate(inputs.data(), inputs.size(), rows, arrays.device(y, 0),
                                                    stream.get());
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream.get(), &graph);  // always end the capture
  std::unique_ptr<CUgraph_st, decltype(&cudaGraphDestroy)> graph_owner(graph, &cudaGraphDestroy);
  HARDACT_ASSERT_CUDA(captured);
  HARDACT_ASSERT_CUDA(ended);
  std::size_t nodes = 0;
  HARDACT_ASSERT_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
  EXPECT_EQ(nodes, 1u) << "up to 16 inputs are one launch";
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(arrays.hold(y, arrays.host(y))) << "the capture ran the copy";

  for (ConcatenationInput<T>& input : inputs) input = {arrays.device(decoy, 0), 80 - input.row_elements};
  cudaGraphExec_t exec = nullptr;
  HARDACT_ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  std::unique_ptr<CUgraphExec_st, decltype(&cudaGraphExecDestroy)> exec_owner(exec, &cudaGraphExecDestroy);
  for (int replay = 0; replay < 2; ++replay) {
    SCOPED_TRACE("replay " + std::to_string(replay));
    if (replay == 1) {  // new input bytes, y back to its sentinel
      for (const int array : {a, b, c}) arrays.refill(array, 1010 + static_cast<unsigned>(array));
      HARDACT_ASSERT_CUDA(arrays.upload());
      HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
    }
    HARDACT_ASSERT_CUDA(cudaGraphLaunch(exec, stream.get()));
    HARDACT_ASSERT_CUDA(cudaStreamSynchronize(stream.get()));
    EXPECT_TRUE(arrays.hold(y, arrays.expected(rows, pieces, y, 0)));
  }
}

}  // namespace
