#!/usr/bin/env python3
"""hardact's channels-last concatenation (concatenate_channels, which FusedOsaBlock and the ghost
blocks concatenate with) against ATen's torch.cat along the channels, at VoVNet's concatenations.

    python3 pytorch/bench/bench_concatenate.py
    python3 pytorch/bench/bench_concatenate.py --models ese_vovnet19b_dw,ese_vovnet39b --shapes '' --reps 31
    python3 pytorch/bench/bench_concatenate.py --models '' --shapes '56:64,128,128,128;7:768,224,224,224'

Cases, per dtype and batch: each of --shapes (H:C1,C2,...: channels-last (batch, C_k, H, H) inputs;
by default the four stages' blocks of ese_vovnet19b_slim_dw), then every torch.cat along dim 1 of
4-D tensors that the forward of each of --models makes (timm's original modules, random weights,
eval, channels-last, 224x224 input; the shapes seen, each once; by default ese_vovnet19b_dw's).
*aten* is torch.cat(tensors, 1), *hardact* concatenate_channels(tensors) (checked to take hardact's
copy, _C._concatenate_channels), *copy* out.copy_(src) of the output's size (the bytes the
concatenation reads and writes). Each rep queues --iters calls of one contender behind a GPU spin
and times them with CUDA events; the contenders take turns, in one order in even reps and the
reverse in odd ones. Printed per case: microseconds per call (median, quartiles), aten / hardact
(> 1: hardact faster), and hardact's and aten's speed as a fraction of the copy's (copy time / their
time). Checked per case: hardact's output is torch.cat's bit for bit, with its strides. Exit status:
0 ran, 1 a check failed, 2 no GPU.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
from unittest import mock

import torch

# checklib.py (comparison, test data, the installed package), shared with the tests: pytorch/common/.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "common"))
from checklib import as_bits, describe_gpu, import_package  # noqa: E402

ha = import_package()
from bench_fused import microseconds_a_call, time_cell  # noqa: E402  (each rep queued behind a GPU spin)
from bench_models import build_eval  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "float64": torch.float64}
# ese_vovnet19b_slim_dw's blocks at 224x224: H (= W), the channels of the block's input and of each mid layer.
SLIM_VOVNET_SHAPES = "56:64,64,64,64;28:112,80,80,80;14:256,96,96,96;7:384,112,112,112"


def parse_shapes(text: str) -> list[tuple[int, int, tuple[int, ...]]]:
    """'H:C1,C2,...;...' as (H, W, channels)."""
    shapes = []
    for spec in filter(None, text.split(";")):
        size, channels = spec.split(":")
        shapes.append((int(size), int(size), tuple(int(c) for c in channels.split(","))))
    return shapes


def model_concatenations(name: str) -> list[tuple[int, int, tuple[int, ...]]]:
    """(H, W, channels) of every torch.cat along dim 1 of 4-D tensors in one forward of the network
    (batch 1, float32), in order, each shape once."""
    model = build_eval(name)
    if model is None:
        return []
    seen: list[tuple[int, int, tuple[int, ...]]] = []
    cat = torch.cat

    def recording(tensors, dim=0, *args, **kwargs):
        if dim in (1, -3) and len(tensors) > 1 and all(t.dim() == 4 for t in tensors):
            shape = (tensors[0].shape[2], tensors[0].shape[3], tuple(t.shape[1] for t in tensors))
            if shape not in seen:
                seen.append(shape)
        return cat(tensors, dim, *args, **kwargs)

    x = torch.randn(1, 3, 224, 224, device="cuda").contiguous(memory_format=torch.channels_last)
    with torch.no_grad(), mock.patch.object(torch, "cat", recording):
        model(x)
    if not seen:
        print(f"{name}: no torch.cat along the channels of 4-D tensors in its forward")
    return seen


def check(tensors: list[torch.Tensor]) -> str:
    """'' where concatenate_channels takes hardact's copy and gives torch.cat's bits and strides."""
    binding, calls = ha._C._concatenate_channels, []

    def counted(inputs):
        calls.append(1)
        return binding(inputs)

    with torch.no_grad(), mock.patch.object(ha._C, "_concatenate_channels", counted):
        mine = ha.concatenate_channels(tensors)
    theirs = torch.cat(tensors, 1)
    if not calls:
        return "hardact's copy not taken"
    if mine.shape != theirs.shape or mine.stride() != theirs.stride():
        return f"shape {tuple(mine.shape)} strides {mine.stride()}, torch.cat's {tuple(theirs.shape)} {theirs.stride()}"
    if not torch.equal(as_bits(mine), as_bits(theirs)):
        return "other bits than torch.cat's"
    return ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default=SLIM_VOVNET_SHAPES, help="';'-separated H:C1,C2,... (W = H)")
    parser.add_argument("--models", default="ese_vovnet19b_dw", help="','-separated timm networks")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--batches", default="8,64")
    parser.add_argument("--reps", type=int, default=21)
    parser.add_argument("--iters", type=int, default=10)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench_concatenate: no GPU")
        return 2
    print(describe_gpu())
    print(f"torch {torch.__version__}, {args.reps} reps x {args.iters} calls, interleaved, both orders; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    shapes = [("shape", shape) for shape in parse_shapes(args.shapes)]
    for name in filter(None, args.models.split(",")):
        shapes += [(name, shape) for shape in model_concatenations(name)]
    failures = 0
    print("| source, dtype | inputs (N, H, W), channels | MB written | aten us (q1-q3) | hardact us (q1-q3) | "
          "copy us | aten / hardact | hardact x copy | aten x copy |")
    print("|---|---|---|---|---|---|---|---|---|")
    for dtype_name in args.dtypes.split(","):
        dtype = DTYPES[dtype_name]
        for batch in (int(b) for b in args.batches.split(",")):
            for source, (h, w, channels) in shapes:
                tensors = [torch.randn(batch, c, h, w, device="cuda", dtype=dtype).contiguous(
                    memory_format=torch.channels_last) for c in channels]
                report = check(tensors)
                failures += bool(report)
                numel = batch * sum(channels) * h * w
                source_bytes = torch.randn(numel, device="cuda", dtype=dtype)
                out = torch.empty_like(source_bytes)
                calls = {"aten": lambda t=tensors: torch.cat(t, 1),
                         "hardact": lambda t=tensors: ha.concatenate_channels(t),
                         "copy": lambda o=out, s=source_bytes: o.copy_(s)}
                t = microseconds_a_call(calls, args.iters, args.reps)
                aten, hardact, copy = t["aten"][0], t["hardact"][0], t["copy"][0]
                print(f"| {source}, {dtype_name} | ({batch}, {h}, {w}), {list(channels)} | "
                      f"{numel * out.element_size() / 1e6:.1f} | {time_cell(t['aten'])} | {time_cell(t['hardact'])} | "
                      f"{copy:.2f} | {aten / hardact:.3f} | {copy / hardact:.3f} | {copy / aten:.3f} |"
                      f"{'  CHECK FAILED: ' + report if report else ''}")
    print(f"bench_concatenate: {'PASSED' if failures == 0 else 'FAILED'} ({failures} failures)")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
