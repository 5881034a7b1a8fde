/// @file vector_access.cuh
/// @brief Aligned vectors of elements and streaming (evict-first) loads and stores of them.
#pragma once

#include <cub/thread/thread_load.cuh>
#include <cub/thread/thread_store.cuh>

#include <cstddef>

namespace hardact {
namespace detail {

/// Largest single memory access a thread can issue on current NVIDIA GPUs.
inline constexpr std::size_t kMaxAccessBytes = 16;

/// Alignment one vector of `Width` elements of `T` needs: its size, capped at one 16-byte access.
template <class T, int Width>
inline constexpr std::size_t kVectorAlignment =
    sizeof(T) * Width < kMaxAccessBytes ? sizeof(T) * Width : kMaxAccessBytes;

/// `Width` consecutive elements, aligned so that CUB turns a load of it into the fewest, widest
/// accesses (one 16-byte access, or several when the vector is wider than 16 bytes).
template <class T, int Width>
struct alignas(kVectorAlignment<T, Width>) AlignedVector {
  T elements[static_cast<std::size_t>(Width)];
};

/// Each element is touched once, so loads and stores are marked evict-first (.cs) to leave the
/// cache to data that is reused.
template <class Vector>
__device__ __forceinline__ Vector load_streaming(const Vector* address) {
  return cub::ThreadLoad<cub::LOAD_CS>(address);
}

template <class Vector>
__device__ __forceinline__ void store_streaming(Vector* address, const Vector& value) {
  cub::ThreadStore<cub::STORE_CS>(address, value);
}

}  // namespace detail
}  // namespace hardact
