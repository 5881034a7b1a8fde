"""replace_activations: a model's torch.nn activation modules swapped for hardact's."""

from __future__ import annotations

from torch import nn

from ..modules import HardSigmoid, HardSwish, HardTanh, ReLU6

__all__ = ["replace_activations"]


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
