/// @file shared_staging.cuh
/// @brief The pieces of the staged path: 16-byte windows of global memory, bulk copies of them into
///        shared memory completing on an mbarrier (sm_90 and later), and reads of shifted data
///        back out of shared memory.
#pragma once

#include <cuda/ptx>
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include <cstddef>
#include <cstdint>

namespace hardact {
namespace detail {

/// The bulk-copy engine moves 16-byte-aligned blocks of a multiple of 16 bytes.
inline constexpr std::size_t kBulkCopyGranule = 16;
/// L2 cache lines are 128 bytes.
inline constexpr std::uintptr_t kL2LineBytes = 128;

__host__ __device__ constexpr std::uintptr_t align_down_to_granule(std::uintptr_t address) {
  return address & ~static_cast<std::uintptr_t>(kBulkCopyGranule - 1);
}
__host__ __device__ constexpr std::uintptr_t align_up_to_granule(std::uintptr_t address) {
  return align_down_to_granule(address + kBulkCopyGranule - 1);
}

/// The granule-aligned window of global memory that holds [begin, end): what one bulk copy moves.
struct GranuleWindow {
  std::uintptr_t begin;
  std::uint32_t bytes;
};

template <class T>
__device__ __forceinline__ GranuleWindow granule_window(const T* first, std::size_t count) {
  const std::uintptr_t begin = align_down_to_granule(reinterpret_cast<std::uintptr_t>(first));
  const std::uintptr_t end = align_up_to_granule(reinterpret_cast<std::uintptr_t>(first + count));
  return {begin, static_cast<std::uint32_t>(end - begin)};
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

/// One thread's setup of an mbarrier that completes when its arrivals (one) and the bytes it was
/// told to expect have all come in. The fences make the initialised barrier visible to the
/// bulk-copy (async) proxy before any copy signals it.
__device__ __forceinline__ void init_stage_barrier(std::uint64_t* barrier) {
  cuda::ptx::mbarrier_init(barrier, 1);
  cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
}

/// Announces `bytes` of copies to `barrier` and arrives on it; the phase completes when they land.
__device__ __forceinline__ void expect_stage_bytes(std::uint64_t* barrier, std::uint32_t bytes) {
  (void)cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                             barrier, bytes);
}

/// Starts a bulk copy of `window` into shared memory at `destination`, completing on `barrier`.
__device__ __forceinline__ void bulk_copy_to_shared(void* destination, const GranuleWindow& window,
                                                    std::uint64_t* barrier) {
  cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, destination,
                           reinterpret_cast<const void*>(window.begin), window.bytes, barrier);
}

/// An L2 cache-policy operand that marks every line it touches evict-last.
__device__ __forceinline__ std::uint64_t evict_last_policy() {
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

/// The same bulk copy, its lines marked in L2 by `l2_policy` (cuda::ptx has no cache-hint form).
__device__ __forceinline__ void bulk_copy_to_shared(void* destination, const GranuleWindow& window,
                                                    std::uint64_t* barrier, std::uint64_t l2_policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
          static_cast<std::uint32_t>(__cvta_generic_to_shared(destination))),
      "l"(window.begin), "r"(window.bytes), "r"(static_cast<std::uint32_t>(__cvta_generic_to_shared(barrier))),
      "l"(l2_policy)
      : "memory");
}

/// Returns the L2 lines of `window` that lie wholly inside [array_begin, array_end) to normal
/// eviction priority, spread over `Threads` threads. `applypriority` changes only the priority of
/// a line that is present; libcu++'s apply_access_property(normal) prefetches, which would read a
/// line back from memory if it had been evicted. Lines that straddle the array's ends are left
/// alone, so no line outside the caller's array is named (at most two per array stay evict-last).
template <int Threads>
__device__ __forceinline__ void restore_normal_priority(const GranuleWindow& window, std::uintptr_t array_begin,
                                                        std::uintptr_t array_end) {
  const std::uintptr_t window_first = window.begin & ~(kL2LineBytes - 1);
  const std::uintptr_t array_first = (array_begin + kL2LineBytes - 1) & ~(kL2LineBytes - 1);
  const std::uintptr_t window_last = (window.begin + window.bytes + kL2LineBytes - 1) & ~(kL2LineBytes - 1);
  const std::uintptr_t array_last = array_end & ~(kL2LineBytes - 1);
  const std::uintptr_t first = window_first > array_first ? window_first : array_first;
  const std::uintptr_t last = window_last < array_last ? window_last : array_last;
  for (std::uintptr_t line = first + threadIdx.x * kL2LineBytes; line < last; line += Threads * kL2LineBytes) {
    asm volatile("applypriority.global.L2::evict_normal [%0], 128;" ::"l"(line) : "memory");
  }
}

/// Waits until the phase of `barrier` with parity `phase` has completed (acquire: the copied
/// bytes are then visible to the waiting thread).
__device__ __forceinline__ void wait_stage_barrier(std::uint64_t* barrier, std::uint32_t phase) {
  while (!cuda::ptx::mbarrier_try_wait_parity(barrier, phase)) {
  }
}

/// Orders this thread's earlier shared-memory reads (generic proxy) before bulk copies it issues
/// next into the same bytes (async proxy).
__device__ __forceinline__ void order_reads_before_bulk_copy() { cuda::ptx::fence_proxy_async(cuda::ptx::space_shared); }

#endif  // __CUDA_ARCH__ >= 900

/// The `Bytes` bytes of unit `unit` of a staging buffer whose data starts `shift` bytes past
/// `buffer`, as 32-bit words. `buffer` is 16-byte aligned, `shift` < 16 is the same for the whole
/// block, and the 16 bytes past the data may be read (the staging buffers are padded for it).
/// Bytes is 4, 8 or a multiple of 16: the loads are of min(Bytes, 16) bytes, aligned. An unshifted
/// read is Bytes / that many loads; a shifted one reads one load more and funnels the words into
/// place, so relatively misaligned inputs still cost only aligned shared-memory loads.
template <int Bytes>
__device__ __forceinline__ void read_shifted_words(const unsigned char* buffer, unsigned shift, std::size_t unit,
                                                   std::uint32_t (&words)[static_cast<std::size_t>(Bytes / 4)]) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes % 16 == 0, "hardact: staged reads are 4, 8 or 16k bytes");
  constexpr int kLoadBytes = Bytes < 16 ? Bytes : 16;
  constexpr int kLoadWords = kLoadBytes / 4;
  constexpr int kLoads = Bytes / kLoadBytes;
  using Load = cuda::std::conditional_t<kLoadBytes == 16, uint4, cuda::std::conditional_t<kLoadBytes == 8, uint2, std::uint32_t>>;
  // Whole loads of the shift go into the address; what is left (< kLoadBytes) is funnelled.
  const Load* loads = reinterpret_cast<const Load*>(buffer + unit * Bytes + shift / kLoadBytes * kLoadBytes);
  const unsigned residual = shift % kLoadBytes;
  const auto unpack = [](const Load& load, std::uint32_t* to) {
    if constexpr (kLoadWords == 4) {
      to[0] = load.x, to[1] = load.y, to[2] = load.z, to[3] = load.w;
    } else if constexpr (kLoadWords == 2) {
      to[0] = load.x, to[1] = load.y;
    } else {
      to[0] = load;
    }
  };
  if (residual == 0) {
#pragma unroll
    for (int v = 0; v < kLoads; ++v) unpack(loads[v], words + kLoadWords * v);
    return;
  }
  std::uint32_t window[static_cast<std::size_t>(kLoadWords * (kLoads + 1))];
#pragma unroll
  for (int v = 0; v <= kLoads; ++v) unpack(loads[v], window + kLoadWords * v);
  // The word offset selects registers, so it must be a compile-time constant in each branch
  // (a run-time index would move `window` to local memory); the bit offset may be a run-time value.
  const unsigned bits = (residual & 3u) * 8u;
  const auto funnel = [&](auto word_offset) {
    constexpr int kOffset = decltype(word_offset)::value;
#pragma unroll
    for (int k = 0; k < Bytes / 4; ++k) words[k] = __funnelshift_r(window[k + kOffset], window[k + kOffset + 1], bits);
  };
  switch (residual >> 2) {
    case 0: funnel(cuda::std::integral_constant<int, 0>{}); break;
    case 1: if constexpr (kLoadWords > 1) funnel(cuda::std::integral_constant<int, 1>{}); break;
    case 2: if constexpr (kLoadWords > 2) funnel(cuda::std::integral_constant<int, 2>{}); break;
    default: if constexpr (kLoadWords > 3) funnel(cuda::std::integral_constant<int, 3>{}); break;
  }
}

}  // namespace detail
}  // namespace hardact
