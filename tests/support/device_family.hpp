// Test support for the family's device tests: input data, size and offset sweeps, and runs of the
// one- and two-input launchers between poisoned guard bands, compared bit for bit (NaN as a
// class) with a host reference. HARDACT_TEST_QUICK=1 (used under compute-sanitizer) keeps only
// the small sizes.
#pragma once

#include "support/bits.hpp"
#include "support/device.hpp"
#include "support/paths.hpp"
#include "support/reference_family.hpp"
#include "support/values.hpp"

#include <hardact/hardact.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace hardact_test {
namespace family {

inline bool quick_mode() {
  const char* value = std::getenv("HARDACT_TEST_QUICK");
  return value != nullptr && std::strcmp(value, "0") != 0 && value[0] != '\0';
}

/// Element counts: tiny (head and tail only), around one vector and one block, and, unless quick,
/// large enough for the streaming block shape of every element type (> 2 waves of 512 x 32 bytes
/// on 132 SMs for 2-byte types) with a ragged tail.
inline std::vector<std::size_t> sweep_sizes() {
  std::vector<std::size_t> sizes = {1, 2, 3, 5, 16, 31, 129, 1000, 4097, 65536 + 7};
  if (!quick_mode()) {
    sizes.push_back((std::size_t(1) << 20) + 3);
    sizes.push_back((std::size_t(1) << 22) + 13);
  }
  return sizes;
}

/// Element offsets of (first input, [second input,] output) from a 256-byte boundary: all aligned,
/// each one misaligned alone, and all misaligned differently (the launcher then falls back to
/// narrower vectors or scalars).
inline std::vector<std::array<std::size_t, 3>> sweep_offsets() {
  return {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {3, 1, 2}, {5, 5, 5}, {2, 7, 4}};
}

/// n inputs: for 16-bit types every bit pattern once per 65,536 elements (in a scrambled order);
/// for 8-bit types every pattern; otherwise reproducible random values salted with special ones.
template <class T>
std::vector<T> device_inputs(std::size_t n, std::uint64_t seed) {
  std::vector<T> values(n);
  if constexpr (sizeof(T) <= 2) {
    const std::uint32_t mask = (1u << (8 * sizeof(T))) - 1;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t bits = static_cast<std::uint32_t>((i + seed) * 40503u) & mask;  // odd: a permutation
      values[i] = from_bits<T>(static_cast<bits_t<T>>(bits));
    }
  } else {
    values = random_values<T>(n, seed, {-3.0, 3.0, 6.0, -2.5, 2.5});
  }
  return values;
}

/// Runs out = op(in) on `inputs` at each offset pair, and in place when TIn == TOut; compares every
/// element with reference(inputs[i]) and checks the guard bands. On the path in force.
template <class TIn, class TOut, class Op, class Reference>
void check_one_input_on_path(const Op& op, const Reference& reference, const std::vector<TIn>& inputs) {
  const std::size_t n = inputs.size();
  std::vector<TOut> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = reference(inputs[i]);
  for (const auto& offsets : sweep_offsets()) {
    SCOPED_TRACE("n=" + std::to_string(n) + " in offset " + std::to_string(offsets[0]) + " out offset " +
                 std::to_string(offsets[2]));
    GuardedBuffer<TIn> in(n, offsets[0]);
    GuardedBuffer<TOut> out(n, offsets[2]);
    HARDACT_ASSERT_CUDA(in.status());
    HARDACT_ASSERT_CUDA(out.status());
    HARDACT_ASSERT_CUDA(in.upload(inputs));
    HARDACT_ASSERT_CUDA(hardact::transform(op, static_cast<const TIn*>(in.data()), out.data(), n));
    HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
    std::vector<TOut> outputs;
    HARDACT_ASSERT_CUDA(out.download(outputs));
    ASSERT_TRUE(all_match(inputs, outputs, expected));
    EXPECT_TRUE(out.guards_intact());
    EXPECT_TRUE(in.guards_intact());
  }
  if constexpr (std::is_same_v<TIn, TOut>) {
    SCOPED_TRACE("in place, n=" + std::to_string(n));
    GuardedBuffer<TIn> data(n, 1);
    HARDACT_ASSERT_CUDA(data.status());
    HARDACT_ASSERT_CUDA(data.upload(inputs));
    HARDACT_ASSERT_CUDA(hardact::transform(op, static_cast<const TIn*>(data.data()), data.data(), n));
    HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
    std::vector<TOut> outputs;
    HARDACT_ASSERT_CUDA(data.download(outputs));
    ASSERT_TRUE(all_match(inputs, outputs, expected));
    EXPECT_TRUE(data.guards_intact());
  }
}

/// check_one_input_on_path on the direct and on the staged path.
template <class TIn, class TOut, class Op, class Reference>
void check_one_input_on(const Op& op, const Reference& reference, const std::vector<TIn>& inputs) {
  for (const TransformPath path : paths_under_test<0>()) {
    SCOPED_TRACE(path_name(path));
    const ScopedTransformPath forced(path);
    check_one_input_on_path<TIn, TOut>(op, reference, inputs);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

/// check_one_input_on for every size of sweep_sizes(), on device_inputs.
template <class TIn, class TOut, class Op, class Reference>
void check_one_input(const Op& op, const Reference& reference) {
  for (const std::size_t n : sweep_sizes()) {
    check_one_input_on<TIn, TOut>(op, reference, device_inputs<TIn>(n, n));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

/// Runs out = op(a, b) on `a_values` and `b_values` at each offset triple, and in place on a and on
/// b when the types allow; compares with reference(a[i], b[i]) and checks the guard bands. On the
/// path in force.
template <class TA, class TB, class TOut, class Op, class Reference>
void check_two_inputs_on_path(const Op& op, const Reference& reference, const std::vector<TA>& a_values,
                              const std::vector<TB>& b_values) {
  const std::size_t n = b_values.size();
  ASSERT_EQ(a_values.size(), n);
  std::vector<TOut> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = reference(a_values[i], b_values[i]);
  for (const auto& offsets : sweep_offsets()) {
    SCOPED_TRACE("n=" + std::to_string(n) + " offsets a " + std::to_string(offsets[0]) + " b " +
                 std::to_string(offsets[1]) + " out " + std::to_string(offsets[2]));
    GuardedBuffer<TA> a(n, offsets[0]);
    GuardedBuffer<TB> b(n, offsets[1]);
    GuardedBuffer<TOut> out(n, offsets[2]);
    HARDACT_ASSERT_CUDA(a.status());
    HARDACT_ASSERT_CUDA(b.status());
    HARDACT_ASSERT_CUDA(out.status());
    HARDACT_ASSERT_CUDA(a.upload(a_values));
    HARDACT_ASSERT_CUDA(b.upload(b_values));
    HARDACT_ASSERT_CUDA(
        hardact::transform(op, static_cast<const TA*>(a.data()), static_cast<const TB*>(b.data()), out.data(), n));
    HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
    std::vector<TOut> outputs;
    HARDACT_ASSERT_CUDA(out.download(outputs));
    ASSERT_TRUE(all_match(b_values, outputs, expected));
    EXPECT_TRUE(out.guards_intact() && a.guards_intact() && b.guards_intact());
  }
  // In place on either input: out aliases a, then b (the other input misaligned relative to it).
  if constexpr (std::is_same_v<TA, TOut>) {
    SCOPED_TRACE("in place on the first input, n=" + std::to_string(n));
    GuardedBuffer<TA> a(n, 0);
    GuardedBuffer<TB> b(n, 3);
    HARDACT_ASSERT_CUDA(a.status());
    HARDACT_ASSERT_CUDA(b.status());
    HARDACT_ASSERT_CUDA(a.upload(a_values));
    HARDACT_ASSERT_CUDA(b.upload(b_values));
    HARDACT_ASSERT_CUDA(
        hardact::transform(op, static_cast<const TA*>(a.data()), static_cast<const TB*>(b.data()), a.data(), n));
    HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
    std::vector<TOut> outputs;
    HARDACT_ASSERT_CUDA(a.download(outputs));
    ASSERT_TRUE(all_match(b_values, outputs, expected));
    EXPECT_TRUE(a.guards_intact());
  }
  if constexpr (std::is_same_v<TB, TOut>) {
    SCOPED_TRACE("in place on the second input, n=" + std::to_string(n));
    GuardedBuffer<TA> a(n, 1);
    GuardedBuffer<TB> b(n, 0);
    HARDACT_ASSERT_CUDA(a.status());
    HARDACT_ASSERT_CUDA(b.status());
    HARDACT_ASSERT_CUDA(a.upload(a_values));
    HARDACT_ASSERT_CUDA(b.upload(b_values));
    HARDACT_ASSERT_CUDA(
        hardact::transform(op, static_cast<const TA*>(a.data()), static_cast<const TB*>(b.data()), b.data(), n));
    HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
    std::vector<TOut> outputs;
    HARDACT_ASSERT_CUDA(b.download(outputs));
    ASSERT_TRUE(all_match(b_values, outputs, expected));
    EXPECT_TRUE(b.guards_intact());
  }
}

/// check_two_inputs_on_path on the direct and on the staged path.
template <class TA, class TB, class TOut, class Op, class Reference>
void check_two_inputs_on(const Op& op, const Reference& reference, const std::vector<TA>& a_values,
                         const std::vector<TB>& b_values) {
  for (const TransformPath path : paths_under_test<0>()) {
    SCOPED_TRACE(path_name(path));
    const ScopedTransformPath forced(path);
    check_two_inputs_on_path<TA, TB, TOut>(op, reference, a_values, b_values);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

/// check_two_inputs_on for every size of sweep_sizes(), on device_inputs.
template <class TA, class TB, class TOut, class Op, class Reference>
void check_two_inputs(const Op& op, const Reference& reference) {
  for (const std::size_t n : sweep_sizes()) {
    check_two_inputs_on<TA, TB, TOut>(op, reference, device_inputs<TA>(n, 7 * n + 1), device_inputs<TB>(n, n));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

/// True when every byte of `buffer`'s payload still holds the poison pattern.
template <class T>
bool payload_untouched(GuardedBuffer<T>& buffer) {
  std::vector<T> host;
  if (buffer.download(host) != cudaSuccess) return false;
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(host.data());
  for (std::size_t i = 0; i < host.size() * sizeof(T); ++i) {
    if (bytes[i] != kPoisonByte) return false;
  }
  return true;
}

}  // namespace family
}  // namespace hardact_test
