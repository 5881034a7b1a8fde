"""Tests of hardact's backward ops and activation family against PyTorch on the GPU, bit for bit,
through the installed hardact_torch package (every test needs a GPU: marked cuda).

    pytest pytorch/tests/test_backward.py -k "float16 or mixed"

Backward (the point of this module): torch.ops.hardact.hardsigmoid_backward, hardswish_backward,
relu6_backward and hardtanh_backward (bounds (-1, 1), (0, 6), (-0.3, 0.7), (-2.5, -0.5),
(0.5, 0.5)), i.e. HardSigmoidBackward, HardSwishBackward and HardTanhBackward through the
two-input launcher, against the gradients torch.autograd computes for F.hardsigmoid, F.hardswish,
F.hardtanh and F.relu6, in float32, float16, bfloat16 and float64. float16 and bfloat16: every one
of the 65,536 x bit patterns, with grads that include NaN, +-inf, +-0 and subnormals. float32 and
float64: random values salted with the same special values and the points +-3 and the bounds.
Also on views with an offset (misaligned pointers).
One documented difference: float64 HardSigmoidBackward is grad / 6 correctly rounded (the derivative
of hardact's exact float64 HardSigmoid); PyTorch multiplies by float(1/6) widened to float64. That
row is compared with the exact formula and the count that differs from autograd is printed.

Forward extras: torch.ops.hardact.hardswish and relu6 against F.hardswish and F.relu6 (float64 HardSwish: x * relu6(x + 3) / 6 correctly
rounded, where PyTorch multiplies by float(1/6)); mixed dtypes F.hardsigmoid(x.float()).to(dtype)
for float32 -> bfloat16 / float16 / float8_e4m3fn / float8_e5m2, bfloat16 -> float32 / float8,
float16 -> float32 (through the internal op hardact::_activation_to); HardSwish -> float8, where PyTorch <= 2.11 does not saturate (e4m3fn gives NaN
beyond 464, e5m2 gives inf) and hardact saturates: every difference must be such a position; a
fused chain against (x * s).clamp(lo, hi) + b and HardSigmoid::affine against
torch.clamp(x * alpha + beta, 0, 1), both float32.

Comparison: NaN positions must match (any NaN matches any NaN); every other element must have the
same bits (so -0.0 and +0.0 differ).
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import hardact_torch as ha
from checklib import (FLOAT_DTYPES, HARDTANH_BOUNDS, NAMES, differing, every_pattern, is_nan, mismatch_report,
                      salted_random, show)

ops = torch.ops.hardact
pytestmark = pytest.mark.cuda
SEED = 5  # the generator fixture's seed (conftest.py)


def grad_and_x(dtype: torch.dtype, generator):
    """(grad, x) pairs to test: every x pattern against a few grads (16-bit), random pairs (else)."""
    if dtype in (torch.float16, torch.bfloat16):
        x = every_pattern(dtype)
        grads = [1.0, -2.5, 0.1, 3e-5, math.nan, math.inf, -0.0, torch.finfo(dtype).tiny / 4]
        for g in grads:
            yield torch.full_like(x, g), x
        # And random grads (different bits for every x).
        yield salted_random(x.numel(), dtype, generator), x
    else:
        numel = 1 << 22
        yield salted_random(numel, dtype, generator), salted_random(numel, dtype, generator)


def autograd_gradient(forward, grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    leaf = x.detach().clone().requires_grad_()
    forward(leaf).backward(grad)
    return leaf.grad


# ---- tests (all need a GPU) ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=NAMES.get)
def test_backward(checks, generator, dtype) -> None:
    for grad, x in grad_and_x(dtype, generator):
        cases = [("hardsigmoid", F.hardsigmoid, ops.hardsigmoid_backward),
                 ("hardswish", F.hardswish, ops.hardswish_backward),
                 ("relu6", F.relu6, ops.relu6_backward)]
        for low, high in HARDTANH_BOUNDS:
            cases.append((f"hardtanh({low}, {high})", lambda v, low=low, high=high: F.hardtanh(v, low, high),
                          lambda g, v, low=low, high=high: ops.hardtanh_backward(g, v, low, high)))
        for name, forward, ours in cases:
            what = f"{NAMES[dtype]} {name} backward"
            expected = autograd_gradient(forward, grad, x)
            if name == "hardsigmoid" and dtype == torch.float64:
                autograd = expected
                inside = (x > -3) & (x < 3)
                expected = torch.where(inside, torch.div(grad, torch.full_like(grad, 6.0)), torch.zeros_like(grad))
                print(f"  float64 hardsigmoid backward: grad / 6 differs from autograd's grad * float(1/6) "
                      f"on {int(differing(ours(grad, x), autograd).sum())} of {x.numel()} elements (documented)")
            checks.record(mismatch_report(ours(grad, x), expected, grad, x), what)
            if x.numel() > 1:  # views one element in: misaligned for vector access
                checks.record(mismatch_report(ours(grad[1:], x[1:]), expected[1:], grad[1:], x[1:]),
                              what + " on x[1:]")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=NAMES.get)
def test_hardswish_relu6(checks, generator, dtype) -> None:
    if dtype in (torch.float16, torch.bfloat16):
        inputs = [every_pattern(dtype), salted_random(1000003, dtype, generator)[1:]]
    else:
        inputs = [salted_random(1 << 22, dtype, generator), salted_random(1000003, dtype, generator)[3:]]
    for x in inputs:
        out = ops.hardswish(x)
        if dtype == torch.float64:  # x * relu6(x + 3) / 6, correctly rounded (a tensor division)
            product = x * torch.clamp(x + 3.0, 0.0, 6.0)
            expected = torch.div(product, torch.full_like(product, 6.0))
        else:
            expected = F.hardswish(x)
        checks.record(mismatch_report(out, expected, x), f"{NAMES[dtype]} hardswish")
        checks.record(mismatch_report(ops.relu6(x), F.relu6(x), x), f"{NAMES[dtype]} relu6")


def test_mixed_dtypes(checks, generator) -> None:
    pairs = [(torch.float32, torch.bfloat16), (torch.float32, torch.float16), (torch.float32, torch.float8_e4m3fn),
             (torch.float32, torch.float8_e5m2), (torch.bfloat16, torch.float32), (torch.bfloat16, torch.float8_e4m3fn),
             (torch.bfloat16, torch.float8_e5m2), (torch.float16, torch.float32)]
    for source, target in pairs:
        x = every_pattern(source) if source != torch.float32 else salted_random(1 << 22, source, generator)
        out = torch.empty(x.shape, dtype=target, device="cuda")
        ops._activation_to(x, "hardsigmoid", out=out)
        # PyTorch: widen exactly, hardsigmoid in float, one cast.
        expected = F.hardsigmoid(x.float()).to(target)
        checks.record(mismatch_report(out, expected, x), f"hardsigmoid {NAMES[source]} -> {NAMES[target]}")

    # HardSwish is unbounded: beyond the fp8 range PyTorch's cast gives NaN (e4m3fn, <= 2.11) or inf
    # (e5m2); hardact saturates. Every difference must be such a position, holding +-max.
    for source, target in [(torch.float32, torch.float8_e4m3fn), (torch.float32, torch.float8_e5m2),
                           (torch.bfloat16, torch.float8_e4m3fn)]:
        x = every_pattern(source) if source != torch.float32 else salted_random(1 << 22, source, generator, 200.0)
        out = torch.empty(x.shape, dtype=target, device="cuda")
        ops._activation_to(x, "hardswish", out=out)
        wide = F.hardswish(x.float())
        expected = wide.to(target)
        mask = differing(out, expected)
        fp8_max = torch.finfo(target).max
        beyond = ~torch.isnan(wide) & (is_nan(expected) | torch.isinf(expected.float()))
        saturated = out.float().abs() == fp8_max
        unexplained = mask & ~(beyond & saturated)
        report = ""
        if int(unexplained.sum()):
            first = int(unexplained.reshape(-1).nonzero()[0])
            report = (f"{int(unexplained.sum())} differences not explained by saturation; first: input {show(x, first)}, "
                      f"got {show(out, first)}, PyTorch {show(expected, first)}")
        checks.record(report, f"hardswish {NAMES[source]} -> {NAMES[target]}")
        print(f"  hardswish {NAMES[source]} -> {NAMES[target]}: {int(mask.sum())} elements saturated by hardact "
              f"where PyTorch's cast gives NaN/inf")


def test_fused_chain_and_affine(checks, generator) -> None:
    x = salted_random(1 << 22, torch.float32, generator)
    for scale, low, high, offset in [(2.0, -1.0, 1.0, 0.5), (0.1, 0.0, 6.0, -3.0), (-3.5, -0.25, 0.75, 1e-3)]:
        out = ops._scale_clamp_offset(x, scale, low, high, offset)
        expected = torch.clamp(x * scale, low, high) + offset
        checks.record(mismatch_report(out, expected, x), f"chain(Scale{{{scale}}}, HardTanh{{{low}, {high}}}, "
                                                            f"Offset{{{offset}}}) vs three PyTorch ops")
    for alpha, beta in [(0.2, 0.5), (1.0 / 6.0, 0.5), (-2.5, 0.25)]:
        out = ops._hardsigmoid_affine(x, alpha, beta)
        expected = torch.clamp(x * alpha + beta, 0.0, 1.0)
        checks.record(mismatch_report(out, expected, x), f"HardSigmoid::affine({alpha}, {beta})")
