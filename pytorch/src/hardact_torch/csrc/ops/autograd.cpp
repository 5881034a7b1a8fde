// Autograd kernels of the hardact operators, written as PyTorch's generated VariableType code is:
// when no input requires grad they only step below autograd (no graph bookkeeping, no Python);
// otherwise they record a Node whose backward calls hardact's backward ops through the dispatcher,
// so gradients are differentiable again (double backward) and torch.compile can trace them.
//
// In place (hardsigmoid_, hardtanh_, hardswish_, relu6_) is differentiable as in PyTorch: leaves
// requiring grad are refused with PyTorch's message, views get PyTorch's view handling
// (check_inplace, rebase_history). What a Node keeps for the gradient:
// - hardtanh_ and relu6_: the output, when the bounds are exact in the tensor's dtype. Then
//   y <= min_val exactly when x <= min_val (and likewise at max_val, and for NaN), so the gradient
//   is the same bits at no memory cost. PyTorch keeps a copy of the input here.
// - hardsigmoid_ and hardswish_ (and hardtanh_ with bounds a 16-bit dtype rounds): a copy of the
//   input, as PyTorch does. The output cannot stand in: hardsigmoid(2.9999998f) rounds to 1.0f
//   although its gradient is grad / 6, and hardswish is not monotonic.
// The out= forms are not differentiable, as in PyTorch: they raise if an input requires grad.

#include "ops/dispatch_helpers.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/util/Half.h>
#include <c10/util/BFloat16.h>
#include <torch/csrc/autograd/VariableTypeUtils.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/library.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace {

using at::Tensor;
using c10::DispatchKeySet;
using hardact_torch::find_op;
using hardact_torch::kBelowAutograd;
using hardact_torch::new_node;
using torch::autograd::SavedVariable;
using torch::autograd::variable_list;

enum class Activation { hardsigmoid, hardtanh, hardswish, relu6 };

/// hardtanh's bounds (relu6: 0 and 6; unused by the others).
struct Bounds {
  double min_val = 0.0;
  double max_val = 6.0;
};

const char* op_name(Activation activation) {
  switch (activation) {
    case Activation::hardsigmoid: return "hardsigmoid";
    case Activation::hardtanh: return "hardtanh";
    case Activation::hardswish: return "hardswish";
    case Activation::relu6: return "relu6";
  }
  return "?";
}

using UnaryOp = c10::TypedOperatorHandle<Tensor(const Tensor&)>;
using BoundedOp = c10::TypedOperatorHandle<Tensor(const Tensor&, double, double)>;
using InplaceOp = c10::TypedOperatorHandle<void(const Tensor&)>;
using BoundedInplaceOp = c10::TypedOperatorHandle<void(const Tensor&, double, double)>;
using OutOp = c10::TypedOperatorHandle<void(const Tensor&, const Tensor&)>;
using BoundedOutOp = c10::TypedOperatorHandle<void(const Tensor&, double, double, const Tensor&)>;
using BackwardOp = c10::TypedOperatorHandle<Tensor(const Tensor&, const Tensor&)>;
using BoundedBackwardOp = c10::TypedOperatorHandle<Tensor(const Tensor&, const Tensor&, double, double)>;

/// Operator handles, looked up once (after TORCH_LIBRARY has run: first use is from a kernel).
struct Handles {
  UnaryOp hardsigmoid = find_op<Tensor(const Tensor&)>("hardact::hardsigmoid");
  UnaryOp hardswish = find_op<Tensor(const Tensor&)>("hardact::hardswish");
  UnaryOp relu6 = find_op<Tensor(const Tensor&)>("hardact::relu6");
  BoundedOp hardtanh = find_op<Tensor(const Tensor&, double, double)>("hardact::hardtanh");
  InplaceOp hardsigmoid_ = find_op<void(const Tensor&)>("hardact::hardsigmoid_");
  InplaceOp hardswish_ = find_op<void(const Tensor&)>("hardact::hardswish_");
  InplaceOp relu6_ = find_op<void(const Tensor&)>("hardact::relu6_");
  BoundedInplaceOp hardtanh_ = find_op<void(const Tensor&, double, double)>("hardact::hardtanh_");
  OutOp hardsigmoid_out = find_op<void(const Tensor&, const Tensor&)>("hardact::hardsigmoid", "out");
  OutOp hardswish_out = find_op<void(const Tensor&, const Tensor&)>("hardact::hardswish", "out");
  OutOp relu6_out = find_op<void(const Tensor&, const Tensor&)>("hardact::relu6", "out");
  BoundedOutOp hardtanh_out = find_op<void(const Tensor&, double, double, const Tensor&)>("hardact::hardtanh", "out");
  BackwardOp hardsigmoid_backward = find_op<Tensor(const Tensor&, const Tensor&)>("hardact::hardsigmoid_backward");
  BackwardOp hardswish_backward = find_op<Tensor(const Tensor&, const Tensor&)>("hardact::hardswish_backward");
  BackwardOp relu6_backward = find_op<Tensor(const Tensor&, const Tensor&)>("hardact::relu6_backward");
  BoundedBackwardOp hardtanh_backward =
      find_op<Tensor(const Tensor&, const Tensor&, double, double)>("hardact::hardtanh_backward");
};

const Handles& handles() {
  static const Handles instance;
  return instance;
}

/// grad_output -> grad_input of an activation, through the dispatcher (differentiable again).
Tensor activation_backward(Activation activation, const Bounds& bounds, const Tensor& grad, const Tensor& x) {
  const Handles& h = handles();
  switch (activation) {
    case Activation::hardsigmoid: return h.hardsigmoid_backward.call(grad, x);
    case Activation::hardtanh: return h.hardtanh_backward.call(grad, x, bounds.min_val, bounds.max_val);
    case Activation::hardswish: return h.hardswish_backward.call(grad, x);
    case Activation::relu6: return h.relu6_backward.call(grad, x);
  }
  return Tensor();
}

void refuse_forward_ad(Activation activation, const Tensor& t) {
  TORCH_CHECK(!torch::autograd::isFwGradDefined(t), "hardact::", op_name(activation),
              ": forward-mode AD (dual tensors) is not supported; use torch.nn.functional.", op_name(activation));
}

// ---- Nodes ---------------------------------------------------------------------------------------

/// Backward of an activation: grad_input = backward_op(grad, saved), saved being x or, for the
/// in-place forms where it determines the gradient exactly, the output.
struct ActivationBackward final : torch::autograd::TraceableFunction {
  ActivationBackward(Activation activation, Bounds bounds) : activation(activation), bounds(bounds) {}

  variable_list apply(variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    variable_list grad_inputs(1);
    if (grads[0].defined() && should_compute_output(0)) {
      grad_inputs[0] = activation_backward(activation, bounds, grads[0], saved.unpack(shared_from_this()));
    }
    return grad_inputs;
  }

  std::string name() const override { return std::string("HardactBackward<") + op_name(activation) + ">"; }

  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    saved.reset_data();
  }

  const Activation activation;
  const Bounds bounds;
  SavedVariable saved;
};

/// Backward of a backward op (double backward), with PyTorch's formulas: in grad_output the same
/// backward op; in x zero, except hardswish's grad * grad_output / 3 on (-3, 3). PyTorch has no
/// formula for hardsigmoid_backward; these are its exact derivatives.
struct ActivationBackwardBackward final : torch::autograd::TraceableFunction {
  ActivationBackwardBackward(Activation activation, Bounds bounds) : activation(activation), bounds(bounds) {}

  variable_list apply(variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    variable_list grad_inputs(2);
    const Tensor& grad = grads[0];
    if (!grad.defined()) return grad_inputs;
    const Tensor x = saved_x.unpack();
    if (should_compute_output(0)) grad_inputs[0] = activation_backward(activation, bounds, grad, x);
    if (should_compute_output(1)) {
      if (activation == Activation::hardswish) {
        const Tensor grad_output = saved_grad_output.unpack();
        grad_inputs[1] = at::where(at::logical_and(x > -3.0, x < 3.0), grad * grad_output / 3.0,
                                   at::zeros({}, x.options()));
      } else {
        grad_inputs[1] = at::zeros_like(grad);
      }
    }
    return grad_inputs;
  }

  std::string name() const override {
    return std::string("HardactBackwardBackward<") + op_name(activation) + ">";
  }

  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    saved_grad_output.reset_data();
    saved_x.reset_data();
  }

  const Activation activation;
  const Bounds bounds;
  SavedVariable saved_grad_output;
  SavedVariable saved_x;
};

// ---- the three kinds of kernel -------------------------------------------------------------------

/// y = op(x). `below` runs the op under autograd (below ADInplaceOrView, as VariableType does).
template <class Below>
Tensor differentiable(Activation activation, Bounds bounds, const Tensor& x, Below&& below) {
  refuse_forward_ad(activation, x);
  const bool requires_grad = torch::autograd::compute_requires_grad(x);
  Tensor out;
  {
    const at::AutoDispatchBelowADInplaceOrView guard;
    out = below();
  }
  if (requires_grad) {
    auto node = new_node(new ActivationBackward(activation, bounds));
    node->set_next_edges(torch::autograd::collect_next_edges(x));
    node->saved = SavedVariable(x, false);
    torch::autograd::set_history(out, node);
  }
  return out;
}

/// True when an in-place op's output determines its gradient bit for bit (see the file comment).
bool output_determines_gradient(Activation activation, const Bounds& bounds, at::ScalarType dtype) {
  if (activation == Activation::relu6) return true;  // 0 and 6 are exact in every dtype
  if (activation != Activation::hardtanh) return false;
  // The bounds are compared in float for float, half and bfloat16 (double for double); a 16-bit
  // output holds a bound exactly only if rounding it to that type is the identity.
  const auto exact = [dtype](double bound) {
    const float compute = static_cast<float>(bound);
    switch (dtype) {
      case at::kHalf: return static_cast<float>(c10::Half(compute)) == compute;
      case at::kBFloat16: return static_cast<float>(c10::BFloat16(compute)) == compute;
      default: return true;
    }
  };
  return exact(bounds.min_val) && exact(bounds.max_val);
}

/// op(self) in place, differentiable as PyTorch's in-place activations are.
template <class Below>
void differentiable_inplace(Activation activation, Bounds bounds, const Tensor& self, Below&& below) {
  refuse_forward_ad(activation, self);
  const bool requires_grad = torch::autograd::compute_requires_grad(self);
  torch::autograd::check_inplace(self, requires_grad);
  std::shared_ptr<ActivationBackward> node;
  bool save_output = false;
  if (requires_grad) {
    node = new_node(new ActivationBackward(activation, bounds));
    node->set_next_edges(torch::autograd::collect_next_edges(self));
    save_output = output_determines_gradient(activation, bounds, self.scalar_type());
    if (!save_output) node->saved = SavedVariable(self.clone(), false);  // recorded: differentiable in x
  }
  {
    const at::AutoDispatchBelowADInplaceOrView guard;
    below();
  }
  torch::autograd::increment_version(self);  // ADInplaceOrView's job, which custom ops do themselves
  if (node) {
    torch::autograd::rebase_history(self, node);
    if (save_output) node->saved = SavedVariable(self, true, self.is_view());
  }
}

/// op(x, out=out): not differentiable, as PyTorch's out= forms; PyTorch's wording.
template <class Below>
void not_differentiable_out(Activation activation, const Tensor& x, const Tensor& out, Below&& below) {
  TORCH_CHECK(!torch::autograd::compute_requires_grad(x, out), "hardact::", op_name(activation),
              ".out: functions with out=... arguments don't support automatic differentiation, but one of "
              "the arguments requires grad.");
  {
    const at::AutoDispatchBelowADInplaceOrView guard;
    below();
  }
  torch::autograd::increment_version(out);
}

/// grad_input = backward_op(grad_output, x), differentiable in both.
template <class Below>
Tensor differentiable_backward(Activation activation, Bounds bounds, const Tensor& grad_output, const Tensor& x,
                               Below&& below) {
  refuse_forward_ad(activation, grad_output);
  refuse_forward_ad(activation, x);
  const bool requires_grad = torch::autograd::compute_requires_grad(grad_output, x);
  Tensor out;
  {
    const at::AutoDispatchBelowADInplaceOrView guard;
    out = below();
  }
  if (requires_grad) {
    auto node = new_node(new ActivationBackwardBackward(activation, bounds));
    node->set_next_edges(torch::autograd::collect_next_edges(grad_output, x));
    node->saved_grad_output = SavedVariable(grad_output, false);
    node->saved_x = SavedVariable(x, false);
    torch::autograd::set_history(out, node);
  }
  return out;
}

// ---- the Autograd kernels, one per op (the key set lets them redispatch below autograd) -----------

template <Activation A, UnaryOp Handles::*Op>
Tensor unary_autograd(DispatchKeySet keys, const Tensor& x) {
  return differentiable(A, Bounds{}, x, [&] { return (handles().*Op).redispatch(keys & kBelowAutograd, x); });
}

Tensor hardtanh_autograd(DispatchKeySet keys, const Tensor& x, double min_val, double max_val) {
  return differentiable(Activation::hardtanh, Bounds{min_val, max_val}, x,
                        [&] { return handles().hardtanh.redispatch(keys & kBelowAutograd, x, min_val, max_val); });
}

template <Activation A, InplaceOp Handles::*Op>
void inplace_autograd(DispatchKeySet keys, const Tensor& x) {
  differentiable_inplace(A, Bounds{}, x, [&] { (handles().*Op).redispatch(keys & kBelowAutograd, x); });
}

void hardtanh_inplace_autograd(DispatchKeySet keys, const Tensor& x, double min_val, double max_val) {
  differentiable_inplace(Activation::hardtanh, Bounds{min_val, max_val}, x,
                         [&] { handles().hardtanh_.redispatch(keys & kBelowAutograd, x, min_val, max_val); });
}

template <Activation A, OutOp Handles::*Op>
void out_autograd(DispatchKeySet keys, const Tensor& x, const Tensor& out) {
  not_differentiable_out(A, x, out, [&] { (handles().*Op).redispatch(keys & kBelowAutograd, x, out); });
}

void hardtanh_out_autograd(DispatchKeySet keys, const Tensor& x, double min_val, double max_val, const Tensor& out) {
  not_differentiable_out(Activation::hardtanh, x, out, [&] {
    handles().hardtanh_out.redispatch(keys & kBelowAutograd, x, min_val, max_val, out);
  });
}

template <Activation A, BackwardOp Handles::*Op>
Tensor backward_autograd(DispatchKeySet keys, const Tensor& grad_output, const Tensor& x) {
  return differentiable_backward(A, Bounds{}, grad_output, x,
                                 [&] { return (handles().*Op).redispatch(keys & kBelowAutograd, grad_output, x); });
}

Tensor hardtanh_backward_autograd(DispatchKeySet keys, const Tensor& grad_output, const Tensor& x, double min_val,
                                  double max_val) {
  return differentiable_backward(Activation::hardtanh, Bounds{min_val, max_val}, grad_output, x, [&] {
    return handles().hardtanh_backward.redispatch(keys & kBelowAutograd, grad_output, x, min_val, max_val);
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(hardact, Autograd, m) {
  using A = Activation;
  m.impl("hardsigmoid", TORCH_FN((unary_autograd<A::hardsigmoid, &Handles::hardsigmoid>)));
  m.impl("hardswish", TORCH_FN((unary_autograd<A::hardswish, &Handles::hardswish>)));
  m.impl("relu6", TORCH_FN((unary_autograd<A::relu6, &Handles::relu6>)));
  m.impl("hardtanh", TORCH_FN(hardtanh_autograd));

  m.impl("hardsigmoid_", TORCH_FN((inplace_autograd<A::hardsigmoid, &Handles::hardsigmoid_>)));
  m.impl("hardswish_", TORCH_FN((inplace_autograd<A::hardswish, &Handles::hardswish_>)));
  m.impl("relu6_", TORCH_FN((inplace_autograd<A::relu6, &Handles::relu6_>)));
  m.impl("hardtanh_", TORCH_FN(hardtanh_inplace_autograd));

  m.impl("hardsigmoid.out", TORCH_FN((out_autograd<A::hardsigmoid, &Handles::hardsigmoid_out>)));
  m.impl("hardswish.out", TORCH_FN((out_autograd<A::hardswish, &Handles::hardswish_out>)));
  m.impl("relu6.out", TORCH_FN((out_autograd<A::relu6, &Handles::relu6_out>)));
  m.impl("hardtanh.out", TORCH_FN(hardtanh_out_autograd));

  m.impl("hardsigmoid_backward", TORCH_FN((backward_autograd<A::hardsigmoid, &Handles::hardsigmoid_backward>)));
  m.impl("hardswish_backward", TORCH_FN((backward_autograd<A::hardswish, &Handles::hardswish_backward>)));
  m.impl("relu6_backward", TORCH_FN((backward_autograd<A::relu6, &Handles::relu6_backward>)));
  m.impl("hardtanh_backward", TORCH_FN(hardtanh_backward_autograd));
}
