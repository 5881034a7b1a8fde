"""fuse_batchnorm_activation: every inference BatchNorm of a model folded with the activation after it."""

from __future__ import annotations

from torch import nn

from ..modules import BatchNormActivation
from .conv_layer_blocks import _fold_conv_layers
from .matching import _foldable, _fused_activation, _is_timm_batchnorm_act

__all__ = ["fuse_batchnorm_activation"]


def fuse_batchnorm_activation(model: nn.Module) -> int:
    """Rewrites an eval-mode model in place: every BatchNorm becomes one BatchNormActivation, with
    the activation hardact fuses (hardswish, hardsigmoid, relu6, hardtanh, relu) that follows it as
      - the next module of an nn.Sequential (torchvision's Conv2dNormActivation is one): the
        BatchNorm is replaced, the activation removed;
      - timm's BatchNormAct2d (its activation, or none, is part of the module);
      - the layer's forward, for layers that hold a convolution, BatchNorm and activation as
        attributes (timm's EfficientViT-B ConvNormAct, CPUBone and LowFormer ConvLayer, LeViT's
        ConvNorm / LinearNorm and the activation after them: conv_layer_blocks): the activation made
        nn.Identity, the convolution's bias folded into the shift; such a layer with a biased
        convolution and an activation but no BatchNorm gets the bias and activation in one pass;
    and with none (identity) where no such activation follows: one pass at the copy rate in place of
    PyTorch's BatchNorm kernel. A BatchNorm whose statistics are not tracked is left alone. Returns
    how many BatchNorms (and bias-activation layers) were rewritten. Raises RuntimeError for a model
    in training mode: its BatchNorms use batch statistics."""
    if model.training:
        raise RuntimeError("hardact.fuse_batchnorm_activation: the model is in training mode; call model.eval() "
                           "first (a training BatchNorm normalises with batch statistics, which cannot be folded)")
    fused = _fold_conv_layers(model)
    for parent in list(model.modules()):
        if isinstance(parent, nn.Sequential):
            names = list(parent._modules.keys())
            drop = []
            for first, second in zip(names, names[1:]):
                bn, act = parent._modules[first], parent._modules[second]
                if first in drop or type(bn) not in (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d) \
                        or not _foldable(bn):
                    continue
                spec = _fused_activation(act)
                if spec is None or spec[0] == "identity":
                    continue
                parent._modules[first] = BatchNormActivation.from_batchnorm(bn, *spec).to(bn.running_mean.device)
                drop.append(second)
                fused += 1
            for name in drop:
                del parent._modules[name]
        for name, child in list(parent.named_children()):
            if not _foldable(child):
                continue
            # After the pairs above, a plain BatchNorm left here has no fusable activation after it.
            spec = _fused_activation(child.act) if _is_timm_batchnorm_act(child) else ("identity", -1.0, 1.0)
            if spec is not None:
                setattr(parent, name, BatchNormActivation.from_batchnorm(child, *spec).to(child.running_mean.device))
                fused += 1
    return fused
