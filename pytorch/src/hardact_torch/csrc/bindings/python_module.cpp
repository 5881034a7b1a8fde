// The Python module hardact_torch._C. Importing it runs the operator registrations (ops/ops.cu,
// ops/autograd.cpp, testing/test_hooks.cu, ...); its functions are the eager entry points of
// hardact_torch's functions and modules.
//
// Why not torch.ops.hardact.*: that generic path matches the schema at run time and boxes the
// arguments, several microseconds per call that a launch-bound network pays on every activation.
// These functions do what PyTorch's generated bindings do for F.*: take the tensor straight from
// the Python object, release the GIL, call the operator's dispatcher handle (so autograd, tensor
// subclasses such as DTensor, and dispatch modes such as FakeTensorMode all still apply) and wrap
// the result. __torch_function__ overrides are the Python caller's to handle, as in F.*.

#include "ops/concatenate.h"
#include "ops/depthwise_conv.h"
#include "ops/max_pool.h"
#include "ops/dispatch_helpers.h"
#include "ops/fused_block_forward.h"
#include "ops/gated_activation.h"
#include "ops/linear_activation.h"
#include "ops/pointwise_convolution.h"

#include <ATen/ATen.h>
#include <ATen/PythonTorchFunctionTLS.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

#include <Python.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using at::Tensor;
using hardact_torch::find_op;

/// Releases the GIL for the operator call, as PyTorch's bindings do; restored on every exit.
class GilRelease {
 public:
  GilRelease() : state_(PyEval_SaveThread()) {}
  ~GilRelease() { PyEval_RestoreThread(state_); }
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

 private:
  PyThreadState* state_;
};

/// The tensor argument x: a torch.Tensor (or subclass) on a CUDA device or the meta device (shape
/// tracing, which runs the fake kernels). Anything else raises, naming what to use on other devices:
/// `other_devices` (torch.nn.functional.<name> when null).
const Tensor& tensor_argument(const char* name, PyObject* object, const char* other_devices = nullptr) {
  if (!THPVariable_Check(object)) {
    PyErr_Format(PyExc_TypeError, "hardact.%s: expected a torch.Tensor, got %s", name, Py_TYPE(object)->tp_name);
    throw python_error();
  }
  const Tensor& x = THPVariable_Unpack(object);
  if (!x.is_cuda() && !x.is_meta()) {
    const std::string device = x.device().str();
    const std::string alternative =
        other_devices != nullptr ? std::string(other_devices) : "torch.nn.functional." + std::string(name);
    PyErr_Format(PyExc_ValueError, "hardact.%s: expected a CUDA tensor, got one on %s; for other devices use %s",
                 name, device.c_str(), alternative.c_str());
    throw python_error();
  }
  return x;
}

/// A tensor argument beside x (a parameter, a residual, a gate): its device is checked against x's
/// by the operator, which names both.
const Tensor& other_tensor_argument(const char* name, PyObject* object) {
  if (!THPVariable_Check(object)) {
    PyErr_Format(PyExc_TypeError, "hardact.%s: expected a torch.Tensor, got %s", name, Py_TYPE(object)->tp_name);
    throw python_error();
  }
  return THPVariable_Unpack(object);
}

// What computes each fused operator on other devices: the expression in torch operators, the one
// hardact_torch itself traces under torch.compile.
constexpr char kScaleShiftElsewhere[] =
    "the same expression in torch operators: activation(x * scale.view(1, -1, 1, 1) + shift.view(1, -1, 1, 1)) "
    "for 4-D x, e.g. torch.nn.functional.hardswish(...)";
constexpr char kResidualElsewhere[] =
    "the same expression in torch operators: activation(x + residual), e.g. torch.nn.functional.relu6(x + residual)";
constexpr char kScaleShiftResidualElsewhere[] =
    "the same expression in torch operators: activation(x * scale.view(1, -1, 1, 1) + shift.view(1, -1, 1, 1) + "
    "residual) for 4-D x, e.g. torch.nn.functional.relu6(...)";
constexpr char kScaleShiftMeanElsewhere[] =
    "the same expression in torch operators: y = activation(x * scale.view(1, -1, 1, 1) + shift.view(1, -1, 1, 1)) "
    "for 4-D x, then y.mean((2, 3))";
constexpr char kProductElsewhere[] =
    "the same expression in torch operators: activation(x + bias.view(1, -1, 1, 1)) * (other + "
    "other_bias.view(1, -1, 1, 1)) for 4-D x, e.g. torch.nn.functional.relu6(...) * (...)";
constexpr char kGateElsewhere[] =
    "the same expression in torch operators: x * torch.nn.functional.hardsigmoid(gate.view(N, C, 1, 1))";

double float_argument(PyObject* object) {
  const double value = PyFloat_AsDouble(object);
  if (value == -1.0 && PyErr_Occurred()) throw python_error();
  return value;
}

void expect_arguments(const char* name, Py_ssize_t given, Py_ssize_t expected) {
  if (given != expected) {
    PyErr_Format(PyExc_TypeError, "hardact._C.%s takes %zd arguments, got %zd", name, expected, given);
    throw python_error();
  }
}

// Each operator's handle, looked up on first use (the registrations have run by then).
template <const char* Name>
const c10::TypedOperatorHandle<Tensor(const Tensor&)>& unary_op() {
  static const auto op = find_op<Tensor(const Tensor&)>(Name);
  return op;
}
template <const char* Name>
const c10::TypedOperatorHandle<void(const Tensor&)>& inplace_op() {
  static const auto op = find_op<void(const Tensor&)>(Name);
  return op;
}

constexpr char kHardsigmoid[] = "hardact::hardsigmoid";
constexpr char kHardswish[] = "hardact::hardswish";
constexpr char kRelu6[] = "hardact::relu6";
constexpr char kHardsigmoidInplace[] = "hardact::hardsigmoid_";
constexpr char kHardswishInplace[] = "hardact::hardswish_";
constexpr char kRelu6Inplace[] = "hardact::relu6_";

/// f(x) -> new tensor.
template <const char* Op, const char* Name>
PyObject* unary(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  expect_arguments(Name, nargs, 1);
  const Tensor& x = tensor_argument(Name, args[0]);
  Tensor out;
  {
    const GilRelease no_gil;
    out = unary_op<Op>().call(x);
  }
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}

/// f_(x) -> x, modified in place.
template <const char* Op, const char* Name>
PyObject* inplace(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  expect_arguments(Name, nargs, 1);
  const Tensor& x = tensor_argument(Name, args[0]);
  {
    const GilRelease no_gil;
    inplace_op<Op>().call(x);
  }
  Py_INCREF(args[0]);
  return args[0];
  END_HANDLE_TH_ERRORS
}

/// hardtanh(x, min_val, max_val) -> new tensor.
PyObject* hardtanh(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  expect_arguments("hardtanh", nargs, 3);
  const Tensor& x = tensor_argument("hardtanh", args[0]);
  const double min_val = float_argument(args[1]), max_val = float_argument(args[2]);
  static const auto op = find_op<Tensor(const Tensor&, double, double)>("hardact::hardtanh");
  Tensor out;
  {
    const GilRelease no_gil;
    out = op.call(x, min_val, max_val);
  }
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}

/// hardtanh_(x, min_val, max_val) -> x, modified in place.
PyObject* hardtanh_inplace(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  expect_arguments("hardtanh_", nargs, 3);
  const Tensor& x = tensor_argument("hardtanh", args[0]);
  const double min_val = float_argument(args[1]), max_val = float_argument(args[2]);
  static const auto op = find_op<void(const Tensor&, double, double)>("hardact::hardtanh_");
  {
    const GilRelease no_gil;
    op.call(x, min_val, max_val);
  }
  Py_INCREF(args[0]);
  return args[0];
  END_HANDLE_TH_ERRORS
}

/// A tensor argument that may be None.
c10::optional<Tensor> optional_tensor_argument(const char* name, PyObject* object) {
  if (object == Py_None) return c10::nullopt;
  return other_tensor_argument(name, object);
}

c10::string_view string_argument(PyObject* object) {
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(object, &size);
  if (text == nullptr) throw python_error();
  return c10::string_view(text, static_cast<std::size_t>(size));
}

/// A Python argument after x as the operator's parameter of type `Parameter`.
template <class Parameter>
struct PythonArgument;
template <>
struct PythonArgument<const Tensor&> {
  static Tensor from(const char* name, PyObject* object) { return other_tensor_argument(name, object); }
};
template <>
struct PythonArgument<const c10::optional<Tensor>&> {
  static c10::optional<Tensor> from(const char* name, PyObject* object) {
    return optional_tensor_argument(name, object);
  }
};
template <>
struct PythonArgument<c10::string_view> {
  static c10::string_view from(const char* /*name*/, PyObject* object) { return string_argument(object); }
};
template <>
struct PythonArgument<double> {
  static double from(const char* /*name*/, PyObject* object) { return float_argument(object); }
};

PyObject* wrap_result(Tensor out) { return THPVariable_Wrap(std::move(out)); }

PyObject* wrap_result(std::tuple<Tensor, Tensor> out) {
  PyObject* first = THPVariable_Wrap(std::move(std::get<0>(out)));
  if (first == nullptr) return nullptr;
  PyObject* second = THPVariable_Wrap(std::move(std::get<1>(out)));
  if (second == nullptr) {
    Py_DECREF(first);
    return nullptr;
  }
  PyObject* pair = PyTuple_Pack(2, first, second);  // new references to both; ours are dropped below
  Py_DECREF(first);
  Py_DECREF(second);
  return pair;
}

template <const char* Op, const char* Elsewhere, class Result, class... Rest, std::size_t... I>
PyObject* call_fused(PyObject* const* args, std::index_sequence<I...>) {
  const char* const name = Op + sizeof("hardact::") - 1;
  const Tensor& x = tensor_argument(name, args[0], Elsewhere);
  const std::tuple<std::decay_t<Rest>...> rest{PythonArgument<Rest>::from(name, args[1 + I])...};
  static const auto op = find_op<Result(const Tensor&, Rest...)>(Op);
  Result out;
  {
    const GilRelease no_gil;
    out = op.call(x, std::get<I>(rest)...);
  }
  return wrap_result(std::move(out));
}

/// A fused operator `Op` (hardact::<name>): name(x, rest...) -> Result, its arguments after x of
/// the schema's types `Rest`; a CPU x raises, naming `Elsewhere`.
template <const char* Op, const char* Elsewhere, class Result, class... Rest>
PyObject* fused(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  expect_arguments(Op + sizeof("hardact::") - 1, nargs, static_cast<Py_ssize_t>(1 + sizeof...(Rest)));
  return call_fused<Op, Elsewhere, Result, Rest...>(args, std::index_sequence_for<Rest...>{});
  END_HANDLE_TH_ERRORS
}

using OptionalTensor = const c10::optional<Tensor>&;
constexpr char kScaleShiftOp[] = "hardact::scale_shift_activation";
constexpr char kResidualOp[] = "hardact::residual_activation";
constexpr char kScaleShiftResidualOp[] = "hardact::scale_shift_residual_activation";
constexpr char kScaleShiftMeanOp[] = "hardact::scale_shift_activation_mean";
constexpr char kGateOp[] = "hardact::hardsigmoid_gate";
constexpr char kProductOp[] = "hardact::bias_activation_product";

constexpr char kHardsigmoidName[] = "hardsigmoid";
constexpr char kHardswishName[] = "hardswish";
constexpr char kRelu6Name[] = "relu6";

bool bool_argument(PyObject* object) {
  const int value = PyObject_IsTrue(object);
  if (value < 0) throw python_error();
  return value != 0;
}

/// _linear_activation(x, weight, bias, relu, tf32) -> Tensor: fuse_blocks' float32 excitation
/// products and the tests' check of the 16-bit ones (linear_activation.h); not an operator:
/// inference only, never traced.
PyObject* linear_activation(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  expect_arguments("_linear_activation", nargs, 5);
  const Tensor& x = tensor_argument("_linear_activation", args[0], "torch.nn.functional.linear");
  const Tensor& weight = other_tensor_argument("_linear_activation", args[1]);
  const c10::optional<Tensor> bias = optional_tensor_argument("_linear_activation", args[2]);
  const bool relu = bool_argument(args[3]), tf32 = bool_argument(args[4]);
  Tensor out;
  {
    const GilRelease no_gil;
    out = hardact_torch::linear_activation(x, weight, bias, relu, tf32);
  }
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}

/// _gated_activation(x, gate, activation, min_val, max_val) -> Tensor: fuse_blocks' gate multiply
/// and activation in one pass (gated_activation.h); not an operator: inference only, never traced.
PyObject* gated_activation(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  constexpr const char* name = "_gated_activation";
  expect_arguments(name, nargs, 5);
  const Tensor& x = tensor_argument(name, args[0], "act(x * gate)");
  const Tensor& gate = other_tensor_argument(name, args[1]);
  const c10::string_view activation = string_argument(args[2]);
  const double min_val = float_argument(args[3]), max_val = float_argument(args[4]);
  Tensor out;
  {
    const GilRelease no_gil;
    out = hardact_torch::gated_activation(x, gate, activation, min_val, max_val);
  }
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}

int64_t int_argument(PyObject* object) {
  const long long value = PyLong_AsLongLong(object);
  if (value == -1 && PyErr_Occurred()) throw python_error();
  return static_cast<int64_t>(value);
}

/// _depthwise_conv_scale_shift_activation(x, taps, scale, shift, kernel_size, stride, pad_h, pad_w,
/// activation, min_val, max_val, with_mean, concatenate_input) -> (y, mean or None): fuse_blocks'
/// depthwise stage (depthwise_conv.h); not an operator: inference only, never traced.
PyObject* depthwise_conv_scale_shift_activation(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  constexpr const char* name = "_depthwise_conv_scale_shift_activation";
  expect_arguments(name, nargs, 13);
  const Tensor& x = tensor_argument(name, args[0], "torch.nn.functional.conv2d");
  const Tensor& taps = other_tensor_argument(name, args[1]);
  const Tensor& scale = other_tensor_argument(name, args[2]);
  const Tensor& shift = other_tensor_argument(name, args[3]);
  const int64_t kernel_size = int_argument(args[4]), stride = int_argument(args[5]);
  const int64_t pad_h = int_argument(args[6]), pad_w = int_argument(args[7]);
  const c10::string_view activation = string_argument(args[8]);
  const double min_val = float_argument(args[9]), max_val = float_argument(args[10]);
  const bool with_mean = bool_argument(args[11]), concatenate_input = bool_argument(args[12]);
  std::tuple<Tensor, Tensor> out;
  {
    const GilRelease no_gil;
    out = hardact_torch::depthwise_conv_scale_shift_activation(x, taps, scale, shift, kernel_size, stride, pad_h,
                                                                pad_w, activation, min_val, max_val, with_mean,
                                                                concatenate_input);
  }
  if (!std::get<1>(out).defined()) {
    PyObject* y = THPVariable_Wrap(std::move(std::get<0>(out)));
    if (y == nullptr) return nullptr;
    PyObject* pair = PyTuple_Pack(2, y, Py_None);
    Py_DECREF(y);
    return pair;
  }
  return wrap_result(std::move(out));
  END_HANDLE_TH_ERRORS
}

/// _max_pool2d(x, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, ceil_mode) -> y: the rewrite's
/// channels-last max pooling (max_pool.h); not an operator: inference only, never traced.
PyObject* max_pool2d(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  constexpr const char* name = "_max_pool2d";
  expect_arguments(name, nargs, 8);
  const Tensor& x = tensor_argument(name, args[0], "torch.nn.functional.max_pool2d");
  const int64_t kernel_h = int_argument(args[1]), kernel_w = int_argument(args[2]);
  const int64_t stride_h = int_argument(args[3]), stride_w = int_argument(args[4]);
  const int64_t pad_h = int_argument(args[5]), pad_w = int_argument(args[6]);
  const bool ceil_mode = bool_argument(args[7]);
  Tensor out;
  {
    const GilRelease no_gil;
    out = hardact_torch::max_pool2d_channels_last(x, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, ceil_mode);
  }
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}

/// _concatenate_channels(tensors) -> y: torch.cat(tensors, 1) of channels-last CUDA tensors, the
/// fused blocks' concatenation (concatenate.h); not an operator: inference only, never traced.
PyObject* concatenate_channels(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  constexpr const char* name = "_concatenate_channels";
  expect_arguments(name, nargs, 1);
  PyObject* sequence = args[0];
  if (!PyList_Check(sequence) && !PyTuple_Check(sequence)) {
    PyErr_Format(PyExc_TypeError, "hardact.%s: expected a list or tuple of tensors, got %s", name,
                 Py_TYPE(sequence)->tp_name);
    throw python_error();
  }
  const Py_ssize_t count = PySequence_Fast_GET_SIZE(sequence);
  PyObject** items = PySequence_Fast_ITEMS(sequence);
  std::vector<Tensor> inputs;
  inputs.reserve(static_cast<std::size_t>(count));
  for (Py_ssize_t i = 0; i < count; ++i) inputs.push_back(tensor_argument(name, items[i], "torch.cat(tensors, 1)"));
  Tensor out;
  {
    const GilRelease no_gil;
    out = hardact_torch::concatenate_channels(inputs);
  }
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}

// ---- _fused_inverted_residual_forward: FusedInvertedResidual.forward in one call --------------------
// The arguments are what FusedInvertedResidual._one_call_arguments gathers per call (its comments say
// how): the block's tensors, its settings (a tuple made once per set of modules), the one-kernel
// depthwise filter or None, skip, and the block's depthwise cache, refreshed here where the forward
// made its float32 forms again.

using hardact_torch::BlockConvolution;
using hardact_torch::BlockDepthwiseFilter;
using hardact_torch::BlockNorm;
using hardact_torch::BlockSqueeze;
using hardact_torch::FusedBlock;
using hardact_torch::StarBlock;

constexpr const char* kBlockForward = "_fused_inverted_residual_forward";
constexpr const char* kStarForward = "_fused_star_block_forward";
constexpr const char* kPointwise = "_pointwise_conv2d";
constexpr std::size_t kBlockTensors = 16;  // (weight, bias, scale, shift) of the expansion, the depthwise
                                           // stage, the squeeze's (reduce weight, reduce bias, expand
                                           // weight, expand bias) and the projection

/// Raises TypeError naming the binding (`function`) and what is wrong with its arguments.
[[noreturn]] void block_argument_error(const char* what, const char* function = kBlockForward) {
  PyErr_Format(PyExc_TypeError, "hardact._C.%s: %s", function, what);
  throw python_error();
}

/// A tuple of `size` items, or raises naming `what`.
PyObject* block_tuple(PyObject* object, Py_ssize_t size, const char* what, const char* function = kBlockForward) {
  if (!PyTuple_Check(object) || PyTuple_GET_SIZE(object) != size) block_argument_error(what, function);
  return object;
}

std::array<int64_t, 2> int_pair(PyObject* object, const char* function) {
  block_tuple(object, 2, "a convolution's stride, padding and dilation must be tuples of two ints", function);
  return {int_argument(PyTuple_GET_ITEM(object, 0)), int_argument(PyTuple_GET_ITEM(object, 1))};
}

/// (stride, padding, dilation, groups, pointwise) with the weight and bias.
BlockConvolution block_convolution(PyObject* settings, const c10::optional<Tensor>& weight,
                                   c10::optional<Tensor> bias, const char* function = kBlockForward) {
  block_tuple(settings, 5, "a convolution's settings are (stride, padding, dilation, groups, pointwise)", function);
  if (!weight.has_value()) block_argument_error("a convolution needs its weight", function);
  return {*weight,
          std::move(bias),
          int_pair(PyTuple_GET_ITEM(settings, 0), function),
          int_pair(PyTuple_GET_ITEM(settings, 1), function),
          int_pair(PyTuple_GET_ITEM(settings, 2), function),
          int_argument(PyTuple_GET_ITEM(settings, 3)),
          bool_argument(PyTuple_GET_ITEM(settings, 4))};
}

/// (activation, min_val, max_val) with the scale and shift.
BlockNorm block_norm(PyObject* settings, c10::optional<Tensor> scale, c10::optional<Tensor> shift) {
  block_tuple(settings, 3, "a norm's settings are (activation, min_val, max_val)");
  const c10::string_view activation = string_argument(PyTuple_GET_ITEM(settings, 0));
  return {std::move(scale), std::move(shift), std::string(activation.data(), activation.size()),
          float_argument(PyTuple_GET_ITEM(settings, 1)), float_argument(PyTuple_GET_ITEM(settings, 2))};
}

/// A tensor of the block (None where absent): an exact torch.Tensor or nn.Parameter; anything else
/// (a tensor subclass, whose methods may differ) sets `declined`.
c10::optional<Tensor> block_tensor(PyObject* object, bool& declined, const char* function = kBlockForward) {
  if (object == Py_None) return c10::nullopt;
  if (!THPVariable_Check(object)) block_argument_error("the block's tensors must be tensors or None", function);
  declined = declined || !THPVariable_CheckExact(object);
  return THPVariable_Unpack(object);
}

/// x of a block's one call after checking the argument count; nullptr where x is not an exact
/// torch.Tensor (the Python forward then runs, and raises its own error for what is not a tensor).
const Tensor* block_input(const char* function, PyObject* const* args, Py_ssize_t nargs, Py_ssize_t expected) {
  expect_arguments(function, nargs, expected);
  return THPVariable_CheckExact(args[0]) ? &THPVariable_Unpack(args[0]) : nullptr;
}

/// A block's tensor list: a Python list of exactly N tensors or None, each read with block_tensor.
template <std::size_t N>
std::array<c10::optional<Tensor>, N> block_tensors(PyObject* list, bool& declined, const char* what,
                                                    const char* function) {
  constexpr auto size = static_cast<Py_ssize_t>(N);
  if (!PyList_Check(list) || PyList_GET_SIZE(list) != size) block_argument_error(what, function);
  std::array<c10::optional<Tensor>, N> tensors;
  for (Py_ssize_t i = 0; i < size; ++i) {
    tensors[static_cast<std::size_t>(i)] = block_tensor(PyList_GET_ITEM(list, i), declined, function);
  }
  return tensors;
}

/// Whether a block's one call leaves x to the Python forward: a tensor subclass among its tensors
/// (`declined`), x off CUDA, autocast on CUDA (the convolutions would run in its dtype), a
/// __torch_function__ mode, or a gradient wanted (grad mode on and x or any tensor requiring grad).
template <std::size_t N>
bool one_call_declines(const Tensor& x, const std::array<c10::optional<Tensor>, N>& tensors, bool declined) {
  if (declined || !x.is_cuda() || at::autocast::is_autocast_enabled(at::kCUDA) ||
      at::impl::torch_function_mode_enabled()) {
    return true;
  }
  if (!c10::GradMode::is_enabled()) return false;
  bool wanted = x.requires_grad();
  for (const auto& tensor : tensors) wanted = wanted || (tensor.has_value() && tensor->requires_grad());
  return wanted;
}

/// The key of the depthwise cache [key, taps, scale, shift]: data_ptr and _version of the filter,
/// the scale and the shift, as FusedInvertedResidual.depthwise_parameters makes it. Where the
/// cached key differs, the forward makes the float32 forms again if it takes the stage.
std::array<int64_t, 6> depthwise_key(const Tensor& weight, const c10::optional<Tensor>& scale,
                                     const c10::optional<Tensor>& shift) {
  std::array<int64_t, 6> key{};
  key[0] = static_cast<int64_t>(reinterpret_cast<std::uintptr_t>(weight.data_ptr()));
  key[1] = weight._version();
  if (scale.has_value() && shift.has_value()) {
    key[2] = static_cast<int64_t>(reinterpret_cast<std::uintptr_t>(scale->data_ptr()));
    key[3] = scale->_version();
    key[4] = static_cast<int64_t>(reinterpret_cast<std::uintptr_t>(shift->data_ptr()));
    key[5] = shift->_version();
  }
  return key;
}

bool cached_key_matches(PyObject* cached, const std::array<int64_t, 6>& key) {
  if (!PyTuple_Check(cached) || PyTuple_GET_SIZE(cached) != 6) return false;
  for (Py_ssize_t i = 0; i < 6; ++i) {
    // data_ptr() is an unsigned address as a Python int: compared by its bits.
    const unsigned long long value = PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(cached, i));
    if (value == static_cast<unsigned long long>(-1) && PyErr_Occurred()) throw python_error();
    if (value != static_cast<unsigned long long>(key[static_cast<std::size_t>(i)])) return false;
  }
  return true;
}

/// Stores the forms the forward made, with their key, into the block's cache list.
void store_depthwise_cache(PyObject* cache, const std::array<int64_t, 6>& key, BlockDepthwiseFilter& filter) {
  PyObject* key_tuple = PyTuple_New(6);
  if (key_tuple == nullptr) throw python_error();
  for (Py_ssize_t i = 0; i < 6; ++i) {
    const int64_t value = key[static_cast<std::size_t>(i)];
    // The addresses as data_ptr() gives them (unsigned), the versions as ints.
    PyObject* item = i % 2 == 0 ? PyLong_FromUnsignedLongLong(static_cast<unsigned long long>(value))
                                : PyLong_FromLongLong(value);
    if (item == nullptr) {
      Py_DECREF(key_tuple);
      throw python_error();
    }
    PyTuple_SET_ITEM(key_tuple, i, item);  // steals the reference
  }
  PyObject* items[4] = {key_tuple, THPVariable_Wrap(std::move(filter.taps)), THPVariable_Wrap(std::move(filter.scale)),
                        THPVariable_Wrap(std::move(filter.shift))};
  bool failed = false;
  for (Py_ssize_t i = 0; i < 4; ++i) {
    // PyList_SetItem steals the reference, also on failure.
    if (items[i] == nullptr || failed) {
      Py_XDECREF(items[i]);
      failed = true;
    } else if (PyList_SetItem(cache, i, items[i]) != 0) {
      failed = true;
    }
  }
  if (failed) throw python_error();
}

/// _fused_inverted_residual_forward(x, tensors, settings, depthwise_filter, skip, depthwise_cache)
/// -> Tensor, or None where the one call does not apply and the Python forward must run: x not a
/// CUDA torch.Tensor (a subclass, another type, the CPU, the meta device), a tensor subclass among the block's
/// tensors, a gradient wanted (grad mode on and any tensor requiring grad), autocast on CUDA (the
/// convolutions would run in its dtype) or a __torch_function__ mode (the Python forward's torch
/// calls would go through it).
///   tensors: 16 tensors or None (kBlockTensors);
///   settings: (conv1, norm1, conv2, norm2, squeeze, conv3, norm3), a convolution's (stride,
///             padding, dilation, groups, whether it is a PointwiseConv2d), a norm's (activation,
///             min_val, max_val), conv1 and norm1 None without an expansion, squeeze None without
///             one, else the ReLU's inplace flag;
///   depthwise_filter: (kernel_size, stride, pad_h, pad_w) or None;
///   depthwise_cache: a list [key or None, taps, scale, shift].
PyObject* fused_inverted_residual_forward(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  const Tensor* input = block_input(kBlockForward, args, nargs, 6);
  if (input == nullptr) Py_RETURN_NONE;
  const Tensor& x = *input;
  // The arguments are checked first, whatever the device, so that a malformed call raises everywhere.
  bool declined = false;
  const auto t = block_tensors<kBlockTensors>(args[1], declined, "tensors must be a list of 16 tensors or None",
                                              kBlockForward);
  PyObject* settings = block_tuple(args[2], 7, "settings must be a tuple of 7: (conv1, norm1, conv2, norm2, "
                                               "squeeze, conv3, norm3)");
  auto setting = [&](Py_ssize_t i) { return PyTuple_GET_ITEM(settings, i); };
  FusedBlock block{c10::nullopt, c10::nullopt, block_convolution(setting(2), t[4], t[5]),
                   block_norm(setting(3), t[6], t[7]), c10::nullopt, c10::nullopt,
                   block_convolution(setting(5), t[12], t[13]), block_norm(setting(6), t[14], t[15]),
                   bool_argument(args[4])};
  if ((setting(0) == Py_None) != (setting(1) == Py_None)) {
    block_argument_error("conv1 and norm1 come together or not at all");
  }
  if (setting(0) != Py_None) {
    block.conv1 = block_convolution(setting(0), t[0], t[1]);
    block.norm1 = block_norm(setting(1), t[2], t[3]);
  }
  if (setting(4) != Py_None) {
    if (!t[8].has_value() || !t[10].has_value()) block_argument_error("a squeeze needs its reduce and expand weights");
    block.squeeze = BlockSqueeze{*t[8], t[9], *t[10], t[11], bool_argument(setting(4))};
  }
  PyObject* cache = args[5];
  std::array<int64_t, 6> key{};
  if (args[3] != Py_None) {
    PyObject* filter = block_tuple(args[3], 4, "depthwise_filter must be (kernel_size, stride, pad_h, pad_w) or None");
    if (!PyList_Check(cache) || PyList_GET_SIZE(cache) != 4) {
      block_argument_error("depthwise_cache must be a list [key, taps, scale, shift]");
    }
    block.depthwise = BlockDepthwiseFilter{int_argument(PyTuple_GET_ITEM(filter, 0)),
                                           int_argument(PyTuple_GET_ITEM(filter, 1)),
                                           int_argument(PyTuple_GET_ITEM(filter, 2)),
                                           int_argument(PyTuple_GET_ITEM(filter, 3)), Tensor(), Tensor(), Tensor()};
  }
  if (one_call_declines(x, t, declined)) Py_RETURN_NONE;
  if (block.depthwise.has_value()) {
    key = depthwise_key(block.conv2.weight, block.norm2.scale, block.norm2.shift);
    if (cached_key_matches(PyList_GET_ITEM(cache, 0), key)) {
      BlockDepthwiseFilter& forms = *block.depthwise;
      Tensor* slots[3] = {&forms.taps, &forms.scale, &forms.shift};
      for (Py_ssize_t i = 0; i < 3; ++i) {
        PyObject* item = PyList_GET_ITEM(cache, i + 1);
        if (!THPVariable_Check(item)) block_argument_error("the depthwise cache's forms must be tensors");
        *slots[i] = THPVariable_Unpack(item);
      }
    }
  }
  Tensor out;
  {
    const GilRelease no_gil;
    out = hardact_torch::fused_inverted_residual_forward(x, block);
  }
  if (block.depthwise.has_value() && block.depthwise->made) store_depthwise_cache(cache, key, *block.depthwise);
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}

// ---- _fused_star_block_forward: FusedStarBlock.forward in one call --------------------------------

constexpr std::size_t kStarTensors = 11;  // FusedStarBlock._one_call_arguments' list

/// _fused_star_block_forward(x, tensors, settings, activation) -> Tensor, or None where the one call
/// does not apply and the Python forward must run (as _fused_inverted_residual_forward declines).
///   tensors: [conv1's scaled filter, f1's weight, bias1, f2's weight, bias2, conv_g's weight,
///             norm_g's scale, its folded shift, conv2's weight, conv2's bias or None, the residual
///             scale (None without a bias)];
///   settings: the five convolutions' (stride, padding, dilation, groups, whether a PointwiseConv2d),
///             conv1, f1, f2, conv_g, conv2;
///   activation: the star product's (name, min_val, max_val).
PyObject* fused_star_block_forward(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  const Tensor* input = block_input(kStarForward, args, nargs, 4);
  if (input == nullptr) Py_RETURN_NONE;
  const Tensor& x = *input;
  bool declined = false;
  const auto t = block_tensors<kStarTensors>(args[1], declined, "tensors must be a list of 11 tensors or None",
                                             kStarForward);
  for (std::size_t i = 0; i < 9; ++i) {
    if (!t[i].has_value()) block_argument_error("only conv2's bias and the residual scale may be None", kStarForward);
  }
  if (t[9].has_value() != t[10].has_value()) {
    block_argument_error("conv2's bias and the residual scale come together or not at all", kStarForward);
  }
  PyObject* settings = block_tuple(args[2], 5, "settings must be a tuple of 5: (conv1, f1, f2, conv_g, conv2)",
                                   kStarForward);
  auto convolution = [&](Py_ssize_t i, std::size_t weight) {
    return block_convolution(PyTuple_GET_ITEM(settings, i), t[weight], c10::nullopt, kStarForward);
  };
  PyObject* activation = block_tuple(args[3], 3, "activation must be (name, min_val, max_val)", kStarForward);
  const c10::string_view name = string_argument(PyTuple_GET_ITEM(activation, 0));
  const StarBlock block{convolution(0, 0), convolution(1, 1), *t[2], convolution(2, 3), *t[4],
                        std::string(name.data(), name.size()), float_argument(PyTuple_GET_ITEM(activation, 1)),
                        float_argument(PyTuple_GET_ITEM(activation, 2)), convolution(3, 5), *t[6], *t[7],
                        convolution(4, 8), t[9], t[10]};
  if (one_call_declines(x, t, declined)) Py_RETURN_NONE;
  Tensor out;
  {
    const GilRelease no_gil;
    out = hardact_torch::fused_star_block_forward(x, block);
  }
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}

// ---- _pointwise_conv2d: PointwiseConv2d's convolution ----------------------------------------------

/// _pointwise_conv2d(x, weight, bias, stride, padding, dilation, groups) -> Tensor, or None where
/// nn.Conv2d's own convolution must run: x or a parameter not an exact torch.Tensor (or
/// nn.Parameter), or a __torch_function__ mode on (F.conv2d would go through it). Else F.conv2d's
/// result (pointwise_convolution.h: one matrix product where it applies, else at::conv2d, which
/// records autograd as F.conv2d does).
PyObject* pointwise_conv2d(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  expect_arguments(kPointwise, nargs, 7);
  if (!THPVariable_CheckExact(args[0]) || !THPVariable_CheckExact(args[1]) ||
      (args[2] != Py_None && !THPVariable_CheckExact(args[2])) || at::impl::torch_function_mode_enabled()) {
    Py_RETURN_NONE;
  }
  const Tensor& x = THPVariable_Unpack(args[0]);
  const Tensor& weight = THPVariable_Unpack(args[1]);
  c10::optional<Tensor> bias;
  if (args[2] != Py_None) bias = THPVariable_Unpack(args[2]);
  const std::array<int64_t, 2> stride = int_pair(args[3], kPointwise), padding = int_pair(args[4], kPointwise),
                               dilation = int_pair(args[5], kPointwise);
  const int64_t groups = int_argument(args[6]);
  Tensor out;
  {
    const GilRelease no_gil;
    out = hardact_torch::pointwise_convolution(x, weight, bias, stride, padding, dilation, groups);
  }
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}

template <class Function>
PyMethodDef fastcall(const char* name, Function function, const char* doc) {
  return {name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(function)), METH_FASTCALL, doc};
}

PyMethodDef methods[] = {
    fastcall("hardsigmoid", unary<kHardsigmoid, kHardsigmoidName>, "hardsigmoid(x) -> Tensor"),
    fastcall("hardswish", unary<kHardswish, kHardswishName>, "hardswish(x) -> Tensor"),
    fastcall("relu6", unary<kRelu6, kRelu6Name>, "relu6(x) -> Tensor"),
    fastcall("hardtanh", hardtanh, "hardtanh(x, min_val, max_val) -> Tensor"),
    fastcall("hardsigmoid_", inplace<kHardsigmoidInplace, kHardsigmoidName>, "hardsigmoid_(x) -> x"),
    fastcall("hardswish_", inplace<kHardswishInplace, kHardswishName>, "hardswish_(x) -> x"),
    fastcall("relu6_", inplace<kRelu6Inplace, kRelu6Name>, "relu6_(x) -> x"),
    fastcall("hardtanh_", hardtanh_inplace, "hardtanh_(x, min_val, max_val) -> x"),
    fastcall("scale_shift_activation",
             fused<kScaleShiftOp, kScaleShiftElsewhere, Tensor, OptionalTensor, OptionalTensor, c10::string_view,
                   double, double>,
             "scale_shift_activation(x, scale, shift, activation, min_val, max_val) -> Tensor"),
    fastcall("residual_activation",
             fused<kResidualOp, kResidualElsewhere, Tensor, const Tensor&, c10::string_view, double, double>,
             "residual_activation(x, residual, activation, min_val, max_val) -> Tensor"),
    fastcall("scale_shift_residual_activation",
             fused<kScaleShiftResidualOp, kScaleShiftResidualElsewhere, Tensor, OptionalTensor, OptionalTensor,
                   const Tensor&, c10::string_view, double, double>,
             "scale_shift_residual_activation(x, scale, shift, residual, activation, min_val, max_val) -> Tensor"),
    fastcall("scale_shift_activation_mean",
             fused<kScaleShiftMeanOp, kScaleShiftMeanElsewhere, std::tuple<Tensor, Tensor>, OptionalTensor,
                   OptionalTensor, c10::string_view, double, double>,
             "scale_shift_activation_mean(x, scale, shift, activation, min_val, max_val) -> (Tensor, Tensor)"),
    fastcall("hardsigmoid_gate", fused<kGateOp, kGateElsewhere, Tensor, const Tensor&>,
             "hardsigmoid_gate(x, gate) -> Tensor"),
    fastcall("bias_activation_product",
             fused<kProductOp, kProductElsewhere, Tensor, const Tensor&, const Tensor&, const Tensor&,
                   c10::string_view, double, double>,
             "bias_activation_product(x, bias, other, other_bias, activation, min_val, max_val) -> Tensor"),
    fastcall("_linear_activation", linear_activation,
             "_linear_activation(x, weight, bias, relu, tf32) -> Tensor: relu?(x @ weight.T + bias), float32, "
             "float16 or bfloat16, float32's products in TF32 where tf32; inference only"),
    fastcall("_pointwise_conv2d", pointwise_conv2d,
             "_pointwise_conv2d(x, weight, bias, stride, padding, dilation, groups) -> Tensor or None: "
             "F.conv2d's result, one matrix product for a 1x1 convolution on channels-last 16-bit x where no "
             "gradient is wanted; None for a tensor subclass or under a __torch_function__ mode"),
    fastcall("_depthwise_conv_scale_shift_activation", depthwise_conv_scale_shift_activation,
             "_depthwise_conv_scale_shift_activation(x, taps, scale, shift, kernel_size, stride, pad_h, pad_w, "
             "activation, min_val, max_val, with_mean, concatenate_input) -> (y, mean or None): "
             "act(depthwise_conv(x) * scale + shift) for channels-last x, after a copy of x where concatenate_input, "
             "and y's mean per (n, c); inference only"),
    fastcall("_max_pool2d", max_pool2d,
             "_max_pool2d(x, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, ceil_mode) -> Tensor: "
             "F.max_pool2d's bits (dilation 1) for channels-last x, without indices; inference only"),
    fastcall("_concatenate_channels", concatenate_channels,
             "_concatenate_channels(tensors) -> Tensor: torch.cat(tensors, 1)'s bytes for 4-D channels-last CUDA "
             "tensors of one dtype, device, N, H and W, as a channels-last tensor; inference only"),
    fastcall("_gated_activation", gated_activation,
             "_gated_activation(x, gate, activation, min_val, max_val) -> Tensor: act(x * gate[n, c]) for NCHW or "
             "channels-last x; inference only"),
    fastcall("_fused_inverted_residual_forward", fused_inverted_residual_forward,
             "_fused_inverted_residual_forward(x, tensors, settings, depthwise_filter, skip, depthwise_cache) -> "
             "Tensor or None: FusedInvertedResidual.forward in one call where no gradient is wanted; None where "
             "the Python forward must run"),
    fastcall("_fused_star_block_forward", fused_star_block_forward,
             "_fused_star_block_forward(x, tensors, settings, activation) -> Tensor or None: FusedStarBlock.forward "
             "in one call where no gradient is wanted; None where the Python forward must run"),
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT,
                               "_C",
                               "hardact operators (registered as torch.ops.hardact) and their eager entry points",
                               -1,
                               methods};
  return PyModule_Create(&module);
}
