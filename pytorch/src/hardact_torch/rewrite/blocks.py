"""fuse_blocks: walks a model and asks each family's matcher (timm_blocks, torchvision_blocks,
ghost_blocks, bottleneck_blocks, conv_layer_blocks) for a fused module in place of each block it
recognises."""

from __future__ import annotations

from torch import nn

from ..modules import BatchNormActivation
from .bottleneck_blocks import _bottleneck_block
from .conv_layer_blocks import _fuse_conv_layer_blocks
from .ghost_blocks import _GHOST_BLOCKS, _ghost_block
from .matching import _package
from .timm_blocks import _timm_block
from .torchvision_blocks import _torchvision_block

__all__ = ["fuse_blocks"]


def _inverted_residual(block: nn.Module):
    return _timm_block(block) if _package(block) == "timm" else _torchvision_block(block)


# The class names fuse_blocks asks about, and the matcher each goes to; a matcher checks the package
# and the children itself and answers None for a block it does not know.
_MATCHERS = {"InvertedResidual": _inverted_residual, "DepthwiseSeparableConv": _inverted_residual,
             "LinearBottleneck": _bottleneck_block, "Block": _bottleneck_block, "OsaBlock": _bottleneck_block,
             **{name: _ghost_block for name in _GHOST_BLOCKS}}


def fuse_blocks(model: nn.Module) -> int:
    """Rewrites an eval-mode model in place: every block of a family hardact knows becomes one fused
    module sharing its convolutions, the BatchNorms folded with their activations, the depthwise
    convolution, its BatchNorm (and the squeeze's mean) in one kernel, the excitation as matrix
    products, the residual add in the last BatchNorm's pass:
      - FusedInvertedResidual: the inverted-residual and depthwise-separable blocks of timm's
        MobileNetV3 / LCNet / EfficientNet family (InvertedResidual, DepthwiseSeparableConv), of
        torchvision's MobileNetV3 and MobileNetV2 (InvertedResidual), and the MBConv / DSConv /
        FusedMBConv blocks of timm's EfficientViT-B, CPUBone and LowFormer with their ResidualBlock's
        identity shortcut (conv_layer_blocks);
      - FusedLevitBlock: LeViT's blocks, the MLP's BatchNorms, activation and residual add in two
        passes, the attention left to PyTorch (conv_layer_blocks);
      - FusedGhostBottleneck: timm's GhostNet v1 and v2 GhostBottleneck, v3's GhostBottleneckV3,
        RepGhostNet's RepGhostBottleneck (ghost_blocks);
      - FusedLinearBottleneck, FusedStarBlock: timm's ReXNet LinearBottleneck and StarNet Block
        (bottleneck_blocks);
      - FusedOsaBlock: timm's VoVNet OsaBlock with an eSE gated by a hard sigmoid, the squeeze's
        mean in the aggregation's BatchNorm pass (bottleneck_blocks).
    Returns how many blocks it replaced.

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
            matcher = _MATCHERS.get(type(child).__name__)
            # BatchNormActivation does the same in either mode (fuse_batchnorm_activation's are
            # left in training mode): a block it already rewrote is fused too.
            if matcher is None or any(m.training for m in child.modules() if type(m) is not BatchNormActivation):
                continue
            block = matcher(child)
            if block is not None:
                setattr(parent, name, block.train(False))
                fused += 1
    return fused
