/// @file operand.cuh
/// @brief The operands a launcher takes besides plain pointers. Broadcast operands: an input of a
///        transform call whose value for output element i is values[(i / inner) % period] (a bias,
///        a per-channel scale or shift, a per-(n, c) gate of an NCHW tensor) or, for a
///        SampleBroadcast, values[(i / inner) % period + period * (i / span)] (a per-(n, c) gate of
///        a channels-last tensor): types/broadcast.cuh. And one output operand, OutputWithSums: the
///        output of a transform call together with the per-channel (or per-(n, c)) sums of what was
///        written, in the same pass: types/output_with_sums.cuh.
///
///        The types live under types/, below the dispatch layer, so that dispatch reads them without
///        including a public header; how the launchers check and prepare them is
///        dispatch/prepare_operands.cuh, how the kernels read them kernel/device_broadcast.cuh.
#pragma once

#include <hardact/types/broadcast.cuh>
#include <hardact/types/output_with_sums.cuh>
