// Autograd kernels of the fused operators (fused_ops.cu), as autograd.cpp does for the
// activations: no input requiring grad costs a redispatch below autograd and nothing else;
// otherwise a Node computes the gradients with ATen's operators (so they are differentiable
// again, and parameter gradients are ATen's reductions), in float (double for float64), from the
// saved inputs:
//   scale_shift_activation: z = x * scale + shift, g = act'(z) * grad; dx = g * scale,
//                           dscale = sum(g * x), dshift = sum(g), summed over every dim but 1
//   residual_activation:    g = act'(x + residual) * grad; dx = dresidual = g
//   scale_shift_residual_activation: as scale_shift_activation with z = x * scale + shift + residual,
//                           and dresidual = g
//   scale_shift_activation_mean: as scale_shift_activation with grad = grad_y + grad_mean[n, c] / (H * W)
//                           (either may be undefined)
//   hardsigmoid_gate:       dx = grad * hardsigmoid(gate), dgate = hardsigmoid'(gate) * sum(grad * x)
//   bias_activation_product: s = x + bias, v = other + other_bias; dx = act'(s) * (grad * v),
//                           dbias = sum(dx), dother = grad * act(s), dother_bias = sum(dother)
// Forward-mode AD raises, as for the other hardact operators.

#include "launch/fused_activation.h"
#include "ops/dispatch_helpers.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DispatchKeySet.h>
#include <torch/csrc/autograd/VariableTypeUtils.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/library.h>

#include <array>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace {

using at::Tensor;
using c10::DispatchKeySet;
using hardact_torch::FusedActivation;
using hardact_torch::find_op;
using hardact_torch::kBelowAutograd;
using hardact_torch::new_node;
using torch::autograd::SavedVariable;
using torch::autograd::variable_list;

at::ScalarType compute_type(const Tensor& x) { return x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat; }

/// act'(z) * grad, with ATen's backward operators.
Tensor activation_backward(FusedActivation activation, double min_val, double max_val, const Tensor& grad,
                           const Tensor& z) {
  switch (activation) {
    case FusedActivation::identity: return grad;
    case FusedActivation::hardsigmoid: return at::hardsigmoid_backward(grad, z);
    case FusedActivation::hardswish: return at::hardswish_backward(grad, z);
    case FusedActivation::relu6: return at::hardtanh_backward(grad, z, 0.0, 6.0);
    case FusedActivation::hardtanh: return at::hardtanh_backward(grad, z, min_val, max_val);
    case FusedActivation::relu: return at::threshold_backward(grad, z, 0.0);
    case FusedActivation::silu: return at::silu_backward(grad, z);
  }
  return grad;
}

/// `p` (one value per channel of x, or per (n, c)) shaped to broadcast against x.
Tensor broadcast_view(const Tensor& p, const Tensor& x, bool per_plane) {
  std::vector<c10::SymInt> shape(static_cast<std::size_t>(x.dim()), c10::SymInt(1));
  shape[1] = x.sym_size(1);
  if (per_plane) shape[0] = x.sym_size(0);
  return p.reshape_symint(shape);  // symbolic sizes, so that the backward traces with dynamic shapes
}

/// Every dimension of x but the channel one (and the batch one too for per-plane values).
std::vector<int64_t> reduced_dims(const Tensor& x, bool per_plane) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d == 1 || (per_plane && d == 0)) continue;
    dims.push_back(d);
  }
  return dims;
}

void refuse_forward_ad(const char* op_name, const Tensor& t) {
  TORCH_CHECK(!t.defined() || !torch::autograd::isFwGradDefined(t), "hardact::", op_name,
              ": forward-mode AD (dual tensors) is not supported");
}

/// The gradients of act(z), z = x * scale + shift + residual (scale, shift and residual each
/// undefined when absent), for `node`'s outputs x, scale, shift and, with a residual, residual:
/// g = act'(z) * grad in float (double for float64), z rounded step by step as the kernel rounds it;
/// dx = g * scale, dscale = sum(g * x), dshift = sum(g) over every dim but 1, dresidual = g.
variable_list scale_shift_gradients(const torch::autograd::Node& node, FusedActivation activation, double min_val,
                                    double max_val, const Tensor& grad, const Tensor& x, const Tensor& scale,
                                    const Tensor& shift, const Tensor& residual) {
  variable_list grad_inputs(residual.defined() ? 4 : 3);
  const at::ScalarType type = compute_type(x);
  const Tensor xc = x.to(type);
  const Tensor scale_view = scale.defined() ? broadcast_view(scale, x, false).to(type) : Tensor();
  Tensor z = scale.defined() ? xc * scale_view : xc;
  if (shift.defined()) z = z + broadcast_view(shift, x, false).to(type);
  if (residual.defined()) z = z + residual.to(type);
  const Tensor g = activation_backward(activation, min_val, max_val, grad.to(type), z);
  const std::vector<int64_t> dims = reduced_dims(x, false);
  if (node.should_compute_output(0)) grad_inputs[0] = (scale.defined() ? g * scale_view : g).to(x.scalar_type());
  if (scale.defined() && node.should_compute_output(1)) {
    grad_inputs[1] = (g * xc).sum(dims).reshape(scale.sizes()).to(scale.scalar_type());
  }
  if (shift.defined() && node.should_compute_output(2)) {
    grad_inputs[2] = g.sum(dims).reshape(shift.sizes()).to(shift.scalar_type());
  }
  if (residual.defined() && node.should_compute_output(3)) grad_inputs[3] = g.to(residual.scalar_type());
  return grad_inputs;
}

/// The backward of the scale-and-shift family: act(x * scale + shift), with a residual added
/// (`residual` form), or with the mean of its output per (n, c) as a second output (`mean` form).
struct ScaleShiftBackward final : torch::autograd::TraceableFunction {
  enum class Form { plain, residual, mean };

  variable_list apply(variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const Tensor x = saved_x.unpack();
    Tensor grad = grads[0];
    if (form == Form::mean && grads[1].defined()) {
      // The mean's gradient reaches every position of its (n, c) divided by their count, as
      // torch.mean's does; added to y's where both are used.
      const at::ScalarType type = compute_type(x);
      const c10::SymInt planes = x.sym_size(0) * x.sym_size(1);
      const c10::SymInt positions = planes == 0 ? c10::SymInt(1) : x.sym_numel() / planes;
      const Tensor spread = broadcast_view(grads[1].to(type), x, true) / c10::Scalar(positions);
      grad = grad.defined() ? grad.to(type) + spread : spread.expand_symint(x.sym_sizes());
    }
    if (!grad.defined()) return variable_list(form == Form::residual ? 4 : 3);
    return scale_shift_gradients(*this, activation, min_val, max_val, grad, x,
                                 has_scale ? saved_scale.unpack() : Tensor(),
                                 has_shift ? saved_shift.unpack() : Tensor(),
                                 form == Form::residual ? saved_residual.unpack() : Tensor());
  }
  std::string name() const override { return std::string("HardactBackward<") + op_name + ">"; }
  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    saved_x.reset_data();
    saved_scale.reset_data();
    saved_shift.reset_data();
    saved_residual.reset_data();
  }

  Form form = Form::plain;
  const char* op_name = "";
  FusedActivation activation = FusedActivation::identity;
  double min_val = -1.0, max_val = 1.0;
  bool has_scale = false, has_shift = false;
  SavedVariable saved_x, saved_scale, saved_shift, saved_residual;
};

struct ResidualActivationBackward final : torch::autograd::TraceableFunction {
  variable_list apply(variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    variable_list grad_inputs(2);
    if (!grads[0].defined()) return grad_inputs;
    const Tensor x = saved_x.unpack(), residual = saved_residual.unpack();
    const at::ScalarType type = compute_type(x);
    const Tensor g = activation_backward(activation, min_val, max_val, grads[0].to(type), x.to(type) + residual.to(type));
    if (should_compute_output(0)) grad_inputs[0] = g.to(x.scalar_type());
    if (should_compute_output(1)) grad_inputs[1] = g.to(residual.scalar_type());
    return grad_inputs;
  }
  std::string name() const override { return "HardactBackward<residual_activation>"; }
  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    saved_x.reset_data();
    saved_residual.reset_data();
  }

  FusedActivation activation = FusedActivation::identity;
  double min_val = -1.0, max_val = 1.0;
  SavedVariable saved_x, saved_residual;
};

/// hardsigmoid of the gate in the compute type, as the kernel computes it (double: exactly / 6).
Tensor gate_values(const Tensor& gate, at::ScalarType type) {
  if (type == at::kDouble) {  // a tensor divisor: ATen multiplies by 1/scalar
    const Tensor relu6 = (gate.to(type) + 3.0).clamp(0.0, 6.0);
    return relu6 / at::full_like(relu6, 6.0);
  }
  return at::hardsigmoid(gate.to(type));
}

struct HardsigmoidGateBackward final : torch::autograd::TraceableFunction {
  variable_list apply(variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    variable_list grad_inputs(2);
    if (!grads[0].defined()) return grad_inputs;
    const Tensor x = saved_x.unpack(), gate = saved_gate.unpack();
    const at::ScalarType type = compute_type(x);
    const Tensor grad = grads[0].to(type);
    if (should_compute_output(0)) {
      grad_inputs[0] = (grad * broadcast_view(gate_values(gate, type), x, true)).to(x.scalar_type());
    }
    if (should_compute_output(1)) {
      // A 2-D x has one element per (n, c): nothing to sum (an empty dim list would sum them all).
      const std::vector<int64_t> dims = reduced_dims(x, true);
      const Tensor products = grad * x.to(type);
      const Tensor summed = (dims.empty() ? products : products.sum(dims)).reshape(gate.sizes());
      grad_inputs[1] = at::hardsigmoid_backward(summed, gate.to(type)).to(gate.scalar_type());
    }
    return grad_inputs;
  }
  std::string name() const override { return "HardactBackward<hardsigmoid_gate>"; }
  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    saved_x.reset_data();
    saved_gate.reset_data();
  }

  SavedVariable saved_x, saved_gate;
};

/// act(s) with ATen's operators, in s's dtype (hardsigmoid as the kernel computes it: gate_values).
Tensor activation_values(FusedActivation activation, double min_val, double max_val, const Tensor& s) {
  switch (activation) {
    case FusedActivation::identity: return s;
    case FusedActivation::hardsigmoid: return gate_values(s, s.scalar_type());
    case FusedActivation::hardswish: return at::hardswish(s);
    case FusedActivation::relu6: return at::hardtanh(s, 0.0, 6.0);
    case FusedActivation::hardtanh: return at::hardtanh(s, min_val, max_val);
    case FusedActivation::relu: return at::relu(s);
    case FusedActivation::silu: return at::silu(s);
  }
  return s;
}

struct BiasActivationProductBackward final : torch::autograd::TraceableFunction {
  variable_list apply(variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    variable_list grad_inputs(4);
    if (!grads[0].defined()) return grad_inputs;
    const Tensor x = saved_x.unpack(), bias = saved_bias.unpack();
    const Tensor other = saved_other.unpack(), other_bias = saved_other_bias.unpack();
    const at::ScalarType type = compute_type(x);
    const Tensor grad = grads[0].to(type);
    const Tensor s = x.to(type) + broadcast_view(bias, x, false).to(type);
    const std::vector<int64_t> dims = reduced_dims(x, false);
    if (should_compute_output(0) || should_compute_output(1)) {
      const Tensor v = other.to(type) + broadcast_view(other_bias, x, false).to(type);
      const Tensor g = activation_backward(activation, min_val, max_val, grad * v, s);
      if (should_compute_output(0)) grad_inputs[0] = g.to(x.scalar_type());
      if (should_compute_output(1)) grad_inputs[1] = g.sum(dims).reshape(bias.sizes()).to(bias.scalar_type());
    }
    if (should_compute_output(2) || should_compute_output(3)) {
      const Tensor h = grad * activation_values(activation, min_val, max_val, s);
      if (should_compute_output(2)) grad_inputs[2] = h.to(other.scalar_type());
      if (should_compute_output(3)) {
        grad_inputs[3] = h.sum(dims).reshape(other_bias.sizes()).to(other_bias.scalar_type());
      }
    }
    return grad_inputs;
  }
  std::string name() const override { return "HardactBackward<bias_activation_product>"; }
  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    saved_x.reset_data();
    saved_bias.reset_data();
    saved_other.reset_data();
    saved_other_bias.reset_data();
  }

  FusedActivation activation = FusedActivation::identity;
  double min_val = -1.0, max_val = 1.0;
  SavedVariable saved_x, saved_bias, saved_other, saved_other_bias;
};

using ScaleShiftSignature = Tensor(const Tensor&, const c10::optional<Tensor>&, const c10::optional<Tensor>&,
                                   c10::string_view, double, double);
using ResidualSignature = Tensor(const Tensor&, const Tensor&, c10::string_view, double, double);
using ScaleShiftResidualSignature = Tensor(const Tensor&, const c10::optional<Tensor>&, const c10::optional<Tensor>&,
                                           const Tensor&, c10::string_view, double, double);
using ScaleShiftMeanSignature = std::tuple<Tensor, Tensor>(const Tensor&, const c10::optional<Tensor>&,
                                                           const c10::optional<Tensor>&, c10::string_view, double,
                                                           double);
using GateSignature = Tensor(const Tensor&, const Tensor&);
using ProductSignature = Tensor(const Tensor&, const Tensor&, const Tensor&, const Tensor&, c10::string_view, double,
                                double);

/// The scale-and-shift family's autograd kernel: refuses dual tensors, runs the op below autograd
/// (`run`), then records a ScaleShiftBackward node on `outputs(result)` when an input requires grad.
/// `residual` is undefined but for the residual form.
template <class Result, class Run, class Outputs>
Result scale_shift_family_autograd(ScaleShiftBackward::Form form, const char* op_name, const Tensor& x,
                                   const c10::optional<Tensor>& scale, const c10::optional<Tensor>& shift,
                                   const Tensor& residual, c10::string_view activation, double min_val,
                                   double max_val, Run&& run, Outputs&& outputs) {
  const Tensor scale_tensor = scale.has_value() ? *scale : Tensor();
  const Tensor shift_tensor = shift.has_value() ? *shift : Tensor();
  for (const Tensor* t : {&x, &scale_tensor, &shift_tensor, &residual}) refuse_forward_ad(op_name, *t);
  const bool requires_grad = torch::autograd::compute_requires_grad(x, scale_tensor, shift_tensor, residual);
  Result result;
  {
    const at::AutoDispatchBelowADInplaceOrView guard;
    result = run();
  }
  if (requires_grad) {
    auto node = new_node(new ScaleShiftBackward());
    node->form = form;
    node->op_name = op_name;
    node->activation = hardact_torch::parse_activation(op_name, activation);
    node->min_val = min_val;
    node->max_val = max_val;
    node->has_scale = scale_tensor.defined();
    node->has_shift = shift_tensor.defined();
    node->set_next_edges(form == ScaleShiftBackward::Form::residual
                             ? torch::autograd::collect_next_edges(x, scale_tensor, shift_tensor, residual)
                             : torch::autograd::collect_next_edges(x, scale_tensor, shift_tensor));
    node->saved_x = SavedVariable(x, false);
    if (node->has_scale) node->saved_scale = SavedVariable(scale_tensor, false);
    if (node->has_shift) node->saved_shift = SavedVariable(shift_tensor, false);
    if (residual.defined()) node->saved_residual = SavedVariable(residual, false);
    for (Tensor& output : outputs(result)) torch::autograd::set_history(output, node);  // in output order
  }
  return result;
}

Tensor scale_shift_activation_autograd(DispatchKeySet keys, const Tensor& x, const c10::optional<Tensor>& scale,
                                       const c10::optional<Tensor>& shift, c10::string_view activation, double min_val,
                                       double max_val) {
  static const auto op = find_op<ScaleShiftSignature>("hardact::scale_shift_activation");
  return scale_shift_family_autograd<Tensor>(
      ScaleShiftBackward::Form::plain, "scale_shift_activation", x, scale, shift, Tensor(), activation, min_val,
      max_val, [&] { return op.redispatch(keys & kBelowAutograd, x, scale, shift, activation, min_val, max_val); },
      [](Tensor& out) { return std::array<std::reference_wrapper<Tensor>, 1>{out}; });
}

Tensor residual_activation_autograd(DispatchKeySet keys, const Tensor& x, const Tensor& residual,
                                    c10::string_view activation, double min_val, double max_val) {
  static const auto op = find_op<ResidualSignature>("hardact::residual_activation");
  refuse_forward_ad("residual_activation", x);
  refuse_forward_ad("residual_activation", residual);
  const bool requires_grad = torch::autograd::compute_requires_grad(x, residual);
  Tensor out;
  {
    const at::AutoDispatchBelowADInplaceOrView guard;
    out = op.redispatch(keys & kBelowAutograd, x, residual, activation, min_val, max_val);
  }
  if (requires_grad) {
    auto node = new_node(new ResidualActivationBackward());
    node->activation = hardact_torch::parse_activation("residual_activation", activation);
    node->min_val = min_val;
    node->max_val = max_val;
    node->set_next_edges(torch::autograd::collect_next_edges(x, residual));
    node->saved_x = SavedVariable(x, false);
    node->saved_residual = SavedVariable(residual, false);
    torch::autograd::set_history(out, node);
  }
  return out;
}

Tensor scale_shift_residual_activation_autograd(DispatchKeySet keys, const Tensor& x,
                                                const c10::optional<Tensor>& scale, const c10::optional<Tensor>& shift,
                                                const Tensor& residual, c10::string_view activation, double min_val,
                                                double max_val) {
  static const auto op = find_op<ScaleShiftResidualSignature>("hardact::scale_shift_residual_activation");
  return scale_shift_family_autograd<Tensor>(
      ScaleShiftBackward::Form::residual, "scale_shift_residual_activation", x, scale, shift, residual, activation,
      min_val, max_val,
      [&] { return op.redispatch(keys & kBelowAutograd, x, scale, shift, residual, activation, min_val, max_val); },
      [](Tensor& out) { return std::array<std::reference_wrapper<Tensor>, 1>{out}; });
}

std::tuple<Tensor, Tensor> scale_shift_activation_mean_autograd(DispatchKeySet keys, const Tensor& x,
                                                                const c10::optional<Tensor>& scale,
                                                                const c10::optional<Tensor>& shift,
                                                                c10::string_view activation, double min_val,
                                                                double max_val) {
  static const auto op = find_op<ScaleShiftMeanSignature>("hardact::scale_shift_activation_mean");
  return scale_shift_family_autograd<std::tuple<Tensor, Tensor>>(
      ScaleShiftBackward::Form::mean, "scale_shift_activation_mean", x, scale, shift, Tensor(), activation, min_val,
      max_val, [&] { return op.redispatch(keys & kBelowAutograd, x, scale, shift, activation, min_val, max_val); },
      [](std::tuple<Tensor, Tensor>& out) {  // y, then the mean: the node's outputs 0 and 1
        return std::array<std::reference_wrapper<Tensor>, 2>{std::get<0>(out), std::get<1>(out)};
      });
}

Tensor hardsigmoid_gate_autograd(DispatchKeySet keys, const Tensor& x, const Tensor& gate) {
  static const auto op = find_op<GateSignature>("hardact::hardsigmoid_gate");
  refuse_forward_ad("hardsigmoid_gate", x);
  refuse_forward_ad("hardsigmoid_gate", gate);
  const bool requires_grad = torch::autograd::compute_requires_grad(x, gate);
  Tensor out;
  {
    const at::AutoDispatchBelowADInplaceOrView guard;
    out = op.redispatch(keys & kBelowAutograd, x, gate);
  }
  if (requires_grad) {
    auto node = new_node(new HardsigmoidGateBackward());
    node->set_next_edges(torch::autograd::collect_next_edges(x, gate));
    node->saved_x = SavedVariable(x, false);
    node->saved_gate = SavedVariable(gate, false);
    torch::autograd::set_history(out, node);
  }
  return out;
}

Tensor bias_activation_product_autograd(DispatchKeySet keys, const Tensor& x, const Tensor& bias, const Tensor& other,
                                        const Tensor& other_bias, c10::string_view activation, double min_val,
                                        double max_val) {
  constexpr const char* kName = "bias_activation_product";
  static const auto op = find_op<ProductSignature>("hardact::bias_activation_product");
  for (const Tensor* t : {&x, &bias, &other, &other_bias}) refuse_forward_ad(kName, *t);
  const bool requires_grad = torch::autograd::compute_requires_grad(x, bias, other, other_bias);
  Tensor out;
  {
    const at::AutoDispatchBelowADInplaceOrView guard;
    out = op.redispatch(keys & kBelowAutograd, x, bias, other, other_bias, activation, min_val, max_val);
  }
  if (requires_grad) {
    auto node = new_node(new BiasActivationProductBackward());
    node->activation = hardact_torch::parse_activation(kName, activation);
    node->min_val = min_val;
    node->max_val = max_val;
    node->set_next_edges(torch::autograd::collect_next_edges(x, bias, other, other_bias));
    node->saved_x = SavedVariable(x, false);
    node->saved_bias = SavedVariable(bias, false);
    node->saved_other = SavedVariable(other, false);
    node->saved_other_bias = SavedVariable(other_bias, false);
    torch::autograd::set_history(out, node);
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(hardact, Autograd, m) {
  m.impl("scale_shift_activation", TORCH_FN(scale_shift_activation_autograd));
  m.impl("residual_activation", TORCH_FN(residual_activation_autograd));
  m.impl("scale_shift_residual_activation", TORCH_FN(scale_shift_residual_activation_autograd));
  m.impl("scale_shift_activation_mean", TORCH_FN(scale_shift_activation_mean_autograd));
  m.impl("hardsigmoid_gate", TORCH_FN(hardsigmoid_gate_autograd));
  m.impl("bias_activation_product", TORCH_FN(bias_activation_product_autograd));
}
