// Test support for the broadcast device tests (device_broadcast_*_test.cu): inputs (full-length
// or broadcast, element i of a broadcast reading values[(i / inner) % period], of a sample
// broadcast values[(i / inner) % period + period * (i / span)]), the host reference
// of one call (the policy on each element's values, in the kernels' type rule), and check_call: one
// transform call at every offset class and in place, on the direct and on the staged path, in one
// LaunchBatch, every output element compared bit for bit (NaN as a class) and everything outside
// the output checked untouched.
#pragma once

#include "support/device_family.hpp"
#include "support/launch_batch.hpp"
#include "support/paths.hpp"
#include "support/reference_family.hpp"
#include "support/transform_check.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace hardact_test {
namespace broadcast {

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

/// A SampleBroadcast's values, `period` per span: element i reads values[(i / inner) % period +
/// period * (i / span)].
template <class T>
struct SampleChannels {
  using Element = T;
  static constexpr bool kBroadcast = true;
  std::vector<T> values;
  std::size_t inner = 1;
  std::size_t period = 1;
  std::size_t span = 1;

  T at(std::size_t i) const { return values[(i / inner) % period + period * (i / span)]; }
};

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

/// The values of a SampleBroadcast over a call of n elements: `period` values for each of the
/// ceil(n / span) spans it reaches. A channels-last per-(n, c) gate is inner 1, period C, span
/// C * H * W.
template <class T>
SampleChannels<T> sample_channel_input(std::size_t n, std::size_t inner, std::size_t period, std::size_t span,
                                       std::uint64_t seed) {
  return {random_values<T>(period * ((n + span - 1) / span), seed, {-3.0, 3.0, 0.5}), inner, period, span};
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

inline std::string describe(const Placement& placement) {
  std::string text = "offsets";
  for (const std::size_t offset : placement.offsets) text += " " + std::to_string(offset);
  if (placement.in_place >= 0) text += ", output in place on input " + std::to_string(placement.in_place);
  return text;
}

/// device_family.hpp's offset classes for `count` arrays (inputs, then the output): all aligned,
/// each one misaligned alone, all misaligned alike, all misaligned differently (twice). Quick mode:
/// aligned and misaligned differently.
inline std::vector<Placement> offset_classes(std::size_t count) {
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
inline std::vector<Placement> in_place_classes(std::size_t count, int k) {
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
template <class T>
hardact::SampleBroadcast<T> device_argument(const SampleChannels<T>& input, unsigned char* arena,
                                            const ArenaRegion& region, std::size_t offset) {
  return {LaunchBatch::pointer<const T>(arena, region) + offset, input.inner, input.period, input.span};
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

/// x + residual + bias, in the compute type (the first step of a chain, which passes it C values).
struct AddResidualAndBias {
  template <class C>
  __host__ __device__ C operator()(C x, C residual, C bias) const {
    return hardact::detail::add_rn(hardact::detail::add_rn(x, residual), bias);
  }
};

/// The element counts of device_family.hpp's sweep (tiny, around a vector and a block, 2^16 + 7,
/// and unless quick 2^20 + 3 and 2^22 + 13); quick mode keeps a few small ones.
inline std::vector<std::size_t> sweep_sizes() {
  if (family::quick_mode()) return {1, 3, 31, 1000, 4097};
  return family::sweep_sizes();
}

}  // namespace broadcast
}  // namespace hardact_test
