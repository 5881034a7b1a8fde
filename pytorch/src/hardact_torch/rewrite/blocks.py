"""fuse_blocks: walks a model and asks each library's matcher (timm_blocks, torchvision_blocks,
bottleneck_blocks) for a fused module (FusedInvertedResidual, FusedLinearBottleneck, FusedStarBlock) in place of each
block it recognises."""

from __future__ import annotations

from torch import nn

from ..modules import BatchNormActivation
from .bottleneck_blocks import _bottleneck_block
from .conv_layer_blocks import _fuse_conv_layer_blocks
from .matching import _package
from .timm_blocks import _timm_block
from .torchvision_blocks import _torchvision_block

__all__ = ["fuse_blocks"]


def fuse_blocks(model: nn.Module) -> int:
    """Rewrites an eval-mode model in place: every inverted-residual and depthwise-separable block of
    timm's MobileNetV3 / LCNet family (timm's InvertedResidual and DepthwiseSeparableConv) and of
    torchvision's MobileNetV3 and MobileNetV2 (their InvertedResidual), and the MBConv / DSConv /
    FusedMBConv blocks of timm's EfficientViT-B, CPUBone and LowFormer with their ResidualBlock's
    identity shortcut (conv_layer_blocks; LeViT's blocks there become a FusedLevitBlock, its MLP's
    BatchNorms, activation and residual add in two passes), becomes one FusedInvertedResidual sharing its
    convolutions: the BatchNorms folded with their activations, the depthwise convolution, its
    BatchNorm and the squeeze's mean in one kernel, the excitation as matrix products, the residual add
    in the projection's BatchNorm pass. timm's ReXNet LinearBottleneck becomes a FusedLinearBottleneck
    and timm's StarNet Block a FusedStarBlock (bottleneck_blocks). Returns how many blocks it replaced.

    A block is recognised by its class (name and package, whose forward is known) and the exact
    types of its layers; one that holds anything else is left alone: another child module, a
    convolution that is not nn.Conv2d, a BatchNorm without running statistics, an activation hardact
    does not fuse, a squeeze-excitation not gated by a hard sigmoid, anti-aliasing or
    space-to-depth, a submodule in training mode. Structure rather than torch.fx: fx tracing fails on
    the data-dependent Python of some timm models and replaces the modules by a flat graph, where a
    block's identity (and with it the proof that the rewrite is the same function) is lost. DropPath
    acts only in training, so the model must be in eval mode (else RuntimeError); the fused blocks'
    BatchNorms are frozen. Run fuse_batchnorm_activation and fuse_squeeze_excitation afterwards for
    the rest (stem, head, blocks left alone): they find nothing to redo inside the fused blocks,
    which hold folded buffers and the squeeze-excitation's layers, not BatchNorms or its module."""
    if model.training:
        raise RuntimeError("hardact.fuse_blocks: the model is in training mode; call model.eval() first (the "
                           "BatchNorms are folded and DropPath is dropped, as only inference allows)")
    fused = _fuse_conv_layer_blocks(model)
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            # BatchNormActivation does the same in either mode (fuse_batchnorm_activation's are
            # left in training mode): a block it already rewrote is fused too.
            if type(child).__name__ not in ("InvertedResidual", "DepthwiseSeparableConv", "LinearBottleneck", "Block") \
                    or any(m.training for m in child.modules() if type(m) is not BatchNormActivation):
                continue
            if type(child).__name__ in ("LinearBottleneck", "Block"):
                block = _bottleneck_block(child)
            else:
                block = _timm_block(child) if _package(child) == "timm" else _torchvision_block(child)
            if block is not None:
                setattr(parent, name, block.train(False))
                fused += 1
    return fused
