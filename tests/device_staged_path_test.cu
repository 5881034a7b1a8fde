// The staged path beyond what the per-policy sweeps (which force it at every size and offset)
// cover: every pipeline depth and resident-block count the shape rule could pick, relatively
// misaligned one- and two-input and mixed-type calls at each, calls with broadcast operands at
// every unit count (4 only they take), the two-rows form of a bias over the last dimension, and
// capture in a CUDA Graph.
#include "support/broadcast_check.hpp"
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/device_family.hpp"
#include "support/paths.hpp"
#include "support/reference.hpp"
#include "support/reference_family.hpp"
#include "support/scoped_tuning.hpp"
#include "support/transform_check.hpp"

#include <hardact/hardact.cuh>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace {

using namespace hardact_test;

struct Shape {
  int units_per_thread;
  int blocks_per_multiprocessor;  ///< 0 with stages 0: one-tile blocks; else a persistent grid
  int stages;
};

/// Forces a staged shape for the lifetime of the object.
class ScopedStagedShape {
 public:
  explicit ScopedStagedShape(const Shape& shape) {
    auto& tuning = hardact::detail::transform_tuning();
    previous_ = {tuning.staged_units_per_thread.exchange(shape.units_per_thread),
                 tuning.staged_blocks_per_multiprocessor.exchange(shape.blocks_per_multiprocessor),
                 tuning.staged_stages.exchange(shape.stages)};
  }
  ~ScopedStagedShape() {
    auto& tuning = hardact::detail::transform_tuning();
    tuning.staged_units_per_thread.store(previous_.units_per_thread);
    tuning.staged_blocks_per_multiprocessor.store(previous_.blocks_per_multiprocessor);
    tuning.staged_stages.store(previous_.stages);
  }
  ScopedStagedShape(const ScopedStagedShape&) = delete;
  ScopedStagedShape& operator=(const ScopedStagedShape&) = delete;

 private:
  Shape previous_;
};

/// One-tile blocks at each tile size, and persistent grids from a single stage (no overlap at all)
/// to deep rings with few and many blocks: each must give the same results, since the rule picks
/// among them by device.
std::vector<Shape> shapes() {
  if (quick_mode()) return {{1, 0, 0}, {2, 0, 0}, {1, 1, 1}, {2, 4, 2}, {1, 2, 5}};
  return {{1, 0, 0}, {2, 0, 0}, {1, 1, 1}, {2, 1, 2}, {1, 2, 3}, {2, 4, 2}, {1, 4, 4}, {2, 8, 2}, {1, 2, 8}, {1, 1, 11}};
}

std::string describe_shape(const Shape& shape) {
  if (shape.blocks_per_multiprocessor == 0) return "one-tile blocks, units " + std::to_string(shape.units_per_thread);
  return "persistent, units " + std::to_string(shape.units_per_thread) + ", blocks/SM " +
         std::to_string(shape.blocks_per_multiprocessor) + ", stages " + std::to_string(shape.stages);
}

/// Enough elements for several tiles per block at every shape, with a ragged tail.
std::size_t shape_sweep_length() { return quick_mode() ? (std::size_t(1) << 18) + 37 : (std::size_t(3) << 20) + 37; }

TEST(DeviceStagedPath, EveryShapeOneInput) {
  HARDACT_REQUIRE_DEVICE();
  const ScopedTransformPath staged(TransformPath::staged);
  const std::size_t n = shape_sweep_length();
  TransformRig<float> rig(n, 7);
  HARDACT_ASSERT_CUDA(rig.status());
  const std::vector<float> inputs = device_inputs<float>(n, 9100);
  for (const Shape shape : shapes()) {
    const ScopedStagedShape forced(shape);
    const std::string trace = describe_shape(shape);
    // aligned; relatively misaligned by one and by three elements; in place at an odd offset
    EXPECT_TRUE((rig.run_on_path<0>(hardact::HardSigmoid{}, reference::HardSigmoid{}, NanBits::Any, inputs, 0, 0,
                                    false, nullptr)))
        << trace;
    EXPECT_TRUE((rig.run_on_path<0>(hardact::HardSigmoid{}, reference::HardSigmoid{}, NanBits::Any, inputs, 1, 0,
                                    false, nullptr)))
        << trace;
    EXPECT_TRUE((rig.run_on_path<0>(hardact::HardTanh{-0.5, 2.0}, reference::HardTanh{-0.5, 2.0}, NanBits::Exact,
                                    inputs, 3, 6, false, nullptr)))
        << trace;
    EXPECT_TRUE((rig.run_on_path<0>(hardact::HardSigmoid{}, reference::HardSigmoid{}, NanBits::Any, inputs, 5, 5,
                                    true, nullptr)))
        << trace;
  }
}

TEST(DeviceStagedPath, EveryShapeTwoInputsAndMixedTypes) {
  HARDACT_REQUIRE_DEVICE();
  const ScopedTransformPath staged(TransformPath::staged);
  const std::size_t n = shape_sweep_length();
  const std::vector<float> grads = family::device_inputs<float>(n, 9200);
  const std::vector<float> xs = family::device_inputs<float>(n, 9201);
  const std::vector<__nv_bfloat16> narrow = family::device_inputs<__nv_bfloat16>(n, 9202);
  for (const Shape shape : shapes()) {
    SCOPED_TRACE(describe_shape(shape));
    const ScopedStagedShape forced(shape);
    family::check_two_inputs_on_path<float, float, float>(hardact::HardSigmoidBackward{},
                                                          [](float g, float x) {
                                                            return family::hard_sigmoid_backward(g, x);
                                                          },
                                                          grads, xs);
    family::check_one_input_on_path<float, __nv_bfloat16>(
        hardact::HardSigmoid{}, [](float x) { return family::round_to<__nv_bfloat16>(family::hard_sigmoid(x)); },
        xs);
    family::check_one_input_on_path<__nv_bfloat16, float>(
        hardact::HardSwish{},
        [](__nv_bfloat16 x) { return family::hard_swish(static_cast<float>(family::value_of(x))); }, narrow);
    if (HasFatalFailure()) return;
  }
}

// Broadcast calls of 16-bit outputs take 4 units per thread, and have kernels for no other count (a
// forced 1 or 2 runs 4): one-tile blocks and persistent rings, a BatchNorm over NHWC and NCHW
// (contiguous and run access, and general access where the vectors straddle channels) and a
// channels-last gate, at every offset class on both paths (a forced 4 does not apply to the direct
// path, nor to calls without it).
TEST(DeviceStagedPath, EveryShapeWithBroadcasts) {
  HARDACT_REQUIRE_DEVICE();
  using bf16 = __nv_bfloat16;
  using namespace hardact_test::broadcast;
  const std::vector<Shape> broadcast_shapes =
      quick_mode() ? std::vector<Shape>{{4, 0, 0}, {4, 2, 3}}
                   : std::vector<Shape>{{4, 0, 0}, {2, 0, 0}, {4, 1, 1}, {4, 2, 3}, {4, 4, 2}};
  const std::size_t n = quick_mode() ? 96 * 56 * 7 + 40 : 96 * 56 * 56 + 40;  // a ragged tail past whole rows
  const auto batchnorm = hardact::scale_shift_activation(hardact::HardSwish{});
  for (const Shape shape : broadcast_shapes) {
    SCOPED_TRACE(describe_shape(shape));
    const ScopedStagedShape forced(shape);
    check_call<bf16>(batchnorm, n, full_input<bf16>(n, 9300), channel_input<bf16>(96, 1, 9301),
                     channel_input<bf16>(96, 1, 9302));
    check_call<bf16>(batchnorm, n, full_input<bf16>(n, 9303), channel_input<bf16>(96, 56 * 56, 9304),
                     channel_input<bf16>(96, 56 * 56, 9305));
    check_call<bf16>(batchnorm, n, full_input<bf16>(n, 9306), channel_input<bf16>(7, 49, 9307),
                     channel_input<bf16>(7, 49, 9308));
    check_call<bf16>(hardact::HardSigmoidGate{}, n, full_input<bf16>(n, 9309),
                     sample_channel_input<bf16>(n, 1, 96, 96 * 56, 9310));
    // float scale and shift, as PyTorch keeps them: a unit's values are all a thread holds across
    // the tile's wait, so the other units' load after it, one unit at a time (the bfloat16 ones
    // above, and a float gate, two at a time: kPrefetchedBroadcastUnits).
    check_call<bf16>(batchnorm, n, full_input<bf16>(n, 9311), channel_input<float>(96, 1, 9312),
                     channel_input<float>(96, 1, 9313));
    check_call<bf16>(batchnorm, n, full_input<bf16>(n, 9314), channel_input<float>(96, 56 * 56, 9315),
                     channel_input<float>(96, 56 * 56, 9316));
    check_call<bf16>(batchnorm, n, full_input<bf16>(n, 9317), channel_input<float>(7, 49, 9318),
                     channel_input<float>(7, 49, 9319));
    check_call<bf16>(hardact::HardSigmoidGate{}, n, full_input<bf16>(n, 9320),
                     sample_channel_input<float>(n, 1, 96, 96 * 56, 9321));
    if (HasFatalFailure()) return;
  }
}

/// Half a staged tile of a one-tile call with `Units` units per thread, in elements.
template <int Units, class TOut, class... TIn>
constexpr std::size_t half_tile = hardact::detail::StagedTileOf<Units, TOut, TIn...>::kElements / 2;

/// Calls with one operand over the last dimension of `period` elements (a whole number of half
/// tiles of `Units` units per thread), in the two-rows form wherever they can take it: odd and even
/// row counts, a partial last row and a ragged tail past it (the aligned offset classes take the
/// form, as the dispatch layer's rule is asked first; the misaligned ones and the direct path,
/// which check_call runs too, do not).
template <int Units, class T, class V, class Op>
void check_two_rows(const Op& op, std::size_t period, std::uint64_t seed) {
  using namespace hardact_test::broadcast;
  using Tile = hardact::detail::StagedTileOf<Units, T, T>;
  for (const std::size_t n : {4 * period, 5 * period + period / 2 + 40}) {
    SCOPED_TRACE("period " + std::to_string(period) + ", n " + std::to_string(n));
    hardact::detail::DeviceProperties device;
    ASSERT_EQ(hardact::detail::current_device_properties(device), cudaSuccess);
    // Aligned addresses, as the aligned offset class has them.
    T* out = reinterpret_cast<T*>(std::uintptr_t(1) << 30);
    const T* x = reinterpret_cast<const T*>(std::uintptr_t(3) << 30);
    const V* values = reinterpret_cast<const V*>(std::uintptr_t(5) << 30);
    const auto broadcasts =
        hardact::detail::DeviceBroadcasts<V>(hardact::detail::prepare_broadcast(hardact::per_channel(values, period), n));
    ASSERT_GT(hardact::detail::two_rows_halves_apart<Tile>(device, broadcasts,
                                                           hardact::detail::staged_range<Tile>(n, static_cast<const T*>(out), x),
                                                           std::size_t(device.max_grid_dim_x), x),
              0u);
    check_call<T>(op, n, full_input<T>(n, seed), channel_input<V>(period, 1, seed + 1));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// StagedLoop::two_rows (a tile's halves on the same columns of two rows, their values loaded once),
// forced wherever a call can take it: periods from half a tile (the halves adjacent) to two tiles,
// one and two operands, one and two full-length inputs, every element type, and bias types wider
// and narrower than x.
TEST(DeviceStagedPath, TwoRowsForm) {
  HARDACT_REQUIRE_DEVICE();
  using bf16 = __nv_bfloat16;
  using namespace hardact_test::broadcast;
  const ScopedTwoRows forced(1);
  // Two units per thread for the float and double calls (16-bit broadcast calls take 4 anyway).
  const ScopedStagedShape two_units({2, 0, 0});
  const auto bias = hardact::bias_activation(hardact::HardSwish{});
  const auto batchnorm = hardact::scale_shift_activation(hardact::HardSwish{});
  const std::vector<std::size_t> halves = quick_mode() ? std::vector<std::size_t>{1, 3} : std::vector<std::size_t>{1, 2, 3, 4};
  for (const std::size_t k : halves) {
    check_two_rows<4, bf16, float>(bias, k * half_tile<4, bf16, bf16>, 9400);
    check_two_rows<4, bf16, bf16>(bias, k * half_tile<4, bf16, bf16>, 9402);
    check_two_rows<4, __half, __half>(hardact::HardSigmoidGate{}, k * half_tile<4, __half, __half>, 9404);
    check_two_rows<2, float, float>(bias, k * half_tile<2, float, float>, 9406);
    check_two_rows<2, float, bf16>(bias, k * half_tile<2, float, float>, 9408);
    check_two_rows<2, double, double>(bias, k * half_tile<2, double, double>, 9410);
    if (HasFatalFailure()) return;
    // A BatchNorm's scale and shift over the last dimension (two operands of one period).
    const std::size_t bn_period = k * half_tile<4, bf16, bf16>, bn_n = 5 * bn_period + 24;
    check_call<bf16>(batchnorm, bn_n, full_input<bf16>(bn_n, 9412), channel_input<float>(bn_period, 1, 9413),
                     channel_input<float>(bn_period, 1, 9414));
    // Two full-length inputs (384-thread tiles) and a bias.
    const std::size_t two_period = k * half_tile<2, float, float, float>, two_n = 5 * two_period + two_period / 2 + 8;
    check_call<float>(hardact::chain(AddResidualAndBias{}, hardact::HardSwish{}), two_n, full_input<float>(two_n, 9415),
                      full_input<float>(two_n, 9416), channel_input<float>(two_period, 1, 9417));
    if (HasFatalFailure()) return;
  }
}

// A staged call captured in a graph records its kernel with its shared memory and replays it on
// data uploaded after the capture.
TEST(DeviceStagedPath, CapturedInAGraph) {
  HARDACT_REQUIRE_DEVICE();
  const ScopedTransformPath staged(TransformPath::staged);
  const std::size_t n = (std::size_t(1) << 20) + 3;
  cudaStream_t stream = nullptr;
  HARDACT_ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::unique_ptr<CUstream_st, decltype(&cudaStreamDestroy)> stream_owner(stream, &cudaStreamDestroy);
  GuardedBuffer<__half> in(n, 3), out(n, 1);
  HARDACT_ASSERT_CUDA(in.status());
  HARDACT_ASSERT_CUDA(out.status());

  HARDACT_ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const cudaError_t call = hardact::hardsigmoid(static_cast<const __half*>(in.data()), out.data(), n, stream);
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  std::unique_ptr<CUgraph_st, decltype(&cudaGraphDestroy)> graph_owner(graph, &cudaGraphDestroy);
  ASSERT_EQ(call, cudaSuccess) << cudaGetErrorName(call);
  ASSERT_EQ(end, cudaSuccess) << cudaGetErrorName(end);
  EXPECT_TRUE(all_poisoned(out)) << "capture must not run the kernel";

  cudaGraphExec_t exec = nullptr;
  HARDACT_ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  std::unique_ptr<CUgraphExec_st, decltype(&cudaGraphExecDestroy)> exec_owner(exec, &cudaGraphExecDestroy);
  for (int replay = 0; replay < 2; ++replay) {
    const std::vector<__half> inputs = device_inputs<__half>(n, 9300 + static_cast<std::uint64_t>(replay));
    HARDACT_ASSERT_CUDA(in.upload(inputs));
    HARDACT_ASSERT_CUDA(out.poison_payload());
    // cudaMemset runs on the legacy stream, which a non-blocking stream does not wait for.
    HARDACT_ASSERT_CUDA(cudaDeviceSynchronize());
    HARDACT_ASSERT_CUDA(cudaGraphLaunch(exec, stream));
    HARDACT_ASSERT_CUDA(cudaStreamSynchronize(stream));
    std::vector<__half> outputs;
    HARDACT_ASSERT_CUDA(out.download(outputs));
    EXPECT_TRUE(outputs_match_reference(inputs, outputs, reference::HardSigmoid{}, NanBits::Any)) << "replay " << replay;
    EXPECT_TRUE(out.guards_intact());
  }
}

}  // namespace
