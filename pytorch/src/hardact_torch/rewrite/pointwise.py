"""PointwiseConv2d: an nn.Conv2d with a 1x1 filter whose 16-bit channels-last forward is one matrix
product, and replace_pointwise_convolutions, which makes a model's such convolutions one, in place."""

from __future__ import annotations

import torch
from torch import nn
from torch.compiler import is_compiling as _is_compiling

from .. import _C

__all__ = ["PointwiseConv2d", "replace_pointwise_convolutions"]

_PRODUCT_DTYPES = (torch.float16, torch.bfloat16)
_ALIGNED_CHANNELS = 8  # 16 bytes of a 16-bit row: unaligned rows ran slower as products than on cuDNN


class PointwiseConv2d(nn.Conv2d):
    """An nn.Conv2d with a 1x1 filter at stride 1, no padding, dilation 1 and one group, whose input and
    output channels are multiples of 8 (replace_pointwise_convolutions makes them). On a channels-last
    float16 or bfloat16 CUDA tensor, where no gradient is wanted, not under torch.compile,
    torch.jit.trace or autocast, its convolution (_conv_forward: the module's forward, and the fused
    blocks' calls with a weight of their own) is one cuBLASLt matrix product on the (N * H * W, C)
    matrix the tensor is, times the (C_out, C) weight transposed, plus the bias
    (_C._pointwise_conv2d), written into a new channels-last (N, C_out, H, W) tensor.
    cuDNN's 16-bit 1x1 convolutions took up to 1.6x its time at small batches
    (TUNING.md#package-pointwise-convolutions). Elsewhere (float32, another layout, a gradient
    wanted) it is nn.Conv2d's, whose results it matches to rounding: the products sum in another
    order than cuDNN's convolution."""

    def _conv_forward(self, input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        # The product is one cuBLASLt call, no operator: torch.compile and torch.jit.trace see the convolution.
        if type(input) is torch.Tensor and input.dtype in _PRODUCT_DTYPES and not _is_compiling() \
                and not torch._C._get_tracing_state():
            out = _C._pointwise_conv2d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)
            if out is not None:
                return out
        return super()._conv_forward(input, weight, bias)


def _is_pointwise(conv: nn.Module) -> bool:
    return (type(conv) is nn.Conv2d and conv.kernel_size == (1, 1) and conv.stride == (1, 1)
            and conv.padding == (0, 0) and conv.dilation == (1, 1) and conv.groups == 1
            and conv.padding_mode == "zeros" and conv.in_channels % _ALIGNED_CHANNELS == 0
            and conv.out_channels % _ALIGNED_CHANNELS == 0)


def replace_pointwise_convolutions(model: nn.Module) -> int:
    """Makes every nn.Conv2d of the model with a 1x1 filter at stride 1, no padding, dilation 1, one
    group and channels in multiples of 8 a PointwiseConv2d, in place: the module itself changes class
    (its parameters, buffers, hooks and state_dict keys stay, and every block holding it sees the
    change). Returns how many. Not part of optimize_for_inference: on the H200 a CUDA graph of the
    rewrite ran 1.00-1.12x as fast with it, eager StarNet 0.99-1.12x, VoVNet 1.03-1.22x and LCNet,
    MobileNetV3 and FBNetV3 1.01-1.21x (medians of wide spreads), but nothing is measured on the H100
    (TUNING.md#package-pointwise-convolutions)."""
    count = 0
    for module in model.modules():
        if _is_pointwise(module):
            module.__class__ = PointwiseConv2d
            count += 1
    if count:
        for module in model.modules():
            if "_one_call_plan" in module.__dict__:  # a fused block's one-call plan names its convolutions' types
                module._one_call_plan = None
    return count
