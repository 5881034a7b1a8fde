// Must NOT compile: fp8 elements through a launcher without hardact/fp8.cuh. The ctest entry
// host_fp8_without_header_diagnostic passes only if the compiler's output names the header.
#include <cuda_fp8.h>

#include <hardact/hardact.cuh>

cudaError_t hardsigmoid_fp8(const __nv_fp8_e4m3* x, __nv_fp8_e4m3* y, std::size_t n) {
  return hardact::transform(hardact::HardSigmoid{}, x, y, n);
}

cudaError_t hardsigmoid_to_fp8(const float* x, __nv_fp8_e5m2* y, std::size_t n) {
  return hardact::transform(hardact::HardSigmoid{}, x, y, n);
}
