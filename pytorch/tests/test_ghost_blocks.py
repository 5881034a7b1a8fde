"""Tests of fuse_blocks on timm's ghost bottlenecks (GhostNet v1 and v2's GhostBottleneck, GhostNet v3's
GhostBottleneckV3, RepGhostNet's RepGhostBottleneck) rewritten as FusedGhostBottleneck.

    pytest pytorch/tests/test_ghost_blocks.py              # the tests marked cuda skip without a GPU

Without a GPU: on meta-built networks, every ghost bottleneck of ghostnet_100, ghostnetv2_100,
ghostnetv3_100 and repghostnet_100 (and the 0.5x widths) is rewritten, in either order with the
other rewrites, with no BatchNorm or squeeze-excitation module left inside, and none twice; every
depthwise stage of the default widths is one the one-kernel stage covers; a block holding anything
the matcher cannot prove equivalent is left alone while the others fuse. On the CPU in float64,
with the fused ops' compile switches patched (their torch forms): the rewritten networks against
the originals, BatchNorms away from their defaults, both layouts, even and odd sizes (v2's
attention gate broadcast and interpolated), each block keeping its input's layout; the one-kernel
depthwise stage's parameters (RepGhost's identity branch in the centre tap, v3's branches summed)
computing the stage; torch.compile on the CPU tracing a rewritten network. With a GPU: the
rewritten networks against a float64 run of the original, float32 and bfloat16, both layouts,
batch 1 and 3, 225x231 and 224x224, without gradients (the one-kernel stage taken in channels-last) and with
them (outputs and gradients against the original's); where the one kernel declines, the halves
concatenated by hardact's copy, torch.cat's bits.
"""

from __future__ import annotations

import contextlib
import copy
from unittest import mock

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import hardact_torch as ha
import hardact_torch.functional as functional
import hardact_torch.rewrite.fused_block as fused_block
import hardact_torch.rewrite.ghost_blocks as ghost_blocks
from checklib import Custom, edited_block_left_alone, mismatch_report, record_blocks_fused, randomise_batchnorms

timm = pytest.importorskip("timm")

SEED = 53
GHOST_CLASSES = ("GhostBottleneck", "GhostBottleneckV3", "RepGhostBottleneck")
# The networks (the default widths, then the smallest, whose halves are not all a multiple of 4).
MODELS = ["ghostnet_100", "ghostnetv2_100", "ghostnetv3_100", "repghostnet_100", "ghostnet_050", "ghostnetv3_050",
          "repghostnet_050"]
GPU_MODELS = ["ghostnet_050", "ghostnetv2_100", "ghostnetv3_050", "repghostnet_050"]


def count_blocks(model: nn.Module) -> int:
    return sum(1 for m in model.modules() if type(m).__name__ in GHOST_CLASSES)


def build(name: str, meta: bool = False) -> nn.Module:
    torch.manual_seed(0)
    if meta:
        with torch.device("meta"):
            return timm.create_model(name, pretrained=False).eval()
    model = timm.create_model(name, pretrained=False)
    randomise_batchnorms(model)
    return model.eval()


@contextlib.contextmanager
def torch_forms():
    """Every fused op in its torch.nn.functional form (what it is under torch.compile): the CPU runs them."""
    with mock.patch.object(functional, "_is_compiling", lambda: True), \
            mock.patch.object(fused_block, "_is_compiling", lambda: True), \
            mock.patch.object(ghost_blocks, "_is_compiling", lambda: True):
        yield


def relative_report(got: torch.Tensor, expected: torch.Tensor, tolerance: float) -> str:
    if got.shape != expected.shape:
        return f"shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    relative = ((got - expected).abs().max() / expected.abs().max()).item()
    return "" if relative <= tolerance else f"relative difference {relative:.3g}"


# ---- no GPU --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", MODELS)
def test_structure(checks, name) -> None:
    """Every ghost bottleneck is rewritten (16 in each network), in either order with the other
    rewrites; afterwards nothing inside a fused block is a BatchNorm or squeeze-excitation module, and
    a second fuse_blocks rewrites nothing."""
    base = build(name, meta=True)
    blocks = count_blocks(base)
    checks.record("" if blocks == 16 else f"{blocks} blocks", f"{name}: 16 ghost bottlenecks")
    record_blocks_fused(checks, base, name, count_blocks, ghost_blocks.FusedGhostBottleneck)


def test_one_kernel_covers_the_default_widths(checks) -> None:
    """In the default widths every depthwise stage (cheap operations, stride-2 convolutions,
    shortcuts) is one the one-kernel stage covers."""
    for name in ("ghostnet_100", "ghostnetv2_100", "ghostnetv3_100", "repghostnet_100"):
        model = build(name, meta=True)
        ha.fuse_blocks(model)
        stages = [m for m in model.modules() if isinstance(m, ghost_blocks._ConvolutionStage)
                  and m.conv.groups == m.conv.in_channels > 1]
        uncovered = [m.conv.in_channels for m in stages if m.filter is None]
        checks.record("" if len(stages) == 41 and not uncovered else f"{len(stages)} stages, not covered: {uncovered}",
                      f"{name}: each of the 41 depthwise stages takes the one kernel")


def _first(model: nn.Module, predicate) -> nn.Module:
    return next(m for m in model.modules() if type(m).__name__ in GHOST_CLASSES and predicate(m))


def _untracked(bn: nn.BatchNorm2d) -> None:
    bn.track_running_stats = False
    bn.running_mean = bn.running_var = None


def _has_se(m: nn.Module) -> bool:
    return getattr(m, "se", None) is not None


def _has_shortcut(m: nn.Module) -> bool:
    return len(m.shortcut) > 0


def _attention(m: nn.Module) -> bool:
    return type(m.ghost1).__name__ == "GhostModuleV2"


def _writes_both_halves(stage: nn.Module) -> bool:
    """A cheap stage whose one kernel can write its ghost module's concatenation: covered, stride 1,
    padding kernel_size // 2 (the output the input's size)."""
    spec = stage.filter
    return spec is not None and spec[1] == 1 and spec[2] == spec[3] == spec[0] // 2


def _deploy(module: nn.Module) -> None:
    module.switch_to_deploy()


UNKNOWN = {
    "ghostnet_100": [
        ("an extra child module", lambda model: setattr(_first(model, lambda m: True), "extra", nn.Identity())),
        ("a squeeze-excitation gated by a sigmoid", lambda model: setattr(_first(model, _has_se).se, "gate",
                                                                           nn.Sigmoid())),
        ("a custom squeeze-excitation", lambda model: setattr(_first(model, _has_se), "se",
                                                              Custom(_first(model, _has_se).se))),
        ("an activation hardact does not fuse", lambda model: _first(model, lambda m: True).ghost1.primary_conv
         .__setitem__(2, nn.SiLU())),
        ("a BatchNorm without running statistics", lambda model: _untracked(
            _first(model, lambda m: True).ghost1.cheap_operation[1])),
        ("a ghost module sliced to fewer channels", lambda model: setattr(
            _first(model, lambda m: True).ghost2, "out_chs", _first(model, lambda m: True).ghost2.out_chs - 2)),
        ("an activation in the shortcut", lambda model: _first(model, _has_shortcut).shortcut.append(nn.ReLU())),
        ("a custom depthwise convolution", lambda model: setattr(
            _first(model, lambda m: m.conv_dw is not None), "conv_dw",
            Custom(_first(model, lambda m: m.conv_dw is not None).conv_dw))),
        ("a submodule in training mode", lambda model: _first(model, lambda m: True).ghost2.train()),
    ],
    "ghostnetv2_100": [
        ("an attention gated by a hard sigmoid", lambda model: setattr(_first(model, _attention).ghost1, "gate_fn",
                                                                       nn.Hardsigmoid())),
        ("an attention with an extra layer", lambda model: _first(model, _attention).ghost1.short_conv.append(
            nn.ReLU())),
        ("an attention module as the second ghost module", lambda model: setattr(
            _first(model, _attention), "ghost2", copy.deepcopy(_first(model, _attention).ghost1))),
    ],
    "ghostnetv3_100": [
        ("a branch with an activation", lambda model: setattr(
            _first(model, lambda m: True).ghost1.cheap_rpr_conv[1].bn1, "act", nn.ReLU())),
        ("a branch with a skip", lambda model: setattr(_first(model, lambda m: True).ghost1.primary_rpr_conv[0],
                                                       "has_skip", True)),
        ("the reparameterised form", lambda model: _deploy(_first(model, lambda m: m.stride > 1))),
        ("a cheap branch with another filter alignment", lambda model: setattr(
            _first(model, lambda m: True).ghost2.cheap_rpr_conv[0].conv, "padding", (0, 0))),
        ("an unfused activation after the primary branches", lambda model: setattr(
            _first(model, lambda m: True).ghost1, "primary_activation", nn.SiLU())),
        ("a squeeze-excitation gated by a sigmoid", lambda model: setattr(
            _first(model, lambda m: type(m.se) is not nn.Identity).se, "gate", nn.Sigmoid())),
    ],
    "repghostnet_100": [
        ("an activation hardact does not fuse", lambda model: setattr(_first(model, lambda m: True).ghost1, "relu",
                                                                      nn.SiLU())),
        ("a convolution in the identity branch", lambda model: _first(model, lambda m: True).ghost1.fusion_conv
         .__setitem__(0, nn.Conv2d(8, 8, 1))),
        ("the reparameterised form", lambda model: _deploy(_first(model, lambda m: True).ghost2)),
        ("an activation after the cheap BatchNorm", lambda model: _first(model, lambda m: True).ghost2
         .cheap_operation.append(nn.ReLU())),
    ],
}


@pytest.mark.parametrize("name", list(UNKNOWN))
def test_leaves_unknown_blocks(checks, name) -> None:
    """A block holding something the matcher cannot prove equivalent stays as it is; the others fuse."""
    base = build(name)
    for what, edit in UNKNOWN[name]:
        checks.record(edited_block_left_alone(base, edit, GHOST_CLASSES), f"{name} with {what}: that block left alone")


@pytest.mark.parametrize("name", MODELS)
def test_rewrite_on_cpu(checks, name) -> None:
    """The rewritten network (fuse_blocks alone, and optimize_for_inference with the blocks fused
    last) against the original in float64 on the CPU, the fused ops in their torch forms: the same
    function up to rounding, in both layouts, at an even size (v2's gate broadcast) and an odd one
    (interpolated); every block's output layout is its input's."""
    base = build(name).double()
    fused_alone = copy.deepcopy(base)
    ha.fuse_blocks(fused_alone)
    fused_last = copy.deepcopy(base)
    ha.fuse_batchnorm_activation(fused_last)
    ha.fuse_squeeze_excitation(fused_last)
    ha.fuse_blocks(fused_last)
    ha.replace_activations(fused_last)
    generator = torch.Generator().manual_seed(SEED)
    for size in ((64, 64), (49, 51)):
        x = torch.randn(1, 3, *size, generator=generator, dtype=torch.float64)
        for layout, memory_format in (("NCHW", torch.contiguous_format), ("channels-last", torch.channels_last)):
            xl = x.contiguous(memory_format=memory_format)
            with torch.no_grad(), torch_forms():
                expected = base.to(memory_format=memory_format)(xl)
                for what, model in (("fuse_blocks", fused_alone), ("blocks last", fused_last)):
                    outputs = []
                    hooks = [m.register_forward_hook(lambda m, i, o: outputs.append((i[0], o)))
                             for m in model.modules() if type(m) is ghost_blocks.FusedGhostBottleneck]
                    got = model.to(memory_format=memory_format)(xl)
                    for hook in hooks:
                        hook.remove()
                    checks.record(relative_report(got, expected, 1e-12), f"{name} {what} {size} {layout}")
                    kept = all(o.is_contiguous(memory_format=memory_format) == i.is_contiguous(
                        memory_format=memory_format) for i, o in outputs)
                    checks.record("" if outputs and kept else "a block changed the layout",
                                  f"{name} {what} {size} {layout}: layouts kept")


def stage_by_its_kernel_parameters(stage: nn.Module, y: torch.Tensor) -> torch.Tensor:
    """What the one-kernel depthwise stage computes from kernel_parameters(), in torch operators:
    act(depthwise_conv(y, taps) * scale + shift)."""
    taps, scale, shift = stage.kernel_parameters()
    k, stride, pad_h, pad_w = stage.filter
    weight = taps.t().reshape(-1, 1, k, k).to(y.dtype)
    z = F.conv2d(y, weight, None, stride, (pad_h, pad_w), 1, y.shape[1])
    z = z * scale.to(y.dtype).view(1, -1, 1, 1) + shift.to(y.dtype).view(1, -1, 1, 1)
    norm = stage.norm
    return functional._activation_reference(z, norm.activation, norm.min_val, norm.max_val)


@pytest.mark.parametrize("name", ["ghostnet_100", "ghostnetv3_100", "repghostnet_100"])
def test_kernel_parameters(checks, name) -> None:
    """Each depthwise stage's one-kernel parameters (float32 taps, scale and shift; RepGhost's identity
    branch folded into the centre tap, GhostNet v3's branches summed) compute the stage as it runs
    without the kernel: float64 input, within float32's rounding of the parameters. Made again when
    a parameter changes in place."""
    model = build(name)
    ha.fuse_blocks(model)
    generator = torch.Generator().manual_seed(SEED)
    stages = [m for m in model.modules() if isinstance(m, ghost_blocks._ConvolutionStage) and m.filter is not None]
    identities = sum(1 for stage in stages if stage.identity is not None or getattr(stage, "skip", None) is not None)
    expected = {"ghostnet_100": 0, "ghostnetv3_100": 32, "repghostnet_100": 32}[name]
    checks.record("" if identities == expected else f"{identities} identity branches", f"{name}: the identity branches")
    for index, stage in enumerate(stages):
        stage.double()
        y = torch.randn(2, stage.conv.in_channels, 9, 11, generator=generator, dtype=torch.float64)
        with torch.no_grad(), torch_forms():
            expected, _ = stage(y)
        got = stage_by_its_kernel_parameters(stage, y)
        checks.record(relative_report(got, expected, 1e-6), f"{name} stage {index}")
    stage = stages[0]
    y = torch.randn(2, stage.conv.in_channels, 9, 11, generator=generator, dtype=torch.float64)
    with torch.no_grad():
        stage.kernel_parameters()
        stage.conv.weight.mul_(2)
        with torch_forms():
            expected, _ = stage(y)
    checks.record(relative_report(stage_by_its_kernel_parameters(stage, y), expected, 1e-6),
                  f"{name}: the parameters made again after an in-place change")


@pytest.mark.parametrize("name", ["ghostnetv2_100", "ghostnetv3_050"])
def test_compiled_on_cpu(checks, name) -> None:
    """A rewritten GhostNet v2 (attention) and v3 (re-parameterised stages) trace whole under
    torch.compile(fullgraph=True) (backend eager) and give the original's outputs (float32, relative
    to the largest output)."""
    base = build(name)
    rewritten = copy.deepcopy(base)
    ha.optimize_for_inference(rewritten)
    x = torch.randn(2, 3, 64, 64, generator=torch.Generator().manual_seed(SEED))
    with torch.no_grad():
        expected = base(x)
        torch._dynamo.reset()
        got = torch.compile(rewritten, backend="eager", fullgraph=True)(x)
    checks.record(relative_report(got, expected, 1e-4), f"{name} rewritten, compiled on the CPU")


# ---- GPU -----------------------------------------------------------------------------------------

@contextlib.contextmanager
def tf32_off():
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


@pytest.mark.cuda
@pytest.mark.parametrize("name", GPU_MODELS)
def test_real_models(checks, generator, name) -> None:
    """The rewritten network (optimize_for_inference) against a float64 run of the original: in float32
    (TF32 off) and bfloat16, both layouts, batch 1 and 3, 225x231 and 224x224, without gradients,
    its largest difference at most 4x the original's own (in that dtype and layout, plus float32's
    rounding of the largest output); in channels-last every covered depthwise stage takes the one
    kernel."""
    base = build(name).cuda()
    reference = copy.deepcopy(base).double()
    rewritten = copy.deepcopy(base)
    counts = ha.optimize_for_inference(rewritten)
    checks.record("" if counts["blocks"] == 16 else f"counts {counts}", f"{name}: 16 blocks fused")
    taken, concatenated = [], []
    one_kernel = ghost_blocks._ConvolutionStage.one_kernel

    def counting(stage, y, with_mean, concatenate=False):
        result = one_kernel(stage, y, with_mean, concatenate)
        taken.append(result is not None)
        concatenated.append(concatenate and result is not None)
        return result

    with tf32_off(), torch.no_grad(), mock.patch.object(ghost_blocks._ConvolutionStage, "one_kernel", counting):
        # Odd sizes (v2's gate interpolated), and an even one (broadcast).
        for batch, size in ((1, (225, 231)), (3, (225, 231)), (3, (224, 224))):
            x = torch.randn(batch, 3, *size, device="cuda", generator=generator)
            expected = reference(x.double())
            largest = expected.abs().max().item()
            for layout, memory_format in (("NCHW", torch.contiguous_format), ("channels-last", torch.channels_last)):
                xl = x.contiguous(memory_format=memory_format)
                for dtype in (torch.float32, torch.bfloat16):
                    original = copy.deepcopy(base).to(dtype=dtype, memory_format=memory_format)(xl.to(dtype))
                    model = copy.deepcopy(rewritten).to(dtype=dtype, memory_format=memory_format)
                    taken.clear()
                    concatenated.clear()
                    got = model(xl.to(dtype))
                    own = (original.double() - expected).abs().max().item()
                    ours = (got.double() - expected).abs().max().item()
                    what = f"{name} batch {batch} {size} {layout} {dtype}"
                    print(f"  {what}: largest difference to float64 {ours:.3g} (the original's {own:.3g})")
                    checks.record("" if ours <= 4 * own + 1e-6 * largest else f"{ours:.3g} against {own:.3g}",
                                  f"{what}: within 4x the original's difference to float64")
                    if layout == "channels-last":
                        covered = sum(m.filter is not None for m in model.modules()
                                      if isinstance(m, ghost_blocks._ConvolutionStage))
                        checks.record("" if sum(taken) == covered > 0 else f"{sum(taken)} of {covered} covered",
                                      f"{what}: the one-kernel stage taken")
                        halves = sum(_writes_both_halves(m.cheap1) + _writes_both_halves(m.cheap2)
                                     for m in model.modules()
                                     if isinstance(m, ghost_blocks.FusedGhostBottleneck) and m.concatenate)
                        checks.record("" if sum(concatenated) == halves else f"{sum(concatenated)} of {halves}",
                                      f"{what}: every ghost module whose cheap stage keeps the size concatenated "
                                      "by that stage's kernel")


@pytest.mark.cuda
@pytest.mark.parametrize("name", GPU_MODELS)
def test_gradients(checks, generator, name) -> None:
    """With gradients the rewritten network runs its differentiable forms: its outputs and the input's
    and convolutions' gradients (the same parameters: the fused blocks share the convolutions)
    allclose to the original's, float32, TF32 off, channels-last; where a gradient is not allclose
    (cuDNN picks other algorithms for a summed filter than for its branches), its largest error
    against the original run in float64 is at most 4 x the original's own."""
    model = build(name).cuda().to(memory_format=torch.channels_last)
    exact = copy.deepcopy(model).double()
    weights = [m.weight for m in model.modules() if type(m) is nn.Conv2d]
    x = torch.randn(3, 3, 225, 231, device="cuda", generator=generator).contiguous(memory_format=torch.channels_last)

    def gradients(network: nn.Module, parameters: list[torch.Tensor], dtype: torch.dtype):
        leaf = x.to(dtype).clone().requires_grad_()
        out = network(leaf)
        weighting = torch.linspace(-1, 1, out.numel(), device="cuda", dtype=dtype).view_as(out)
        return out.detach(), torch.autograd.grad((out * weighting).sum(), [leaf] + parameters)

    results = []
    with tf32_off():
        _, reference = gradients(exact, [m.weight for m in exact.modules() if type(m) is nn.Conv2d], torch.float64)
        for rewrite in (False, True):
            if rewrite:
                ha.optimize_for_inference(model)
                kept = {id(m.weight) for m in model.modules() if type(m) is nn.Conv2d}
                checks.record("" if kept == {id(w) for w in weights} else "convolutions replaced",
                              f"{name}: the rewrite shares every convolution")
            results.append(gradients(model, weights, torch.float32))
    (theirs_out, theirs), (ours_out, ours) = results
    checks.record(relative_report(ours_out, theirs_out, 1e-4), f"{name}: outputs with gradients wanted")

    def error(got: torch.Tensor, exact_value: torch.Tensor) -> float:
        return (got.double() - exact_value).abs().max().item()

    differing = [i for i, (a, b, r) in enumerate(zip(ours, theirs, reference))
                 if not torch.allclose(a, b, rtol=1e-3, atol=1e-3 * b.abs().max().item())
                 and error(a, r) > 4 * error(b, r)]
    checks.record("" if not differing else f"gradients {differing[:10]} differ, past 4 x the original's float64 error",
                  f"{name}: input and convolution gradients allclose to the original's")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16))
def test_halves_concatenated_by_hardact(checks, generator, dtype) -> None:
    """Where the cheap stage's kernel does not write both halves (here: the one kernel declined), a
    ghost module's channels-last halves are concatenated by hardact's copy (concatenate_channels):
    the rewritten ghostnet_050's output, no gradient wanted, is the same bits as with torch.cat."""
    model = build("ghostnet_050").cuda()
    ha.optimize_for_inference(model)
    model = model.to(dtype=dtype, memory_format=torch.channels_last)
    x = torch.randn(2, 3, 225, 231, device="cuda", generator=generator).to(dtype)
    x = x.contiguous(memory_format=torch.channels_last)
    modules = sum(2 for m in model.modules() if isinstance(m, ghost_blocks.FusedGhostBottleneck) and m.concatenate)
    binding, calls = functional._C._concatenate_channels, []

    def counted(tensors):
        calls.append(len(tensors))
        return binding(tensors)

    with torch.no_grad(), mock.patch.object(ghost_blocks._ConvolutionStage, "one_kernel", lambda *args, **kw: None):
        with mock.patch.object(functional._C, "_concatenate_channels", counted):
            got = model(x)
        with mock.patch.object(ghost_blocks, "concatenate_channels", lambda tensors: torch.cat(tensors, 1)):
            expected = model(x)
    checks.record("" if len(calls) == modules > 0 else f"{len(calls)} of {modules}",
                  f"{dtype}: every ghost module's halves by hardact's copy")
    checks.record(mismatch_report(got, expected, x), f"{dtype}: torch.cat's bits")
