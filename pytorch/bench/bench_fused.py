#!/usr/bin/env python3
"""The fused operators against PyTorch eager's sequence of ops and torch.compile of the same
expression (Inductor's fused kernel), on large tensors, interleaved.

    python3 pytorch/bench/bench_fused.py                  # 4096 x 393216 elements, float32 and bfloat16
    python3 pytorch/bench/bench_fused.py --dtypes float32 --reps 11 --forms bn_nchw,bn_nhwc

Forms (n = 4096 * 393216 elements in each; NCHW shapes are (256, 1536, 64, 64)):
  bias_2d    hardswish(x + bias), bias over the last dim of a row-major (4096, 393216) x, bias of x's
             dtype (a layer's own bias)
  bias_2d_f32  the same with a float32 bias over float16/bfloat16 x (autocast keeps parameters in
             float32); hardact adds it in float, eager rounds it to x's dtype first (not run for float32)
  bias_nchw  hardswish(x + bias[c]), NCHW
  bn_nchw    hardswish(x * scale[c] + shift[c]), NCHW (a folded inference BatchNorm)
  bn_nhwc    the same, channels-last
  residual   hardswish(x + residual), two full-length inputs
  gate       x * hardsigmoid(gate[n, c]), NCHW (squeeze-excitation)
  gate_nhwc  the same, channels-last
Contenders, timed rep by rep in turn (order reversed on odd reps) with CUDA events, each rep queued
behind a short GPU spin so that the events time the GPU's work, not the host's launch: copy
(one cudaMemcpyAsync, through copy_, of the bytes the fused op must move, each full-length input read
and the output written: x into a new tensor of the output's size, which reuses the op's output block;
for the residual, from a buffer of its own),
hardact (hardact_torch's fused function), eager (the expression in PyTorch ops, one kernel per op),
compiled (torch.compile(fullgraph=True) of that expression). Printed per contender: median ms,
GB/s of the fused op's bytes, and the median over reps of copy time / its time (paired, with the
quartiles). hardact's output must equal eager's bit for bit in float32 (in bfloat16 eager rounds between
ops: the largest difference is printed); whether it equals compiled's is printed (Inductor may
divide by 6 where PyTorch's kernels multiply by float(1/6)).
"""

from __future__ import annotations

import pathlib
import argparse
import statistics
import sys
import time

import torch
import torch.nn.functional as F

# checklib.py (comparison, test data, the installed package), shared with the tests: pytorch/common/.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "common"))
from checklib import describe_gpu, import_package

ha = import_package()

ROWS, COLUMNS = 4096, 393216
NCHW = (256, 1536, 64, 64)
SPIN_CYCLES = 100_000  # about 50 us at these cards' clocks: longer than any contender's host time
FORMS = ("bias_2d", "bias_2d_f32", "bias_nchw", "bn_nchw", "bn_nhwc", "residual", "gate", "gate_nhwc")


def make_case(form: str, dtype: torch.dtype, generator: torch.Generator):
    """(inputs dict, hardact callable, expression callable, full-length tensors moved per call)."""
    device = "cuda"
    if form in ("bias_2d", "bias_2d_f32"):
        x = torch.randn(ROWS, COLUMNS, device=device, dtype=dtype, generator=generator)
        bias_dtype = torch.float32 if form == "bias_2d_f32" else dtype
        bias = torch.randn(COLUMNS, device=device, dtype=bias_dtype, generator=generator)
        return (lambda: ha.bias_activation(x, bias, "hardswish"),
                lambda x, bias: F.hardswish(x + bias.to(x.dtype)), (x, bias), 2)
    fmt = torch.channels_last if form in ("bn_nhwc", "gate_nhwc") else torch.contiguous_format
    x = torch.randn(NCHW, device=device, dtype=dtype, generator=generator).contiguous(memory_format=fmt)
    channels = NCHW[1]
    if form == "bias_nchw":
        bias = torch.randn(channels, device=device, generator=generator)
        return (lambda: ha.bias_activation(x, bias, "hardswish"),
                lambda x, bias: F.hardswish(x + bias.view(-1, 1, 1).to(x.dtype)), (x, bias), 2)
    if form in ("bn_nchw", "bn_nhwc"):
        scale = torch.rand(channels, device=device, generator=generator) + 0.5
        shift = torch.randn(channels, device=device, generator=generator)
        return (lambda: ha.scale_shift_activation(x, scale, shift, "hardswish"),
                lambda x, scale, shift: F.hardswish(x * scale.view(-1, 1, 1).to(x.dtype)
                                                    + shift.view(-1, 1, 1).to(x.dtype)),
                (x, scale, shift), 2)
    if form == "residual":
        residual = torch.randn(NCHW, device=device, dtype=dtype, generator=generator)
        return (lambda: ha.residual_activation(x, residual, "hardswish"),
                lambda x, residual: F.hardswish(x + residual), (x, residual), 3)
    if form in ("gate", "gate_nhwc"):
        gate = torch.randn(NCHW[0], NCHW[1], 1, 1, device=device, dtype=dtype, generator=generator)
        return (lambda: ha.hardsigmoid_gate(x, gate), lambda x, gate: x * F.hardsigmoid(gate), (x, gate), 2)
    raise ValueError(form)


def flat(t: torch.Tensor) -> torch.Tensor:
    """The dense tensor's storage as one contiguous row (channels-last too), so copy_ is a memcpy."""
    return t.as_strided((t.numel(),), (1,))


def copy_of_op_memory(x: torch.Tensor, full_tensors: int):
    """One cudaMemcpyAsync of the fused op's bytes into a fresh tensor. With one full-length input
    it copies x into a tensor the size of the op's output, which the caching allocator serves from
    the same freed block as the op's output: the copy and the op meet the same memory. With two
    (the residual) it copies from a buffer of its own, 1.5 x the size: one launch, as the op's."""
    source = flat(x) if full_tensors == 2 else torch.empty(full_tensors * x.numel() // 2, device=x.device,
                                                           dtype=x.dtype)
    return lambda: torch.empty_like(source).copy_(source)


def time_interleaved(calls: dict, reps: int) -> dict[str, list[float]]:
    names = list(calls)
    times = {name: [] for name in names}
    for _ in range(2):
        for call in calls.values():
            call()
    torch.cuda.synchronize()
    for rep in range(reps):
        for name in names if rep % 2 == 0 else names[::-1]:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            # Queued behind a GPU spin, the call's host time (Python, dispatch, allocation) overlaps
            # the spin instead of idling the GPU between the events: the op's GPU time is measured.
            torch.cuda._sleep(SPIN_CYCLES)
            start.record()
            calls[name]()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end))
    return times


def quartiles(values: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


def microseconds_a_call(calls: dict, iters: int, reps: int) -> dict[str, tuple[float, float, float]]:
    """Each call made `iters` times a rep, the calls interleaved (time_interleaved), without gradients:
    {name: (median, first quartile, third quartile)} in microseconds a call."""
    repeated = {name: lambda f=f: [f() for _ in range(iters)] for name, f in calls.items()}
    with torch.no_grad():
        times = time_interleaved(repeated, reps)
    spread = {name: [ms * 1000.0 / iters for ms in values] for name, values in times.items()}
    return {name: (statistics.median(values), *quartiles(values)) for name, values in spread.items()}


def time_cell(stats: tuple[float, float, float]) -> str:
    """'median (q1-q3)' of microseconds_a_call."""
    return f"{stats[0]:.2f} ({stats[1]:.2f}-{stats[2]:.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--forms", default=",".join(FORMS))
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA GPU visible to PyTorch: nothing was run")
        return 2
    print(describe_gpu())
    print(f"PyTorch {torch.__version__}; {ROWS}x{COLUMNS} elements; {args.reps} reps, interleaved; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    generator = torch.Generator(device="cuda").manual_seed(7)
    failures = []
    table = ["| form, dtype | contender | ms | GB/s | x copy (q1-q3) |", "|---|---|---|---|---|"]
    for dtype in [getattr(torch, d) for d in args.dtypes.split(",")]:
        for form in [f for f in args.forms.split(",") if f]:
            if form == "bias_2d_f32" and dtype == torch.float32:
                continue  # the same call as bias_2d
            hardact_call, expression, inputs, full_tensors = make_case(form, dtype, generator)
            x = inputs[0]
            moved = full_tensors * x.numel() * x.element_size()
            copy_call = copy_of_op_memory(x, full_tensors)
            torch._dynamo.reset()
            compiled = torch.compile(expression, fullgraph=True)
            calls = {"copy": copy_call, "hardact": hardact_call,
                     "eager": lambda: expression(*inputs), "compiled": lambda: compiled(*inputs)}
            ours, theirs, eager_out = hardact_call(), compiled(*inputs), expression(*inputs)
            same = torch.equal(ours.view(torch.int16 if dtype == torch.bfloat16 else torch.int32),
                               theirs.view(torch.int16 if dtype == torch.bfloat16 else torch.int32))
            largest = (ours.float() - eager_out.float()).abs().max().item()
            check = "bit-identical to compiled" if same else "not bit-identical to compiled"
            if dtype == torch.float32 and largest != 0.0:
                failures.append(f"{form} float32: hardact differs from eager (max {largest:.3g})")
            del ours, theirs, eager_out
            if full_tensors == 2:  # each result is freed at once, so the next allocation may reuse its block
                shared = hardact_call().data_ptr() == copy_call().data_ptr()
                check += "; the copy writes " + ("the op's output block" if shared else "another block than the op")
            times = time_interleaved(calls, args.reps)
            label = f"{form}, {str(dtype).replace('torch.', '')}"
            for name in calls:
                ratios = [c / t for c, t in zip(times["copy"], times[name])]
                q1, q3 = quartiles(ratios)
                median = statistics.median(times[name])
                table.append(f"| {label} | {name} | {median:.3f} | {moved / median / 1e6:.0f} | "
                             f"**{statistics.median(ratios):.3f}** ({q1:.3f}-{q3:.3f}) |")
            print("\n".join(table[-4:]) + f"\n  ({check}; largest difference to eager {largest:.3g})", flush=True)
            del calls, compiled, inputs, x, copy_call
            torch.cuda.empty_cache()
    print("\n" + "\n".join(table))
    for failure in failures:
        print(f"FAIL {failure}")
    print(f"bench_fused: {'PASSED' if not failures else 'FAILED'}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
