"""The shared vocabulary of the rewrites' matchers: which package a module comes from and which children
it has, which activations the fused ops compute, which BatchNorms fold, which convolutions are
matrices or depthwise filters the one-kernel stage covers, and which squeeze-excitations are gated
by a hard sigmoid. Every rewrite and block matcher imports this module; it imports none of them, so
the folds (batchnorm.py, squeeze.py) and the block matchers (timm_blocks.py, torchvision_blocks.py)
share it without importing each other.
"""

from __future__ import annotations

from torch import nn

from ..modules import (BatchNormActivation, HardSigmoid, HardSigmoidEffectiveSqueezeExcitation,
                       HardSigmoidSqueezeExcitation, HardSwish, HardTanh, ReLU6)


def _package(module: nn.Module) -> str:
    return type(module).__module__.split(".")[0]


def _children(module: nn.Module) -> set[str]:
    return {name for name, _ in module.named_children()}


def _fused_activation(module: nn.Module) -> tuple[str, float, float] | None:
    """(name, min_val, max_val) of an activation module the fused op computes, or None."""
    kind = type(module)
    if kind in (nn.Hardswish, HardSwish):
        return "hardswish", -1.0, 1.0
    if kind in (nn.Hardsigmoid, HardSigmoid):
        return "hardsigmoid", -1.0, 1.0
    if kind in (nn.ReLU6, ReLU6):
        return "relu6", 0.0, 6.0
    if kind in (nn.Hardtanh, HardTanh):
        return "hardtanh", float(module.min_val), float(module.max_val)
    if kind is nn.ReLU:
        return "relu", 0.0, float("inf")
    if kind is nn.Identity:
        return "identity", -1.0, 1.0
    return None


def _is_timm_batchnorm_act(module: nn.Module) -> bool:
    """timm's BatchNormAct2d: a BatchNorm2d with .act (and .drop, identity in eval) applied after it."""
    return (isinstance(module, nn.BatchNorm2d) and type(module).__name__ == "BatchNormAct2d"
            and hasattr(module, "act") and hasattr(module, "drop"))


def _foldable(bn: nn.Module) -> bool:
    return (type(bn) in (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d) or _is_timm_batchnorm_act(bn)) \
        and bn.running_mean is not None and bn.running_var is not None


def _folded_norm(norm: nn.Module, activation: nn.Module | None = None) -> BatchNormActivation | None:
    """`norm` (timm's BatchNormAct2d with its own activation, or an nn.BatchNorm2d followed by
    `activation`, None for none) folded into a BatchNormActivation; one already folded as it is; None
    for anything else or a BatchNorm without running statistics."""
    if type(norm) is BatchNormActivation:
        return norm if activation is None else None
    if _is_timm_batchnorm_act(norm):
        if activation is not None or type(norm.drop) is not nn.Identity:
            return None
        activation = norm.act
    elif type(norm) is not nn.BatchNorm2d:
        return None
    spec = ("identity", -1.0, 1.0) if activation is None else _fused_activation(activation)
    if spec is None or not _foldable(norm):
        return None
    return BatchNormActivation.from_batchnorm(norm, *spec).to(norm.running_mean.device)


def _depthwise_filter(conv: nn.Module) -> tuple[int, int, int, int] | None:
    """(kernel_size, stride, pad_h, pad_w) of a depthwise convolution the one-kernel depthwise stage
    computes (FusedInvertedResidual.depthwise_stage): an nn.Conv2d with one filter per channel, no
    bias, square 3x3 or 5x5 filters, stride 1 or 2 in both dims, dilation 1, zero padding given as
    numbers below the filter size, and a multiple of 4 channels up to 1024; else None."""
    if type(conv) is not nn.Conv2d:
        return None
    channels = conv.in_channels
    k, stride, padding = conv.kernel_size, conv.stride, conv.padding
    if not (conv.groups == channels == conv.out_channels and conv.bias is None and k[0] == k[1] and k[0] in (3, 5)
            and stride[0] == stride[1] and stride[0] in (1, 2) and conv.dilation == (1, 1)
            and conv.padding_mode == "zeros" and isinstance(padding, tuple)
            and all(isinstance(p, int) and 0 <= p < k[0] for p in padding)
            and channels % 4 == 0 and channels <= 1024):
        return None
    return k[0], stride[0], padding[0], padding[1]


def _matrix_conv(conv: nn.Module) -> bool:
    """A 1x1 convolution with no padding and one group: on a (N, C, 1, 1) input, the linear map of
    its weight viewed as a matrix (stride and dilation have nothing to act on)."""
    return (type(conv) is nn.Conv2d and conv.kernel_size == (1, 1) and conv.groups == 1
            and conv.padding in ((0, 0), "valid", "same"))


def _hard_sigmoid_squeeze_excitation(
        module: nn.Module) -> HardSigmoidSqueezeExcitation | HardSigmoidEffectiveSqueezeExcitation | None:
    """The fused module for torchvision's SqueezeExcitation or timm's SqueezeExcite gated by a hard
    sigmoid, or for timm's EffectiveSEModule gated by one (its forward, timm 0.9 to 1.0:
    x * gate(fc(x.mean((2, 3), keepdim=True))), with a max-pooled term where add_maxpool, not fused),
    or None. Recognised by class name, package and attributes, whose forward is known."""
    kind = type(module)
    package = kind.__module__.split(".")[0]
    if kind.__name__ == "SqueezeExcitation" and package == "torchvision" \
            and type(getattr(module, "scale_activation", None)) in (nn.Hardsigmoid, HardSigmoid) \
            and isinstance(getattr(module, "avgpool", None), nn.AdaptiveAvgPool2d) \
            and module.avgpool.output_size in (1, (1, 1)):
        return HardSigmoidSqueezeExcitation(module.avgpool, module.fc1, module.activation, module.fc2)
    if kind.__name__ == "SqueezeExcite" and package == "timm" \
            and type(getattr(module, "gate", None)) in (nn.Hardsigmoid, HardSigmoid) \
            and all(hasattr(module, name) for name in ("conv_reduce", "act1", "conv_expand")):
        return HardSigmoidSqueezeExcitation(None, module.conv_reduce, module.act1, module.conv_expand)
    if kind.__name__ == "EffectiveSEModule" and package == "timm" and _children(module) == {"fc", "gate"} \
            and getattr(module, "add_maxpool", None) is False \
            and type(module.gate) in (nn.Hardsigmoid, HardSigmoid) and _matrix_conv(module.fc):
        return HardSigmoidEffectiveSqueezeExcitation(module.fc)
    return None


def _squeeze_layers(module: nn.Module) -> tuple[nn.Module, nn.Module, nn.Module] | None:
    """(reduce, activation, expand) of a squeeze-excitation gated by a hard sigmoid whose squeeze is the
    mean over H and W (torchvision's SqueezeExcitation, timm's SqueezeExcite, or either already made a
    HardSigmoidSqueezeExcitation), with 1x1 convolutions and an elementwise activation hardact knows;
    else None."""
    layers = {"timm": {"conv_reduce", "act1", "conv_expand", "gate"},
              "torchvision": {"avgpool", "fc1", "activation", "fc2", "scale_activation"}}
    if type(module) is HardSigmoidSqueezeExcitation:
        fused = module
        pool = fused.pool
        if pool is not None and not (type(pool) is nn.AdaptiveAvgPool2d and pool.output_size in (1, (1, 1))):
            return None
    elif _children(module) == layers.get(_package(module)):  # no layer its known forward would skip
        fused = _hard_sigmoid_squeeze_excitation(module)
        if fused is None:
            return None
    else:
        return None
    if not (_matrix_conv(fused.reduce) and _matrix_conv(fused.expand) and _fused_activation(fused.activation)):
        return None
    return fused.reduce, fused.activation, fused.expand
