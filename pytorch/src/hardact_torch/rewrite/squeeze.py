"""fuse_squeeze_excitation: squeeze-excitation blocks gated by a hard sigmoid, their gating in one pass."""

from __future__ import annotations

from torch import nn

from .matching import _hard_sigmoid_squeeze_excitation

__all__ = ["fuse_squeeze_excitation"]


def fuse_squeeze_excitation(model: nn.Module) -> int:
    """Replaces, in place, every squeeze-excitation block gated by a hard sigmoid (torchvision's
    SqueezeExcitation with scale_activation=nn.Hardsigmoid, as in its MobileNetV3; timm's
    SqueezeExcite with gate_layer='hard_sigmoid', as in its MobileNetV3 and LCNet) by a
    HardSigmoidSqueezeExcitation sharing its layers: the gate's hard sigmoid and the multiplication
    become one hardsigmoid_gate pass. Likewise timm's EffectiveSEModule with gate_layer='hard_sigmoid'
    and no add_maxpool (VoVNet's eSE, RDNet, CSPNeXt) by a HardSigmoidEffectiveSqueezeExcitation, its
    1x1 convolution a matrix product on the (N, C) mean. Any mode (it holds no statistics). Returns
    how many it replaced."""
    replaced = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            fused = _hard_sigmoid_squeeze_excitation(child)
            if fused is not None:
                setattr(parent, name, fused.train(child.training))
                replaced += 1
    return replaced
