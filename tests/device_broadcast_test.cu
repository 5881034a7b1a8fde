// Broadcast operands through the launchers on the device, bit for bit (NaN as a class) against the
// policy applied on the host to each element's values, a broadcast's value for element i being
// values[(i / inner) % period]:
//  - float, double, half, bfloat16, and mixed types (bfloat16 x with float scale and shift written
//    as bfloat16; half x with a float bias; float x with a double bias, computed in double);
//  - layouts: a row-major bias per_channel(b, C) (inner 1, also channels-last), NCHW
//    per_channel(v, C, HW) with HW a multiple of the vector width and not (1, 49, 64, 3136), a
//    per-(n, c) gate per_channel(g, N * C, HW);
//  - broadcasts first, in the middle and last, one and two full-length inputs (a residual plus a
//    bias, and the backward policies), in place on a full-length input;
//  - the sizes and offsets of the other device tests (device_family.hpp's sweep and
//    transform_check.hpp's short, boundary and large lengths, head offset pairs, in place), each on
//    the direct and on the staged path, forced;
//  - refusals on the device (values inside the output, null, misaligned, zero shapes): nothing
//    written; values next to the output or inside an input are fine;
//  - FastDivmod and DeviceBroadcast's index stepping in device code up to 2^63;
//  - channel_sum for float, bfloat16 and double, inner 1 and inner > 1, n == 0, against a double
//    reference (exact for small integers, within float accumulation error otherwise), and its
//    refusals.
// HARDACT_TEST_QUICK=1 (compute-sanitizer runs) keeps the sizes small and the placements few.
#include "support/bits.hpp"
#include "support/device.hpp"
#include "support/device_family.hpp"
#include "support/divmod_cases.hpp"
#include "support/launch_batch.hpp"
#include "support/paths.hpp"
#include "support/reference_family.hpp"
#include "support/transform_check.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using namespace hardact_test;

constexpr std::uint64_t kTwo63 = divmod::kTwo63;

// =============================================================================================
// Inputs, host reference and one checked call.

/// One input of a call: n full-length values, or a broadcast's `period` values, element i reading
/// values[(i / inner) % period].
template <class T, bool IsBroadcast>
struct Input {
  using Element = T;
  static constexpr bool kBroadcast = IsBroadcast;
  std::vector<T> values;
  std::size_t inner = 1;

  T at(std::size_t i) const {
    if constexpr (IsBroadcast) {
      return values[(i / inner) % values.size()];
    } else {
      return values[i];
    }
  }
};
template <class T>
using Full = Input<T, false>;
template <class T>
using Channels = Input<T, true>;

/// n full-length values: every bit pattern for 16-bit types, random and special values otherwise.
template <class T>
Full<T> full_input(std::size_t n, std::uint64_t seed) {
  return {family::device_inputs<T>(n, seed), 1};
}

/// `period` broadcast values (mostly finite and distinct, so a value read from the wrong index shows).
template <class T>
Channels<T> channel_input(std::size_t period, std::size_t inner, std::uint64_t seed) {
  return {random_values<T>(period, seed, {-3.0, 3.0, 0.5}), inner};
}

/// What the kernels compute for one element (detail::apply_op's rule), on the host: the policy on
/// the elements when every input has the output's type, else on their common compute type with
/// one rounding to the output, done by the test's own conversions.
template <class TOut, class Op, class... T>
TOut host_apply(const Op& op, T... x) {
  if constexpr ((std::is_same_v<T, TOut> && ...)) {
    return op(x...);
  } else {
    using C = std::common_type_t<family::compute_of<T>...>;
    return family::round_to<TOut>(static_cast<double>(op(static_cast<C>(family::value_of(x))...)));
  }
}

template <class TOut, class Op, class... I>
std::vector<TOut> expected_outputs(const Op& op, std::size_t n, const I&... inputs) {
  std::vector<TOut> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = host_apply<TOut>(op, inputs.at(i)...);
  return expected;
}

/// Where one call's arrays sit: each input's element offset past a 256-byte boundary, then the
/// output's; or the output is the full-length input `in_place` (its offset then counts).
struct Placement {
  std::vector<std::size_t> offsets;
  int in_place = -1;
};

std::string describe(const Placement& placement) {
  std::string text = "offsets";
  for (const std::size_t offset : placement.offsets) text += " " + std::to_string(offset);
  if (placement.in_place >= 0) text += ", output in place on input " + std::to_string(placement.in_place);
  return text;
}

/// device_family.hpp's offset classes for `count` arrays (inputs, then the output): all aligned,
/// each one misaligned alone, all misaligned alike, all misaligned differently (twice). Quick mode:
/// aligned and misaligned differently.
std::vector<Placement> offset_classes(std::size_t count) {
  const std::size_t staggered[] = {3, 1, 2, 6, 5};
  const std::size_t scattered[] = {2, 7, 4, 1, 3};
  std::vector<Placement> result;
  result.push_back({std::vector<std::size_t>(count, 0)});
  Placement a{std::vector<std::size_t>(count)}, b{std::vector<std::size_t>(count)};
  for (std::size_t k = 0; k < count; ++k) {
    a.offsets[k] = staggered[k % 5];
    b.offsets[k] = scattered[k % 5];
  }
  result.push_back(a);
  if (family::quick_mode()) return result;
  result.push_back(b);
  result.push_back({std::vector<std::size_t>(count, 5)});
  for (std::size_t k = 0; k < count; ++k) {
    Placement single{std::vector<std::size_t>(count, 0)};
    single.offsets[k] = 1;
    result.push_back(single);
  }
  return result;
}

/// In place on full-length input `k` at a few offsets, the other arrays misaligned against it.
std::vector<Placement> in_place_classes(std::size_t count, int k) {
  std::vector<Placement> result;
  for (const std::size_t offset : family::quick_mode() ? std::vector<std::size_t>{1} : std::vector<std::size_t>{0, 1, 3}) {
    Placement placement{std::vector<std::size_t>(count, 0), k};
    for (std::size_t j = 0; j < count; ++j) placement.offsets[j] = (j + 2) % 4;
    placement.offsets[static_cast<std::size_t>(k)] = offset;
    result.push_back(placement);
  }
  return result;
}

template <class T>
const T* device_argument(const Full<T>&, unsigned char* arena, const ArenaRegion& region, std::size_t offset) {
  return LaunchBatch::pointer<const T>(arena, region) + offset;
}
template <class T>
hardact::Broadcast<T> device_argument(const Channels<T>& input, unsigned char* arena, const ArenaRegion& region,
                                      std::size_t offset) {
  return hardact::per_channel(LaunchBatch::pointer<const T>(arena, region) + offset, input.values.size(), input.inner);
}

template <class... I>
std::string show_inputs(std::size_t i, const I&... inputs) {
  std::string text;
  ((text += (text.empty() ? "" : ", ") + family::show(inputs.at(i))), ...);
  return text;
}

/// One input's values, as bytes, for CallPlace::lay_out.
struct InputBytes {
  const void* data;
  std::size_t count, element_bytes;
  bool can_be_output;  // a full-length input of the output's type
};

/// Where one call sits in a batch and how messages name it: the part of a call that does not
/// depend on its types (compiled once, not once per call signature).
struct CallPlace {
  std::size_t n = 0;
  Placement placement;
  std::vector<InputBytes> inputs;
  std::vector<ArenaRegion> regions;  // one per input
  ArenaRegion out;                   // the region of input placement.in_place, or its own
  std::size_t out_offset = 0, out_bytes = 0;
  std::string description;

  /// Lays out every array in a guarded region of its own as `placement` puts it (each input's
  /// values offsets[k] elements past its region's 256-byte aligned start, as a GuardedBuffer(size,
  /// offset) holds them; the output all poison in its own region, or in place in its input's),
  /// after making room: returns the failure of a batch that had to run for it.
  ::testing::AssertionResult lay_out(LaunchBatch& batch, TransformPath path) {
    const std::string where = path_name(path) + ", n " + std::to_string(n) + ", " + describe(placement);
    const bool in_place = placement.in_place >= 0;
    const std::size_t alias = static_cast<std::size_t>(placement.in_place);
    if (in_place && (alias >= inputs.size() || !inputs[alias].can_be_output)) {
      return ::testing::AssertionFailure() << "input " << placement.in_place << " cannot be the output\n  " << where;
    }
    std::size_t bytes = 0;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      bytes += LaunchBatch::region_bytes((placement.offsets[k] + inputs[k].count) * inputs[k].element_bytes);
    }
    if (!in_place) bytes += LaunchBatch::region_bytes((placement.offsets.back() + n) * out_bytes);
    ::testing::AssertionResult room = batch.make_room(bytes);
    if (!room) return room;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const InputBytes& input = inputs[k];
      regions.push_back(batch.add_region((placement.offsets[k] + input.count) * input.element_bytes));
      batch.write_bytes(regions.back(), placement.offsets[k] * input.element_bytes, input.data,
                        input.count * input.element_bytes);
    }
    out = in_place ? regions[alias] : batch.add_region((placement.offsets.back() + n) * out_bytes);
    out_offset = in_place ? placement.offsets[alias] : placement.offsets.back();
    description = where + ", output " + out.position();
    return ::testing::AssertionSuccess();
  }

  /// What changed outside the output, or empty: nothing else in the output's region (guard bands,
  /// offset elements), every other input's region (values, guard bands) exactly as uploaded.
  std::string changed_outside_output(const unsigned char* before, const unsigned char* after) const {
    if (!LaunchBatch::unchanged_outside(before, after, out, out_offset * out_bytes, (out_offset + n) * out_bytes)) {
      return "output guard band overwritten";
    }
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      if (static_cast<int>(k) == placement.in_place) continue;
      std::string changed = LaunchBatch::changed_input(before, after, regions[k], inputs[k].element_bytes,
                                                       placement.offsets[k], inputs[k].count,
                                                       "input " + std::to_string(k));
      if (!changed.empty()) return changed;
    }
    return {};
  }

  ::testing::AssertionResult failure(const std::string& what) const {
    return ::testing::AssertionFailure() << what << "\n  " << description;
  }
};

/// One call in a batch: transform(op, inputs..., out, n) on `path`, laid out by CallPlace. Its check
/// compares every output element with `expected`, then CallPlace::changed_outside_output.
template <class TOut, class Op, class... I>
class CallRun final : public BatchRun {
 public:
  CallRun(const Op& op, std::shared_ptr<const std::vector<TOut>> expected,
          std::shared_ptr<const std::tuple<I...>> inputs, TransformPath path, CallPlace place)
      : BatchRun(place.description), op_(op), expected_(std::move(expected)), inputs_(std::move(inputs)), path_(path),
        place_(std::move(place)) {}

  cudaError_t launch(unsigned char* arena, cudaStream_t stream) const override {
    const ScopedTransformPath forced(path_);
    return launch_with(arena, stream, std::index_sequence_for<I...>{});
  }

  ::testing::AssertionResult check(cudaError_t launched, const unsigned char* before,
                                   const unsigned char* after) const override {
    if (launched != cudaSuccess) return place_.failure(std::string("transform returned ") + cudaGetErrorName(launched));
    const std::size_t n = place_.n;
    const std::vector<TOut> outputs = LaunchBatch::read<TOut>(after, place_.out, place_.out_offset, n);
    const std::vector<TOut>& expected = *expected_;
    std::size_t mismatches = 0;
    ::testing::AssertionResult failure = ::testing::AssertionFailure();
    for (std::size_t i = 0; i < n; ++i) {
      if (family::same_or_both_nan(outputs[i], expected[i])) continue;
      if (++mismatches <= 5) {
        const std::string shown = std::apply([i](const auto&... in) { return show_inputs(i, in...); }, *inputs_);
        failure << "\n  [" << i << "] (" << shown << "): got " << family::show(outputs[i]) << ", expected "
                << family::show(expected[i]);
      }
    }
    if (mismatches > 0) {
      return failure << "\n  " << mismatches << " of " << n << " elements differ\n  " << description();
    }
    const std::string changed = place_.changed_outside_output(before, after);
    if (!changed.empty()) return place_.failure(changed);
    return ::testing::AssertionSuccess();
  }

 private:
  template <std::size_t... K>
  cudaError_t launch_with(unsigned char* arena, cudaStream_t stream, std::index_sequence<K...>) const {
    TOut* const out = LaunchBatch::pointer<TOut>(arena, place_.out) + place_.out_offset;
    return hardact::transform(
        op_, device_argument(std::get<K>(*inputs_), arena, place_.regions[K], place_.placement.offsets[K])..., out,
        place_.n, stream);
  }

  Op op_;
  std::shared_ptr<const std::vector<TOut>> expected_;
  std::shared_ptr<const std::tuple<I...>> inputs_;
  TransformPath path_;
  CallPlace place_;
};

/// Adds one call to `batch` (CallRun); returns the failure of a batch that had to run to make
/// room, else success.
template <class TOut, class Op, class... I>
::testing::AssertionResult add_call(LaunchBatch& batch, const Op& op, std::size_t n,
                                    const std::shared_ptr<const std::vector<TOut>>& expected,
                                    const Placement& placement, TransformPath path,
                                    const std::shared_ptr<const std::tuple<I...>>& inputs) {
  CallPlace place;
  place.n = n;
  place.placement = placement;
  place.out_bytes = sizeof(TOut);
  std::apply(
      [&place](const I&... in) {
        place.inputs = {InputBytes{in.values.data(), in.values.size(), sizeof(typename I::Element),
                                   !I::kBroadcast && std::is_same_v<typename I::Element, TOut>}...};
      },
      *inputs);
  ::testing::AssertionResult laid_out = place.lay_out(batch, path);
  if (!laid_out) return laid_out;
  batch.add_run(std::make_unique<const CallRun<TOut, Op, I...>>(op, expected, inputs, path, std::move(place)));
  return ::testing::AssertionSuccess();
}

/// Every placement on the direct and on the staged path, in one batch; the placements are
/// offset_classes() and, when the output can alias a full-length input of its type, in place on
/// the first such input.
template <class TOut, class Op, class... I>
void check_call(const Op& op, std::size_t n, const I&... inputs) {
  constexpr std::size_t kCount = sizeof...(I) + 1;
  std::vector<Placement> placements = offset_classes(kCount);
  int alias = -1, k = 0;
  ((alias = alias < 0 && !I::kBroadcast && std::is_same_v<typename I::Element, TOut> ? k : alias, ++k), ...);
  if (alias >= 0) {
    const std::vector<Placement> in_place = in_place_classes(kCount, alias);
    placements.insert(placements.end(), in_place.begin(), in_place.end());
  }
  const auto expected = std::make_shared<const std::vector<TOut>>(expected_outputs<TOut>(op, n, inputs...));
  const auto held = std::make_shared<const std::tuple<I...>>(inputs...);
  LaunchBatch batch;
  for (const TransformPath path : paths_under_test<0>()) {
    for (const Placement& placement : placements) {
      ASSERT_TRUE(add_call<TOut>(batch, op, n, expected, placement, path, held));
    }
  }
  ASSERT_TRUE(batch.execute());
}

/// The element counts of device_family.hpp's sweep (tiny, around a vector and a block, 2^16 + 7,
/// and unless quick 2^20 + 3 and 2^22 + 13); quick mode keeps a few small ones.
std::vector<std::size_t> sweep_sizes() {
  if (family::quick_mode()) return {1, 3, 31, 1000, 4097};
  return family::sweep_sizes();
}

template <class T>
class DeviceBroadcast : public ::testing::Test {};
TYPED_TEST_SUITE(DeviceBroadcast, ElementTypes, TypeNames);

// =============================================================================================
// Layouts.

// A row-major [rows, C] bias (and any channels-last tensor): per_channel(b, C), inner 1.
TYPED_TEST(DeviceBroadcast, RowMajorBias) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const auto op = hardact::bias_activation(hardact::HardSwish{});
  for (const std::size_t n : sweep_sizes()) {
    for (const std::size_t channels : {std::size_t{1}, std::size_t{7}, std::size_t{64}, std::size_t{1000}}) {
      if (n > (std::size_t{1} << 17) && channels != 1000) continue;  // one shape for the largest arrays
      SCOPED_TRACE("C " + std::to_string(channels));
      check_call<T>(op, n, full_input<T>(n, n), channel_input<T>(channels, 1, 17 * n + channels));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  // Whole [rows, C] arrays, C a multiple of the vector width and not.
  const std::size_t shapes[][2] = {{128, 64}, {3, 1000}, {777, 3}, {4096, 1000}};
  for (const auto& shape : shapes) {
    if (family::quick_mode() && shape[0] * shape[1] > 100000) continue;
    const std::size_t n = shape[0] * shape[1];
    SCOPED_TRACE("rows " + std::to_string(shape[0]) + ", C " + std::to_string(shape[1]));
    check_call<T>(op, n, full_input<T>(n, 5 * n), channel_input<T>(shape[1], 1, 91));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// NCHW folded BatchNorm: scale_shift_activation with per_channel(s, C, HW) and per_channel(t, C, HW),
// HW a multiple of every vector width (64, 3136 = 56 x 56) and not (1, 49).
TYPED_TEST(DeviceBroadcast, NchwScaleShift) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const auto op = hardact::scale_shift_activation(hardact::HardSwish{});
  for (const std::size_t n : sweep_sizes()) {
    for (const std::size_t hw : {std::size_t{1}, std::size_t{49}, std::size_t{64}, std::size_t{3136}}) {
      if (n > (std::size_t{1} << 17) && hw != 49) continue;
      SCOPED_TRACE("C 5, HW " + std::to_string(hw));
      check_call<T>(op, n, full_input<T>(n, n + 3), channel_input<T>(5, hw, hw), channel_input<T>(5, hw, hw + 1));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  const std::size_t shapes[][3] = {{2, 3, 3136}, {4, 32, 49}, {3, 64, 1}, {2, 8, 64}, {8, 64, 3136}};
  for (const auto& shape : shapes) {
    const std::size_t n = shape[0] * shape[1] * shape[2];
    if (family::quick_mode() && n > 100000) continue;
    SCOPED_TRACE("N " + std::to_string(shape[0]) + ", C " + std::to_string(shape[1]) + ", HW " +
                 std::to_string(shape[2]));
    check_call<T>(op, n, full_input<T>(n, 7 * n), channel_input<T>(shape[1], shape[2], 33),
                  channel_input<T>(shape[1], shape[2], 34));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Squeeze-excitation: a per-(n, c) gate per_channel(g, N * C, HW) over NCHW.
TYPED_TEST(DeviceBroadcast, PerSampleChannelGate) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  for (const std::size_t n : sweep_sizes()) {
    for (const std::size_t hw : {std::size_t{1}, std::size_t{8}, std::size_t{49}, std::size_t{3136}}) {
      if (n > (std::size_t{1} << 17) && hw != 3136) continue;
      SCOPED_TRACE("N * C 48, HW " + std::to_string(hw));
      check_call<T>(hardact::HardSigmoidGate{}, n, full_input<T>(n, n + 11), channel_input<T>(48, hw, 3 * hw));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  const std::size_t shapes[][3] = {{2, 24, 49}, {4, 16, 3136}, {1, 960, 1}};
  for (const auto& shape : shapes) {
    const std::size_t n = shape[0] * shape[1] * shape[2];
    if (family::quick_mode() && n > 100000) continue;
    check_call<T>(hardact::HardSigmoidGate{}, n, full_input<T>(n, n), channel_input<T>(shape[0] * shape[1], shape[2], 5));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// =============================================================================================
// Two full-length inputs: a residual, and the backward policies with their broadcasts.

/// x + residual + bias, in the compute type (the first step of a chain, which passes it C values).
struct AddResidualAndBias {
  template <class C>
  __host__ __device__ C operator()(C x, C residual, C bias) const {
    return hardact::detail::add_rn(hardact::detail::add_rn(x, residual), bias);
  }
};

TYPED_TEST(DeviceBroadcast, ResidualPlusBias) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const auto op = hardact::chain(AddResidualAndBias{}, hardact::HardSwish{});
  for (const std::size_t n : sweep_sizes()) {
    check_call<T>(op, n, full_input<T>(n, n), full_input<T>(n, n + 1), channel_input<T>(64, 1, 64));
    if (::testing::Test::HasFatalFailure()) return;
    check_call<T>(op, n, full_input<T>(n, n + 2), full_input<T>(n, n + 3), channel_input<T>(6, 49, 65));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// residual_activation with a full-length residual (no broadcast: the launchers' plain path).
TYPED_TEST(DeviceBroadcast, ResidualActivation) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  for (const std::size_t n : sweep_sizes()) {
    check_call<T>(hardact::residual_activation(hardact::HardSwish{}), n, full_input<T>(n, n), full_input<T>(n, n + 9));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TYPED_TEST(DeviceBroadcast, BiasActivationBackward) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const hardact::BiasActivationBackward<hardact::HardSwishBackward> op;
  for (const std::size_t n : sweep_sizes()) {
    check_call<T>(op, n, full_input<T>(n, n), full_input<T>(n, 2 * n), channel_input<T>(10, 1, 7));
    if (::testing::Test::HasFatalFailure()) return;
    check_call<T>(op, n, full_input<T>(n, n + 5), full_input<T>(n, 2 * n + 5), channel_input<T>(3, 49, 8));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TYPED_TEST(DeviceBroadcast, ScaleShiftActivationBackward) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const hardact::ScaleShiftActivationBackward<hardact::HardSwishBackward> op;
  for (const std::size_t n : sweep_sizes()) {
    check_call<T>(op, n, full_input<T>(n, n), full_input<T>(n, 3 * n), channel_input<T>(16, 64, 1),
                  channel_input<T>(16, 64, 2));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// =============================================================================================
// The sweeps of transform_check.hpp (every short length, lengths around vector, block and tile
// multiples, the large lengths, every pair of head offsets, in place at every head offset), on a
// bias over a row-major array and on an NCHW scale and shift.

TYPED_TEST(DeviceBroadcast, TransformCheckSweeps) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const auto bias = hardact::bias_activation(hardact::HardSwish{});
  const auto scale_shift = hardact::scale_shift_activation(hardact::HardSwish{});
  LaunchBatch batch;  // every call below in a few batches (issue 19)
  const auto both_paths = [&](std::size_t n, const Placement& placement, auto& op, const auto&... inputs) {
    const auto expected = std::make_shared<const std::vector<T>>(expected_outputs<T>(op, n, inputs...));
    const auto held = std::make_shared<const std::tuple<std::decay_t<decltype(inputs)>...>>(inputs...);
    for (const TransformPath path : paths_under_test<0>()) {
      ASSERT_TRUE(add_call<T>(batch, op, n, expected, placement, path, held));
    }
  };
  const Channels<T> columns = channel_input<T>(7, 1, 70);
  const Channels<T> scales = channel_input<T>(3, 5, 71), shifts = channel_input<T>(3, 5, 72);
  for (const std::size_t n : short_lengths()) {
    const Full<T> x = full_input<T>(n, 1000 + n);
    both_paths(n, {{0, 0, 0}}, bias, x, columns);
    both_paths(n, {{3, 0, 3}}, bias, x, columns);
    both_paths(n, {{3, 1, 2, 3}}, scale_shift, x, scales, shifts);
    if (n % 5 == 0) both_paths(n, {{1, 4, 2}}, bias, x, columns);
    if (::testing::Test::HasFatalFailure()) return;
  }
  for (const std::size_t n : boundary_lengths<T>()) {
    const Full<T> x = full_input<T>(n, 2000 + n);
    both_paths(n, {{0, 0, 0}}, bias, x, columns);
    both_paths(n, {{1, 0, 1}}, bias, x, columns);
    both_paths(n, {{5, 3, 7, 2}}, scale_shift, x, scales, shifts);
    if (::testing::Test::HasFatalFailure()) return;
  }
  for (const std::size_t n : large_lengths<T>()) {
    const Full<T> x = full_input<T>(n, 2000 + n);
    both_paths(n, {{0, 0, 0}}, bias, x, columns);
    both_paths(n, {{5, 1, 1, 2}}, scale_shift, x, scales, shifts);
    if (::testing::Test::HasFatalFailure()) return;
  }
  for (const std::size_t n : quick_mode() ? std::vector<std::size_t>{30, 1000} : std::vector<std::size_t>{1, 30, 1000, 4099}) {
    const Full<T> x = full_input<T>(n, 3000 + n);
    for (const std::size_t in_offset : head_offsets()) {
      for (const std::size_t out_offset : head_offsets()) {
        both_paths(n, {{in_offset, 0, out_offset}}, bias, x, columns);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
  for (const std::size_t n : quick_mode() ? std::vector<std::size_t>{7, 1001}
                                          : std::vector<std::size_t>{1, 7, 100, 1001, 4099, 65539}) {
    const Full<T> x = full_input<T>(n, 4000 + n);
    for (const std::size_t offset : head_offsets()) {
      both_paths(n, {{offset, 2, 0}, 0}, bias, x, columns);
      both_paths(n, {{offset, 1, 3, 0}, 0}, scale_shift, x, scales, shifts);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  ASSERT_TRUE(batch.execute());
}

// =============================================================================================
// Operand positions: a policy whose every argument weighs differently, with broadcasts first, in
// the middle, last, and in every other pattern of two to four inputs.

/// a - 2 b + 4 c - 8 d (as many terms as arguments) in the compute type, rounded once: every
/// argument moves the result differently, so a value passed in the wrong position shows. The
/// products are exact, so the device's FMA contraction could not change a bit either.
struct Positional {
  template <class T, class... More>
  __host__ __device__ T operator()(T first, More... more) const {
    using C = hardact::compute_t<T>;
    C sum = hardact::to_compute(first);
    C weight = C(1);
    ((weight = weight * C(-2), sum = hardact::detail::add_rn(sum, hardact::detail::mul_rn(weight, hardact::to_compute(more)))),
     ...);
    return hardact::from_compute<T>(sum);
  }
};

/// Input k of a positions test: full-length, or a broadcast with a shape of its own.
template <class T, bool IsBroadcast>
Input<T, IsBroadcast> positional_input(std::size_t n, std::size_t k) {
  if constexpr (IsBroadcast) {
    const std::size_t shapes[][2] = {{5, 1}, {3, 49}, {64, 7}, {2, 3136}};
    return channel_input<T>(shapes[k][0], shapes[k][1], 100 + k);
  } else {
    return full_input<T>(n, 200 + k + n);
  }
}

template <class T, bool... IsBroadcast, std::size_t... K>
void check_positions(std::index_sequence<K...>) {
  std::string pattern;
  ((pattern += IsBroadcast ? 'B' : 'F'), ...);
  SCOPED_TRACE("pattern " + pattern);
  for (const std::size_t n : family::quick_mode() ? std::vector<std::size_t>{1000, 4097}
                                                   : std::vector<std::size_t>{3, 1000, 4097, 65536 + 7, (1u << 20) + 3}) {
    check_call<T>(Positional{}, n, positional_input<T, IsBroadcast>(n, K)...);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

template <class T, bool... IsBroadcast>
void check_positions() {
  check_positions<T, IsBroadcast...>(std::make_index_sequence<sizeof...(IsBroadcast)>{});
}

TEST(DeviceBroadcastPositions, FloatEveryPattern) {
  HARDACT_REQUIRE_DEVICE();
  using T = float;
  check_positions<T, true, false>();
  check_positions<T, false, true>();
  check_positions<T, true, false, false>();
  check_positions<T, false, true, false>();
  check_positions<T, false, false, true>();
  check_positions<T, true, true, false>();
  check_positions<T, true, false, true>();
  check_positions<T, false, true, true>();
  check_positions<T, true, false, false, false>();
  check_positions<T, false, true, false, true>();
  check_positions<T, false, false, false, true>();
  check_positions<T, true, true, true, false>();
  check_positions<T, false, true, true, true>();
}

TEST(DeviceBroadcastPositions, Bfloat16FirstMiddleLast) {
  HARDACT_REQUIRE_DEVICE();
  using T = __nv_bfloat16;
  check_positions<T, true, false, false>();
  check_positions<T, false, true, false>();
  check_positions<T, false, false, true>();
}

// Broadcasts whose inner and period equal the first broadcast's share its element positions
// (located_like_first); one in between with a shape of its own must not.
TEST(DeviceBroadcastPositions, SharedAndOwnPositions) {
  HARDACT_REQUIRE_DEVICE();
  for (const std::size_t n : {std::size_t{1000}, std::size_t{65536 + 7}, std::size_t{(1u << 20) + 3}}) {
    check_call<float>(Positional{}, n, full_input<float>(n, n), channel_input<float>(64, 7, 300),
                      channel_input<float>(3, 49, 301), channel_input<float>(64, 7, 302));
    check_call<__nv_bfloat16>(Positional{}, n, full_input<__nv_bfloat16>(n, n), channel_input<__nv_bfloat16>(5, 1, 303),
                              channel_input<__nv_bfloat16>(5, 1, 304), channel_input<__nv_bfloat16>(2, 3136, 305));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// =============================================================================================
// Mixed types: broadcasts of another type than x and the output compute in the common compute type
// and round once.

TEST(DeviceBroadcastMixed, Bfloat16WithFloatScaleShift) {
  HARDACT_REQUIRE_DEVICE();
  using B = __nv_bfloat16;
  const auto op = hardact::scale_shift_activation(hardact::HardSwish{});
  for (const std::size_t n : sweep_sizes()) {
    check_call<B>(op, n, full_input<B>(n, n), channel_input<float>(16, 49, 1), channel_input<float>(16, 49, 2));
    check_call<B>(op, n, full_input<B>(n, n), channel_input<float>(64, 1, 3), channel_input<float>(64, 1, 4));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(DeviceBroadcastMixed, HalfWithFloatBias) {
  HARDACT_REQUIRE_DEVICE();
  using H = __half;
  for (const std::size_t n : sweep_sizes()) {
    check_call<H>(hardact::bias_activation(hardact::HardSigmoid{}), n, full_input<H>(n, n), channel_input<float>(100, 1, 3));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(DeviceBroadcastMixed, FloatWithDoubleBiasComputesInDouble) {
  HARDACT_REQUIRE_DEVICE();
  for (const std::size_t n : sweep_sizes()) {
    check_call<float>(hardact::bias_activation(hardact::HardSwish{}), n, full_input<float>(n, n),
                      channel_input<double>(33, 3, 4));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// =============================================================================================
// Broadcast shapes beyond the array: inner past n (one value for all), a period longer than n.

TYPED_TEST(DeviceBroadcast, ShapesLargerThanTheArray) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  const auto op = hardact::bias_activation(hardact::HardSwish{});
  for (const std::size_t n : {std::size_t{5}, std::size_t{4097}}) {
    check_call<T>(op, n, full_input<T>(n, n), Channels<T>{random_values<T>(3, 9), std::size_t{1} << 62});
    check_call<T>(op, n, full_input<T>(n, n), Channels<T>{random_values<T>(3, 9), SIZE_MAX});
    check_call<T>(op, n, full_input<T>(n, n), channel_input<T>(n + 5, 1, 10));
    check_call<T>(op, n, full_input<T>(n, n), channel_input<T>(n, 1, 11));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// =============================================================================================
// Refusals on the device: nothing launched, nothing written; the boundaries that are allowed.

TYPED_TEST(DeviceBroadcast, ValuesInsideTheOutputAreRefused) {
  HARDACT_REQUIRE_DEVICE();
  using T = TypeParam;
  constexpr std::size_t n = 1000, margin = 64;
  const auto op = hardact::bias_activation(hardact::HardSwish{});
  const Full<T> x = full_input<T>(n, 1);
  GuardedBuffer<T> in(n), region(n + 2 * margin), values(8);
  HARDACT_ASSERT_CUDA(in.status());
  HARDACT_ASSERT_CUDA(region.status());
  HARDACT_ASSERT_CUDA(values.status());
  HARDACT_ASSERT_CUDA(in.upload(x.values));
  const std::vector<T> value_data = random_values<T>(8, 2);
  HARDACT_ASSERT_CUDA(values.upload(value_data));
  const T* const x_data = in.data();
  T* const out = region.data() + margin;
  const auto at = [](T* pointer) { return static_cast<const T*>(pointer); };
  const std::size_t refused_shapes[][2] = {{0, 4}, {10, 3}, {n - 1, 1}, {static_cast<std::size_t>(-1), 2}};
  for (const auto& shape : refused_shapes) {
    const hardact::Broadcast<T> b = hardact::per_channel(at(out + static_cast<std::ptrdiff_t>(shape[0])), shape[1]);
    EXPECT_EQ(hardact::transform(op, x_data, b, out, n), cudaErrorInvalidValue) << shape[0];
    EXPECT_EQ(hardact::transform(hardact::HardSigmoidGate{}, b, x_data, out, n), cudaErrorInvalidValue) << shape[0];
  }
  EXPECT_EQ(hardact::transform(op, x_data, hardact::per_channel(at(out - 2), n + 4), out, n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(op, x_data, hardact::per_channel(static_cast<const T*>(nullptr), 4), out, n),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(op, x_data, hardact::Broadcast<T>{values.data(), 0, 4}, out, n), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::transform(op, x_data, hardact::Broadcast<T>{values.data(), 1, 0}, out, n), cudaErrorInvalidValue);
  if constexpr (alignof(T) > 1) {
    const T* const misaligned = reinterpret_cast<const T*>(reinterpret_cast<const unsigned char*>(values.data()) + 1);
    EXPECT_EQ(hardact::transform(op, x_data, hardact::per_channel(misaligned, 4), out, n), cudaErrorInvalidValue);
  }
  EXPECT_EQ(hardact::transform(op, x_data, hardact::per_channel(at(values.data()), 4), out, std::size_t{kTwo63} + 1),
            cudaErrorInvalidValue);
  // In place: values inside x are inside the output.
  EXPECT_EQ(hardact::transform(op, x_data, hardact::per_channel(x_data + 3, 4), in.data(), n), cudaErrorInvalidValue);
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  HARDACT_ASSERT_CUDA(cudaGetLastError());
  EXPECT_TRUE(family::payload_untouched(region));
  EXPECT_TRUE(region.guards_intact());
  std::vector<T> after;
  HARDACT_ASSERT_CUDA(in.download(after));
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(to_bits(after[i]), to_bits(x.values[i])) << "x element " << i;

  // Allowed: values ending right where the output starts, starting right after it, inside x.
  const std::size_t period = 4;
  const std::vector<T> before_values = random_values<T>(period, 3), after_values = random_values<T>(period, 4);
  HARDACT_ASSERT_CUDA(cudaMemcpy(out - period, before_values.data(), period * sizeof(T), cudaMemcpyHostToDevice));
  HARDACT_ASSERT_CUDA(cudaMemcpy(out + n, after_values.data(), period * sizeof(T), cudaMemcpyHostToDevice));
  const struct {
    const T* values;
    std::vector<T> host;
  } allowed[] = {{at(out - period), before_values},
                 {at(out + n), after_values},
                 {x_data + 3, std::vector<T>(x.values.begin() + 3, x.values.begin() + 3 + period)}};
  for (const auto& case_ : allowed) {
    const Channels<T> b{case_.host, 1};
    const std::vector<T> expected = expected_outputs<T>(op, n, x, b);
    for (const TransformPath path : paths_under_test<0>()) {
      const ScopedTransformPath forced(path);
      HARDACT_ASSERT_CUDA(cudaMemset(out, kPoisonByte, n * sizeof(T)));
      HARDACT_ASSERT_CUDA(hardact::transform(op, x_data, hardact::per_channel(case_.values, period), out, n));
      HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
      std::vector<T> outputs(n);
      HARDACT_ASSERT_CUDA(cudaMemcpy(outputs.data(), out, n * sizeof(T), cudaMemcpyDeviceToHost));
      EXPECT_TRUE(family::all_match(x.values, outputs, expected)) << path_name(path);
    }
  }
  std::vector<T> kept(period);
  HARDACT_ASSERT_CUDA(cudaMemcpy(kept.data(), out - period, period * sizeof(T), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < period; ++i) EXPECT_EQ(to_bits(kept[i]), to_bits(before_values[i]));
  HARDACT_ASSERT_CUDA(cudaMemcpy(kept.data(), out + n, period * sizeof(T), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < period; ++i) EXPECT_EQ(to_bits(kept[i]), to_bits(after_values[i]));
  EXPECT_TRUE(region.guards_intact());
}

// =============================================================================================
// FastDivmod and DeviceBroadcast's index stepping in device code.

/// divmod (Wide) or divmod32 of each case's FastDivmod, in device code.
template <bool Wide>
__global__ void divide_on_device(const hardact::detail::FastDivmod* divmods, const std::uint64_t* numerators,
                                 std::uint64_t* quotients, std::uint64_t* remainders, std::size_t count) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  if constexpr (Wide) {
    divmods[i].divmod(numerators[i], quotients[i], remainders[i]);
  } else {
    std::uint32_t q = 0, r = 0;
    divmods[i].divmod32(static_cast<std::uint32_t>(numerators[i]), q, r);
    quotients[i] = q;
    remainders[i] = r;
  }
}

template <bool Wide>
void check_device_division(const std::vector<divmod::Case>& cases) {
  const std::size_t count = cases.size();
  std::vector<hardact::detail::FastDivmod> divmods(count);
  std::vector<std::uint64_t> numerators(count);
  for (std::size_t i = 0; i < count; ++i) {
    divmods[i] = hardact::detail::FastDivmod::make(cases[i].divisor);
    numerators[i] = cases[i].numerator;
  }
  GuardedBuffer<hardact::detail::FastDivmod> device_divmods(count);
  GuardedBuffer<std::uint64_t> device_numerators(count), quotients(count), remainders(count);
  HARDACT_ASSERT_CUDA(device_divmods.status());
  HARDACT_ASSERT_CUDA(device_numerators.status());
  HARDACT_ASSERT_CUDA(quotients.status());
  HARDACT_ASSERT_CUDA(remainders.status());
  HARDACT_ASSERT_CUDA(device_divmods.upload(divmods));
  HARDACT_ASSERT_CUDA(device_numerators.upload(numerators));
  const unsigned blocks = static_cast<unsigned>((count + 255) / 256);
  divide_on_device<Wide><<<blocks, 256>>>(device_divmods.data(), device_numerators.data(), quotients.data(),
                                          remainders.data(), count);
  HARDACT_ASSERT_CUDA(cudaGetLastError());
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  std::vector<std::uint64_t> q, r;
  HARDACT_ASSERT_CUDA(quotients.download(q));
  HARDACT_ASSERT_CUDA(remainders.download(r));
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (q[i] == cases[i].quotient && r[i] == cases[i].remainder) continue;
    if (++mismatches <= 10) {
      ADD_FAILURE() << (Wide ? "" : "divmod32: ") << cases[i].numerator << " / " << cases[i].divisor << ": got (" << q[i] << ", " << r[i]
                    << "), expected (" << cases[i].quotient << ", " << cases[i].remainder << ")";
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << count << (Wide ? "" : " (divmod32)");
}

TEST(DeviceFastDivmod, MatchesDivisionAndRemainder) {
  HARDACT_REQUIRE_DEVICE();
  check_device_division<true>(quick_mode() ? divmod::cases(300, 300, 4) : divmod::cases(5000, 4000, 12));
}

TEST(DeviceFastDivmod, Divmod32MatchesDivisionBelow2To31) {
  HARDACT_REQUIRE_DEVICE();
  check_device_division<false>(quick_mode() ? divmod::cases32(300, 300, 4) : divmod::cases32(5000, 4000, 12));
}

/// For each first index: load<Count>(first) and at(first + j), as the kernels read broadcasts.
/// Values narrower than 32 bits are held packed (ValueArray), two or four to a word.
template <class V, int Count>
__global__ void broadcast_reads(hardact::detail::DeviceBroadcast<V> broadcast, const std::uint64_t* firsts, V* loaded,
                                V* single, std::size_t count) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  hardact::detail::ValueArray<V, Count> values;
  broadcast.template load<Count>(firsts[i], values);
  for (int j = 0; j < Count; ++j) {
    loaded[i * Count + static_cast<std::size_t>(j)] = values.get(j);
    single[i * Count + static_cast<std::size_t>(j)] = broadcast.at(firsts[i] + static_cast<std::size_t>(j));
  }
}

/// The broadcast {values + skew, inner, period} of a call of `call_size` elements, prepared as the
/// launchers prepare it (the 32-bit form up to 2^31 elements), read at first indexes next to the
/// ends of runs and cycles, of the call, and at random, every index read below call_size.
template <int Count, class V>
void check_broadcast_reads(std::size_t call_size, std::size_t inner, std::size_t period, std::size_t skew,
                           const std::vector<V>& values, GuardedBuffer<V>& device_values) {
  std::vector<std::uint64_t> firsts = {0, 1, inner - 1, inner, call_size - Count, call_size - 64};
  if (inner <= kTwo63 / period) {
    firsts.push_back(inner * period - 1);
    firsts.push_back(inner * period - Count / 2);
    firsts.push_back(3 * inner * period - 2);
  }
  std::mt19937_64 engine(inner * 31 + period);
  for (int k = 0; k < 64; ++k) firsts.push_back((engine() >> (1 + engine() % 63)) % (call_size - Count));
  std::vector<std::uint64_t> in_range;
  for (const std::uint64_t first : firsts)
    if (first <= call_size - Count) in_range.push_back(first);
  firsts.swap(in_range);
  const std::size_t count = firsts.size();
  GuardedBuffer<std::uint64_t> device_firsts(count);
  GuardedBuffer<V> loaded(count * Count), single(count * Count);
  HARDACT_ASSERT_CUDA(device_firsts.status());
  HARDACT_ASSERT_CUDA(loaded.status());
  HARDACT_ASSERT_CUDA(single.status());
  HARDACT_ASSERT_CUDA(device_firsts.upload(firsts));
  const hardact::detail::DeviceBroadcast<V> broadcast =
      hardact::detail::prepare_broadcast(hardact::Broadcast<V>{device_values.data() + skew, inner, period}, call_size);
  broadcast_reads<V, Count><<<static_cast<unsigned>((count + 127) / 128), 128>>>(broadcast, device_firsts.data(),
                                                                                loaded.data(), single.data(), count);
  HARDACT_ASSERT_CUDA(cudaGetLastError());
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  std::vector<V> got_loaded, got_single;
  HARDACT_ASSERT_CUDA(loaded.download(got_loaded));
  HARDACT_ASSERT_CUDA(single.download(got_single));
  for (std::size_t i = 0; i < count; ++i) {
    for (std::size_t j = 0; j < static_cast<std::size_t>(Count); ++j) {
      const std::uint64_t index = firsts[i] + j;
      const V expected = values[skew + (index / inner) % period];
      const std::string where = ", inner " + std::to_string(inner) + ", period " + std::to_string(period) + ", skew " +
                                std::to_string(skew) + ", call of " + std::to_string(call_size);
      ASSERT_EQ(got_loaded[i * Count + j], expected) << "load<" << Count << ">(" << firsts[i] << ")[" << j << "]" << where;
      ASSERT_EQ(got_single[i * Count + j], expected) << "at(" << index << ")" << where;
    }
  }
}

// DeviceBroadcast's at() and load<Count>() (one value for a run, contiguous values 16 bytes at a time
// when aligned, a step per element otherwise) in calls of up to 2^31 elements (32-bit form) and up
// to 2^63 (64-bit form), values aligned to 16 bytes and not; 32-bit values, and 16-bit and 8-bit
// ones, which ValueArray packs (8-bit: periods up to 64, so that the values stay distinct).
template <class V>
void check_broadcast_reads_of(std::size_t max_period) {
  std::vector<V> values(max_period + 1);
  for (std::size_t k = 0; k <= max_period; ++k) values[k] = static_cast<V>(k * 2654435761u + 12345u);
  GuardedBuffer<V> device_values(max_period + 1);
  HARDACT_ASSERT_CUDA(device_values.status());
  HARDACT_ASSERT_CUDA(device_values.upload(values));
  const bool quick = quick_mode();
  const std::vector<std::size_t> inners =
      quick ? std::vector<std::size_t>{1, 3, 49, std::size_t{1} << 40}
            : std::vector<std::size_t>{1, 2, 3, 7, 49, 3136, (std::size_t{1} << 20) + 1, std::size_t{1} << 40,
                                       std::size_t{1} << 62, std::size_t{kTwo63}};
  std::vector<std::size_t> periods;
  for (const std::size_t period : quick ? std::vector<std::size_t>{1, 3, 64} : std::vector<std::size_t>{1, 2, 3, 5, 64, 1000})
    if (period <= max_period) periods.push_back(period);
  const std::vector<std::size_t> call_sizes =
      quick ? std::vector<std::size_t>{divmod::kTwo31, kTwo63}
            : std::vector<std::size_t>{std::size_t{1} << 20, divmod::kTwo31, divmod::kTwo31 + 1, kTwo63};
  for (const std::size_t inner : inners) {
    for (const std::size_t period : periods) {
      for (const std::size_t call_size : call_sizes) {
        for (const std::size_t skew : {std::size_t{0}, std::size_t{1}}) {
          check_broadcast_reads<1>(call_size, inner, period, skew, values, device_values);
          check_broadcast_reads<4>(call_size, inner, period, skew, values, device_values);
          check_broadcast_reads<8>(call_size, inner, period, skew, values, device_values);
          check_broadcast_reads<16>(call_size, inner, period, skew, values, device_values);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(DeviceFastDivmod, BroadcastReadsUpTo2To63) {
  HARDACT_REQUIRE_DEVICE();
  check_broadcast_reads_of<std::uint32_t>(1000);
}

TEST(DeviceFastDivmod, PackedBroadcastReadsUpTo2To63) {
  HARDACT_REQUIRE_DEVICE();
  check_broadcast_reads_of<std::uint16_t>(1000);
  if (::testing::Test::HasFatalFailure()) return;
  check_broadcast_reads_of<std::uint8_t>(64);
}

// =============================================================================================
// channel_sum.

/// Per-channel sums in double, with the sum of magnitudes and the count of each channel.
struct ChannelTotals {
  std::vector<double> sums, magnitudes;
  std::size_t count = 0;
};

template <class T>
ChannelTotals channel_totals(const std::vector<T>& in, std::size_t channels, std::size_t inner) {
  ChannelTotals totals{std::vector<double>(channels, 0.0), std::vector<double>(channels, 0.0),
                       channels > 0 ? in.size() / channels : 0};
  for (std::size_t i = 0; i < in.size(); ++i) {
    const double value = family::value_of(in[i]);
    totals.sums[(i / inner) % channels] += value;
    totals.magnitudes[(i / inner) % channels] += std::fabs(value);
  }
  return totals;
}

/// channel_sum on `in` as [outer, channels, inner], at the given offsets, checking guard bands and
/// that the input and the temporary storage past its size are untouched.
template <class T, class TOut>
::testing::AssertionResult run_channel_sum(const std::vector<T>& in, std::size_t channels, std::size_t inner,
                                           std::vector<TOut>& sums, std::size_t in_offset = 0,
                                           std::size_t out_offset = 0, cudaStream_t stream = nullptr) {
  const std::size_t n = in.size();
  GuardedBuffer<T> input(n, in_offset);
  GuardedBuffer<TOut> output(channels, out_offset);
  if (input.status() != cudaSuccess || output.status() != cudaSuccess) return ::testing::AssertionFailure() << "alloc";
  if (input.upload(in) != cudaSuccess) return ::testing::AssertionFailure() << "upload";
  std::size_t bytes = 0;
  cudaError_t status = hardact::channel_sum(nullptr, bytes, static_cast<const T*>(input.data()), n, channels, inner,
                                            output.data(), stream);
  if (status != cudaSuccess) return ::testing::AssertionFailure() << "size query: " << cudaGetErrorName(status);
  GuardedBuffer<unsigned char> temp(bytes);
  if (temp.status() != cudaSuccess) return ::testing::AssertionFailure() << "temp alloc";
  // The buffers were poisoned on the legacy stream, which a non-blocking stream does not wait for.
  if (cudaDeviceSynchronize() != cudaSuccess) return ::testing::AssertionFailure() << "synchronize";
  status = hardact::channel_sum(static_cast<void*>(temp.data()), bytes, static_cast<const T*>(input.data()), n,
                                channels, inner, output.data(), stream);
  if (status != cudaSuccess) return ::testing::AssertionFailure() << "channel_sum: " << cudaGetErrorName(status);
  status = cudaDeviceSynchronize();
  if (status == cudaSuccess) status = cudaGetLastError();
  if (status != cudaSuccess) return ::testing::AssertionFailure() << "kernel: " << cudaGetErrorName(status);
  if (output.download(sums) != cudaSuccess) return ::testing::AssertionFailure() << "download";
  if (!output.guards_intact()) return ::testing::AssertionFailure() << "sums guard band overwritten";
  if (!temp.guards_intact()) return ::testing::AssertionFailure() << "write past the temporary storage";
  std::vector<T> after;
  if (input.download(after) != cudaSuccess) return ::testing::AssertionFailure() << "download input";
  for (std::size_t i = 0; i < n; ++i) {
    if (to_bits(after[i]) != to_bits(in[i])) return ::testing::AssertionFailure() << "input element " << i << " modified";
  }
  if (!input.guards_intact()) return ::testing::AssertionFailure() << "input guard band overwritten";
  return ::testing::AssertionSuccess();
}

struct SumShape {
  std::size_t channels, inner, outer;
};

/// Shapes: inner 1 (rows of a row-major array) and inner > 1 (NCHW), a single row, many rows per
/// channel, and (unless quick) a row of more than 2^20 elements and a million-element NCHW.
std::vector<SumShape> sum_shapes() {
  std::vector<SumShape> shapes = {{1, 1, 1},  {7, 1, 1},   {3, 1, 1000}, {64, 1, 4097}, {1000, 1, 257},
                                  {3, 49, 5}, {16, 7, 1},  {5, 1, 3},    {8, 64, 33},   {2, 3136, 3}};
  if (!family::quick_mode()) {
    shapes.push_back({64, 3136, 2});
    shapes.push_back({32, 49, 700});
    shapes.push_back({1100, 1000, 2});
    shapes.push_back({1, 1, (std::size_t{1} << 22) + 1});
  }
  return shapes;
}

std::string describe(const SumShape& shape) {
  return "C " + std::to_string(shape.channels) + ", inner " + std::to_string(shape.inner) + ", outer " +
         std::to_string(shape.outer);
}

/// Small integers (|x| <= 8): every partial sum is an integer below 2^24, so float accumulation is
/// exact and the result is the exact sum rounded once to TOut.
template <class T, class TOut>
void check_exact_sums() {
  for (const SumShape& shape : sum_shapes()) {
    SCOPED_TRACE(describe(shape));
    const std::size_t n = shape.channels * shape.inner * shape.outer;
    // Float accumulation stays exact while every partial sum is an integer below 2^24.
    if (!std::is_same_v<hardact::detail::accumulate_t<T>, double> && n / shape.channels * 8 >= (std::size_t{1} << 24)) {
      continue;
    }
    std::vector<T> in(n);
    std::mt19937_64 engine(n);
    for (T& value : in) value = from_double<T>(static_cast<double>(static_cast<int>(engine() % 17) - 8));
    const ChannelTotals totals = channel_totals(in, shape.channels, shape.inner);
    std::vector<TOut> sums;
    ASSERT_TRUE((run_channel_sum<T, TOut>(in, shape.channels, shape.inner, sums, 1, 1)));
    for (std::size_t c = 0; c < shape.channels; ++c) {
      ASSERT_EQ(to_bits(sums[c]), to_bits(family::round_to<TOut>(totals.sums[c])))
          << "channel " << c << ": got " << family::show(sums[c]) << ", exact " << totals.sums[c];
    }
  }
}

/// Random values in [-1, 1]: within the accumulation error bound, count * u * sum of |x| (any order
/// of summation), plus half an ulp of TOut for the final rounding.
template <class T, class TOut>
void check_random_sums() {
  using Acc = hardact::detail::accumulate_t<T>;
  const double unit = std::is_same_v<Acc, double> ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  const double out_unit = std::ldexp(1.0, -(family::is_narrow<TOut> ? 8 : std::is_same_v<TOut, double> ? 53 : 24));
  for (const SumShape& shape : sum_shapes()) {
    SCOPED_TRACE(describe(shape));
    const std::size_t n = shape.channels * shape.inner * shape.outer;
    std::vector<T> in(n);
    std::mt19937_64 engine(n + 1);
    std::uniform_real_distribution<double> unit_interval(-1.0, 1.0);
    for (T& value : in) value = from_double<T>(unit_interval(engine));
    const ChannelTotals totals = channel_totals(in, shape.channels, shape.inner);
    std::vector<TOut> sums, again;
    ASSERT_TRUE((run_channel_sum<T, TOut>(in, shape.channels, shape.inner, sums, 3, 0)));
    for (std::size_t c = 0; c < shape.channels; ++c) {
      const double got = family::value_of(sums[c]);
      const double tolerance = static_cast<double>(totals.count) * unit * totals.magnitudes[c] +
                               out_unit * std::fabs(totals.sums[c]) + 1e-300;
      ASSERT_LE(std::fabs(got - totals.sums[c]), tolerance)
          << "channel " << c << ": got " << got << ", reference " << totals.sums[c];
    }
    // Deterministic: the same bits on a second run, at other offsets.
    ASSERT_TRUE((run_channel_sum<T, TOut>(in, shape.channels, shape.inner, again, 0, 2)));
    for (std::size_t c = 0; c < shape.channels; ++c) ASSERT_EQ(to_bits(again[c]), to_bits(sums[c])) << "channel " << c;
  }
}

/// n == 0 writes zeros (the sums start poisoned), with or without an input pointer.
template <class T, class TOut>
void check_empty_sums() {
  for (const bool null_input : {false, true}) {
    for (const auto& [channels, inner] : {std::pair<std::size_t, std::size_t>{5, 3}, {1, 1}, {64, 1}}) {
      GuardedBuffer<T> input(4);
      GuardedBuffer<TOut> output(channels, 1);
      HARDACT_ASSERT_CUDA(input.status());
      HARDACT_ASSERT_CUDA(output.status());
      const T* const in = null_input ? nullptr : input.data();
      std::size_t bytes = 0;
      HARDACT_ASSERT_CUDA(hardact::channel_sum(nullptr, bytes, in, 0, channels, inner, output.data()));
      GuardedBuffer<unsigned char> temp(bytes);
      HARDACT_ASSERT_CUDA(temp.status());
      HARDACT_ASSERT_CUDA(hardact::channel_sum(static_cast<void*>(temp.data()), bytes, in, 0, channels, inner,
                                               output.data()));
      HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
      std::vector<TOut> sums;
      HARDACT_ASSERT_CUDA(output.download(sums));
      for (std::size_t c = 0; c < channels; ++c) {
        EXPECT_EQ(to_bits(sums[c]), to_bits(family::round_to<TOut>(0.0))) << "channel " << c << " of " << channels;
      }
      EXPECT_TRUE(output.guards_intact() && temp.guards_intact());
    }
  }
}

TEST(DeviceChannelSum, FloatExactAndWithinFloatError) {
  HARDACT_REQUIRE_DEVICE();
  check_exact_sums<float, float>();
  check_random_sums<float, float>();
  check_empty_sums<float, float>();
}

TEST(DeviceChannelSum, Bfloat16AccumulatesInFloatRoundsOnce) {
  HARDACT_REQUIRE_DEVICE();
  check_exact_sums<__nv_bfloat16, __nv_bfloat16>();
  check_random_sums<__nv_bfloat16, __nv_bfloat16>();
  check_empty_sums<__nv_bfloat16, __nv_bfloat16>();
  check_exact_sums<__nv_bfloat16, float>();
  check_random_sums<__nv_bfloat16, float>();
}

TEST(DeviceChannelSum, DoubleAccumulatesInDouble) {
  HARDACT_REQUIRE_DEVICE();
  check_exact_sums<double, double>();
  check_random_sums<double, double>();
  check_empty_sums<double, double>();
  check_exact_sums<float, double>();
}

// On a non-blocking stream: everything enqueued there, nothing on the legacy stream.
TEST(DeviceChannelSum, OnAStream) {
  HARDACT_REQUIRE_DEVICE();
  Stream stream;
  HARDACT_ASSERT_CUDA(stream.status());
  const std::size_t channels = 24, inner = 49, outer = 9;
  std::vector<float> in(channels * inner * outer);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(static_cast<int>(i % 13) - 6);
  const ChannelTotals totals = channel_totals(in, channels, inner);
  std::vector<float> sums;
  ASSERT_TRUE((run_channel_sum<float, float>(in, channels, inner, sums, 0, 0, stream.get())));
  for (std::size_t c = 0; c < channels; ++c) EXPECT_EQ(sums[c], static_cast<float>(totals.sums[c])) << c;
}

// Refusals: cudaErrorInvalidValue, the sums untouched.
TEST(DeviceChannelSum, BadArgumentsWriteNothing) {
  HARDACT_REQUIRE_DEVICE();
  const std::size_t channels = 6, inner = 7, outer = 5, n = channels * inner * outer;
  GuardedBuffer<float> input(n + 1), output(channels + 1);
  HARDACT_ASSERT_CUDA(input.status());
  HARDACT_ASSERT_CUDA(output.status());
  HARDACT_ASSERT_CUDA(input.upload(std::vector<float>(n + 1, 1.0f)));
  const float* const in = input.data();
  float* const sums = output.data();
  std::size_t bytes = 0;
  HARDACT_ASSERT_CUDA(hardact::channel_sum(nullptr, bytes, in, n, channels, inner, sums));
  ASSERT_GT(bytes, 0u);
  GuardedBuffer<unsigned char> temp(bytes);
  HARDACT_ASSERT_CUDA(temp.status());
  void* const storage = temp.data();
  std::size_t small = bytes - 1, none = 0;
  EXPECT_EQ(hardact::channel_sum(storage, small, in, n, channels, inner, sums), cudaErrorInvalidValue) << "too small";
  EXPECT_EQ(hardact::channel_sum(storage, none, in, n, channels, inner, sums), cudaErrorInvalidValue) << "0 bytes";
  EXPECT_EQ(hardact::channel_sum(storage, bytes, in, n + 1, channels, inner, sums), cudaErrorInvalidValue)
      << "n not a multiple of channels * inner";
  EXPECT_EQ(hardact::channel_sum(storage, bytes, in, n - inner, channels, inner, sums), cudaErrorInvalidValue)
      << "n not a multiple of channels * inner";
  EXPECT_EQ(hardact::channel_sum(storage, bytes, in, n, std::size_t{0}, inner, sums), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::channel_sum(storage, bytes, in, n, channels, std::size_t{0}, sums), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::channel_sum(storage, bytes, in, n, channels, inner, static_cast<float*>(nullptr)),
            cudaErrorInvalidValue);
  EXPECT_EQ(hardact::channel_sum(storage, bytes, static_cast<const float*>(nullptr), n, channels, inner, sums),
            cudaErrorInvalidValue);
  const auto skew = [](auto* pointer) {
    using P = decltype(pointer);
    return reinterpret_cast<P>(reinterpret_cast<std::uintptr_t>(pointer) + 2);
  };
  EXPECT_EQ(hardact::channel_sum(storage, bytes, skew(in), n, channels, inner, sums), cudaErrorInvalidValue);
  EXPECT_EQ(hardact::channel_sum(storage, bytes, in, n, channels, inner, skew(sums)), cudaErrorInvalidValue);
  HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
  HARDACT_ASSERT_CUDA(cudaGetLastError());
  EXPECT_TRUE(family::payload_untouched(output));
  EXPECT_TRUE(output.guards_intact() && temp.guards_intact());
}

}  // namespace
