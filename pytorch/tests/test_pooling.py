"""Tests of MaxPool2d and replace_max_pooling: nn.MaxPool2d whose forward pools channels-last CUDA
tensors with hardact's kernel (_C._max_pool2d), F.max_pool2d's bits without ATen's indices.

    pytest pytorch/tests/test_pooling.py    # the tests marked cuda skip without a GPU

Without a GPU: replace_max_pooling replaces exactly the nn.MaxPool2d modules with dilation 1 and no
indices (not a subclass, not a dilated one, not one returning indices), keeping every argument; a
second call replaces none; optimize_for_inference counts them; on the CPU and the meta device the
forward is nn.MaxPool2d's, and a module PyTorch refuses raises PyTorch's error.
With a GPU: on channels-last float32, float64, float16 and bfloat16 inputs full of ties, signed
zeros, infinities and NaNs, every window setting of the list, floor and ceil mode, odd sizes, batch 0
and 1, channels that are 16-byte vectors and channels that are not, an input off 16-byte alignment:
the output is F.max_pool2d's bit for bit, channels-last; a channels-first input, a gradient wanted
and an input too small for the window run nn.MaxPool2d's forward (its gradient, its error); a CUDA
graph replays eager's bits.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import hardact_torch as ha
from checklib import mismatch_report, raises

SEED = 67

# (kernel_size, stride, padding, ceil_mode): VoVNet's, a ResNet stem's, 2 x 2, uneven windows.
SETTINGS = [(3, 2, 0, True), (3, 2, 0, False), (3, 2, 1, False), (3, 2, 1, True), (2, 2, 0, False), (2, 1, 1, True),
            ((2, 3), (1, 2), (1, 0), False), ((3, 1), 2, (1, 0), True), (1, 1, 0, False), (4, 3, 2, True)]


def pooled(settings) -> tuple[ha.MaxPool2d, nn.MaxPool2d]:
    kernel, stride, padding, ceil = settings
    return ha.MaxPool2d(kernel, stride, padding, ceil_mode=ceil), nn.MaxPool2d(kernel, stride, padding, ceil_mode=ceil)


def bit_report(got: torch.Tensor, expected: torch.Tensor) -> str:
    """'' where got is expected bit for bit (NaN payloads too), with its shape and strides; else what differs."""
    if got.shape != expected.shape or got.stride() != expected.stride():
        return f"shape {tuple(got.shape)} strides {got.stride()} against {tuple(expected.shape)} {expected.stride()}"
    report = mismatch_report(got, expected)
    if report or got.numel() == 0:
        return report
    bits = {8: torch.int64, 4: torch.int32, 2: torch.int16}[got.element_size()]
    same = torch.equal(got.contiguous().view(bits), expected.contiguous().view(bits))
    return "" if same else "the same values, other bits (a NaN's payload or a zero's sign)"


# ---- no GPU --------------------------------------------------------------------------------------

class Subclassed(nn.MaxPool2d):
    pass


def test_replace_max_pooling_replaces_exactly_plain_max_pooling(checks):
    model = nn.Sequential(nn.MaxPool2d(3, 2, ceil_mode=True), nn.Sequential(nn.MaxPool2d((2, 3), (1, 2), (1, 0))),
                          nn.MaxPool2d(2, dilation=2), nn.MaxPool2d(2, return_indices=True), Subclassed(2),
                          nn.AvgPool2d(2))
    checks.record("" if ha.replace_max_pooling(model) == 2 else "not 2 replaced", "count")
    kinds = [type(m) for m in (model[0], model[1][0], model[2], model[3], model[4], model[5])]
    checks.record("" if kinds == [ha.MaxPool2d, ha.MaxPool2d, nn.MaxPool2d, nn.MaxPool2d, Subclassed, nn.AvgPool2d]
                  else f"{kinds}", "which were replaced")
    first, second = model[0], model[1][0]
    checks.record("" if (first.kernel_size, first.stride, first.padding, first.dilation, first.ceil_mode)
                  == (3, 2, 0, 1, True) else repr(first), "arguments kept")
    checks.record("" if (second.kernel_size, second.stride, second.padding) == ((2, 3), (1, 2), (1, 0))
                  else repr(second), "tuple arguments kept")
    checks.record("" if ha.replace_max_pooling(model) == 0 else "a second call replaced some", "second call")
    network = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(3, 2)).eval()
    checks.record("" if ha.optimize_for_inference(network)["max_pools"] == 1 else "not counted",
                  "optimize_for_inference")


def test_max_pool_forward_is_pytorchs_off_the_gpu(checks):
    generator = torch.Generator().manual_seed(SEED)
    for settings in SETTINGS:
        ours, theirs = pooled(settings)
        for x in (torch.randn(2, 5, 9, 11, generator=generator),
                  torch.randn(2, 5, 9, 11, generator=generator).to(memory_format=torch.channels_last)):
            checks.record(bit_report(ours(x), theirs(x)), f"CPU {settings}")
        meta = ours(torch.empty(2, 5, 9, 11, device="meta", memory_format=torch.channels_last))
        checks.record("" if meta.shape == theirs(torch.randn(2, 5, 9, 11)).shape else f"{meta.shape}",
                      f"meta {settings}")
    x = torch.randn(1, 2, 4, 4)
    checks.record(raises(RuntimeError, lambda: ha.MaxPool2d(3, padding=2)(x)), "padding over half the window")
    checks.record(raises(RuntimeError, lambda: ha.MaxPool2d(5)(x)), "an input under the window")


# ---- GPU -----------------------------------------------------------------------------------------

def hard_values(shape, dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    """Small multiples of 0.75 (many ties), zeros of both signs, infinities and NaNs of several payloads."""
    x = torch.randint(-3, 4, shape, generator=generator, device="cuda").to(dtype) * 0.75
    pick = torch.randint(0, 200, shape, generator=generator, device="cuda")
    x = torch.where((pick == 10) & (x == 0), -0.0, x)
    x = torch.where(pick == 3, float("inf"), torch.where(pick == 4, float("-inf"), x))
    bits = {8: torch.int64, 4: torch.int32, 2: torch.int16}[x.element_size()]
    nan = torch.full(shape, float("nan"), dtype=dtype, device="cuda").view(bits) | (pick % 3 + 1).to(bits)
    return torch.where(pick < 3, nan.view(dtype), x)


@pytest.mark.cuda
def test_max_pool_is_pytorchs_bit_for_bit(checks, generator):
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        for settings in SETTINGS:
            ours, theirs = pooled(settings)
            for shape in ((2, 16, 9, 11), (1, 3, 225, 231), (3, 20, 14, 14), (0, 16, 8, 8), (1, 64, 1, 1)):
                if shape[2] + 2 * min(ours._settings[4:6]) < max(ours._settings[0:2]):
                    continue
                x = hard_values(shape, dtype, generator).to(memory_format=torch.channels_last)
                checks.record(bit_report(ours(x), theirs(x)), f"{dtype} {settings} {shape}")
        # Off 16-byte alignment: the storage starts an element later.
        ours, theirs = pooled(SETTINGS[0])
        base = hard_values((1 + 2 * 16 * 9 * 11,), dtype, generator)
        x = base[1:].view(2, 9, 11, 16).permute(0, 3, 1, 2)
        checks.record("" if x.data_ptr() % 16 and x.is_contiguous(memory_format=torch.channels_last)
                      else "aligned", f"{dtype} misaligned input")
        checks.record(bit_report(ours(x), theirs(x)), f"{dtype} misaligned")


@pytest.mark.cuda
def test_max_pool_hands_the_rest_to_pytorch(checks, generator):
    ours, theirs = pooled(SETTINGS[0])
    x = torch.randn(2, 8, 9, 9, device="cuda", generator=generator)
    checks.record(bit_report(ours(x), theirs(x)), "channels-first")
    leaf = x.to(memory_format=torch.channels_last).requires_grad_()
    ours(leaf).sum().backward()
    mine = leaf.grad
    leaf.grad = None
    theirs(leaf).sum().backward()
    checks.record(bit_report(mine, leaf.grad), "gradient")
    small = torch.randn(1, 8, 2, 2, device="cuda", generator=generator).to(memory_format=torch.channels_last)
    checks.record(raises(RuntimeError, lambda: ha.MaxPool2d(3)(small)), "an input under the window")
    checks.record(raises(RuntimeError, lambda: ha.MaxPool2d(3, padding=2)(x)), "padding over half the window")


@pytest.mark.cuda
def test_max_pool_in_a_cuda_graph(checks, generator):
    ours, _ = pooled(SETTINGS[0])
    x = torch.randn(4, 32, 28, 28, device="cuda", generator=generator).to(memory_format=torch.channels_last)
    eager = ours(x)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        ours(x)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = ours(x)
    graph.replay()
    torch.cuda.synchronize()
    checks.record(bit_report(captured, eager), "graph replay")
