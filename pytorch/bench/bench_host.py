#!/usr/bin/env python3
"""Host time per call of hardact_torch's functions and modules against PyTorch's, at a launch-bound size.

    python3 pytorch/bench/bench_host.py                  # 64x16x28x28, float32 and bfloat16
    python3 pytorch/bench/bench_host.py --calls 2000 --runs 21

In a launch-bound network (eager MobileNetV3 at batch 64 spends about half its wall time on the host)
what an activation costs is the host time of its call. For each op, dtype and grad mode (torch.no_grad;
grad mode on with an input that does not require grad; an input that requires grad, so that a graph
node is recorded) and each form:
  - function: F.hardswish(x) against ha.hardswish(x), and torch.ops.hardact.hardswish(x) beside them;
  - module: nn.Hardswish()(x) against ha.HardSwish()(x);
  - in place: F.hardswish(y, inplace=True) against ha.hardswish(y, inplace=True) on a non-leaf y
    (with an input requiring grad, y = x * 1 is made in the timed loop for both: in-place on a
    leaf that requires grad is an error).
A run times --calls calls of one implementation with the host clock, the GPU kept busy by the calls
themselves (the tensor is small enough that the GPU keeps up, so the loop measures the host); the
implementations of a case take turns run by run, the order reversed every other run. Printed: the
median microseconds per call and the ratio hardact / PyTorch per run (median, min-max); <= 1.25
is the target. Every output is checked bit for bit against PyTorch's once.

The fused forms (--fused, on by default) replace two or three PyTorch calls with one, so their
target is the PyTorch sequence's host time (ratio <= 1), in eval with torch.no_grad and in grad mode
with an input that does not require grad (inference without no_grad):
  - bn_act: the rewrite's BatchNormActivation (from fuse_batchnorm_activation) against
    nn.Sequential(nn.BatchNorm2d in eval, nn.Hardswish), x channels-last;
  - bias: ha.bias_activation(x, bias, "hardswish") against F.hardswish(x + bias.view(C, 1, 1));
  - residual: ha.residual_activation(x, r, "hardswish") against F.hardswish(x + r);
  - gate: ha.hardsigmoid_gate(x, g) against x * F.hardsigmoid(g), g of shape (N, C, 1, 1).
Outputs are checked against PyTorch's once: bit for bit in float32 except bn_act (eager's
BatchNorm normalises in its own order); otherwise the largest difference is printed (bfloat16
eager rounds between its ops, the fused op once).

--blocks (off by default; `--blocks --ops '' --no-fused` for it alone) times one FusedInvertedResidual
of timm's mobilenetv3_small_100 (torchvision's mobilenet_v3_small without timm) rewritten by
optimize_for_inference, the first block with an expansion, a squeeze-excitation and a skip, on its
own input at batch 1 (224x224 network input), channels-last, in each dtype, under torch.no_grad:
its forward as one C++ call (_C._fused_inverted_residual_forward) against its Python forward
(forward_modules, forced by the private switch _one_call = False on a copy of the block), module
call included. Printed: µs per block forward, the ratio one call / Python per run, and a bit-for-bit
check of the two outputs.
"""

from __future__ import annotations

import pathlib
import argparse
import contextlib
import copy
import gc
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

# checklib.py (comparison, test data, the installed package), shared with the tests: pytorch/common/.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "common"))
from checklib import describe_gpu, import_package, mismatch_report

ha = import_package()
ops = torch.ops.hardact

OPS = {
    # name: (F.*, ha.*, torch.ops.hardact.*, nn module, hardact module)
    "hardswish": (F.hardswish, ha.hardswish, ops.hardswish, nn.Hardswish, ha.HardSwish),
    "hardsigmoid": (F.hardsigmoid, ha.hardsigmoid, ops.hardsigmoid, nn.Hardsigmoid, ha.HardSigmoid),
    "hardtanh": (F.hardtanh, ha.hardtanh, ops.hardtanh, nn.Hardtanh, ha.HardTanh),
    "relu6": (F.relu6, ha.relu6, ops.relu6, nn.ReLU6, ha.ReLU6),
}
MODES = ("no_grad", "grad mode, input without grad", "input requires grad")


def time_runs(functions: dict, calls: int, runs: int) -> dict[str, list[float]]:
    """Microseconds per call of each function, run by run, the order reversed every other run."""
    names = list(functions)
    for function in functions.values():  # warm-up
        for _ in range(50):
            function()
    torch.cuda.synchronize()
    per_call = {name: [] for name in names}
    gc.collect()
    gc.disable()  # its pauses would land on whichever implementation runs
    try:
        for run in range(runs):
            for name in names if run % 2 == 0 else names[::-1]:
                function = functions[name]
                torch.cuda.synchronize()
                start = time.perf_counter_ns()
                for _ in range(calls):
                    function()
                per_call[name].append((time.perf_counter_ns() - start) / 1e3 / calls)
                torch.cuda.synchronize()
    finally:
        gc.enable()
    return per_call


def cases(name: str, x: torch.Tensor, mode: str):
    """(form, {implementation: zero-argument callable}, (hardact's, PyTorch's) for the bit check)."""
    f_fn, ha_fn, op_fn, nn_module, ha_module = OPS[name]
    nn_instance, ha_instance = nn_module(), ha_module()
    nn_inplace, ha_inplace = nn_module(inplace=True), ha_module(inplace=True)
    if mode == "input requires grad":
        source = x.detach().clone().requires_grad_()
        fresh = lambda: source * 1.0  # noqa: E731  (a non-leaf for the in-place forms)
        x = source
    else:
        scratch = x.detach().clone()
        fresh = lambda: scratch  # noqa: E731  (in place again and again: the values saturate, the cost does not change)
    yield ("function", {"PyTorch": lambda: f_fn(x), "hardact": lambda: ha_fn(x), "torch.ops": lambda: op_fn(x)},
           (lambda: ha_fn(x), lambda: f_fn(x)))
    yield ("module", {"PyTorch": lambda: nn_instance(x), "hardact": lambda: ha_instance(x)},
           (lambda: ha_instance(x), lambda: nn_instance(x)))
    yield ("in place", {"PyTorch": lambda: nn_inplace(fresh()), "hardact": lambda: ha_inplace(fresh())},
           (lambda: ha_inplace(x * 1.0), lambda: nn_inplace(x * 1.0)))


FUSED_MODES = ("no_grad", "grad mode, input without grad")


def fused_cases(x: torch.Tensor):
    """(form, {implementation: zero-argument callable}, bit-exact in float32) for the fused forms."""
    channels = x.shape[1]
    generator = torch.Generator(device="cuda").manual_seed(11)
    bn = nn.BatchNorm2d(channels).cuda()
    with torch.no_grad():
        bn.running_mean.normal_(generator=generator)
        bn.running_var.uniform_(0.5, 2.0, generator=generator)
        bn.weight.uniform_(0.5, 1.5, generator=generator)
        bn.bias.normal_(generator=generator)
    eager_bn = nn.Sequential(bn, nn.Hardswish()).eval()
    fused_bn = copy.deepcopy(eager_bn)
    eager_bn.to(x.dtype)
    fused_bn.to(x.dtype)
    if ha.fuse_batchnorm_activation(fused_bn) != 1:
        raise RuntimeError("bench_host: the BatchNorm + Hardswish pair was not fused")
    nhwc = x.contiguous(memory_format=torch.channels_last)
    yield "bn_act", {"PyTorch": lambda: eager_bn(nhwc), "hardact": lambda: fused_bn(nhwc)}, False
    bias = torch.randn(channels, device="cuda", generator=generator).to(x.dtype)  # a layer's bias is x's dtype
    bias_view = bias.view(channels, 1, 1)
    yield ("bias", {"PyTorch": lambda: F.hardswish(x + bias_view),
                    "hardact": lambda: ha.bias_activation(x, bias, "hardswish")}, x.dtype == torch.float32)
    residual = torch.randn(x.shape, device="cuda", generator=generator).to(x.dtype)
    yield ("residual", {"PyTorch": lambda: F.hardswish(x + residual),
                        "hardact": lambda: ha.residual_activation(x, residual, "hardswish")},
           x.dtype == torch.float32)
    gate = torch.randn(x.shape[0], channels, 1, 1, device="cuda", generator=generator).to(x.dtype)
    yield ("gate", {"PyTorch": lambda: x * F.hardsigmoid(gate), "hardact": lambda: ha.hardsigmoid_gate(x, gate)},
           x.dtype == torch.float32)


def run_fused(x: torch.Tensor, args) -> tuple[int, float]:
    """Times the fused forms on x; returns (mismatches, largest median ratio)."""
    mismatches, worst = 0, 0.0
    dtype = str(x.dtype).replace("torch.", "")
    for mode in FUSED_MODES:
        grad_context = torch.no_grad() if mode == "no_grad" else contextlib.nullcontext()
        with grad_context:
            for form, functions, exact in fused_cases(x):
                ours, theirs = functions["hardact"]().detach(), functions["PyTorch"]().detach()
                if exact:
                    report = mismatch_report(ours, theirs)
                    mismatches += bool(report)
                    note = f" MISMATCH {report}" if report else ""
                else:
                    note = f" (largest difference {(ours.float() - theirs.float()).abs().max().item():.3g})"
                per_call = time_runs(functions, args.calls, args.runs)
                ratios = [a / b for a, b in zip(per_call["hardact"], per_call["PyTorch"])]
                ratio = statistics.median(ratios)
                worst = max(worst, ratio)
                print(f"| fused {form}, {dtype} | {mode} | one call against PyTorch's sequence | "
                      f"{statistics.median(per_call['PyTorch']):.2f} | {statistics.median(per_call['hardact']):.2f} "
                      f"| **{ratio:.3f}** ({min(ratios):.3f}-{max(ratios):.3f}) | |{note}", flush=True)
    return mismatches, worst


def timed_block(dtype: torch.dtype) -> tuple[str, nn.Module, torch.Tensor]:
    """(description, block, its input at batch 1): the first fused block of a rewritten network that
    has every stage (expansion, squeeze-excitation, skip), channels-last, in dtype."""
    try:
        import timm
        name, model = "timm mobilenetv3_small_100", timm.create_model("mobilenetv3_small_100", pretrained=False)
    except ImportError:
        import torchvision
        name, model = "torchvision mobilenet_v3_small", torchvision.models.mobilenet_v3_small(weights=None)
    model.eval()
    ha.optimize_for_inference(model)
    model = model.cuda().to(dtype=dtype, memory_format=torch.channels_last)
    blocks = [m for m in model.modules() if type(m) is ha.FusedInvertedResidual]
    full = [b for b in blocks if b.conv1 is not None and b.se_reduce is not None and b.skip]
    if not full:
        raise RuntimeError(f"bench_host: {name} has no fused block with every stage")
    inputs = {}
    handle = full[0].register_forward_pre_hook(lambda module, args: inputs.setdefault("x", args[0]))
    x = torch.randn(1, 3, 224, 224, device="cuda").to(dtype).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        model(x)
    handle.remove()
    index = blocks.index(full[0])
    return f"{name} block {index}, input {tuple(inputs['x'].shape)}", full[0], inputs["x"]


def run_blocks(args) -> int:
    """Times one fused block's forward, one call against Python, per dtype; returns the mismatches."""
    mismatches = 0
    for dtype in (getattr(torch, d) for d in args.dtypes.split(",")):
        what, block, x = timed_block(dtype)
        python, one_call = copy.deepcopy(block), copy.deepcopy(block)
        python._one_call = False
        with torch.no_grad():
            taken = ha._C._fused_inverted_residual_forward(x, *one_call._one_call_arguments()) is not None
            report = mismatch_report(one_call(x), python(x))
            mismatches += bool(report) or not taken
            per_call = time_runs({"Python": lambda: python(x), "one call": lambda: one_call(x)}, args.calls,
                                 args.runs)
        ratios = [a / b for a, b in zip(per_call["one call"], per_call["Python"])]
        note = (" MISMATCH " + report if report else "") + ("" if taken else " ONE CALL NOT TAKEN")
        print(f"| block forward, {str(dtype).replace('torch.', '')} | no_grad | {what}, one C++ call against "
              f"the Python forward | {statistics.median(per_call['Python']):.2f} | "
              f"{statistics.median(per_call['one call']):.2f} | **{statistics.median(ratios):.3f}** "
              f"({min(ratios):.3f}-{max(ratios):.3f}) | |{note}", flush=True)
    return mismatches


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="64,16,28,28")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--ops", default=",".join(OPS), help="the activations to time ('' for none)")
    parser.add_argument("--fused", action=argparse.BooleanOptionalAction, default=True,
                        help="time the fused forms too")
    parser.add_argument("--blocks", action=argparse.BooleanOptionalAction, default=False,
                        help="time a FusedInvertedResidual's forward at batch 1: one C++ call against Python")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA GPU visible to PyTorch: nothing was run")
        return 2
    shape = tuple(int(n) for n in args.shape.split(","))
    print(describe_gpu())
    print(f"PyTorch {torch.__version__}; shape {shape}; {args.runs} runs of {args.calls} calls; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("| op, dtype | grad mode | form | PyTorch µs/call | hardact µs/call | ratio hardact / PyTorch (min-max) "
          "| torch.ops.hardact µs/call |")
    print("|---|---|---|---|---|---|---|")
    mismatches, worst, fused_worst = 0, 0.0, 0.0
    if args.blocks:
        print("(block forward rows: the PyTorch column is hardact's Python forward, "
              "the hardact column its one call)")
        mismatches += run_blocks(args)
    generator = torch.Generator(device="cuda").manual_seed(7)
    for dtype in (getattr(torch, d) for d in args.dtypes.split(",")):
        x = (torch.randn(shape, device="cuda", generator=generator) * 4).to(dtype)
        if args.fused:
            fused_mismatches, fused_ratio = run_fused(x, args)
            mismatches += fused_mismatches
            fused_worst = max(fused_worst, fused_ratio)
        for name in [name for name in args.ops.split(",") if name]:
            for mode in MODES:
                grad_context = torch.no_grad() if mode == "no_grad" else contextlib.nullcontext()
                with grad_context:
                    for form, functions, (ours, theirs) in cases(name, x, mode):
                        report = mismatch_report(ours().detach(), theirs().detach())
                        mismatches += bool(report)
                        per_call = time_runs(functions, args.calls, args.runs)
                        ratios = [a / b for a, b in zip(per_call["hardact"], per_call["PyTorch"])]
                        ratio = statistics.median(ratios)
                        worst = max(worst, ratio)
                        ops_column = (f"{statistics.median(per_call['torch.ops']):.2f}" if "torch.ops" in per_call
                                      else "")
                        print(f"| {name}, {str(dtype).replace('torch.', '')} | {mode} | {form} | "
                              f"{statistics.median(per_call['PyTorch']):.2f} | {statistics.median(per_call['hardact']):.2f} "
                              f"| **{ratio:.3f}** ({min(ratios):.3f}-{max(ratios):.3f}) | {ops_column} |"
                              + (f" MISMATCH {report}" if report else ""), flush=True)
    if any(args.ops.split(",")):
        print(f"largest median ratio hardact / PyTorch: {worst:.3f} (target <= 1.25)")
    print(f"output mismatches: {mismatches}")
    if args.fused:
        print(f"fused forms, largest median ratio hardact / PyTorch's sequence: {fused_worst:.3f} (target <= 1)")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
