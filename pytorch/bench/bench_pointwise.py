#!/usr/bin/env python3
"""replace_pointwise_convolutions on rewritten networks: the rewrite with its 16-bit 1x1 convolutions
as matrix products (PointwiseConv2d) against the rewrite alone, in one process.

    python3 pytorch/bench/bench_pointwise.py starnet_s1,mobilenetv3_large_100
    python3 pytorch/bench/bench_pointwise.py tv.mobilenet_v2          # tv.: a torchvision model

Per network (random weights, BatchNorm statistics and affine parameters drawn away from their
defaults, eval, channels_last, optimize_for_inference, then cast), bfloat16 at batches 1, 8 and 64
and float16 at 8: *old* is the rewrite, *new* a copy of it after replace_pointwise_convolutions.
Timed in turn, the order reversed every other run: a CUDA graph of 5 forwards replayed 4 times
(21 runs), and 20 eager forwards under torch.no_grad (15 runs; at these sizes the host's time).
Printed: each median in ms with old / new per pair, median [min-max] (> 1: the products faster),
whether new's graph output equals its eager output bit for bit, and old against new's largest
difference relative to old's largest value (the products sum in another order).
"""
import argparse
import copy
import pathlib
import statistics
import sys
import time

import torch
import timm
import torchvision
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "common"))
from checklib import randomise_batchnorms
import hardact_torch as ha

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("models", nargs="?", default="starnet_s1,mobilenetv3_large_100",
                    help="comma-separated timm names, or tv.NAME for torchvision's")
args = parser.parse_args()
torch.backends.cudnn.benchmark = True
print(torch.__version__, torch.cuda.get_device_name(), timm.__version__, time.strftime("%F %T"), flush=True)

def build(name):
    return getattr(torchvision.models, name[3:])() if name.startswith("tv.") else timm.create_model(name)

def as_new(model):
    m = copy.deepcopy(model)
    return m, ha.replace_pointwise_convolutions(m)

def graph(model, x):
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        for _ in range(3): model(x)
    torch.cuda.current_stream().wait_stream(s); torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g), torch.no_grad():
        for _ in range(5): out = model(x)
    return g, out

def timed(fns, runs):
    res = [[] for _ in fns]
    for r in range(runs):
        for i in (range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))):
            fns[i](); torch.cuda.synchronize()
            t = time.perf_counter(); fns[i](); torch.cuda.synchronize()
            res[i].append((time.perf_counter() - t) * 1e3)
    return res

def show(a, b):
    r = [p / q for p, q in zip(a, b)]
    return (f"{statistics.median(a):7.3f} {statistics.median(b):7.3f}  "
            f"old/new {statistics.median(r):.3f} [{min(r):.3f}-{max(r):.3f}]")

cases = [(torch.bfloat16, (1, 8, 64)), (torch.float16, (8,))]
for name in args.models.split(","):
    base = build(name).eval()
    randomise_batchnorms(base)
    for dtype, batches in cases:
        old = copy.deepcopy(base).cuda().to(memory_format=torch.channels_last)
        ha.optimize_for_inference(old)
        old = old.to(dtype)
        new, count = as_new(old)
        for batch in batches:
            x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=dtype).to(memory_format=torch.channels_last)
            (go, oo), (gn, on) = graph(old, x), graph(new, x)
            def replay(g):
                return lambda: [g.replay() for _ in range(4)]
            def eager(m):
                def f():
                    with torch.no_grad():
                        for _ in range(20): m(x)
                return f
            tg = timed([replay(go), replay(gn)], 21)
            te = timed([eager(old), eager(new)], 15)
            with torch.no_grad():
                en = new(x)
            same = torch.equal(en, on)
            diff = float((oo.float() - on.float()).abs().max() / oo.float().abs().max())
            print(f"{name:22s} {str(dtype)[6:]:8s} b{batch:<3d} pw {count:3d}  graph ms/4: {show(*tg)}  "
                  f"eager ms/20: {show(*te)}  new graph==eager {same}  rel diff old/new {diff:.1e}", flush=True)
            del go, gn
        del old, new
        torch.cuda.empty_cache()
