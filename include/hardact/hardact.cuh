/// @file hardact.cuh
/// @brief The whole public API of hardact: policies, conversions and launchers.
///
/// Layers, from the outside in:
///   transform.cuh                  launchers (cudaError_t, stream last)
///   dispatch/dispatch_transform    argument checks, vector width, alignment path, grid
///   dispatch/device_properties     per-device properties, cached
///   kernel/transform_kernel        the one kernel template
///   policy/*                       activation functors
///   numeric/*                      compute types, conversions, NaN- and zero-aware comparisons
#pragma once

#include <hardact/version.cuh>
#include <hardact/numeric/conversions.cuh>
#include <hardact/policies.cuh>
#include <hardact/transform.cuh>
