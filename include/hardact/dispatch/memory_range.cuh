/// @file memory_range.cuh
/// @brief The launch contract's pointer checks shared by the launchers of whole arrays
///        (depthwise_conv, max_pool, concatenate): an array usable as given, two arrays sharing a byte.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hardact {
namespace detail {

/// `bytes` bytes from `begin`.
struct MemoryRange {
  const void* begin;
  std::size_t bytes;
};

/// Non-null, aligned to `alignment` bytes, and not wrapping around the address space.
inline bool range_usable(const MemoryRange& r, std::size_t alignment) {
  const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(r.begin);
  return r.begin != nullptr && address % alignment == 0 && address <= UINTPTR_MAX - r.bytes;
}

/// Two ranges share a byte (an empty range shares none).
inline bool ranges_overlap(const MemoryRange& a, const MemoryRange& b) {
  const std::uintptr_t a_begin = reinterpret_cast<std::uintptr_t>(a.begin);
  const std::uintptr_t b_begin = reinterpret_cast<std::uintptr_t>(b.begin);
  return a.bytes > 0 && b.bytes > 0 && a_begin < b_begin + b.bytes && b_begin < a_begin + a.bytes;
}

}  // namespace detail
}  // namespace hardact
