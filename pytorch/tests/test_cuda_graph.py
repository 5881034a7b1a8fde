"""cuda_graph_inference: a model's forward captured in a CUDA graph and replayed.

Without a GPU: its refusals (a CPU example input, a model in training mode, no warm-up). On a GPU:
a rewritten model (fuse_batchnorm_activation + fuse_squeeze_excitation) replayed on new inputs
gives eager's results bit for bit, in float32 and bfloat16, channels-last; the output is the
graph's own tensor unless copy_output; another shape, dtype or device is refused; and a real
network (torchvision's MobileNetV3, random weights), rewritten, replays as it runs eagerly.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import hardact_torch as ha
from checklib import NAMES, mismatch_report, raises

SEED = 37


def block(channels: int = 16) -> nn.Module:
    """A MobileNetV3-like block: convolution, BatchNorm + hardswish, squeeze-excitation gated by a
    hard sigmoid, a projection BatchNorm and a residual add."""

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.expand = nn.Sequential(nn.Conv2d(channels, 2 * channels, 1, bias=False), nn.BatchNorm2d(2 * channels),
                                        nn.Hardswish())
            torchvision_ops = pytest.importorskip("torchvision.ops")
            self.se = torchvision_ops.SqueezeExcitation(2 * channels, channels // 2, scale_activation=nn.Hardsigmoid)
            self.project = nn.Sequential(nn.Conv2d(2 * channels, channels, 1, bias=False), nn.BatchNorm2d(channels))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.project(self.se(self.expand(x)))

    return Block()


def test_refusals(checks) -> None:
    model = nn.Sequential(nn.Linear(4, 4)).eval()
    checks.record(raises(ValueError, lambda: ha.cuda_graph_inference(model, torch.zeros(2, 4))),
                  "a CPU example input is refused")
    checks.record(raises(ValueError, lambda: ha.cuda_graph_inference(model, "not a tensor")),
                  "an example that is not a tensor is refused")
    checks.record(raises(RuntimeError, lambda: ha.cuda_graph_inference(nn.Linear(4, 4).train(), torch.zeros(2, 4))),
                  "a model in training mode is refused")
    checks.record(raises(ValueError, lambda: ha.cuda_graph_inference(model, torch.zeros(2, 4), warmup=0)),
                  "no warm-up call is refused")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16), ids=NAMES.get)
def test_replays_equal_eager(checks, generator, dtype) -> None:
    torch.manual_seed(SEED)
    model = block().cuda().eval().to(dtype=dtype, memory_format=torch.channels_last)
    ha.fuse_batchnorm_activation(model)
    ha.fuse_squeeze_excitation(model)
    shape = (8, 16, 14, 14)
    inputs = [torch.randn(shape, device="cuda", generator=generator).to(dtype)
              .contiguous(memory_format=torch.channels_last) for _ in range(3)]
    forward = ha.cuda_graph_inference(model, inputs[0])
    first = None
    for i, x in enumerate(inputs):
        with torch.no_grad():
            expected = model(x)
        got = forward(x)
        checks.record(mismatch_report(got, expected, x), f"{NAMES[dtype]} replay {i} equals the eager forward")
        if first is None:
            first = got
        checks.record("" if got.data_ptr() == first.data_ptr() else "a new tensor",
                      f"{NAMES[dtype]} replay {i} returns the graph's output tensor")
    kept = ha.cuda_graph_inference(model, inputs[0], copy_output=True)
    a = kept(inputs[1])
    b = kept(inputs[2])
    with torch.no_grad():
        checks.record(mismatch_report(a, model(inputs[1]), inputs[1]),
                      f"{NAMES[dtype]} copy_output: an earlier output survives the next call")
        checks.record(mismatch_report(b, model(inputs[2]), inputs[2]), f"{NAMES[dtype]} copy_output: the next output")
    checks.record(raises(ValueError, lambda: forward(torch.zeros(4, 16, 14, 14, device="cuda", dtype=dtype))),
                  "another shape is refused")
    checks.record(raises(ValueError, lambda: forward(inputs[0].double())), "another dtype is refused")
    checks.record(raises(ValueError, lambda: forward(inputs[0].cpu())), "another device is refused")
    # A contiguous (NCHW) input of the same shape is copied into the channels-last captured input.
    x = inputs[1].contiguous()
    with torch.no_grad():
        checks.record(mismatch_report(forward(x), model(inputs[1]), x), f"{NAMES[dtype]} an NCHW input of the shape")


@pytest.mark.cuda
def test_real_model_replays(checks, generator) -> None:
    """torchvision's MobileNetV3 (random weights), rewritten, in a graph: eager's results."""
    models = pytest.importorskip("torchvision.models")
    torch.manual_seed(SEED)
    model = models.mobilenet_v3_small(weights=None).cuda().eval().to(memory_format=torch.channels_last)
    rewritten = copy.deepcopy(model)
    fused = ha.fuse_batchnorm_activation(rewritten) + ha.fuse_squeeze_excitation(rewritten)
    checks.record("" if fused > 0 else "nothing was rewritten", "mobilenet_v3_small has blocks to rewrite")
    x = torch.randn(16, 3, 224, 224, device="cuda", generator=generator).contiguous(memory_format=torch.channels_last)
    forward = ha.cuda_graph_inference(rewritten, x)
    for i in range(2):
        x = torch.randn(16, 3, 224, 224, device="cuda", generator=generator).contiguous(memory_format=torch.channels_last)
        with torch.no_grad():
            expected = rewritten(x)
        checks.record(mismatch_report(forward(x), expected, x), f"mobilenet_v3_small rewritten, replay {i}")
