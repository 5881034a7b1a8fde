"""replace_max_pooling: a model's nn.MaxPool2d modules as hardact's MaxPool2d."""

from __future__ import annotations

from torch import nn

from ..modules import MaxPool2d

__all__ = ["replace_max_pooling"]


def replace_max_pooling(model: nn.Module) -> int:
    """Replaces, in place, every nn.MaxPool2d of `model` (exactly that class, not a subclass) with
    dilation 1 and no indices by hardact's MaxPool2d with the same arguments, whose forward gives the
    same bits and takes hardact's channels-last kernel where it applies. Returns how many were replaced."""
    replaced = 0
    for parent in model.modules():
        for name, child in list(parent.named_children()):
            if type(child) is not nn.MaxPool2d or child.return_indices or child.dilation not in (1, (1, 1), [1, 1]):
                continue
            pooled = MaxPool2d(child.kernel_size, child.stride, child.padding, child.dilation, child.return_indices,
                               child.ceil_mode)
            pooled.train(child.training)
            setattr(parent, name, pooled)
            replaced += 1
    return replaced
