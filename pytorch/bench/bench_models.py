#!/usr/bin/env python3
"""Real networks with hardact_torch's activation modules against the same networks with torch.nn's.

    python3 pytorch/bench/bench_models.py                      # every model, eager; compiled for the first
    python3 pytorch/bench/bench_models.py --models mobilenetv3_large_100 --compiled all --reps 21

Each model (timm or torchvision, random weights: nothing is downloaded) is built once, put in eval
mode and channels_last, and copied; `hardact_torch.replace_activations` swaps every nn.Hardswish,
nn.Hardsigmoid, nn.ReLU6 and nn.Hardtanh of the copy (timm builds them with inplace=True). For each
dtype (float32, bfloat16), in eager mode and under torch.compile(fullgraph=True):
  - the outputs of one forward are compared bit for bit (eval);
  - wall time per forward: each rep runs --iters forwards of one model between two synchronisations,
    the two models taking turns, torch.nn's first in even reps and hardact's first in odd reps;
    printed are the medians per model, and the ratio torch.nn / hardact (>= 1: hardact faster):
    the median over pairs of consecutive reps (one of each order) of the pair's geometric mean,
    which cancels the order effect, with its 95% bootstrap interval; then the medians of the even
    and of the odd reps' ratios (the two orders) and their min-max;
  - with --control, the same timing of torch.nn's model against a copy of itself (eager): what the
    method measures when there is no difference, its noise;
  - beside it, the GPU profile of one forward of each (torch.profiler: kernels and their summed
    time, and the same for the activation kernels), so the wall time can be read against the GPU work;
  - compiled runs fail on a recompilation after warm-up (torch._dynamo error_on_recompile).
Then one training step per model (train mode, float32, cudnn deterministic): every parameter's
gradient compared bit for bit, with the in-place activation modules differentiated by hardact.

Models whose library (timm, torchvision) is missing are skipped with the reason. Exit status: 0 all
comparisons passed, 1 a difference, 2 no GPU.
"""

from __future__ import annotations

import pathlib
import argparse
import copy
import gc
import math
import random
import re
import statistics
import sys
import time

import torch
from torch import nn

# checklib.py (comparison, test data, the installed package), shared with the tests: pytorch/common/.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "common"))
from checklib import describe_gpu, import_package, mismatch_report

ha = import_package()

TIMM_MODELS = ("mobilenetv3_large_100", "mobilenetv3_small_100", "lcnet_100")
TORCHVISION_MODELS = ("mobilenet_v3_large",)
ACTIVATION_NAMES = {"Hardswish", "Hardsigmoid", "ReLU6", "Hardtanh", "HardSwish", "HardSigmoid", "HardTanh"}


def build(name: str) -> nn.Module:
    """A model with random weights: torchvision's for the names in TORCHVISION_MODELS and for a name
    timm does not know (mobilenet_v2), else timm's; ImportError when its library is missing."""
    torch.manual_seed(0)
    try:
        import timm
    except ImportError:
        timm = None
    if name in TORCHVISION_MODELS or timm is None or not timm.is_model(name):
        import torchvision
        if not hasattr(torchvision.models, name):
            raise ImportError(f"neither timm nor torchvision has a model named {name}")
        return getattr(torchvision.models, name)(weights=None)
    return timm.create_model(name, pretrained=False)


def activation_counts(model: nn.Module) -> tuple[int, int]:
    """(hardact activation modules, other modules that look like one of the four activations)."""
    ours = sum(1 for m in model.modules() if type(m).__module__.startswith("hardact_torch"))
    others = sum(1 for m in model.modules()
                 if type(m).__name__ in ACTIVATION_NAMES and not type(m).__module__.startswith("hardact_torch"))
    return ours, others


def time_pair(models: dict, x: torch.Tensor, reps: int, iters: int) -> dict[str, list[float]]:
    """Milliseconds per forward of each model, rep by rep, the order alternating. Python's garbage
    collector is paused while timing: its pauses land on whichever model runs, and were the
    largest part of the spread between reps."""
    names = list(models)
    times = {name: [] for name in names}
    gc.collect()
    gc.disable()
    try:
        for rep in range(reps):
            for name in names if rep % 2 == 0 else names[::-1]:
                torch.cuda.synchronize()
                start = time.perf_counter()
                for _ in range(iters):
                    models[name](x)
                torch.cuda.synchronize()
                times[name].append((time.perf_counter() - start) * 1e3 / iters)
    finally:
        gc.enable()
    return times


def stop_compile_workers() -> None:
    """Inductor's pool of compile processes stays alive after compiling; stopped before timing so that
    it takes no CPU from the timed host work."""
    try:
        from torch._inductor.async_compile import shutdown_compile_workers
    except ImportError:
        return
    shutdown_compile_workers()


def build_eval(name: str) -> nn.Module | None:
    """build(name) on the GPU, in eval mode and channels_last; None (said) when its library is missing."""
    try:
        return build(name).cuda().eval().to(memory_format=torch.channels_last)
    except ImportError as error:
        print(f"skipped {name}: {error}")
        return None


def rewrite(model: nn.Module, blocks: bool = True) -> dict[str, int]:
    """hardact's inference rewrite of an eval model, in place, as bench_fused_models.py and
    bench_versus_compile.py time it: optimize_for_inference, what a user calls (every block matcher,
    then the BatchNorm and squeeze-excitation folds and the activation swap for what is left).
    blocks=False: the rewrite without whole blocks (BatchNorms and squeeze-excitations module by
    module). Returns how many each rewrote."""
    if blocks:
        return ha.optimize_for_inference(model)
    counts = {"blocks": 0}
    counts["batchnorms"] = ha.fuse_batchnorm_activation(model)
    counts["squeeze_excitations"] = ha.fuse_squeeze_excitation(model)
    return counts


def warmed_modes(name: str, dtype: torch.dtype, base: nn.Module, other: nn.Module, compiled: set, x: torch.Tensor):
    """Yields (label, models, outputs) for eager and, when `name` is in `compiled`, for
    torch.compile(fullgraph=True): models holds copies of `base` ("torch.nn") and `other` ("hardact")
    in `dtype`, outputs one forward of each on x (which compiles), after which they are warmed up."""
    eager = {"torch.nn": copy.deepcopy(base).to(dtype), "hardact": copy.deepcopy(other).to(dtype)}
    modes = [("eager", eager)]
    if name in compiled:
        torch._dynamo.reset()
        modes.append(("compiled", {k: torch.compile(m, fullgraph=True) for k, m in eager.items()}))
    for mode, models in modes:
        with torch.no_grad():
            outputs = {k: m(x) for k, m in models.items()}
            if mode == "compiled":
                stop_compile_workers()
            for _ in range(3):
                for m in models.values():
                    m(x)
        yield f"{name}, {str(dtype).replace('torch.', '')}, {mode}", models, outputs


def image_batch(args, dtype: torch.dtype) -> torch.Tensor:
    return torch.randn(args.batch, 3, 224, 224, device="cuda").to(dtype).to(memory_format=torch.channels_last)


ACTIVATION_KERNEL = re.compile(r"hardswish|hardsigmoid|hardtanh|relu6|clamp|transform_kernel", re.IGNORECASE)


# Kernel categories by name, the first match wins: a convolution's kernels (cuDNN's implicit GEMMs
# included) before other matrix products, hardact's own before ATen's elementwise ones.
KERNEL_CATEGORIES = (
    ("hardact", re.compile(r"hardact", re.IGNORECASE)),
    ("BatchNorm", re.compile(r"bn_fw|batch_norm|batchnorm", re.IGNORECASE)),
    ("layout change", re.compile(r"nchwToNhwc|nhwcToNchw|transpose", re.IGNORECASE)),
    ("convolution", re.compile(r"conv|fprop|dgrad|wgrad|winograd|cudnn", re.IGNORECASE)),
    ("matrix product", re.compile(r"gemm|cublas|cutlass|triton_tem|_mm_|addmm", re.IGNORECASE)),
    ("Inductor pointwise", re.compile(r"triton_poi", re.IGNORECASE)),
    ("Inductor reduction", re.compile(r"triton_(red|per)", re.IGNORECASE)),
    ("ATen reduction", re.compile(r"reduce|pool|mean", re.IGNORECASE)),
    ("copy", re.compile(r"copy|memcpy|memset|cat_|CatArray", re.IGNORECASE)),
    ("ATen elementwise", re.compile(r"elementwise|vectorized|unrolled", re.IGNORECASE)),
)


def kernel_category(name: str) -> str:
    return next((category for category, pattern in KERNEL_CATEGORIES if pattern.search(name)), "other")


def forward_kernels(model, x: torch.Tensor) -> list:
    """The CUDA kernel events of one forward (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        model(x)
        torch.cuda.synchronize()
    return [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


def kernel_breakdown(model, x: torch.Tensor) -> dict[str, tuple[float, int]]:
    """One forward's GPU time (ms) and kernel count by kernel_category, the longest first."""
    totals: dict[str, list] = {}
    for event in forward_kernels(model, x):
        entry = totals.setdefault(kernel_category(event.name), [0.0, 0])
        entry[0] += event.device_time_total / 1e3
        entry[1] += 1
    return dict(sorted(((k, (v[0], v[1])) for k, v in totals.items()), key=lambda item: -item[1][0]))


def gpu_profile(model, x: torch.Tensor) -> tuple[float, int, float, int]:
    """For one forward: ms of GPU kernel time, kernel count, and the same for the activation
    kernels alone (hardact's transform kernels, PyTorch's activation and clamp kernels; under
    torch.compile, Inductor's kernels whose names show a fused activation)."""
    kernels = forward_kernels(model, x)
    activations = [e for e in kernels if ACTIVATION_KERNEL.search(e.name)]
    return (sum(e.device_time_total for e in kernels) / 1e3, len(kernels),
            sum(e.device_time_total for e in activations) / 1e3, len(activations))


RATIO_HEADER = "ratio [95% interval] (even / odd reps; min-max)"


def ratio_cell(times: dict[str, list[float]]) -> str:
    """The ratio torch.nn / hardact as RATIO_HEADER says. Consecutive reps run the two orders, and
    the order alone moves a rep's ratio by a few percent; a pair's geometric mean cancels that, so
    the median over pairs is steadier than the median over reps. The interval: percentile
    bootstrap of that median over the pairs (2000 resamples, fixed seed)."""
    ratios = [a / b for a, b in zip(times["torch.nn"], times["hardact"])]
    even, odd = ratios[0::2], ratios[1::2]
    pairs = [math.sqrt(a * b) for a, b in zip(even, odd)] or ratios
    draw = random.Random(0)
    medians = sorted(statistics.median(draw.choices(pairs, k=len(pairs))) for _ in range(2000))
    return (f"**{statistics.median(pairs):.3f}** [{medians[49]:.3f}-{medians[1949]:.3f}] "
            f"({statistics.median(even):.3f} / {statistics.median(odd or even):.3f}; "
            f"{min(ratios):.3f}-{max(ratios):.3f})")


def row(label: str, times: dict[str, list[float]], profiles: dict) -> str:
    nn_times, ha_times = times["torch.nn"], times["hardact"]
    return (f"| {label} | {statistics.median(nn_times):.3f} | {statistics.median(ha_times):.3f} | "
            f"{ratio_cell(times)} | "
            f"{profiles['torch.nn'][0]:.3f} ms, {profiles['torch.nn'][1]} ({profiles['torch.nn'][2]:.3f} ms, "
            f"{profiles['torch.nn'][3]}) | {profiles['hardact'][0]:.3f} ms, {profiles['hardact'][1]} "
            f"({profiles['hardact'][2]:.3f} ms, {profiles['hardact'][3]}) |")


def control_row(label: str, model: nn.Module, x: torch.Tensor, args) -> str:
    """torch.nn's model timed against a copy of itself, as the pair is timed: the ratio's noise."""
    models = {"torch.nn": model, "hardact": copy.deepcopy(model)}
    with torch.no_grad():
        for _ in range(3):
            models["hardact"](x)
        times = time_pair(models, x, args.reps, args.iters)
    return (f"| {label}, control: torch.nn against its copy | {statistics.median(times['torch.nn']):.3f} | "
            f"{statistics.median(times['hardact']):.3f} | {ratio_cell(times)} | | |")


def check_training(name: str, base: nn.Module, failures: list) -> str:
    """One training step of each; '' when every parameter gradient is bit-identical."""
    torch.backends.cudnn.deterministic = True
    theirs = copy.deepcopy(base).float().train()
    ours = copy.deepcopy(base).float().train()
    ha.replace_activations(ours)
    generator = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randn(16, 3, 224, 224, device="cuda", generator=generator).to(memory_format=torch.channels_last)
    for model in (theirs, ours):
        torch.manual_seed(123)  # the same dropout masks (torchvision's classifier) for both
        out = model(x)
        (out.float() * torch.linspace(-1, 1, out.shape[-1], device="cuda")).sum().backward()
    differing = []
    for (parameter_name, p_theirs), p_ours in zip(theirs.named_parameters(), ours.parameters()):
        report = mismatch_report(p_ours.grad, p_theirs.grad)
        if report:
            differing.append(f"{parameter_name}: {report}")
    torch.backends.cudnn.deterministic = False
    if differing:
        failures.append(f"{name} training step: {differing[0]}")
        return f"{len(differing)} of {len(list(ours.parameters()))} gradients differ"
    return f"all {len(list(ours.parameters()))} parameter gradients bit-identical"


def benchmark_setup(description: str, compiled_default: str, rewrite_options: bool = False):
    """Parses the real-network benchmarks' arguments and prints the header: (args, model names,
    names also timed compiled, dtypes), or None when there is no GPU. rewrite_options: also
    --no-blocks, for the benchmarks of rewrite()."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--models", default=",".join(TIMM_MODELS + TORCHVISION_MODELS))
    parser.add_argument("--compiled", default=compiled_default,
                        help="models also timed under torch.compile: a comma list, 'all' or 'none'")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--reps", type=int, default=31)
    parser.add_argument("--iters", type=int, default=10, help="forwards per timing")
    parser.add_argument("--control", action="store_true",
                        help="also time each eager torch.nn model against a copy of itself (the method's noise)")
    if rewrite_options:
        parser.add_argument("--no-blocks", action="store_true",
                            help="the rewrite without fuse_blocks (BatchNorms and squeeze-excitations one by one)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA GPU visible to PyTorch: nothing was run")
        return None
    print(describe_gpu())
    print(f"PyTorch {torch.__version__}; batch {args.batch}, 224x224, channels_last, eval; {args.reps} reps of "
          f"{args.iters} forwards; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    names = [n for n in args.models.split(",") if n]
    compiled = set(names if args.compiled == "all" else [] if args.compiled == "none" else args.compiled.split(","))
    dtypes = [getattr(torch, d) for d in args.dtypes.split(",")]
    return args, names, compiled, dtypes


def main() -> int:
    setup = benchmark_setup(__doc__.split("\n\n")[0], "mobilenetv3_large_100")
    if setup is None:
        return 2
    args, names, compiled, dtypes = setup
    failures: list[str] = []
    table = [f"| model, dtype, mode | torch.nn ms/forward | hardact ms/forward | {RATIO_HEADER} | "
             "GPU: torch.nn (time, kernels; activation kernels) | GPU: hardact |", "|---|---|---|---|---|---|"]
    training = []
    for name in names:
        base = build_eval(name)
        if base is None:
            continue
        swapped = copy.deepcopy(base)
        replaced = ha.replace_activations(swapped)
        ours_count, left = activation_counts(swapped)
        print(f"{name}: {replaced} activation modules replaced, {left} left unreplaced")
        if left:
            failures.append(f"{name}: {left} activation modules were not replaced")
        for dtype in dtypes:
            x = image_batch(args, dtype)
            for label, models, outputs in warmed_modes(name, dtype, base, swapped, compiled, x):
                report = mismatch_report(outputs["hardact"], outputs["torch.nn"])
                if report:
                    failures.append(f"{label}: output {report}")
                with torch.no_grad(), torch._dynamo.config.patch(error_on_recompile=True):
                    times = time_pair(models, x, args.reps, args.iters)
                    profiles = {k: gpu_profile(m, x) for k, m in models.items()}
                line = row(label, times, profiles) + (" output bit-identical" if not report else " OUTPUT DIFFERS")
                table.append(line)
                print(line, flush=True)
                if args.control and label.endswith("eager"):
                    table.append(control_row(label, models["torch.nn"], x, args))
                    print(table[-1], flush=True)
        training.append(f"- {name}: {check_training(name, base, failures)}")
        print(training[-1], flush=True)
    print("\n" + "\n".join(table))
    print("\ntraining step (float32, train mode, batch 16):\n" + "\n".join(training))
    for failure in failures:
        print(f"FAIL {failure}")
    print(f"bench_models: {'PASSED' if not failures else 'FAILED'} ({len(failures)} failures)")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
