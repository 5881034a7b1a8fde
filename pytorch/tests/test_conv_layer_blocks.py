"""Tests of the rewrites of timm's layers that hold a convolution, BatchNorm and activation as
attributes (EfficientViT-B's ConvNormAct, CPUBone's and LowFormer's ConvLayer, LeViT's ConvNorm /
LinearNorm and the activation after them) and of the blocks built of them (MBConv, DSConv,
FusedMBConv and their ResidualBlock; LeViT's LevitBlock and LevitDownsample): rewrite/conv_layer_blocks.py.

    pytest pytorch/tests/test_conv_layer_blocks.py              # the tests marked cuda skip without a GPU
    pytest pytorch/tests/test_conv_layer_blocks.py -k cpu       # the float64 CPU comparisons only

Without a GPU (timm needed, else skipped): the smallest model of each family built on the meta
device and rewritten: every such block fused (in either order of the rewrites, nothing rewritten
twice), no BatchNorm inside a fused block, the depthwise stages the one-kernel stage takes, every
hard activation either folded or left for a stated reason (attention, after a LayerNorm); blocks
and layers holding anything else left alone; and, with the compile switches patched so that every
op is its torch.nn.functional form, the rewritten layers, blocks and whole models against the
originals in float64 on the CPU (BatchNorm statistics and biases drawn away from their defaults).
With a GPU: the rewritten models against a float64 run of the original, float32 (TF32 off) and
bfloat16, channels-last, batch 1 and 3, odd input sizes: the rewrite's largest error at most 4x the
original's own; without and with gradients (the input's and the convolutions' gradients allclose
to the original's).
"""

from __future__ import annotations

import contextlib
import copy
from unittest import mock

import pytest
import torch
from torch import nn

import hardact_torch as ha
import hardact_torch.functional as functional
import hardact_torch.rewrite.fused_block as fused_block
from checklib import Custom, randomise_batchnorms
from hardact_torch.rewrite import conv_layer_blocks

timm = pytest.importorskip("timm")

# The smallest model of each family, and an input size it takes (LeViT's attention biases are built
# for its 224 x 224 input; the others take any size).
MODELS = [("efficientvit_b0", (99, 107)), ("levit_128s", (224, 224)), ("cpubone_nano", (99, 107)),
          ("lowformer_b0", (99, 107))]
GPU_MODELS = [("efficientvit_b0", (225, 231)), ("levit_128s", (224, 224)), ("cpubone_nano", (225, 231)),
              ("lowformer_b0", (225, 231))]
BLOCK_PACKAGES = ("timm.models.efficientvit_mit", "timm.models.cpubone", "timm.models.lowformer")
BLOCK_NAMES = ("MBConv", "DSConv", "FusedMBConv")
HARD = (nn.Hardswish, nn.Hardsigmoid, nn.ReLU6, nn.Hardtanh, ha.HardSwish, ha.HardSigmoid, ha.ReLU6, ha.HardTanh)


@contextlib.contextmanager
def functional_forms():
    """Every hardact op in its torch.nn.functional form (what torch.compile traces): the CPU runs them."""
    with mock.patch.object(functional, "_is_compiling", lambda: True), \
            mock.patch.object(fused_block, "_is_compiling", lambda: True):
        yield


def build(name: str, device: str = "cpu") -> nn.Module:
    torch.manual_seed(0)
    with torch.device(device):
        model = timm.create_model(name, pretrained=False)
    if device != "meta":
        randomise_batchnorms(model, seed=5, convolution_biases=True)
    return model.eval()


def is_block(module: nn.Module) -> bool:
    kind = type(module)
    return (kind.__module__ in BLOCK_PACKAGES and kind.__name__ in BLOCK_NAMES) or \
        (kind.__module__ == "timm.models.levit" and kind.__name__ in ("LevitBlock", "LevitDownsample"))


def count_blocks(model: nn.Module) -> int:
    return sum(1 for m in model.modules() if is_block(m))


def hard_modules(model: nn.Module) -> list[tuple[str, nn.Module]]:
    return [(path, m) for path, m in model.named_modules() if type(m) in HARD]


def left_for_a_reason(model: nn.Module, path: str) -> bool:
    """A hard activation left standing for a reason the rewrite states: inside an attention module
    (left to PyTorch), or after a LayerNorm (no BatchNorm to fold it with)."""
    parts = path.split(".")
    chain = [model]
    for part in parts:
        chain.append(chain[-1]._modules[part])
    if any("Attention" in type(m).__name__ for m in chain[1:-1]):
        return True
    parent, names = chain[-2], list(chain[-2]._modules)
    previous = names[names.index(parts[-1]) - 1] if names.index(parts[-1]) > 0 else None
    return previous is not None and type(parent._modules[previous]) is nn.LayerNorm


def hard_folded(model: nn.Module) -> int:
    return sum(1 for m in model.modules()
               if type(m) is ha.BatchNormActivation and m.activation in ("hardswish", "hardsigmoid", "relu6"))


# ---- no GPU --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", [name for name, _ in MODELS])
def test_structure_on_meta(checks, name) -> None:
    """On the meta device: every MBConv / DSConv / FusedMBConv (with its ResidualBlock) and LeViT block fused, in
    either order of the rewrites; every hard activation folded or left for a stated reason; a second
    pass rewrites nothing."""
    base = build(name, "meta")
    blocks = count_blocks(base)
    hard = len(hard_modules(base))
    for order in ("optimize_for_inference", "batchnorms first"):
        model = copy.deepcopy(base)
        if order == "optimize_for_inference":
            counts = ha.optimize_for_inference(model)
        else:
            folded = ha.fuse_batchnorm_activation(model)
            counts = {"blocks": ha.fuse_blocks(model), "batchnorms": folded}
        checks.record("" if counts["blocks"] == blocks and count_blocks(model) == 0 else
                      f"fused {counts['blocks']} of {blocks}, {count_blocks(model)} left",
                      f"{name} {order}: every block fused")
        # A FusedLevitBlock's attention is the original module, left to PyTorch.
        inside = [type(m).__name__ for block in model.modules()
                  if isinstance(block, (ha.FusedInvertedResidual, conv_layer_blocks.FusedLevitBlock))
                  for name, child in block.named_children() if name != "attn"
                  for m in child.modules() if isinstance(m, (nn.modules.batchnorm._BatchNorm, *HARD))]
        checks.record("" if not inside else f"found {sorted(set(inside))}",
                      f"{name} {order}: no BatchNorm or activation module inside a fused block")
        left = hard_modules(model)
        unexplained = [path for path, _ in left if not left_for_a_reason(model, path)]
        checks.record("" if not unexplained else f"left {unexplained[:5]}",
                      f"{name} {order}: a hard activation left stands in attention or after a LayerNorm")
        checks.record("" if hard_folded(model) + len(left) == hard else
                      f"{hard_folded(model)} folded + {len(left)} left of {hard}",
                      f"{name} {order}: every other hard activation folded with its norm")
        again = ha.optimize_for_inference(model)
        checks.record("" if again["blocks"] == again["batchnorms"] == 0 else f"counts {again}",
                      f"{name} {order}: a second pass rewrites nothing")
    model = copy.deepcopy(base)
    ha.fuse_blocks(model)
    fused = [m for m in model.modules() if isinstance(m, ha.FusedInvertedResidual)]
    depthwise = [m for m in fused if type(m.conv2) is nn.Conv2d and m.conv2.groups == m.conv2.in_channels > 1]
    checks.record("" if all(m.depthwise_filter is not None for m in depthwise) else
                  f"{sum(m.depthwise_filter is None for m in depthwise)} of {len(depthwise)} without",
                  f"{name}: every MBConv / DSConv depthwise stage runs as one kernel")


def first_residual(model: nn.Module, main: str) -> nn.Module:
    return next(m for m in model.modules() if type(m).__name__ == "ResidualBlock" and type(m.main).__name__ == main)


def near_misses(name: str) -> list[tuple[str, str, callable]]:
    """(what, where, edit) of one block of a fresh model: an edit inside the block ("block": the
    rewrite leaves the block alone) or in the ResidualBlock around it ("residual": the ResidualBlock
    stays, its block fused without the skip)."""
    def untracked(bn):
        bn.track_running_stats = False
        bn.running_mean = bn.running_var = None

    def residual(model, main, skip=True):
        return next(m for m in model.modules() if type(m).__name__ == "ResidualBlock"
                    and type(m.main).__name__ == main and (getattr(m, "shortcut", None) is not None) == skip)

    if name == "efficientvit_b0":
        def block(model):
            return residual(model, "MBConv").main
        return [
            ("an extra child in a ConvNormAct", "block", lambda m: setattr(block(m).inverted_conv, "extra",
                                                                          nn.Identity())),
            ("timm's own HardSwish (not nn.Hardswish's formula)", "block", lambda m: setattr(
                block(m).inverted_conv, "act", timm.layers.activations.HardSwish())),
            ("an activation hardact does not fuse", "block", lambda m: setattr(block(m).depth_conv, "act", nn.SiLU())),
            ("a BatchNorm without running statistics", "block", lambda m: untracked(block(m).point_conv.norm)),
            ("a custom convolution", "block", lambda m: setattr(block(m).depth_conv, "conv",
                                                                Custom(block(m).depth_conv.conv))),
            ("an extra child in the MBConv", "block", lambda m: setattr(block(m), "extra", nn.Identity())),
            ("a submodule in training mode", "block", lambda m: block(m).point_conv.train()),
            ("a shortcut that is not nn.Identity", "residual", lambda m: setattr(
                residual(m, "MBConv"), "shortcut", Custom(nn.Identity()))),
            ("a pre_norm", "residual", lambda m: setattr(residual(m, "MBConv"), "pre_norm", nn.BatchNorm2d(8))),
        ]
    if name == "lowformer_b0":
        return [
            ("a ConvLayer with a 1-D BatchNorm", "block", lambda m: setattr(
                residual(m, "FusedMBConv").main.point_conv, "norm", nn.BatchNorm1d(8))),
            ("a drop_path that is nn.Dropout", "residual", lambda m: setattr(residual(m, "MBConv"), "drop_path",
                                                                            nn.Dropout(0.1))),
        ]

    if name == "levit_128s":
        def levit(model):
            return next(m for m in model.modules() if type(m).__name__ == "LevitBlock")
        return [
            ("an extra child in the LevitMlp", "block", lambda m: setattr(levit(m).mlp, "extra", nn.Identity())),
            ("a SiLU in the LevitMlp", "block", lambda m: setattr(levit(m).mlp, "act", nn.SiLU())),
            ("a drop path that is nn.Dropout", "block", lambda m: setattr(levit(m), "drop_path2", nn.Dropout(0.1))),
            ("a LinearNorm with a bias", "block", lambda m: setattr(levit(m).mlp.ln2, "linear",
                                                                    nn.Linear(8, 8, device="meta"))),
        ]

    def padded(model):
        return next(m for m in model.modules() if type(m).__name__ == "FusedMBConv"
                    and isinstance(m.spatial_conv.conv, nn.Sequential)).spatial_conv.conv
    return [("a padding that is not nn.ZeroPad2d", "block",
             lambda m: padded(m).__setitem__(0, nn.ReflectionPad2d((1, 0, 1, 0))))]


@pytest.mark.parametrize("name", ["efficientvit_b0", "lowformer_b0", "cpubone_nano", "levit_128s"])
def test_near_misses_left_alone(checks, name) -> None:
    """A block holding something the rewrite cannot prove equivalent stays as it is, the others
    fuse; a ResidualBlock holding something else stays, its block fused without the skip."""
    base = build(name, "meta")
    blocks = count_blocks(base)
    for what, where, edit in near_misses(name):
        model = copy.deepcopy(base)
        edit(model)
        residuals = [m for m in model.modules() if type(m).__name__ == "ResidualBlock" and is_block(m.main)]
        fused = ha.fuse_blocks(model)
        if where == "block":
            checks.record("" if fused == blocks - 1 and count_blocks(model) == 1 else
                          f"fused {fused} of {blocks}, {count_blocks(model)} left",
                          f"{name} with {what}: that block left alone")
        else:
            kept = [m for m in model.modules() if type(m).__name__ == "ResidualBlock"
                    and isinstance(m.main, ha.FusedInvertedResidual)]
            checks.record("" if fused == blocks and len(kept) == 1 and not kept[0].main.skip
                          and any(kept[0] is m for m in residuals) else f"fused {fused} of {blocks}, {len(kept)} kept",
                          f"{name} with {what}: the ResidualBlock kept, its block fused without the skip")


def test_levit_near_misses(checks) -> None:
    """LeViT's folds need LevitMlp's exact layout and an activation hardact fuses."""
    base = build("levit_128s", "meta")
    model = copy.deepcopy(base)
    mlp = next(m for m in model.modules() if type(m).__name__ == "LevitMlp")
    mlp.extra = nn.Identity()
    model.stem.act1 = nn.SiLU()
    ha.fuse_batchnorm_activation(model)
    checks.record("" if type(mlp.act) is nn.Hardswish and type(mlp.ln1.bn) is ha.BatchNormActivation
                  and mlp.ln1.bn.activation == "identity" else f"act {type(mlp.act).__name__}",
                  "a LevitMlp with an extra child: its activation stands alone")
    checks.record("" if type(model.stem.act1) is nn.SiLU and model.stem.conv1.bn.activation == "identity" else
                  f"act1 {type(model.stem.act1).__name__}", "a SiLU after a ConvNorm: not folded")
    checks.record("" if type(model.stem.act2) is nn.Identity and model.stem.conv2.bn.activation == "hardswish" else
                  f"act2 {type(model.stem.act2).__name__}", "the other stem activations folded")


def compare(checks, original: nn.Module, rewritten: nn.Module, x: torch.Tensor, what: str) -> None:
    with torch.no_grad(), functional_forms():
        expected, got = original(x), rewritten(x)
    largest = expected.abs().max().item()
    difference = (got - expected).abs().max().item()
    checks.record("" if difference <= 1e-12 * max(largest, 1.0) else f"difference {difference:.3g} of {largest:.3g}",
                  f"{what}: float64 outputs equal up to rounding")


@pytest.mark.parametrize("name, size", MODELS)
def test_models_on_cpu(checks, name, size) -> None:
    """The whole rewritten model (optimize_for_inference) against the original, float64, NCHW and
    channels-last, with every op in its torch.nn.functional form."""
    base = build(name).double()
    rewritten = copy.deepcopy(base)
    counts = ha.optimize_for_inference(rewritten)
    checks.record("" if counts["blocks"] == count_blocks(base) else f"counts {counts}", f"{name}: blocks fused")
    x = torch.randn(2, 3, *size, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    for memory_format in (torch.contiguous_format, torch.channels_last):
        compare(checks, base, rewritten, x.contiguous(memory_format=memory_format), f"{name} {memory_format}")


def test_layers_and_bare_blocks_on_cpu(checks) -> None:
    """Single layers (_fold_layer) and blocks outside a ResidualBlock, float64: a biased convolution
    with a BatchNorm and hard-swish, a biased convolution and hard-swish with no BatchNorm, CPUBone's
    padded 2x2 convolution, and MBConv / FusedMBConv / DSConv without a skip."""
    from timm.models import cpubone, efficientvit_mit, lowformer
    torch.manual_seed(0)
    layers = [
        ("EfficientViT ConvNormAct, bias + BatchNorm + hardswish",
         efficientvit_mit.ConvNormAct(8, 12, 3, bias=True, act_layer=nn.Hardswish)),
        ("LowFormer ConvLayer, bias + hardswish, no BatchNorm",
         lowformer.ConvLayer(8, 12, 3, use_bias=True, norm_layer=None, act_layer=nn.Hardswish)),
        ("CPUBone ConvLayer, padded 2x2, bias + BatchNorm + relu6",
         cpubone.ConvLayer(8, 12, 2, groups=2, use_bias=True, act_layer=nn.ReLU6)),
        ("CPUBone ConvLayer, bias + hardswish, no BatchNorm",
         cpubone.ConvLayer(8, 12, 3, use_bias=True, norm_layer=None, act_layer=nn.Hardswish)),
    ]
    x = torch.randn(2, 8, 13, 11, dtype=torch.float64)
    for what, layer in layers:
        layer = randomise_batchnorms(layer, seed=5, convolution_biases=True).double().eval()
        rewritten = copy.deepcopy(layer)
        done = conv_layer_blocks._fold_layer(rewritten)
        checks.record("" if done == 1 and type(rewritten.norm) is ha.BatchNormActivation
                      and _no_bias(rewritten.conv) else "not rewritten", f"{what}: rewritten")
        compare(checks, layer, rewritten, x, what)
    blocks = [
        ("EfficientViT MBConv, fewer_norm", efficientvit_mit.MBConv(8, 16, stride=2, use_bias=(True, True, False),
                                                                    norm_layer=(None, None, nn.BatchNorm2d),
                                                                    act_layer=(nn.Hardswish, nn.Hardswish, None))),
        ("EfficientViT DSConv", efficientvit_mit.DSConv(8, 16, act_layer=(nn.Hardswish, None))),
        ("LowFormer FusedMBConv", lowformer.FusedMBConv(8, 16, use_bias=True, act_layer=nn.Hardswish)),
        ("CPUBone MBConv, 5x5", cpubone.MBConv(8, 8, 5, norm_layer=(None, nn.BatchNorm2d, nn.BatchNorm2d),
                                               act_layer=(nn.Hardswish, nn.ReLU6, None))),
    ]
    for what, block in blocks:
        block = randomise_batchnorms(block, seed=5, convolution_biases=True).double().eval()
        fused = conv_layer_blocks._conv_layer_block(block)
        checks.record("" if isinstance(fused, ha.FusedInvertedResidual) and not fused.skip else "not fused",
                      f"{what}: fused without a skip")
        if fused is not None:
            compare(checks, block, fused.eval(), x, what)


def _no_bias(conv: nn.Module) -> bool:
    inner = conv[1] if isinstance(conv, nn.Sequential) else conv
    return inner.bias is None


# ---- GPU -----------------------------------------------------------------------------------------

def largest_error(model: nn.Module, x: torch.Tensor, reference: torch.Tensor, dtype: torch.dtype,
                  grad: bool) -> tuple[float, torch.Tensor]:
    xl = x.to(dtype).contiguous(memory_format=torch.channels_last)
    if grad:
        xl.requires_grad_()
        out = model(xl)
    else:
        with torch.no_grad():
            out = model(xl)
    return (out.double() - reference).abs().max().item(), out


@pytest.mark.cuda
@pytest.mark.parametrize("name, size", GPU_MODELS)
def test_models_on_gpu(checks, name, size) -> None:
    """The rewritten model's largest error against a float64 run of the original at most 4x the
    original's own (float32 with TF32 off, bfloat16; channels-last; batch 1 and 3; without and with
    gradients)."""
    base = build(name).cuda()
    reference_model = copy.deepcopy(base).double()
    rewritten = copy.deepcopy(base)
    ha.optimize_for_inference(rewritten)
    tf32 = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        for batch in (1, 3):
            x = torch.randn(batch, 3, *size, device="cuda", generator=torch.Generator("cuda").manual_seed(batch))
            with torch.no_grad():
                reference = reference_model(x.double().contiguous(memory_format=torch.channels_last))
            for dtype in (torch.float32, torch.bfloat16):
                original = copy.deepcopy(base).to(dtype=dtype, memory_format=torch.channels_last)
                model = copy.deepcopy(rewritten).to(dtype=dtype, memory_format=torch.channels_last)
                floor = torch.finfo(dtype).eps * reference.abs().max().item()
                for grad in (False, True):
                    own, _ = largest_error(original, x, reference, dtype, grad)
                    ours, _ = largest_error(model, x, reference, dtype, grad)
                    print(f"  {name} {dtype} batch {batch} grad {grad}: error {ours:.3g}, original's {own:.3g}")
                    checks.record("" if ours <= 4 * max(own, floor) else f"error {ours:.3g}, original's {own:.3g}",
                                  f"{name} {dtype} batch {batch} {'with' if grad else 'without'} gradients: "
                                  f"at most 4x the original's error against float64")
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32


@pytest.mark.cuda
@pytest.mark.parametrize("name, size", GPU_MODELS)
def test_gradients_on_gpu(checks, name, size) -> None:
    """The rewritten model differentiates like the original (eval mode, float32, TF32 off): the
    input's gradient and the convolution weights' (shared with the fused blocks) allclose."""
    model = build(name).cuda()
    original = copy.deepcopy(model)
    weights = {path: m.weight for path, m in model.named_modules() if type(m) is nn.Conv2d}
    ha.optimize_for_inference(model)
    x = torch.randn(3, 3, *size, device="cuda", generator=torch.Generator("cuda").manual_seed(7))
    x = x.contiguous(memory_format=torch.channels_last)
    tf32 = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        grads = []
        for net, params in ((original, [original.get_submodule(p).weight for p in weights]),
                            (model, list(weights.values()))):
            leaf = x.clone().requires_grad_()
            out = net(leaf)
            direction = torch.linspace(-1, 1, out.numel(), device="cuda").view_as(out)
            grads.append(torch.autograd.grad((out * direction).sum(), [leaf] + params))
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32
    differing = [i for i, (ours, theirs) in enumerate(zip(grads[1], grads[0]))
                 if not torch.allclose(ours, theirs, rtol=1e-3, atol=1e-3 * theirs.abs().max().item())]
    checks.record("" if not differing else f"gradients {differing[:10]} of {len(grads[0])} differ",
                  f"{name}: input and convolution-weight gradients allclose to the original's")
