/// @file backward.cuh
/// @brief Every gradient policy: two-input policies called as op(grad, x), for the two-input
///        launcher. Each gradient is defined beside its activation (HardSigmoidBackward in
///        hard_sigmoid.cuh, HardTanhBackward in hard_tanh.cuh, HardSwishBackward in hard_swish.cuh),
///        so a change to one side of a pair is made next to the other; this header gathers them.
#pragma once

#include <hardact/policy/hard_sigmoid.cuh>
#include <hardact/policy/hard_swish.cuh>
#include <hardact/policy/hard_tanh.cuh>
