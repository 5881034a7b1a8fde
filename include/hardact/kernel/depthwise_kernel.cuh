/// @file depthwise_kernel.cuh
/// @brief A channels-last depthwise convolution whose epilogue is a folded BatchNorm's scale and
///        shift and a policy, with the per-(n, c) mean of its output (depthwise.cuh).
///
/// Why a convolution in an activation library: cuDNN's depthwise kernel writes its output, and the
/// BatchNorm and activation after it (and a squeeze's mean) are a second pass that reads it back.
/// Here they are the convolution's epilogue, so the output is written once and never read again
/// (TUNING.md#depthwise-stage).
///
/// Work split: a thread owns 4 channels (one vector) of kOutputs neighbouring output positions of
/// one row (4 at stride 1, 2 at stride 2), reads the (kOutputs - 1) * stride + K input columns they
/// share once per filter row, and keeps the 4 x kOutputs sums in registers. A block covers every
/// channel vector of a run of output position groups of one sample, so the mean's sums of a block
/// are reduced in shared memory in a fixed order, and a second small kernel adds the blocks' sums
/// in a fixed order: the mean is deterministic.
#pragma once

#include <hardact/kernel/dependent_launch.cuh>
#include <hardact/kernel/tuning.cuh>
#include <hardact/kernel/vector_access.cuh>
#include <hardact/numeric/arithmetic.cuh>
#include <hardact/numeric/conversions.cuh>

#include <cstdint>

namespace hardact {
namespace detail {

/// Channels a thread of the depthwise kernel owns: one vector of 4.
inline constexpr int kDepthwiseChannelsPerThread = 4;

/// The geometry one launch needs, in int: every per-sample offset fits (checked by dispatch).
struct DepthwiseGeometry {
  int height, width, channels;
  int out_height, out_width;
  int pad_h, pad_w;
  int channel_vectors;   // channels / 4
  int groups_per_row;    // output position groups of a row
  int groups;            // of a sample: out_height * groups_per_row
  int groups_per_block;  // a contiguous run of them
  int lanes;             // position groups a block works on at once: blockDim.x / channel_vectors
};

/// Four consecutive elements widened to float (one 16-byte load for float, 8 bytes for 16-bit types).
template <class T>
__device__ __forceinline__ void depthwise_load4(const T* p, float (&out)[4]) {
  const AlignedVector<T, 4> v = *reinterpret_cast<const AlignedVector<T, 4>*>(p);
#pragma unroll
  for (int j = 0; j < 4; ++j) out[j] = static_cast<float>(to_compute(v.elements[j]));
}

template <class T>
__device__ __forceinline__ void depthwise_store4(T* p, const T (&values)[4]) {
  AlignedVector<T, 4> v;
#pragma unroll
  for (int j = 0; j < 4; ++j) v.elements[j] = values[j];
  *reinterpret_cast<AlignedVector<T, 4>*>(p) = v;
}

/// y = act(conv(x) * scale + shift) for one sample (blockIdx.y) and one run of its output position
/// groups (blockIdx.x), K x K filters at stride S (with ConcatenateInput, stride 1 and the same size,
/// x's own values before them at each position: 2 C elements of y a position); with `sums`, also the
/// block's sum of the convolution's output per channel (as written, in T): into mean (times
/// inverse_positions) when the sample has one block, else into block_sums[n][block][c]. A template
/// argument, not a field of s: a runtime stride and branch cost the plain stage (TUNING.md#depthwise-stage).
template <class T, int K, int S, bool ConcatenateInput, class Policy>
__global__ void __launch_bounds__(kDepthwiseBlockThreads)
    depthwise_conv_kernel(const T* __restrict__ x, const float* __restrict__ taps, const float* __restrict__ scale,
                          const float* __restrict__ shift, T* __restrict__ y, float* __restrict__ block_sums,
                          T* __restrict__ mean, DepthwiseGeometry s, Policy act, bool sums, float inverse_positions) {
  constexpr int kOutputs = S == 1 ? 4 : 2;  // output positions a thread computes per group
  constexpr int kColumns = (kOutputs - 1) * S + K;
  static_assert(!ConcatenateInput || S == 1, "hardact: the input is concatenated to a stride-1 output only");
  allow_dependent_launch();  // depthwise_add_block_sums_kernel waits for this grid itself
  const int vector = static_cast<int>(threadIdx.x) % s.channel_vectors;
  const int lane = static_cast<int>(threadIdx.x) / s.channel_vectors;
  const int c0 = vector * kDepthwiseChannelsPerThread;
  const int n = static_cast<int>(blockIdx.y);
  const T* xs = x + static_cast<std::int64_t>(n) * s.height * s.width * s.channels + c0;
  const int out_stride = ConcatenateInput ? 2 * s.channels : s.channels;  // elements of y a position
  T* const y_sample = y + static_cast<std::int64_t>(n) * s.out_height * s.out_width * out_stride + c0;
  T* ys = ConcatenateInput ? y_sample + s.channels : y_sample;
  float channel_scale[4], channel_shift[4];
  depthwise_load4(scale + c0, channel_scale);
  depthwise_load4(shift + c0, channel_shift);
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
          depthwise_load4(row + static_cast<std::int64_t>(iw) * s.channels, in[col]);
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j) in[col][j] = 0.0f;
        }
      }
#pragma unroll
      for (int kw = 0; kw < K; ++kw) {
        float w[4];
        depthwise_load4(taps + (kh * K + kw) * s.channels + c0, w);
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
        // The BatchNorm as scale_shift_activation computes it: the product and the shift rounded in turn.
        const float z = add_rn(mul_rn(acc[t][j], channel_scale[j]), channel_shift[j]);
        out[j] = from_compute<T>(act(z));
        total[j] += static_cast<float>(to_compute(out[j]));
      }
      const std::int64_t position = static_cast<std::int64_t>(oh) * s.out_width + ow;
      depthwise_store4(ys + position * out_stride, out);
      if constexpr (ConcatenateInput) {  // the same position of x: its bits as they are
        *reinterpret_cast<AlignedVector<T, 4>*>(y_sample + position * out_stride) =
            *reinterpret_cast<const AlignedVector<T, 4>*>(xs + position * s.channels);
      }
    }
  }
  if (!sums) return;  // the same for every thread of the launch
  __shared__ float4 lane_sums[kDepthwiseBlockThreads];
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
    const T values[4] = {from_compute<T>(sum.x * inverse_positions), from_compute<T>(sum.y * inverse_positions),
                         from_compute<T>(sum.z * inverse_positions), from_compute<T>(sum.w * inverse_positions)};
    depthwise_store4(mean + static_cast<std::int64_t>(n) * s.channels + c0, values);
  } else {
    float4* out = reinterpret_cast<float4*>(block_sums + (static_cast<std::int64_t>(n) * gridDim.x + blockIdx.x) *
                                                             s.channels + c0);
    *out = sum;
  }
}

/// mean[n][c] = (sum over blocks b, in order, of block_sums[n][b][c]) * inverse_positions, once the
/// convolution's grid is complete (a programmatic dependent launch from compute capability 9.0).
template <class T>
__global__ void depthwise_add_block_sums_kernel(const float* __restrict__ block_sums, T* __restrict__ mean,
                                                int samples, int blocks, int channels, float inverse_positions) {
  grid_dependency_wait();
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= static_cast<std::int64_t>(samples) * channels) return;
  const std::int64_t n = index / channels;
  const std::int64_t c = index - n * channels;
  const float* sums = block_sums + n * blocks * channels + c;
  float sum = 0.0f;
  for (int b = 0; b < blocks; ++b) sum += sums[static_cast<std::int64_t>(b) * channels];
  mean[index] = from_compute<T>(sum * inverse_positions);
}

}  // namespace detail
}  // namespace hardact
