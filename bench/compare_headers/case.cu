// One launch per case of compare-header-versions, compiled twice: against the base revision's
// headers with -Dhardact=hardact_base -DCOMPARE_SIDE=side_base (so its library lives in namespace
// hardact_base; the header names in #include are not macro-expanded), and against the current
// headers with -DCOMPARE_SIDE=side_current. The calls are those of bench/bench_interleaved.cu and
// bench/bench_fused.cu for the same rows.
#include "cases.hpp"

#include <hardact/hardact.cuh>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>

#ifndef COMPARE_SIDE
#error "define COMPARE_SIDE (side_base or side_current)"
#endif

namespace COMPARE_SIDE {

using compare_headers::kBatch;
using compare_headers::kChannels;
using compare_headers::kColumns;
using compare_headers::kPlane;

template <class T>
const T* in(const void* p) {
  return static_cast<const T*>(p);
}

/// The case's launch on `stream`, with this side's headers (the element type is the case's).
cudaError_t launch_case(int index, const compare_headers::Pointers& p, cudaStream_t stream) {
  using bf16 = __nv_bfloat16;
  const std::size_t n = compare_headers::kCases[index].n;
  switch (index) {
    case 0: case 1: case 2:
      return hardact::transform(hardact::HardSigmoid{}, in<float>(p.in0), static_cast<float*>(p.out), n, stream);
    case 3:
      return hardact::transform(hardact::HardSigmoid{}, in<bf16>(p.in0), static_cast<bf16*>(p.out), n, stream);
    case 4:
      return hardact::transform(hardact::HardSigmoid{}, in<double>(p.in0), static_cast<double*>(p.out), n, stream);
    case 5:
      return hardact::transform(hardact::HardSigmoidBackward{}, in<float>(p.in0), in<float>(p.in1),
                                static_cast<float*>(p.out), n, stream);
    case 6:
      return hardact::transform(hardact::scale_shift_activation(hardact::HardSwish{}), in<float>(p.in0),
                                hardact::per_channel(in<float>(p.v0), kChannels, kPlane),
                                hardact::per_channel(in<float>(p.v1), kChannels, kPlane), static_cast<float*>(p.out), n,
                                stream);
    case 7:
      return hardact::transform(hardact::scale_shift_activation(hardact::HardSwish{}), in<bf16>(p.in0),
                                hardact::per_channel(in<bf16>(p.v0), kChannels, kPlane),
                                hardact::per_channel(in<bf16>(p.v1), kChannels, kPlane), static_cast<bf16*>(p.out), n,
                                stream);
    case 8:
      return hardact::transform(hardact::bias_activation(hardact::HardSwish{}), in<float>(p.in0),
                                hardact::per_channel(in<float>(p.v0), kColumns), static_cast<float*>(p.out), n, stream);
    case 9:
      return hardact::transform(hardact::bias_activation(hardact::HardSwish{}), in<bf16>(p.in0),
                                hardact::per_channel(in<bf16>(p.v0), kColumns), static_cast<bf16*>(p.out), n, stream);
    case 10:
      return hardact::transform(hardact::residual_activation(hardact::HardSwish{}), in<float>(p.in0), in<float>(p.in1),
                                static_cast<float*>(p.out), n, stream);
    case 11:
      return hardact::transform(hardact::HardSigmoidGate{}, in<float>(p.in0),
                                hardact::per_channel(in<float>(p.v0), kBatch * kChannels, kPlane),
                                static_cast<float*>(p.out), n, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace COMPARE_SIDE
