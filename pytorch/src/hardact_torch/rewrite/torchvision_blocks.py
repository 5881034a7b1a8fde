"""torchvision's MobileNetV3 and MobileNetV2 blocks (both InvertedResidual) matched as FusedInvertedResidual."""

from __future__ import annotations

from torch import nn

from .fused_block import FusedInvertedResidual, _fused_block
from .matching import _children, _package, _squeeze_layers


def _torchvision_block(block: nn.Module) -> FusedInvertedResidual | None:
    """torchvision's InvertedResidual (torchvision.models.mobilenetv3) as a FusedInvertedResidual, or
    None. Its forward: self.block, an nn.Sequential of Conv2dNormActivation layers (convolution,
    BatchNorm2d, activation or none) for the expansion (absent where it would not expand), the
    depthwise convolution and the projection, with a SqueezeExcitation before the projection or not;
    then `result += input` where use_res_connect. MobileNetV2's block: _mobilenet_v2_block."""
    if _children(block) == {"conv"}:
        return _mobilenet_v2_block(block)
    if type(block).__name__ != "InvertedResidual" or _package(block) != "torchvision" \
            or _children(block) != {"block"} or type(block.block) is not nn.Sequential \
            or not isinstance(getattr(block, "use_res_connect", None), bool):
        return None
    layers = list(block.block)
    squeeze = None
    if len(layers) >= 3 and _conv_norm_activation(layers[-2]) is None:
        squeeze = _squeeze_layers(layers[-2])
        if squeeze is None:
            return None
        layers = layers[:-2] + layers[-1:]
    if len(layers) not in (2, 3):
        return None
    stages = [_conv_norm_activation(layer) for layer in layers]
    if any(stage is None for stage in stages):
        return None
    return _fused_block(([None] if len(stages) == 2 else []) + stages, squeeze, block.use_res_connect)


def _mobilenet_v2_block(block: nn.Module) -> FusedInvertedResidual | None:
    """torchvision's MobileNetV2 InvertedResidual (torchvision.models.mobilenetv2) as a
    FusedInvertedResidual, or None. Its forward: self.conv, an nn.Sequential of a Conv2dNormActivation
    for the expansion (ReLU6; absent where expand_ratio is 1), one for the depthwise convolution
    (ReLU6), then the projection as a bare nn.Conv2d and BatchNorm2d (no activation); the result is
    `x + self.conv(x)` where use_res_connect, else self.conv(x)."""
    if type(block).__name__ != "InvertedResidual" or type(block).__module__ != "torchvision.models.mobilenetv2" \
            or type(block.conv) is not nn.Sequential or not isinstance(getattr(block, "use_res_connect", None), bool):
        return None
    layers = list(block.conv)
    if len(layers) not in (3, 4) or type(layers[-2]) is not nn.Conv2d:
        return None
    stages = [_conv_norm_activation(layer) for layer in layers[:-2]]
    if any(stage is None for stage in stages):
        return None
    # The projection's BatchNorm: an nn.BatchNorm2d, or fuse_batchnorm_activation's BatchNormActivation.
    projection = (layers[-2], layers[-1])
    return _fused_block(([None] if len(stages) == 1 else []) + stages + [projection], None, block.use_res_connect)


def _conv_norm_activation(layer: nn.Module) -> tuple[nn.Module, nn.Module, nn.Module | None] | None:
    """(convolution, BatchNorm, activation or None) of torchvision's Conv2dNormActivation (the
    nn.Sequential it is), or None."""
    if type(layer).__name__ != "Conv2dNormActivation" or _package(layer) != "torchvision" \
            or not isinstance(layer, nn.Sequential) or len(layer) not in (2, 3):
        return None
    parts = list(layer)
    return parts[0], parts[1], parts[2] if len(parts) == 3 else None
