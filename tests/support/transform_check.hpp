// Test support for device tests of hardact::transform: runs one call on poisoned device memory
// and checks every output element against a host reference, the untouched memory around it
// (payload slack and guard bands) and the input. Generic over the element type, the operation
// and its reference.
#pragma once

#include "support/bits.hpp"
#include "support/compare.hpp"
#include "support/device.hpp"
#include "support/launch_batch.hpp"
#include "support/paths.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hardact_test {

/// HARDACT_TEST_QUICK=1 (set by scripts/gpu-check under compute-sanitizer) shrinks the sweeps.
inline bool quick_mode() {
  const char* value = std::getenv("HARDACT_TEST_QUICK");
  return value != nullptr && std::string(value) == "1";
}

template <class T>
bool is_poison(T value) {
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  for (const unsigned char byte : bytes)
    if (byte != kPoisonByte) return false;
  return true;
}

/// random_values() for device runs: the poison pattern itself is replaced, so an output element
/// that was never written can never equal its expected value.
template <class T>
std::vector<T> device_inputs(std::size_t count, std::uint64_t seed, std::initializer_list<double> extra_points = {}) {
  std::vector<T> values = random_values<T>(count, seed, extra_points);
  for (T& value : values)
    if (is_poison(value)) value = from_double<T>(0.5);
  return values;
}

/// The first element of region[begin, end) that does not hold the poison pattern, or end; whole
/// 4 KiB stretches compared at once (memcmp), the usual case.
template <class T>
std::size_t first_unpoisoned(const std::vector<T>& region, std::size_t begin, std::size_t end) {
  constexpr std::size_t kStretch = 4096 / sizeof(T);
  static const std::vector<unsigned char> poison(kStretch * sizeof(T), kPoisonByte);
  for (std::size_t start = begin; start < end; start += kStretch) {
    const std::size_t stop = std::min(end, start + kStretch);
    if (std::memcmp(region.data() + start, poison.data(), (stop - start) * sizeof(T)) == 0) continue;
    for (std::size_t i = start; i < stop; ++i)
      if (!is_poison(region[i])) return i;
  }
  return end;
}

/// Checks a downloaded region: elements [offset, offset + inputs.size()) equal reference(input),
/// every other element still holds the poison pattern.
template <class T, class Reference>
::testing::AssertionResult region_holds_results(const std::vector<T>& region, std::size_t offset,
                                                const std::vector<T>& inputs, const Reference& reference, NanBits nan) {
  const std::size_t n = inputs.size();
  const std::size_t head_end = std::min(offset, region.size()), tail_begin = std::min(offset + n, region.size());
  std::size_t written = first_unpoisoned(region, 0, head_end);
  if (written == head_end) written = first_unpoisoned(region, tail_begin, region.size());
  if (written != region.size()) {
    return ::testing::AssertionFailure() << "element " << written << " outside the output range [" << offset << ", "
                                         << offset + n << ") was written: " << describe(region[written]);
  }
  const std::vector<T> outputs(region.begin() + static_cast<std::ptrdiff_t>(offset),
                               region.begin() + static_cast<std::ptrdiff_t>(offset + n));
  ::testing::AssertionResult result = outputs_match_reference(inputs, outputs, reference, nan);
  if (result) return result;
  std::size_t unwritten = 0;
  for (const T value : outputs) unwritten += is_poison(value) ? 1 : 0;
  if (unwritten > 0) result << "\n  " << unwritten << " output elements still hold the poison pattern";
  return result;
}

/// Input and output device arrays with room for `capacity` elements after up to `max_offset`
/// leading elements each, between poisoned guard bands. One rig serves many runs.
template <class T>
class TransformRig {
 public:
  TransformRig(std::size_t capacity, std::size_t max_offset)
      : capacity_(capacity), max_offset_(max_offset), in_(capacity + max_offset), out_(capacity + max_offset) {}

  cudaError_t status() const { return in_.status() != cudaSuccess ? in_.status() : out_.status(); }

  /// run_on_path for every path a call at VecWidth can take (both for the automatic width).
  template <int VecWidth, class Op, class Reference>
  ::testing::AssertionResult run(const Op& op, const Reference& reference, NanBits nan, const std::vector<T>& inputs,
                                 std::size_t in_offset, std::size_t out_offset, bool in_place,
                                 cudaStream_t stream = nullptr) {
    for (const TransformPath path : paths_under_test<VecWidth>()) {
      const ScopedTransformPath forced(path);
      ::testing::AssertionResult result =
          run_on_path<VecWidth>(op, reference, nan, inputs, in_offset, out_offset, in_place, stream);
      if (!result) return result << " [" << path_name(path) << "]";
    }
    return ::testing::AssertionSuccess();
  }

  /// transform<VecWidth>(op, in + in_offset, out + out_offset, inputs.size(), stream), or in
  /// place at out + out_offset, on a freshly poisoned output; then checks everything.
  template <int VecWidth, class Op, class Reference>
  ::testing::AssertionResult run_on_path(const Op& op, const Reference& reference, NanBits nan,
                                         const std::vector<T>& inputs, std::size_t in_offset, std::size_t out_offset,
                                         bool in_place, cudaStream_t stream) {
    const std::size_t n = inputs.size();
    auto failure = [&](const std::string& what) {
      return ::testing::AssertionFailure() << what << " (n=" << n << ", in offset " << in_offset << ", out offset "
                                           << out_offset << (in_place ? ", in place" : "") << ")";
    };
    if (n > capacity_ || in_offset > max_offset_ || out_offset > max_offset_) return failure("rig too small");
    if (in_place) in_offset = out_offset;

    T* const out = out_.data() + out_offset;
    T* const in = in_place ? out : in_.data() + in_offset;
    cudaError_t status = out_.poison_payload();
    if (status == cudaSuccess && n > 0) {
      status = cudaMemcpy(in, inputs.data(), n * sizeof(T), cudaMemcpyHostToDevice);
    }
    if (status != cudaSuccess) return failure(std::string("setup: ") + cudaGetErrorName(status));

    status = hardact::transform<VecWidth>(op, static_cast<const T*>(in), out, n, stream);
    if (status != cudaSuccess) return failure(std::string("transform returned ") + cudaGetErrorName(status));
    status = stream != nullptr ? cudaStreamSynchronize(stream) : cudaDeviceSynchronize();
    if (status == cudaSuccess) status = cudaGetLastError();
    if (status != cudaSuccess) return failure(std::string("kernel failed: ") + cudaGetErrorName(status));

    std::vector<T> region;
    status = out_.download(region);
    if (status != cudaSuccess) return failure(std::string("download: ") + cudaGetErrorName(status));
    ::testing::AssertionResult result = region_holds_results(region, out_offset, inputs, reference, nan);
    if (!result) return result << "\n  (n=" << n << ", in offset " << in_offset << ", out offset " << out_offset
                               << (in_place ? ", in place" : "") << ")";
    if (!out_.guards_intact()) return failure("output guard band overwritten");

    if (!in_place) {  // the input is const: it must come back exactly as uploaded
      std::vector<T> input_region;
      status = in_.download(input_region);
      if (status != cudaSuccess) return failure(std::string("download input: ") + cudaGetErrorName(status));
      for (std::size_t i = 0; i < n; ++i) {
        if (to_bits(input_region[in_offset + i]) != to_bits(inputs[i])) {
          return failure("input element " + std::to_string(i) + " was modified");
        }
      }
      if (!in_.guards_intact()) return failure("input guard band overwritten");
    }
    return ::testing::AssertionSuccess();
  }

 private:
  std::size_t capacity_, max_offset_;
  GuardedBuffer<T> in_, out_;
};

/// Where a TransformBatch run sits and how messages name it: the part of a run that does not
/// depend on the element type or the operation (compiled once, not once per test case).
struct TransformPlace {
  TransformPath path;
  std::size_t n, in_offset, out_offset, capacity;  // capacity: elements of each region's payload
  bool in_place;
  ArenaRegion in, out;  // the same region in place
  std::string where;    // "(n=..., in offset ..., out offset ...[, in place]", for messages
  std::string suffix;   // the rest: the output's position, the path and the caller's note

  /// A run's place before lay_out(): offsets, capacity and the first part of its messages.
  static TransformPlace make(TransformPath path, std::size_t n, std::size_t in_offset, std::size_t out_offset,
                             bool in_place, std::size_t capacity) {
    TransformPlace place{};
    place.path = path;
    place.n = n;
    place.in_offset = in_place ? out_offset : in_offset;
    place.out_offset = out_offset;
    place.capacity = capacity;
    place.in_place = in_place;
    place.where = "(n=" + std::to_string(n) + ", in offset " + std::to_string(place.in_offset) + ", out offset " +
                  std::to_string(out_offset) + (in_place ? ", in place" : "");
    return place;
  }

  /// Lays out the run's regions in `batch` (one in place) and uploads `inputs` (n elements of
  /// `element_bytes`) at in_offset, or at out_offset in place, after making room: returns the
  /// failure of a batch that had to run for it, or of a run that does not fit `max_offset`.
  ::testing::AssertionResult lay_out(LaunchBatch& batch, const void* inputs, std::size_t element_bytes,
                                     std::size_t max_offset, const std::string& note) {
    if (n + max_offset > capacity || in_offset > max_offset || out_offset > max_offset) {
      return ::testing::AssertionFailure() << "rig too small " << where << ")";
    }
    const std::size_t payload_bytes = capacity * element_bytes;
    ::testing::AssertionResult room = batch.make_room(LaunchBatch::region_bytes(payload_bytes) * (in_place ? 1 : 2));
    if (!room) return room;
    in = batch.add_region(payload_bytes);
    batch.write_bytes(in, in_offset * element_bytes, inputs, n * element_bytes);
    out = in_place ? in : batch.add_region(payload_bytes);
    suffix = ", output " + out.position() + ") [" + path_name(path) + "]";
    if (!note.empty()) suffix += "\n  " + note;
    return ::testing::AssertionSuccess();
  }

  /// What changed in the regions outside the output, or empty: the output region's guard bands,
  /// and (not in place) the input region, which must come back exactly as uploaded.
  std::string changed_outside_output(const unsigned char* before, const unsigned char* after,
                                     std::size_t element_bytes) const {
    if (!LaunchBatch::unchanged_outside(before, after, out, 0, capacity * element_bytes)) {
      return "output guard band overwritten";
    }
    if (in_place) return {};
    return LaunchBatch::changed_input(before, after, in, element_bytes, in_offset, n, "input");
  }

  ::testing::AssertionResult failure(const std::string& what) const {
    return ::testing::AssertionFailure() << what << " " << where << suffix;
  }
};

/// One run of a TransformBatch: transform<VecWidth>(op, in + in_offset, out + out_offset, n) on
/// `path`, or in place at out + out_offset, in its own regions; checked as
/// TransformRig::run_on_path checks a run.
template <int VecWidth, class T, class Op, class Reference>
class TransformRun final : public BatchRun {
 public:
  TransformRun(const Op& op, const Reference& reference, NanBits nan, TransformPlace place)
      : BatchRun(place.where + place.suffix), op_(op), reference_(reference), nan_(nan), place_(std::move(place)) {}

  cudaError_t launch(unsigned char* arena, cudaStream_t stream) const override {
    const ScopedTransformPath forced(place_.path);
    T* const out = LaunchBatch::pointer<T>(arena, place_.out) + place_.out_offset;
    const T* const in = place_.in_place ? out : LaunchBatch::pointer<T>(arena, place_.in) + place_.in_offset;
    return hardact::transform<VecWidth>(op_, in, out, place_.n, stream);
  }

  ::testing::AssertionResult check(cudaError_t launched, const unsigned char* before,
                                   const unsigned char* after) const override {
    if (launched != cudaSuccess) return place_.failure(std::string("transform returned ") + cudaGetErrorName(launched));
    const std::vector<T> inputs = LaunchBatch::read<T>(before, place_.in, place_.in_offset, place_.n);
    const std::vector<T> region = LaunchBatch::read<T>(after, place_.out, 0, place_.capacity);
    ::testing::AssertionResult result = region_holds_results(region, place_.out_offset, inputs, reference_, nan_);
    if (!result) return result << "\n  " << place_.where << place_.suffix;
    const std::string changed = place_.changed_outside_output(before, after, sizeof(T));
    if (!changed.empty()) return place_.failure(changed);
    return ::testing::AssertionSuccess();
  }

 private:
  Op op_;
  Reference reference_;
  NanBits nan_;
  TransformPlace place_;
};

/// The part of TransformBatch that does not depend on the element type or the operation.
class TransformBatchCore {
 public:
  TransformBatchCore(std::size_t capacity, std::size_t max_offset) : capacity_(capacity), max_offset_(max_offset) {}

  /// Runs what is left in the batch.
  ::testing::AssertionResult finish() { return batch_.execute(); }

 protected:
  /// Makes a typed run from `context` (the operation, reference and NaN rule) and its place.
  using MakeRun = std::unique_ptr<const BatchRun> (*)(const void* context, TransformPlace&& place);

  /// TransformBatch::add for `inputs` (n elements of `element_bytes`) on every path a call at the
  /// automatic width (or at an explicit one) can take.
  ::testing::AssertionResult add_runs(bool automatic_width, const void* inputs, std::size_t n,
                                      std::size_t element_bytes, std::size_t in_offset, std::size_t out_offset,
                                      bool in_place, const std::string& note, const void* context, MakeRun make_run) {
    for (const TransformPath path : automatic_width ? paths_under_test<0>() : paths_under_test<1>()) {
      TransformPlace place = TransformPlace::make(path, n, in_offset, out_offset, in_place, capacity_ + max_offset_);
      ::testing::AssertionResult laid_out = place.lay_out(batch_, inputs, element_bytes, max_offset_, note);
      if (!laid_out) return laid_out;
      batch_.add_run(make_run(context, std::move(place)));
    }
    return ::testing::AssertionSuccess();
  }

 private:
  std::size_t capacity_, max_offset_;
  LaunchBatch batch_;
};

/// TransformRig::run, batched (launch_batch.hpp): add() lays out, for each path a call at VecWidth
/// can take, a guarded input region and a guarded output region of their own, each `capacity` +
/// `max_offset` elements between guard bands as in a TransformRig; the batch runs when full and at
/// finish(), in one upload, one launch per run on the legacy default stream, one synchronisation
/// and one download. Each run is then checked as run_on_path checks it: every output element
/// against the reference, every other element of its output region still poison, the guard bands
/// intact, and the input region (input, slack and guards) exactly as uploaded.
template <int VecWidth, class T>
class TransformBatch : public TransformBatchCore {
 public:
  using TransformBatchCore::TransformBatchCore;

  /// Adds transform<VecWidth>(op, in + in_offset, out + out_offset, inputs.size()), or in place at
  /// out + out_offset, on every path; `note` is added to its failure messages. Returns the failure
  /// of a batch that had to run to make room, else success.
  template <class Op, class Reference>
  ::testing::AssertionResult add(const Op& op, const Reference& reference, NanBits nan, const std::vector<T>& inputs,
                                 std::size_t in_offset, std::size_t out_offset, bool in_place,
                                 const std::string& note = {}) {
    const Context<Op, Reference> context{op, reference, nan};
    return add_runs(VecWidth == 0, inputs.data(), inputs.size(), sizeof(T), in_offset, out_offset, in_place, note,
                    &context, &make_run<Op, Reference>);
  }

 private:
  template <class Op, class Reference>
  struct Context {
    const Op& op;
    const Reference& reference;
    NanBits nan;
  };

  template <class Op, class Reference>
  static std::unique_ptr<const BatchRun> make_run(const void* context, TransformPlace&& place) {
    const auto& c = *static_cast<const Context<Op, Reference>*>(context);
    return std::make_unique<const TransformRun<VecWidth, T, Op, Reference>>(c.op, c.reference, c.nan, std::move(place));
  }
};

/// True when every byte of the buffer's payload and guards still holds the poison pattern.
template <class T>
::testing::AssertionResult all_poisoned(GuardedBuffer<T>& buffer) {
  std::vector<T> payload;
  const cudaError_t status = buffer.download(payload);
  if (status != cudaSuccess) return ::testing::AssertionFailure() << "download: " << cudaGetErrorName(status);
  for (std::size_t i = 0; i < payload.size(); ++i) {
    if (!is_poison(payload[i])) return ::testing::AssertionFailure() << "element " << i << " was written";
  }
  if (!buffer.guards_intact()) return ::testing::AssertionFailure() << "guard band overwritten";
  return ::testing::AssertionSuccess();
}

/// Element type and requested vector width of one typed device test case.
template <class T, int VecWidth>
struct Case {
  using Element = T;
  static constexpr int kVecWidth = VecWidth;
};

/// Every (type, VecWidth) pair the launchers accept: automatic (0) and 1, 2, 4, 8 where
/// VecWidth * sizeof(T) <= 16.
using AllCases = ::testing::Types<Case<float, 0>, Case<float, 1>, Case<float, 2>, Case<float, 4>,   //
                                  Case<double, 0>, Case<double, 1>, Case<double, 2>,                //
                                  Case<__half, 0>, Case<__half, 1>, Case<__half, 2>, Case<__half, 4>, Case<__half, 8>,
                                  Case<__nv_bfloat16, 0>, Case<__nv_bfloat16, 1>, Case<__nv_bfloat16, 2>,
                                  Case<__nv_bfloat16, 4>, Case<__nv_bfloat16, 8>>;

/// One case per element type at the automatic width: for launchers that take no width.
using AutoWidthCases = ::testing::Types<Case<float, 0>, Case<double, 0>, Case<__half, 0>, Case<__nv_bfloat16, 0>>;

struct CaseNames {
  template <class C>
  static std::string GetName(int) {
    const int width = C::kVecWidth;
    return type_name<typename C::Element>() + (width == 0 ? std::string("_auto") : "_w" + std::to_string(width));
  }
};

// ---- Size and offset sets, shared by the per-policy device tests. ----

/// 0 and every length up to 1100 (in quick mode 0..40 and a stride through the rest).
inline std::vector<std::size_t> short_lengths() {
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 1100; ++n) {
    if (!quick_mode() || n <= 40 || n % 61 == 0 || n == 1100) lengths.push_back(n);
  }
  return lengths;
}

/// Lengths on and next to multiples of vector, block and tile sizes, in elements of T (from byte
/// sizes, so every type meets its own multiples) and around 2048, 4096 and 65536 elements.
template <class T>
std::vector<std::size_t> boundary_lengths() {
  if (quick_mode()) return {2049, 4097, 65539};
  std::vector<std::size_t> lengths;
  auto around = [&](std::size_t center, std::size_t radius) {
    for (std::size_t n = center - radius; n <= center + radius; ++n) lengths.push_back(n);
  };
  for (const std::size_t bytes : {2048, 4096, 8192, 16384, 65536, 262144}) around(bytes / sizeof(T), 1);
  for (const std::size_t n : {2048, 4096}) around(n, 1);
  around(65536, 3);
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  return lengths;
}

/// Large lengths: 2^20 and an odd one past it, and 4 MiB and 12 MiB worth of elements (odd), so
/// that both of the launcher's block shapes (small arrays, streaming) run for every type.
template <class T>
std::vector<std::size_t> large_lengths() {
  if (quick_mode()) return {(std::size_t(1) << 20) + 7};
  return {std::size_t(1) << 20, (std::size_t(1) << 20) + 7, (std::size_t(4) << 20) / sizeof(T) + 3,
          (std::size_t(12) << 20) / sizeof(T) + 3};
}

/// Head offsets (elements) for the every-pair test: 0..15, or a subset in quick mode.
inline std::vector<std::size_t> head_offsets() {
  if (quick_mode()) return {0, 1, 3, 8, 15};
  std::vector<std::size_t> offsets;
  for (std::size_t offset = 0; offset < 16; ++offset) offsets.push_back(offset);
  return offsets;
}

// ---- Sweeps, shared by the per-policy device tests. Each stops at its first failure (the runs of
// a batch all run; the first of them to fail, in the order added, is reported). ----

/// Every short length, at aligned (0, 0) and at odd offsets (3, 3) and (1, 2). Batched: a few
/// round trips in all instead of several per run.
template <int VecWidth, class T, class Op, class Reference>
void sweep_short_lengths(const Op& op, const Reference& reference, NanBits nan) {
  TransformBatch<VecWidth, T> batch(1100, 3);
  for (const std::size_t n : short_lengths()) {
    const std::vector<T> inputs = device_inputs<T>(n, 1000 + n);
    ASSERT_TRUE((batch.add(op, reference, nan, inputs, 0, 0, false)));
    ASSERT_TRUE((batch.add(op, reference, nan, inputs, 3, 3, false)));
    if (n % 5 == 0) ASSERT_TRUE((batch.add(op, reference, nan, inputs, 1, 2, false)));
  }
  ASSERT_TRUE(batch.finish());
}

/// Lengths around vector, block and tile multiples, aligned and at odd offsets; then the large
/// lengths, aligned and at relatively misaligned odd offsets.
template <int VecWidth, class T, class Op, class Reference>
void sweep_boundary_lengths(const Op& op, const Reference& reference, NanBits nan) {
  const std::vector<std::size_t> lengths = boundary_lengths<T>();
  TransformBatch<VecWidth, T> batch(lengths.back(), 5);
  for (const std::size_t n : lengths) {
    const std::vector<T> inputs = device_inputs<T>(n, 2000 + n);
    ASSERT_TRUE((batch.add(op, reference, nan, inputs, 0, 0, false)));
    ASSERT_TRUE((batch.add(op, reference, nan, inputs, 1, 1, false)));
    ASSERT_TRUE((batch.add(op, reference, nan, inputs, 5, 2, false)));
  }
  ASSERT_TRUE(batch.finish());
  for (const std::size_t n : large_lengths<T>()) {
    TransformBatch<VecWidth, T> large_batch(n, 5);  // regions sized to the run, so the checks copy no slack
    const std::vector<T> inputs = device_inputs<T>(n, 2000 + n);
    ASSERT_TRUE((large_batch.add(op, reference, nan, inputs, 0, 0, false)));
    ASSERT_TRUE((large_batch.add(op, reference, nan, inputs, 5, 2, false)));
    ASSERT_TRUE(large_batch.finish());
  }
}

/// Every pair of head offsets for in and out, relatively misaligned ones included.
template <int VecWidth, class T, class Op, class Reference>
void sweep_offset_pairs(const Op& op, const Reference& reference, NanBits nan) {
  const std::vector<std::size_t> lengths =
      quick_mode() ? std::vector<std::size_t>{30, 1000} : std::vector<std::size_t>{1, 30, 1000, 4099};
  TransformBatch<VecWidth, T> batch(4099, 15);
  for (const std::size_t n : lengths) {
    const std::vector<T> inputs = device_inputs<T>(n, 3000 + n);
    for (const std::size_t in_offset : head_offsets()) {
      for (const std::size_t out_offset : head_offsets()) {
        ASSERT_TRUE((batch.add(op, reference, nan, inputs, in_offset, out_offset, false)));
      }
    }
  }
  ASSERT_TRUE(batch.finish());
}

/// In place (in == out) at every head offset.
template <int VecWidth, class T, class Op, class Reference>
void sweep_in_place(const Op& op, const Reference& reference, NanBits nan) {
  const std::vector<std::size_t> lengths = quick_mode() ? std::vector<std::size_t>{7, 1001}
                                                        : std::vector<std::size_t>{1, 7, 100, 1001, 4099, 65539};
  TransformBatch<VecWidth, T> batch(65539, 15);
  for (const std::size_t n : lengths) {
    const std::vector<T> inputs = device_inputs<T>(n, 4000 + n);
    for (const std::size_t offset : head_offsets()) {
      ASSERT_TRUE((batch.add(op, reference, nan, inputs, offset, offset, true)));
    }
  }
  ASSERT_TRUE(batch.finish());
}

/// Every invalid call (null, misaligned, partly overlapping pointers; each of `invalid_ops`)
/// returns cudaErrorInvalidValue and leaves device memory as it was.
template <int VecWidth, class T, class Op, class... InvalidOp>
void expect_bad_inputs_write_nothing(const Op& valid_op, const InvalidOp&... invalid_ops) {
  const std::size_t n = 1000;
  GuardedBuffer<T> in(n + 16), out(n + 16);
  ASSERT_EQ(in.status(), cudaSuccess);
  ASSERT_EQ(out.status(), cudaSuccess);
  const std::vector<T> inputs = device_inputs<T>(n + 16, 5000);
  ASSERT_EQ(in.upload(inputs), cudaSuccess);
  const T* const in_data = in.data();
  const T* const null_in = nullptr;
  T* const null_out = nullptr;
  auto misaligned = [](T* pointer) { return reinterpret_cast<T*>(reinterpret_cast<unsigned char*>(pointer) + 1); };

  EXPECT_EQ(hardact::transform<VecWidth>(valid_op, null_in, out.data(), n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform<VecWidth>(valid_op, in_data, null_out, n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform<VecWidth>(valid_op, static_cast<const T*>(misaligned(in.data())), out.data(), n),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform<VecWidth>(valid_op, in_data, misaligned(out.data()), n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform<VecWidth>(valid_op, static_cast<const T*>(out.data()), out.data() + 1, n),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform<VecWidth>(valid_op, static_cast<const T*>(out.data() + 5), out.data(), n),
            cudaErrorInvalidValue);
  [[maybe_unused]] const auto expect_rejected = [&](const auto& invalid_op) {
    EXPECT_EQ(hardact::transform<VecWidth>(invalid_op, in_data, out.data(), n), cudaErrorInvalidValue);
    EXPECT_EQ(hardact::transform<VecWidth>(invalid_op, in_data, in.data(), n), cudaErrorInvalidValue);  // in place
  };
  (expect_rejected(invalid_ops), ...);

  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  HARDACT_ASSERT_CUDA(cudaGetLastError());
  EXPECT_TRUE(all_poisoned(out));
  std::vector<T> after;
  ASSERT_EQ(in.download(after), cudaSuccess);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(to_bits(after[i]), to_bits(inputs[i])) << "input element " << i << " changed";
  }
  EXPECT_TRUE(in.guards_intact());
}

}  // namespace hardact_test
