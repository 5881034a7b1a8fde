"""Bottleneck blocks beyond MobileNetV3's: timm's StarNet Block matched as FusedStarBlock."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.compiler import is_compiling as _is_compiling

from ..functional import (hardsigmoid, hardswish, hardtanh, relu6, residual_activation, scale_shift_activation,
                          scale_shift_residual_activation)
from ..modules import BatchNormActivation
from .matching import _children, _folded_norm, _fused_activation
from .timm_blocks import _inactive_in_eval

__all__ = ["FusedStarBlock"]


class FusedStarBlock(nn.Module):
    """An inference StarNet block (timm's starnet.Block) with each convolution's bias added in the pass
    that follows it, where PyTorch adds it in a pass of its own (ATen runs cuDNN's convolution without
    bias, then adds it with add_):

        y = norm1(conv1(x))          the depthwise 7x7 convolution without its bias, which joins the
                                     BatchNorm's shift: norm1 = (z + b) * scale + shift, folded
        a = act(f1(y) + b1)          f1 without its bias: the bias and act in one bias_activation
        a = a * f2(y)                the star product (f2 the block's own, with its bias), in place
        z = norm_g(conv_g(a))        g's convolution without its bias, folded into its BatchNorm
        out = conv2(z) + b2 + x      dwconv2 without its bias: the bias and the residual add in one
                                     scale_shift_residual_activation (a scale of ones)

    The convolutions are the block's modules (shared); the folded shifts (shift + bias * scale,
    computed in float64 once, frozen like BatchNormActivation's) are buffers. No pass is added: each
    bias is either ATen's own pass, now merged, or inside the convolution's kernel, now in the next
    pass. The star product stays two passes (the activation, the multiply): no hardact op computes
    act(a) * b. Where a gradient is wanted or under torch.compile, the block's own forms run (the
    convolutions with their biases, then the BatchNorms). Against the original block the results
    differ by rounding only: the BatchNorms are folded as BatchNormActivation's are, with the bias;
    in float32 the f1 and dwconv2 passes give the original's bits (z + b rounded, then the activation
    or + x rounded). Made by fuse_blocks, for inference; differentiable, with the BatchNorms frozen."""

    def __init__(self, depthwise: tuple[nn.Conv2d, BatchNormActivation], f1: nn.Conv2d, f2: nn.Conv2d,
                 activation: nn.Module, gate: tuple[nn.Conv2d, BatchNormActivation], depthwise2: nn.Conv2d):
        super().__init__()
        self.conv1, self.norm1 = depthwise
        self.f1, self.f2 = f1, f2
        self.activation = _fused_activation(activation)  # (name, min_val, max_val): applied in a fused pass
        self.conv_g, self.norm_g = gate
        self.conv2 = depthwise2
        self.register_buffer("shift1", _bias_folded(self.norm1, self.conv1.bias))
        self.register_buffer("shift_g", _bias_folded(self.norm_g, self.conv_g.bias))
        self.register_buffer("ones", torch.ones_like(self.norm1.scale, memory_format=torch.contiguous_format))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _is_compiling() or type(x) is not torch.Tensor \
                or (torch.is_grad_enabled() and any(p.requires_grad for p in (x, *self.parameters()))):
            y = self.norm1(self.conv1(x))
            a = _activation(self.f1(y), self.activation) * self.f2(y)
            return x + self.conv2(self.norm_g(self.conv_g(a)))
        y = scale_shift_activation(self.conv1._conv_forward(x, self.conv1.weight, None), self.norm1.scale,
                                   self.shift1)
        a = self.f1._conv_forward(y, self.f1.weight, None)
        a = _activation(a, self.activation) if self.f1.bias is None else \
            scale_shift_activation(a, None, self.f1.bias, *self.activation)
        a.mul_(self.f2(y))
        z = scale_shift_activation(self.conv_g._conv_forward(a, self.conv_g.weight, None), self.norm_g.scale,
                                   self.shift_g)
        bias = self.conv2.bias
        z = self.conv2._conv_forward(z, self.conv2.weight, None)
        if z.shape != x.shape or z.dtype != x.dtype:  # the block's add would broadcast or promote (autocast)
            return x + (z if bias is None else z + bias.view(-1, 1, 1))
        if bias is None:
            return residual_activation(z, x)
        return scale_shift_residual_activation(z, self.ones, bias, x)

    def extra_repr(self) -> str:
        return f"activation={self.activation[0]}, biases in the passes after the convolutions"


def _bias_folded(norm: BatchNormActivation, bias: torch.Tensor | None) -> torch.Tensor:
    """norm's shift with a bias added before it folded in: shift + bias * scale (computed in float64)."""
    with torch.no_grad():
        if bias is None:
            return norm.shift.detach().clone()
        return (norm.shift.double() + bias.detach().double() * norm.scale.double()).to(norm.shift.dtype)


def _activation(y: torch.Tensor, spec: tuple[str, float, float]) -> torch.Tensor:
    """The activation (name, min_val, max_val) of matching._fused_activation, hardact's (PyTorch's bits)."""
    name, min_val, max_val = spec
    if name == "identity":
        return y
    if name == "hardtanh":
        return hardtanh(y, min_val, max_val)
    if name == "relu":
        return F.relu(y)
    return {"relu6": relu6, "hardswish": hardswish, "hardsigmoid": hardsigmoid}[name](y)


def _norm_with(norm: nn.Module, activation: nn.Module | None) -> BatchNormActivation | None:
    """A BatchNorm with no activation of its own (nn.BatchNorm2d, timm's BatchNormAct2d with an
    nn.Identity act, or one fuse_batchnorm_activation already folded without activation) folded with
    `activation` after it (None: none); else None."""
    folded = _folded_norm(norm)  # a BatchNormAct2d's own activation, if any, is folded in: refused below
    if folded is None or folded.activation != "identity":
        return None
    spec = ("identity", -1.0, 1.0) if activation is None else _fused_activation(activation)
    if spec is None:
        return None
    return BatchNormActivation(folded.scale, folded.shift, *spec)


def _starnet_conv(layer: nn.Module, with_norm: bool) -> tuple[nn.Conv2d, BatchNormActivation | None] | None:
    """(convolution, its BatchNorm folded, or None) of StarNet's ConvBN (an nn.Sequential: conv, then
    bn where built with one), holding a BatchNorm exactly when with_norm; else None."""
    if type(layer).__name__ != "ConvBN" or type(layer).__module__ != "timm.models.starnet" \
            or not isinstance(layer, nn.Sequential) \
            or list(layer._modules) != (["conv", "bn"] if with_norm else ["conv"]) \
            or type(layer.conv) is not nn.Conv2d:
        return None
    if not with_norm:
        return layer.conv, None
    norm = _norm_with(layer.bn, None)
    return None if norm is None else (layer.conv, norm)


def _starnet_block(block: nn.Module) -> FusedStarBlock | None:
    """timm's StarNet Block (timm.models.starnet) as a FusedStarBlock, or None. Its forward, timm 1.0:
    x = dwconv(x) (ConvBN: convolution, BatchNorm); x = act(f1(x)) * f2(x) (ConvBNs without
    BatchNorm); x = dwconv2(g(x)) (g with a BatchNorm, dwconv2 without); then residual + drop_path(x)
    (the identity in eval)."""
    if type(block).__name__ != "Block" or type(block).__module__ != "timm.models.starnet" \
            or _children(block) != {"dwconv", "f1", "f2", "g", "dwconv2", "act", "drop_path"} \
            or not _inactive_in_eval(block.drop_path) or _fused_activation(block.act) is None:
        return None
    stages = [_starnet_conv(block.dwconv, True), _starnet_conv(block.f1, False), _starnet_conv(block.f2, False),
              _starnet_conv(block.g, True), _starnet_conv(block.dwconv2, False)]
    if any(stage is None for stage in stages):
        return None
    return FusedStarBlock(stages[0], stages[1][0], stages[2][0], block.act, stages[3], stages[4][0])


def _bottleneck_block(block: nn.Module) -> nn.Module | None:
    """The fused module for a bottleneck block this file knows (by class name and module), or None."""
    if type(block).__name__ == "Block":
        return _starnet_block(block)
    return None
