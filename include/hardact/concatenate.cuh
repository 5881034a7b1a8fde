/// @file concatenate.cuh
/// @brief Public launcher: hardact::concatenate, rows of several arrays written side by side, the
///        copy torch.cat makes along the channels of channels-last tensors.
#pragma once

#include <hardact/types/concatenation_input.cuh>
#include <hardact/dispatch/dispatch_concatenate.cuh>

#include <cuda_runtime_api.h>

#include <cstddef>

namespace hardact {

/// @brief y's row r = inputs[0]'s row r, then inputs[1]'s, ... (each input rows x row_elements,
///        y rows x the sum of the row_elements), enqueued on `stream`: torch.cat's output, bit for bit.
///
/// @param inputs      input_count inputs in host memory, read during the call only (their values
///                    travel in the launch's parameters, so the array may be reused at once).
///                    Their data are arrays of T, any trivially copyable type, aligned to T; the
///                    bytes are copied as they are (NaN payloads kept). Inputs may share bytes with
///                    each other, not with y.
/// @param input_count at least 1.
/// @param rows        the rows of every input and of y.
/// @param y           aligned to T. Where every row's bytes and every pointer allow it, the copy
///                    moves 16 bytes at a time, else 8, 4, 2 or 1.
/// @param stream      the call never synchronises or allocates, so it can be captured in a CUDA
///                    Graph. It launches once per 16 inputs.
/// @return cudaSuccess; cudaErrorInvalidValue, with no CUDA call, for a null `inputs` or no inputs;
///         then, for no rows or rows of no elements, cudaSuccess with no CUDA call and no data
///         pointer looked at; then cudaErrorNotSupported for a y of 2^62 bytes or more; then
///         cudaErrorInvalidValue, with nothing launched, for a null or misaligned pointer (an
///         input's data where it has elements, or y), an array past the address space's end, or a
///         y that shares a byte with an input; then
///         cudaErrorNotSupported, nothing launched, where the copy needs more blocks than a grid
///         holds (2^31 - 1 blocks of at least 256 accesses: more memory than a GPU has); or the
///         error a CUDA call returned.
template <class T>
cudaError_t concatenate(const ConcatenationInput<T>* inputs, std::size_t input_count, std::size_t rows, T* y,
                        cudaStream_t stream = nullptr) {
  return detail::dispatch_concatenate(inputs, input_count, rows, y, stream);
}

}  // namespace hardact
