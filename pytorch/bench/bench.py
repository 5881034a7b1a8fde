#!/usr/bin/env python3
"""Times the hardact operators against PyTorch on one GPU, interleaved.

    python3 pytorch/bench/bench.py                       # 4096 x 393216, float32 and bfloat16
    python3 pytorch/bench/bench.py --ops hardsigmoid,hardtanh,hardswish,relu6 --reps 31

For each dtype and op, five implementations: copy_ (the ceiling: one read, one write), hardact's op
eager (torch.ops.hardact.*), the op under torch.compile, F.* eager, and torch.compile(F.*)
(Inductor's Triton kernel). One CUDA-event timing per call; the implementations take turns rep by
rep, first in that order, then in reverse order (a table for each), so clock and thermal drift hit
all of them alike. Printed per order: median ms, GB/s (bytes read + written), the ratio to copy_'s
median, and the spread (min-max ms). Every output is checked bit for bit against eager F.* once:
a hardact difference fails the run; one of torch.compile(F.*) is printed as a note.
"""

from __future__ import annotations

import pathlib
import argparse
import statistics
import sys

import torch
import torch.nn.functional as F

# checklib.py (comparison, test data, the installed package), shared with the tests: pytorch/common/.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "common"))
from checklib import NAMES, describe_gpu, import_package, mismatch_report, salted_random

ha = import_package()
ops = torch.ops.hardact

OPS = {
    "hardsigmoid": (lambda x: ops.hardsigmoid(x), F.hardsigmoid),
    "hardtanh": (lambda x: ops.hardtanh(x, -1.0, 1.0), lambda x: F.hardtanh(x, -1.0, 1.0)),
    "hardswish": (lambda x: ops.hardswish(x), F.hardswish),
    "relu6": (lambda x: ops.relu6(x), F.relu6),
}


def time_interleaved(functions: dict, reps: int, warmups: int) -> dict[str, list[float]]:
    """Milliseconds per call for each function, the functions taking turns in the given order."""
    for function in functions.values():
        for _ in range(warmups):
            function()
    torch.cuda.synchronize()
    times = {name: [] for name in functions}
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(reps):
        for name, function in functions.items():
            start.record()
            function()
            stop.record()
            stop.synchronize()
            times[name].append(start.elapsed_time(stop))
    return times


def print_table(title: str, times: dict[str, list[float]], bytes_moved: int) -> None:
    copy_median = statistics.median(times["copy_"])
    print(f"  {title}")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"    {name:30} {median:9.3f} ms {bytes_moved / (median * 1e-3) / 1e9:8.1f} GB/s "
              f"{copy_median / median:7.3f} x copy_   spread {min(samples):.3f}-{max(samples):.3f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=393216)
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--ops", default="hardsigmoid,hardtanh", help=f"comma-separated, of {','.join(OPS)}")
    parser.add_argument("--reps", type=int, default=21)
    parser.add_argument("--warmups", type=int, default=3)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench.py: no CUDA GPU visible to PyTorch; nothing was timed", file=sys.stderr)
        return 2
    by_name = {name: dtype for dtype, name in NAMES.items()}
    print(describe_gpu())
    print(f"{args.rows} x {args.cols}; {args.reps} interleaved reps after {args.warmups} warm-ups; "
          "median, GB/s = bytes read + written per second, ratio = copy_ median / median")
    generator = torch.Generator(device="cuda").manual_seed(7)
    mismatches = 0
    for dtype_name in args.dtypes.split(","):
        dtype = by_name[dtype_name]
        x = salted_random(args.rows * args.cols, torch.float32, generator).to(dtype).view(args.rows, args.cols)
        target = torch.empty_like(x)
        bytes_moved = 2 * x.numel() * x.element_size()
        for op_name in args.ops.split(","):
            ours, reference = OPS[op_name]
            torch._dynamo.reset()
            compiled_ours = torch.compile(ours, fullgraph=True)
            compiled_reference = torch.compile(reference, fullgraph=True)
            functions = {
                "copy_": lambda: target.copy_(x),
                f"hardact {op_name} eager": lambda: ours(x),
                f"hardact {op_name} compiled": lambda: compiled_ours(x),
                f"F.{op_name} eager": lambda: reference(x),
                f"torch.compile(F.{op_name})": lambda: compiled_reference(x),
            }
            expected = reference(x)
            for name in list(functions)[1:]:
                report = mismatch_report(functions[name](), expected)
                if report and name.startswith("hardact"):
                    mismatches += 1
                    print(f"  FAIL {name} differs from F.{op_name}: {report}")
                elif report:  # Inductor's own code against eager PyTorch: a finding, not our failure
                    print(f"  note: {name} differs from eager F.{op_name}: {report}")
            del expected
            print(f"\n{NAMES[dtype]} {op_name}:")
            print_table("order as listed", time_interleaved(functions, args.reps, args.warmups), bytes_moved)
            reversed_functions = dict(reversed(list(functions.items())))
            print_table("reverse order", {name: samples for name, samples in sorted(
                time_interleaved(reversed_functions, args.reps, args.warmups).items(),
                key=lambda item: list(functions).index(item[0]))}, bytes_moved)
        x = target = None  # frees both before the next dtype
        torch.cuda.empty_cache()
    print(f"\nhardact outputs checked against F.*: {mismatches} mismatches")
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
