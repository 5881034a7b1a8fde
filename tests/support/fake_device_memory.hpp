// Test support for host tests of refused launches: host storage standing in for device memory.
// A refused call returns before any CUDA call, so these addresses are never dereferenced.
#pragma once

#include <cstddef>

namespace hardact_test {

/// Host storage standing in for device memory: aligned for every type, never dereferenced.
struct FakeDeviceMemory {
  alignas(256) unsigned char bytes[4096];
  template <class T>
  T* at(std::size_t byte_offset) {
    return reinterpret_cast<T*>(bytes + byte_offset);
  }
};

}  // namespace hardact_test
