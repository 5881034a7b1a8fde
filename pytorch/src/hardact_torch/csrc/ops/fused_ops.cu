// The fused operators: an activation applied in the same pass as the work around it, through
// hardact's broadcast operands (operand.cuh) and fused policies (policy/fused.cuh).
//
//   scale_shift_activation(x, scale, shift, activation)  act(x * scale[c] + shift[c]), c = x's dim 1:
//       a folded inference BatchNorm (both), a bias (shift only) or the activation alone (neither)
//   residual_activation(x, residual, activation)         act(x + residual)
//   scale_shift_residual_activation(x, scale, shift, residual, activation)
//                                                        act(x * scale[c] + shift[c] + residual): a folded
//       BatchNorm and the residual add after it (MobileNet's projection and shortcut)
//   scale_shift_activation_mean(x, scale, shift, activation)
//                                                        (y, mean): scale_shift_activation's y and its mean
//       over every dim after 1, one per (n, c), written in the same pass (a squeeze-excitation's squeeze)
//   hardsigmoid_gate(x, gate)                            x * hardsigmoid(gate[n, c]) (squeeze-excitation)
//   _gated_activation(x, gate, activation)               act(x * gate[n, c]), the gate through its own
//       function first (gated_activation.h; a Python entry point of fuse_blocks, not an operator)
//   bias_activation_product(x, bias, other, other_bias, activation)
//                                                        act(x + bias[c]) * (other + other_bias[c]): two
//       convolutions' outputs with their biases, gated (StarNet's star product)
//
// Arithmetic: in float (double for float64), rounded once to x's dtype; x * scale and + shift are
// rounded separately (never an FMA), so in float32 the results are bit for bit PyTorch's
// `act(x * scale.view(C, 1, 1) + shift.view(C, 1, 1))`, `act(x + residual)` and
// `x * F.hardsigmoid(gate)`; in float16/bfloat16 they round once where eager rounds after each op.
// scale and shift are used in float32 (float64 for float64 x), whatever their dtype (float16/bfloat16
// ones of x's dtype are read as they are and widened in the kernel: the same values).
//
// Layout: the per-channel value of element i of a non-overlapping, dense tensor is
// value[(i / stride(1)) % C] in memory order, whatever the order of its dimensions (NCHW,
// channels-last, a row-major [M, C] matrix): one broadcast operand covers them all. Outputs take
// at::empty_like(x)'s layout, as PyTorch's pointwise ops and the fake kernels do; a non-dense x is
// first copied into that layout. The per-(n, c) gate is per_channel over N * C for NCHW x and
// per_sample_channel (C values per sample) for channels-last x; other layouts go through ATen. The
// per-(n, c) means follow the same rule: one sum per run of H * W elements of NCHW y, per sample and
// channel of channels-last y, through ATen's mean otherwise.

#include "launch/fused_activation.h"
#include "launch/fused_launch.h"
#include "launch/tensor_launch.cuh"
#include "ops/gated_activation.h"

#include <hardact/hardact.cuh>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cmath>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using namespace hardact_torch;

void check_fused_input(const char* op_name, const at::Tensor& x) {
  TORCH_CHECK_VALUE(x.is_cuda(), "hardact::", op_name, ": expected a CUDA tensor, got one on ", x.device().str());
  with_element_type(op_name, x.scalar_type(), [](auto) { return cudaSuccess; });  // dtype check only
  TORCH_CHECK_VALUE(x.dim() >= 2, "hardact::", op_name, ": x needs a channel dimension (dim 1); got shape ",
                    shape_string(x.sizes()));
}

/// The dtype the kernel reads the per-channel parameters in: x's, for float16/bfloat16 x whose given
/// parameters all have x's dtype (a half-precision layer's bias: widened to float exactly inside
/// the kernel, where a conversion to float32 was one more kernel launch per call), else float32
/// (float64 for float64 x). Either way the arithmetic is float's (double's) with the same values.
at::ScalarType parameter_type(const at::Tensor& x, const c10::optional<at::Tensor>& scale,
                              const c10::optional<at::Tensor>& shift) {
  const at::ScalarType type = x.scalar_type();
  const bool narrow = type == at::kHalf || type == at::kBFloat16;
  if (narrow && shift.has_value() && shift->scalar_type() == type &&
      (!scale.has_value() || scale->scalar_type() == type)) {
    return type;
  }
  return type == at::kDouble ? at::kDouble : at::kFloat;
}

/// A per-channel parameter as the kernel reads it: C values, contiguous, of `type`
/// (parameter_type), on x's device.
at::Tensor channel_parameter(const char* op_name, const char* what, const at::Tensor& p, const at::Tensor& x,
                             int64_t count, at::ScalarType type) {
  TORCH_CHECK_VALUE(p.device() == x.device(), "hardact::", op_name, ": ", what, " is on ", p.device().str(),
                    ", x on ", x.device().str());
  TORCH_CHECK_VALUE(p.numel() == count, "hardact::", op_name, ": ", what, " has ", std::to_string(p.numel()),
                    " elements, expected ", std::to_string(count));
  // Already what the kernel reads (BatchNormActivation's folded buffers, a layer's bias): used as it
  // is, with no reshape or to(), which are dispatcher calls even when they change nothing.
  if (p.scalar_type() == type && p.is_contiguous()) return p;
  return p.reshape({count}).to(type).contiguous();
}

/// The kernel's pointer to a parameter; nullptr for one not given (undefined).
template <class Param>
const Param* parameter_pointer(const at::Tensor& p) {
  return p.defined() ? data_of<Param>(p) : nullptr;
}

/// The per-channel parameters of a scale-and-shift op as its kernel reads them (channel_parameter);
/// undefined where not given.
struct ChannelParameters {
  at::ScalarType type;
  at::Tensor scale;
  at::Tensor shift;
};

ChannelParameters channel_parameters(const char* op_name, const at::Tensor& x, const c10::optional<at::Tensor>& scale,
                                     const c10::optional<at::Tensor>& shift) {
  TORCH_CHECK_VALUE(!scale.has_value() || shift.has_value(), "hardact::", op_name,
                    ": a scale needs a shift (pass zeros for x * scale alone)");
  const int64_t channels = x.size(1);
  const at::ScalarType type = parameter_type(x, scale, shift);
  return {type, scale.has_value() ? channel_parameter(op_name, "scale", *scale, x, channels, type) : at::Tensor(),
          shift.has_value() ? channel_parameter(op_name, "shift", *shift, x, channels, type) : at::Tensor()};
}

/// Calls f(Tag<T>{}, Tag<Param>{}) with the element type T of x and the type Param its parameters
/// are read in (parameter_type: T itself for 16-bit parameters of x's dtype, else float or double).
template <class F>
cudaError_t with_parameter_types(const char* op_name, const at::Tensor& x, at::ScalarType param_type, F&& f) {
  return with_element_type(op_name, x.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (sizeof(T) == 2) {
      if (param_type == x.scalar_type()) return f(tag, Tag<T>{});
    }
    return f(tag, Tag<std::conditional_t<std::is_same_v<T, double>, double, float>>{});
  });
}

/// Runs launch(Tag<T>{}, scale, shift) with x's element type T and the scale and shift pointers of
/// the type the kernel reads them in (with_parameter_types; nullptr where not given), and raises
/// the launch's error.
template <class Launch>
void launch_with_parameters(const char* op_name, const at::Tensor& x, const ChannelParameters& params,
                            Launch&& launch) {
  check_launch(op_name, with_parameter_types(op_name, x, params.type, [&](auto tag, auto param_tag) {
                 using Param = typename decltype(param_tag)::type;
                 return launch(tag, parameter_pointer<Param>(params.scale), parameter_pointer<Param>(params.shift));
               }));
}

/// The fused op's activation, hardtanh's bounds checked.
FusedActivation checked_activation(const char* op_name, c10::string_view name, double min_val, double max_val) {
  const FusedActivation activation = parse_activation(op_name, name);
  if (activation == FusedActivation::hardtanh) check_bounds(op_name, min_val, max_val);
  return activation;
}

/// Channels-last-like x: dense, channels innermost (stride 1) and samples outermost, so element i
/// of its memory has channel i % C and sample i / (numel / N). False where N or C is 0. With
/// any_lone_sample_stride, one sample's stride(0), which places nothing, may be any value.
bool channels_last_like(const at::Tensor& x, bool any_lone_sample_stride = false) {
  return x.dim() >= 3 && x.size(0) > 0 && x.size(1) > 0 && x.is_non_overlapping_and_dense() && x.stride(1) == 1 &&
         ((any_lone_sample_stride && x.size(0) == 1) || x.stride(0) == x.numel() / x.size(0));
}

at::Tensor scale_shift_activation(const at::Tensor& x, const c10::optional<at::Tensor>& scale,
                                  const c10::optional<at::Tensor>& shift, c10::string_view activation_name,
                                  double min_val, double max_val) {
  constexpr const char* kName = "scale_shift_activation";
  check_fused_input(kName, x);
  const FusedActivation activation = checked_activation(kName, activation_name, min_val, max_val);
  const ChannelParameters params = channel_parameters(kName, x, scale, shift);
  const c10::cuda::CUDAGuard device_guard(x.device());
  at::Tensor out = at::empty_like(x);  // the layout rule of PyTorch's pointwise ops, and of the fake kernel
  const std::size_t n = static_cast<std::size_t>(x.numel());
  if (n == 0) return out;
  const at::Tensor input = in_layout_of(x, out);  // x itself unless x is not dense
  const int64_t channels = x.size(1);
  const std::size_t inner = channels > 1 ? static_cast<std::size_t>(input.stride(1)) : 1;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(x.device().index());
  launch_with_parameters(kName, x, params, [&](auto tag, auto scale_values, auto shift_values) {
    using T = typename decltype(tag)::type;
    return launch_scale_shift_activation(activation, min_val, max_val, data_of<T>(input), scale_values, shift_values,
                                         mutable_data_of<T>(out), n, static_cast<std::size_t>(channels), inner,
                                         stream);
  });
  return out;
}

at::Tensor residual_activation(const at::Tensor& x, const at::Tensor& residual, c10::string_view activation_name,
                               double min_val, double max_val) {
  constexpr const char* kName = "residual_activation";
  TORCH_CHECK_VALUE(x.is_cuda(), "hardact::", kName, ": expected a CUDA tensor, got one on ", x.device().str());
  with_element_type(kName, x.scalar_type(), [](auto) { return cudaSuccess; });  // dtype check only
  check_same(kName, x, residual, "residual");
  const FusedActivation activation = checked_activation(kName, activation_name, min_val, max_val);
  const c10::cuda::CUDAGuard device_guard(x.device());
  at::Tensor out = at::empty_like(x);  // the layout rule of PyTorch's pointwise ops, and of the fake kernel
  const std::size_t n = static_cast<std::size_t>(x.numel());
  if (n == 0) return out;
  const at::Tensor input = in_layout_of(x, out);
  const at::Tensor added = in_layout_of(residual, out);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(x.device().index());
  check_launch(kName, with_element_type(kName, x.scalar_type(), [&](auto tag) {
                 using T = typename decltype(tag)::type;
                 return launch_residual_activation<T>(activation, min_val, max_val, data_of<T>(input),
                                                      data_of<T>(added), mutable_data_of<T>(out), n, stream);
               }));
  return out;
}

at::Tensor scale_shift_residual_activation(const at::Tensor& x, const c10::optional<at::Tensor>& scale,
                                           const c10::optional<at::Tensor>& shift, const at::Tensor& residual,
                                           c10::string_view activation_name, double min_val, double max_val) {
  constexpr const char* kName = "scale_shift_residual_activation";
  check_fused_input(kName, x);
  check_same(kName, x, residual, "residual");
  const FusedActivation activation = checked_activation(kName, activation_name, min_val, max_val);
  TORCH_CHECK_VALUE(scale.has_value() == shift.has_value(), "hardact::", kName,
                    ": scale and shift come together or not at all (for x + shift + residual pass a scale of ones)");
  if (!scale.has_value()) return residual_activation(x, residual, activation_name, min_val, max_val);
  const ChannelParameters params = channel_parameters(kName, x, scale, shift);
  const c10::cuda::CUDAGuard device_guard(x.device());
  at::Tensor out = at::empty_like(x);  // the layout rule of PyTorch's pointwise ops, and of the fake kernel
  const std::size_t n = static_cast<std::size_t>(x.numel());
  if (n == 0) return out;
  const at::Tensor input = in_layout_of(x, out);
  const at::Tensor added = in_layout_of(residual, out);
  const int64_t channels = x.size(1);
  const std::size_t inner = channels > 1 ? static_cast<std::size_t>(input.stride(1)) : 1;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(x.device().index());
  launch_with_parameters(kName, x, params, [&](auto tag, auto scale_values, auto shift_values) {
    using T = typename decltype(tag)::type;
    return launch_scale_shift_residual_activation(activation, min_val, max_val, data_of<T>(input), scale_values,
                                                  shift_values, data_of<T>(added), mutable_data_of<T>(out), n,
                                                  static_cast<std::size_t>(channels), inner, stream);
  });
  return out;
}

at::Tensor bias_activation_product(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& other,
                                   const at::Tensor& other_bias, c10::string_view activation_name, double min_val,
                                   double max_val) {
  constexpr const char* kName = "bias_activation_product";
  check_fused_input(kName, x);
  check_same(kName, x, other, "other");
  const FusedActivation activation = checked_activation(kName, activation_name, min_val, max_val);
  const int64_t channels = x.size(1);
  const at::ScalarType type = parameter_type(x, bias, other_bias);
  const ChannelParameters params{type, channel_parameter(kName, "bias", bias, x, channels, type),
                                 channel_parameter(kName, "other_bias", other_bias, x, channels, type)};
  const c10::cuda::CUDAGuard device_guard(x.device());
  at::Tensor out = at::empty_like(x);  // the layout rule of PyTorch's pointwise ops, and of the fake kernel
  const std::size_t n = static_cast<std::size_t>(x.numel());
  if (n == 0) return out;
  const at::Tensor input = in_layout_of(x, out);
  const at::Tensor multiplied = in_layout_of(other, out);
  const std::size_t inner = channels > 1 ? static_cast<std::size_t>(input.stride(1)) : 1;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(x.device().index());
  launch_with_parameters(kName, x, params, [&](auto tag, auto bias_values, auto other_bias_values) {
    using T = typename decltype(tag)::type;
    return launch_bias_activation_product(activation, min_val, max_val, data_of<T>(input), bias_values,
                                          data_of<T>(multiplied), other_bias_values, mutable_data_of<T>(out), n,
                                          static_cast<std::size_t>(channels), inner, stream);
  });
  return out;
}

/// Device memory from PyTorch's caching allocator for a launch's partial sums (TempAllocator): a
/// byte tensor kept until the launch is enqueued; the allocator's stream order makes its reuse safe.
struct TempTensor {
  at::TensorOptions options;
  at::Tensor storage;

  static void* allocate(std::size_t bytes, void* context) {
    TempTensor& temp = *static_cast<TempTensor*>(context);
    temp.storage = at::empty({static_cast<int64_t>(bytes)}, temp.options);
    return temp.storage.mutable_data_ptr();
  }
};

std::tuple<at::Tensor, at::Tensor> scale_shift_activation_mean(const at::Tensor& x,
                                                               const c10::optional<at::Tensor>& scale,
                                                               const c10::optional<at::Tensor>& shift,
                                                               c10::string_view activation_name, double min_val,
                                                               double max_val) {
  constexpr const char* kName = "scale_shift_activation_mean";
  check_fused_input(kName, x);
  TORCH_CHECK_VALUE(x.dim() >= 3, "hardact::", kName, ": x needs dimensions after the channel one to average over; got "
                    "shape ", shape_string(x.sizes()));
  const FusedActivation activation = checked_activation(kName, activation_name, min_val, max_val);
  const bool nchw = x.is_contiguous();
  if (x.numel() == 0 || (!nchw && !channels_last_like(x))) {
    // Other layouts, and an empty x (whose mean over no position is NaN, as torch.mean's), through
    // ATen: y by scale_shift_activation, its mean summed in float (double for float64), rounded once.
    at::Tensor y = scale_shift_activation(x, scale, shift, activation_name, min_val, max_val);
    std::vector<int64_t> dims;
    for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
    const at::ScalarType sum_type = x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
    at::Tensor mean = at::mean(y, at::IntArrayRef(dims), /*keepdim=*/false, sum_type).to(x.scalar_type()).contiguous();
    return {std::move(y), std::move(mean)};
  }
  const ChannelParameters params = channel_parameters(kName, x, scale, shift);
  const c10::cuda::CUDAGuard device_guard(x.device());
  at::Tensor out = at::empty_like(x);  // x's strides: x is dense here
  const int64_t samples = x.size(0), channels = x.size(1);
  at::Tensor mean = at::empty({samples, channels}, x.options());
  const std::size_t positions = static_cast<std::size_t>(x.numel() / (samples * channels));
  TempTensor temp{x.options().dtype(at::kByte), at::Tensor()};
  const TempAllocator allocator{&TempTensor::allocate, &temp};
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(x.device().index());
  launch_with_parameters(kName, x, params, [&](auto tag, auto scale_values, auto shift_values) {
    using T = typename decltype(tag)::type;
    return launch_scale_shift_activation_mean(activation, min_val, max_val, data_of<T>(x), scale_values, shift_values,
                                              mutable_data_of<T>(out), mutable_data_of<T>(mean), nchw,
                                              static_cast<std::size_t>(samples), static_cast<std::size_t>(channels),
                                              positions, allocator, stream);
  });
  return {std::move(out), std::move(mean)};
}

/// Checks that `gate` holds one value per (n, c) of x, on x's device and of x's dtype; returns N * C.
int64_t check_gate(const char* op_name, const at::Tensor& x, const at::Tensor& gate) {
  const int64_t planes = x.size(0) * x.size(1);
  TORCH_CHECK_VALUE(gate.device() == x.device(), "hardact::", op_name, ": gate is on ", gate.device().str(), ", x on ",
                    x.device().str());
  TORCH_CHECK_TYPE(gate.scalar_type() == x.scalar_type(), "hardact::", op_name, ": gate has dtype ",
                   gate.scalar_type(), ", x has ", x.scalar_type());
  TORCH_CHECK_VALUE(gate.numel() == planes && gate.dim() >= 2 && gate.size(0) == x.size(0) && gate.size(1) == x.size(1),
                    "hardact::", op_name, ": gate must hold one value per (n, c) of x, shape (N, C) or (N, C, 1, ...); ",
                    "got ", shape_string(gate.sizes()), " for x ", shape_string(x.sizes()));
  return planes;
}

/// How a per-(n, c) gate meets x in one pass: per_channel over the N * C planes of NCHW-contiguous
/// x, per_sample_channel over channels-last-like x (C values a sample); the gate's values in order.
struct GateLayout {
  bool nchw;
  std::size_t planes, channels, positions;  // N * C, C, H * W
  at::Tensor values;
};

/// A new tensor of x's layout written by launch(tag, layout, out, n, stream) on the current stream,
/// x being NCHW-contiguous or channels-last-like; empty x launches nothing.
template <typename Launch>
at::Tensor launch_with_gate(const char* op_name, const at::Tensor& x, const at::Tensor& gate, int64_t planes,
                            Launch&& launch) {
  at::Tensor out = at::empty_like(x);
  const std::size_t n = static_cast<std::size_t>(x.numel());
  if (n == 0) return out;
  const GateLayout layout{x.is_contiguous(), static_cast<std::size_t>(planes), static_cast<std::size_t>(x.size(1)),
                          n / static_cast<std::size_t>(planes),
                          gate.is_contiguous() ? gate : gate.reshape({planes}).contiguous()};
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(x.device().index());
  check_launch(op_name, with_element_type(op_name, x.scalar_type(),
                                          [&](auto tag) { return launch(tag, layout, out, n, stream); }));
  return out;
}

at::Tensor hardsigmoid_gate(const at::Tensor& x, const at::Tensor& gate) {
  constexpr const char* kName = "hardsigmoid_gate";
  check_fused_input(kName, x);
  const int64_t planes = check_gate(kName, x, gate);
  const c10::cuda::CUDAGuard device_guard(x.device());
  // One value per (n, c): a broadcast operand where x is NCHW-contiguous (each plane a run of H * W
  // elements: per_channel over N * C) or channels-last-like (dense, channels innermost, samples
  // outermost: per_sample_channel, C values per sample of C * H * W elements). Other layouts go
  // through ATen with the same arithmetic (in float, double for float64; rounded once).
  // GhostNet's attention product, viewed back to 4-D, gives one sample stride(0) == C.
  const bool nchw = x.is_contiguous();
  const bool channels_last = !nchw && channels_last_like(x, /*any_lone_sample_stride=*/true);
  if (!nchw && !channels_last) {
    std::vector<int64_t> gate_shape(static_cast<std::size_t>(x.dim()), 1);
    gate_shape[0] = x.size(0);
    gate_shape[1] = x.size(1);
    at::Tensor out = at::empty_like(x);  // the layout rule of PyTorch's pointwise ops
    if (x.scalar_type() == at::kDouble) {  // a tensor divisor: ATen multiplies by 1/scalar
      const at::Tensor relu6 = (gate.reshape(gate_shape) + 3.0).clamp(0.0, 6.0);
      return at::mul_out(out, x, relu6 / at::full_like(relu6, 6.0));
    }
    // A float gate makes float the multiplication's compute type; writing into x's dtype rounds
    // once, in the same pass (a float copy of x and a conversion back were two more passes).
    const at::Tensor scale = at::hardsigmoid(gate.reshape(gate_shape).to(at::kFloat));
    return at::mul_out(out, x, scale);
  }
  return launch_with_gate(kName, x, gate, planes, [&](auto tag, const GateLayout& g, at::Tensor& out, std::size_t n,
                                                      cudaStream_t stream) {
    using T = typename decltype(tag)::type;
    return launch_hardsigmoid_gate<T>(data_of<T>(x), data_of<T>(g.values), g.nchw, g.planes, g.channels, g.positions,
                                      mutable_data_of<T>(out), n, stream);
  });
}

}  // namespace

at::Tensor hardact_torch::gated_activation(const at::Tensor& x, const at::Tensor& gate, c10::string_view activation_name,
                                           double min_val, double max_val) {
  constexpr const char* kName = "_gated_activation";
  check_fused_input(kName, x);
  const FusedActivation activation = parse_activation(kName, activation_name);
  if (activation == FusedActivation::hardtanh) check_bounds(kName, min_val, max_val);
  const int64_t planes = check_gate(kName, x, gate);
  // One value per (n, c), as hardsigmoid_gate reads it: per_channel over N * C runs of NCHW x,
  // per_sample_channel over channels-last-like x; the block's convolutions give no other layout.
  TORCH_CHECK_VALUE(x.is_contiguous() || channels_last_like(x), "hardact::", kName,
                    ": x must be NCHW-contiguous or channels-last");
  const c10::cuda::CUDAGuard device_guard(x.device());
  return launch_with_gate(kName, x, gate, planes, [&](auto tag, const GateLayout& g, at::Tensor& out, std::size_t n,
                                                      cudaStream_t stream) {
    using T = typename decltype(tag)::type;
    return launch_gated_activation<T>(activation, min_val, max_val, data_of<T>(x), data_of<T>(g.values), g.nchw,
                                      g.planes, g.channels, g.positions, mutable_data_of<T>(out), n, stream);
  });
}

TORCH_LIBRARY_FRAGMENT(hardact, m) {
  m.def(
      "scale_shift_activation(Tensor x, Tensor? scale, Tensor? shift, str activation=\"identity\", "
      "float min_val=-1., float max_val=1.) -> Tensor");
  m.def(
      "residual_activation(Tensor x, Tensor residual, str activation=\"identity\", float min_val=-1., "
      "float max_val=1.) -> Tensor");
  m.def(
      "scale_shift_residual_activation(Tensor x, Tensor? scale, Tensor? shift, Tensor residual, "
      "str activation=\"identity\", float min_val=-1., float max_val=1.) -> Tensor");
  m.def(
      "scale_shift_activation_mean(Tensor x, Tensor? scale, Tensor? shift, str activation=\"identity\", "
      "float min_val=-1., float max_val=1.) -> (Tensor, Tensor)");
  m.def("hardsigmoid_gate(Tensor x, Tensor gate) -> Tensor");
  m.def(
      "bias_activation_product(Tensor x, Tensor bias, Tensor other, Tensor other_bias, "
      "str activation=\"identity\", float min_val=-1., float max_val=1.) -> Tensor");
}

TORCH_LIBRARY_IMPL(hardact, CUDA, m) {
  m.impl("scale_shift_activation", &scale_shift_activation);
  m.impl("residual_activation", &residual_activation);
  m.impl("scale_shift_residual_activation", &scale_shift_residual_activation);
  m.impl("scale_shift_activation_mean", &scale_shift_activation_mean);
  m.impl("hardsigmoid_gate", &hardsigmoid_gate);
  m.impl("bias_activation_product", &bias_activation_product);
}
