#!/usr/bin/env python3
"""Checks hardact's PyTorch binding bit for bit against F.hardsigmoid / F.hardtanh, then times both.

    python3 examples/pytorch/check_and_time.py              # checks, then timing at 4096 x 393216
    python3 examples/pytorch/check_and_time.py --no-timing  # checks only
    python3 examples/pytorch/check_and_time.py --build-only # compile + import + the checks needing no GPU

Checks: float32, float16 and bfloat16 against F.hardsigmoid and F.hardtanh (several bounds), float64
against F.hardtanh and, for HardSigmoid, against the exact formula min(max(x + 3, 0), 6) / 6 in
float64 (hardact saturates at exactly 1; PyTorch at 1.0000000298). Data: random, salted with NaN,
+-inf, +-0, subnormals and the kinks of both functions; contiguous tensors of several shapes, views
with an offset (x[1:]), in place, ModelNew against Model, gradients, and the Python errors.
Comparison: NaN positions must match (any NaN matches any NaN); every other element must have the
same bits, so -0.0 and +0.0 differ.

Exit status: 0 everything matched; 1 a mismatch or a failed check; 2 no CUDA GPU, nothing was run.
"""

from __future__ import annotations

import argparse
import math
import pathlib
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import hardact_torch as ha  # noqa: E402  (found through the path set above)

BITS_DTYPE = {torch.float32: torch.int32, torch.float64: torch.int64, torch.float16: torch.int16, torch.bfloat16: torch.int16}
DTYPE_NAMES = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16", torch.bfloat16: "bfloat16"}
HARDTANH_BOUNDS = [(-1.0, 1.0), (0.0, 6.0), (-0.3, 0.7), (-2.5, -0.5), (0.5, 0.5)]
SHAPES = [(0,), (1,), (7,), (1000003,), (3, 5, 17), (257, 1031)]


class Failures:
    """Collects check results; prints each line as it goes."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def record(self, ok: bool, what: str, detail: str = "") -> None:
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"  FAIL {what}{': ' + detail if detail else ''}")


# ---- comparison and data ------------------------------------------------------------------------

def mismatch_report(got: torch.Tensor, expected: torch.Tensor, source: torch.Tensor) -> str:
    """'' when got equals expected bit for bit (NaN matching NaN), else a description."""
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return f"shape/dtype {tuple(got.shape)} {got.dtype} vs {tuple(expected.shape)} {expected.dtype}"
    got_nan, expected_nan = torch.isnan(got), torch.isnan(expected)
    bits = BITS_DTYPE[got.dtype]
    differs = (got_nan != expected_nan) | (~expected_nan & (got.view(bits) != expected.view(bits)))
    count = int(differs.sum())
    if count == 0:
        return ""
    first = int(differs.reshape(-1).nonzero()[0])
    show = lambda t: f"{t.reshape(-1)[first].item()!r} (0x{int(t.reshape(-1)[first].view(bits)) & ((1 << (8 * t.element_size())) - 1):x})"
    return f"{count} of {got.numel()} elements differ; first at flat index {first}: input {show(source)}, got {show(got)}, expected {show(expected)}"


def special_values(dtype: torch.dtype) -> torch.Tensor:
    """Values where hand-written kernels go wrong, as a float64 tensor to convert."""
    tiny = torch.finfo(dtype).tiny
    values = [math.nan, math.inf, -math.inf, 0.0, -0.0, tiny / 2, -tiny / 2, tiny, -tiny,
              -3.0, 3.0, -1.0, 1.0, 6.0, -6.0, 0.1, 0.7, -0.3, -2.5, -0.5, 0.5,
              -2.9999998, 2.9999998, 1e-30, -1e-30, torch.finfo(dtype).max, torch.finfo(dtype).min]
    return torch.tensor(values, dtype=torch.float64)


def make_input(shape, dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    """Normal values scaled by 4 (both saturation sides and the linear part), with the special values
    at the start and at about 2% of random positions."""
    numel = math.prod(shape)
    x = (torch.randn(numel, generator=generator, device="cuda", dtype=torch.float32) * 4).to(dtype)
    if numel:
        specials = special_values(dtype).to(device="cuda").to(dtype)
        head = min(numel, specials.numel())
        x[:head] = specials[:head]
        salted = torch.randint(0, numel, (numel // 50,), generator=generator, device="cuda")
        x[salted] = specials[torch.arange(salted.numel(), device="cuda") % specials.numel()]
    return x.reshape(shape)


def exact_hardsigmoid_float64(x: torch.Tensor) -> torch.Tensor:
    """min(max(x + 3, 0), 6) / 6 in float64, correctly rounded.
    Divides by a tensor of sixes: on CUDA, PyTorch computes a division by a Python scalar as a
    multiplication by its reciprocal, which is not always the correctly rounded quotient."""
    relu6 = torch.clamp(x + 3.0, min=0.0, max=6.0)
    return torch.div(relu6, torch.full_like(relu6, 6.0))


def reference(op: str, x: torch.Tensor, bounds=None) -> torch.Tensor:
    if op == "hardsigmoid":
        return exact_hardsigmoid_float64(x) if x.dtype == torch.float64 else F.hardsigmoid(x)
    return F.hardtanh(x, *bounds)


def run_hardact(op: str, x: torch.Tensor, bounds=None, inplace=False) -> torch.Tensor:
    if op == "hardsigmoid":
        return ha.hardsigmoid(x, inplace=inplace)
    return ha.hardtanh(x, *bounds, inplace=inplace)


def operations(dtype: torch.dtype):
    yield "hardsigmoid", None
    for bounds in HARDTANH_BOUNDS:
        yield "hardtanh", bounds


def describe(op: str, bounds) -> str:
    return op if bounds is None else f"{op}{bounds}"


# ---- checks ----------------------------------------------------------------------------------------

def check_values(failures: Failures, generator: torch.Generator) -> None:
    for dtype in ha.SUPPORTED_DTYPES:
        checked_before = failures.passed + failures.failed
        failed_before = failures.failed
        for shape in SHAPES:
            base = make_input(shape, dtype, generator)
            # The tensor itself, then views that start one element (1-D) or one row (2-D, rows of
            # odd length) in, so the data pointer is misaligned for vector access.
            cases = [("contiguous", base)]
            if base.numel() > 1:
                cases.append(("x[1:]", base[1:]))
                cases.append(("x.view(-1)[3:]", base.reshape(-1)[3:]))
            for layout, x in cases:
                x_bits_before = x.clone()
                for op, bounds in operations(dtype):
                    what = f"{DTYPE_NAMES[dtype]} {describe(op, bounds)} shape {tuple(x.shape)} {layout}"
                    expected = reference(op, x, bounds)
                    got = run_hardact(op, x, bounds)
                    failures.record(got.data_ptr() != x.data_ptr() or x.numel() == 0, what, "out of place returned the input")
                    failures.record(not (report := mismatch_report(got, expected, x)), what, report)
                failures.record(not mismatch_report(x, x_bits_before, x_bits_before), f"{DTYPE_NAMES[dtype]} {layout}",
                                "out-of-place calls changed their input")

        # In place, on a view with an offset: the view is updated, the element before it is not.
        for op, bounds in operations(dtype):
            what = f"{DTYPE_NAMES[dtype]} {describe(op, bounds)} in place on x[1:]"
            storage = make_input((4099,), dtype, generator)
            original = storage.clone()
            view = storage[1:]
            returned = run_hardact(op, view, bounds, inplace=True)
            failures.record(returned is view, what, "in place did not return its argument")
            report = mismatch_report(storage[1:], reference(op, original[1:], bounds), original[1:])
            report += mismatch_report(storage[:1], original[:1], original[:1])
            failures.record(not report, what, report)
        checked = failures.passed + failures.failed - checked_before
        failed = failures.failed - failed_before
        print(f"{DTYPE_NAMES[dtype]:9} {'bit-exact' if failed == 0 else 'MISMATCH'}: {checked} checks, {failed} failed")

    # The double HardSigmoid difference from PyTorch, for the record (not a failure).
    x = torch.tensor([3.0, 10.0, math.inf], dtype=torch.float64, device="cuda")
    print(f"float64 hardsigmoid of [3, 10, inf]: hardact {ha.hardsigmoid(x).tolist()}, "
          f"F.hardsigmoid {F.hardsigmoid(x).tolist()}")


class Model(nn.Module):
    """The model being replaced (KernelBench style)."""

    def __init__(self, kind="hardsigmoid", min_val=-1.0, max_val=1.0):
        super().__init__()
        self.kind, self.min_val, self.max_val = kind, min_val, max_val

    def forward(self, x):
        if self.kind == "hardsigmoid":
            return F.hardsigmoid(x)
        return F.hardtanh(x, min_val=self.min_val, max_val=self.max_val)


def check_module_and_grad(failures: Failures, generator: torch.Generator) -> None:
    for args in [("hardsigmoid",), ("hardtanh",), ("hardtanh", 0.0, 6.0)]:
        for dtype in (torch.float32, torch.bfloat16):
            x = make_input((64, 1000), dtype, generator)
            report = mismatch_report(ha.ModelNew(*args)(x), Model(*args)(x), x)
            failures.record(not report, f"ModelNew{args} vs Model{args} {DTYPE_NAMES[dtype]}", report)
        inplace_input = make_input((64, 1000), torch.float32, generator)
        expected = Model(*args)(inplace_input)
        ha.ModelNew(*args, inplace=True)(inplace_input)
        report = mismatch_report(inplace_input, expected, expected)
        failures.record(not report, f"ModelNew{args} inplace=True", report)

    # Gradients go through PyTorch's own backward ops; this checks the autograd wiring.
    for op, bounds in [("hardsigmoid", None), ("hardtanh", (-0.3, 0.7))]:
        source = make_input((4097,), torch.float32, generator)
        grad_out = torch.randn(4097, generator=generator, device="cuda")
        ours, theirs = source.clone().requires_grad_(), source.clone().requires_grad_()
        run_hardact(op, ours, bounds).backward(grad_out)
        reference(op, theirs, bounds).backward(grad_out)
        report = mismatch_report(ours.grad, theirs.grad, source)
        failures.record(not report, f"gradient of {describe(op, bounds)}", report)


def check_streams_and_graphs(failures: Failures, generator: torch.Generator) -> None:
    """The work goes to PyTorch's current stream: on a side stream, and captured in a CUDA graph
    (a launch on any other stream would make the capture fail)."""
    x = make_input((1024, 1031), torch.float32, generator)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        on_side = ha.hardtanh(x, -0.3, 0.7)
    torch.cuda.current_stream().wait_stream(side)
    report = mismatch_report(on_side, F.hardtanh(x, -0.3, 0.7), x)
    failures.record(not report, "hardtanh on a side stream", report)

    static_in = make_input((1024, 1031), torch.bfloat16, generator)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            static_out = ha.hardsigmoid(static_in)
            ha.hardtanh_(static_out, 0.25, 0.75)
    except Exception as error:  # noqa: BLE001  (a capture failure is the finding)
        failures.record(False, "CUDA graph capture", f"{type(error).__name__}: {error}")
        return
    for replay in range(3):
        static_in.copy_(make_input((1024, 1031), torch.bfloat16, generator))
        graph.replay()
        expected = F.hardtanh(F.hardsigmoid(static_in), 0.25, 0.75)
        report = mismatch_report(static_out, expected, static_in)
        failures.record(not report, f"CUDA graph replay {replay}", report)
    print("streams and CUDA graphs checked")


def check_errors(failures: Failures, have_gpu: bool) -> None:
    """The Python errors, each compared with what PyTorch does where PyTorch has an answer."""

    def raises(expected_type, call) -> str:
        try:
            call()
        except expected_type as error:
            return f"{expected_type.__name__}: {error}"
        except Exception as error:  # noqa: BLE001  (any other type is the failure being reported)
            return f"FAILED: raised {type(error).__name__}: {error}"
        return "FAILED: no error"

    cpu = torch.zeros(8)
    cases = [
        ("CPU tensor", ValueError, lambda: ha.hardsigmoid(cpu)),
        ("CPU tensor, hardtanh", ValueError, lambda: ha.hardtanh(cpu)),
        ("not a tensor", TypeError, lambda: ha.hardsigmoid([1.0, 2.0])),
        ("min_val > max_val", ValueError, lambda: ha.hardtanh(cpu, 1.0, -1.0)),
        ("F.hardtanh min_val > max_val (PyTorch's own)", ValueError, lambda: F.hardtanh(cpu, 1.0, -1.0)),
        ("NaN bound", ValueError, lambda: ha.hardtanh(cpu, math.nan, 1.0)),
        ("ModelNew unknown kind", ValueError, lambda: ha.ModelNew("relu")),
        ("ModelNew min_val > max_val", ValueError, lambda: ha.ModelNew("hardtanh", 2.0, 1.0)),
        ("int32 tensor", TypeError, lambda: ha.hardsigmoid(torch.zeros(8, dtype=torch.int32))),
    ]
    if have_gpu:
        matrix = torch.zeros(16, 8, device="cuda")
        leaf = torch.zeros(8, device="cuda", requires_grad=True)
        cases += [
            ("non-contiguous (x.t())", ValueError, lambda: ha.hardsigmoid(matrix.t())),
            ("non-contiguous (x[:, ::2])", ValueError, lambda: ha.hardtanh(matrix[:, ::2])),
            ("int32 CUDA tensor", TypeError, lambda: ha.hardsigmoid(torch.zeros(8, dtype=torch.int32, device="cuda"))),
            ("in place on a tensor requiring grad", RuntimeError, lambda: ha.hardsigmoid_(leaf)),
        ]
    for what, expected_type, call in cases:
        outcome = raises(expected_type, call)
        print(f"  {what:46} -> {outcome}")
        failures.record(not outcome.startswith("FAILED"), f"error for {what}", outcome)


# ---- timing --------------------------------------------------------------------------------------

def median_ms(function, warmups: int, runs: int) -> float:
    for _ in range(warmups):
        function()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        function()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def time_dtype(failures: Failures, rows: int, cols: int, dtype: torch.dtype, warmups: int, runs: int,
               generator: torch.Generator) -> None:
    """Timing rows for one dtype; every tensor is freed when this returns."""
    x = make_input((rows, cols), dtype, generator)
    flat_offset = x.view(-1)[1:]
    target = torch.empty_like(x)
    copy_ms = median_ms(lambda: target.copy_(x), warmups, runs)
    del target
    copy_gbps = 2 * x.numel() * x.element_size() / (copy_ms * 1e-3) / 1e9
    print(f"{DTYPE_NAMES[dtype]:9} {'copy_ (the ceiling)':30} {copy_ms:11.3f} {copy_gbps:8.1f}")
    timed = [
        ("hardsigmoid", x, "hardsigmoid", None),
        ("hardtanh(-1, 1)", x, "hardtanh", (-1.0, 1.0)),
        ("hardsigmoid on x.view(-1)[1:]", flat_offset, "hardsigmoid", None),
    ]
    for label, source, op, bounds in timed:
        bytes_moved = 2 * source.numel() * source.element_size()
        torch_ms = median_ms(lambda: reference(op, source, bounds), warmups, runs)
        hardact_ms = median_ms(lambda: run_hardact(op, source, bounds), warmups, runs)
        print(f"{DTYPE_NAMES[dtype]:9} {label:30} {torch_ms:11.3f} {bytes_moved / (torch_ms * 1e-3) / 1e9:8.1f} "
              f"{hardact_ms:11.3f} {bytes_moved / (hardact_ms * 1e-3) / 1e9:8.1f} {torch_ms / hardact_ms:7.3f}")
        # The full-size outputs must match too.
        report = mismatch_report(run_hardact(op, source, bounds), reference(op, source, bounds), source)
        failures.record(not report, f"full-size {DTYPE_NAMES[dtype]} {label}", report)
        torch.cuda.empty_cache()


def time_all(failures: Failures, rows: int, cols: int, dtypes, warmups: int, runs: int, generator) -> None:
    print(f"\ntiming: {rows} x {cols}, median of {runs} CUDA-event timed calls after {warmups} warm-ups; "
          "GB/s counts bytes read + written; ratio = PyTorch time / hardact time (> 1: hardact faster)")
    header = f"{'dtype':9} {'operation':30} {'PyTorch ms':>11} {'GB/s':>8} {'hardact ms':>11} {'GB/s':>8} {'ratio':>7}"
    print(header)
    print("-" * len(header))
    for dtype in dtypes:
        time_dtype(failures, rows, cols, dtype, warmups, runs, generator)
        torch.cuda.empty_cache()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=393216)
    parser.add_argument("--warmups", type=int, default=3)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--no-timing", action="store_true", help="run the checks only")
    parser.add_argument("--timing-dtypes", default="float32,bfloat16", help="comma-separated, of float32,float16,bfloat16")
    parser.add_argument("--build-only", action="store_true",
                        help="compile and import the extension and run the checks that need no GPU")
    parser.add_argument("--verbose", action="store_true", help="show the extension's build commands")
    args = parser.parse_args()

    have_gpu = torch.cuda.is_available()
    if not have_gpu and not args.build_only:
        print("check_and_time.py: no CUDA GPU visible to PyTorch (torch.cuda.is_available() is False); "
              "nothing was run. (--build-only compiles the extension without a GPU.)", file=sys.stderr)
        return 2

    print(f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}), "
          f"{torch.cuda.get_device_name() if have_gpu else 'no GPU (build only)'}")
    started = time.time()
    extension = ha.load_extension(verbose=args.verbose)
    print(f"extension {extension.__name__} (hardact {extension.hardact_version}) ready in {time.time() - started:.1f} s")

    failures = Failures()
    print("\nerrors:")
    check_errors(failures, have_gpu)
    if have_gpu:
        generator = torch.Generator(device="cuda").manual_seed(2026)
        print("\nbit-exact checks (NaN matches NaN, all other bits equal):")
        check_values(failures, generator)
        check_module_and_grad(failures, generator)
        check_streams_and_graphs(failures, generator)
        if not args.no_timing:
            by_name = {name: dtype for dtype, name in DTYPE_NAMES.items() if dtype != torch.float64}
            unknown = [name for name in args.timing_dtypes.split(",") if name not in by_name]
            if unknown:
                parser.error(f"--timing-dtypes: unknown {unknown}; choose from {sorted(by_name)}")
            dtypes = [by_name[name] for name in args.timing_dtypes.split(",")]
            time_all(failures, args.rows, args.cols, dtypes, args.warmups, args.runs, generator)

    print(f"\n{failures.passed} passed, {failures.failed} failed")
    return 0 if failures.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
