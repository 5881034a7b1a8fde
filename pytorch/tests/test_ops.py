"""Tests of the hardact operators' registration: schemas, fake kernels, torch.library.opcheck,
torch.compile(fullgraph=True), CUDA graph capture, tensor layouts and autograd rules.

    pytest pytorch/tests/test_ops.py               # the tests marked cuda skip without a GPU
    pytest pytorch/tests/test_ops.py -m "not cuda" # only those that need no GPU

Without a GPU (meta tensors, which run the fake kernels): every schema and its CUDA, Autograd and
fake kernels are registered; fake kernels give the sizes, strides and dtype of empty_like(x) for
contiguous, transposed, offset and gapped inputs and raise the CUDA kernels' errors; under
torch.compile(fullgraph=True) (no graph break) a model with the modules traces to aten's
activations, and one calling torch.ops.hardact.* to the hardact ops, backward ones included;
torch.library.opcheck with CPU stand-in kernels; the DTensor sharding rules on a fake two-rank
process group.
With a GPU: torch.library.opcheck on every op (four dtypes, and an offset view and a transposed
tensor in float32; the functional and backward forms with inputs requiring grad);
torch.compile(fullgraph=True) with Inductor, forward and backward bit for bit (the functions against
compiled F.*, the ops against eager F.*); CUDA graph capture and replay; every layout against F.*
bit for bit; the refusals (in place on a leaf requiring grad, out= under autograd, forward-mode AD,
overlapping writes); gradients and second derivatives against torch.autograd, in place too (on
tensors and views), and a training step with in-place modules.
"""

from __future__ import annotations

import contextlib
import math
import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import hardact_torch as ha
from checklib import FLOAT_DTYPES, NAMES, mismatch_report, raises, salted_random

ops = torch.ops.hardact

# The op name, the functional reference in PyTorch, and extra arguments (hardtanh's bounds).
OP_CASES = [
    ("hardsigmoid", F.hardsigmoid, ()),
    ("hardtanh", lambda x: F.hardtanh(x, -0.3, 0.7), (-0.3, 0.7)),
    ("hardswish", F.hardswish, ()),
    ("relu6", F.relu6, ()),
]
REFERENCE_BACKWARD = {
    "hardsigmoid": lambda g, x, *b: torch.ops.aten.hardsigmoid_backward(g, x),
    "hardtanh": lambda g, x, *b: torch.ops.aten.hardtanh_backward(g, x, *b),
    "hardswish": lambda g, x, *b: torch.ops.aten.hardswish_backward(g, x),
    "relu6": lambda g, x, *b: torch.ops.aten.hardtanh_backward(g, x, 0.0, 6.0),
}


def layouts(x2d: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    """A 2-D tensor seen in several layouts; the dense ones run in place, the last two through a copy."""
    return [
        ("contiguous", x2d),
        ("offset view x[1:]", x2d[1:]),
        ("flat offset view", x2d.reshape(-1)[3:]),
        ("transposed", x2d.t()),
        ("gapped x[:, ::2]", x2d[:, ::2]),
        ("expanded", x2d[:1].expand(x2d.shape[0], -1)),
    ]


# ---- no GPU needed: meta tensors, fake tensors, CPU stand-ins ------------------------------------

def test_public_names(checks) -> None:
    """hardact_torch re-exports every public name of its topic modules, the same objects; ModelNew is an
    example (examples/kernelbench_model.py), not part of the package."""
    from hardact_torch import cuda_graph, functional, modules, rewrite
    for module in (functional, modules, rewrite, cuda_graph):
        for name in module.__all__:
            checks.record("" if name in ha.__all__ and getattr(ha, name, None) is getattr(module, name) else "missing",
                          f"hardact_torch.{name} is {module.__name__}.{name}")
    checks.record("" if all(hasattr(ha, name) for name in ha.__all__) else "a name of __all__ is missing",
                  "hardact_torch.__all__ all defined")
    checks.record("" if "ModelNew" not in ha.__all__ and not hasattr(ha, "ModelNew") else "exported",
                  "ModelNew not in hardact_torch")


def test_registration(checks) -> None:
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    for name in ha.UNARY_OPS:
        for op_name in (name, name + "_", name + "_backward"):
            packet = getattr(ops, op_name, None)
            checks.record("" if packet is not None else "not registered", f"hardact::{op_name} exists")
            if packet is None:
                continue
            qualified = f"hardact::{op_name}"
            checks.record("" if has_kernel(qualified, "CUDA") else "no CUDA kernel", f"{qualified} CUDA kernel")
            checks.record("" if has_kernel(qualified, "Meta") else "no fake/meta kernel", f"{qualified} fake kernel")
            checks.record("" if has_kernel(qualified, "Autograd") else "no Autograd kernel",
                          f"{qualified} Autograd kernel")
        out_overloads = getattr(ops, name).overloads()
        checks.record("" if "out" in out_overloads else f"overloads {out_overloads}", f"hardact::{name}.out exists")
        if name == "hardtanh":
            schema = str(ops.hardtanh.default._schema)
            checks.record("" if "float min_val=-1." in schema and "float max_val=1." in schema else schema,
                          "hardtanh schema has the bounds with F.hardtanh's defaults")
        mutating = str(getattr(ops, name + "_").default._schema)
        checks.record("" if "Tensor(a!)" in mutating else mutating, f"hardact::{name}_ declares its mutation")


def test_fake_kernels(checks) -> None:
    """Fake kernels on meta tensors: the metadata of empty_like(x), and the CUDA kernels' errors."""
    base = torch.empty(64, 48, device="meta")
    for dtype in FLOAT_DTYPES:
        for layout, x in layouts(base.to(dtype)):
            expected = torch.empty_like(x)
            for name, _, extra in OP_CASES:
                for what, got in [
                    (name, getattr(ops, name)(x, *extra)),
                    (name + "_backward", getattr(ops, name + "_backward")(torch.empty_like(x), x, *extra)),
                ]:
                    report = ""
                    if (got.shape, got.stride(), got.dtype, got.device) != (expected.shape, expected.stride(),
                                                                            expected.dtype, expected.device):
                        report = (f"got {tuple(got.shape)} {got.stride()} {got.dtype}, expected "
                                  f"{tuple(expected.shape)} {expected.stride()} {expected.dtype}")
                    checks.record(report, f"fake {what} {NAMES[dtype]} {layout}")
                out = torch.empty_like(x)
                returned = getattr(ops, name).out(x, *extra, out=out)
                checks.record("" if returned is None and out.stride() == expected.stride() else
                              f"returned {type(returned).__name__}, out strides {out.stride()}",
                              f"fake {name}.out {layout} (returns nothing, out unchanged)")
        x = base.to(dtype)
        for name, _, extra in OP_CASES:
            returned = getattr(ops, name + "_")(x, *extra)
            checks.record("" if returned is None else f"returned {type(returned).__name__}",
                          f"fake {name}_ returns nothing")
    int_x = torch.empty(8, dtype=torch.int32, device="meta")
    x = torch.empty(8, device="meta")
    error_cases = [
        ("int32 input", TypeError, lambda: ops.hardsigmoid(int_x)),
        ("hardtanh min_val > max_val", ValueError, lambda: ops.hardtanh(x, 1.0, -1.0)),
        ("hardtanh NaN bound", ValueError, lambda: ops.hardtanh(x, math.nan, 1.0)),
        ("backward shape mismatch", ValueError, lambda: ops.hardswish_backward(torch.empty(9, device="meta"), x)),
        ("backward dtype mismatch", TypeError, lambda: ops.relu6_backward(x.half(), x)),
        ("out shape mismatch", ValueError, lambda: ops.relu6.out(x, out=torch.empty(4, device="meta"))),
        ("out dtype mismatch", TypeError, lambda: ops.hardsigmoid.out(x, out=x.double())),
    ]
    for what, error_type, call in error_cases:
        checks.record(raises(error_type, call), f"fake kernel refuses {what}")
    # FakeTensorMode makes CUDA tensors without a GPU: the ops keep device and layout there too.
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(64, 48, device="cuda", dtype=torch.bfloat16).t()
        for name, _, extra in OP_CASES:
            y = getattr(ops, name)(x, *extra)
            report = "" if (y.device.type, y.stride(), y.dtype) == ("cuda", x.stride(), x.dtype) else \
                f"{y.device} {y.stride()} {y.dtype}"
            checks.record(report, f"FakeTensorMode cuda {name} on a transposed bfloat16 tensor")


def activation_chain(x, hardsigmoid, hardswish, relu6, hardtanh):
    """Every op in one graph; the arithmetic between them (x * 4, +) is exact or one IEEE operation,
    so eager and compiled code must agree bit for bit."""
    y = relu6(hardswish(x) * 4.0) + hardsigmoid(x)
    return hardtanh(y, -0.3, 0.7)


def hardact_chain(x):
    return activation_chain(x, ha.hardsigmoid, ha.hardswish, ha.relu6, ha.hardtanh)


def reference_chain(x):
    return activation_chain(x, F.hardsigmoid, F.hardswish, F.relu6, F.hardtanh)


def ops_chain(x):
    return activation_chain(x, ops.hardsigmoid, ops.hardswish, ops.relu6, ops.hardtanh)


class ActivationStack(nn.Module):
    """A model using the modules, as a user would."""

    def __init__(self, width: int):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.hardswish = ha.HardSwish()

    def forward(self, x):
        return hardact_chain(self.hardswish(self.linear(x)))


def test_compile_tracing(checks) -> None:
    """torch.compile(fullgraph=True) on meta tensors with a backend that records the graphs: a graph
    break raises under fullgraph=True; the graphs must hold the expected ops, backward ones too."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    torch._dynamo.reset()
    graphs = {"forward": [], "backward": []}

    def recorder(kind):
        def compiler(graph_module, example_inputs):
            graphs[kind].append(graph_module)
            return make_boxed_func(graph_module.forward)
        return compiler

    backend = aot_autograd(fw_compiler=recorder("forward"), bw_compiler=recorder("backward"))
    # The modules and functions become torch.nn.functional's under compile (so Inductor can fuse
    # them): their graphs hold aten's activations. torch.ops.hardact.* called directly stay hardact's,
    # forward and backward (through the C++ autograd kernels).
    cases = [
        ("modules and functions", ActivationStack(32).to("meta"),
         ["aten.hardswish", "aten.hardtanh", "aten.hardsigmoid"],
         ["aten.hardswish_backward", "aten.hardtanh_backward", "aten.hardsigmoid_backward"], "hardact."),
        ("torch.ops.hardact", ops_chain,
         ["hardact.hardswish", "hardact.relu6", "hardact.hardsigmoid", "hardact.hardtanh"],
         ["hardact.hardswish_backward", "hardact.relu6_backward", "hardact.hardtanh_backward",
          "hardact.hardsigmoid_backward"], "aten.hard"),
    ]
    for what, model, forward_names, backward_names, absent in cases:
        torch._dynamo.reset()
        graphs["forward"].clear()
        graphs["backward"].clear()
        compiled = torch.compile(model, backend=backend, fullgraph=True)
        x = torch.empty(16, 32, device="meta", requires_grad=True)
        try:
            out = compiled(x)
            out.sum().backward()
        except Exception as error:  # noqa: BLE001
            checks.record(f"{type(error).__name__}: {error}", f"torch.compile(fullgraph=True) traces {what}")
            continue
        checks.record("" if out.shape == (16, 32) else f"shape {tuple(out.shape)}", f"compiled {what}: output shape")
        for kind, expected in [("forward", forward_names), ("backward", backward_names)]:
            code = "\n".join(graph.code for graph in graphs[kind])
            missing = [name for name in expected if name not in code]
            report = f"{len(graphs[kind])} graphs; missing {missing}" if missing or not graphs[kind] else ""
            if not report and absent in code:
                report = f"the graph also calls {absent}*"
            checks.record(report, f"compiled {what}: {kind} graph calls {expected[0].split('.')[0]}'s ops")
    # In place under compile: functionalized, and still no graph break.
    torch._dynamo.reset()

    def inplace_chain(x):
        y = x * 2.0
        ha.hardsigmoid_(y)
        ops.hardswish_(y)
        ha.hardtanh_(y, 0.25, 0.75)
        z = torch.empty_like(y)
        ops.relu6.out(y, out=z)
        return z

    try:
        # aot_eager functionalizes the mutations, as Inductor does.
        torch.compile(inplace_chain, backend="aot_eager", fullgraph=True)(torch.empty(8, 8, device="meta"))
        checks.record("", "in-place and out= ops under torch.compile(fullgraph=True), functionalized")
    except Exception as error:  # noqa: BLE001
        checks.record(f"{type(error).__name__}: {error}", "in-place ops under torch.compile(fullgraph=True)")


@contextlib.contextmanager
def cpu_stand_ins():
    """CPU kernels for every hardact op, computed with F.* and PyTorch's backward ops, registered only
    inside this block: the registrations under test (schemas, fake kernels, autograd, Autograd
    kernels, sharding rules) do not depend on the device, so they can be exercised without a GPU."""
    library = torch.library.Library("hardact", "IMPL")
    for name, reference, extra in OP_CASES:
        def functional(x, *bounds, reference=reference, name=name):
            return F.hardtanh(x, *bounds) if name == "hardtanh" else reference(x)

        def inplace(x, *bounds, functional=functional):
            x.copy_(functional(x, *bounds))

        def out_variant(x, *bounds, out, functional=functional):
            out.copy_(functional(x, *bounds))

        def backward(grad, x, *bounds, name=name):
            return REFERENCE_BACKWARD[name](grad, x, *bounds)

        library.impl(name, functional, "CPU")
        library.impl(name + "_", inplace, "CPU")
        library.impl(name + ".out", out_variant, "CPU")
        library.impl(name + "_backward", backward, "CPU")
    try:
        yield
    finally:
        library._destroy()


def test_opcheck_cpu_stand_ins(checks) -> None:
    """torch.library.opcheck with the CPU stand-ins: everything opcheck tests but the CUDA kernels."""
    generator = torch.Generator().manual_seed(3)
    with cpu_stand_ins():
        for dtype in FLOAT_DTYPES:
            run_opcheck(checks, generator, dtype, device="cpu")


def test_dtensor_sharding_rules(checks) -> None:
    """The DTensor sharding rules, without GPUs: a fake two-rank process group (no communication) and
    the CPU stand-ins, as the rules do not depend on the device. A Shard(d) input must give a
    Shard(d) output, gradient and in-place result with no collective."""
    try:
        import torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor import Replicate, Shard, distribute_tensor
        from torch.distributed.tensor.debug import CommDebugMode
        from torch.testing._internal.distributed.fake_pg import FakeStore
    except ImportError as error:
        pytest.skip(f"torch.distributed not usable here ({error})")
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)
    try:
        with cpu_stand_ins():
            mesh = init_device_mesh("cpu", (2,))
            x_full = torch.randn(8, 6)
            for dim in (0, 1):
                x = distribute_tensor(x_full, mesh, [Shard(dim)]).requires_grad_()
                grad = distribute_tensor(torch.randn(8, 6), mesh, [Shard(dim)])
                with CommDebugMode() as comms:
                    y = ops.hardsigmoid(x)
                    z = ops.hardtanh(x, min_val=0.0, max_val=0.5)
                    (dx,) = torch.autograd.grad(y + z, x, grad)
                    target = distribute_tensor(x_full.clone(), mesh, [Shard(dim)])
                with CommDebugMode() as inplace_comms:
                    ops.relu6_(target)
                for what, placements in [("hardsigmoid", y.placements), ("hardtanh", z.placements),
                                         ("gradient", dx.placements), ("relu6_ in place", target.placements)]:
                    checks.record("" if placements == (Shard(dim),) else f"placements {placements}",
                                  f"DTensor Shard({dim}) {what} stays Shard({dim})")
                # The only collective allowed is the scatter of distribute_tensor itself.
                counts = {str(op): n for op, n in comms.get_comm_counts().items() if n}
                checks.record("" if set(counts) <= {"c10d_functional.scatter", "c10d.scatter_"} or not counts else
                              f"collectives {counts}", f"DTensor Shard({dim}): no collective in the ops")
                checks.record("" if inplace_comms.get_total_counts() == 0 else "a collective ran",
                              f"DTensor Shard({dim}) in place: no collective")
            replicated = ops.hardsigmoid(distribute_tensor(x_full, mesh, [Replicate()]))
            checks.record("" if replicated.placements == (Replicate(),) else f"{replicated.placements}",
                          "DTensor Replicate stays Replicate")
    finally:
        dist.destroy_process_group()


# ---- GPU -----------------------------------------------------------------------------------------

@pytest.mark.cuda
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=NAMES.get)
def test_opcheck(checks, generator, dtype) -> None:
    run_opcheck(checks, generator, dtype, device="cuda")


def run_opcheck(checks, generator, dtype, device: str) -> None:
    """torch.library.opcheck on every op: schema, fake kernel, autograd registration, AOT dispatch."""
    without_autograd = ("test_schema", "test_faketensor", "test_aot_dispatch_dynamic")
    # Layouts matter to the fake kernels (strides), not to the dtype: all of them in float32.
    for layout in ("contiguous", "offset view", "transposed") if dtype == torch.float32 else ("contiguous",):
        def sample(requires_grad=False):
            # No NaN or infinity (hardswish(-inf) is NaN): opcheck compares with assert_close,
            # where NaN never equals NaN. The bit-exact checks cover those values.
            x = salted_random(65 * 33 + 1, dtype, generator, device=device)
            x = torch.nan_to_num(x, nan=0.5, posinf=7.0, neginf=-7.0)
            x = x[1:].view(65, 33) if layout == "offset view" else x[:-1].view(65, 33)
            if layout == "transposed":
                x = x.t()
            return x.detach().requires_grad_(requires_grad)

        for name, _, extra in OP_CASES:
            op = getattr(ops, name)
            cases = [
                (f"{name}", op.default, (sample(True), *extra), {}, None),
                (f"{name}_backward", getattr(ops, name + "_backward").default,
                 (sample(True), sample(True), *extra), {}, None),
                (f"{name}_", getattr(ops, name + "_").default, (sample(), *extra), {}, without_autograd),
                (f"{name}.out", op.out, (sample(), *extra), {"out": sample()}, without_autograd),
            ]
            for what, overload, args, kwargs, utils in cases:
                options = {} if utils is None else {"test_utils": utils}
                try:
                    torch.library.opcheck(overload, args, kwargs, **options)
                    report = ""
                except Exception as error:  # noqa: BLE001  (opcheck's report is the detail)
                    report = f"{type(error).__name__}: {str(error)[:600]}"
                checks.record(report, f"opcheck {what} {NAMES[dtype]} {layout} ({device})")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16, torch.float16), ids=NAMES.get)
def test_layouts(checks, generator, dtype) -> None:
    """Every layout, every form, bit for bit against F.* (and PyTorch's backward ops)."""
    source = salted_random(257 * 130, dtype, generator).view(257, 130)
    for layout, x in layouts(source):
        x_before = x.clone()
        for name, reference, extra in OP_CASES:
            expected = reference(x)
            label = f"{name} {NAMES[dtype]} {layout}"
            got = getattr(ops, name)(x, *extra)
            checks.record(mismatch_report(got, expected, x), label)
            checks.record("" if got.stride() == torch.empty_like(x).stride() else
                          f"strides {got.stride()}", f"{label}: strides of empty_like(x)")
            out = torch.empty_like(x.contiguous()).t().contiguous().t()  # column-major out
            getattr(ops, name).out(x, *extra, out=out)
            checks.record(mismatch_report(out, expected, x), f"{label} out= (column-major out)")
            grad = salted_random(x.numel(), dtype, generator).view(x.shape)
            for grad_layout, g in [("contiguous grad", grad), ("expanded grad", grad[:1].expand_as(x))]:
                got_grad = getattr(ops, name + "_backward")(g, x, *extra)
                want_grad = REFERENCE_BACKWARD[name](g, x, *extra)
                checks.record(mismatch_report(got_grad, want_grad, g, x), f"{label} backward, {grad_layout}")
            if layout != "expanded":
                storage = source.clone()
                view = layouts(storage)[[n for n, _ in layouts(storage)].index(layout)][1]
                untouched = storage.clone()
                returned = getattr(ops, name + "_")(view, *extra)
                checks.record("" if returned is None else "returned something", f"{label} in place returns nothing")
                checks.record(mismatch_report(view, expected, x), f"{label} in place")
                # Everything outside the view keeps its bits.
                outside = torch.ones_like(storage, dtype=torch.bool)
                layouts(outside)[[n for n, _ in layouts(outside)].index(layout)][1].fill_(False)
                checks.record(mismatch_report(storage[outside], untouched[outside]), f"{label} in place: rest untouched")
        checks.record(mismatch_report(x, x_before), f"{NAMES[dtype]} {layout}: out-of-place calls left x alone")
    # A 4-D channels-last tensor stays channels-last, as with PyTorch's own pointwise ops.
    nhwc = salted_random(2 * 3 * 5 * 7, dtype, generator).view(2, 3, 5, 7).to(memory_format=torch.channels_last)
    got = ops.hardswish(nhwc)
    checks.record(mismatch_report(got, F.hardswish(nhwc), nhwc), f"hardswish {NAMES[dtype]} channels_last")
    checks.record("" if got.is_contiguous(memory_format=torch.channels_last) else f"strides {got.stride()}",
                  f"hardswish {NAMES[dtype]} channels_last keeps its layout")


@pytest.mark.cuda
def test_refusals(checks) -> None:
    x = torch.randn(16, 8, device="cuda")
    leaf = torch.randn(16, 8, device="cuda", requires_grad=True)
    cases = [
        ("CPU tensor (functional API)", ValueError, lambda: ha.hardsigmoid(torch.zeros(4))),
        ("int32 CUDA tensor", TypeError, lambda: ops.relu6(torch.zeros(4, dtype=torch.int32, device="cuda"))),
        ("hardtanh min_val > max_val", ValueError, lambda: ops.hardtanh(x, 1.0, -1.0)),
        ("F.hardtanh min_val > max_val (PyTorch's own, for comparison)", ValueError, lambda: F.hardtanh(x, 1.0, -1.0)),
        ("nn module HardTanh(2, 1)", ValueError, lambda: ha.HardTanh(2.0, 1.0)),
        ("in place on a leaf requiring grad", RuntimeError, lambda: ops.hardsigmoid_(leaf)),
        ("in place on a leaf requiring grad (module)", RuntimeError, lambda: ha.HardSwish(inplace=True)(leaf)),
        ("in place on a view of a leaf requiring grad", RuntimeError, lambda: ops.relu6_(leaf[1:])),
        ("out= from an input requiring grad", RuntimeError, lambda: ops.hardswish.out(leaf, out=torch.empty_like(x))),
        ("forward-mode AD", RuntimeError, lambda: forward_ad_call(x)),
        ("in place on an expanded tensor", RuntimeError, lambda: ops.relu6_(x[:1].expand(16, 8))),
        ("out= partly overlapping x", RuntimeError,
         lambda: ops.hardsigmoid.out(x.view(-1)[:64], out=x.view(-1)[1:65])),
        ("out= of another shape", ValueError, lambda: ops.hardsigmoid.out(x, out=torch.empty(3, device="cuda"))),
        ("backward with grad of another dtype", TypeError, lambda: ops.hardsigmoid_backward(x.half(), x)),
    ]
    for what, error_type, call in cases:
        checks.record(raises(error_type, call), f"refuses {what}")
    # Allowed: without grad mode, out= aliasing x exactly, and the version counter is bumped.
    with torch.no_grad():
        y = leaf * 1.0
        ops.hardsigmoid_(y)
    checks.record(mismatch_report(y, F.hardsigmoid(leaf.detach())), "in place under torch.no_grad()")
    z = x.clone()
    ops.relu6.out(z, out=z)
    checks.record(mismatch_report(z, F.relu6(x)), "out= aliasing x exactly")
    saved = leaf.exp()  # exp saves its result for backward
    with torch.no_grad():
        ops.hardswish_(saved)
    checks.record(raises(RuntimeError, lambda: saved.sum().backward()),
                  "autograd notices a saved tensor overwritten in place (version counter bumped)")


def forward_ad_call(x):
    import torch.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        return ha.hardswish(fwAD.make_dual(x, torch.ones_like(x)))


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16, torch.float16), ids=NAMES.get)
def test_autograd(checks, generator, dtype) -> None:
    """Gradients through the ops against torch.autograd of F.*, bit for bit; second derivatives
    (with respect to x, and to grad_output) against PyTorch's where PyTorch has them. PyTorch does
    not differentiate hardsigmoid_backward; there the expected values are the exact ones: zero in x
    (the gradient is piecewise constant in x) and hardsigmoid_backward(v, x) in grad_output."""
    for name, reference, extra in OP_CASES:
        source = salted_random(4099, dtype, generator)
        grad_source = salted_random(4099, dtype, generator)
        ours, theirs = source.clone().requires_grad_(), source.clone().requires_grad_()
        grad_ours, grad_theirs = grad_source.clone().requires_grad_(), grad_source.clone().requires_grad_()
        (dx_ours,) = torch.autograd.grad(getattr(ops, name)(ours, *extra), ours, grad_ours, create_graph=True)
        (dx_theirs,) = torch.autograd.grad(reference(theirs), theirs, grad_theirs, create_graph=True)
        label = f"{name} {NAMES[dtype]}"
        checks.record(mismatch_report(dx_ours, dx_theirs, grad_source, source), f"{label} gradient")
        v = salted_random(4099, dtype, generator)
        wrt_x_ours, wrt_grad_ours = torch.autograd.grad(dx_ours, (ours, grad_ours), v)
        try:
            wrt_x_theirs, wrt_grad_theirs = torch.autograd.grad(dx_theirs, (theirs, grad_theirs), v)
            source_of_truth = "PyTorch"
        except RuntimeError as error:  # "derivative for aten::hardsigmoid_backward is not implemented"
            if "not implemented" not in str(error):
                raise
            wrt_x_theirs = torch.zeros_like(source)
            wrt_grad_theirs = REFERENCE_BACKWARD[name](v, source, *extra)
            source_of_truth = "exact (PyTorch has none)"
        checks.record(mismatch_report(wrt_x_ours, wrt_x_theirs, v, source),
                      f"{label} second derivative in x vs {source_of_truth}")
        checks.record(mismatch_report(wrt_grad_ours, wrt_grad_theirs, v, source),
                      f"{label} second derivative in grad_output vs {source_of_truth}")


INPLACE_CASES = [
    ("hardsigmoid_", lambda t: ha.hardsigmoid(t, inplace=True), lambda t: F.hardsigmoid(t, inplace=True)),
    ("hardswish_", lambda t: ha.hardswish(t, inplace=True), lambda t: F.hardswish(t, inplace=True)),
    ("relu6_", lambda t: ha.relu6(t, inplace=True), lambda t: F.relu6(t, inplace=True)),
    ("hardtanh_(-1, 1)", lambda t: ha.hardtanh(t, -1.0, 1.0, True), lambda t: F.hardtanh(t, -1.0, 1.0, True)),
    ("hardtanh_(-0.3, 0.7)", lambda t: ha.hardtanh(t, -0.3, 0.7, True), lambda t: F.hardtanh(t, -0.3, 0.7, True)),
    ("torch.ops.hardact.hardswish_", lambda t: (ops.hardswish_(t), t)[1], lambda t: F.hardswish(t, inplace=True)),
    ("HardSigmoid(inplace=True)", ha.HardSigmoid(inplace=True), nn.Hardsigmoid(inplace=True)),
    ("ReLU6(inplace=True)", ha.ReLU6(inplace=True), nn.ReLU6(inplace=True)),
]


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16, torch.float16), ids=NAMES.get)
def test_inplace_autograd(checks, generator, dtype) -> None:
    """The in-place forms differentiate as PyTorch's do: on a tensor and on a view of it, gradient and
    second derivative bit for bit against F.*(inplace=True) (PyTorch has no second derivative of
    hardsigmoid; there the exact one is zero). hardtanh_ with bounds exact in the dtype keeps its
    output for the gradient, with (-0.3, 0.7) in 16 bits a copy of the input: both paths run. Then a
    small network with in-place modules trains to the same gradients as with torch.nn's."""
    for what, ours_fn, theirs_fn in INPLACE_CASES:
        for where in ("tensor", "view [5:]"):
            source = salted_random(4099, dtype, generator)
            grad = salted_random(4099, dtype, generator)
            v = salted_random(4099, dtype, generator)
            computed = {}
            for side, function in (("ours", ours_fn), ("theirs", theirs_fn)):
                leaf = source.clone().requires_grad_()
                base = leaf * 1.0  # exact: a non-leaf that may be modified in place
                target = base if where == "tensor" else base[5:]
                returned = function(target)
                (dx,) = torch.autograd.grad(base, leaf, grad, create_graph=True)
                try:
                    (ddx,) = torch.autograd.grad(dx, leaf, v, allow_unused=True)
                except RuntimeError as error:  # PyTorch: hardsigmoid_backward has no derivative
                    if "not implemented" not in str(error):
                        raise
                    ddx = None
                computed[side] = (returned is target, base.detach(), dx.detach(),
                                  torch.zeros_like(source) if ddx is None else ddx)
            label = f"{what} {NAMES[dtype]} on a {where}"
            checks.record("" if computed["ours"][0] else "returned another tensor", f"{label}: returns its input")
            for index, quantity in ((1, "output"), (2, "gradient"), (3, "second derivative")):
                checks.record(mismatch_report(computed["ours"][index], computed["theirs"][index], source),
                              f"{label}: {quantity}")


@pytest.mark.cuda
def test_training_step_with_inplace_modules(checks, generator) -> None:
    # A training step with in-place modules, as timm builds them.
    torch.backends.cudnn.deterministic = True
    inputs = torch.randn(64, 96, device="cuda", generator=generator)
    target = torch.randn(64, 32, device="cuda", generator=generator)

    def network(activations):
        return nn.Sequential(nn.Linear(96, 128), nn.BatchNorm1d(128), activations[0], nn.Linear(128, 128),
                             activations[1], nn.Linear(128, 64), activations[2], nn.Linear(64, 32)).cuda()

    torch.manual_seed(11)
    theirs = network([nn.Hardswish(inplace=True), nn.ReLU6(inplace=True), nn.Hardsigmoid(inplace=True)])
    ours = network([nn.Identity()] * 3)
    ours.load_state_dict(theirs.state_dict())
    for index, module in zip((2, 4, 6), (ha.HardSwish(inplace=True), ha.ReLU6(inplace=True),
                                         ha.HardSigmoid(inplace=True))):
        ours[index] = module
    for model in (ours, theirs):
        F.mse_loss(model(inputs), target).backward()
    for (name, p_ours), p_theirs in zip(ours.named_parameters(), theirs.parameters()):
        checks.record(mismatch_report(p_ours.grad, p_theirs.grad), f"training step with in-place modules: {name}.grad")


@pytest.mark.cuda
def test_compile_inductor(checks, generator) -> None:
    """Inductor, fullgraph=True: the chain of every op, forward and gradient, bit for bit against
    eager PyTorch with F.*; then each op alone."""
    # The functions become F.*'s under compile: the same bits as torch.compile of F.*. The ops called
    # directly stay hardact's kernels: the same bits as eager F.*.
    for what, chain, reference, compile_reference in [("functions", hardact_chain, reference_chain, True),
                                                      ("torch.ops.hardact", ops_chain, reference_chain, False)]:
        torch._dynamo.reset()
        compiled_chain = torch.compile(chain, fullgraph=True)
        expected_chain = torch.compile(reference, fullgraph=True) if compile_reference else reference
        against = "compiled F.*" if compile_reference else "eager F.*"
        for dtype in (torch.float32, torch.bfloat16):
            for step in range(2):  # the second call reuses the compiled code
                x = salted_random(64 * 1031, dtype, generator).view(64, 1031)
                ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
                try:
                    y_ours = compiled_chain(ours)
                    y_theirs = expected_chain(theirs)
                except Exception as error:  # noqa: BLE001
                    checks.record(f"{type(error).__name__}: {str(error)[:600]}", f"compile {what} {NAMES[dtype]}")
                    break
                label = f"compiled {what} chain {NAMES[dtype]} call {step} vs {against}"
                checks.record(mismatch_report(y_ours, y_theirs, x), f"{label}: forward")
                grad = salted_random(x.numel(), dtype, generator).view_as(x)
                y_ours.backward(grad)
                y_theirs.backward(grad)
                checks.record(mismatch_report(ours.grad, theirs.grad, x), f"{label}: dx")
    # Each op alone (Inductor calls the CUDA kernel as an extern kernel), and a whole model.
    x = salted_random(1 << 20, torch.float32, generator)
    for name, reference, extra in OP_CASES:
        compiled_op = torch.compile(lambda t, name=name, extra=extra: getattr(ops, name)(t, *extra), fullgraph=True)
        checks.record(mismatch_report(compiled_op(x), reference(x), x), f"compiled hardact::{name}")
    model = ActivationStack(256).cuda()
    inputs = torch.randn(32, 256, device="cuda", generator=generator)
    try:
        torch.compile(model, fullgraph=True)(inputs).sum().backward()
        checks.record("", "compiled model with nn.Linear, forward and backward")
    except Exception as error:  # noqa: BLE001
        checks.record(f"{type(error).__name__}: {str(error)[:600]}", "compiled model with nn.Linear")


@pytest.mark.cuda
def test_cuda_graph(checks, generator) -> None:
    """Capture every form once, replay with new inputs."""
    static_x = salted_random(1024 * 1031, torch.bfloat16, generator).view(1024, 1031)
    static_grad = salted_random(1024 * 1031, torch.bfloat16, generator).view(1024, 1031)
    static_out = torch.empty_like(static_x)
    graph = torch.cuda.CUDAGraph()

    def work():
        y = ops.hardsigmoid(static_x)
        ops.hardtanh_(y, 0.25, 0.75)
        ops.hardswish.out(static_x, out=static_out)
        dx = ops.relu6_backward(static_grad, static_x)
        gapped = ops.hardtanh(static_x[:, ::2], -0.5, 0.5)  # the copying path, captured too
        return y, dx, gapped

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # one warm-up run outside capture (module loading), as PyTorch advises
        work()
    torch.cuda.current_stream().wait_stream(side)
    try:
        with torch.cuda.graph(graph):
            y, dx, gapped = work()
    except Exception as error:  # noqa: BLE001  (a capture failure is the finding)
        checks.record(f"{type(error).__name__}: {error}", "CUDA graph capture")
        return
    for replay in range(3):
        static_x.copy_(salted_random(static_x.numel(), torch.bfloat16, generator).view_as(static_x))
        static_grad.copy_(salted_random(static_x.numel(), torch.bfloat16, generator).view_as(static_x))
        graph.replay()
        x_ref = static_x.clone().requires_grad_()
        F.relu6(x_ref).backward(static_grad)
        for what, got, expected in [
            ("hardsigmoid then hardtanh_", y, F.hardtanh(F.hardsigmoid(static_x), 0.25, 0.75)),
            ("hardswish.out", static_out, F.hardswish(static_x)),
            ("relu6_backward", dx, x_ref.grad),
            ("hardtanh on x[:, ::2]", gapped, F.hardtanh(static_x[:, ::2], -0.5, 0.5)),
        ]:
            checks.record(mismatch_report(got, expected, static_x), f"CUDA graph replay {replay}: {what}")
