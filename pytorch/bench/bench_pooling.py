#!/usr/bin/env python3
"""hardact's channels-last max pooling (MaxPool2d, which optimize_for_inference puts in place of
nn.MaxPool2d) against ATen's F.max_pool2d, at the inputs the pooling layers of real networks meet.

    python3 pytorch/bench/bench_pooling.py
    python3 pytorch/bench/bench_pooling.py --models ese_vovnet19b_dw --batches 1,8,64 --reps 31
    python3 pytorch/bench/bench_pooling.py --models '' --shapes '64,192,7,7,13,1,6,0;8,512,7,7,5,1,2,0'

Per network (random weights, eval, channels_last), dtype and batch, every nn.MaxPool2d of the model
at the input it meets in a forward, and each of --shapes (N, C, H, W, kernel, stride, padding, ceil
mode: CSPNeXt's spatial pyramid pooling, say, whose networks timm 1.0.29 lacks): *aten* is
F.max_pool2d (which also writes an int64 index per output element), *hardact* is MaxPool2d's forward
(_C._max_pool2d), *copy* one cudaMemcpyAsync of the bytes the pooling must move (its input read, its
output written). Each rep queues --iters calls of one contender behind a GPU spin and times them with
CUDA events; the contenders take turns, in one order in even reps and the reverse in odd ones.
Printed per layer: microseconds per call (median, quartiles), aten / hardact (> 1: hardact faster)
and hardact x copy. Checked: hardact's output equals ATen's bit for bit. Exit status: 0 ran, 1 a
check failed, 2 no GPU.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import torch
import torch.nn.functional as F

# checklib.py (comparison, test data, the installed package), shared with the tests: pytorch/common/.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "common"))
from checklib import describe_gpu, import_package, mismatch_report  # noqa: E402

ha = import_package()
from bench_fused import microseconds_a_call, time_cell  # noqa: E402  (each rep queued behind a GPU spin)
from bench_models import build_eval  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def pooling_inputs(model: torch.nn.Module, x: torch.Tensor) -> list[tuple[torch.nn.MaxPool2d, torch.Tensor]]:
    """(pooling module, its input) for every nn.MaxPool2d of the model, captured in one forward."""
    captured = []
    handles = [m.register_forward_hook(lambda module, args, _out: captured.append((module, args[0])))
               for m in model.modules() if type(m) is torch.nn.MaxPool2d]
    with torch.no_grad():
        model(x)
    for handle in handles:
        handle.remove()
    return captured


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="ese_vovnet19b_dw")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--batches", default="8,64")
    parser.add_argument("--shapes", default="",
                        help="';'-separated N,C,H,W,kernel,stride,padding,ceil_mode (0 or 1) of channels-last inputs")
    parser.add_argument("--reps", type=int, default=21)
    parser.add_argument("--iters", type=int, default=10)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench_pooling: no GPU")
        return 2
    print(describe_gpu())
    print(f"torch {torch.__version__}, {args.reps} reps x {args.iters} calls, interleaved, both orders; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    failures = 0
    print("| model, dtype, batch | input (N, C, H, W), kernel/stride/padding, ceil | aten us (q1-q3) | "
          "hardact us (q1-q3) | copy us | aten / hardact | hardact x copy |")
    print("|---|---|---|---|---|---|---|")
    cases = []  # (row label, nn.MaxPool2d, its input)
    for name in filter(None, args.models.split(",")):
        model = build_eval(name)
        if model is None:
            continue
        for dtype_name in args.dtypes.split(","):
            model = model.to(DTYPES[dtype_name])
            for batch in (int(b) for b in args.batches.split(",")):
                x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=DTYPES[dtype_name]).contiguous(
                    memory_format=torch.channels_last)
                cases += [(f"{name}, {dtype_name}, {batch}", module, y) for module, y in pooling_inputs(model, x)]
    for spec in filter(None, args.shapes.split(";")):
        n, c, h, w, kernel, stride, padding, ceil = (int(v) for v in spec.split(","))
        for dtype_name in args.dtypes.split(","):
            y = torch.randn(n, c, h, w, device="cuda", dtype=DTYPES[dtype_name]).contiguous(
                memory_format=torch.channels_last)
            pooling = torch.nn.MaxPool2d(kernel, stride, padding, ceil_mode=bool(ceil))
            cases.append((f"shape, {dtype_name}, {n}", pooling, y))
    for label, module, y in cases:
        dtype = y.dtype
        ours = ha.MaxPool2d(module.kernel_size, module.stride, module.padding, module.dilation,
                            module.return_indices, module.ceil_mode)
        with torch.no_grad():
            theirs, mine = module(y), ours(y)
        report = mismatch_report(mine, theirs)
        failures += bool(report)
        source = torch.empty((y.numel() + mine.numel() + 1) // 2, device="cuda", dtype=dtype)
        calls = {"aten": lambda m=module, t=y: m(t), "hardact": lambda m=ours, t=y: m(t),
                 "copy": lambda src=source: torch.empty_like(src).copy_(src)}
        t = microseconds_a_call(calls, args.iters, args.reps)
        aten, hardact, copy = t["aten"][0], t["hardact"][0], t["copy"][0]
        print(f"| {label} | {tuple(y.shape)}, {module.kernel_size}/{module.stride}/{module.padding}, "
              f"{module.ceil_mode} | {time_cell(t['aten'])} | {time_cell(t['hardact'])} | {copy:.2f} | "
              f"{aten / hardact:.3f} | {copy / hardact:.3f} |{'  CHECK FAILED: ' + report if report else ''}")
    print(f"bench_pooling: {'PASSED' if failures == 0 else 'FAILED'} ({failures} failures)")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
