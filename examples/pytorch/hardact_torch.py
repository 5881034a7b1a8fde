"""hardact for PyTorch: drop-in replacements for F.hardsigmoid and F.hardtanh on CUDA tensors.

The results are bit-identical to PyTorch's for float32, float16 and bfloat16, and for float64
HardTanh. float64 HardSigmoid is exact: it saturates at 1.0, where PyTorch returns
1.0000000298023224 (PyTorch multiplies by float(1/6) widened to double).

    import hardact_torch as ha
    y = ha.hardsigmoid(x)                      # like F.hardsigmoid(x)
    y = ha.hardtanh(x, min_val=0.0, max_val=6.0)
    ha.hardsigmoid_(x)                         # in place, like F.hardsigmoid(x, inplace=True)
    model = ha.ModelNew("hardtanh", -1.0, 1.0)  # drop-in for a Model whose forward is F.hardtanh

Inputs must be contiguous CUDA tensors of those four dtypes (views with an offset, such as x[1:],
are fine). Anything else raises TypeError or ValueError rather than falling back silently.
Work is enqueued on PyTorch's current CUDA stream of the tensor's device.

The extension is compiled on first use for the GPUs that are visible (torch.utils.cpp_extension.load;
without ninja, a direct nvcc build). Environment: HARDACT_INCLUDE_DIR (hardact's include/ when this
file is used outside the repository), HARDACT_TORCH_BUILD_DIR (where the nvcc fallback builds).
"""

from __future__ import annotations

import importlib.util
import math
import os
import pathlib
import subprocess
import sys
import sysconfig

import torch
from torch import nn

__all__ = [
    "SUPPORTED_DTYPES",
    "build_extension",
    "load_extension",
    "hardsigmoid",
    "hardsigmoid_",
    "hardtanh",
    "hardtanh_",
    "ModelNew",
]

SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)

_HERE = pathlib.Path(__file__).resolve().parent
_SOURCE = _HERE / "hardact_torch.cu"
_EXTENSION_NAME = "hardact_torch_ext"
# The flags torch.utils.cpp_extension compiles CUDA extensions with; the fallback build uses them
# too, so both builds see the same headers the same way.
_TORCH_NVCC_DEFINES = [
    "-D__CUDA_NO_HALF_OPERATORS__",
    "-D__CUDA_NO_HALF_CONVERSIONS__",
    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-D__CUDA_NO_HALF2_OPERATORS__",
    "--expt-relaxed-constexpr",
]
_extension = None


def _include_dir() -> pathlib.Path:
    directory = pathlib.Path(os.environ.get("HARDACT_INCLUDE_DIR", _HERE.parent.parent / "include")).resolve()
    if not (directory / "hardact" / "hardact.cuh").is_file():
        raise FileNotFoundError(
            f"hardact headers not found under {directory}; set HARDACT_INCLUDE_DIR to hardact's include/ directory"
        )
    return directory


def _arch_flags() -> list[str]:
    """-gencode flags for the visible GPUs; sm_90 (the H100) when none is visible (a compile check)."""
    if torch.cuda.is_available():
        capabilities = sorted({torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())})
    else:
        capabilities = [(9, 0)]
    return [f"-gencode=arch=compute_{major}{minor},code=sm_{major}{minor}" for major, minor in capabilities]


def _build_with_nvcc(name: str, source: pathlib.Path, verbose: bool):
    """Builds and imports extension `name` from `source` with one nvcc command, for machines without ninja."""
    from torch.utils import cpp_extension

    if cpp_extension.CUDA_HOME is None:
        raise RuntimeError("hardact: no CUDA toolkit found (set CUDA_HOME); nvcc is needed to build the extension")
    include_dir = _include_dir()
    arch = _arch_flags()
    tag = f"torch{torch.__version__}-" + "-".join(flag.rsplit("sm_", 1)[1] for flag in arch)
    build_dir = pathlib.Path(
        os.environ.get("HARDACT_TORCH_BUILD_DIR", pathlib.Path.home() / ".cache" / "hardact_torch" / tag)
    )
    build_dir.mkdir(parents=True, exist_ok=True)
    library = build_dir / (name + sysconfig.get_config_var("EXT_SUFFIX"))

    inputs = [source, *include_dir.rglob("*.cuh")]
    if not library.exists() or library.stat().st_mtime < max(path.stat().st_mtime for path in inputs):
        library_dirs = cpp_extension.library_paths("cuda")
        command = [
            os.path.join(cpp_extension.CUDA_HOME, "bin", "nvcc"),
            "-shared", "-O3", "-std=c++17", "-Xcompiler", "-fPIC", "-cudart", "shared",
            *_TORCH_NVCC_DEFINES,
            f"-DTORCH_EXTENSION_NAME={name}", "-DTORCH_API_INCLUDE_EXTENSION_H",
            f"-I{include_dir}",
            *[arg for path in [*cpp_extension.include_paths("cuda"), sysconfig.get_path("include")]
              for arg in ("-isystem", path)],
            *arch,
            str(source),
            "-o", str(library) + ".partial",
            *[f"-L{path}" for path in library_dirs],
            *[f"-Xlinker=-rpath,{path}" for path in library_dirs],
            "-lc10", "-lc10_cuda", "-ltorch_cpu", "-ltorch_cuda", "-ltorch", "-ltorch_python",
        ]
        if verbose:
            print("hardact: building with", " ".join(command), file=sys.stderr)
        subprocess.run(command, check=True)
        os.replace(str(library) + ".partial", library)  # a half-written library is never imported

    spec = importlib.util.spec_from_file_location(name, library)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_extension(name: str, source: pathlib.Path, verbose: bool = False):
    """Compiles `source` against hardact's headers (cached on disk) and returns the module:
    through torch.utils.cpp_extension.load when ninja is there, else with one nvcc command."""
    from torch.utils import cpp_extension

    if cpp_extension.is_ninja_available() and not os.environ.get("HARDACT_TORCH_NO_NINJA"):
        return cpp_extension.load(
            name=name,
            sources=[str(source)],
            extra_include_paths=[str(_include_dir())],
            # Our own -gencode flags: torch then adds none, and builds only for the visible GPUs.
            extra_cuda_cflags=["-O3", *_arch_flags()],
            verbose=verbose,
        )
    return _build_with_nvcc(name, source, verbose)


def load_extension(verbose: bool = False):
    """Compiles (first call only, cached on disk afterwards) and returns the extension module."""
    global _extension
    if _extension is None:
        _extension = build_extension(_EXTENSION_NAME, _SOURCE, verbose)
    return _extension


def _check_tensor(x, op_name: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"hardact.{op_name}: expected a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(
            f"hardact.{op_name}: unsupported dtype {x.dtype}; expected float32, float64, float16 or bfloat16"
        )
    if not x.is_cuda:
        raise ValueError(
            f"hardact.{op_name}: expected a CUDA tensor, got one on {x.device}; "
            f"use torch.nn.functional.{op_name} for CPU tensors"
        )
    if not x.is_contiguous():
        raise ValueError(
            f"hardact.{op_name}: expected a contiguous tensor, got shape {tuple(x.shape)} with strides "
            f"{x.stride()}; call .contiguous() first"
        )


def _check_bounds(min_val: float, max_val: float) -> None:
    if math.isnan(min_val) or math.isnan(max_val):
        raise ValueError("hardact.hardtanh: min_val and max_val must not be NaN")
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")  # PyTorch's wording


def _needs_grad(x: torch.Tensor) -> bool:
    return torch.is_grad_enabled() and x.requires_grad


def _refuse_inplace_with_grad(x: torch.Tensor, op_name: str) -> None:
    if _needs_grad(x):
        raise RuntimeError(
            f"hardact.{op_name}_: in place on a tensor that requires grad is not supported; use inplace=False"
        )


class _HardSigmoidFunction(torch.autograd.Function):
    """Forward through hardact; backward through PyTorch's own hardsigmoid_backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return load_extension().hardsigmoid(x, False)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return torch.ops.aten.hardsigmoid_backward(grad_output, x)


class _HardTanhFunction(torch.autograd.Function):
    """Forward through hardact; backward through PyTorch's own hardtanh_backward."""

    @staticmethod
    def forward(ctx, x, min_val, max_val):
        ctx.save_for_backward(x)
        ctx.bounds = (min_val, max_val)
        return load_extension().hardtanh(x, min_val, max_val, False)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return torch.ops.aten.hardtanh_backward(grad_output, x, *ctx.bounds), None, None


def hardsigmoid(x: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """F.hardsigmoid(x, inplace) on a contiguous CUDA tensor: min(max(x + 3, 0), 6) / 6."""
    _check_tensor(x, "hardsigmoid")
    if inplace:
        _refuse_inplace_with_grad(x, "hardsigmoid")
        load_extension().hardsigmoid(x, True)
        return x
    if _needs_grad(x):
        return _HardSigmoidFunction.apply(x)
    return load_extension().hardsigmoid(x, False)


def hardsigmoid_(x: torch.Tensor) -> torch.Tensor:
    """In-place hardsigmoid; returns x."""
    return hardsigmoid(x, inplace=True)


def hardtanh(x: torch.Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> torch.Tensor:
    """F.hardtanh(x, min_val, max_val, inplace) on a contiguous CUDA tensor: clamp(x, min_val, max_val)."""
    min_val, max_val = float(min_val), float(max_val)
    _check_bounds(min_val, max_val)
    _check_tensor(x, "hardtanh")
    if inplace:
        _refuse_inplace_with_grad(x, "hardtanh")
        load_extension().hardtanh(x, min_val, max_val, True)
        return x
    if _needs_grad(x):
        return _HardTanhFunction.apply(x, min_val, max_val)
    return load_extension().hardtanh(x, min_val, max_val, False)


def hardtanh_(x: torch.Tensor, min_val: float = -1.0, max_val: float = 1.0) -> torch.Tensor:
    """In-place hardtanh; returns x."""
    return hardtanh(x, min_val, max_val, inplace=True)


class ModelNew(nn.Module):
    """Drop-in for a `Model` whose forward is F.hardsigmoid(x) (the default) or
    F.hardtanh(x, min_val, max_val): ModelNew(), ModelNew("hardtanh"), ModelNew("hardtanh", 0.0, 6.0).
    """

    KINDS = ("hardsigmoid", "hardtanh")

    def __init__(self, kind: str = "hardsigmoid", min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        if kind not in self.KINDS:
            raise ValueError(f"hardact.ModelNew: kind must be one of {self.KINDS}, got {kind!r}")
        if kind == "hardtanh":
            _check_bounds(float(min_val), float(max_val))
        self.kind = kind
        self.min_val = float(min_val)
        self.max_val = float(max_val)
        self.inplace = inplace

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "hardsigmoid":
            return hardsigmoid(x, inplace=self.inplace)
        return hardtanh(x, self.min_val, self.max_val, inplace=self.inplace)

    def extra_repr(self) -> str:
        bounds = f", min_val={self.min_val}, max_val={self.max_val}" if self.kind == "hardtanh" else ""
        return f"kind={self.kind!r}{bounds}, inplace={self.inplace}"
