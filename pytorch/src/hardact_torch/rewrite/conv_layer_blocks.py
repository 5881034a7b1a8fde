"""timm's layer modules that hold a convolution, its BatchNorm and its activation as attributes
(EfficientViT-B's ConvNormAct, CPUBone's and LowFormer's ConvLayer, LeViT's ConvNorm / LinearNorm
followed by an activation) and the blocks built of them (MBConv, DSConv, FusedMBConv in a
ResidualBlock), rewritten for inference.

fuse_batchnorm_activation folds only a BatchNorm whose activation is its nn.Sequential neighbour;
these layers call norm and act as attributes, so their activation ran as a pass of its own. Here:
  - _fold_conv_layers: each such layer's BatchNorm becomes a BatchNormActivation holding the
    activation its forward applies next (the activation made nn.Identity), with the convolution's
    bias folded into the shift; a layer with a biased convolution, no BatchNorm and an activation
    gets the bias and the activation in that one pass (the convolution runs without its bias:
    PyTorch's cuDNN path adds a bias with a pass of its own, output.add_ after cudnn_convolution, so
    this saves a pass; where its native depthwise kernel had added the bias inside, the count is
    unchanged: it never adds one).
  - _fuse_conv_layer_blocks: each MBConv / DSConv / FusedMBConv, with the identity shortcut of the
    ResidualBlock around it, becomes one FusedInvertedResidual: the folds above per stage, the
    depthwise stage in one kernel where it fits, the residual add in the projection's pass
    (TUNING.md#package-fused-ops, TUNING.md#depthwise-stage); and
    each LeViT block (LevitBlock, LevitDownsample) a FusedLevitBlock: its attention left to
    PyTorch, its MLP's residual add in the MLP's last BatchNorm pass.
"""

from __future__ import annotations

import torch
from torch import nn

from ..functional import scale_shift_residual_activation
from ..modules import BatchNormActivation
from .fused_block import FusedInvertedResidual
from .matching import _children, _foldable, _fused_activation
from .timm_blocks import _inactive_in_eval

_IDENTITY = ("identity", -1.0, 1.0)
_CONV_LAYERS = {"timm.models.efficientvit_mit": "ConvNormAct", "timm.models.cpubone": "ConvLayer",
                "timm.models.lowformer": "ConvLayer"}
_BLOCK_MODULES = ("timm.models.efficientvit_mit", "timm.models.cpubone", "timm.models.lowformer")
_LEVIT = "timm.models.levit"


def _is(module: nn.Module, module_path: str, name: str) -> bool:
    kind = type(module)
    return kind.__module__ == module_path and kind.__name__ == name


def _convolution(conv: nn.Module) -> nn.Conv2d | None:
    """The nn.Conv2d a layer's `conv` runs: the module itself, or CPUBone's nn.Sequential(nn.ZeroPad2d,
    nn.Conv2d) (an even filter at stride 1, padded left and top first); else None."""
    if type(conv) is nn.Conv2d:
        return conv
    if type(conv) is nn.Sequential and len(conv) == 2 and type(conv[0]) is nn.ZeroPad2d and type(conv[1]) is nn.Conv2d:
        return conv[1]
    return None


def _conv_layer_parts(layer: nn.Module) -> tuple[nn.Module, nn.Module | None, nn.Module | None] | None:
    """(conv, norm or None, act or None) of a layer whose forward is conv, then norm, then act, with
    None for an absent or nn.Identity norm or act; None for any other module. Their forwards, in timm
    1.0.31:
      efficientvit_mit.ConvNormAct: dropout, conv, norm, act (nn.Identity where absent; the
                                    nn.Dropout is the identity in eval)
      lowformer.ConvLayer:          conv, norm, act (nn.Identity where absent)
      cpubone.ConvLayer:            conv, then norm and act where they are not None (then they are
                                    attributes, not children); conv an nn.Conv2d or
                                    nn.Sequential(nn.ZeroPad2d, nn.Conv2d)
    A layer holding anything else, or whose norm is not an nn.BatchNorm2d (or one already folded as a
    BatchNormActivation), is None."""
    module_path = type(layer).__module__
    if _CONV_LAYERS.get(module_path) != type(layer).__name__:
        return None
    names = _children(layer)
    if module_path == "timm.models.efficientvit_mit":
        if names != {"dropout", "conv", "norm", "act"} or type(layer.dropout) is not nn.Dropout:
            return None
    elif module_path == "timm.models.lowformer":
        if names != {"conv", "norm", "act"}:
            return None
    elif not ("conv" in names and names <= {"conv", "norm", "act"}
              and all(name in names or getattr(layer, name, 0) is None for name in ("norm", "act"))):
        return None
    if _convolution(layer.conv) is None:
        return None
    norm = None if layer.norm is None or type(layer.norm) is nn.Identity else layer.norm
    act = None if layer.act is None or type(layer.act) is nn.Identity else layer.act
    if norm is not None and type(norm) not in (nn.BatchNorm2d, BatchNormActivation):
        return None
    return layer.conv, norm, act


def _folded(norm: nn.Module | None, bias: torch.Tensor | None, act: nn.Module | None,
            channels: int, like: torch.Tensor) -> BatchNormActivation | None:
    """act(norm(y + bias)) as one BatchNormActivation: norm an nn.BatchNorm1d/2d with running
    statistics, a BatchNormActivation with no activation yet (or none to add) or None (scale 1);
    the bias (None for none) folded into the shift, as norm's scale times bias; computed in float64,
    kept in float32 (float64 for float64 tensors), on like's device. None where the activation is
    not one hardact fuses or the norm does not fold."""
    spec = _IDENTITY if act is None else _fused_activation(act)
    if spec is None:
        return None
    with torch.no_grad():
        if norm is None:
            scale = torch.ones(channels, dtype=torch.float64, device=like.device)
            shift = torch.zeros(channels, dtype=torch.float64, device=like.device)
            dtype = like.dtype
        elif type(norm) is BatchNormActivation:
            if norm.activation != "identity" and spec[0] != "identity":
                return None
            if spec[0] == "identity":
                spec = (norm.activation, norm.min_val, norm.max_val)
            scale, shift, dtype = norm.scale.double(), norm.shift.double(), norm.scale.dtype
        elif type(norm) in (nn.BatchNorm1d, nn.BatchNorm2d) and _foldable(norm):
            # BatchNormActivation.from_batchnorm's fold, kept in float64 until the bias joins the shift.
            invstd = torch.rsqrt(norm.running_var.double() + norm.eps)
            scale = (norm.weight.double() if norm.weight is not None else torch.ones_like(invstd)) * invstd
            shift = (norm.bias.double() if norm.bias is not None else torch.zeros_like(invstd)) \
                - norm.running_mean.double() * scale
            dtype = norm.running_mean.dtype
        else:
            return None
        if bias is not None:
            shift = shift + scale * bias.detach().double()
        dtype = torch.float64 if dtype == torch.float64 else torch.float32
        return BatchNormActivation(scale.to(dtype), shift.to(dtype), *spec).to(like.device)


def _without_bias(conv: nn.Module) -> nn.Module:
    """conv itself where its nn.Conv2d has no bias; else the same convolution without it: a new
    nn.Conv2d sharing the weight (the same Parameter), in CPUBone's padding nn.Sequential where it
    was in one."""
    inner = _convolution(conv)
    if inner.bias is None:
        return conv
    twin = nn.Conv2d(inner.in_channels, inner.out_channels, inner.kernel_size, inner.stride, inner.padding,
                     inner.dilation, inner.groups, bias=False, padding_mode=inner.padding_mode, device="meta")
    twin.weight = inner.weight
    twin.train(inner.training)
    if conv is inner:
        return twin
    return nn.Sequential(conv[0], twin).train(conv.training)


def _stage(layer: nn.Module) -> tuple[nn.Module, BatchNormActivation] | None:
    """(the layer's convolution without bias, its bias, norm and activation as one
    BatchNormActivation) for a layer _conv_layer_parts knows; else None."""
    parts = _conv_layer_parts(layer)
    if parts is None:
        return None
    conv, norm, act = parts
    inner = _convolution(conv)
    folded = _folded(norm, inner.bias, act, inner.out_channels, inner.weight)
    if folded is None:
        return None
    return _without_bias(conv), folded


# ---- layers ---------------------------------------------------------------------------------------


def _fold_layer(layer: nn.Module) -> int:
    """Rewrites one layer _conv_layer_parts knows, in place: its BatchNorm folded with the bias
    before it and the activation after it (the activation made nn.Identity), or a bias with the
    activation after it where there is no BatchNorm. Returns 1 where it rewrote the layer, else 0:
    a layer with no BatchNorm and no bias-and-activation pair is left alone (nothing to save), as is
    one with an activation hardact does not fuse."""
    parts = _conv_layer_parts(layer)
    if parts is None:
        return 0
    conv, norm, act = parts
    bias = _convolution(conv).bias
    if type(norm) is BatchNormActivation and act is None and bias is None:
        return 0  # already folded
    if norm is None and (bias is None or act is None):
        return 0
    stage = _stage(layer)
    if stage is None:
        return 0
    # The new modules take the layer's mode: fuse_blocks leaves alone a block with a submodule in training.
    layer.conv, layer.norm = stage[0], stage[1].train(layer.training)
    if act is not None:
        layer.act = nn.Identity().train(layer.training)
    return 1


def _levit_norm(module: nn.Module) -> bool:
    """LeViT's ConvNorm (forward bn(linear(x)), an nn.Conv2d and an nn.BatchNorm2d) or LinearNorm
    (forward bn(linear(x).flatten(0, 1)).reshape_as(x), an nn.Linear and an nn.BatchNorm1d over the
    tokens flattened to rows: dim 1 of the BatchNorm's input is the channel)."""
    if _children(module) != {"linear", "bn"}:
        return False
    if _is(module, _LEVIT, "ConvNorm"):
        return type(module.linear) is nn.Conv2d and type(module.bn) is nn.BatchNorm2d and _foldable(module.bn)
    if _is(module, _LEVIT, "LinearNorm"):
        return type(module.linear) is nn.Linear and type(module.bn) is nn.BatchNorm1d and _foldable(module.bn)
    return False


def _fold_levit(norm_owner: nn.Module, act: nn.Module) -> bool:
    """norm_owner.bn (a ConvNorm's or LinearNorm's) folded with act, which its caller applies right
    after norm_owner; False where act is not one hardact fuses."""
    spec = _fused_activation(act)
    if spec is None or spec[0] == "identity" or not _levit_norm(norm_owner):
        return False
    bn = norm_owner.bn
    norm_owner.bn = BatchNormActivation.from_batchnorm(bn, *spec).to(bn.running_mean.device).train(bn.training)
    return True


def _fold_conv_layers(model: nn.Module) -> int:
    """fuse_batchnorm_activation's part for layers that hold their BatchNorm and activation as
    attributes, in place on an eval-mode model (the caller checks the mode):
      - timm's EfficientViT-B ConvNormAct, CPUBone and LowFormer ConvLayer (_fold_layer);
      - LeViT's ConvNorm followed by an activation in an nn.Sequential (Stem8, Stem16) and
        LevitMlp, whose forward is ln1, act, drop, ln2: ln1's BatchNorm takes act (made nn.Identity).
    Returns how many layers it rewrote."""
    fused = 0
    for parent in list(model.modules()):
        fused += _fold_layer(parent)
        if _is(parent, _LEVIT, "LevitMlp") and _children(parent) == {"ln1", "act", "drop", "ln2"} \
                and type(parent.drop) is nn.Dropout and _fold_levit(parent.ln1, parent.act):
            parent.act = nn.Identity().train(parent.training)
            fused += 1
        if isinstance(parent, nn.Sequential) and type(parent).__module__ == _LEVIT:
            names = list(parent._modules)
            for first, second in zip(names, names[1:]):
                if _fold_levit(parent._modules[first], parent._modules[second]):
                    parent._modules[second] = nn.Identity().train(parent.training)
                    fused += 1
    return fused


# ---- blocks ---------------------------------------------------------------------------------------


def _block_stages(block: nn.Module) -> list | None:
    """[expansion or None, middle, projection] stages (each _stage's pair) of timm's MBConv
    (inverted_conv, depth_conv, point_conv), DSConv (depth_conv, point_conv) or FusedMBConv
    (spatial_conv, point_conv) of EfficientViT-B, CPUBone or LowFormer, whose forwards call those
    layers in that order and nothing else; None for anything else or a layer that does not fold."""
    kind = type(block)
    if kind.__module__ not in _BLOCK_MODULES:
        return None
    layouts = {"MBConv": ("inverted_conv", "depth_conv", "point_conv"), "DSConv": (None, "depth_conv", "point_conv"),
               "FusedMBConv": (None, "spatial_conv", "point_conv")}
    names = layouts.get(kind.__name__)
    if names is None or (kind.__name__ == "DSConv" and kind.__module__ != "timm.models.efficientvit_mit") \
            or _children(block) != {name for name in names if name is not None}:
        return None
    stages = [None if name is None else _stage(getattr(block, name)) for name in names]
    if any(stage is None for name, stage in zip(names, stages) if name is not None):
        return None
    return stages


def _conv_layer_block(module: nn.Module) -> FusedInvertedResidual | None:
    """The FusedInvertedResidual of one of these, or None:
      - a ResidualBlock of EfficientViT-B (forward main(pre_norm(x)) + shortcut(x), the add only where
        shortcut is not None) with an nn.Identity pre_norm and shortcut or none;
      - a ResidualBlock of CPUBone or LowFormer (forward main(x) where shortcut is None, else
        drop_path(main(x)) + shortcut(x)) with an nn.Identity shortcut or none, drop_path the
        identity in eval;
      - a bare MBConv, DSConv or FusedMBConv (no skip);
    with main an MBConv, DSConv or FusedMBConv (_block_stages). The middle stage is the depthwise
    stage FusedInvertedResidual runs in one kernel where its convolution fits (MBConv and DSConv's
    depthwise filter), else as the convolution and then the fold (FusedMBConv's full convolution)."""
    kind = type(module)
    if kind.__name__ != "ResidualBlock":
        stages = _block_stages(module)
        return None if stages is None else FusedInvertedResidual(stages[0], stages[1], None, stages[2], False)
    if kind.__module__ not in _BLOCK_MODULES:
        return None
    shortcut = getattr(module, "shortcut", 0)
    if shortcut is not None and type(shortcut) is not nn.Identity:
        return None
    names = {"main"} | ({"shortcut"} if shortcut is not None else set())
    if kind.__module__ == "timm.models.efficientvit_mit":
        if _children(module) != names | {"pre_norm"} or type(module.pre_norm) is not nn.Identity:
            return None
    elif _children(module) != names | {"drop_path"} or not _inactive_in_eval(module.drop_path):
        return None
    stages = _block_stages(module.main)
    if stages is None:
        return None
    return FusedInvertedResidual(stages[0], stages[1], None, stages[2], shortcut is not None)


def _fuse_conv_layer_blocks(model: nn.Module) -> int:
    """fuse_blocks' part for EfficientViT-B, CPUBone and LowFormer (_conv_layer_block) and LeViT
    (_levit_block), in place on an eval-mode model (the caller checks the mode); a block with a
    submodule in training mode is left alone. Returns how many blocks it replaced."""
    def walk(parent: nn.Module) -> int:
        fused = 0
        for name, child in list(parent.named_children()):
            block = None
            if not any(m.training for m in child.modules() if type(m) is not BatchNormActivation):
                block = _conv_layer_block(child)
                if block is None:
                    block = _levit_block(child)
            if block is not None:
                setattr(parent, name, block.train(False))
                fused += 1
            else:
                fused += walk(child)
        return fused
    return walk(model)


# ---- LeViT ----------------------------------------------------------------------------------------


class FusedLevitBlock(nn.Module):
    """An inference LeViT block (LevitBlock, LevitDownsample) with its MLP's passes fused:

        x = x + attn(x)                        LevitBlock (LevitDownsample: x = attn(x)), as it was
        h = norm1(linear1(x))                  ln1's BatchNorm and the MLP's activation, one pass
        out = norm2(linear2(h)) + x            ln2's BatchNorm and the residual add, one pass
                                               (scale_shift_residual_activation)

    where eager PyTorch runs ln1's BatchNorm, the activation, ln2's BatchNorm and the add as four
    passes (three where the tokens x are not contiguous, as after an NCHW stem: the add stays
    apart). linear1 and linear2 are the MLP's nn.Linear (LinearNorm: the BatchNorm1d sees the tokens
    flattened to rows, (B * N, C)) or nn.Conv2d (ConvNorm, levit_conv_*), shared; norm1 and norm2 the
    folded BatchNormActivations. The attention module is the block's own, untouched. The same
    function up to rounding; differentiable, with the BatchNorms frozen. Made by fuse_blocks."""

    def __init__(self, attn: nn.Module, attention_residual: bool, linear1: nn.Module, norm1: BatchNormActivation,
                 linear2: nn.Module, norm2: BatchNormActivation):
        super().__init__()
        self.attn, self.attention_residual = attn, bool(attention_residual)
        self.linear1, self.norm1, self.linear2, self.norm2 = linear1, norm1, linear2, norm2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(x) if self.attention_residual else self.attn(x)
        norm = self.norm2
        if type(self.linear1) is nn.Linear:  # LinearNorm: the BatchNorms over (B * N, C) rows
            h = self.norm1(self.linear1(x).flatten(0, 1)).reshape(x.shape[0], x.shape[1], -1)
            y = self.linear2(h).flatten(0, 1)
            if not x.is_contiguous():
                # Tokens transposed from an NCHW stem: (B * N, C) rows of x would be a copy, a pass
                # more than the add saves; the add stays, as the block made it.
                return x + norm(y).reshape_as(x)
            y = scale_shift_residual_activation(y, norm.scale, norm.shift, x.flatten(0, 1), norm.activation,
                                                norm.min_val, norm.max_val)
            return y.reshape_as(x)
        y = self.linear2(self.norm1(self.linear1(x)))
        return scale_shift_residual_activation(y, norm.scale, norm.shift, x, norm.activation, norm.min_val,
                                               norm.max_val)

    def extra_repr(self) -> str:
        return f"attention_residual={self.attention_residual}"


def _levit_folded(norm_owner: nn.Module, act: nn.Module | None) -> BatchNormActivation | None:
    """A ConvNorm's or LinearNorm's BatchNorm (or its fold already made) with act after it (None for
    none) as one BatchNormActivation; None where it does not fold."""
    if _children(norm_owner) != {"linear", "bn"} or not (_is(norm_owner, _LEVIT, "ConvNorm")
                                                         or _is(norm_owner, _LEVIT, "LinearNorm")):
        return None
    linear, bn = norm_owner.linear, norm_owner.bn
    convolution = _is(norm_owner, _LEVIT, "ConvNorm")
    expected = (nn.Conv2d, nn.BatchNorm2d) if convolution else (nn.Linear, nn.BatchNorm1d)
    if type(linear) is not expected[0] or type(bn) not in (expected[1], BatchNormActivation) \
            or linear.bias is not None:
        return None
    return _folded(bn, None, act, linear.out_channels if convolution else linear.out_features, linear.weight)


def _levit_block(block: nn.Module) -> FusedLevitBlock | None:
    """The FusedLevitBlock of LeViT's LevitBlock (forward x = x + drop_path1(attn(x)), then x = x +
    drop_path2(mlp(x))) or LevitDownsample (x = attn_downsample(x), then x = x + drop_path(mlp(x))),
    with the drop paths the identity in eval and mlp a LevitMlp (forward ln1, act, drop, ln2; drop an
    nn.Dropout, the identity in eval) whose ln1 and ln2 fold; else None."""
    if _is(block, _LEVIT, "LevitBlock"):
        if _children(block) != {"attn", "drop_path1", "mlp", "drop_path2"} \
                or not (_inactive_in_eval(block.drop_path1) and _inactive_in_eval(block.drop_path2)):
            return None
        attn, attention_residual = block.attn, True
    elif _is(block, _LEVIT, "LevitDownsample"):
        if _children(block) != {"attn_downsample", "mlp", "drop_path"} or not _inactive_in_eval(block.drop_path):
            return None
        attn, attention_residual = block.attn_downsample, False
    else:
        return None
    mlp = block.mlp
    if not _is(mlp, _LEVIT, "LevitMlp") or _children(mlp) != {"ln1", "act", "drop", "ln2"} \
            or type(mlp.drop) is not nn.Dropout:
        return None
    norm1 = _levit_folded(mlp.ln1, None if type(mlp.act) is nn.Identity else mlp.act)
    norm2 = _levit_folded(mlp.ln2, None)
    if norm1 is None or norm2 is None:
        return None
    return FusedLevitBlock(attn, attention_residual, mlp.ln1.linear, norm1, mlp.ln2.linear, norm2)
