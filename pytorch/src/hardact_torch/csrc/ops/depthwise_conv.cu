// depthwise_conv_scale_shift_activation: a MobileNet block's depthwise stage in one pass.
//
// Why a convolution in an activation library: in eager PyTorch and under torch.compile alike, the
// depthwise convolution is cuDNN's kernel, which writes its output, and the BatchNorm and activation
// after it (and the squeeze's mean) are a second pass that reads it back. Here the BatchNorm's scale
// and shift, the activation and the per-(n, c) sums are the convolution's epilogue, so that output
// is written once and never read again (TUNING.md#package-fused-ops).
//
// Work split: a thread owns 4 channels (one vector) of TW neighbouring output positions of one row
// (TW = 4 at stride 1, 2 at stride 2), reads the (TW - 1) * stride + K input columns they share once
// per filter row, and keeps the 4 x TW sums in registers. A block covers every channel vector of a
// run of output position groups of one sample, so the squeeze's sums of a block are reduced in
// shared memory in a fixed order, and a second small kernel adds the blocks' sums in a fixed order:
// the mean is deterministic.

#include "ops/depthwise_conv.h"
#include "launch/fused_activation.h"
#include "launch/tensor_launch.cuh"

#include <hardact/hardact.cuh>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace hardact_torch {
namespace {

constexpr int kChannelsPerThread = 4;
constexpr int kBlockThreads = 256;
// The grid: blocks of a sample cover runs of ceil(groups / (lanes * groups per thread)) position
// groups; with more than one group a thread, at least `blocks per multiprocessor` x the
// multiprocessors are launched over the batch where the samples have that many groups
// (TUNING.md#package-fused-ops). Tuning knobs, read
// once per process: HARDACT_TORCH_DEPTHWISE_GROUPS_PER_THREAD, HARDACT_TORCH_DEPTHWISE_BLOCKS_PER_SM.
// One group per thread: these calls are short (10-90 us at batch 64) and latency-bound; more
// threads in flight beat fewer blocks' sums (TUNING.md#package-fused-ops).
constexpr int kGroupsPerThread = 1;
constexpr int kLeastBlocksPerMultiprocessor = 2;

int tuning_knob(const char* name, int fallback) {
  const char* text = std::getenv(name);
  const int value = text != nullptr ? std::atoi(text) : 0;
  return value > 0 ? value : fallback;
}

/// The geometry one launch needs, in int: every per-sample offset fits (checked by the launcher).
struct DepthwiseShape {
  int height, width, channels;
  int out_height, out_width;
  int pad_h, pad_w;
  int channel_vectors;   // channels / 4
  int groups_per_row;    // output position groups of a row
  int groups;            // of a sample: out_height * groups_per_row
  int groups_per_block;  // a contiguous run of them
  int lanes;             // position groups a block works on at once: blockDim.x / channel_vectors
};

/// The activation chosen at run time: one warp-uniform branch per value, where a template per
/// activation would multiply the kernels compiled by six.
struct RuntimeActivation {
  FusedActivation kind;
  hardact::HardTanh bounds;

  __device__ float operator()(float z) const {
    switch (kind) {
      case FusedActivation::identity: return z;
      case FusedActivation::hardsigmoid: return hardact::HardSigmoid{}(z);
      case FusedActivation::hardswish: return hardact::HardSwish{}(z);
      case FusedActivation::relu6: return hardact::ReLU6{}(z);
      default: return bounds(z);  // hardtanh, and relu as hardtanh(0, +inf)
    }
  }
};

template <class T>
struct alignas(4 * sizeof(T)) Vector4 {
  T value[4];
};

/// Four consecutive elements widened to float (one 16-byte load for float, 8 bytes for 16-bit types).
template <class T>
__device__ __forceinline__ void load4(const T* p, float (&out)[4]) {
  const Vector4<T> v = *reinterpret_cast<const Vector4<T>*>(p);
#pragma unroll
  for (int j = 0; j < 4; ++j) out[j] = static_cast<float>(hardact::to_compute(v.value[j]));
}

template <class T>
__device__ __forceinline__ void store4(T* p, const T (&values)[4]) {
  Vector4<T> v;
#pragma unroll
  for (int j = 0; j < 4; ++j) v.value[j] = values[j];
  *reinterpret_cast<Vector4<T>*>(p) = v;
}

/// y = act(conv(x) * scale + shift) for one sample (blockIdx.y) and one run of its output position
/// groups (blockIdx.x); with `sums`, also the block's sum of y per channel (as written, in T): into
/// mean (times inverse_positions) when the sample has one block, else into block_sums[n][block][c].
template <class T, int K, int S>
__global__ void __launch_bounds__(kBlockThreads)
    depthwise_scale_shift_activation_kernel(const T* __restrict__ x, const float* __restrict__ taps,
                                            const float* __restrict__ scale, const float* __restrict__ shift,
                                            T* __restrict__ y, float* __restrict__ block_sums, T* __restrict__ mean,
                                            DepthwiseShape s, RuntimeActivation act, bool sums,
                                            float inverse_positions) {
  constexpr int kOutputs = S == 1 ? 4 : 2;  // output positions a thread computes per group
  constexpr int kColumns = (kOutputs - 1) * S + K;
  hardact::detail::allow_dependent_launch();  // add_block_sums_kernel waits for this grid itself
  const int vector = static_cast<int>(threadIdx.x) % s.channel_vectors;
  const int lane = static_cast<int>(threadIdx.x) / s.channel_vectors;
  const int c0 = vector * kChannelsPerThread;
  const int n = static_cast<int>(blockIdx.y);
  const T* xs = x + static_cast<std::int64_t>(n) * s.height * s.width * s.channels + c0;
  T* ys = y + static_cast<std::int64_t>(n) * s.out_height * s.out_width * s.channels + c0;
  float channel_scale[4], channel_shift[4];
  load4(scale + c0, channel_scale);
  load4(shift + c0, channel_shift);
  float total[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const int begin = static_cast<int>(blockIdx.x) * s.groups_per_block;
  const int end = min(s.groups, begin + s.groups_per_block);
  for (int group = begin + lane; group < end; group += s.lanes) {
    const int oh = group / s.groups_per_row;
    const int ow0 = (group - oh * s.groups_per_row) * kOutputs;
    const int iw0 = ow0 * S - s.pad_w;
    float acc[kOutputs][4];
#pragma unroll
    for (int t = 0; t < kOutputs; ++t) {
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[t][j] = 0.0f;
    }
#pragma unroll
    for (int kh = 0; kh < K; ++kh) {
      const int ih = oh * S - s.pad_h + kh;
      if (ih < 0 || ih >= s.height) continue;
      const T* row = xs + static_cast<std::int64_t>(ih) * s.width * s.channels;
      float in[kColumns][4];
#pragma unroll
      for (int col = 0; col < kColumns; ++col) {
        const int iw = iw0 + col;
        if (iw >= 0 && iw < s.width) {
          load4(row + static_cast<std::int64_t>(iw) * s.channels, in[col]);
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j) in[col][j] = 0.0f;
        }
      }
#pragma unroll
      for (int kw = 0; kw < K; ++kw) {
        float w[4];
        load4(taps + (kh * K + kw) * s.channels + c0, w);
#pragma unroll
        for (int t = 0; t < kOutputs; ++t) {
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[t][j] = fmaf(in[t * S + kw][j], w[j], acc[t][j]);
        }
      }
    }
#pragma unroll
    for (int t = 0; t < kOutputs; ++t) {
      const int ow = ow0 + t;
      if (ow >= s.out_width) break;
      T out[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        // The BatchNorm as BatchNormActivation computes it: the product and the shift rounded in turn.
        const float z = hardact::detail::add_rn(hardact::detail::mul_rn(acc[t][j], channel_scale[j]), channel_shift[j]);
        out[j] = hardact::from_compute<T>(act(z));
        total[j] += static_cast<float>(hardact::to_compute(out[j]));
      }
      store4(ys + (static_cast<std::int64_t>(oh) * s.out_width + ow) * s.channels, out);
    }
  }
  if (!sums) return;  // the same for every thread of the launch
  __shared__ float4 lane_sums[kBlockThreads];
  lane_sums[threadIdx.x] = make_float4(total[0], total[1], total[2], total[3]);
  __syncthreads();
  if (lane != 0) return;
  float4 sum = lane_sums[vector];
  for (int other = 1; other < s.lanes; ++other) {
    const float4 more = lane_sums[other * s.channel_vectors + vector];
    sum.x += more.x;
    sum.y += more.y;
    sum.z += more.z;
    sum.w += more.w;
  }
  if (gridDim.x == 1) {
    const T values[4] = {hardact::from_compute<T>(sum.x * inverse_positions),
                         hardact::from_compute<T>(sum.y * inverse_positions),
                         hardact::from_compute<T>(sum.z * inverse_positions),
                         hardact::from_compute<T>(sum.w * inverse_positions)};
    store4(mean + static_cast<std::int64_t>(n) * s.channels + c0, values);
  } else {
    float4* out = reinterpret_cast<float4*>(block_sums + (static_cast<std::int64_t>(n) * gridDim.x + blockIdx.x) *
                                                             s.channels + c0);
    *out = sum;
  }
}

/// mean[n][c] = (sum over blocks b, in order, of block_sums[n][b][c]) * inverse_positions, once the
/// convolution's grid is complete (a programmatic dependent launch from compute capability 9.0).
template <class T>
__global__ void add_block_sums_kernel(const float* __restrict__ block_sums, T* __restrict__ mean, int samples,
                                      int blocks, int channels, float inverse_positions) {
  hardact::detail::grid_dependency_wait();
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= static_cast<std::int64_t>(samples) * channels) return;
  const std::int64_t n = index / channels;
  const std::int64_t c = index - n * channels;
  const float* sums = block_sums + n * blocks * channels + c;
  float sum = 0.0f;
  for (int b = 0; b < blocks; ++b) sum += sums[static_cast<std::int64_t>(b) * channels];
  mean[index] = hardact::from_compute<T>(sum * inverse_positions);
}

template <class T, int K, int S>
void launch(const at::Tensor& x, const at::Tensor& taps, const at::Tensor& scale, const at::Tensor& shift,
            const at::Tensor& y, float* block_sums, const at::Tensor& mean, const DepthwiseShape& shape, dim3 grid,
            int threads, RuntimeActivation act, bool sums, float inverse_positions, cudaStream_t stream) {
  depthwise_scale_shift_activation_kernel<T, K, S><<<grid, threads, 0, stream>>>(
      data_of<T>(x), data_of<float>(taps), data_of<float>(scale), data_of<float>(shift), mutable_data_of<T>(y),
      block_sums, sums ? mutable_data_of<T>(mean) : nullptr,
      shape, act, sums, inverse_positions);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <class T>
void launch_for_filter(int64_t kernel_size, int64_t stride, const at::Tensor& x, const at::Tensor& taps,
                       const at::Tensor& scale, const at::Tensor& shift, const at::Tensor& y, float* block_sums,
                       const at::Tensor& mean, const DepthwiseShape& shape, dim3 grid, int threads,
                       RuntimeActivation act, bool sums, float inverse_positions, cudaStream_t stream) {
  if (kernel_size == 3 && stride == 1) {
    launch<T, 3, 1>(x, taps, scale, shift, y, block_sums, mean, shape, grid, threads, act, sums, inverse_positions,
                    stream);
  } else if (kernel_size == 3) {
    launch<T, 3, 2>(x, taps, scale, shift, y, block_sums, mean, shape, grid, threads, act, sums, inverse_positions,
                    stream);
  } else if (stride == 1) {
    launch<T, 5, 1>(x, taps, scale, shift, y, block_sums, mean, shape, grid, threads, act, sums, inverse_positions,
                    stream);
  } else {
    launch<T, 5, 2>(x, taps, scale, shift, y, block_sums, mean, shape, grid, threads, act, sums, inverse_positions,
                    stream);
  }
}

void check_float_parameter(const char* what, const at::Tensor& p, const at::Tensor& x, int64_t count) {
  constexpr const char* op = "_depthwise_conv_scale_shift_activation";
  TORCH_CHECK_VALUE(p.device() == x.device(), "hardact.", op, ": ", what, " is on ", p.device().str(), ", x on ",
                    x.device().str());
  TORCH_CHECK_TYPE(p.scalar_type() == at::kFloat, "hardact.", op, ": ", what, " must be float32");
  TORCH_CHECK_VALUE(p.is_contiguous() && p.numel() == count, "hardact.", op, ": ", what, " must be contiguous with ",
                    std::to_string(count), " elements");
  TORCH_CHECK_VALUE(reinterpret_cast<std::uintptr_t>(p.const_data_ptr()) % 16 == 0, "hardact.", op, ": ", what,
                    " must be 16-byte aligned");
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> depthwise_conv_scale_shift_activation(
    const at::Tensor& x, const at::Tensor& taps, const at::Tensor& scale, const at::Tensor& shift,
    int64_t kernel_size, int64_t stride, int64_t pad_h, int64_t pad_w, c10::string_view activation, double min_val,
    double max_val, bool with_mean) {
  constexpr const char* op = "_depthwise_conv_scale_shift_activation";
  TORCH_CHECK_VALUE(x.is_cuda() && x.dim() == 4, "hardact.", op, ": x must be a 4-D CUDA tensor");
  const at::ScalarType type = x.scalar_type();
  TORCH_CHECK_TYPE(type == at::kFloat || type == at::kHalf || type == at::kBFloat16, "hardact.", op,
                   ": x must be float32, float16 or bfloat16");
  TORCH_CHECK_VALUE(x.is_contiguous(at::MemoryFormat::ChannelsLast), "hardact.", op, ": x must be channels-last");
  TORCH_CHECK_VALUE(kernel_size == 3 || kernel_size == 5, "hardact.", op, ": kernel_size must be 3 or 5");
  TORCH_CHECK_VALUE(stride == 1 || stride == 2, "hardact.", op, ": stride must be 1 or 2");
  TORCH_CHECK_VALUE(pad_h >= 0 && pad_h < kernel_size && pad_w >= 0 && pad_w < kernel_size, "hardact.", op,
                    ": padding must be in [0, kernel_size)");
  const FusedActivation kind = parse_activation(op, activation);
  if (kind == FusedActivation::hardtanh) check_bounds(op, min_val, max_val);
  const int64_t samples = x.size(0), channels = x.size(1), height = x.size(2), width = x.size(3);
  TORCH_CHECK_VALUE(channels % kChannelsPerThread == 0 && channels > 0 && channels <= kChannelsPerThread * kBlockThreads,
                    "hardact.", op, ": the channels must be a positive multiple of 4 up to 1024");
  TORCH_CHECK_VALUE(reinterpret_cast<std::uintptr_t>(x.const_data_ptr()) % (4 * x.element_size()) == 0, "hardact.",
                    op, ": x must be aligned to 4 elements");
  check_float_parameter("taps", taps, x, kernel_size * kernel_size * channels);
  check_float_parameter("scale", scale, x, channels);
  check_float_parameter("shift", shift, x, channels);
  const int64_t out_height = (height + 2 * pad_h - kernel_size) / stride + 1;
  const int64_t out_width = (width + 2 * pad_w - kernel_size) / stride + 1;
  TORCH_CHECK_VALUE(height + 2 * pad_h >= kernel_size && width + 2 * pad_w >= kernel_size, "hardact.", op,
                    ": the padded input is smaller than the filter");
  TORCH_CHECK_VALUE(height * width * channels <= std::numeric_limits<int>::max() &&
                        out_height * out_width * channels <= std::numeric_limits<int>::max() && samples <= 65535,
                    "hardact.", op, ": a sample must hold under 2^31 elements, and N at most 65535");

  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor y = at::empty({samples, channels, out_height, out_width},
                           x.options().memory_format(at::MemoryFormat::ChannelsLast));
  at::Tensor mean = with_mean ? at::empty({samples, channels}, x.options()) : at::Tensor();
  if (samples == 0) return {y, mean};

  const int outputs_per_group = stride == 1 ? 4 : 2;
  DepthwiseShape shape{};
  shape.height = static_cast<int>(height);
  shape.width = static_cast<int>(width);
  shape.channels = static_cast<int>(channels);
  shape.out_height = static_cast<int>(out_height);
  shape.out_width = static_cast<int>(out_width);
  shape.pad_h = static_cast<int>(pad_h);
  shape.pad_w = static_cast<int>(pad_w);
  shape.channel_vectors = static_cast<int>(channels / kChannelsPerThread);
  shape.groups_per_row = static_cast<int>((out_width + outputs_per_group - 1) / outputs_per_group);
  shape.groups = shape.out_height * shape.groups_per_row;
  shape.lanes = std::max(1, kBlockThreads / shape.channel_vectors);
  const int threads = shape.lanes * shape.channel_vectors;
  static const int groups_per_thread = tuning_knob("HARDACT_TORCH_DEPTHWISE_GROUPS_PER_THREAD", kGroupsPerThread);
  static const int blocks_per_multiprocessor =
      tuning_knob("HARDACT_TORCH_DEPTHWISE_BLOCKS_PER_SM", kLeastBlocksPerMultiprocessor);
  int blocks = (shape.groups + shape.lanes * groups_per_thread - 1) / (shape.lanes * groups_per_thread);
  hardact::detail::DeviceProperties device;  // read once per device, then cached; x's device, no runtime query
  C10_CUDA_CHECK(hardact::detail::DevicePropertiesCache::instance().get(x.device().index(), device));
  if (groups_per_thread > 1) {  // at one group a thread the grid has its most blocks already
    const int multiprocessors = device.multiprocessor_count;
    const int most_blocks = (shape.groups + shape.lanes - 1) / shape.lanes;
    const int64_t wanted =
        (static_cast<int64_t>(blocks_per_multiprocessor) * multiprocessors + samples - 1) / samples;
    if (blocks < wanted) blocks = static_cast<int>(std::min<int64_t>(most_blocks, wanted));
  }
  shape.groups_per_block = (shape.groups + blocks - 1) / blocks;
  blocks = (shape.groups + shape.groups_per_block - 1) / shape.groups_per_block;

  at::Tensor block_sums;
  if (with_mean && blocks > 1) block_sums = at::empty({samples, blocks, channels}, x.options().dtype(at::kFloat));
  const float inverse_positions = static_cast<float>(1.0 / static_cast<double>(out_height * out_width));
  const RuntimeActivation act{kind, kind == FusedActivation::relu
                                        ? hardact::HardTanh{0.0, std::numeric_limits<double>::infinity()}
                                        : hardact::HardTanh{min_val, max_val}};
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(x.device().index());
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(samples));
  float* sums_pointer = block_sums.defined() ? mutable_data_of<float>(block_sums) : nullptr;
  with_element_type(op, type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, double>) {
      launch_for_filter<T>(kernel_size, stride, x, taps, scale, shift, y, sums_pointer, mean, shape, grid, threads,
                           act, with_mean, inverse_positions, stream);
      if (block_sums.defined()) {
        const int64_t count = samples * channels;
        cudaLaunchConfig_t config{};
        config.gridDim = dim3(static_cast<unsigned>((count + 255) / 256));
        config.blockDim = dim3(256);
        config.stream = stream;
        cudaLaunchAttribute dependent{};
        hardact::detail::make_dependent_launch(config, dependent, device.compute_capability_major);
        C10_CUDA_CHECK(cudaLaunchKernelEx(&config, add_block_sums_kernel<T>, static_cast<const float*>(sums_pointer),
                                          mutable_data_of<T>(mean), static_cast<int>(samples), blocks,
                                          static_cast<int>(channels), inverse_positions));
      }
    }
    return cudaSuccess;
  });
  return {y, mean};
}

}  // namespace hardact_torch
