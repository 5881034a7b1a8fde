"""fuse_batchnorm_activation: every inference BatchNorm of a model folded with the activation after it."""

from __future__ import annotations

from torch import nn

from ..modules import BatchNormActivation
from .conv_layer_blocks import _fold_conv_layers, _folded, _without_bias
from .matching import _foldable, _fused_activation, _is_timm_batchnorm_act

__all__ = ["fuse_batchnorm_activation"]


def fuse_batchnorm_activation(model: nn.Module) -> int:
    """Rewrites an eval-mode model in place: every BatchNorm becomes one BatchNormActivation, with
    the activation hardact fuses (hardswish, hardsigmoid, relu6, hardtanh, relu, silu) that follows it as
      - the next module of an nn.Sequential (torchvision's Conv2dNormActivation is one), also where
        the BatchNorm ends an nn.Sequential nested before it (timm's StarNet stem: nn.Sequential(
        ConvBN(conv, bn), ReLU6)): the BatchNorm is replaced, the activation removed;
      - timm's BatchNormAct2d (its activation, or none, is part of the module);
      - the layer's forward, for layers that hold a convolution, BatchNorm and activation as
        attributes (timm's EfficientViT-B ConvNormAct, CPUBone and LowFormer ConvLayer, LeViT's
        ConvNorm / LinearNorm and the activation after them: conv_layer_blocks): the activation made
        nn.Identity, the convolution's bias folded into the shift; such a layer with a biased
        convolution and an activation but no BatchNorm gets the bias and activation in one pass;
    and with none (identity) where no such activation follows: one pass at the copy rate in place of
    PyTorch's BatchNorm kernel. An nn.Conv2d with a bias right before a BatchNorm2d in an
    nn.Sequential runs without it, the bias folded into the shift: ATen adds a convolution's bias in a
    pass of its own. A BatchNorm whose statistics are not tracked is left alone. Returns how many
    BatchNorms (and bias-activation layers) were rewritten. Raises RuntimeError for a model in
    training mode: its BatchNorms use batch statistics."""
    if model.training:
        raise RuntimeError("hardact.fuse_batchnorm_activation: the model is in training mode; call model.eval() "
                           "first (a training BatchNorm normalises with batch statistics, which cannot be folded)")
    fused = _fold_conv_layers(model)
    for parent in list(model.modules()):
        if isinstance(parent, nn.Sequential):
            fused += _fold_sequential(parent)
        for name, child in list(parent.named_children()):
            if not _foldable(child):
                continue
            # After the pairs above, a plain BatchNorm left here has no fusable activation after it.
            spec = _norm_activation(child.act) if _is_timm_batchnorm_act(child) else ("identity", -1.0, 1.0)
            if spec is not None:
                setattr(parent, name, BatchNormActivation.from_batchnorm(child, *spec).to(child.running_mean.device))
                fused += 1
    return fused


_BATCHNORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)


def _norm_activation(act: nn.Module) -> tuple[str, float, float] | None:
    """What a folded BatchNorm applies for the activation after it: _fused_activation's, and nn.SiLU
    (ReXNet's stem and head, EfficientNet's layers: ATen runs the BatchNorm and the SiLU as two passes)."""
    return ("silu", -1.0, 1.0) if type(act) is nn.SiLU else _fused_activation(act)


def _runs_in_order(module: nn.Module) -> bool:
    """An nn.Sequential whose forward is nn.Sequential's (timm's StarNet ConvBN subclasses it)."""
    return isinstance(module, nn.Sequential) and type(module).forward is nn.Sequential.forward


def _batchnorm_at_end(module: nn.Module) -> tuple[nn.Sequential, str] | None:
    """(its nn.Sequential, its name) of the BatchNorm whose output is module's output: module's last
    child, or that of the nn.Sequential nested last in it; None where module ends in anything else."""
    while _runs_in_order(module) and len(module) > 0:
        name = list(module._modules)[-1]
        if type(module._modules[name]) in _BATCHNORMS:
            return module, name
        module = module._modules[name]
    return None


def _fold_sequential(parent: nn.Sequential) -> int:
    """fuse_batchnorm_activation's part for one nn.Sequential: each BatchNorm among its children with
    the fusable activation after it; where the nn.Sequential keeps nn.Sequential's forward, also a
    BatchNorm ending a child nn.Sequential, and the bias of an nn.Conv2d right before the BatchNorm.
    A BatchNorm with none of these is left to the caller. Returns how many it rewrote."""
    in_order = _runs_in_order(parent)
    names = list(parent._modules)
    drop: list[str] = []
    fused = 0
    for index, name in enumerate(names):
        child = parent._modules[name]
        if name in drop:
            continue
        where = (parent, name) if type(child) in _BATCHNORMS else _batchnorm_at_end(child) if in_order else None
        if where is None or not _foldable(where[0]._modules[where[1]]):
            continue
        container, norm_name = where
        bn = container._modules[norm_name]
        act = parent._modules[names[index + 1]] if index + 1 < len(names) else None
        spec = None if act is None else _norm_activation(act)
        if spec is not None and spec[0] == "identity":
            spec = None
        inner = list(container._modules)
        conv_name = inner[inner.index(norm_name) - 1] if inner.index(norm_name) > 0 else None
        conv = None if conv_name is None else container._modules[conv_name]
        biased = in_order and type(conv) is nn.Conv2d and conv.bias is not None and type(bn) is nn.BatchNorm2d
        if spec is None and not biased:
            continue
        if biased:
            folded = _folded(bn, conv.bias, None, conv.out_channels, conv.weight)
            if folded is None:
                continue
            if spec is not None:
                folded = BatchNormActivation(folded.scale, folded.shift, *spec)
            container._modules[conv_name] = _without_bias(conv)
        else:
            folded = BatchNormActivation.from_batchnorm(bn, *spec).to(bn.running_mean.device)
        container._modules[norm_name] = folded
        if spec is not None:
            drop.append(names[index + 1])
        fused += 1
    for name in drop:
        del parent._modules[name]
    return fused
