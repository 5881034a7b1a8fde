// The staged path beyond what the per-policy sweeps (which force it at every size and offset)
// cover: every pipeline depth and resident-block count the shape rule could pick, relatively
// misaligned one- and two-input and mixed-type calls at each, calls with broadcast operands at
// every unit count (4 only they take), and capture in a CUDA Graph.
#include "support/broadcast_check.hpp"
#include "support/device.hpp"
#include "support/device_main.hpp"  // main()
#include "support/device_family.hpp"
#include "support/paths.hpp"
#include "support/reference.hpp"
#include "support/reference_family.hpp"
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

std::string describe(const Shape& shape) {
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
    const std::string trace = describe(shape);
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
    SCOPED_TRACE(describe(shape));
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
    SCOPED_TRACE(describe(shape));
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
