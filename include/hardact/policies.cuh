/// @file policies.cuh
/// @brief Every activation policy. Usable on their own inside user kernels (`__host__ __device__`).
#pragma once

#include <hardact/policy/hard_sigmoid.cuh>
#include <hardact/policy/hard_tanh.cuh>
