// The Python module hardact_torch._C. Importing it runs the operator registrations (ops.cu,
// autograd.cpp, checks.cu); its functions are the eager entry points of hardact_torch's functions
// and modules.
//
// Why not torch.ops.hardact.*: that generic path matches the schema at run time and boxes the
// arguments, several microseconds per call that a launch-bound network pays on every activation.
// These functions do what PyTorch's generated bindings do for F.*: take the tensor straight from
// the Python object, release the GIL, call the operator's dispatcher handle (so autograd, tensor
// subclasses such as DTensor, and dispatch modes such as FakeTensorMode all still apply) and wrap
// the result. __torch_function__ overrides are the Python caller's to handle, as in F.*.

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

#include <Python.h>

#include <tuple>
#include <utility>

namespace {

using at::Tensor;

template <class Signature>
c10::TypedOperatorHandle<Signature> find_op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Signature>();
}

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

/// scale_shift_activation(x, scale, shift, activation, min_val, max_val) -> new tensor.
PyObject* scale_shift_activation(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  constexpr const char* kName = "scale_shift_activation";
  expect_arguments(kName, nargs, 6);
  const Tensor& x = tensor_argument(kName, args[0], kScaleShiftElsewhere);
  const c10::optional<Tensor> scale = optional_tensor_argument(kName, args[1]);
  const c10::optional<Tensor> shift = optional_tensor_argument(kName, args[2]);
  const c10::string_view activation = string_argument(args[3]);
  const double min_val = float_argument(args[4]), max_val = float_argument(args[5]);
  static const auto op = find_op<Tensor(const Tensor&, const c10::optional<Tensor>&, const c10::optional<Tensor>&,
                                        c10::string_view, double, double)>("hardact::scale_shift_activation");
  Tensor out;
  {
    const GilRelease no_gil;
    out = op.call(x, scale, shift, activation, min_val, max_val);
  }
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}

/// residual_activation(x, residual, activation, min_val, max_val) -> new tensor.
PyObject* residual_activation(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  constexpr const char* kName = "residual_activation";
  expect_arguments(kName, nargs, 5);
  const Tensor& x = tensor_argument(kName, args[0], kResidualElsewhere);
  const Tensor& residual = other_tensor_argument(kName, args[1]);
  const c10::string_view activation = string_argument(args[2]);
  const double min_val = float_argument(args[3]), max_val = float_argument(args[4]);
  static const auto op = find_op<Tensor(const Tensor&, const Tensor&, c10::string_view, double, double)>(
      "hardact::residual_activation");
  Tensor out;
  {
    const GilRelease no_gil;
    out = op.call(x, residual, activation, min_val, max_val);
  }
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}

/// scale_shift_residual_activation(x, scale, shift, residual, activation, min_val, max_val) -> new tensor.
PyObject* scale_shift_residual_activation(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  constexpr const char* kName = "scale_shift_residual_activation";
  expect_arguments(kName, nargs, 7);
  const Tensor& x = tensor_argument(kName, args[0], kScaleShiftResidualElsewhere);
  const c10::optional<Tensor> scale = optional_tensor_argument(kName, args[1]);
  const c10::optional<Tensor> shift = optional_tensor_argument(kName, args[2]);
  const Tensor& residual = other_tensor_argument(kName, args[3]);
  const c10::string_view activation = string_argument(args[4]);
  const double min_val = float_argument(args[5]), max_val = float_argument(args[6]);
  static const auto op =
      find_op<Tensor(const Tensor&, const c10::optional<Tensor>&, const c10::optional<Tensor>&, const Tensor&,
                     c10::string_view, double, double)>("hardact::scale_shift_residual_activation");
  Tensor out;
  {
    const GilRelease no_gil;
    out = op.call(x, scale, shift, residual, activation, min_val, max_val);
  }
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}

/// scale_shift_activation_mean(x, scale, shift, activation, min_val, max_val) -> (y, mean).
PyObject* scale_shift_activation_mean(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  constexpr const char* kName = "scale_shift_activation_mean";
  expect_arguments(kName, nargs, 6);
  const Tensor& x = tensor_argument(kName, args[0], kScaleShiftMeanElsewhere);
  const c10::optional<Tensor> scale = optional_tensor_argument(kName, args[1]);
  const c10::optional<Tensor> shift = optional_tensor_argument(kName, args[2]);
  const c10::string_view activation = string_argument(args[3]);
  const double min_val = float_argument(args[4]), max_val = float_argument(args[5]);
  static const auto op =
      find_op<std::tuple<Tensor, Tensor>(const Tensor&, const c10::optional<Tensor>&, const c10::optional<Tensor>&,
                                         c10::string_view, double, double)>("hardact::scale_shift_activation_mean");
  std::tuple<Tensor, Tensor> out;
  {
    const GilRelease no_gil;
    out = op.call(x, scale, shift, activation, min_val, max_val);
  }
  PyObject* y = THPVariable_Wrap(std::move(std::get<0>(out)));
  if (y == nullptr) return nullptr;
  PyObject* mean = THPVariable_Wrap(std::move(std::get<1>(out)));
  if (mean == nullptr) {
    Py_DECREF(y);
    return nullptr;
  }
  PyObject* pair = PyTuple_Pack(2, y, mean);  // new references to both; ours are dropped below
  Py_DECREF(y);
  Py_DECREF(mean);
  return pair;
  END_HANDLE_TH_ERRORS
}

/// hardsigmoid_gate(x, gate) -> new tensor.
PyObject* hardsigmoid_gate(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  constexpr const char* kName = "hardsigmoid_gate";
  expect_arguments(kName, nargs, 2);
  const Tensor& x = tensor_argument(kName, args[0], kGateElsewhere);
  const Tensor& gate = other_tensor_argument(kName, args[1]);
  static const auto op = find_op<Tensor(const Tensor&, const Tensor&)>("hardact::hardsigmoid_gate");
  Tensor out;
  {
    const GilRelease no_gil;
    out = op.call(x, gate);
  }
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}

constexpr char kHardsigmoidName[] = "hardsigmoid";
constexpr char kHardswishName[] = "hardswish";
constexpr char kRelu6Name[] = "relu6";

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
    fastcall("scale_shift_activation", scale_shift_activation,
             "scale_shift_activation(x, scale, shift, activation, min_val, max_val) -> Tensor"),
    fastcall("residual_activation", residual_activation,
             "residual_activation(x, residual, activation, min_val, max_val) -> Tensor"),
    fastcall("scale_shift_residual_activation", scale_shift_residual_activation,
             "scale_shift_residual_activation(x, scale, shift, residual, activation, min_val, max_val) -> Tensor"),
    fastcall("scale_shift_activation_mean", scale_shift_activation_mean,
             "scale_shift_activation_mean(x, scale, shift, activation, min_val, max_val) -> (Tensor, Tensor)"),
    fastcall("hardsigmoid_gate", hardsigmoid_gate, "hardsigmoid_gate(x, gate) -> Tensor"),
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
