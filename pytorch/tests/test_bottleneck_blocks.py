"""Tests of the bottleneck-block rewrites: torchvision's MobileNetV2 InvertedResidual fused whole
(FusedInvertedResidual); timm's EffectiveSEModule gated by a hard sigmoid (VoVNet's eSE, RDNet,
CSPNeXt) as HardSigmoidEffectiveSqueezeExcitation, and VoVNet's OsaBlock holding one as
FusedOsaBlock; timm's ReXNet LinearBottleneck as FusedLinearBottleneck; timm's StarNet Block as
FusedStarBlock.

    pytest pytorch/tests/test_bottleneck_blocks.py              # the tests marked cuda skip without a GPU
    pytest pytorch/tests/test_bottleneck_blocks.py -k structure # the structural tests only

Without a GPU: the real networks (random weights, built on the meta device) have every known block
fused, in either order with the other rewrites, and a second pass finds nothing; a block holding
something the matcher cannot prove equivalent (an extra child, an activation hardact does not fuse,
a BatchNorm without statistics, a custom convolution) is left alone while the others fuse; on the
CPU in float64, with the fused ops' compile switches patched so that every op takes its
torch.nn.functional form, the rewritten network gives the original's outputs (allclose), without
a gradient (the fused paths: matrix products, the gate and activation in one pass, the residual
added in place) and with one (the differentiable forms), batch 1 and 2, NCHW and channels-last;
VoVNet's blocks concatenate their mid layers as timm's SequentialAppendList does, bit for bit.
With a GPU: the rewritten network against a float64 run of the original, float32 and bfloat16,
channels-last, batch 1 and 3, an odd input size (225x231), BatchNorm statistics away from their
defaults: its largest error at most 4x the original's own (plus one unit of the dtype's epsilon of
the largest output); the same with gradients wanted (the differentiable forms), and the input's
gradient against the original's; a CUDA graph of each rewritten network replays its eager results;
VoVNet's concatenations by hardact's copy give torch.cat's bits.
The GPU tests print each error next to the original's. The star product operator
(bias_activation_product, FusedStarBlock's one pass): its fake kernel, refusals and backward on
meta tensors and its torch form on the CPU; with a GPU, bit for bit against its expression in every
dtype, layout and activation, opcheck and gradcheck.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
from unittest import mock

import pytest
import torch
from torch import nn

import hardact_torch as ha
import hardact_torch.functional as functional
import hardact_torch.rewrite.bottleneck_blocks as bottleneck_blocks
import hardact_torch.rewrite.fused_block as fused_block
from checklib import NAMES, Custom, mismatch_report, raises, randomise_batchnorms
from test_fused import ACTIVATIONS, channel_view, compute_dtype, layout_report, layouts, reference_activation
from test_fused_blocks import create_timm_model

SEED = 53

# (library, model, the block class fuse_blocks replaces, how many the model holds).
BLOCK_MODELS = [("torchvision", "mobilenet_v2", "InvertedResidual", 17), ("timm", "rexnet_100", "LinearBottleneck", 16),
                ("timm", "starnet_s1", "Block", 15), ("timm", "ese_vovnet19b_dw", "OsaBlock", 4)]
FUSED_BLOCKS = (ha.FusedInvertedResidual, ha.FusedLinearBottleneck, ha.FusedStarBlock, ha.FusedOsaBlock)
# (model, how many hard-sigmoid gated EffectiveSEModule it holds): the smallest of each family.
EFFECTIVE_SE_MODELS = [("ese_vovnet19b_dw", 4), ("rdnet_tiny", 15), ("cspnext_tiny", 4)]
# Every network whose rewritten outputs are compared with the original's.
ALL_MODELS = [(library, name) for library, name, *_ in BLOCK_MODELS]
ALL_MODELS += [("timm", name) for name, _ in EFFECTIVE_SE_MODELS if ("timm", name) not in ALL_MODELS]


def build(library: str, name: str, device: str = "cpu") -> nn.Module:
    """A real network with random weights in eval mode; on the meta device without BatchNorm
    randomisation (structure only). Skips the test when its library, or the network, is missing."""
    torch.manual_seed(0)
    with torch.device(device):
        if library == "timm":
            model = create_timm_model(name)
        else:
            models = pytest.importorskip("torchvision.models")
            model = getattr(models, name)(weights=None)
    if device != "meta":
        randomise_batchnorms(model)
    return model.eval()


def count(model: nn.Module, class_name: str) -> int:
    return sum(1 for m in model.modules() if type(m).__name__ == class_name)


@contextlib.contextmanager
def functional_forms():
    """Every fused op takes its torch.nn.functional form (what it does under torch.compile), so that
    the rewrites run on the CPU; the fused blocks' own paths are still chosen as on the GPU."""
    with mock.patch.object(functional, "_is_compiling", lambda: True), \
            mock.patch.object(fused_block, "_is_compiling", lambda: True):
        yield


def relative_error(got: torch.Tensor, expected: torch.Tensor) -> float:
    return ((got.double() - expected.double()).abs().max() / expected.double().abs().max()).item()


# ---- no GPU --------------------------------------------------------------------------------------

@pytest.mark.parametrize("library, name, block, blocks", BLOCK_MODELS)
def test_block_structure(checks, library, name, block, blocks) -> None:
    """Every block is fused, in either order with the other rewrites (meta device); afterwards no
    BatchNorm is left inside a fused block (but in a FusedLinearBottleneck's expansion, kept whole for
    its gradient path) and a second fuse_blocks finds nothing."""
    base = build(library, name, "meta")
    checks.record("" if count(base, block) == blocks else f"{count(base, block)} blocks",
                  f"{name} holds {blocks} {block}")
    for order in ("blocks first", "blocks last"):
        model = copy.deepcopy(base)
        if order == "blocks first":
            fused = ha.fuse_blocks(model)
            ha.fuse_batchnorm_activation(model)
        else:
            ha.fuse_batchnorm_activation(model)
            fused = ha.fuse_blocks(model)
        checks.record("" if fused == blocks and count(model, block) == 0 else
                      f"fused {fused}, {count(model, block)} left", f"{name} {order}: every {block} fused")
        inside = [path for b in model.modules() if isinstance(b, FUSED_BLOCKS) for path, m in b.named_modules()
                  if isinstance(m, nn.modules.batchnorm._BatchNorm) and not path.startswith("expansion.")]
        checks.record("" if not inside else f"found {inside[:3]}", f"{name} {order}: no BatchNorm in a fused block")
        checks.record("" if ha.fuse_blocks(model) == 0 else "rewrote again", f"{name} {order}: fuse_blocks twice")
    counts = ha.optimize_for_inference(copy.deepcopy(base))
    checks.record("" if counts["blocks"] == blocks else f"counts {counts}", f"{name}: optimize_for_inference")


def untracked(bn: nn.Module) -> None:
    bn.track_running_stats = False
    bn.running_mean = bn.running_var = None


def mobilenet_v2_near_misses() -> list[tuple[str, callable]]:
    """(what, edit of one block of torchvision's mobilenet_v2) that fuse_blocks must leave alone."""
    def first(model):
        return next(m for m in model.modules() if type(m).__name__ == "InvertedResidual" and len(m.conv) == 4)

    return [
        ("an extra child module", lambda model: setattr(first(model), "extra", nn.Identity())),
        ("an extra layer", lambda model: first(model).conv.append(nn.Identity())),
        ("an activation hardact does not fuse", lambda model: first(model).conv[1].__setitem__(2, nn.SiLU())),
        ("a BatchNorm without running statistics", lambda model: untracked(first(model).conv[3])),
        ("a custom projection", lambda model: first(model).conv.__setitem__(2, Custom(first(model).conv[2]))),
        ("a submodule in training mode", lambda model: first(model).conv[0].train()),
    ]


def rexnet_near_misses() -> list[tuple[str, callable]]:
    """(what, edit of one block of timm's rexnet_100) that fuse_blocks must leave alone."""
    def first(model, squeeze=True):
        return next(m for m in model.modules() if type(m).__name__ == "LinearBottleneck"
                    and (m.se is not None) == squeeze and m.use_shortcut)

    return [
        ("an extra child module", lambda model: setattr(first(model), "extra", nn.Identity())),
        ("an activation hardact does not fuse", lambda model: setattr(first(model, False), "act_dw", nn.SiLU())),
        ("a depthwise BatchNorm with its own activation", lambda model: setattr(
            first(model, False).conv_dw.bn, "act", nn.ReLU())),
        ("a squeeze-excitation gated by a hard sigmoid", lambda model: setattr(first(model).se, "gate",
                                                                                 nn.Hardsigmoid())),
        ("a squeeze-excitation with add_maxpool", lambda model: setattr(first(model).se, "add_maxpool", True)),
        ("a custom squeeze-excitation", lambda model: setattr(first(model), "se", Custom(first(model).se))),
        ("a drop path that is a custom module", lambda model: setattr(first(model), "drop_path",
                                                                       Custom(nn.Identity()))),
        ("a BatchNorm without running statistics", lambda model: untracked(first(model).conv_pwl.bn)),
        ("anti-aliasing", lambda model: setattr(first(model).conv_dw, "aa", nn.AvgPool2d(1))),
    ]


def starnet_near_misses() -> list[tuple[str, callable]]:
    """(what, edit of one block of timm's starnet_s1) that fuse_blocks must leave alone."""
    def first(model):
        return next(m for m in model.modules() if type(m).__name__ == "Block")

    return [
        ("an extra child module", lambda model: setattr(first(model), "extra", nn.Identity())),
        ("an activation hardact does not fuse", lambda model: setattr(first(model), "act", nn.GELU())),
        ("a BatchNorm after f1", lambda model: first(model).f1.add_module("bn", nn.BatchNorm2d(
            first(model).f1.conv.out_channels))),
        ("a depthwise convolution without its BatchNorm", lambda model: delattr(first(model).dwconv, "bn")),
        ("a padded f1, which the first BatchNorm's shift cannot pass", lambda model: setattr(
            first(model).f1, "conv", nn.Conv2d(first(model).f1.conv.in_channels, first(model).f1.conv.out_channels,
                                               3, padding=1))),
        ("a BatchNorm without running statistics", lambda model: untracked(first(model).g.bn)),
        ("a custom convolution", lambda model: setattr(first(model).dwconv2, "conv",
                                                        Custom(first(model).dwconv2.conv))),
        ("a drop path that is a custom module", lambda model: setattr(first(model), "drop_path",
                                                                       Custom(nn.Identity()))),
    ]


def osa_near_misses() -> list[tuple[str, callable]]:
    """(what, edit of one block of timm's ese_vovnet19b_dw) that fuse_blocks must leave alone."""
    def first(model):
        return next(m for m in model.modules() if type(m).__name__ == "OsaBlock")

    return [
        ("an extra child module", lambda model: setattr(first(model), "extra", nn.Identity())),
        ("no eSE", lambda model: setattr(first(model), "attn", None)),
        ("an eSE gated by a sigmoid", lambda model: setattr(first(model).attn, "gate", nn.Sigmoid())),
        ("an aggregation BatchNorm without running statistics", lambda model: untracked(first(model).conv_concat.bn)),
        ("an aggregation BatchNorm with an activation hardact does not fuse",
         lambda model: setattr(first(model).conv_concat.bn, "act", nn.SiLU())),
        ("a custom aggregation convolution", lambda model: setattr(first(model).conv_concat, "conv",
                                                                    Custom(first(model).conv_concat.conv))),
        ("mid layers in an nn.Sequential", lambda model: setattr(first(model), "conv_mid",
                                                                  nn.Sequential(*first(model).conv_mid))),
        ("a drop path that is a custom module", lambda model: setattr(first(model), "drop_path",
                                                                       Custom(nn.Identity()))),
    ]


@pytest.mark.parametrize("library, name, block, blocks, near_misses",
                         [("torchvision", "mobilenet_v2", "InvertedResidual", 17, mobilenet_v2_near_misses),
                          ("timm", "rexnet_100", "LinearBottleneck", 16, rexnet_near_misses),
                          ("timm", "starnet_s1", "Block", 15, starnet_near_misses),
                          ("timm", "ese_vovnet19b_dw", "OsaBlock", 4, osa_near_misses)])
def test_near_misses_left_alone(checks, library, name, block, blocks, near_misses) -> None:
    """A block holding something the matcher cannot prove equivalent stays as it is; the others fuse."""
    base = build(library, name, "meta")
    for what, edit in near_misses():
        model = copy.deepcopy(base)
        edit(model)
        fused = ha.fuse_blocks(model)
        checks.record("" if fused == blocks - 1 and count(model, block) == 1 else
                      f"fused {fused} of {blocks}, {count(model, block)} left", f"{name} with {what}: left alone")


@pytest.mark.parametrize("name, gates", EFFECTIVE_SE_MODELS)
def test_effective_se_structure(checks, name, gates) -> None:
    """Every hard-sigmoid gated EffectiveSEModule becomes a HardSigmoidEffectiveSqueezeExcitation
    sharing its convolution (meta device), by fuse_squeeze_excitation or inside a FusedOsaBlock
    (VoVNet's); a second pass finds nothing."""
    model = build("timm", name, "meta")
    convolutions = [m.fc for m in model.modules() if type(m).__name__ == "EffectiveSEModule"]
    checks.record("" if len(convolutions) == gates else f"{len(convolutions)} modules", f"{name} holds {gates}")
    counts = ha.optimize_for_inference(model)
    fused = [m for m in model.modules() if type(m) is ha.HardSigmoidEffectiveSqueezeExcitation]
    in_blocks = count(model, "FusedOsaBlock")
    checks.record("" if counts["squeeze_excitations"] + in_blocks == gates == len(fused)
                  and count(model, "EffectiveSEModule") == 0
                  else f"counts {counts}, {len(fused)} fused, {in_blocks} in blocks", f"{name}: every gate fused")
    checks.record("" if all(a.fc is b for a, b in zip(fused, convolutions)) else "new convolutions",
                  f"{name}: the fused gates share the convolutions")
    checks.record("" if ha.fuse_squeeze_excitation(model) == 0 else "rewrote again", f"{name}: a second pass")


def effective_se_near_misses() -> list[tuple[str, callable]]:
    """(what, module): EffectiveSEModules that fuse_squeeze_excitation must leave alone."""
    layers = pytest.importorskip("timm.layers")
    from timm.layers.activations import HardSigmoid as TimmHardSigmoid

    def edited(edit):
        module = layers.EffectiveSEModule(8)
        edit(module)
        return module

    return [
        ("add_maxpool", layers.EffectiveSEModule(8, add_maxpool=True)),
        ("a sigmoid gate", layers.EffectiveSEModule(8, gate_layer="sigmoid")),
        ("timm's own HardSigmoid (relu6(x + 3) / 6)", layers.EffectiveSEModule(8, gate_layer=TimmHardSigmoid)),
        ("an extra child", edited(lambda m: setattr(m, "extra", nn.Identity()))),
        ("a 3x3 convolution", edited(lambda m: setattr(m, "fc", nn.Conv2d(8, 8, 3, padding=1)))),
        ("a custom convolution", edited(lambda m: setattr(m, "fc", Custom(m.fc)))),
    ]


def test_effective_se_near_misses(checks) -> None:
    for what, module in effective_se_near_misses():
        model = nn.Sequential(module)
        checks.record("" if ha.fuse_squeeze_excitation(model) == 0 and model[0] is module else "rewritten",
                      f"EffectiveSEModule with {what}: left alone")


def test_effective_se_module_on_cpu(checks) -> None:
    """The fused gate against timm's module, float64 and float32, with and without a gradient (the
    matrix product and the convolution), an odd size."""
    layers = pytest.importorskip("timm.layers")
    torch.manual_seed(SEED)
    original = layers.EffectiveSEModule(12).eval()
    fused = ha.HardSigmoidEffectiveSqueezeExcitation(original.fc)
    for dtype in (torch.float64, torch.float32):
        x = torch.randn(3, 12, 7, 9, dtype=dtype) * 3
        for grad in (False, True):
            with torch.set_grad_enabled(grad), functional_forms():
                expected, got = original.to(dtype)(x), fused.to(dtype)(x)
            tolerance = 1e-14 if dtype == torch.float64 else 1e-6
            error = relative_error(got, expected)
            checks.record("" if error <= tolerance else f"relative difference {error:.3g}",
                          f"EffectiveSEModule fused, {dtype}, grad={grad}")
            if grad:
                checks.record("" if got.requires_grad else "no graph", f"{dtype}: differentiable")


@pytest.mark.parametrize("library, name", ALL_MODELS)
def test_same_function_on_cpu(checks, library, name) -> None:
    """The rewritten network (optimize_for_inference) against the original in float64 on the CPU,
    every fused op in its functional form, NCHW and channels-last, an odd input size."""
    base = build(library, name).double()
    rewritten = copy.deepcopy(base)
    ha.optimize_for_inference(rewritten)
    for batch, memory_format, grad in itertools.product((1, 2), (torch.contiguous_format, torch.channels_last),
                                                        (False, True)):
        x = torch.randn(batch, 3, 65, 71, dtype=torch.float64, generator=torch.Generator().manual_seed(SEED))
        xl = x.contiguous(memory_format=memory_format)
        with torch.set_grad_enabled(grad), functional_forms():
            expected = copy.deepcopy(base).to(memory_format=memory_format)(xl)
            got = copy.deepcopy(rewritten).to(memory_format=memory_format)(xl)
        error = relative_error(got.detach(), expected.detach())
        checks.record("" if error <= 1e-12 else f"relative difference {error:.3g}",
                      f"{name} rewritten, float64 batch {batch} {memory_format} grad={grad}: the original's outputs")


def test_rexnet_expansion_one_pass_on_cpu(checks) -> None:
    """Without a gradient a FusedLinearBottleneck runs its expansion as the convolution and one pass,
    its BatchNorm folded with its SiLU (norm1, "silu"): the original's outputs (float64, CPU)."""
    base = build("timm", "rexnet_100").double()
    rewritten = copy.deepcopy(base)
    ha.fuse_blocks(rewritten)
    blocks = [m for m in rewritten.modules() if type(m) is ha.FusedLinearBottleneck and m.expansion is not None]
    checks.record("" if blocks and all(b.norm1 is not None and b.norm1.activation == "silu" for b in blocks) else
                  f"{sum(b.norm1 is None for b in blocks)} of {len(blocks)} without a one-pass expansion",
                  "rexnet_100: every SiLU expansion one pass")
    x = torch.randn(2, 3, 65, 71, dtype=torch.float64, generator=torch.Generator().manual_seed(SEED))
    with torch.no_grad(), functional_forms():
        expected = base(x)
        got = rewritten(x)
    error = relative_error(got, expected)
    checks.record("" if error <= 1e-12 else f"relative difference {error:.3g}", "rexnet_100 one-pass expansion")


def test_starnet_norm_folded_on_cpu(checks) -> None:
    """Without a gradient a FusedStarBlock folds its first BatchNorm into the depthwise filter and the
    star product's biases (float64, CPU): the original's outputs, and after f1's bias and the
    depthwise filter change in place, the new original's (the folded tensors are made again)."""
    base = build("timm", "starnet_s1").double()
    rewritten = copy.deepcopy(base)
    ha.fuse_blocks(rewritten)
    blocks = [m for m in rewritten.modules() if type(m) is ha.FusedStarBlock]
    originals = [m for m in base.modules() if type(m).__name__ == "Block"]
    x = torch.randn(2, 3, 65, 71, dtype=torch.float64, generator=torch.Generator().manual_seed(SEED))
    for step in ("as built", "weights changed in place"):
        if step != "as built":
            with torch.no_grad():
                for block, original in zip(blocks, originals):
                    for conv in (block.f1, original.f1.conv):
                        conv.bias.add_(0.25)
                    for conv in (block.conv1, original.dwconv.conv):
                        conv.weight.mul_(1.5)
        with torch.no_grad(), functional_forms():
            expected = base(x)
            got = rewritten(x)
        error = relative_error(got, expected)
        checks.record("" if error <= 1e-12 and all(b._folded_cache[0] is not None for b in blocks)
                      else f"relative difference {error:.3g}", f"starnet_s1 folded first BatchNorm, {step}")


def test_osa_block_concatenates_as_timm_on_cpu(checks) -> None:
    """A FusedOsaBlock runs its mid layers itself, as timm's SequentialAppendList runs them, and
    concatenates with concatenate_channels: every block's concatenation is its conv_mid(reduction(x),
    [x]) bit for bit, with its strides (float32, CPU, both layouts)."""
    model = build("timm", "ese_vovnet19b_dw")
    ha.fuse_blocks(model)
    blocks = [m for m in model.modules() if type(m) is ha.FusedOsaBlock]
    inputs, concatenations = [], []
    for block in blocks:
        block.register_forward_pre_hook(lambda _module, args: inputs.append(args[0]))
    concatenate = bottleneck_blocks.concatenate_channels

    def recorded(tensors):
        concatenations.append(concatenate(tensors))
        return concatenations[-1]

    x = torch.randn(2, 3, 65, 71, generator=torch.Generator().manual_seed(SEED))
    for memory_format in (torch.contiguous_format, torch.channels_last):
        inputs.clear()
        concatenations.clear()
        model = model.to(memory_format=memory_format)
        with torch.no_grad(), functional_forms(), \
                mock.patch.object(bottleneck_blocks, "concatenate_channels", recorded):
            model(x.contiguous(memory_format=memory_format))
        checks.record("" if len(inputs) == len(concatenations) == len(blocks) == 4 else
                      f"{len(inputs)} inputs, {len(concatenations)} concatenations", f"{memory_format}: every block")
        with torch.no_grad():
            for i, (block, x0, got) in enumerate(zip(blocks, inputs, concatenations)):
                reduced = x0 if block.conv_reduction is None else block.conv_reduction(x0)
                expected = block.conv_mid(reduced, [x0])
                report = mismatch_report(got, expected) or ("" if got.stride() == expected.stride() else
                                                           f"strides {got.stride()}, timm's {expected.stride()}")
                checks.record(report, f"{memory_format} block {i}: timm's concatenation")


# ---- GPU -----------------------------------------------------------------------------------------

def gpu_comparison(checks, library: str, name: str, batch: int, grad: bool) -> None:
    """The rewritten network's error against a float64 run of the original, at most 4x the original's
    own (float32 and bfloat16, channels-last, 225x231); with grad, the input's gradient likewise."""
    base = build(library, name).cuda()
    rewritten = copy.deepcopy(base)
    counts = ha.optimize_for_inference(rewritten)
    x = torch.randn(batch, 3, 225, 231, device="cuda", generator=torch.Generator("cuda").manual_seed(SEED))
    x = x.contiguous(memory_format=torch.channels_last)

    def run(model, dtype):
        model = copy.deepcopy(model).to(dtype=dtype, memory_format=torch.channels_last)
        leaf = x.to(dtype, copy=True).requires_grad_(grad)
        with torch.set_grad_enabled(grad):
            out = model(leaf)
            if not grad:
                return out.double(), None
            weight = torch.linspace(-1, 1, out.numel(), device="cuda", dtype=dtype).view_as(out)
            (gradient,) = torch.autograd.grad((out * weight).sum(), [leaf])
            return out.double(), gradient.double()

    reference = run(base, torch.float64)
    for dtype in (torch.float32, torch.bfloat16):
        theirs, ours = run(base, dtype), run(rewritten, dtype)
        for what, index in (("output", 0), ("input gradient", 1)):
            if ours[index] is None:
                continue
            floor = torch.finfo(dtype).eps * reference[index].abs().max().item()
            error = (ours[index] - reference[index]).abs().max().item()
            own = (theirs[index] - reference[index]).abs().max().item()
            print(f"  {name} {dtype} batch {batch} grad={grad} {what}: rewrite error {error:.3g}, "
                  f"original {own:.3g} ({counts})")
            checks.record("" if error <= 4 * own + floor else f"error {error:.3g}, the original's {own:.3g}",
                          f"{name} {dtype} batch {batch} grad={grad}: {what} within 4x the original's error")


@pytest.mark.cuda
@pytest.mark.parametrize("library, name", ALL_MODELS)
@pytest.mark.parametrize("batch", (1, 3))
@pytest.mark.parametrize("grad", (False, True), ids=("no-grad", "grad"))
def test_rewrite_on_gpu(checks, library, name, batch, grad) -> None:
    gpu_comparison(checks, library, name, batch, grad)


@pytest.mark.cuda
@pytest.mark.parametrize("library, name", ALL_MODELS)
def test_cuda_graph_replays_rewrite(checks, library, name) -> None:
    """A CUDA graph of the rewritten network (bfloat16, channels-last) replays its eager results bit for bit."""
    model = build(library, name).cuda()
    ha.optimize_for_inference(model)
    model = model.to(dtype=torch.bfloat16, memory_format=torch.channels_last)
    x = torch.randn(3, 3, 225, 231, device="cuda", generator=torch.Generator("cuda").manual_seed(SEED))
    x = x.to(torch.bfloat16).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        eager = model(x)
        forward = ha.cuda_graph_inference(model, x)
        checks.record(mismatch_report(forward(x), eager, x), f"{name} rewritten: a CUDA graph replays eager")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16), ids=NAMES.get)
def test_osa_block_concatenation_is_torch_cat_on_gpu(checks, dtype) -> None:
    """The rewritten VoVNet (channels-last, no gradient) concatenates every block's mid layers with
    hardact's copy, and its output is the same bits as with torch.cat in their place."""
    model = build("timm", "ese_vovnet19b_dw").cuda()
    ha.optimize_for_inference(model)
    model = model.to(dtype=dtype, memory_format=torch.channels_last)
    x = torch.randn(2, 3, 225, 231, device="cuda", generator=torch.Generator("cuda").manual_seed(SEED))
    x = x.to(dtype).contiguous(memory_format=torch.channels_last)
    binding, calls = functional._C._concatenate_channels, []

    def counted(tensors):
        calls.append(len(tensors))
        return binding(tensors)

    with torch.no_grad():
        with mock.patch.object(functional._C, "_concatenate_channels", counted):
            got = model(x)
        with mock.patch.object(bottleneck_blocks, "concatenate_channels", lambda tensors: torch.cat(tensors, 1)):
            expected = model(x)
    checks.record("" if len(calls) == 4 else f"{len(calls)} calls", f"{NAMES[dtype]}: hardact's copy in every block")
    checks.record(mismatch_report(got, expected, x), f"{NAMES[dtype]}: torch.cat's bits")


def test_linear_bottleneck_depthwise_parameters(checks) -> None:
    """FusedLinearBottleneck borrows FusedInvertedResidual's depthwise_parameters and its cache: the
    one kernel's float32 filters, scale and shift are made for every block that has the stage (on the
    CPU too: the GPU path is the only caller, where a missing cache would raise)."""
    timm = pytest.importorskip("timm")
    torch.manual_seed(0)
    model = timm.create_model("rexnet_100", pretrained=False).eval()
    ha.optimize_for_inference(model)
    for name, block in model.named_modules():
        if type(block) is not ha.FusedLinearBottleneck or block.depthwise_filter is None:
            continue
        taps, scale, shift = block.depthwise_parameters()
        channels = block.conv2.out_channels
        ok = (taps.shape == (block.conv2.kernel_size[0] ** 2, channels) and scale.shape == shift.shape == (channels,)
              and {t.dtype for t in (taps, scale, shift)} == {torch.float32})
        checks.record("" if ok else f"{tuple(taps.shape)} {tuple(scale.shape)}", f"{name}: depthwise parameters")


def rexnet_squeeze_block():
    """The first FusedLinearBottleneck with a squeeze-excitation of a rewritten rexnet_100."""
    timm = pytest.importorskip("timm")
    torch.manual_seed(0)
    model = timm.create_model("rexnet_100", pretrained=False).eval()
    ha.optimize_for_inference(model)
    return next(b for b in model.modules() if type(b) is ha.FusedLinearBottleneck and b.se_reduce is not None)


def test_linear_bottleneck_transposed_weight_cache(checks) -> None:
    """The squeeze's products read each weight stored transposed, made once and made again when the
    weight is cast or modified in place."""
    block = rexnet_squeeze_block()
    first = block._transposed_weight("se_reduce", block.se_reduce)
    again = block._transposed_weight("se_reduce", block.se_reduce)
    checks.record("" if again is first else "made again", "unchanged weight: the cached matrix")
    checks.record("" if torch.equal(first, block.se_reduce.weight.flatten(1).t()) and first.is_contiguous()
                  else "differs", "the matrix is the weight transposed, contiguous")
    with torch.no_grad():
        block.se_reduce.weight.mul_(2)
    changed = block._transposed_weight("se_reduce", block.se_reduce)
    checks.record("" if torch.equal(changed, block.se_reduce.weight.flatten(1).t()) else "stale",
                  "weight modified in place: made again")
    block.to(torch.bfloat16)
    cast = block._transposed_weight("se_reduce", block.se_reduce)
    checks.record("" if cast.dtype == torch.bfloat16 else str(cast.dtype), "block cast: made again in its dtype")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16), ids=NAMES.get)
def test_linear_bottleneck_products_on_gpu(checks, dtype) -> None:
    """The squeeze's products on the transposed weight equal F.linear's within rounding, at a few
    samples and at many."""
    block = rexnet_squeeze_block().cuda().to(dtype)
    for batch in (1, 8, 64):
        mean = torch.randn(batch, block.se_reduce.in_channels, device="cuda").to(dtype)
        with torch.no_grad():
            ours = block._linear(mean, "se_reduce").float()
            theirs = torch.nn.functional.linear(mean.float(), block.se_reduce.weight.flatten(1).float(),
                                                block.se_reduce.bias.float())
        error = ((ours - theirs).abs().max() / theirs.abs().max()).item()
        checks.record("" if error < 2e-2 else f"relative error {error:.3g}", f"{NAMES[dtype]} batch {batch}")


# ---- the star product operator (bias_activation_product) -------------------------------------------

def reference_product(x, bias, other, other_bias, activation, min_val, max_val):
    """act(x + bias[c]) * (other + other_bias[c]) in the compute type, each step rounded, then rounded
    once to x's dtype."""
    ct = compute_dtype(x.dtype)
    gated = reference_activation(x.to(ct) + channel_view(bias, x).to(ct), activation, min_val, max_val)
    return (gated * (other.to(ct) + channel_view(other_bias, x).to(ct))).to(x.dtype)


def test_product_fake_kernel_and_refusals(checks) -> None:
    """The fake kernel: empty_like(x) in both layouts; the metadata checks the CUDA kernel makes."""
    ops = torch.ops.hardact
    for layout, x in (("NCHW", torch.empty(2, 6, 5, 7, device="meta")),
                      ("channels-last", torch.empty(2, 6, 5, 7, device="meta").contiguous(
                          memory_format=torch.channels_last))):
        p = torch.empty(6, device="meta")
        y = ops.bias_activation_product(x, p, torch.empty_like(x), p, "relu6")
        checks.record("" if y.shape == x.shape and y.stride() == x.stride() else f"strides {y.stride()}",
                      f"fake bias_activation_product {layout}: empty_like(x)")
    x = torch.empty(2, 6, 5, 5, device="meta")
    p = torch.empty(6, device="meta")
    for what, call, error in (
            ("other of another shape", lambda: ops.bias_activation_product(
                x, p, torch.empty(2, 6, 5, 4, device="meta"), p), ValueError),
            ("other of another dtype", lambda: ops.bias_activation_product(
                x, p, torch.empty_like(x, dtype=torch.float64), p), TypeError),
            ("a bias of the wrong length", lambda: ops.bias_activation_product(
                x, torch.empty(5, device="meta"), torch.empty_like(x), p), ValueError),
            ("other_bias of the wrong length", lambda: ops.bias_activation_product(
                x, p, torch.empty_like(x), torch.empty(7, device="meta")), ValueError),
            ("unknown activation", lambda: ops.bias_activation_product(x, p, torch.empty_like(x), p, "gelu"),
             ValueError),
            ("hardtanh bounds reversed", lambda: ops.bias_activation_product(
                x, p, torch.empty_like(x), p, "hardtanh", 1.0, 0.0), ValueError)):
        checks.record(raises(error, call), f"fake bias_activation_product: {what} refused")


def test_product_backward_on_meta(checks) -> None:
    """The C++ backward runs on meta tensors (shapes only): every input's gradient has its input's shape."""
    for shape in ((3, 6, 5, 5), (3, 6, 11)):
        for activation in ("relu6", "hardsigmoid", "identity"):
            leaves = [torch.empty(s, device="meta", requires_grad=True) for s in (shape, (6,), shape, (6,))]
            try:
                grads = torch.autograd.grad(ha.bias_activation_product(*leaves, activation), leaves,
                                            torch.empty(shape, device="meta"))
                report = "" if [g.shape for g in grads] == [v.shape for v in leaves] else \
                    f"shapes {[tuple(g.shape) for g in grads]}"
            except Exception as error:  # noqa: BLE001
                report = f"{type(error).__name__}: {error}"
            checks.record(report, f"bias_activation_product backward on meta, x {shape}, {activation}")


def test_product_on_cpu_names_the_expression(checks) -> None:
    """A CPU x raises ValueError giving the expression in torch operators."""
    x, p = torch.randn(2, 4, 3, 3), torch.randn(4)
    checks.record(raises(ValueError, lambda: ha.bias_activation_product(x, p, x, p, "relu6")),
                  "bias_activation_product on a CPU tensor refused")
    try:
        ha.bias_activation_product(x, p, x, p, "relu6")
    except ValueError as error:
        checks.record("" if "other_bias.view" in str(error) else str(error),
                      "bias_activation_product on a CPU tensor: the error gives the expression")


def test_product_torch_form(checks) -> None:
    """Under torch.compile the function is its torch form: on the CPU, in float64, the documented
    expression (traced whole with backend eager)."""
    generator = torch.Generator().manual_seed(SEED)
    x, other = (torch.randn(2, 6, 5, 7, dtype=torch.float64, generator=generator) * 4 for _ in range(2))
    bias, other_bias = (torch.randn(6, dtype=torch.float64, generator=generator) for _ in range(2))
    for activation, lo, hi in ACTIVATIONS:
        compiled = torch.compile(lambda *a: ha.bias_activation_product(*a, activation, lo, hi), backend="eager",
                                 fullgraph=True)
        got = compiled(x, bias, other, other_bias)
        expected = reference_product(x, bias, other, other_bias, activation, lo, hi)
        checks.record("" if torch.equal(got, expected) else f"largest difference {(got - expected).abs().max():.3g}",
                      f"bias_activation_product {activation}: the torch form under torch.compile")


@pytest.mark.cuda
def test_product_registration(checks) -> None:
    for key in ("CUDA", "Autograd", "Meta"):
        has = torch._C._dispatch_has_kernel_for_dispatch_key("hardact::bias_activation_product", key)
        checks.record("" if has else "missing", f"bias_activation_product has a {key} kernel")
    checks.record("" if "bias_activation_product" in ha._registrations.FUSED_OPS else "missing", "in FUSED_OPS")
    checks.record("" if "bias_activation_product" in ha.__all__ else "missing", "exported")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", (torch.float32, torch.float64, torch.float16, torch.bfloat16), ids=NAMES.get)
def test_product_forward(checks, generator, dtype) -> None:
    """Every layout and activation bit for bit against the documented expression (and, in float32,
    against eager's ops); 16-bit biases of x's dtype too; the output's layout is the fake kernel's."""
    for layout, x in layouts(dtype, generator):
        c = x.shape[1]
        other = torch.randn(x.shape, device="cuda", generator=generator).to(dtype)
        bias = torch.randn(c, device="cuda", generator=generator)
        other_bias = torch.randn(c, device="cuda", generator=generator)
        forms = [("float biases", bias, other_bias)]
        if dtype in (torch.float16, torch.bfloat16):
            forms.append((f"{NAMES[dtype]} biases", bias.to(dtype), other_bias.to(dtype)))
        for activation, lo, hi in ACTIVATIONS:
            for form, b, ob in forms:
                got = ha.bias_activation_product(x, b, other, ob, activation, lo, hi)
                what = f"bias_activation_product {form} {activation} {NAMES[dtype]} {layout}"
                checks.record(mismatch_report(got, reference_product(x, b, other, ob, activation, lo, hi), x), what)
                if dtype == torch.float32:
                    eager = reference_activation(x + channel_view(b, x), activation, lo, hi) * (other + channel_view(ob, x))
                    checks.record(mismatch_report(got, eager, x), what + " vs eager ops")
        got = ha.bias_activation_product(x, bias, other, other_bias, "relu6")
        checks.record(layout_report(got, x, lambda m: torch.ops.hardact.bias_activation_product(
            m, bias.to("meta"), torch.empty_like(m), other_bias.to("meta"), "relu6")),
            f"bias_activation_product {NAMES[dtype]} {layout} layout: real = fake = empty_like(x)")


@pytest.mark.cuda
def test_product_opcheck_and_gradcheck(checks, generator) -> None:
    """torch.library.opcheck (schema, fake kernel, autograd registration) in float32 and bfloat16, and
    float64 gradients of all four inputs against torch.autograd.gradcheck, away from the kinks."""
    for dtype in (torch.float32, torch.bfloat16):
        x, other = (torch.randn(3, 5, 4, 4, device="cuda", dtype=dtype, generator=generator).requires_grad_()
                    for _ in range(2))
        b, ob = (torch.randn(5, device="cuda", generator=generator).requires_grad_() for _ in range(2))
        for what, args in (("NCHW", (x, b, other, ob, "hardswish")),
                           ("channels-last", (x.detach().contiguous(memory_format=torch.channels_last).requires_grad_(),
                                              b, other, ob, "relu6"))):
            try:
                torch.library.opcheck(torch.ops.hardact.bias_activation_product.default, args)
                report = ""
            except Exception as error:  # noqa: BLE001
                report = f"{type(error).__name__}: {str(error)[:600]}"
            checks.record(report, f"opcheck bias_activation_product {what} {NAMES[dtype]}")
    x = torch.rand(2, 3, 4, 4, device="cuda", dtype=torch.float64, generator=generator) * 0.8 + 0.1
    x = (x + torch.randint(-5, 7, x.shape, device="cuda", generator=generator).double()).requires_grad_()
    other = torch.randn(2, 3, 4, 4, device="cuda", dtype=torch.float64, generator=generator).requires_grad_()
    b = (torch.rand(3, device="cuda", dtype=torch.float64, generator=generator) * 0.01).requires_grad_()
    ob = torch.randn(3, device="cuda", dtype=torch.float64, generator=generator).requires_grad_()
    for activation, lo, hi in ACTIVATIONS:
        try:
            ok = torch.autograd.gradcheck(lambda *a: ha.bias_activation_product(*a, activation, lo, hi),
                                          (x, b, other, ob), eps=1e-6, atol=1e-5)
            report = "" if ok else "gradcheck false"
        except Exception as error:  # noqa: BLE001
            report = f"{type(error).__name__}: {str(error)[:400]}"
        checks.record(report, f"gradcheck bias_activation_product {activation}")
