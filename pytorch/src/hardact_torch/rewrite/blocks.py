"""fuse_blocks: walks a model and asks each library's matcher (timm_blocks, torchvision_blocks,
ghost_blocks) for a FusedInvertedResidual (or FusedGhostBottleneck) in place of each block it recognises."""

from __future__ import annotations

from torch import nn

from ..modules import BatchNormActivation
from .ghost_blocks import _GHOST_BLOCKS, _ghost_block
from .matching import _package
from .timm_blocks import _timm_block
from .torchvision_blocks import _torchvision_block

__all__ = ["fuse_blocks"]


def fuse_blocks(model: nn.Module) -> int:
    """Rewrites an eval-mode model in place: every inverted-residual and depthwise-separable block of
    timm's MobileNetV3 / LCNet family (timm's InvertedResidual and DepthwiseSeparableConv) and of
    torchvision's MobileNetV3 (its InvertedResidual) becomes one FusedInvertedResidual sharing its
    convolutions: the BatchNorms folded with their activations, the depthwise convolution, its
    BatchNorm and the squeeze's mean in one kernel, the excitation as matrix products, the residual add
    in the projection's BatchNorm pass; timm's ghost bottlenecks (GhostNet v1 and v2's GhostBottleneck,
    v3's GhostBottleneckV3, RepGhostNet's RepGhostBottleneck) become FusedGhostBottleneck the same way.
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
    fused = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            # BatchNormActivation does the same in either mode (fuse_batchnorm_activation's are
            # left in training mode): a block it already rewrote is fused too.
            kind = type(child).__name__
            if kind not in ("InvertedResidual", "DepthwiseSeparableConv") + _GHOST_BLOCKS \
                    or any(m.training for m in child.modules() if type(m) is not BatchNormActivation):
                continue
            if kind in _GHOST_BLOCKS:
                block = _ghost_block(child)
            else:
                block = _timm_block(child) if _package(child) == "timm" else _torchvision_block(child)
            if block is not None:
                setattr(parent, name, block.train(False))
                fused += 1
    return fused
