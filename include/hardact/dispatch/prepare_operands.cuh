/// @file prepare_operands.cuh
/// @brief What the launchers do with their operands before a kernel sees them: which are
///        full-length pointers and which broadcasts (and the policy wrapper that puts their values
///        back in the user's order), the pointer checks of the launch contract, and each broadcast
///        operand checked and prepared for the kernels (kernel/device_broadcast.cuh).
#pragma once

#include <hardact/kernel/device_broadcast.cuh>
#include <hardact/numeric/fast_divmod.cuh>
#include <hardact/policy/validity.cuh>
#include <hardact/types/broadcast.cuh>
#include <hardact/types/output_with_sums.cuh>

#include <cuda/std/tuple>
#include <cuda/std/type_traits>
#include <cuda/std/utility>

#include <cstddef>
#include <cstdint>

namespace hardact {
namespace detail {

// ---- Which operand is which ----

template <class T>
struct is_broadcast : cuda::std::false_type {};
template <class T>
struct is_broadcast<Broadcast<T>> : cuda::std::true_type {};
template <class T>
struct is_broadcast<SampleBroadcast<T>> : cuda::std::true_type {};

/// What a launcher accepts as an input: a pointer to full-length data or a Broadcast.
template <class T>
inline constexpr bool is_operand_v = cuda::std::is_pointer_v<T> || is_broadcast<T>::value;

/// The element type of an input operand.
template <class T>
struct operand_element {
  using type = cuda::std::remove_cv_t<cuda::std::remove_pointer_t<T>>;
};
template <class T>
struct operand_element<Broadcast<T>> {
  using type = cuda::std::remove_cv_t<T>;
};
template <class T>
struct operand_element<SampleBroadcast<T>> {
  using type = cuda::std::remove_cv_t<T>;
};

/// The launcher's half: which operand of a call is which, full-length pointers and broadcasts,
/// positions in the order the user gave them.
template <class... Operand>
struct OperandSplit {
  static constexpr bool kIsBroadcast[] = {is_broadcast<Operand>::value...};
  static constexpr std::size_t kBroadcasts = (std::size_t{0} + ... + (is_broadcast<Operand>::value ? 1 : 0));
  static constexpr std::size_t kFull = sizeof...(Operand) - kBroadcasts;
  /// The position of the k-th operand that is (or is not) a broadcast.
  static constexpr std::size_t position(std::size_t k, bool broadcast) {
    for (std::size_t i = 0; i < sizeof...(Operand); ++i) {
      if (kIsBroadcast[i] == broadcast && k-- == 0) return i;
    }
    return sizeof...(Operand);
  }
};

/// The kernel's half: calls the user's policy with its arguments in the order the user gave the
/// operands, when the kernels pass the full-length inputs' values first and the broadcast operands'
/// values after. IsBroadcast holds, per operand in the user's order, whether it is a broadcast.
template <class Op, bool... IsBroadcast>
struct OperandOrder {
  Op op;

  __host__ __device__ bool is_valid() const { return policy_is_valid(op); }

  template <class... V>
  __host__ __device__ auto operator()(V... values) const {
    static_assert(sizeof...(V) == sizeof...(IsBroadcast), "hardact: one value per operand");
    const cuda::std::tuple<V...> kernel_order{values...};
    return call(kernel_order, cuda::std::make_index_sequence<sizeof...(V)>{});
  }

 private:
  /// Where operand k of the user's order sits in the kernel's order.
  __host__ __device__ static constexpr std::size_t kernel_position(std::size_t k) {
    constexpr bool broadcast[] = {IsBroadcast...};
    std::size_t full_count = 0, full_before = 0, broadcast_before = 0;
    for (std::size_t i = 0; i < sizeof...(IsBroadcast); ++i) {
      if (!broadcast[i]) ++full_count;
      if (i < k) (broadcast[i] ? broadcast_before : full_before) += 1;
    }
    return broadcast[k] ? full_count + broadcast_before : full_before;
  }

  template <class Tuple, std::size_t... K>
  __host__ __device__ auto call(const Tuple& kernel_order, cuda::std::index_sequence<K...>) const {
    return op(cuda::std::get<kernel_position(K)>(kernel_order)...);
  }
};

template <class T>
const T* full_operand(const T* pointer) {
  return pointer;
}

// ---- The launch contract's pointer checks ----

inline std::uintptr_t address_of(const void* pointer) { return reinterpret_cast<std::uintptr_t>(pointer); }

/// A pointer the launcher can use for n elements: non-null, aligned to its type, and with
/// [p, p + n) not wrapping around the address space.
template <class T>
bool is_usable_range(const T* pointer, std::size_t n) {
  if (pointer == nullptr) return false;
  if (address_of(pointer) % alignof(T) != 0) return false;
  if (n > SIZE_MAX / sizeof(T)) return false;
  return address_of(pointer) <= UINTPTR_MAX - n * sizeof(T);
}

/// True when the input and output ranges share bytes without being the very same elements
/// (in == out with equal element sizes is the allowed in-place case).
template <class TOut, class TIn>
bool overlaps_unsafely(const TOut* out, const TIn* in, std::size_t n) {
  const std::uintptr_t out_begin = address_of(out), out_end = out_begin + n * sizeof(TOut);
  const std::uintptr_t in_begin = address_of(in), in_end = in_begin + n * sizeof(TIn);
  const bool overlap = out_begin < in_end && in_begin < out_end;
  const bool in_place = out_begin == in_begin && sizeof(TOut) == sizeof(TIn);
  return overlap && !in_place;
}

// ---- The output operand ----

template <class T>
struct is_output_with_sums : cuda::std::false_type {};
template <class T, class TSum>
struct is_output_with_sums<OutputWithSums<T, TSum>> : cuda::std::true_type {};

/// What a launcher accepts as its output: a pointer, or an OutputWithSums.
template <class T>
inline constexpr bool is_output_v = cuda::std::is_pointer_v<T> || is_output_with_sums<T>::value;

/// The n outputs of either kind of output operand.
template <class T>
T* output_values(T* out) {
  return out;
}
template <class T, class TSum>
T* output_values(const OutputWithSums<T, TSum>& output) {
  return output.values;
}

/// An OutputWithSums's shape, whatever n: inner and period at least 1, span 0 or whole runs of
/// inner * period.
template <class T, class TSum>
bool is_well_formed(const OutputWithSums<T, TSum>& o) {
  if (o.inner == 0 || o.period == 0 || o.period > kMaxBroadcastElements / o.inner) return false;
  return o.span == 0 || o.span % (o.inner * o.period) == 0;
}

/// Whether an output operand's shape is well formed: always for a pointer.
template <class T>
bool output_is_well_formed(T*) {
  return true;
}
template <class T, class TSum>
bool output_is_well_formed(const OutputWithSums<T, TSum>& o) {
  return is_well_formed(o);
}

/// The sums a well-formed OutputWithSums holds for a call of n elements (period per span).
template <class T, class TSum>
std::size_t sums_count(const OutputWithSums<T, TSum>& o, std::size_t n) {
  const std::size_t span = o.span == 0 ? n : o.span;
  return span == 0 ? 0 : o.period * ((n + span - 1) / span);
}

/// Ranges [a, a + count_a) and [b, b + count_b) share a byte.
template <class A, class B>
bool ranges_overlap(const A* a, std::size_t count_a, const B* b, std::size_t count_b) {
  const std::uintptr_t a_begin = address_of(a), a_end = a_begin + count_a * sizeof(A);
  const std::uintptr_t b_begin = address_of(b), b_end = b_begin + count_b * sizeof(B);
  return a_begin < b_end && b_begin < a_end;
}

/// The values a broadcast operand holds for a call of n >= 1 elements.
template <class T>
std::size_t broadcast_value_count(const Broadcast<T>& b, std::size_t) {
  return b.period;
}
template <class T>
std::size_t broadcast_value_count(const SampleBroadcast<T>& b, std::size_t n) {
  return ((n - 1) / b.span + 1) * b.period;
}

/// A broadcast operand's values clear of a summing call's sums, which the kernels write while
/// other blocks still read the values; nothing to check for a plain output.
template <class B, class TOut>
bool clear_of_sums(const B&, std::size_t, TOut*) {
  return true;
}
template <class B, class T, class TSum>
bool clear_of_sums(const B& b, std::size_t n, const OutputWithSums<T, TSum>& output) {
  return !ranges_overlap(b.values, broadcast_value_count(b, n), output.sums, sums_count(output, n));
}

// ---- Broadcast operands: checked, then prepared for the kernels ----

/// Values the kernels can read for a call of n elements writing `out`: non-null and aligned,
/// readable, and none inside the output (it would change while being read).
template <class T, class TOut>
bool usable_values(const T* values, std::size_t count, std::size_t n, const TOut* out) {
  if (!is_usable_range(values, count)) return false;
  const std::uintptr_t values_begin = address_of(values), values_end = values_begin + count * sizeof(T);
  const std::uintptr_t out_begin = address_of(out), out_end = out_begin + n * sizeof(TOut);
  return !(values_begin < out_end && out_begin < values_end);
}

/// A broadcast operand's shape, whatever n and without looking at its pointer: inner and period
/// at least 1; for a SampleBroadcast also a span that is a whole number of inner * period.
template <class T>
bool is_well_formed(const Broadcast<T>& b) {
  return b.inner != 0 && b.period != 0;
}
template <class T>
bool is_well_formed(const SampleBroadcast<T>& b) {
  if (b.inner == 0 || b.period == 0 || b.span == 0) return false;
  return b.span % b.inner == 0 && (b.span / b.inner) % b.period == 0;
}

/// A well-formed Broadcast's values for a call of n >= 1 elements.
template <class T, class TOut>
bool is_usable_broadcast(const Broadcast<T>& b, std::size_t n, const TOut* out) {
  return usable_values(b.values, b.period, n, out);
}

/// The same for a well-formed SampleBroadcast: period values for each span the call reaches.
template <class T, class TOut>
bool is_usable_broadcast(const SampleBroadcast<T>& b, std::size_t n, const TOut* out) {
  const std::size_t spans = (n - 1) / b.span + 1;
  return spans <= SIZE_MAX / b.period && usable_values(b.values, spans * b.period, n, out);
}

/// Element counts larger than n do not change (i / inner) % period for i < n, and keep every
/// divisor within FastDivmod's range.
template <class T>
DeviceBroadcast<T> prepare_broadcast(const Broadcast<T>& b, std::size_t n) {
  const std::size_t inner = b.inner < n ? b.inner : n;
  const std::size_t period = b.period < n ? b.period : n;
  return DeviceBroadcast<T>{b.values, FastDivmod::make(inner), FastDivmod::make(period), n <= kNarrowIndexLimit};
}

/// The same for a SampleBroadcast (validated: span a multiple of inner * period). A span of n or
/// more is one span: the call never reaches the next.
template <class T>
DeviceBroadcast<T, true> prepare_broadcast(const SampleBroadcast<T>& b, std::size_t n) {
  const std::size_t inner = b.inner < n ? b.inner : n;
  const std::size_t period = b.period < n ? b.period : n;
  const std::size_t span = b.span < n ? b.span : n;
  DeviceBroadcast<T, true> prepared{b.values, FastDivmod::make(inner), FastDivmod::make(period), n <= kNarrowIndexLimit};
  prepared.span = FastDivmod::make(span);
  prepared.last_base = static_cast<std::uint64_t>((n - 1) / span) * period;
  return prepared;
}

/// Marks the broadcast operands whose positions are those of the first (located_like_first): the
/// same kind, inner and period (and span).
template <class... D, std::size_t... B>
void share_locations(cuda::std::tuple<D...>& broadcasts, cuda::std::index_sequence<B...>) {
  const auto& first = cuda::std::get<0>(broadcasts);
  using First = cuda::std::remove_cv_t<cuda::std::remove_reference_t<decltype(first)>>;
  const auto mark = [&](auto& b) {
    using This = cuda::std::remove_reference_t<decltype(b)>;
    b.located_like_first = This::kSpanned == First::kSpanned && b.inner.divisor == first.inner.divisor &&
                           b.period.divisor == first.period.divisor && b.span_length() == first.span_length();
  };
  (mark(cuda::std::get<B>(broadcasts)), ...);
}

}  // namespace detail
}  // namespace hardact
