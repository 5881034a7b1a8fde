"""hardact's model rewrites, in place: replace_activations, fuse_batchnorm_activation,
fuse_squeeze_excitation, fuse_blocks (whole blocks as FusedInvertedResidual, FusedGhostBottleneck,
FusedLinearBottleneck, FusedStarBlock or FusedOsaBlock), replace_max_pooling, optimize_for_inference,
which runs them all, and replace_pointwise_convolutions (16-bit 1x1 convolutions as matrix products, for CUDA graphs).

Imports run one way: matching (the matchers' shared vocabulary), pointwise <- activations, pooling, squeeze, fused_block
<- timm_blocks, torchvision_blocks <- ghost_blocks, conv_layer_blocks, bottleneck_blocks <- batchnorm,
blocks <- this module.
"""

from __future__ import annotations

from torch import nn

from .activations import replace_activations
from .batchnorm import fuse_batchnorm_activation
from .blocks import fuse_blocks
from .bottleneck_blocks import FusedLinearBottleneck, FusedOsaBlock, FusedStarBlock
from .fused_block import FusedInvertedResidual
from .ghost_blocks import FusedGhostBottleneck
from .pointwise import PointwiseConv2d, replace_pointwise_convolutions
from .pooling import replace_max_pooling
from .squeeze import fuse_squeeze_excitation

__all__ = ["replace_activations", "fuse_batchnorm_activation", "fuse_squeeze_excitation", "FusedInvertedResidual",
           "FusedGhostBottleneck", "FusedLinearBottleneck", "FusedStarBlock", "FusedOsaBlock",
           "fuse_blocks", "PointwiseConv2d", "replace_pointwise_convolutions", "replace_max_pooling",
           "optimize_for_inference"]


def optimize_for_inference(model: nn.Module) -> dict[str, int]:
    """All of hardact's inference rewrites, in place, on an eval-mode model (else RuntimeError), in
    this order: fuse_blocks, fuse_batchnorm_activation and fuse_squeeze_excitation for what the blocks
    left (stem, head, other blocks), replace_activations for the activation modules left,
    replace_max_pooling. Returns how many each replaced: {"blocks", "batchnorms", "squeeze_excitations",
    "activations", "max_pools"}."""
    if model.training:
        raise RuntimeError("hardact.optimize_for_inference: the model is in training mode; call model.eval() first")
    return {"blocks": fuse_blocks(model), "batchnorms": fuse_batchnorm_activation(model),
            "squeeze_excitations": fuse_squeeze_excitation(model), "activations": replace_activations(model),
            "max_pools": replace_max_pooling(model)}
