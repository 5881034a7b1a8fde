"""hardact for PyTorch: HardSigmoid, HardTanh, HardSwish and ReLU6 as PyTorch operators.

    import hardact_torch as ha
    model = nn.Sequential(nn.Linear(4096, 4096), ha.HardSigmoid())  # like nn.Hardsigmoid()
    y = ha.hardtanh(x, -2.0, 2.0)                                    # like F.hardtanh(x, -2.0, 2.0)

Importing this package registers the operators torch.ops.hardact.{hardsigmoid, hardtanh, hardswish,
relu6} with their in-place (`hardsigmoid_`) and out= (`hardsigmoid.out`) forms, which return nothing,
and backward (`hardsigmoid_backward`) forms; their autograd (C++), fake kernels (torch.compile,
torch.export) and DTensor sharding rules. The functions and modules below mirror
torch.nn.functional and torch.nn; `replace_activations(model)` swaps a model's torch.nn
activation modules for them.

Results on CUDA are bit-identical to PyTorch's for float32, float16 and bfloat16, forward and
backward, and for float64 except HardSigmoid/HardSwish, which hardact computes exactly in double
(PyTorch multiplies by float(1/6) widened to double: hardsigmoid saturates at 1.0000000298).
Tensors of any layout are accepted (dense ones, including transposed and offset views, are used
in place; others through one copy). Only CUDA tensors: a CPU tensor raises ValueError. The
functional and in-place forms are differentiable as PyTorch's are; the out= forms are not. Under
torch.compile the functions and modules are torch.nn.functional's, so Inductor fuses them.
"""

from __future__ import annotations

import torch
from torch import nn

import torch.nn.functional as F
from torch._C import _has_torch_function_unary
from torch.compiler import is_compiling as _is_compiling
from torch.overrides import handle_torch_function as _handle_torch_function

from . import _C  # loading the extension registers torch.ops.hardact
from ._registrations import DTENSOR_SHARDING_REGISTERED, SUPPORTED_DTYPES, UNARY_OPS, sharded_ops

__all__ = [
    "SUPPORTED_DTYPES", "UNARY_OPS", "DTENSOR_SHARDING_REGISTERED", "sharded_ops",
    "hardsigmoid", "hardsigmoid_", "hardtanh", "hardtanh_", "hardswish", "hardswish_", "relu6", "relu6_",
    "HardSigmoid", "HardTanh", "HardSwish", "ReLU6", "ModelNew", "replace_activations",
]

ops = torch.ops.hardact

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


class ModelNew(nn.Module):
    """Drop-in for a KernelBench-style `Model` whose forward is F.hardsigmoid(x) (the default) or
    F.hardtanh(x, min_val, max_val): ModelNew(), ModelNew("hardtanh"), ModelNew("hardtanh", 0.0, 6.0)."""

    KINDS = ("hardsigmoid", "hardtanh")

    def __init__(self, kind: str = "hardsigmoid", min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        if kind not in self.KINDS:
            raise ValueError(f"hardact.ModelNew: kind must be one of {self.KINDS}, got {kind!r}")
        self.activation = HardSigmoid(inplace) if kind == "hardsigmoid" else HardTanh(min_val, max_val, inplace)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.activation(x)


def _replacement(module: nn.Module) -> nn.Module | None:
    """hardact's module for a torch.nn activation module (the same arguments), or None."""
    kind = type(module)
    if kind is nn.Hardswish:
        return HardSwish(module.inplace)
    if kind is nn.Hardsigmoid:
        return HardSigmoid(module.inplace)
    if kind is nn.ReLU6:
        return ReLU6(module.inplace)
    if kind is nn.Hardtanh:
        return HardTanh(module.min_val, module.max_val, module.inplace)
    return None


def replace_activations(model: nn.Module) -> int:
    """Replaces, in place, every nn.Hardswish, nn.Hardsigmoid, nn.ReLU6 and nn.Hardtanh module of
    `model` (exactly those classes, not subclasses) by hardact's, keeping `inplace` and the bounds.
    Returns how many were replaced."""
    replaced = 0
    for parent in model.modules():
        for name, child in list(parent.named_children()):
            new = _replacement(child)
            if new is not None:
                setattr(parent, name, new)
                replaced += 1
    return replaced
