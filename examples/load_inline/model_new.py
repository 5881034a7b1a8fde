"""KernelBench-style ModelNew: F.hardsigmoid replaced by hardact, compiled with load_inline.

    python3 -m pip install .                                  # hardact's headers, from the repository root
    python3 examples/load_inline/model_new.py                 # on a GPU: checks ModelNew bit for bit, prints PASS
    python3 examples/load_inline/model_new.py --compile-only  # builds only (no GPU needed; needs nvcc)

The lines between the README markers are the README's example, line for line
(scripts/check-pytorch-package compares them). load_inline needs ninja, as every
torch.utils.cpp_extension JIT build does. Without a GPU, torch builds for TORCH_CUDA_ARCH_LIST
(default here 9.0).
"""

import argparse
import os
import sys

import torch
import torch.nn.functional as F

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--compile-only", action="store_true", help="build the extension, run nothing")
args = parser.parse_args()
if args.compile_only or not torch.cuda.is_available():
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")  # torch cannot ask a device for it

# README example begins
import hardact, torch
from torch.utils.cpp_extension import load_inline
source = r"""#include <ATen/cuda/CUDAContext.h>
#include <hardact/hardact.cuh>
#include <torch/extension.h>
torch::Tensor hardsigmoid(torch::Tensor x) {
  auto y = torch::empty_like(x);
  TORCH_CHECK(hardact::hardsigmoid(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), at::cuda::getCurrentCUDAStream()) == cudaSuccess);
  return y; }"""
ops = load_inline("hardact_ops", "torch::Tensor hardsigmoid(torch::Tensor x);", cuda_sources=source,
                  functions=["hardsigmoid"], extra_include_paths=[hardact.get_include()])
class ModelNew(torch.nn.Module):
    def forward(self, x): return ops.hardsigmoid(x)
# README example ends


def main():
    if args.compile_only or not torch.cuda.is_available():
        reason = "--compile-only" if args.compile_only else "no GPU"
        print(f"model_new: built against hardact {hardact.__version__} in {hardact.get_include()} ({reason}: not run)")
        return 0
    # KernelBench's shape for its activations (batch 4096, dim 393216), with edge values in front.
    x = torch.randn(4096, 393216, device="cuda")
    x.view(-1)[:8] = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, -3.0, 3.0, -2.9999998, 1e-40])
    y, expected = ModelNew()(x), F.hardsigmoid(x)
    same = (y.view(torch.int32) == expected.view(torch.int32)) | (y.isnan() & expected.isnan())
    mismatches = int((~same).sum())
    print(f"model_new: ModelNew against F.hardsigmoid on {x.numel()} floats ({torch.cuda.get_device_name()}, "
          f"hardact {hardact.__version__}): {mismatches} differ")
    print("PASS" if mismatches == 0 else "FAIL")
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
