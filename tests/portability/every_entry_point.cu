// One consumer translation unit that instantiates every public entry point of hardact: the
// transform overloads (one input, mixed types, two to four inputs with broadcast operands), the
// hardsigmoid/hardtanh shorthands, every policy, chain and fused epilogue, channel_sum, concatenate,
// and the conversions, on the host and inside a user kernel.
// scripts/check-strict-build compiles it (-c only, never run) with a consumer's strict flags
// (-Wall -Wextra -Wshadow -Wconversion -Wsign-conversion, warnings as errors) for every
// architecture, C++ standard and CCCL version it checks. A new public name belongs here.
// With -DHARDACT_PORTABILITY_FP8=0 it leaves out hardact/fp8.cuh and every fp8 use: the build of a
// consumer that does not use fp8, which must stay clean whatever the toolkit's fp8 header does.
#ifndef HARDACT_PORTABILITY_FP8
#define HARDACT_PORTABILITY_FP8 1
#endif
#include <hardact/hardact.cuh>
#if HARDACT_PORTABILITY_FP8
#include <hardact/fp8.cuh>
#endif

#include <cuda_runtime_api.h>

#include <cstddef>
#include <type_traits>

namespace {

using hardact::Affine;
using hardact::HardSigmoid;
using hardact::HardSigmoidAffine;
using hardact::HardSigmoidBackward;
using hardact::HardSwish;
using hardact::HardSwishBackward;
using hardact::HardTanh;
using hardact::HardTanhBackward;
using hardact::Offset;
using hardact::ReLU6;
using hardact::Scale;

static_assert(HARDACT_VERSION == HARDACT_VERSION_MAJOR * 10000 + HARDACT_VERSION_MINOR * 100 + HARDACT_VERSION_PATCH);
static_assert(std::is_same_v<hardact::compute_t<__half>, float>);
static_assert(std::is_same_v<hardact::compute_type<__nv_bfloat16>::type, float>);
#if HARDACT_PORTABILITY_FP8
static_assert(std::is_same_v<hardact::compute_t<__nv_fp8_e4m3>, float>);
#endif
static_assert(std::is_same_v<hardact::compute_t<double>, double>);

// Lets the first failure through, so every call below is made (and instantiated) in order.
cudaError_t first_error(cudaError_t so_far, cudaError_t next) { return so_far != cudaSuccess ? so_far : next; }

// Every one-input policy, launched on elements of type T (in and out of the same type).
template <class T>
cudaError_t every_unary_policy(T* in, T* out, std::size_t n, cudaStream_t stream) {
  cudaError_t status = cudaSuccess;
  status = first_error(status, hardact::transform(HardSigmoid{}, in, out, n, stream));
  status = first_error(status, hardact::transform(HardSigmoid::affine(0.25, 0.5), in, out, n, stream));
  status = first_error(status, hardact::transform(HardSigmoid::onnx(), in, out, n, stream));
  status = first_error(status, hardact::transform(HardSigmoidAffine{0.2, 0.5}, in, out, n, stream));
  status = first_error(status, hardact::transform(HardTanh{}, in, out, n, stream));
  status = first_error(status, hardact::transform(HardTanh{0.0, 6.0}, in, out, n, stream));
  status = first_error(status, hardact::transform(ReLU6{}, in, out, n, stream));
  status = first_error(status, hardact::transform(HardSwish{}, in, out, n, stream));
  status = first_error(status, hardact::transform(Scale{2.0}, in, out, n, stream));
  status = first_error(status, hardact::transform(Offset{-1.0}, in, out, n, stream));
  status = first_error(status, hardact::transform(Affine{2.0, 1.0}, in, out, n, stream));
  status = first_error(status, hardact::transform(hardact::chain(Scale{2.0}, HardTanh{}, ReLU6{}), in, out, n, stream));
  status = first_error(status, hardact::transform(hardact::chain(hardact::chain(Offset{3.0}), HardSigmoid{}), in, out,
                                                  n, stream));
  status = first_error(status, hardact::hardsigmoid(in, out, n, stream));
  status = first_error(status, hardact::hardsigmoid(in, out, n));
  status = first_error(status, hardact::hardtanh(in, out, n));
  status = first_error(status, hardact::hardtanh(in, out, n, -2.0, 2.0, stream));
  // In place.
  status = first_error(status, hardact::hardsigmoid(out, out, n, stream));
  return status;
}

// Every gradient policy (and a two-input chain) through the two-input launcher: dx = op(grad, x).
template <class TGrad, class TX, class TOut>
cudaError_t every_backward_policy(const TGrad* grad, const TX* x, TOut* dx, std::size_t n, cudaStream_t stream) {
  cudaError_t status = cudaSuccess;
  status = first_error(status, hardact::transform(HardSigmoidBackward{}, grad, x, dx, n, stream));
  status = first_error(status, hardact::transform(HardTanhBackward{}, grad, x, dx, n, stream));
  status = first_error(status, hardact::transform(HardTanhBackward{0.0, 6.0}, grad, x, dx, n, stream));
  status = first_error(status, hardact::transform(HardSwishBackward{}, grad, x, dx, n, stream));
  status = first_error(status,
                       hardact::transform(hardact::chain(HardSigmoidBackward{}, Scale{0.5}), grad, x, dx, n, stream));
  return status;
}

// The policies and conversions inside a user's own kernel, as the policies header promises.
__global__ void user_kernel(const __nv_bfloat16* in, float* out, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = hardact::to_compute(in[i]);
  const auto fused = hardact::chain(Affine{0.5, 0.25}, HardSwish{}, HardTanh{-0.5, 0.5});
  float y = fused(x) + HardSigmoid{}(x) + ReLU6{}(x) + HardSigmoidBackward{}(1.0f, x) +
            HardTanhBackward{}(1.0f, x) + HardSwishBackward{}(1.0f, x);
#if HARDACT_PORTABILITY_FP8
  y += hardact::convert<float>(hardact::convert<__nv_fp8_e4m3>(y));
#endif
  y += hardact::convert<float>(hardact::convert<__half>(static_cast<double>(y)));
  out[i] = hardact::from_compute<float>(y) + hardact::convert<float>(hardact::from_compute<__nv_bfloat16>(y));
}

}  // namespace

// Device buffers of every element type, n elements each, all provided by the caller.
struct ConsumerBuffers {
  float* f32;
  float* f32_b;
  double* f64;
  double* f64_b;
  __half* f16;
  __half* f16_b;
  __nv_bfloat16* bf16;
  __nv_bfloat16* bf16_b;
#if HARDACT_PORTABILITY_FP8
  __nv_fp8_e4m3* e4m3;
  __nv_fp8_e5m2* e5m2;
#endif
};

// The same policies on the host: the reference computations of a consumer's own tests.
double hardact_host_reference(double x) {
  const float f = static_cast<float>(x);
  const __half h = hardact::convert<__half>(f);
  double sum = HardSigmoid{}(x) + static_cast<double>(HardSigmoid{}(f)) + hardact::convert<double>(HardTanh{}(h));
#if HARDACT_PORTABILITY_FP8
  const __nv_fp8_e5m2 e5 = hardact::convert<__nv_fp8_e5m2>(x);
  sum += hardact::convert<double>(hardact::chain(Scale{2.0}, ReLU6{})(e5));
#endif
  sum += static_cast<double>(HardSigmoidBackward{}(1.0f, f) + HardTanhBackward{}(1.0f, f) + HardSwishBackward{}(1.0f, f));
  sum += HardSwish{}(x) + HardSigmoid::onnx()(x);
  sum += hardact::bias_activation(HardSwish{})(x, 1.0) + hardact::scale_shift_activation(ReLU6{})(x, 2.0, 1.0) +
         hardact::HardSigmoidGate{}(x, 0.5) + hardact::BiasActivationBackward<HardSwishBackward>{}(1.0, x, 0.5) +
         hardact::scale_shift_residual_activation(ReLU6{})(x, 2.0, 1.0, 0.5) +
         hardact::bias_activation_product(ReLU6{})(x, 1.0, 2.0, 0.5);
  return (hardact::chain(Offset{1.0}, HardTanh{}).is_valid() && HardTanh{}.is_valid()) ? sum : 0.0;
}

// Broadcast operands, the fused epilogue policies and their gradients, outputs with sums, and
// channel_sum (whose first call, with no temporary storage, only sizes it).
cudaError_t every_fused_entry_point(const ConsumerBuffers& b, std::size_t n, cudaStream_t stream) {
  const auto bias = hardact::per_channel(static_cast<const float*>(b.f32_b), 64);
  const hardact::Broadcast<float> per_nchw_channel{b.f32_b, 49, 64};
  const auto gate = hardact::per_channel(static_cast<const __half*>(b.f16_b), 8, 49);
  const auto channels_last_gate = hardact::per_sample_channel(static_cast<const __nv_bfloat16*>(b.bf16_b), 8, 49);
  cudaError_t status = cudaSuccess;
  status = first_error(status, hardact::transform(hardact::bias_activation(HardSwish{}), b.f32, bias, b.f32, n, stream));
  status = first_error(status, hardact::transform(hardact::scale_shift_activation(HardSigmoid{}), b.bf16,
                                                  per_nchw_channel, per_nchw_channel, b.bf16, n, stream));
  status = first_error(status,
                       hardact::transform(hardact::residual_activation(ReLU6{}), b.f64, b.f64_b, b.f64, n, stream));
  status = first_error(status, hardact::transform(hardact::HardSigmoidGate{}, b.f16, gate, b.f16, n, stream));
  status = first_error(status,
                       hardact::transform(hardact::HardSigmoidGate{}, b.bf16, channels_last_gate, b.bf16, n, stream));
  status = first_error(status, hardact::transform(hardact::scale_shift_activation(HardSwish{}), b.bf16,
                                                  channels_last_gate, channels_last_gate, b.bf16, n, stream));
  status = first_error(status, hardact::transform(hardact::BiasActivationBackward<HardSwishBackward>{}, b.f32, b.f32_b,
                                                  bias, b.f32, n, stream));
  status = first_error(status, hardact::transform(hardact::bias_activation_product(ReLU6{}), b.f32, bias, b.f32_b,
                                                  bias, b.f32, n, stream));
  status = first_error(status, hardact::transform(hardact::ScaleShiftActivationBackward<HardTanhBackward>{}, b.f32,
                                                  b.f32_b, per_nchw_channel, per_nchw_channel, b.f32, n, stream));
  // The residual after a folded BatchNorm; outputs with their sums: a squeeze's mean over
  // channels-last bfloat16, and per-channel sums of NCHW float into double, with partial sums.
  status = first_error(status, hardact::transform(hardact::scale_shift_residual_activation(ReLU6{}), b.f16,
                                                  per_nchw_channel, per_nchw_channel, b.f16_b, b.f16, n, stream));
  status = first_error(status, hardact::transform(hardact::scale_shift_activation(HardSwish{}), b.bf16_b, bias, bias,
                                                  hardact::with_sample_channel_sums(b.bf16, b.f32, 64, 49, 1.0 / 49),
                                                  n, stream));
  auto per_channel_sums = hardact::with_channel_sums(b.f32, b.f64, 64, 49);
  per_channel_sums.temp_storage = b.f64_b;
  per_channel_sums.temp_storage_bytes = hardact::temp_storage_bytes(per_channel_sums, n);
  status = first_error(status, hardact::transform(HardSigmoid{}, static_cast<const float*>(b.f32_b), per_channel_sums,
                                                  n, stream));
  std::size_t temp_bytes = 0;
  status = first_error(status, hardact::channel_sum(nullptr, temp_bytes, b.bf16, n, 64, 49, b.bf16_b, stream));
  return status;
}

// The concatenation of arrays of any trivially copyable type: 16-bit floats, floats on the legacy
// stream, a user's 3-byte pixels (rows of n / 96, n / 3 and n / 8 elements).
struct ConsumerPixel {
  unsigned char rgb[3];
};

cudaError_t every_concatenation(const ConsumerBuffers& b, std::size_t n, cudaStream_t stream) {
  const hardact::ConcatenationInput<__nv_bfloat16> bf16_inputs[] = {{b.bf16_b, 64}, {nullptr, 0}, {b.bf16_b, 32}};
  const hardact::ConcatenationInput<float> f32_inputs[] = {{b.f32_b, 1}, {b.f32_b + 1, 2}};
  const auto* pixels = reinterpret_cast<const ConsumerPixel*>(b.f64_b);
  const hardact::ConcatenationInput<ConsumerPixel> pixel_inputs[] = {{pixels, 5}, {pixels, 3}};
  cudaError_t status = cudaSuccess;
  status = first_error(status, hardact::concatenate(bf16_inputs, 3, n / 96, b.bf16, stream));
  status = first_error(status, hardact::concatenate(f32_inputs, 2, n / 3, b.f32));
  status = first_error(status, hardact::concatenate(pixel_inputs, 2, n / 8, reinterpret_cast<ConsumerPixel*>(b.f64),
                                                    stream));
  return status;
}

// Launches every entry point once on `stream`; returns the first error. Defined with external
// linkage so that nothing above can be discarded as unused.
cudaError_t hardact_every_entry_point(const ConsumerBuffers& b, std::size_t n, cudaStream_t stream) {
  cudaError_t status = cudaSuccess;
  // One input, one type: every policy for every element type hardact documents.
  status = first_error(status, every_unary_policy(b.f32, b.f32_b, n, stream));
  status = first_error(status, every_unary_policy(b.f64, b.f64_b, n, stream));
  status = first_error(status, every_unary_policy(b.f16, b.f16_b, n, stream));
  status = first_error(status, every_unary_policy(b.bf16, b.bf16_b, n, stream));
  // Every explicit vector width.
  status = first_error(status, hardact::transform<1>(HardSigmoid{}, b.f32, b.f32_b, n, stream));
  status = first_error(status, hardact::transform<2>(HardSigmoid{}, b.f32, b.f32_b, n, stream));
  status = first_error(status, hardact::transform<4>(HardSigmoid{}, b.f32, b.f32_b, n, stream));
  status = first_error(status, hardact::transform<2>(HardTanh{}, b.f64, b.f64_b, n, stream));
  status = first_error(status, hardact::transform<8>(HardTanh{}, b.f16, b.f16_b, n, stream));
#if HARDACT_PORTABILITY_FP8
  status = first_error(status, hardact::transform<16>(ReLU6{}, b.e4m3, b.e4m3, n, stream));
  status = first_error(status, hardact::transform(ReLU6{}, b.f32, b.e4m3, n, stream));
  status = first_error(status, hardact::transform(HardSwish{}, b.e5m2, b.f16, n, stream));
#endif
  // Mixed types (fp8 both ways above) and double.
  status = first_error(status, hardact::transform(HardSigmoid{}, b.f32, b.bf16, n, stream));
  status = first_error(status, hardact::transform(HardSigmoid{}, b.bf16, b.f32, n, stream));
  status = first_error(status, hardact::transform(HardTanh{}, b.f16, b.f32, n, stream));
  status = first_error(status, hardact::transform(HardSigmoid{}, b.f64, b.f32, n, stream));
  status = first_error(status, hardact::transform<4>(hardact::chain(Scale{2.0}, HardSigmoid{}), b.bf16, b.f32, n, stream));
  // Two inputs, same and mixed types.
  status = first_error(status, every_backward_policy(b.f32, b.f32_b, b.f32, n, stream));
  status = first_error(status, every_backward_policy(b.f64, b.f64_b, b.f64, n, stream));
  status = first_error(status, every_backward_policy(b.bf16, b.bf16_b, b.bf16, n, stream));
  status = first_error(status, every_backward_policy(b.f16, b.f16_b, b.f16, n, stream));
  status = first_error(status, every_backward_policy(b.bf16, b.f32, b.f32, n, stream));
  // Broadcast operands and fused epilogues.
  status = first_error(status, every_fused_entry_point(b, n, stream));
  // Rows of several arrays side by side.
  status = first_error(status, every_concatenation(b, n, stream));
  // A user kernel that calls the policies itself.
  user_kernel<<<1, 128, 0, stream>>>(b.bf16, b.f32, n);
  return first_error(status, cudaGetLastError());
}
