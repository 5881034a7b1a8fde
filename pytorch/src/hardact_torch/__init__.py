"""hardact for PyTorch: HardSigmoid, HardTanh, HardSwish and ReLU6 as PyTorch operators.

    import hardact_torch as ha
    model = nn.Sequential(nn.Linear(4096, 4096), ha.HardSigmoid())  # like nn.Hardsigmoid()
    y = ha.hardtanh(x, -2.0, 2.0)                                    # like F.hardtanh(x, -2.0, 2.0)

Importing this package registers the operators torch.ops.hardact.{hardsigmoid, hardtanh, hardswish,
relu6} with their in-place (`hardsigmoid_`) and out= (`hardsigmoid.out`) forms, which return nothing,
and backward (`hardsigmoid_backward`) forms; their autograd (C++), fake kernels (torch.compile,
torch.export) and DTensor sharding rules (_registrations). This module only re-exports, by topic:
functional (like torch.nn.functional, with the fused epilogues and concatenate_channels), modules
(like torch.nn), rewrite (replace_activations and the fusing rewrites of a model), cuda_graph
(cuda_graph_inference for one input shape, cuda_graph_cache for every shape a server sees).
"""

from __future__ import annotations

import torch

from . import _C  # noqa: F401  (loading the extension registers torch.ops.hardact)
from .cuda_graph import CudaGraphCache, CudaGraphInference, cuda_graph_cache, cuda_graph_inference
from ._registrations import (DTENSOR_SHARDING_REGISTERED, FUSED_ACTIVATIONS, SUPPORTED_DTYPES, UNARY_OPS,
                             sharded_ops)
from .functional import (bias_activation, bias_activation_product, concatenate_channels, hardsigmoid, hardsigmoid_,
                         hardsigmoid_gate, hardswish, hardswish_, hardtanh, hardtanh_, relu6, relu6_,
                         residual_activation, scale_shift_activation, scale_shift_activation_mean,
                         scale_shift_residual_activation)
from .modules import (BatchNormActivation, HardSigmoid, HardSigmoidEffectiveSqueezeExcitation,
                      HardSigmoidSqueezeExcitation, HardSwish, HardTanh, MaxPool2d, ReLU6)
from .rewrite import (FusedGhostBottleneck, FusedInvertedResidual, FusedLinearBottleneck, FusedOsaBlock,
                      FusedStarBlock, PointwiseConv2d, fuse_batchnorm_activation, fuse_blocks, fuse_squeeze_excitation,
                      optimize_for_inference, replace_activations, replace_max_pooling,
                      replace_pointwise_convolutions)

__all__ = [
    "SUPPORTED_DTYPES", "UNARY_OPS", "DTENSOR_SHARDING_REGISTERED", "sharded_ops",
    "hardsigmoid", "hardsigmoid_", "hardtanh", "hardtanh_", "hardswish", "hardswish_", "relu6", "relu6_",
    "HardSigmoid", "HardTanh", "HardSwish", "ReLU6", "replace_activations",
    "FUSED_ACTIVATIONS", "scale_shift_activation", "bias_activation", "residual_activation", "hardsigmoid_gate",
    "scale_shift_residual_activation", "scale_shift_activation_mean", "bias_activation_product",
    "BatchNormActivation", "fuse_batchnorm_activation", "HardSigmoidSqueezeExcitation", "fuse_squeeze_excitation",
    "HardSigmoidEffectiveSqueezeExcitation",
    "FusedInvertedResidual", "FusedGhostBottleneck", "FusedLinearBottleneck", "FusedStarBlock", "FusedOsaBlock",
    "fuse_blocks", "PointwiseConv2d", "replace_pointwise_convolutions", "MaxPool2d", "replace_max_pooling",
    "concatenate_channels", "optimize_for_inference",
    "CudaGraphInference", "cuda_graph_inference", "CudaGraphCache", "cuda_graph_cache",
]

ops = torch.ops.hardact
