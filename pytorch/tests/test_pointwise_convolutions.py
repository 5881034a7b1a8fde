"""Tests of PointwiseConv2d and replace_pointwise_convolutions: a model's 1x1 convolutions, whose
channels-last float16/bfloat16 forward is one matrix product (_C._pointwise_conv2d).

    pytest pytorch/tests/test_pointwise_convolutions.py    # the tests marked cuda skip without a GPU

Without a GPU: replace_pointwise_convolutions changes the class of exactly the 1x1 convolutions at
stride 1, no padding, dilation 1, one group, channels in multiples of 8 (the module itself: its
state_dict, hooks and the blocks holding it unchanged), a second call changes none;
optimize_for_inference leaves them, and the change after it renews a fused block's one-call plan;
on the CPU and the meta device the forward is nn.Conv2d's, bit for bit; under torch.compile it
traces nn.Conv2d's forward.
With a GPU: the 16-bit products (_C._linear_activation) are within float32 accumulation's rounding
of float64; on channels-last float16/bfloat16 input, where no gradient is wanted, the forward gives
the product's bits (the (N * H * W, C) view times the weight), within the rounding of cuDNN's
convolution of float64's, as a channels-last tensor, at batch 1 and odd sizes, with and without a
bias; float32, a channels-first input, a gradient wanted and autocast run nn.Conv2d's forward, bit
for bit, and the gradients reach the input and the weight; torch.jit.trace records the
convolution. Five networks rewritten, then changed, in bfloat16 and float16 at batch 1 and 3:
within 4 x the original's own error of float64, a channels-first input too, and a CUDA graph
replaying eager's bits.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import hardact_torch as ha
from checklib import mismatch_report, raises
from hardact_torch import _C
from test_fused_blocks import build  # random weights, gentle BatchNorms, eval, CPU; skips a missing network

SEED = 61


def relative_difference(got: torch.Tensor, expected: torch.Tensor) -> float:
    """The largest difference relative to the largest expected value."""
    return (got.double() - expected.double()).abs().max().item() / expected.double().abs().max().item()


def bit_report(got: torch.Tensor, expected: torch.Tensor) -> str:
    """'' where got is expected bit for bit, with its shape and strides; else what differs."""
    if got.shape != expected.shape or got.stride() != expected.stride():
        return f"shape {tuple(got.shape)} strides {got.stride()} against {tuple(expected.shape)} {expected.stride()}"
    return mismatch_report(got, expected)


# ---- no GPU --------------------------------------------------------------------------------------

def convolutions() -> nn.Sequential:
    """Pointwise ones (1x1, stride 1, channels multiples of 8, with or without a bias) between ones
    that are not: 3x3, stride 2, grouped, 12 channels, padded, dilated, reflect padding."""
    return nn.Sequential(
        nn.Conv2d(16, 32, 1, bias=False), nn.Conv2d(32, 32, 3, padding=1), nn.Conv2d(32, 24, 1),
        nn.Conv2d(24, 24, 1, stride=2), nn.Conv2d(24, 24, 1, groups=2), nn.Conv2d(24, 12, 1),
        nn.Conv2d(12, 16, 1), nn.Conv2d(16, 16, 1, padding=1), nn.Conv2d(16, 16, 1, dilation=2),
        nn.Conv2d(16, 16, 1, padding=1, padding_mode="reflect"), nn.Conv2d(16, 8, 1))


def test_replace_changes_exactly_the_pointwise_convolutions(checks) -> None:
    model = convolutions()
    before = {name: type(m) for name, m in model.named_children()}
    keys = list(model.state_dict())
    hook_calls = []
    model[0].register_forward_hook(lambda *args: hook_calls.append(1))
    x = torch.randn(2, 16, 9, 11)
    expected = model(x)
    count = ha.replace_pointwise_convolutions(model)
    changed = [name for name, m in model.named_children() if type(m) is not before[name]]
    checks.record("" if count == 3 and changed == ["0", "2", "10"] else f"{count}: {changed}",
                  "replace: the three 1x1 convolutions at stride 1 with channels in multiples of 8, and no other")
    checks.record("" if all(isinstance(model[int(i)], ha.PointwiseConv2d) for i in changed) else "other types",
                  "replace: they are PointwiseConv2d")
    checks.record("" if list(model.state_dict()) == keys else "keys differ", "replace: the state_dict's keys stay")
    got = model(x)
    checks.record(bit_report(got, expected), "CPU: nn.Conv2d's forward, bit for bit")
    checks.record("" if len(hook_calls) == 2 else f"{len(hook_calls)} calls", "replace: a forward hook stays")
    checks.record("" if ha.replace_pointwise_convolutions(model) == 0 else "changed more",
                  "replace: a second call changes none")
    meta = convolutions().to("meta")
    ha.replace_pointwise_convolutions(meta)
    out = meta(torch.randn(2, 16, 9, 11, device="meta").contiguous(memory_format=torch.channels_last))
    checks.record("" if out.shape == expected.shape else f"shape {tuple(out.shape)}", "meta: the output's shape")


def test_optimize_for_inference_leaves_them(checks) -> None:
    """optimize_for_inference keeps nn.Conv2d (the change is the caller's choice); the change after it
    reaches the convolutions inside a fused block and renews the block's one-call plan."""
    norm = nn.BatchNorm2d(16)
    model = nn.Sequential(nn.Conv2d(8, 16, 1, bias=False), norm, nn.Hardswish(), nn.Conv2d(16, 8, 1)).eval()
    counts = ha.optimize_for_inference(model)
    checks.record("" if "pointwise_convolutions" not in counts and type(model[0]) is nn.Conv2d else f"{counts}",
                  "optimize_for_inference: no pointwise convolution")
    checks.record("" if ha.replace_pointwise_convolutions(model) == 2 and type(model[-1]) is ha.PointwiseConv2d
                  else f"{[type(m).__name__ for m in model]}", "replace after optimize_for_inference: both")
    scale_shift = ha.BatchNormActivation(torch.ones(16), torch.zeros(16), "hardswish")
    block = ha.FusedInvertedResidual((nn.Conv2d(8, 16, 1, bias=False), scale_shift),
                                     (nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False), scale_shift),
                                     None, (nn.Conv2d(16, 8, 1, bias=False), scale_shift), True).eval()
    before = block._one_call_arguments()[1]
    ha.replace_pointwise_convolutions(nn.Sequential(block))
    after = block._one_call_arguments()[1]
    checks.record("" if (before[0][4], before[5][4], after[0][4], after[2][4], after[5][4])
                  == (False, False, True, False, True) else f"{before} -> {after}",
                  "one-call plan: remade, the expansion and projection flagged pointwise, the depthwise not")


def test_compile_traces_the_convolution(checks) -> None:
    conv = nn.Conv2d(16, 24, 1)
    expected = conv(torch.randn(1, 16, 5, 5))
    ha.replace_pointwise_convolutions(nn.Sequential(conv))
    x = torch.randn(2, 16, 7, 5, dtype=torch.bfloat16).contiguous(memory_format=torch.channels_last)
    conv = conv.to(torch.bfloat16)
    compiled = torch.compile(conv, backend="aot_eager", fullgraph=True)
    with torch.no_grad():
        checks.record(bit_report(compiled(x), F.conv2d(x, conv.weight, conv.bias)),
                      "torch.compile(fullgraph=True, aot_eager): nn.Conv2d's forward traced, bit for bit")
    checks.record("" if expected.shape == (1, 24, 5, 5) else "shape", "the convolution before the change")
    checks.record(raises(TypeError, lambda: _C._pointwise_conv2d(x, conv.weight, None, (1, 1), (0, 0), (1, 1))),
                  "binding: 6 arguments")


# ---- GPU -----------------------------------------------------------------------------------------

@pytest.mark.cuda
def test_linear_activation_16_bit(checks, generator) -> None:
    """_C._linear_activation on float16 and bfloat16: within 2 units of the dtype's rounding of the
    float64 result (float32 accumulation, one rounding), with and without bias and ReLU, at network
    and odd shapes; a bias of another dtype is refused."""
    for dtype, unit in ((torch.float16, 2 ** -10), (torch.bfloat16, 2 ** -7)):
        for n, k, m in ((3136, 24, 72), (49, 960, 160), (1, 16, 8), (5, 40, 24), (7, 8, 16)):
            x = torch.randn(n, k, device="cuda", generator=generator).to(dtype)
            weight = (torch.randn(m, k, device="cuda", generator=generator) / k ** 0.5).to(dtype)
            bias = torch.randn(m, device="cuda", generator=generator).to(dtype)
            for with_bias in (False, True):
                for relu in (False, True):
                    exact = x.double() @ weight.double().t() + (bias.double() if with_bias else 0)
                    exact = exact.clamp_min(0) if relu else exact
                    got = _C._linear_activation(x, weight, bias if with_bias else None, relu, False)
                    difference = (got.double() - exact).abs().max().item()
                    bound = 2 * unit * max(exact.abs().max().item(), 1.0)
                    checks.record("" if got.dtype == dtype and got.shape == (n, m) and difference <= bound
                                  else f"{got.dtype} {tuple(got.shape)}, difference {difference:.3g} > {bound:.3g}",
                                  f"_linear_activation {dtype} {n}x{k} @ {k}x{m}, bias {with_bias}, relu {relu}")
        checks.record(raises(ValueError, lambda: _C._linear_activation(x, weight, bias.float(), False, False)),
                      f"_linear_activation {dtype}: a float32 bias is refused")


@pytest.mark.cuda
def test_pointwise_forward_is_the_product(checks, generator) -> None:
    """Channels-last 16-bit input, no gradient: the product's bits, channels-last, close to float64;
    elsewhere nn.Conv2d's forward bit for bit; with a gradient wanted, its gradients."""
    shapes = [(1, 16, 7, 5, 24), (3, 40, 13, 11, 8), (8, 72, 28, 28, 24), (2, 960, 7, 7, 160)]
    for dtype in (torch.float16, torch.bfloat16):
        for n, c, h, w, m in shapes:
            for with_bias in (False, True):
                conv = nn.Conv2d(c, m, 1, bias=with_bias).to("cuda", dtype)
                ha.replace_pointwise_convolutions(nn.Sequential(conv))
                x = torch.randn(n, c, h, w, device="cuda", generator=generator).to(dtype)
                x = x.contiguous(memory_format=torch.channels_last)
                what = f"{dtype} {n}x{c}x{h}x{w} -> {m}, bias {with_bias}"
                with torch.no_grad():
                    got = conv(x)
                    rows = x.permute(0, 2, 3, 1).reshape(-1, c)
                    product = _C._linear_activation(rows, conv.weight.view(m, c), conv.bias, False, False)
                    expected = product.view(n, h, w, m).permute(0, 3, 1, 2)
                    checks.record(bit_report(got, expected), f"{what}: the product's bits, channels-last")
                    cudnn = F.conv2d(x, conv.weight, conv.bias)
                    bias64 = None if conv.bias is None else conv.bias.double()
                    exact = F.conv2d(x.double(), conv.weight.double(), bias64)
                    ours, theirs = relative_difference(got, exact), relative_difference(cudnn, exact)
                    checks.record("" if ours <= 2 * theirs + 1e-3 else f"{ours:.3g} against cuDNN's {theirs:.3g}",
                                  f"{what}: within twice cuDNN's difference from float64")
                    channels_first = x.contiguous()
                    checks.record(bit_report(conv(channels_first), F.conv2d(channels_first, conv.weight, conv.bias)),
                                  f"{what}, channels-first: nn.Conv2d's forward")
                    with torch.autocast("cuda", dtype=torch.float16):
                        checks.record(bit_report(conv(x), F.conv2d(x, conv.weight, conv.bias)),
                                      f"{what}, autocast: nn.Conv2d's forward")
                leaf = x.detach().requires_grad_()
                out = conv(leaf)
                reference_leaf = x.detach().requires_grad_()
                reference = F.conv2d(reference_leaf, conv.weight, conv.bias)
                checks.record(bit_report(out, reference), f"{what}, gradient wanted: nn.Conv2d's forward")
                out.float().sum().backward()
                conv.weight.grad = None
                reference.float().sum().backward()
                checks.record(bit_report(leaf.grad, reference_leaf.grad), f"{what}: the input's gradient")
                conv.weight.grad = None
        conv32 = nn.Conv2d(16, 24, 1).cuda()
        ha.replace_pointwise_convolutions(nn.Sequential(conv32))
        x32 = torch.randn(2, 16, 9, 9, device="cuda", generator=generator).contiguous(memory_format=torch.channels_last)
        with torch.no_grad():
            checks.record(bit_report(conv32(x32), F.conv2d(x32, conv32.weight, conv32.bias)),
                          "float32: nn.Conv2d's forward, bit for bit")


@pytest.mark.cuda
def test_trace_records_the_convolution(checks, generator) -> None:
    """torch.jit.trace records nn.Conv2d's convolution (the product is no operator a trace could
    record): the trace run on another input gives F.conv2d's bits."""
    conv = nn.Conv2d(16, 24, 1).to("cuda", torch.bfloat16)
    ha.replace_pointwise_convolutions(nn.Sequential(conv))
    x, other = (torch.randn(2, 16, 9, 7, device="cuda", generator=generator).to(torch.bfloat16)
                .contiguous(memory_format=torch.channels_last) for _ in range(2))
    with torch.no_grad():
        traced = torch.jit.trace(conv, x, check_trace=False)  # its check would rerun the module untraced
        checks.record(bit_report(traced(other), F.conv2d(other, conv.weight, conv.bias)),
                      "torch.jit.trace: the convolution recorded, F.conv2d's bits on another input")


# (library, model): networks whose 1x1 convolutions run as module calls, in the one-call block
# forward, and through a fused block's own weights (StarNet's).
NETWORKS = [("timm", "mobilenetv3_small_050"), ("timm", "lcnet_050"), ("timm", "starnet_s050"),
            ("timm", "ese_vovnet19b_dw"), ("torchvision", "mobilenet_v2")]
# Those whose fused blocks run their convolutions from Python (the others' run in a one-call C++ forward).
PYTHON_FORWARD_BLOCKS = ("ese_vovnet19b_dw",)


@pytest.mark.cuda
@pytest.mark.parametrize("library,name", NETWORKS, ids=[name for _, name in NETWORKS])
def test_networks_with_pointwise_products(checks, monkeypatch, library, name) -> None:
    """optimize_for_inference then replace_pointwise_convolutions, bfloat16 and float16, batch 1 and 3
    at 225 x 231, channels-last: within 4 x the original's own error of float64 (as
    test_model_families holds optimize_for_inference), the products taken, a channels-first input
    held to the same bound, and a CUDA graph replaying eager's bits."""
    calls = {"products": 0}
    binding = _C._pointwise_conv2d

    def counting(*args):
        out = binding(*args)
        calls["products"] += out is not None
        return out

    monkeypatch.setattr(_C, "_pointwise_conv2d", counting)
    base = build(library, name).cuda().to(memory_format=torch.channels_last)
    rewritten = copy.deepcopy(base)
    ha.optimize_for_inference(rewritten)
    count = ha.replace_pointwise_convolutions(rewritten)
    checks.record("" if count > 0 else "none", f"{name}: {count} pointwise convolutions")
    generator = torch.Generator(device="cuda").manual_seed(SEED)
    for batch in (1, 3):
        x64 = torch.randn(batch, 3, 225, 231, device="cuda", dtype=torch.float64, generator=generator)
        x64 = x64.contiguous(memory_format=torch.channels_last)
        with torch.no_grad():
            reference = copy.deepcopy(base).double()(x64)
        for dtype in (torch.bfloat16, torch.float16):
            x = x64.to(dtype)
            original, rewrite = copy.deepcopy(base).to(dtype), copy.deepcopy(rewritten).to(dtype)
            with torch.no_grad():
                own = (original(x).double() - reference).abs().max().item()
                got = rewrite(x)
                for what, output in (("eager", got), ("channels-first input", rewrite(x.contiguous()))):
                    error = (output.double() - reference).abs().max().item()
                    checks.record("" if error <= 4 * own else f"error {error:.3g} > 4 x the original's {own:.3g}",
                                  f"{name} {dtype} batch {batch} {what}: error {error:.3g}, the original's {own:.3g}")
            replayed = ha.cuda_graph_inference(rewrite, x)(x)
            checks.record(mismatch_report(replayed, got), f"{name} {dtype} batch {batch}: the graph's bits are eager's")
    if name in PYTHON_FORWARD_BLOCKS:
        checks.record("" if calls["products"] > 0 else "none", f"{name}: products through the binding")
