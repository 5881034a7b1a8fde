"""KernelBench-style ModelNew on the installed hardact_torch: a drop-in for a problem's `Model` whose
forward is F.hardsigmoid(x) (the default) or F.hardtanh(x, min_val, max_val).

A benchmark harness loads this file by path and takes `ModelNew` from it, as KernelBench does with
a candidate's source (exec of the file's text, or an import by path):

    spec = importlib.util.spec_from_file_location("kernelbench_model", "pytorch/examples/kernelbench_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.ModelNew(*get_init_inputs()).cuda()    # ModelNew(), ModelNew("hardtanh", 0.0, 6.0)

It needs hardact_torch installed (python3 -m pip install --no-build-isolation ./pytorch) and CUDA
inputs; results are bit for bit F.hardsigmoid's and F.hardtanh's (pytorch/tests/test_forward.py).
"""

from __future__ import annotations

import torch
from torch import nn

import hardact_torch as ha


class ModelNew(nn.Module):
    """Drop-in for a KernelBench-style `Model` whose forward is F.hardsigmoid(x) (the default) or
    F.hardtanh(x, min_val, max_val): ModelNew(), ModelNew("hardtanh"), ModelNew("hardtanh", 0.0, 6.0)."""

    KINDS = ("hardsigmoid", "hardtanh")

    def __init__(self, kind: str = "hardsigmoid", min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        if kind not in self.KINDS:
            raise ValueError(f"hardact.ModelNew: kind must be one of {self.KINDS}, got {kind!r}")
        self.activation = ha.HardSigmoid(inplace) if kind == "hardsigmoid" else ha.HardTanh(min_val, max_val, inplace)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.activation(x)
