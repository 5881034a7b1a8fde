/// @file policies.cuh
/// @brief Every activation policy. Usable on their own inside user kernels (`__host__ __device__`).
#pragma once

#include <hardact/policy/affine.cuh>
#include <hardact/policy/backward.cuh>
#include <hardact/policy/chain.cuh>
#include <hardact/policy/fused.cuh>
#include <hardact/policy/hard_sigmoid.cuh>
#include <hardact/policy/hard_swish.cuh>
#include <hardact/policy/hard_tanh.cuh>
#include <hardact/policy/relu6.cuh>
#include <hardact/policy/silu.cuh>
