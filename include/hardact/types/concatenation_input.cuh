/// @file types/concatenation_input.cuh
/// @brief One input of a concatenation (hardact::concatenate, concatenate.cuh). Public types only,
///        like max_pool_shape.cuh: how the launcher checks the inputs and lays its grid out is
///        dispatch/dispatch_concatenate.cuh.
#pragma once

#include <cstddef>

namespace hardact {

/// @brief rows x row_elements elements of T at data, row after row (rows is the call's): one input
///        of hardact::concatenate, whose output row r is every input's row r, in input order.
///
/// A channels-last (N, C_k, H, W) tensor concatenated along C is N * H * W rows of C_k elements; a
/// contiguous one is N rows of C_k * H * W elements. An input of no elements a row adds nothing
/// and its data is not looked at.
template <class T>
struct ConcatenationInput {
  const T* data = nullptr;
  std::size_t row_elements = 0;
};

}  // namespace hardact
