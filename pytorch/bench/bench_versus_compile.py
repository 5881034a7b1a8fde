#!/usr/bin/env python3
"""hardact's rewritten networks, eager and in a CUDA graph, against torch.compile in every mode.

    python3 pytorch/bench/bench_versus_compile.py
    python3 pytorch/bench/bench_versus_compile.py --models mobilenetv3_large_100 --dtypes bfloat16 \
        --batches 64 --modes default,reduce-overhead --reps 21

Per model (timm or torchvision, random weights, eval, channels_last), dtype and batch, in one process:
torch.nn's model eager, a copy of it (the control: what the method measures when there is no difference),
the rewrite (bench_models.rewrite: optimize_for_inference; --no-blocks: the BatchNorm and
squeeze-excitation folds alone; --pointwise: then replace_pointwise_convolutions) eager, the rewrite in a
CUDA graph (hardact_torch.cuda_graph_inference), and torch.compile of torch.nn's model in each --modes
mode (default, reduce-overhead, max-autotune-no-cudagraphs), whose compile time (the first call's wall
time, Inductor's caches off unless --warm-caches) is printed. Then wall time per forward: each rep runs
--iters forwards of one implementation between two synchronisations, all of them in turn, in one order in
even reps and the reverse in odd reps. Printed: medians and min-max per implementation, the GPU time and
kernel count of one forward (torch.profiler) for the eager ones and compile's default (with --kernels,
also by kernel category: where the GPU time goes when a row falls short), and ratios (> 1: the rewrite is
faster): the fastest compile mode / rewrite in a graph, compile default / rewrite eager, eager / rewrite
eager, each the median over pairs of consecutive reps (one of each order) of the pair's geometric mean,
which cancels the order effect.

Outputs: the rewrite in a graph equals the rewrite eager bit for bit; the rewrite differs from
torch.nn's eager by rounding only (printed, relative to the largest output, beside compile's own
difference; a check fails past 1e-2 in float32, or in bfloat16 past 5e-2 and twice compile's). Exit status: 0 ran,
1 a check failed, 2 no GPU.
"""

from __future__ import annotations

import argparse
import copy
import math
import pathlib
import statistics
import sys
import time

import torch

from bench_models import (TIMM_MODELS, TORCHVISION_MODELS, build_eval, gpu_profile, kernel_breakdown, rewrite,
                          stop_compile_workers, time_pair)

# checklib.py (comparison, test data, the installed package), shared with the tests: pytorch/common/.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "common"))
from checklib import describe_gpu, import_package

ha = import_package()

MODES = ("default", "reduce-overhead", "max-autotune-no-cudagraphs")
RELATIVE_BOUND = {torch.float32: 1e-2, torch.bfloat16: 5e-2}


def pair_ratio(times: dict[str, list[float]], slower: str, faster: str) -> float:
    """times[slower] / times[faster], the median over pairs of consecutive reps of their geometric mean."""
    ratios = [a / b for a, b in zip(times[slower], times[faster])]
    pairs = [math.sqrt(a * b) for a, b in zip(ratios[0::2], ratios[1::2])] or ratios
    return statistics.median(pairs)


def cell(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} [{min(values):.3f}-{max(values):.3f}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(TIMM_MODELS + TORCHVISION_MODELS))
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--batches", default="64,256")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--reps", type=int, default=21)
    parser.add_argument("--iters", type=int, default=10, help="forwards per timing")
    parser.add_argument("--no-blocks", action="store_true",
                        help="the rewrite without fuse_blocks (BatchNorms and squeeze-excitations module by module)")
    parser.add_argument("--pointwise", action="store_true",
                        help="after the rewrite, replace_pointwise_convolutions (1x1 convolutions as matrix products "
                             "in float16/bfloat16)")
    parser.add_argument("--kernels", action="store_true",
                        help="after each row, the GPU time of one forward by kernel category (convolution, matrix "
                             "product, hardact, ATen elementwise, Inductor pointwise, ...) for the profiled ones")
    parser.add_argument("--warm-caches", action="store_true",
                        help="let Inductor use its on-disk caches (the compile times are then those of a cache hit)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench_versus_compile: no CUDA GPU")
        return 2
    torch.backends.cudnn.benchmark = True
    torch._dynamo.config.cache_size_limit = 64
    # Compile times are cold by default: a cache hit from an earlier run would time a lookup.
    torch._inductor.config.force_disable_caches = not args.warm_caches
    modes = [m for m in args.modes.split(",") if m]
    print(f"{describe_gpu()}; rewrite: {'without' if args.no_blocks else 'with'} fuse_blocks"
          f"{', then replace_pointwise_convolutions' if args.pointwise else ''}; cudnn.benchmark on, "
          f"cuDNN TF32 {'on' if torch.backends.cudnn.allow_tf32 else 'off'} (PyTorch's default)")
    failures: list[str] = []
    header = ("| model, dtype, batch | torch.nn eager | control (its copy) | rewrite eager | rewrite, CUDA graph | "
              + "".join(f"compile {m} | " for m in modes)
              + "fastest compile / rewrite graph | compile default / rewrite eager | eager / rewrite eager |"
              " GPU ms, kernels: eager; rewrite; compile default | compile s |")
    table = [header, "|" + "---|" * (header.count("|") - 1)]
    for name in [n for n in args.models.split(",") if n]:
        base = build_eval(name)
        if base is None:
            continue
        for dtype in [getattr(torch, d) for d in args.dtypes.split(",") if d]:
            for batch in [int(b) for b in args.batches.split(",") if b]:
                label = f"{name}, {str(dtype).replace('torch.', '')}, {batch}"
                torch._dynamo.reset()
                original = copy.deepcopy(base).to(dtype)
                rewritten = copy.deepcopy(original)
                fused = sum(rewrite(rewritten, blocks=not args.no_blocks).values())
                if args.pointwise:
                    ha.replace_pointwise_convolutions(rewritten)
                if fused == 0:
                    failures.append(f"{label}: nothing was rewritten")
                x = torch.randn(batch, 3, 224, 224, device="cuda").to(dtype).contiguous(
                    memory_format=torch.channels_last)
                models = {"eager": original, "control": copy.deepcopy(original), "rewrite": rewritten}
                compile_seconds = {}
                with torch.no_grad():
                    models["graph"] = ha.cuda_graph_inference(rewritten, x)
                    for mode in modes:
                        compiled = torch.compile(copy.deepcopy(original), mode=mode)
                        torch.cuda.synchronize()
                        start = time.perf_counter()
                        compiled(x)
                        torch.cuda.synchronize()
                        compile_seconds[mode] = time.perf_counter() - start
                        models[f"compile {mode}"] = compiled
                    stop_compile_workers()
                    expected = original(x).float()
                    eager_rewrite = rewritten(x).float()
                    replayed = models["graph"](x).float()
                    difference = (eager_rewrite - expected).abs().max().item()
                    relative = difference / max(expected.abs().max().item(), 1e-30)
                    # What rounding alone moves: compile's own output against eager's, the same measure.
                    compiled_relative = max(((models[f"compile {m}"](x).float() - expected).abs().max().item()
                                             / max(expected.abs().max().item(), 1e-30) for m in modes), default=0.0)
                    if not relative <= max(RELATIVE_BOUND[dtype], 2 * compiled_relative):
                        failures.append(f"{label}: the rewrite differs by {relative:.3g} (relative; "
                                        f"compile {compiled_relative:.3g})")
                    if not torch.equal(replayed, eager_rewrite):
                        failures.append(f"{label}: the CUDA graph's output differs from the eager rewrite's")
                    for _ in range(3):
                        for model in models.values():
                            model(x)
                    times = time_pair(models, x, args.reps, args.iters)
                    profiled = ("eager", "rewrite") + (("compile default",) if "default" in modes else ())
                    profiles = {k: gpu_profile(models[k], x) for k in profiled}
                    breakdowns = {k: kernel_breakdown(models[k], x) for k in profiled} if args.kernels else {}
                compiled_names = [f"compile {m}" for m in modes]
                cells = [cell(times[k]) for k in ["eager", "control", "rewrite", "graph"] + compiled_names]
                fastest = min(compiled_names, key=lambda k: statistics.median(times[k]), default=None)
                cells.append(f"**{pair_ratio(times, fastest, 'graph'):.3f}** ({fastest[len('compile '):]})"
                             if fastest else "-")
                cells.append(f"{pair_ratio(times, 'compile default', 'rewrite'):.3f}" if "default" in modes else "-")
                cells.append(f"{pair_ratio(times, 'eager', 'rewrite'):.3f} "
                             f"(control {pair_ratio(times, 'eager', 'control'):.3f})")
                cells.append("; ".join(f"{p[0]:.3f}, {p[1]}" for p in profiles.values()))
                cells.append(", ".join(f"{compile_seconds[m]:.0f}" for m in modes) or "-")
                line = "| " + " | ".join([label] + cells) + " |"
                print(f"{line}   (rewrite vs eager: max abs diff {difference:.3g}, relative {relative:.2g}; "
                      f"compile vs eager, the largest of its modes: relative {compiled_relative:.2g})", flush=True)
                table.append(line)
                for implementation, breakdown in breakdowns.items():
                    print(f"    {label}, {implementation}: GPU ms (kernels) by category: "
                          + "; ".join(f"{category} {ms:.3f} ({count})" for category, (ms, count) in breakdown.items()))
                del models
    print("\n" + "\n".join(table))
    for failure in failures:
        print(f"FAIL {failure}")
    print(f"bench_versus_compile: {'PASSED' if not failures else 'FAILED'} ({len(failures)} failures)")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
