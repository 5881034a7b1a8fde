"""hardact's functions, like torch.nn.functional's: hardsigmoid, hardtanh, hardswish and relu6 (and their
in-place forms), the fused epilogues (an activation with a folded BatchNorm's scale and shift, a
bias, a residual, a squeeze-excitation gate or a gated product, in one pass), and
concatenate_channels (torch.cat along the channels of channels-last tensors).

Results on CUDA are bit-identical to PyTorch's for float32, float16 and bfloat16, forward and
backward, and for float64 except HardSigmoid/HardSwish, which hardact computes exactly in double
(PyTorch multiplies by float(1/6) widened to double: hardsigmoid saturates at 1.0000000298).
Tensors of any layout are accepted (dense ones, including transposed and offset views, are used
in place; others through one copy). Only CUDA tensors: a CPU tensor raises ValueError. The
functional and in-place forms are differentiable as PyTorch's are; the out= forms are not. Under
torch.compile the functions are torch.nn.functional's, so Inductor fuses them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch._C import _has_torch_function_unary
from torch.compiler import is_compiling as _is_compiling
from torch.overrides import handle_torch_function as _handle_torch_function

from . import _C  # loading the extension registers torch.ops.hardact

__all__ = [
    "hardsigmoid", "hardsigmoid_", "hardtanh", "hardtanh_", "hardswish", "hardswish_", "relu6", "relu6_",
    "scale_shift_activation", "bias_activation", "residual_activation", "hardsigmoid_gate",
    "scale_shift_residual_activation", "scale_shift_activation_mean", "bias_activation_product",
    "concatenate_channels",
]

# Eager calls go straight to the extension's bindings (python_module.cpp), which cost what F.*'s
# cost on the host. Under torch.compile the functions and modules are torch.nn.functional's own,
# so Inductor fuses them with their neighbours: results are then those of torch.compile(F.*).
# __torch_function__ overrides are handled first, as F.* does.


def hardsigmoid(x: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """F.hardsigmoid(x, inplace): min(max(x + 3, 0), 6) * float(1/6)."""
    if _has_torch_function_unary(x):
        return _handle_torch_function(hardsigmoid, (x,), x, inplace=inplace)
    if _is_compiling():
        return F.hardsigmoid(x, inplace)
    return _C.hardsigmoid_(x) if inplace else _C.hardsigmoid(x)


def hardsigmoid_(x: torch.Tensor) -> torch.Tensor:
    return hardsigmoid(x, inplace=True)


def hardtanh(x: torch.Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> torch.Tensor:
    """F.hardtanh(x, min_val, max_val, inplace): clamp(x, min_val, max_val), NaN kept."""
    if _has_torch_function_unary(x):
        return _handle_torch_function(hardtanh, (x,), x, min_val=min_val, max_val=max_val, inplace=inplace)
    if _is_compiling():
        return F.hardtanh(x, min_val, max_val, inplace)
    return _C.hardtanh_(x, min_val, max_val) if inplace else _C.hardtanh(x, min_val, max_val)


def hardtanh_(x: torch.Tensor, min_val: float = -1.0, max_val: float = 1.0) -> torch.Tensor:
    return hardtanh(x, min_val, max_val, inplace=True)


def hardswish(x: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """F.hardswish(x, inplace): x * min(max(x + 3, 0), 6) / 6."""
    if _has_torch_function_unary(x):
        return _handle_torch_function(hardswish, (x,), x, inplace=inplace)
    if _is_compiling():
        return F.hardswish(x, inplace)
    return _C.hardswish_(x) if inplace else _C.hardswish(x)


def hardswish_(x: torch.Tensor) -> torch.Tensor:
    return hardswish(x, inplace=True)


def relu6(x: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """F.relu6(x, inplace): min(max(x, 0), 6)."""
    if _has_torch_function_unary(x):
        return _handle_torch_function(relu6, (x,), x, inplace=inplace)
    if _is_compiling():
        return F.relu6(x, inplace)
    return _C.relu6_(x) if inplace else _C.relu6(x)


def relu6_(x: torch.Tensor) -> torch.Tensor:
    return relu6(x, inplace=True)


# ---- fused epilogues ------------------------------------------------------------------------------
# One pass where eager PyTorch makes two or three: the activation with the per-channel scale and
# shift of a folded BatchNorm, a bias, a residual or a squeeze-excitation gate (csrc/ops/fused_ops.cu).
# Computed in float (double for float64) and rounded once; x * scale and + shift are rounded
# separately, never fused into an FMA. Under torch.compile they are the same expression in ATen
# operators, which Inductor fuses itself: results are then Inductor's. It contracts x * scale + shift
# into an FMA, so scale_shift_activation with a scale may differ from the eager op in the last bit
# (every dtype); the other forms have no multiply-add to contract.


def _activation_reference(z: torch.Tensor, activation: str, min_val: float, max_val: float) -> torch.Tensor:
    if activation == "identity":
        return z
    if activation == "hardtanh":
        return F.hardtanh(z, min_val, max_val)
    return getattr(F, activation)(z)


def _channel_view(p: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return p.reshape([1, x.shape[1]] + [1] * (x.dim() - 2))


def _compute_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _scale_shift_reference(x: torch.Tensor, scale: torch.Tensor | None, shift: torch.Tensor | None) -> torch.Tensor:
    """x * scale[c] + shift[c] in torch operators, in the compute dtype (what Inductor fuses)."""
    dtype = _compute_dtype(x)
    z = x.to(dtype)
    if scale is not None:
        z = z * _channel_view(scale, x).to(dtype)
    if shift is not None:
        z = z + _channel_view(shift, x).to(dtype)
    return z


def scale_shift_activation(x: torch.Tensor, scale: torch.Tensor | None, shift: torch.Tensor | None,
                           activation: str = "identity", min_val: float = -1.0, max_val: float = 1.0) -> torch.Tensor:
    """activation(x * scale[c] + shift[c]) for c along dim 1 of x (a channel of NCHW or channels-last
    x, a column of a 2-D x): a folded inference BatchNorm and its activation in one pass. shift alone
    is a bias (x + shift[c]); scale needs a shift. activation: one of FUSED_ACTIVATIONS ("relu" is
    hardtanh(0, inf), F.relu's results). scale and shift are used in float32 (float64 for float64 x):
    float16/bfloat16 ones of x's dtype are widened exactly in the kernel, others converted first.
    In float32 bit for bit `act(x * scale.view(C, 1, 1) + shift.view(C, 1, 1))`; float16 and
    bfloat16 round once, at the end. Differentiable in x, scale and shift."""
    if _is_compiling():
        return _activation_reference(_scale_shift_reference(x, scale, shift), activation, min_val,
                                     max_val).to(x.dtype)
    return _C.scale_shift_activation(x, scale, shift, activation, float(min_val), float(max_val))


def bias_activation(x: torch.Tensor, bias: torch.Tensor, activation: str = "identity", min_val: float = -1.0,
                    max_val: float = 1.0) -> torch.Tensor:
    """activation(x + bias[c]), c along dim 1 (the last dim of a 2-D x, e.g. a Linear's output)."""
    return scale_shift_activation(x, None, bias, activation, min_val, max_val)


def residual_activation(x: torch.Tensor, residual: torch.Tensor, activation: str = "identity",
                        min_val: float = -1.0, max_val: float = 1.0) -> torch.Tensor:
    """activation(x + residual), residual of x's shape and dtype; float32 bit for bit `act(x + residual)`."""
    if _is_compiling():
        dtype = _compute_dtype(x)
        return _activation_reference(x.to(dtype) + residual.to(dtype), activation, min_val, max_val).to(x.dtype)
    return _C.residual_activation(x, residual, activation, float(min_val), float(max_val))


def scale_shift_residual_activation(x: torch.Tensor, scale: torch.Tensor | None, shift: torch.Tensor | None,
                                    residual: torch.Tensor, activation: str = "identity", min_val: float = -1.0,
                                    max_val: float = 1.0) -> torch.Tensor:
    """activation(x * scale[c] + shift[c] + residual), c along dim 1 of x, residual of x's shape and
    dtype: an inference BatchNorm, the residual add after it and an activation in one pass (MobileNet's
    projection and shortcut, with "identity"). scale and shift come together; with neither it is
    residual_activation. Computed in float (double for float64): the product, the shift and the
    residual added in turn, rounded once; float32 bit for bit `act(x * scale.view(C, 1, 1) +
    shift.view(C, 1, 1) + residual)`. Differentiable in x, scale, shift and residual."""
    if _is_compiling():
        z = _scale_shift_reference(x, scale, shift) + residual.to(_compute_dtype(x))
        return _activation_reference(z, activation, min_val, max_val).to(x.dtype)
    return _C.scale_shift_residual_activation(x, scale, shift, residual, activation, float(min_val), float(max_val))


def scale_shift_activation_mean(x: torch.Tensor, scale: torch.Tensor | None, shift: torch.Tensor | None,
                                activation: str = "identity", min_val: float = -1.0,
                                max_val: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """(y, mean): y = scale_shift_activation(x, scale, shift, activation, min_val, max_val), the same
    bits, and mean, shape (N, C) in x's dtype, y's mean over every dim after 1, computed in the same
    pass (a squeeze-excitation's squeeze of a BatchNorm's output, without reading y again). x needs a
    dim after 1. The mean sums y as written (in x's dtype) in float (double for float64) and rounds
    once: `y.mean(tuple(range(2, x.dim())), dtype=torch.float32).to(x.dtype)` up to summation order.
    Differentiable in x, scale and shift through both outputs."""
    if _is_compiling():
        y = scale_shift_activation(x, scale, shift, activation, min_val, max_val)
        return y, y.mean(tuple(range(2, x.dim())), dtype=_compute_dtype(x)).to(x.dtype)
    return _C.scale_shift_activation_mean(x, scale, shift, activation, float(min_val), float(max_val))


def bias_activation_product(x: torch.Tensor, bias: torch.Tensor, other: torch.Tensor, other_bias: torch.Tensor,
                            activation: str = "identity", min_val: float = -1.0, max_val: float = 1.0) -> torch.Tensor:
    """activation(x + bias[c]) * (other + other_bias[c]), c along dim 1 of x, other of x's shape and
    dtype: two convolutions' outputs (run without their biases) gated in one pass, StarNet's star
    product. Computed in float (double for float64): each sum rounded, then the product, rounded
    once; float32 bit for bit `act(x + bias.view(C, 1, 1)) * (other + other_bias.view(C, 1, 1))`.
    Differentiable in all four tensors."""
    if _is_compiling():
        dtype = _compute_dtype(x)
        gated = _activation_reference(x.to(dtype) + _channel_view(bias, x).to(dtype), activation, min_val, max_val)
        return (gated * (other.to(dtype) + _channel_view(other_bias, x).to(dtype))).to(x.dtype)
    return _C.bias_activation_product(x, bias, other, other_bias, activation, float(min_val), float(max_val))


def hardsigmoid_gate(x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    """x * hardsigmoid(gate), gate holding one value per (n, c) of x (shape (N, C) or (N, C, 1, 1)):
    squeeze-excitation's gating. float32: bit for bit `x * F.hardsigmoid(gate)`."""
    if _is_compiling():
        dtype = _compute_dtype(x)
        g = gate.reshape([x.shape[0], x.shape[1]] + [1] * (x.dim() - 2)).to(dtype)
        g = (g + 3.0).clamp(0.0, 6.0) / torch.full_like(g, 6.0) if dtype == torch.float64 else F.hardsigmoid(g)
        return (x.to(dtype) * g).to(x.dtype)
    return _C.hardsigmoid_gate(x, gate)


# ---- concatenation -------------------------------------------------------------------------------


def concatenate_channels(tensors: list[torch.Tensor] | tuple[torch.Tensor, ...]) -> torch.Tensor:
    """torch.cat(tensors, 1), the same bits and strides. For two or more plain 4-d CUDA tensors of one
    dtype (float32, float64, float16, bfloat16) and device, of one N, H and W with N * H * W > 0,
    each with the strides torch.empty(..., memory_format=torch.channels_last) gives it, where no
    gradient is wanted, it is one hardact copy (_C._concatenate_channels): ATen's channels-last
    concatenation takes up to three times a copy of the same bytes (TUNING.md#concatenation).
    Everything else is torch.cat (under torch.compile, torch.jit.trace or a __torch_function__ mode
    too). The strides are compared exactly, where is_contiguous would do for the copy, so that the
    output's are torch.cat's: it writes a channels-first output for an empty input and for strides
    that pass for both layouts (a channels-first (N, 1, H, W) or (N, C, 1, 1), any (N, 1, 1, 1))."""
    if (len(tensors) < 2 or _is_compiling() or torch._C._get_tracing_state()
            or torch._C._is_torch_function_mode_enabled()):
        return torch.cat(tensors, 1)
    first = tensors[0]
    if type(first) is not torch.Tensor or not first.is_cuda or first.dim() != 4 \
            or first.dtype not in _CONCATENATED_DTYPES:
        return torch.cat(tensors, 1)
    n, _, h, w = first.shape
    dtype, device, grad = first.dtype, first.get_device(), torch.is_grad_enabled()
    for t in tensors:
        if type(t) is not torch.Tensor or t.dtype != dtype or not t.is_cuda or t.get_device() != device \
                or (grad and t.requires_grad) or t.dim() != 4:
            return torch.cat(tensors, 1)
        size_n, c, size_h, size_w = t.shape
        if size_n != n or size_h != h or size_w != w or c * h * w <= 1 or n == 0 \
                or t.stride() != (c * h * w, 1, c * w, c):
            return torch.cat(tensors, 1)
    return _C._concatenate_channels(tensors)


_CONCATENATED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
