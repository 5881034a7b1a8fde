"""timm's MobileNetV3 / LCNet blocks (InvertedResidual, DepthwiseSeparableConv) matched as
FusedInvertedResidual."""

from __future__ import annotations

from torch import nn

from .fused_block import FusedInvertedResidual, _fused_block
from .matching import _children, _package, _squeeze_layers


def _inactive_in_eval(module: nn.Module) -> bool:
    """nn.Identity, or timm's DropPath: the identity outside training, whatever its drop rate."""
    return type(module) is nn.Identity or (type(module).__name__ == "DropPath" and _package(module) == "timm")


def _timm_block(block: nn.Module) -> FusedInvertedResidual | None:
    """timm's InvertedResidual or DepthwiseSeparableConv (timm.models._efficientnet_blocks) as a
    FusedInvertedResidual, or None. Their forwards, in timm 0.9 to 1.0:
      InvertedResidual:       conv_pw, bn1, conv_dw, bn2, aa, se, conv_pwl, bn3, then drop_path(x) + shortcut
      DepthwiseSeparableConv: conv_dw, bn1, aa, se, conv_pw, bn2, then drop_path(x) + shortcut
    with the skip where has_skip, the BatchNorms BatchNormAct2d (their activation inside); the
    space-to-depth stem (conv_s2d) and anti-aliasing (aa) are not fused: such blocks are left alone."""
    kind = type(block).__name__
    if _package(block) != "timm" or getattr(block, "conv_s2d", None) is not None \
            or not isinstance(getattr(block, "has_skip", None), bool):
        return None
    if kind == "InvertedResidual":
        names = {"conv_pw", "bn1", "conv_dw", "bn2", "aa", "se", "conv_pwl", "bn3", "drop_path"}
        if _children(block) != names:
            return None
        stages = [(block.conv_pw, block.bn1), (block.conv_dw, block.bn2), (block.conv_pwl, block.bn3)]
    elif kind == "DepthwiseSeparableConv":
        names = {"conv_dw", "bn1", "aa", "se", "conv_pw", "bn2", "drop_path"}
        if _children(block) != names:
            return None
        stages = [None, (block.conv_dw, block.bn1), (block.conv_pw, block.bn2)]
    else:
        return None
    if type(block.aa) is not nn.Identity or not _inactive_in_eval(block.drop_path):
        return None
    squeeze = None if type(block.se) is nn.Identity else _squeeze_layers(block.se)
    if squeeze is None and type(block.se) is not nn.Identity:
        return None
    return _fused_block(stages, squeeze, block.has_skip)
