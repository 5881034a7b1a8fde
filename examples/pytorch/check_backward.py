#!/usr/bin/env python3
"""Checks hardact's activation family against PyTorch on the GPU, bit for bit.

    python3 examples/pytorch/check_backward.py               # all checks
    python3 examples/pytorch/check_backward.py --build-only  # compile + import only (no GPU needed)

Backward (the point of this script): HardSigmoidBackward, HardSwishBackward and HardTanhBackward
(bounds (-1, 1), (0, 6) = relu6, (-0.3, 0.7), (-2.5, -0.5), (0.5, 0.5)), called through the
two-input launcher, against the gradients torch.autograd computes for F.hardsigmoid, F.hardswish,
F.hardtanh and F.relu6, in float32, float16, bfloat16 and float64. float16 and bfloat16: every one
of the 65,536 x bit patterns, with grads that include NaN, +-inf, +-0 and subnormals. float32 and
float64: random values salted with the same special values and the points +-3 and the bounds.
Also in place (dx written over grad) and on views with an offset (misaligned pointers).
One documented difference: float64 HardSigmoidBackward is grad / 6 correctly rounded (the derivative
of hardact's exact float64 HardSigmoid); PyTorch multiplies by float(1/6) widened to float64. That
row is compared with the exact formula and the count that differs from autograd is printed.

Forward extras: F.hardswish and F.relu6 (float64 HardSwish: x * relu6(x + 3) / 6 correctly
rounded, where PyTorch multiplies by float(1/6)); mixed dtypes F.hardsigmoid(x.float()).to(dtype)
for float32 -> bfloat16 / float16 / float8_e4m3fn / float8_e5m2, bfloat16 -> float32 / float8,
float16 -> float32; HardSwish -> float8, where PyTorch <= 2.11 does not saturate (e4m3fn gives NaN
beyond 464, e5m2 gives inf) and hardact saturates: every difference must be such a position; a
fused chain against (x * s).clamp(lo, hi) + b and HardSigmoid::affine against
torch.clamp(x * alpha + beta, 0, 1), both float32.

Comparison: NaN positions must match (any NaN matches any NaN); every other element must have the
same bits (so -0.0 and +0.0 differ). Exit status: 0 all matched, 1 a mismatch, 2 no CUDA GPU.
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys
import time

import torch
import torch.nn.functional as F

_HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
import hardact_torch as ha  # noqa: E402  (include directory, arch flags and nvcc defines are shared)

_SOURCE = _HERE / "hardact_family_torch.cu"
_EXTENSION_NAME = "hardact_family_ext"

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
NAMES = {
    torch.float32: "float32", torch.float64: "float64", torch.float16: "float16", torch.bfloat16: "bfloat16",
    torch.float8_e4m3fn: "float8_e4m3fn", torch.float8_e5m2: "float8_e5m2",
}
BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
HARDTANH_BOUNDS = [(-1.0, 1.0), (0.0, 6.0), (-0.3, 0.7), (-2.5, -0.5), (0.5, 0.5)]


# ---- building the extension ----------------------------------------------------------------------

def load_family_extension(verbose: bool = False):
    return ha.build_extension(_EXTENSION_NAME, _SOURCE, verbose)


# ---- comparison and data -------------------------------------------------------------------------

class Results:
    """Counts checks; prints each failure as it happens."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def record(self, report: str, what: str) -> None:
        if report:
            self.failed += 1
            print(f"  FAIL {what}: {report}")
        else:
            self.passed += 1


def as_bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(BITS[t.element_size()])


def is_nan(t: torch.Tensor) -> torch.Tensor:
    return torch.isnan(t.float() if t.element_size() == 1 else t)


def differing(got: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """Mask of elements that differ: NaN against non-NaN, or different bits between non-NaNs."""
    got_nan, expected_nan = is_nan(got), is_nan(expected)
    return (got_nan != expected_nan) | (~expected_nan & (as_bits(got) != as_bits(expected)))


def show(t: torch.Tensor, index: int) -> str:
    flat = t.reshape(-1)
    bits = int(as_bits(flat[index : index + 1])) & ((1 << (8 * t.element_size())) - 1)
    return f"{flat[index].float().item()!r} (0x{bits:x})"


def mismatch_report(got: torch.Tensor, expected: torch.Tensor, *inputs: torch.Tensor) -> str:
    """'' when got equals expected bit for bit (NaN matching NaN), else the count and the first case."""
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return f"shape/dtype {tuple(got.shape)} {got.dtype} vs {tuple(expected.shape)} {expected.dtype}"
    mask = differing(got, expected).reshape(-1)
    count = int(mask.sum())
    if count == 0:
        return ""
    first = int(mask.nonzero()[0])
    shown_inputs = ", ".join(show(t, first) for t in inputs)
    return (f"{count} of {got.numel()} differ; first at {first}: inputs {shown_inputs}, "
            f"got {show(got, first)}, expected {show(expected, first)}")


def special_values(dtype: torch.dtype) -> list[float]:
    info = torch.finfo(dtype)
    tiny = info.tiny
    return [math.nan, math.inf, -math.inf, 0.0, -0.0, tiny, -tiny, tiny / 4, -tiny / 4, info.max, info.min,
            -3.0, 3.0, -6.0, 6.0, 0.0, -1.0, 1.0, -0.3, 0.7, -2.5, -0.5, 0.5, 2.9999998, -2.9999998,
            3.0000002, -3.0000002, 1e-30, -1e-30, 0.1]


def salted_random(numel: int, dtype: torch.dtype, generator: torch.Generator, scale: float = 4.0) -> torch.Tensor:
    """Normal values times `scale`, with the special values at the start and at ~2% of positions."""
    x = (torch.randn(numel, generator=generator, device="cuda", dtype=torch.float64) * scale).to(dtype)
    specials = torch.tensor(special_values(dtype), dtype=torch.float64, device="cuda").to(dtype)
    head = min(numel, specials.numel())
    x[:head] = specials[:head]
    salted = torch.randint(0, numel, (numel // 50,), generator=generator, device="cuda")
    x[salted] = specials[torch.arange(salted.numel(), device="cuda") % specials.numel()]
    return x


def every_pattern(dtype: torch.dtype) -> torch.Tensor:
    """All 65,536 values of a 16-bit dtype."""
    return torch.arange(-32768, 32768, dtype=torch.int32, device="cuda").to(torch.int16).view(dtype)


def grad_and_x(dtype: torch.dtype, generator: torch.Generator):
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


# ---- checks -------------------------------------------------------------------------------------

def check_backward(ext, results: Results, generator: torch.Generator) -> None:
    for dtype in FLOAT_DTYPES:
        failed_before, total_before = results.failed, results.passed + results.failed
        for grad, x in grad_and_x(dtype, generator):
            cases = [("hardsigmoid", F.hardsigmoid, lambda g, v, o: ext.hardsigmoid_backward(g, v, o)),
                     ("hardswish", F.hardswish, lambda g, v, o: ext.hardswish_backward(g, v, o)),
                     ("relu6", F.relu6, lambda g, v, o: ext.hardtanh_backward(g, v, o, 0.0, 6.0))]
            for low, high in HARDTANH_BOUNDS:
                cases.append((f"hardtanh({low}, {high})", lambda v, low=low, high=high: F.hardtanh(v, low, high),
                              lambda g, v, o, low=low, high=high: ext.hardtanh_backward(g, v, o, low, high)))
            for name, forward, ours in cases:
                what = f"{NAMES[dtype]} {name} backward"
                expected = autograd_gradient(forward, grad, x)
                if name == "hardsigmoid" and dtype == torch.float64:
                    autograd = expected
                    inside = (x > -3) & (x < 3)
                    expected = torch.where(inside, torch.div(grad, torch.full_like(grad, 6.0)), torch.zeros_like(grad))
                    out = torch.empty_like(x)
                    ours(grad, x, out)
                    print(f"  float64 hardsigmoid backward: grad / 6 differs from autograd's grad * float(1/6) "
                          f"on {int(differing(out, autograd).sum())} of {x.numel()} elements (documented)")
                out = torch.empty_like(x)
                ours(grad, x, out)
                results.record(mismatch_report(out, expected, grad, x), what)
                # dx written over grad, and misaligned views (one element in).
                in_place = grad.clone()
                ours(in_place, x, in_place)
                results.record(mismatch_report(in_place, expected, grad, x), what + " in place over grad")
                if x.numel() > 1:
                    view_out = torch.empty(x.numel(), dtype=dtype, device="cuda")[1:]
                    ours(grad[1:], x[1:], view_out)
                    results.record(mismatch_report(view_out, expected[1:], grad[1:], x[1:]), what + " on x[1:]")
        checked = results.passed + results.failed - total_before
        failed = results.failed - failed_before
        print(f"{NAMES[dtype]:9} backward {'bit-exact' if failed == 0 else 'MISMATCH'}: {checked} checks, {failed} failed")


def check_forward(ext, results: Results, generator: torch.Generator) -> None:
    for dtype in FLOAT_DTYPES:
        failed_before = results.failed
        if dtype in (torch.float16, torch.bfloat16):
            inputs = [every_pattern(dtype), salted_random(1000003, dtype, generator)[1:]]
        else:
            inputs = [salted_random(1 << 22, dtype, generator), salted_random(1000003, dtype, generator)[3:]]
        for x in inputs:
            out = torch.empty_like(x)
            ext.hardswish(x, out)
            if dtype == torch.float64:  # x * relu6(x + 3) / 6, correctly rounded (a tensor division)
                product = x * torch.clamp(x + 3.0, 0.0, 6.0)
                expected = torch.div(product, torch.full_like(product, 6.0))
            else:
                expected = F.hardswish(x)
            results.record(mismatch_report(out, expected, x), f"{NAMES[dtype]} hardswish")
            ext.relu6(x, out)
            results.record(mismatch_report(out, F.relu6(x), x), f"{NAMES[dtype]} relu6")
        print(f"{NAMES[dtype]:9} hardswish, relu6 {'bit-exact' if results.failed == failed_before else 'MISMATCH'}")


def check_mixed(ext, results: Results, generator: torch.Generator) -> None:
    pairs = [(torch.float32, torch.bfloat16), (torch.float32, torch.float16), (torch.float32, torch.float8_e4m3fn),
             (torch.float32, torch.float8_e5m2), (torch.bfloat16, torch.float32), (torch.bfloat16, torch.float8_e4m3fn),
             (torch.bfloat16, torch.float8_e5m2), (torch.float16, torch.float32)]
    for source, target in pairs:
        x = every_pattern(source) if source != torch.float32 else salted_random(1 << 22, source, generator)
        out = torch.empty(x.shape, dtype=target, device="cuda")
        ext.activation_to("hardsigmoid", x, out)
        # PyTorch: widen exactly, hardsigmoid in float, one cast.
        expected = F.hardsigmoid(x.float()).to(target)
        results.record(mismatch_report(out, expected, x), f"hardsigmoid {NAMES[source]} -> {NAMES[target]}")

    # HardSwish is unbounded: beyond the fp8 range PyTorch's cast gives NaN (e4m3fn, <= 2.11) or inf
    # (e5m2); hardact saturates. Every difference must be such a position, holding +-max.
    for source, target in [(torch.float32, torch.float8_e4m3fn), (torch.float32, torch.float8_e5m2),
                           (torch.bfloat16, torch.float8_e4m3fn)]:
        x = every_pattern(source) if source != torch.float32 else salted_random(1 << 22, source, generator, 200.0)
        out = torch.empty(x.shape, dtype=target, device="cuda")
        ext.activation_to("hardswish", x, out)
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
        results.record(report, f"hardswish {NAMES[source]} -> {NAMES[target]}")
        print(f"  hardswish {NAMES[source]} -> {NAMES[target]}: {int(mask.sum())} elements saturated by hardact "
              f"where PyTorch's cast gives NaN/inf")
    print(f"mixed dtypes {'checked' if results.failed == 0 else 'MISMATCH'}")


def check_fused(ext, results: Results, generator: torch.Generator) -> None:
    x = salted_random(1 << 22, torch.float32, generator)
    out = torch.empty_like(x)
    for scale, low, high, offset in [(2.0, -1.0, 1.0, 0.5), (0.1, 0.0, 6.0, -3.0), (-3.5, -0.25, 0.75, 1e-3)]:
        ext.scale_clamp_offset(x, out, scale, low, high, offset)
        expected = torch.clamp(x * scale, low, high) + offset
        results.record(mismatch_report(out, expected, x), f"chain(Scale{{{scale}}}, HardTanh{{{low}, {high}}}, "
                                                            f"Offset{{{offset}}}) vs three PyTorch ops")
    for alpha, beta in [(0.2, 0.5), (1.0 / 6.0, 0.5), (-2.5, 0.25)]:
        ext.hardsigmoid_affine(x, out, alpha, beta)
        expected = torch.clamp(x * alpha + beta, 0.0, 1.0)
        results.record(mismatch_report(out, expected, x), f"HardSigmoid::affine({alpha}, {beta})")
    print("fused chain and affine HardSigmoid (float32) checked")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-only", action="store_true", help="compile and import the extension, then stop")
    parser.add_argument("--verbose", action="store_true", help="show the extension's build commands")
    args = parser.parse_args()

    have_gpu = torch.cuda.is_available()
    if not have_gpu and not args.build_only:
        print("check_backward.py: no CUDA GPU visible to PyTorch (torch.cuda.is_available() is False); "
              "nothing was run. (--build-only compiles the extension without a GPU.)", file=sys.stderr)
        return 2
    print(f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}), "
          f"{torch.cuda.get_device_name() if have_gpu else 'no GPU (build only)'}")
    started = time.time()
    ext = load_family_extension(verbose=args.verbose)
    print(f"extension {ext.__name__} ready in {time.time() - started:.1f} s")
    if args.build_only:
        return 0

    results = Results()
    generator = torch.Generator(device="cuda").manual_seed(5)
    print("\nbit-exact checks (NaN matches NaN, all other bits equal):")
    check_backward(ext, results, generator)
    check_forward(ext, results, generator)
    check_mixed(ext, results, generator)
    check_fused(ext, results, generator)
    print(f"\n{results.passed} passed, {results.failed} failed")
    return 0 if results.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
