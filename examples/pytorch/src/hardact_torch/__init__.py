"""hardact for PyTorch: HardSigmoid, HardTanh, HardSwish and ReLU6 as PyTorch operators.

    import hardact_torch as ha
    model = nn.Sequential(nn.Linear(4096, 4096), ha.HardSigmoid())  # like nn.Hardsigmoid()
    y = ha.hardtanh(x, -2.0, 2.0)                                    # like F.hardtanh(x, -2.0, 2.0)

Importing this package registers the operators torch.ops.hardact.{hardsigmoid, hardtanh, hardswish,
relu6} with their in-place (`hardsigmoid_`) and out= (`hardsigmoid.out`) forms, which return nothing,
and backward (`hardsigmoid_backward`) forms, fake kernels (torch.compile, torch.export), autograd formulas and
DTensor sharding rules. The functions and modules below are thin wrappers that mirror
torch.nn.functional and torch.nn.

Results on CUDA are bit-identical to PyTorch's for float32, float16 and bfloat16, forward and
backward, and for float64 except HardSigmoid/HardSwish, which hardact computes exactly in double
(PyTorch multiplies by float(1/6) widened to double: hardsigmoid saturates at 1.0000000298).
Tensors of any layout are accepted (dense ones, including transposed and offset views, are used
in place; others through one copy). Only CUDA tensors: a CPU tensor raises ValueError. The in-place
and out= forms are not differentiable: with grad mode on they raise if an input requires grad.
"""

from __future__ import annotations

import torch
from torch import nn

from . import _C  # noqa: F401  (loading the extension registers torch.ops.hardact)
from ._registrations import DTENSOR_SHARDING_REGISTERED, SUPPORTED_DTYPES, UNARY_OPS, sharded_ops

__all__ = [
    "SUPPORTED_DTYPES", "UNARY_OPS", "DTENSOR_SHARDING_REGISTERED", "sharded_ops",
    "hardsigmoid", "hardsigmoid_", "hardtanh", "hardtanh_", "hardswish", "hardswish_", "relu6", "relu6_",
    "HardSigmoid", "HardTanh", "HardSwish", "ReLU6", "ModelNew",
]

ops = torch.ops.hardact


def _check_device(x, op_name: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"hardact.{op_name}: expected a torch.Tensor, got {type(x).__name__}")
    if x.device.type not in ("cuda", "meta"):  # meta: shape-only tracing, runs the fake kernels
        raise ValueError(f"hardact.{op_name}: expected a CUDA tensor, got one on {x.device}; "
                         f"use torch.nn.functional.{op_name} for other devices")


def hardsigmoid(x: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """F.hardsigmoid(x, inplace): min(max(x + 3, 0), 6) * float(1/6)."""
    _check_device(x, "hardsigmoid")
    if inplace:
        ops.hardsigmoid_(x)
        return x
    return ops.hardsigmoid(x)


def hardsigmoid_(x: torch.Tensor) -> torch.Tensor:
    return hardsigmoid(x, inplace=True)


def hardtanh(x: torch.Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> torch.Tensor:
    """F.hardtanh(x, min_val, max_val, inplace): clamp(x, min_val, max_val), NaN kept."""
    _check_device(x, "hardtanh")
    min_val, max_val = float(min_val), float(max_val)
    if inplace:
        ops.hardtanh_(x, min_val, max_val)
        return x
    return ops.hardtanh(x, min_val, max_val)


def hardtanh_(x: torch.Tensor, min_val: float = -1.0, max_val: float = 1.0) -> torch.Tensor:
    return hardtanh(x, min_val, max_val, inplace=True)


def hardswish(x: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """F.hardswish(x, inplace): x * min(max(x + 3, 0), 6) / 6."""
    _check_device(x, "hardswish")
    if inplace:
        ops.hardswish_(x)
        return x
    return ops.hardswish(x)


def hardswish_(x: torch.Tensor) -> torch.Tensor:
    return hardswish(x, inplace=True)


def relu6(x: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """F.relu6(x, inplace): min(max(x, 0), 6)."""
    _check_device(x, "relu6")
    if inplace:
        ops.relu6_(x)
        return x
    return ops.relu6(x)


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
