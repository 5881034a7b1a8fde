#!/usr/bin/env python3
"""Real networks in eval mode with and without hardact_torch's rewrites (fuse_blocks,
fuse_batchnorm_activation, fuse_squeeze_excitation).

    python3 pytorch/bench/bench_fused_models.py
    python3 pytorch/bench/bench_fused_models.py --models mobilenetv3_large_100 --compiled none --reps 21
    python3 pytorch/bench/bench_fused_models.py --no-blocks     # the rewrite without fuse_blocks

Each model (timm or torchvision, random weights) is built once, put in eval mode and channels_last,
and copied; the copy is rewritten (bench_models.rewrite): fuse_blocks makes each inverted-residual
and depthwise-separable block one FusedInvertedResidual (the squeeze's mean in the pass before it,
the residual add in the projection's BatchNorm pass), fuse_batchnorm_activation folds every
BatchNorm left followed by one of the activations hardact fuses (and timm's BatchNormAct2d) into one
BatchNormActivation, fuse_squeeze_excitation makes each squeeze-excitation left gated by a hard
sigmoid multiply through one hardsigmoid_gate, then replace_activations swaps the remaining
activation modules. Per dtype (float32, bfloat16),
eager (and compiled for --compiled models), timed as bench_models.py times (models taking turns,
both orders; the ratio torch.nn / rewritten, >= 1: the rewrite is faster, with its 95% interval),
with each forward's GPU profile: all kernels, and the BatchNorm and activation kernels.

The rewrite changes the arithmetic (x * scale + shift instead of BatchNorm's normalisation, and in
bfloat16 one rounding instead of two), so outputs are not bit-identical: printed is the largest
absolute difference between the two models' outputs, and that difference relative to the largest
output magnitude. Exit status: 0 ran, 1 a model failed to rewrite or a difference is out of
bounds (relative 1e-2 in float32, 5e-2 in bfloat16: a wrong rewrite differs by O(1); timm's random
MobileNetV3 amplifies rounding to 1.6e-3 in float32, H100, 2026-11-24), 2 no GPU.
"""

from __future__ import annotations

import pathlib
import copy
import re
import statistics
import sys

import torch
from torch import nn

from bench_models import (RATIO_HEADER, benchmark_setup, build_eval, image_batch, ratio_cell, rewrite, time_pair,
                          warmed_modes)
# checklib.py (comparison, test data, the installed package), shared with the tests: pytorch/common/.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "common"))
from checklib import import_package

ha = import_package()

NORM_KERNEL = re.compile(r"batch_?norm|bn_fw|bn_|welford", re.IGNORECASE)
ACTIVATION_KERNEL = re.compile(r"hardswish|hardsigmoid|hardtanh|relu6|clamp|threshold|transform_kernel",
                               re.IGNORECASE)
RELATIVE_BOUND = {torch.float32: 1e-2, torch.bfloat16: 5e-2}


def gpu_profile(model, x: torch.Tensor) -> tuple[float, int, float, float]:
    """For one forward: ms of GPU kernel time, kernel count, ms in BatchNorm kernels, ms in activation
    kernels (hardact's fused kernels count as activation kernels)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        model(x)
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    total = sum(e.device_time_total for e in kernels) / 1e3
    norm = sum(e.device_time_total for e in kernels if NORM_KERNEL.search(e.name)) / 1e3
    act = sum(e.device_time_total for e in kernels if ACTIVATION_KERNEL.search(e.name)) / 1e3
    return total, len(kernels), norm, act


def main() -> int:
    setup = benchmark_setup(__doc__.split("\n\n")[0], "none", rewrite_options=True)
    if setup is None:
        return 2
    args, names, compiled, dtypes = setup
    failures: list[str] = []
    table = [f"| model, dtype, mode | torch.nn ms/forward | rewritten ms/forward | {RATIO_HEADER} | "
             "GPU torch.nn: total, kernels (BatchNorm, activations) | GPU rewritten | max abs diff (relative) |",
             "|---|---|---|---|---|---|---|"]
    for name in names:
        base = build_eval(name)
        if base is None:
            continue
        rewritten = copy.deepcopy(base)
        counts = rewrite(rewritten, blocks=not args.no_blocks)
        blocks, fused, gates = counts["blocks"], counts["batchnorms"], counts["squeeze_excitations"]
        swapped = counts.get("activations", 0) + ha.replace_activations(rewritten)
        left = sum(1 for m in rewritten.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm))
        print(f"{name}: {blocks} blocks fused, {fused} BatchNorms rewritten (with the activation after them, or "
              f"alone), {gates} squeeze-excitations fused, {swapped} other activations replaced, {left} BatchNorms "
              "left")
        if blocks + fused == 0:
            failures.append(f"{name}: nothing was fused")
        for dtype in dtypes:
            x = image_batch(args, dtype)
            for label, models, outputs in warmed_modes(name, dtype, base, rewritten, compiled, x):
                outputs = {k: v.float() for k, v in outputs.items()}
                difference = (outputs["hardact"] - outputs["torch.nn"]).abs().max().item()
                relative = difference / max(outputs["torch.nn"].abs().max().item(), 1e-30)
                if not relative <= RELATIVE_BOUND[dtype]:
                    failures.append(f"{label}: output differs by {difference:.3g} (relative {relative:.3g})")
                with torch.no_grad():
                    times = time_pair(models, x, args.reps, args.iters)
                    profiles = {k: gpu_profile(m, x) for k, m in models.items()}
                p_nn, p_ha = profiles["torch.nn"], profiles["hardact"]
                line = (f"| {label} | {statistics.median(times['torch.nn']):.3f} | "
                        f"{statistics.median(times['hardact']):.3f} | {ratio_cell(times)} | "
                        f"{p_nn[0]:.3f} ms, {p_nn[1]} ({p_nn[2]:.3f}, {p_nn[3]:.3f}) | "
                        f"{p_ha[0]:.3f} ms, {p_ha[1]} ({p_ha[2]:.3f}, {p_ha[3]:.3f}) | "
                        f"{difference:.3g} ({relative:.2g}) |")
                table.append(line)
                print(line, flush=True)
    print("\n" + "\n".join(table))
    for failure in failures:
        print(f"FAIL {failure}")
    print(f"bench_fused_models: {'PASSED' if not failures else 'FAILED'} ({len(failures)} failures)")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
