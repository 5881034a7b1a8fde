#!/usr/bin/env python3
"""A server's stream of requests of mixed batch sizes: hardact's rewrite in a graph per shape
(cuda_graph_cache) against torch.compile and eager, first-seen costs included.

    python3 pytorch/bench/bench_serving.py      # mobilenetv3_large_100, float32: about 4 minutes on an H100
    python3 pytorch/bench/bench_serving.py --models lcnet_150 --dtypes bfloat16 --requests 400
    python3 pytorch/bench/bench_serving.py --sizes 1,2,3,5,8,12,16,24,32,48,64 --modes default

Per model (timm or torchvision, random weights, eval, channels_last) and dtype, in one process, a
stream of --requests requests whose batch sizes are drawn (random.Random(--seed)) from --sizes, each
a (batch, 3, 224, 224) image tensor, runs through, in this order: torch.nn's model eager; the rewrite
(hardact_torch.optimize_for_inference on a float32 copy, then cast) eager; the rewrite through
hardact_torch.cuda_graph_cache (max_graphs: every size); torch.compile of torch.nn's model in each
--modes mode, dynamic=False by default (a graph per shape, as a server with fixed shapes compiles;
--compile-dynamic default: PyTorch's default, which recompiles once with a dynamic batch after the
second shape), Inductor's caches off unless --warm-caches (cold compiles). Each request's output is
complete (torch.cuda.synchronize) before the next request starts, as a server answers each.

Printed per implementation: the first pass's wall time (every capture, compile and cuDNN choice
included), the steady pass's (the same stream again, everything warm), its ms per request (median,
p99), torch.nn eager's steady time over it, the peak of allocated GPU memory over both passes and the
memory still reserved after them (a graph pool keeps its blocks), above what was there before; then
per shape the first request's wall time (a capture, a compile; reduce-overhead records its graph
at a shape's second call, which is in the first pass's total only) and the cache's capture ms; and
the memory of the largest shape's graph alone (captured and replayed by cuda_graph_inference), with
the cache's peak and held memory as multiples of it.

cuDNN: benchmark off (PyTorch's default) unless --cudnn-benchmark; its algorithm choices are cached
per convolution for the process either way, so the first implementation to see a shape pays the
search. Check: the cache's outputs equal the rewrite's eager outputs bit for bit (torch.equal) for
each size and every 25th request, both choosing the same cached algorithms. Exit status: 0 ran,
1 a check failed, 2 no GPU.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import gc
import pathlib
import random
import statistics
import sys
import time

import torch

from bench_models import build_eval, stop_compile_workers

# checklib.py (comparison, test data, the installed package), shared with the tests: pytorch/common/.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "common"))
from checklib import describe_gpu, import_package

ha = import_package()

MIB = 2.0 ** -20


def serve(forward, requests: list[torch.Tensor]) -> tuple[float, list[float]]:
    """(seconds for the whole stream, ms of each request), each request synchronised."""
    gc.collect()
    torch.cuda.synchronize()
    times = []
    start = time.perf_counter()
    with torch.no_grad():
        for x in requests:
            begin = time.perf_counter()
            forward(x)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - begin) * 1e3)
    return time.perf_counter() - start, times


def run(label: str, forward, requests: list[torch.Tensor], after_first_pass=None) -> dict:
    """Two passes of the stream through forward, with their memory; after_first_pass() runs between."""
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    allocated, reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    torch.cuda.reset_peak_memory_stats()
    first_s, first_ms = serve(forward, requests)
    if after_first_pass is not None:
        after_first_pass()
    steady_s, steady_ms = serve(forward, requests)
    peak = torch.cuda.max_memory_allocated() - allocated
    gc.collect()
    torch.cuda.empty_cache()
    held = torch.cuda.memory_reserved() - reserved
    first_seen = {}
    for x, ms in zip(requests, first_ms):
        first_seen.setdefault(x.shape[0], ms)
    result = {"label": label, "first_s": first_s, "steady_s": steady_s, "steady_ms": steady_ms, "peak": peak,
              "held": held, "first_seen": first_seen}
    print(f"  {label}: first pass {first_s:.2f} s, steady {steady_s:.3f} s", flush=True)
    return result


def one_graph_memory(model, x: torch.Tensor) -> tuple[int, int]:
    """(peak allocated, reserved still held) in bytes, above what was there before, of capturing and
    replaying model's graph for x alone (cuda_graph_inference): the memory the cache's graphs, which
    share one pool, are held against."""
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    allocated, reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    torch.cuda.reset_peak_memory_stats()
    with torch.no_grad():
        graph = ha.cuda_graph_inference(model, x)
        graph(x)
    torch.cuda.synchronize()
    peak, held = torch.cuda.max_memory_allocated() - allocated, torch.cuda.memory_reserved() - reserved
    del graph
    gc.collect()
    torch.cuda.empty_cache()
    return peak, held


def check_cache(cache, rewritten, requests: list[torch.Tensor]) -> list[str]:
    """The cache's outputs against the rewrite eager, bit for bit: the first request of each size and
    every 25th. The eager forward runs before the next call of the cache (its outputs' lifetime)."""
    failures, sizes = [], set()
    with torch.no_grad():
        for i, x in enumerate(requests):
            if x.shape[0] in sizes and i % 25:
                continue
            sizes.add(x.shape[0])
            got = cache(x)
            if not torch.equal(got, rewritten(x)):
                failures.append(f"request {i} (batch {x.shape[0]}): the cache's output differs from the rewrite eager")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="mobilenetv3_large_100",
                        help="comma list, e.g. lcnet_150,fbnetv3_b,mobilenetv3_large_100 (one is about 4 minutes)")
    parser.add_argument("--dtypes", default="float32", help="comma list: float32,bfloat16")
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--sizes", default="1,3,8,12,24,64",
                        help="batch sizes the requests draw from (each costs a compile per mode)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--modes", default="default,reduce-overhead", help="torch.compile modes; '' for none")
    parser.add_argument("--compile-dynamic", choices=("false", "default"), default="false",
                        help="false: dynamic=False, a compile per shape; default: dynamic=None")
    parser.add_argument("--warm-caches", action="store_true",
                        help="let Inductor use its on-disk caches (the compile times are then those of a cache hit)")
    parser.add_argument("--cudnn-benchmark", action="store_true", help="torch.backends.cudnn.benchmark = True")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench_serving: no CUDA GPU")
        return 2
    sizes = [int(s) for s in args.sizes.split(",") if s]
    modes = [m for m in args.modes.split(",") if m]
    dynamic = False if args.compile_dynamic == "false" else None
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    for limit in ("recompile_limit", "cache_size_limit"):  # a recompile per shape, per mode
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, max(64, 2 * len(sizes)))
    torch._inductor.config.force_disable_caches = not args.warm_caches
    draw = random.Random(args.seed)
    stream_sizes = [draw.choice(sizes) for _ in range(args.requests)]
    print(f"{describe_gpu()}; {datetime.date.today()}; {args.requests} requests, batch sizes drawn from {sizes} "
          f"(seed {args.seed}); cudnn.benchmark {'on' if args.cudnn_benchmark else 'off'}; torch.compile "
          f"dynamic={dynamic}, Inductor caches {'on' if args.warm_caches else 'off'}")
    failures: list[str] = []
    header = ("| model, dtype | implementation | first pass s (with captures / compiles) | steady pass s | "
              "steady ms per request, median (p99) | torch.nn eager / it, steady | peak allocated MiB | "
              "held after MiB |")
    table = [header, "|" + "---|" * (header.count("|") - 1)]
    notes = []
    for name in [n for n in args.models.split(",") if n]:
        base = build_eval(name)
        if base is None:
            continue
        for dtype in [getattr(torch, d) for d in args.dtypes.split(",") if d]:
            label = f"{name}, {str(dtype).replace('torch.', '')}"
            print(label, flush=True)
            torch._dynamo.reset()
            original = copy.deepcopy(base).to(dtype)
            rewritten = copy.deepcopy(base)
            counts = ha.optimize_for_inference(rewritten)  # in float32, then cast, as the README says
            rewritten.to(dtype)
            generator = torch.Generator(device="cuda").manual_seed(args.seed)
            inputs = {n: torch.randn(n, 3, 224, 224, device="cuda", generator=generator).to(dtype)
                      .contiguous(memory_format=torch.channels_last) for n in sorted(set(stream_sizes))}
            requests = [inputs[n] for n in stream_sizes]
            results = [run("torch.nn eager", original, requests), run("rewrite eager", rewritten, requests)]
            cache = ha.cuda_graph_cache(rewritten, max_graphs=len(inputs))
            results.append(run("rewrite, cuda_graph_cache", cache, requests))
            failures += [f"{label}: {f}" for f in check_cache(cache, rewritten, requests)]
            if cache.eager_calls or cache.captures != len(inputs):
                failures.append(f"{label}: the cache captured {cache.captures} of {len(inputs)} shapes and ran "
                                f"{cache.eager_calls} calls eagerly")
            captured = list(results[-1]["first_seen"])  # the sizes in first-seen order: the captures' order
            notes.append(f"{label}: rewrite {counts}; cache: {cache.captures} captures, {cache.replays} replays, "
                         f"{cache.evictions} evictions, {cache.eager_calls} eager calls; capture ms per shape: "
                         + ", ".join(f"{n}: {ms:.0f}" for n, ms in zip(captured, cache.capture_ms)))
            del cache
            largest = max(inputs)  # measured with the cache's graphs released
            alone_peak, alone_held = one_graph_memory(rewritten, inputs[largest])
            notes.append(f"{label}: the largest shape's graph alone (batch {largest}, cuda_graph_inference): peak "
                         f"allocated {alone_peak * MIB:.0f} MiB, held {alone_held * MIB:.0f} MiB; the cache with every "
                         f"shape captured: {results[-1]['peak'] / max(alone_peak, 1):.2f} x its peak, "
                         f"{results[-1]['held'] / max(alone_held, 1):.2f} x what it holds")
            for mode in modes:
                compiled = torch.compile(copy.deepcopy(original), mode=mode, dynamic=dynamic)
                results.append(run(f"compile {mode}", compiled, requests, after_first_pass=stop_compile_workers))
                del compiled
                torch._dynamo.reset()
            eager_steady = results[0]["steady_s"]
            for result in results:
                steady_ms = sorted(result["steady_ms"])
                p99 = steady_ms[min(len(steady_ms) - 1, int(0.99 * len(steady_ms)))]
                line = (f"| {label} | {result['label']} | {result['first_s']:.2f} | {result['steady_s']:.3f} | "
                        f"{statistics.median(steady_ms):.3f} ({p99:.3f}) | {eager_steady / result['steady_s']:.3f} | "
                        f"{result['peak'] * MIB:.0f} | {result['held'] * MIB:.0f} |")
                table.append(line)
                notes.append(f"{label}, {result['label']}: first request's ms per shape: "
                             + ", ".join(f"{n}: {ms:.0f}" for n, ms in sorted(result["first_seen"].items())))
            del original, rewritten, inputs, requests
    print("\n" + "\n".join(table) + "\n\n" + "\n".join(notes))
    for failure in failures:
        print(f"FAIL {failure}")
    print(f"bench_serving: {'PASSED' if not failures else 'FAILED'} ({len(failures)} failures)")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
