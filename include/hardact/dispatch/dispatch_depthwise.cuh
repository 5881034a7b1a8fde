/// @file dispatch_depthwise.cuh
/// @brief The depthwise convolution's dispatch (hardact::depthwise_conv): the launch contract's
///        checks, the grid from the shape (and, for more than one group a thread, the device's
///        multiprocessors), the kernel for the filter size and stride, and the kernel that adds the
///        blocks' sums of the mean as a dependent launch. Nothing here synchronises or allocates.
#pragma once

#include <hardact/types/depthwise_shape.cuh>
#include <hardact/dispatch/dependent_launch.cuh>
#include <hardact/dispatch/device_properties.cuh>
#include <hardact/dispatch/memory_range.cuh>
#include <hardact/kernel/depthwise_kernel.cuh>
#include <hardact/kernel/tuning.cuh>
#include <hardact/policy/validity.cuh>

#ifdef HARDACT_CHECK_POINTER_DEVICES
#include <hardact/dispatch/pointer_check.cuh>
#endif

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda/std/type_traits>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>

namespace hardact {
namespace detail {

/// The refusals a shape meets whatever its sample count: cudaErrorInvalidValue for what no
/// convolution is (no channels, negative padding, a padded input smaller than the filter),
/// cudaErrorNotSupported for a convolution the kernel does not cover (another filter size or
/// stride, padding of kernel_size or more, channels not a multiple of 4 or over 1024, 2^31
/// elements or more a sample, over 65535 samples, an input concatenated to an output of another
/// size or stride); cudaSuccess for a shape it takes.
inline cudaError_t check_depthwise_shape(const DepthwiseConvShape& s) {
  if (s.channels == 0 || s.pad_h < 0 || s.pad_w < 0) return cudaErrorInvalidValue;
  if ((s.kernel_size != 3 && s.kernel_size != 5) || (s.stride != 1 && s.stride != 2) ||
      s.pad_h >= s.kernel_size || s.pad_w >= s.kernel_size) {
    return cudaErrorNotSupported;
  }
  if (s.channels % static_cast<std::size_t>(kDepthwiseChannelsPerThread) != 0 ||
      s.channels > static_cast<std::size_t>(kDepthwiseChannelsPerThread * kDepthwiseBlockThreads) ||
      s.samples > 65535) {
    return cudaErrorNotSupported;
  }
  constexpr std::size_t kMostSampleElements = INT_MAX;
  if (s.height > kMostSampleElements || s.width > kMostSampleElements) return cudaErrorNotSupported;
  // Within INT_MAX each, so that neither the padding nor a product below wraps around.
  if (s.out_height() == 0 || s.out_width() == 0) return cudaErrorInvalidValue;  // padded input under the filter
  const std::size_t positions = s.height * s.width, out_positions = s.out_height() * s.out_width();
  if (positions > kMostSampleElements / s.channels || out_positions > kMostSampleElements / s.out_channels()) {
    return cudaErrorNotSupported;
  }
  if (s.concatenate_input && (s.stride != 1 || s.out_height() != s.height || s.out_width() != s.width)) {
    return cudaErrorNotSupported;
  }
  return cudaSuccess;
}

/// The geometry of a shape check_depthwise_shape takes, all but groups_per_block (the grid's).
inline DepthwiseGeometry depthwise_geometry(const DepthwiseConvShape& shape) {
  const int outputs_per_group = shape.stride == 1 ? 4 : 2;
  DepthwiseGeometry g{};
  g.height = static_cast<int>(shape.height);
  g.width = static_cast<int>(shape.width);
  g.channels = static_cast<int>(shape.channels);
  g.out_height = static_cast<int>(shape.out_height());
  g.out_width = static_cast<int>(shape.out_width());
  g.pad_h = shape.pad_h;
  g.pad_w = shape.pad_w;
  g.channel_vectors = g.channels / kDepthwiseChannelsPerThread;
  g.groups_per_row = (g.out_width + outputs_per_group - 1) / outputs_per_group;
  g.groups = g.out_height * g.groups_per_row;
  g.lanes = std::max(1, kDepthwiseBlockThreads / g.channel_vectors);
  return g;
}

/// The most blocks a sample takes: one group a lane. The grid never has more, whatever the
/// device, so the blocks' sums fit the storage the shape alone sizes.
inline int depthwise_most_blocks(const DepthwiseGeometry& g) { return (g.groups + g.lanes - 1) / g.lanes; }

/// Blocks a sample takes (the grid's x), and g.groups_per_block: runs of ceil(groups / (lanes x
/// kDepthwiseGroupsPerThread)) groups; with more than one group a thread, at least
/// kDepthwiseLeastBlocksPerMultiprocessor x the multiprocessors over the batch where the samples
/// have that many groups (TUNING.md#depthwise-stage).
inline int depthwise_blocks(DepthwiseGeometry& g, std::size_t samples, int multiprocessors) {
  constexpr int groups_per_thread = kDepthwiseGroupsPerThread;
  int blocks = (g.groups + g.lanes * groups_per_thread - 1) / (g.lanes * groups_per_thread);
  if (groups_per_thread > 1) {  // at one group a thread the grid has its most blocks already
    const int most_blocks = depthwise_most_blocks(g);
    const std::int64_t batch = static_cast<std::int64_t>(samples);
    const std::int64_t wanted =
        (static_cast<std::int64_t>(kDepthwiseLeastBlocksPerMultiprocessor) * multiprocessors + batch - 1) / batch;
    if (blocks < wanted) blocks = static_cast<int>(std::min<std::int64_t>(most_blocks, wanted));
  }
  g.groups_per_block = (g.groups + blocks - 1) / blocks;
  return (g.groups + g.groups_per_block - 1) / g.groups_per_block;
}

/// Bytes of the blocks' sums a call with a mean needs: samples x most blocks x channels floats
/// where a sample takes more than one block, else 0; 0 for a shape the launcher refuses or no
/// samples.
inline std::size_t depthwise_temp_storage_bytes(const DepthwiseConvShape& shape) {
  if (check_depthwise_shape(shape) != cudaSuccess || shape.samples == 0) return 0;
  const int most_blocks = depthwise_most_blocks(depthwise_geometry(shape));
  if (most_blocks <= 1) return 0;
  return shape.samples * static_cast<std::size_t>(most_blocks) * shape.channels * sizeof(float);
}

template <class T>
inline constexpr bool kDepthwiseElementType = cuda::std::is_same_v<T, float> || cuda::std::is_same_v<T, __half> ||
                                              cuda::std::is_same_v<T, __nv_bfloat16>;

/// The convolution kernel for K x K filters at stride S on `stream`, x before its output in y where
/// ConcatenateInput.
template <class T, int K, int S, bool ConcatenateInput, class Policy>
cudaError_t launch_depthwise_kernel(const Policy& act, const DepthwiseGeometry& geometry, int blocks,
                                    std::size_t samples, cudaStream_t stream, const T* x, const float* taps,
                                    const float* scale, const float* shift, T* y, float* block_sums, T* mean,
                                    float inverse_positions) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(samples));
  config.blockDim = dim3(static_cast<unsigned>(geometry.lanes * geometry.channel_vectors));
  config.stream = stream;
  return cudaLaunchKernelEx(&config, depthwise_conv_kernel<T, K, S, ConcatenateInput, Policy>, x, taps, scale, shift,
                            y, block_sums, mean, geometry, act, mean != nullptr, inverse_positions);
}

/// The launch contract of hardact::depthwise_conv, then the launches. `with_mean`: the overload
/// with a mean, whose `mean` must then be usable (and the temporary storage, where the shape needs
/// it); without it, mean and the storage are ignored.
template <class Policy, class T>
cudaError_t dispatch_depthwise(const Policy& act, const DepthwiseConvShape& shape, const T* x, const float* taps,
                               const float* scale, const float* shift, T* y, bool with_mean, T* mean,
                               void* temp_storage, std::size_t temp_storage_bytes, cudaStream_t stream) {
  static_assert(kDepthwiseElementType<T>, "hardact: depthwise_conv takes float, __half or __nv_bfloat16 arrays");
  if (!policy_is_valid(act)) return cudaErrorInvalidValue;
  if (const cudaError_t refused = check_depthwise_shape(shape); refused != cudaSuccess) return refused;
  if (shape.samples == 0) return cudaSuccess;

  const std::size_t channels = shape.channels, filter = static_cast<std::size_t>(shape.kernel_size);
  const std::size_t sample_bytes = shape.height * shape.width * channels * sizeof(T);
  const std::size_t needed = with_mean ? depthwise_temp_storage_bytes(shape) : 0;
  const MemoryRange in_x{x, shape.samples * sample_bytes};
  const MemoryRange in_taps{taps, filter * filter * channels * sizeof(float)};
  const MemoryRange in_scale{scale, channels * sizeof(float)}, in_shift{shift, channels * sizeof(float)};
  const MemoryRange out_y{y,
                            shape.samples * shape.out_height() * shape.out_width() * shape.out_channels() * sizeof(T)};
  const MemoryRange out_mean{with_mean ? mean : nullptr, with_mean ? shape.samples * channels * sizeof(T) : 0};
  const MemoryRange out_temp{temp_storage, needed};
  // Vectors of 4 elements of x, y and the mean, 16-byte vectors of the float parameters and of the
  // blocks' sums. x holds no element where H or W is 0: it is never read, and may be null.
  constexpr std::size_t kVectorBytes = static_cast<std::size_t>(kDepthwiseChannelsPerThread) * sizeof(T);
  if ((in_x.bytes > 0 && !range_usable(in_x, kVectorBytes)) || !range_usable(out_y, kVectorBytes) ||
      !range_usable(in_taps, 16) || !range_usable(in_scale, 16) ||
      !range_usable(in_shift, 16) || (with_mean && !range_usable(out_mean, kVectorBytes)) ||
      (needed > 0 && (temp_storage_bytes < needed || !range_usable(out_temp, 16)))) {
    return cudaErrorInvalidValue;
  }
  // The outputs share no byte with an input or with each other (every array is __restrict__).
  const MemoryRange inputs[] = {in_x, in_taps, in_scale, in_shift};
  const MemoryRange outputs[] = {out_y, out_mean, out_temp};
  for (std::size_t i = 0; i < 3; ++i) {
    for (const MemoryRange& input : inputs) {
      if (ranges_overlap(outputs[i], input)) return cudaErrorInvalidValue;
    }
    for (std::size_t j = i + 1; j < 3; ++j) {
      if (ranges_overlap(outputs[i], outputs[j])) return cudaErrorInvalidValue;
    }
  }
#ifdef HARDACT_CHECK_POINTER_DEVICES  // opt-in: refuse pointers the current device cannot reach
  if (const cudaError_t access = check_pointer_devices(taps, scale, shift, static_cast<const T*>(y));
      access != cudaSuccess) {
    return access;
  }
  if (in_x.bytes > 0) {
    if (const cudaError_t access = check_pointer_devices(x); access != cudaSuccess) return access;
  }
  if (with_mean) {
    if (const cudaError_t access = check_pointer_devices(static_cast<const T*>(mean)); access != cudaSuccess) {
      return access;
    }
  }
  if (needed > 0) {
    if (const cudaError_t access = check_pointer_devices(static_cast<const void*>(temp_storage));
        access != cudaSuccess) {
      return access;
    }
  }
#endif

  DeviceProperties device;
  if (const cudaError_t status = current_device_properties(device); status != cudaSuccess) return status;
  DepthwiseGeometry geometry = depthwise_geometry(shape);
  const int blocks = depthwise_blocks(geometry, shape.samples, device.multiprocessor_count);
  float* const block_sums = with_mean && blocks > 1 ? static_cast<float*>(temp_storage) : nullptr;
  T* const mean_out = with_mean ? mean : nullptr;
  const float inverse_positions =
      static_cast<float>(1.0 / static_cast<double>(shape.out_height() * shape.out_width()));
  cudaError_t status = cudaSuccess;
  const auto launch = [&](auto kernel_size, auto stride, auto concatenate_input) {
    return launch_depthwise_kernel<T, decltype(kernel_size)::value, decltype(stride)::value,
                                   decltype(concatenate_input)::value>(
        act, geometry, blocks, shape.samples, stream, x, taps, scale, shift, y, block_sums, mean_out,
        inverse_positions);
  };
  using Three = cuda::std::integral_constant<int, 3>;
  using Five = cuda::std::integral_constant<int, 5>;
  using One = cuda::std::integral_constant<int, 1>;
  using Two = cuda::std::integral_constant<int, 2>;
  using Plain = cuda::std::false_type;
  using Concatenated = cuda::std::true_type;  // stride 1 only (check_depthwise_shape)
  if (shape.concatenate_input) {
    status = shape.kernel_size == 3 ? launch(Three{}, One{}, Concatenated{}) : launch(Five{}, One{}, Concatenated{});
  } else if (shape.kernel_size == 3) {
    status = shape.stride == 1 ? launch(Three{}, One{}, Plain{}) : launch(Three{}, Two{}, Plain{});
  } else {
    status = shape.stride == 1 ? launch(Five{}, One{}, Plain{}) : launch(Five{}, Two{}, Plain{});
  }
  if (status != cudaSuccess || block_sums == nullptr) return status;

  const std::int64_t count = static_cast<std::int64_t>(shape.samples * channels);
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>((count + kDepthwiseBlockSumsThreads - 1) / kDepthwiseBlockSumsThreads));
  config.blockDim = dim3(static_cast<unsigned>(kDepthwiseBlockSumsThreads));
  config.stream = stream;
  cudaLaunchAttribute dependent{};
  make_dependent_launch(config, dependent, device.compute_capability_major);
  return cudaLaunchKernelEx(&config, depthwise_add_block_sums_kernel<T>, static_cast<const float*>(block_sums), mean,
                            static_cast<int>(shape.samples), blocks, static_cast<int>(channels), inverse_positions);
}

}  // namespace detail
}  // namespace hardact
