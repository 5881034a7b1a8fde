/// @file value_array.cuh
/// @brief A vector's worth of values of one operand, held in registers: narrow types packed in
///        32-bit words.
#pragma once

#include <hardact/kernel/vector_access.cuh>

#include <cuda/std/type_traits>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hardact {
namespace detail {

/// Count values of a broadcast operand, one per element of a vector. Values narrower than 32 bits
/// are packed in 32-bit words and written a word at a time, so that values held across the staged
/// kernel's wait take half the registers (TUNING.md#broadcast-access).
template <class T, int Count>
struct ValueArray {
  static constexpr std::size_t kBytes = sizeof(T) * static_cast<std::size_t>(Count);
  static constexpr bool kPacked = sizeof(T) < 4 && 4 % sizeof(T) == 0 && kBytes % 4 == 0;
  static constexpr int kPerWord = kPacked ? static_cast<int>(4 / sizeof(T)) : 1;
  using Storage = cuda::std::conditional_t<kPacked, std::uint32_t, T>;
  using Bits = cuda::std::conditional_t<sizeof(T) == 1, std::uint8_t, std::uint16_t>;  // of a packed value
  Storage storage[kPacked ? kBytes / 4 : static_cast<std::size_t>(Count)];

  __device__ __forceinline__ T get(int j) const {
    if constexpr (kPacked) {
      const unsigned shift = 8 * sizeof(T) * static_cast<unsigned>(j % kPerWord);
      const Bits bits = static_cast<Bits>(storage[j / kPerWord] >> shift);
      T value;
      memcpy(&value, &bits, sizeof(T));
      return value;
    } else {
      return storage[j];
    }
  }
  /// Every value from `values`, a word at a time.
  __device__ __forceinline__ void set_all(const T (&values)[static_cast<std::size_t>(Count)]) {
    if constexpr (kPacked) {
#pragma unroll
      for (std::size_t k = 0; k < kBytes / 4; ++k) {
        std::uint32_t word = 0;
#pragma unroll
        for (int e = 0; e < kPerWord; ++e) {
          Bits bits;
          memcpy(&bits, &values[k * kPerWord + static_cast<std::size_t>(e)], sizeof(T));
          word |= static_cast<std::uint32_t>(bits) << (8 * sizeof(T) * static_cast<unsigned>(e));
        }
        storage[k] = word;
      }
    } else {
#pragma unroll
      for (int j = 0; j < Count; ++j) storage[j] = values[j];
    }
  }
  __device__ __forceinline__ void fill(T value) {
    if constexpr (kPacked) {
      Bits bits;
      memcpy(&bits, &value, sizeof(T));
      std::uint32_t word = 0;
#pragma unroll
      for (int e = 0; e < kPerWord; ++e) {
        word |= static_cast<std::uint32_t>(bits) << (8 * sizeof(T) * static_cast<unsigned>(e));
      }
#pragma unroll
      for (std::size_t k = 0; k < kBytes / 4; ++k) storage[k] = word;
    } else {
#pragma unroll
      for (int j = 0; j < Count; ++j) storage[j] = value;
    }
  }
  /// Elements k * Chunk .. (k + 1) * Chunk - 1 from one loaded vector (types that are not packed).
  template <int Chunk>
  __device__ __forceinline__ void set_chunk(int k, const AlignedVector<T, Chunk>& chunk) {
    static_assert(!kPacked, "hardact: packed values are written as words (set_words)");
#pragma unroll
    for (int j = 0; j < Chunk; ++j) storage[k * Chunk + j] = chunk.elements[j];
  }
  /// Words k * kWords .. (k + 1) * kWords - 1 of packed values from one load of 4, 8 or 16 bytes.
  template <class Words>
  __device__ __forceinline__ void set_words(int k, const Words& words) {
    static_assert(kPacked, "hardact: only packed values are held as words");
    constexpr int kWords = static_cast<int>(sizeof(Words) / 4);
    if constexpr (kWords == 4) {
      storage[4 * k] = words.x, storage[4 * k + 1] = words.y, storage[4 * k + 2] = words.z, storage[4 * k + 3] = words.w;
    } else if constexpr (kWords == 2) {
      storage[2 * k] = words.x, storage[2 * k + 1] = words.y;
    } else {
      storage[k] = words;
    }
  }
};

}  // namespace detail
}  // namespace hardact
