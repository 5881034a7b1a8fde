"""hardact's modules, like torch.nn's: HardSigmoid, HardTanh, HardSwish and ReLU6 (drop-ins for
nn.Hardsigmoid, nn.Hardtanh, nn.Hardswish and nn.ReLU6), and the fused modules the rewrites make:
BatchNormActivation (a folded inference BatchNorm and its activation), HardSigmoidSqueezeExcitation
and HardSigmoidEffectiveSqueezeExcitation; and MaxPool2d, nn.MaxPool2d with hardact's channels-last pooling.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.compiler import is_compiling as _is_compiling

from . import _C
from ._registrations import FUSED_ACTIVATIONS
from .functional import hardsigmoid, hardsigmoid_gate, hardswish, hardtanh, relu6, scale_shift_activation

__all__ = ["HardSigmoid", "HardTanh", "HardSwish", "ReLU6", "BatchNormActivation", "HardSigmoidSqueezeExcitation",
           "HardSigmoidEffectiveSqueezeExcitation", "MaxPool2d"]


class HardSigmoid(nn.Module):
    """Drop-in for nn.Hardsigmoid."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return hardsigmoid(x, self.inplace)

    def extra_repr(self) -> str:
        return f"inplace={self.inplace}"


class HardTanh(nn.Module):
    """Drop-in for nn.Hardtanh."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        if min_val > max_val:
            raise ValueError("min_val cannot be greater than max_val")  # nn.Hardtanh's check and wording
        self.min_val, self.max_val, self.inplace = float(min_val), float(max_val), inplace

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return hardtanh(x, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}, inplace={self.inplace}"


class HardSwish(HardSigmoid):
    """Drop-in for nn.Hardswish."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return hardswish(x, self.inplace)


class ReLU6(HardSigmoid):
    """Drop-in for nn.ReLU6."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu6(x, self.inplace)


class BatchNormActivation(nn.Module):
    """An inference BatchNorm folded into a per-channel scale and shift, and its activation, in one
    pass: activation(x * scale + shift) with scale = weight / sqrt(running_var + eps) and shift =
    bias - running_mean * scale, computed in float64 from the BatchNorm's state and kept in float32
    (float64 for a float64 BatchNorm). Made by fuse_batchnorm_activation or from_batchnorm; the
    scale and shift are frozen: a later change to the BatchNorm's statistics is not seen.

    Against PyTorch eager (cuDNN's or ATen's BatchNorm, then the activation) the results differ by
    rounding only: eager normalises as (x - mean) * invstd * weight + bias in its own order, and in
    float16/bfloat16 rounds between the two kernels. Bit for bit, it is
    `act(x * scale.view(C, 1, 1) + shift.view(C, 1, 1))` in float32."""

    def __init__(self, scale: torch.Tensor, shift: torch.Tensor, activation: str = "identity",
                 min_val: float = -1.0, max_val: float = 1.0):
        super().__init__()
        if activation not in FUSED_ACTIVATIONS:
            raise ValueError(f"hardact.BatchNormActivation: activation must be one of {FUSED_ACTIVATIONS}, "
                             f"got {activation!r}")
        if activation == "hardtanh" and min_val > max_val:
            raise ValueError("min_val cannot be greater than max_val")
        self.register_buffer("scale", scale)
        self.register_buffer("shift", shift)
        self.activation, self.min_val, self.max_val = activation, float(min_val), float(max_val)

    @classmethod
    def from_batchnorm(cls, bn: nn.modules.batchnorm._BatchNorm, activation: str = "identity",
                       min_val: float = -1.0, max_val: float = 1.0) -> "BatchNormActivation":
        if bn.running_mean is None or bn.running_var is None:
            raise ValueError("hardact.BatchNormActivation: the BatchNorm has no running statistics to fold")
        with torch.no_grad():
            invstd = torch.rsqrt(bn.running_var.double() + bn.eps)
            weight = bn.weight.double() if bn.weight is not None else torch.ones_like(invstd)
            bias = bn.bias.double() if bn.bias is not None else torch.zeros_like(invstd)
            scale = weight * invstd
            shift = bias - bn.running_mean.double() * scale
            dtype = torch.float64 if bn.running_mean.dtype == torch.float64 else torch.float32
        return cls(scale.to(dtype), shift.to(dtype), activation, min_val, max_val)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return scale_shift_activation(x, self.scale, self.shift, self.activation, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        bounds = f", min_val={self.min_val}, max_val={self.max_val}" if self.activation == "hardtanh" else ""
        return f"{self.scale.numel()}, activation={self.activation}{bounds}"


class HardSigmoidSqueezeExcitation(nn.Module):
    """Squeeze-excitation gated by a hard sigmoid, its gating in one pass:
    hardsigmoid_gate(x, expand(activation(reduce(pool(x))))), where eager PyTorch runs the hard
    sigmoid on the gate and then multiplies x by it. Made by fuse_squeeze_excitation from
    torchvision's SqueezeExcitation (pool: its AdaptiveAvgPool2d) or timm's SqueezeExcite (pool:
    None, x.mean((2, 3), keepdim=True) as timm computes it); reduce, activation and expand are the
    original module's. float32: bit for bit the original module; float16/bfloat16 round once where
    eager rounds the gate first. Differentiable (training works)."""

    def __init__(self, pool: nn.Module | None, reduce: nn.Module, activation: nn.Module, expand: nn.Module):
        super().__init__()
        self.pool, self.reduce, self.activation, self.expand = pool, reduce, activation, expand

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        squeezed = x.mean((2, 3), keepdim=True) if self.pool is None else self.pool(x)
        return hardsigmoid_gate(x, self.expand(self.activation(self.reduce(squeezed))))


class HardSigmoidEffectiveSqueezeExcitation(nn.Module):
    """Effective squeeze-excitation gated by a hard sigmoid (timm's EffectiveSEModule, CenterMask's
    eSE: one 1x1 convolution, no reduction), its gating in one pass:
    hardsigmoid_gate(x, fc(x.mean((2, 3)))), where eager PyTorch runs the hard sigmoid on the gate and
    then multiplies x by it. The 1x1 convolution on the (N, C, 1, 1) mean is used as the matrix it is
    (fc(m) = m @ W.view(C, C).T + b): in float32 on CUDA hardact's one cuBLASLt call with the bias in
    its epilogue, TF32 exactly when the convolution would have been (cuDNN's setting,
    TUNING.md#package-fused-ops); F.linear otherwise. Where a gradient is wanted or under
    torch.compile, fc itself runs. Made by fuse_squeeze_excitation; fc is the original module's.
    Against the original the results differ by rounding only (the product sums in another order than
    cuDNN's convolution; float16/bfloat16 round once where eager rounds the gate first)."""

    def __init__(self, fc: nn.Module):
        super().__init__()
        self.fc = fc

    def gate(self, mean: torch.Tensor) -> torch.Tensor:
        """fc on the (N, C) mean: the gate before its hard sigmoid, shape (N, C) or (N, C, 1, 1)."""
        fc = self.fc
        weight, bias = fc.weight, fc.bias
        if (torch.is_grad_enabled() and (mean.requires_grad or weight.requires_grad
                                         or (bias is not None and bias.requires_grad))) \
                or _is_compiling() or type(mean) is not torch.Tensor:
            return fc(mean.reshape(mean.shape[0], mean.shape[1], 1, 1))
        if mean.is_cuda and mean.dtype == torch.float32 and weight.dtype == torch.float32:
            return _C._linear_activation(mean, weight.flatten(1), bias, False, torch.backends.cudnn.allow_tf32)
        return F.linear(mean, weight.flatten(1), bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return hardsigmoid_gate(x, self.gate(x.mean((2, 3))))


def _pair(value) -> tuple[int, ...]:
    """An int, or a sequence of one or two, as F.max_pool2d reads it: (h, w); () stays ()."""
    if isinstance(value, int):
        return (value, value)
    value = tuple(value)
    return value * 2 if len(value) == 1 else value


class MaxPool2d(nn.MaxPool2d):
    """nn.MaxPool2d (the same arguments and state) whose forward pools with hardact's channels-last
    kernel where it applies, with F.max_pool2d's bits: ATen's channels-last pooling writes an int64
    index per output element even when none is asked for (TUNING.md#max-pooling). It applies to a
    plain 4-d channels-last CUDA tensor of float32, float64, float16 or bfloat16, with dilation 1 and
    no indices asked for, no gradient wanted, not under torch.compile (Inductor pools in its own
    kernels); everything else, refusals and empty batches included, runs nn.MaxPool2d.forward."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        kernel, stride, padding = _pair(self.kernel_size), _pair(self.stride), _pair(self.padding)
        stride = stride or kernel  # F.max_pool2d's empty stride: the kernel's
        usable = (_pair(self.dilation) == (1, 1) and not self.return_indices and len(kernel + stride + padding) == 6
                  and all(type(v) is int for v in kernel + stride + padding) and min(kernel + stride) >= 1
                  and all(0 <= p <= k // 2 for p, k in zip(padding, kernel)))
        # (kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, ceil_mode): _C._max_pool2d's arguments.
        self._settings = (*kernel, *stride, *padding, bool(self.ceil_mode)) if usable else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        settings = self._settings
        if (settings is None or _is_compiling() or type(x) is not torch.Tensor or not x.is_cuda or x.dim() != 4
                or x.dtype not in _POOLED_DTYPES or (x.requires_grad and torch.is_grad_enabled())
                or not x.is_contiguous(memory_format=torch.channels_last) or x.shape[0] == 0 or x.shape[1] == 0
                or x.shape[2] + 2 * settings[4] < settings[0] or x.shape[3] + 2 * settings[5] < settings[1]):
            return super().forward(x)
        return _C._max_pool2d(x, *settings)


_POOLED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
