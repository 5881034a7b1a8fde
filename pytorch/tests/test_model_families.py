"""One network of every family with a hard activation in timm and torchvision (docs/field.md), rewritten
by optimize_for_inference, against the same network run in float64.

    pytest pytorch/tests/test_model_families.py            # the GPU tests skip without a GPU
    pytest pytorch/tests/test_model_families.py -k ghost

Each model is built with random weights and BatchNorm statistics and affine parameters drawn away
from their defaults (test_fused_blocks.gentle_batchnorms), in eval mode and channels_last, on inputs
of batch 1 and odd sizes (225 x 231; 224 x 224 where the network's attention is sized for it). For
float32 and bfloat16, without gradients:
  - the rewrite's largest difference from the float64 run is at most 4 x the original's own (both
    in the same dtype, on the same input);
  - a CUDA graph of the rewrite (cuda_graph_inference) replays the rewrite eager's output bit for bit;
  - a channels-first input into the channels-last rewrite is held to the same bound;
and in float32 with gradients enabled (the differentiable forms) the same bound.
A model the installed library does not have is skipped, said so. Without a GPU: every model is built
and rewritten on the meta device, and the rewrite reports what it replaced.
"""

from __future__ import annotations

import copy

import pytest
import torch

import hardact_torch as ha
from checklib import mismatch_report
from test_fused_blocks import build  # random weights, gentle BatchNorms, eval, CPU; skips a missing network

SEED = 53
ODD = (225, 231)
SQUARE = (224, 224)
# (library, model, input H x W): the smallest model of each family of docs/field.md (timm's ghostnet
# file holds three generations, each its own block classes).
FAMILIES = [
    ("timm", "mobilenetv3_small_050", ODD),
    ("timm", "lcnet_050", ODD),
    ("timm", "hardcorenas_a", ODD),
    ("timm", "efficientnet_lite0", ODD),
    ("timm", "ghostnet_050", ODD),
    ("timm", "ghostnetv2_100", ODD),
    ("timm", "ghostnetv3_050", ODD),
    ("timm", "repghostnet_050", ODD),
    ("timm", "rexnet_100", ODD),
    ("timm", "starnet_s050", ODD),
    ("timm", "cpubone_s0", ODD),
    ("timm", "lowformer_b0", SQUARE),
    ("timm", "efficientvit_b0", ODD),
    ("timm", "levit_128s", SQUARE),
    ("timm", "ese_vovnet19b_dw", ODD),
    ("timm", "rdnet_tiny", ODD),
    ("timm", "cspnext_tiny", ODD),
    ("torchvision", "mobilenet_v2", ODD),
    ("torchvision", "mobilenet_v3_small", ODD),
]
IDS = [name for _, name, _ in FAMILIES]
BOUND = 4.0  # the rewrite's error against float64, in units of the original's own


def largest_difference(got: torch.Tensor, reference: torch.Tensor) -> float:
    return (got.double() - reference).abs().max().item()


@pytest.mark.parametrize("library,name,size", FAMILIES, ids=IDS)
def test_rewrite_on_meta(checks, library, name, size) -> None:
    with torch.device("meta"):
        model = build(library, name)
    counts = ha.optimize_for_inference(model)
    replaced = sum(counts.values())
    checks.record("" if replaced > 0 else f"nothing replaced: {counts}", f"{name}: {counts}")
    # Everything the rewrite made is still on the meta device (no buffer created elsewhere).
    devices = {t.device.type for t in list(model.parameters()) + list(model.buffers())}
    checks.record("" if devices == {"meta"} else f"devices {devices}", f"{name}: parameters and buffers stay on meta")


@pytest.mark.cuda
@pytest.mark.parametrize("library,name,size", FAMILIES, ids=IDS)
def test_rewrite_against_float64(checks, library, name, size) -> None:
    base = build(library, name).cuda().to(memory_format=torch.channels_last)
    generator = torch.Generator(device="cuda").manual_seed(SEED)
    x64 = torch.randn(1, 3, *size, device="cuda", dtype=torch.float64, generator=generator)
    x64 = x64.contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        reference = copy.deepcopy(base).double()(x64)
    rewritten = copy.deepcopy(base)
    counts = ha.optimize_for_inference(rewritten)
    print(f"{name}: {counts}")
    for dtype in (torch.float32, torch.bfloat16):
        x = x64.to(dtype)
        original, rewrite = copy.deepcopy(base).to(dtype), copy.deepcopy(rewritten).to(dtype)
        with torch.no_grad():
            expected = original(x)
            got = rewrite(x)
            got_channels_first = rewrite(x.contiguous())
        own = largest_difference(expected, reference)
        for what, output in (("eager", got), ("channels-first input", got_channels_first)):
            error = largest_difference(output, reference)
            report = "" if error <= BOUND * own else f"error {error:.3g} > {BOUND} x the original's {own:.3g}"
            checks.record(report, f"{name} {dtype} {what}: error {error:.3g}, the original's {own:.3g}")
        forward = ha.cuda_graph_inference(rewrite, x)
        replayed = forward(x)
        checks.record(mismatch_report(replayed, got), f"{name} {dtype}: CUDA graph replay equals eager bit for bit")
        if dtype == torch.float32:
            with torch.enable_grad():
                differentiable = rewrite(x.clone().requires_grad_())
            error = largest_difference(differentiable.detach(), reference)
            report = "" if error <= BOUND * own else f"error {error:.3g} > {BOUND} x the original's {own:.3g}"
            checks.record(report, f"{name} {dtype} with gradients: error {error:.3g}, the original's {own:.3g}")
