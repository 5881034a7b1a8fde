/// @file hardact.cuh
/// @brief The whole public API of hardact: policies, conversions and launchers.
///
/// Layers, from the outside in; each includes only the layers below it:
///   transform.cuh                  launchers (cudaError_t, stream last)
///   depthwise.cuh                  depthwise_conv: a depthwise convolution with a policy epilogue
///   pooling.cuh                    max_pool: a channels-last max pooling, PyTorch's bits
///   concatenate.cuh                concatenate: rows of several arrays side by side (torch.cat)
///   operand.cuh                    broadcast operands (bias, per-channel scale/shift, gates) and the
///                                  output with sums (OutputWithSums): the types/ headers
///   reduce.cuh                     channel_sum: per-channel sums (bias gradients), on CUB
///   checked.cuh                    the same launchers, refusing pointers the device cannot reach
///   dispatch/dispatch_operands     the entry point: broadcasts prepared, then one of the two paths
///   dispatch/dispatch_summed       the path of an OutputWithSums: layout of the sums, partial sums
///   dispatch/dispatch_transform    the path of an output pointer: checks, vector width, alignment, grid
///   dispatch/dispatch_depthwise    depthwise_conv's checks, grid and launches
///   dispatch/dispatch_max_pool     max_pool's checks, vector width and launch
///   dispatch/dispatch_concatenate  concatenate's checks, access size, block share and launches
///   dispatch/prepare_operands      which operand is which, pointer checks, broadcasts prepared
///   dispatch/launch_shape          which kernel, and the staged shape (Little's law per device)
///   dispatch/device_properties     per-device properties, cached
///   dispatch/dependent_launch      a launch that may start while the one before it runs (sm_90+)
///   dispatch/memory_range          the null, alignment and overlap checks of whole arrays
///   dispatch/pointer_check         which device a pointer belongs to (opt-in check)
///   dispatch/test_overrides        switches tests use to force a path (HARDACT_TESTING_OVERRIDES)
///   kernel/tuning                  every tuning constant and HARDACT_* knob (docs/TUNING.md)
///   kernel/direct_transform_kernel global memory straight into registers (any architecture)
///   kernel/staged_transform_kernel bulk copies into shared memory (sm_90 and later)
///   kernel/summed_transform_kernel the transform that also sums its outputs per channel
///   kernel/depthwise_kernel        the depthwise convolution and the sums of its mean
///   kernel/max_pool_kernel         the max pooling
///   kernel/concatenate_kernel      the concatenation's copy
///   kernel/device_broadcast        broadcast operands as the kernels read them
///   kernel/dependent_launch        the device side of a dependent launch
///   policy/*                       activation functors
///   numeric/*                      compute types, conversions, comparisons, fast division
///   types/broadcast                the public Broadcast and SampleBroadcast, per_channel and
///                                  per_sample_channel, for dispatch to read (no hardact includes)
///   types/output_with_sums         the public OutputWithSums, with_channel_sums and
///                                  with_sample_channel_sums, likewise
///   types/depthwise_shape          the public DepthwiseConvShape, likewise
///   types/max_pool_shape           the public MaxPoolShape, likewise
///   types/concatenation_input      the public ConcatenationInput, likewise
#pragma once

#include <hardact/version.cuh>
#include <hardact/numeric/conversions.cuh>
#include <hardact/operand.cuh>
#include <hardact/policies.cuh>
#include <hardact/transform.cuh>
#include <hardact/depthwise.cuh>
#include <hardact/pooling.cuh>
#include <hardact/concatenate.cuh>
#include <hardact/reduce.cuh>
#include <hardact/checked.cuh>
