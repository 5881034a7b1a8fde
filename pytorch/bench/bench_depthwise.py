#!/usr/bin/env python3
"""fuse_blocks' one-kernel depthwise stage against cuDNN's convolution followed by hardact's pass.

    python3 pytorch/bench/bench_depthwise.py
    python3 pytorch/bench/bench_depthwise.py --models lcnet_100 --dtypes float32 --batch 256 --reps 21

Per network (random weights, eval, channels_last) and dtype, the depthwise stage of every fused
block, at the input it meets in a forward at --batch: *split* is what the block runs without the
one-kernel stage (cuDNN's depthwise convolution, then scale_shift_activation, or
scale_shift_activation_mean where the block has a squeeze-excitation); *fused* is
FusedInvertedResidual.depthwise_stage; *copy* is one cudaMemcpyAsync of the bytes the stage must
move (its input read and its output written). Each rep queues --iters calls of one contender behind
a GPU spin and times them with CUDA events; the contenders take turns, in one order in even reps and
the reverse in odd ones. Printed per layer: microseconds per call (median, quartiles), split / fused
(> 1: the one-kernel stage is faster), fused × copy; then each network's totals. Checked: fused
equals split within 1e-3 of the largest output in float32 (the convolution's sums in another order)
and 2 units of bfloat16 / float16, the means likewise. Exit status: 0 ran, 1 a check failed, 2 no GPU.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys

import torch
import torch.nn.functional as F

# checklib.py (comparison, test data, the installed package), shared with the tests: pytorch/common/.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "common"))
from checklib import describe_gpu, import_package  # noqa: E402

ha = import_package()
from bench_fused import time_interleaved  # noqa: E402  (each rep queued behind a GPU spin)
from bench_models import build_eval  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def depthwise_inputs(model: torch.nn.Module, x: torch.Tensor) -> list[tuple[object, torch.Tensor]]:
    """(fused block, the input of its depthwise stage) for every FusedInvertedResidual whose stage
    runs in one kernel, captured in one forward."""
    captured = []

    def hook(block, args, _output):
        y = args[0]
        if block.conv1 is not None:
            y = block.norm1(block.conv1(y))
        captured.append((block, y))

    handles = [m.register_forward_hook(hook) for m in model.modules()
               if isinstance(m, ha.FusedInvertedResidual) and m.depthwise_filter is not None]
    with torch.no_grad():
        model(x)
    for handle in handles:
        handle.remove()
    return captured


def split_stage(block, y: torch.Tensor, with_mean: bool):
    conv, norm = block.conv2, block.norm2
    z = F.conv2d(y, conv.weight, None, conv.stride, conv.padding, conv.dilation, conv.groups)
    if with_mean:
        return ha.scale_shift_activation_mean(z, norm.scale, norm.shift, norm.activation, norm.min_val, norm.max_val)
    return ha.scale_shift_activation(z, norm.scale, norm.shift, norm.activation, norm.min_val, norm.max_val), None


def close(got: torch.Tensor, expected: torch.Tensor) -> bool:
    largest = expected.float().abs().max().item()
    if got.dtype == torch.float32:
        return (got - expected).abs().max().item() <= 1e-3 * largest
    eps = torch.finfo(got.dtype).eps
    return torch.allclose(got.float(), expected.float(), rtol=2 * eps, atol=1e-3 * largest)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="mobilenetv3_large_100,lcnet_100")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--iters", type=int, default=10)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench_depthwise: no GPU")
        return 2
    print(describe_gpu())
    print(f"torch {torch.__version__}, batch {args.batch}, {args.reps} reps x {args.iters} calls, "
          f"cudnn.benchmark on")
    torch.backends.cudnn.benchmark = True
    failures = 0
    for name in args.models.split(","):
        for dtype_name in args.dtypes.split(","):
            dtype = DTYPES[dtype_name]
            model = build_eval(name)
            if model is None:
                continue
            ha.fuse_blocks(model)
            model = model.to(dtype)
            x = torch.randn(args.batch, 3, 224, 224, device="cuda", dtype=dtype).contiguous(
                memory_format=torch.channels_last)
            totals = {"split": 0.0, "fused": 0.0, "copy": 0.0}
            print(f"== {name} {dtype_name}")
            print("  layer (N, C, H, W) k/s, mean | split us | fused us | copy us | split/fused | fused x copy")
            for block, y in depthwise_inputs(model, x):
                with_mean = block.se_reduce is not None
                k, s, ph, pw = block.depthwise_filter
                with torch.no_grad():
                    fused_y, fused_mean = block.depthwise_stage(y, with_mean)
                    split_y, split_mean = split_stage(block, y, with_mean)
                ok = close(fused_y, split_y) and (not with_mean or close(fused_mean, split_mean))
                failures += not ok
                source = torch.empty((y.numel() + fused_y.numel() + 1) // 2, device="cuda", dtype=dtype)
                calls = {
                    "split": lambda b=block, t=y, m=with_mean: split_stage(b, t, m),
                    "fused": lambda b=block, t=y, m=with_mean: b.depthwise_stage(t, m),
                    "copy": lambda src=source: torch.empty_like(src).copy_(src),
                }
                repeated = {name: lambda f=f: [f() for _ in range(args.iters)] for name, f in calls.items()}
                with torch.no_grad():
                    times = {name: [ms * 1000.0 / args.iters for ms in values]
                             for name, values in time_interleaved(repeated, args.reps).items()}
                med = {key: statistics.median(value) for key, value in times.items()}
                for key in totals:
                    totals[key] += med[key]
                q = {key: statistics.quantiles(value, n=4) for key, value in times.items()}
                print(f"  {tuple(y.shape)} {k}/{s}, {'mean' if with_mean else '-   '} | "
                      f"{med['split']:8.2f} ({q['split'][0]:.2f}-{q['split'][2]:.2f}) | "
                      f"{med['fused']:8.2f} ({q['fused'][0]:.2f}-{q['fused'][2]:.2f}) | {med['copy']:7.2f} | "
                      f"{med['split'] / med['fused']:.3f} | {med['copy'] / med['fused']:.3f}"
                      f"{'' if ok else '  CHECK FAILED: fused differs from split'}")
            print(f"  total: split {totals['split']:.1f} us, fused {totals['fused']:.1f} us, copy {totals['copy']:.1f} us;"
                  f" split/fused {totals['split'] / max(totals['fused'], 1e-9):.3f}")
    print(f"bench_depthwise: {'PASSED' if failures == 0 else 'FAILED'} ({failures} failures)")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
