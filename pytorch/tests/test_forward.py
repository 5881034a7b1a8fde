"""Tests of the hardact operators' forward results against PyTorch on the GPU, bit for bit, through
the installed hardact_torch package (every test needs a GPU: marked cuda).

    pytest pytorch/tests/test_forward.py -k bfloat16

Ops: hardsigmoid, hardtanh with bounds (-1, 1), (0, 6), (-0.3, 0.7), (-2.5, -0.5) and (0.5, 0.5),
hardswish and relu6, each in its three forms (functional, in place, out=) and through the
functional API and modules (ha.hardsigmoid, ha.HardTanh, ...). float32, float16 and bfloat16 against
F.*; float64 against F.* for hardtanh and relu6, and against the exact formulas for hardsigmoid
(min(max(x + 3, 0), 6) / 6) and hardswish (x * min(max(x + 3, 0), 6) / 6) computed in float64 with a
correctly rounded division: hardact saturates hardsigmoid at exactly 1, PyTorch at 1.0000000298.
Data: random, salted with NaN, +-inf, +-0, subnormals, the extremes and the kinks; shapes from 0
elements to 1,000,003, 3-D, 2-D with odd rows; the tensor itself and views with an offset (x[1:],
x.view(-1)[3:], misaligned for vector access); in place on a view (the element before it must stay
untouched); out-of-place calls must leave their input alone; on a side stream.
Comparison: NaN positions must match; all other elements must have identical bits (-0.0 != +0.0).
"""

from __future__ import annotations

import importlib.util
import math
import pathlib

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import hardact_torch as ha
from checklib import FLOAT_DTYPES, HARDTANH_BOUNDS, NAMES, mismatch_report, salted_random

ops = torch.ops.hardact
pytestmark = pytest.mark.cuda

SHAPES = [(0,), (1,), (7,), (1000003,), (3, 5, 17), (257, 1031)]


def exact_float64(formula):
    """formula(x) / 6 in float64, correctly rounded: PyTorch on CUDA turns a division by a Python
    scalar into a multiplication by its reciprocal, so divide by a tensor of sixes."""
    def compute(x):
        numerator = formula(x)
        return torch.div(numerator, torch.full_like(numerator, 6.0))
    return compute


def operations():
    """(label, op name, extra args, F.* reference, float64 reference)."""
    yield ("hardsigmoid", "hardsigmoid", (), F.hardsigmoid,
           exact_float64(lambda x: torch.clamp(x + 3.0, 0.0, 6.0)))
    for bounds in HARDTANH_BOUNDS:
        reference = lambda x, bounds=bounds: F.hardtanh(x, *bounds)  # noqa: E731
        yield f"hardtanh{bounds}", "hardtanh", bounds, reference, reference
    yield ("hardswish", "hardswish", (), F.hardswish,
           exact_float64(lambda x: x * torch.clamp(x + 3.0, 0.0, 6.0)))
    yield "relu6", "relu6", (), F.relu6, F.relu6


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=NAMES.get)
def test_values(checks, generator, dtype) -> None:
    for shape in SHAPES:
        base = salted_random(math.prod(shape), dtype, generator).view(shape)
        cases = [("contiguous", base)]
        if base.numel() > 1:
            cases += [("x[1:]", base[1:]), ("x.view(-1)[3:]", base.reshape(-1)[3:])]
        for layout, x in cases:
            x_before = x.clone()
            for label, name, extra, reference, reference64 in operations():
                what = f"{NAMES[dtype]} {label} shape {tuple(x.shape)} {layout}"
                expected = (reference64 if dtype == torch.float64 else reference)(x)
                got = getattr(ops, name)(x, *extra)
                checks.record("" if x.numel() == 0 or got.data_ptr() != x.data_ptr() else
                              "returned its input", what + " (a new tensor)")
                checks.record(mismatch_report(got, expected, x), what)
                out = torch.full_like(x, math.nan)
                returned = getattr(ops, name).out(x, *extra, out=out)
                checks.record(mismatch_report(out, expected, x) or ("" if returned is None else "returned a value"),
                              what + " out=")
            checks.record(mismatch_report(x, x_before), f"{NAMES[dtype]} {layout}: input left alone")

    # In place on a view with an offset: the view is updated, the element before it is not.
    for label, name, extra, reference, reference64 in operations():
        what = f"{NAMES[dtype]} {label} in place on x[1:]"
        storage = salted_random(4099, dtype, generator)
        original = storage.clone()
        view = storage[1:]
        returned = getattr(ops, name + "_")(view, *extra)
        expected = (reference64 if dtype == torch.float64 else reference)(original[1:])
        report = mismatch_report(view, expected, original[1:]) + mismatch_report(storage[:1], original[:1])
        checks.record(report or ("" if returned is None else "returned a value"), what)
    if dtype == torch.float64:
        x = torch.tensor([3.0, 10.0, math.inf], dtype=torch.float64, device="cuda")
        print(f"float64 hardsigmoid of [3, 10, inf]: hardact {ops.hardsigmoid(x).tolist()}, "
              f"F.hardsigmoid {F.hardsigmoid(x).tolist()} (documented difference)")


def load_kernelbench_model():
    """pytorch/examples/kernelbench_model.py, loaded by path as a benchmark harness loads it."""
    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "kernelbench_model.py"
    spec = importlib.util.spec_from_file_location("kernelbench_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Model(nn.Module):
    """The KernelBench-style model ModelNew (examples/kernelbench_model.py) replaces."""

    def __init__(self, kind="hardsigmoid", min_val=-1.0, max_val=1.0):
        super().__init__()
        self.kind, self.min_val, self.max_val = kind, min_val, max_val

    def forward(self, x):
        if self.kind == "hardsigmoid":
            return F.hardsigmoid(x)
        return F.hardtanh(x, min_val=self.min_val, max_val=self.max_val)


def test_python_api(checks, generator) -> None:
    """The functions and modules against torch.nn.functional and torch.nn, out of place and in place."""
    ModelNew = load_kernelbench_model().ModelNew
    pairs = [
        (lambda inplace: ha.HardSigmoid(inplace), lambda inplace: nn.Hardsigmoid(inplace), "HardSigmoid"),
        (lambda inplace: ha.HardTanh(0.0, 6.0, inplace), lambda inplace: nn.Hardtanh(0.0, 6.0, inplace), "HardTanh(0, 6)"),
        (lambda inplace: ha.HardSwish(inplace), lambda inplace: nn.Hardswish(inplace), "HardSwish"),
        (lambda inplace: ha.ReLU6(inplace), lambda inplace: nn.ReLU6(inplace), "ReLU6"),
        (lambda inplace: ModelNew(inplace=inplace), lambda inplace: Model(), "ModelNew()"),
        (lambda inplace: ModelNew("hardtanh", inplace=inplace), lambda inplace: Model("hardtanh"), "ModelNew(hardtanh)"),
    ]
    for dtype in (torch.float32, torch.bfloat16):
        for ours, theirs, label in pairs:
            x = salted_random(64 * 1000, dtype, generator).view(64, 1000)
            expected = theirs(False)(x)
            checks.record(mismatch_report(ours(False)(x), expected, x), f"{label} {NAMES[dtype]}")
            target = x.clone()
            returned = ours(True)(target)
            checks.record(mismatch_report(target, expected, x) or ("" if returned is target else "not its input"),
                          f"{label} {NAMES[dtype]} inplace=True")
    x = salted_random(1000, torch.float32, generator)
    for function, reference in [(ha.hardsigmoid, F.hardsigmoid), (ha.hardswish, F.hardswish), (ha.relu6, F.relu6),
                                (lambda t: ha.hardtanh(t, -2.5, -0.5), lambda t: F.hardtanh(t, -2.5, -0.5))]:
        checks.record(mismatch_report(function(x), reference(x), x), f"functional API {getattr(function, '__name__', 'hardtanh')}")


def test_streams(checks, generator) -> None:
    """The work goes to PyTorch's current stream."""
    x = salted_random(1024 * 1031, torch.float32, generator).view(1024, 1031)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        on_side = ops.hardtanh(x, -0.3, 0.7)
        in_place = x.clone()
        ops.hardswish_(in_place)
    torch.cuda.current_stream().wait_stream(side)
    checks.record(mismatch_report(on_side, F.hardtanh(x, -0.3, 0.7), x), "hardtanh on a side stream")
    checks.record(mismatch_report(in_place, F.hardswish(x), x), "hardswish_ on a side stream")
