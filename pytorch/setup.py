"""Builds hardact_torch: hardact's activations registered as PyTorch operators (torch.ops.hardact.*).

    python3 -m pip install --no-build-isolation ./pytorch       # from the repository root
    python3 -m pip install --no-build-isolation -e ./pytorch    # editable

--no-build-isolation: the extension must be compiled against the torch that will import it, the
one already installed (an isolated build would fetch another torch). The CUDA code includes the
repository's own include/ in place (no copy); HARDACT_INCLUDE_DIR overrides that path when this
folder is used outside the repository. GPU architectures: TORCH_CUDA_ARCH_LIST (default "9.0").
"""

import os
import pathlib
import sys

from setuptools import find_packages, setup

HERE = pathlib.Path(__file__).resolve().parent

try:
    import torch  # noqa: F401
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension
except ImportError as error:
    sys.exit(
        f"hardact_torch: PyTorch must be installed before building this package ({error}). "
        "Install with: python3 -m pip install --no-build-isolation ./pytorch"
    )


def hardact_include_dir() -> str:
    """The repository's include/, resolved from this file (pip builds local folders in place)."""
    directory = pathlib.Path(os.environ.get("HARDACT_INCLUDE_DIR", HERE.parent / "include")).resolve()
    if not (directory / "hardact" / "hardact.cuh").is_file():
        sys.exit(
            f"hardact_torch: hardact's headers were not found under {directory}. Build from the repository "
            "(pip >= 21.3 builds local folders in place) or set HARDACT_INCLUDE_DIR to hardact's include/."
        )
    return str(directory)


# torch.utils.cpp_extension reads this to choose -gencode flags; without it, it would build for the
# GPUs it sees, or for every architecture when it sees none.
os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")

# HARDACT_TORCH_CHECK_BUILD=1: a build that proves the package compiles, links and imports, for a
# machine without a GPU (CI), as the C++ suite builds its device tests where it finds none: device
# code to PTX only with cicc's optimizer off (no ptxas), host code at -O0. Its kernels are not the
# optimized ones and it holds no machine code for any GPU: never install it to run on one. -g0: the
# C++ files get Python's -g otherwise, a third of their compile time (ops/autograd.cpp: 10.3 s, 6.3 s
# without; g++ 12).
CHECK_BUILD = os.environ.get("HARDACT_TORCH_CHECK_BUILD") == "1"
COMPILE_ARGS = ({"cxx": ["-O0", "-g0"], "nvcc": ["-O0", "-Xcicc", "-O0", "-gencode=arch=compute_90,code=compute_90"]}
                if CHECK_BUILD else {"cxx": ["-O3"], "nvcc": ["-O3"]})

# Sources relative to this folder, as setuptools wants them. The package lives under src/ so that
# scripts run from this folder import the installed package, not the source tree. csrc/ holds the
# Python bindings (bindings/), the operators with their autograd (ops/), the tensor-to-launcher
# glue (launch/) and the operators that exist only for the tests (testing/); its files include
# each other relative to csrc/.
CSRC = "src/hardact_torch/csrc"
os.chdir(HERE)
# In the order they were linked before csrc/ had folders (static registrations run in it).
SOURCES = [f"{CSRC}/{source}" for source in (
    "ops/ops.cu", "ops/fused_ops.cu", "launch/fused_launch_float.cu", "launch/fused_launch_double.cu",
    "launch/fused_launch_half.cu", "launch/fused_launch_bfloat16.cu",
    "launch/fused_launch_half_float_parameters.cu", "launch/fused_launch_bfloat16_float_parameters.cu",
    "testing/test_hooks.cu",
    "ops/autograd.cpp", "ops/fused_autograd.cpp", "ops/linear_activation.cpp",
    "ops/pointwise_convolution.cpp", "ops/depthwise_conv.cu", "ops/max_pool.cu", "ops/concatenate.cu",
    "ops/fused_block_forward.cpp", "bindings/python_module.cpp")]
if CHECK_BUILD:
    # The .cu files as one translation unit, which includes each, and the .cpp files as another:
    # ATen's and hardact's headers parsed once, not once a file (TUNING.md#build-time). Registrations
    # keep their order (depthwise_conv.cu, max_pool.cu and concatenate.cu, the .cu files after a .cpp,
    # register none).
    def one_unit(name: str, suffix: str) -> str:
        unit = HERE / "build" / "check-build" / name
        unit.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(f'#include "{HERE / source}"\n' for source in SOURCES if source.endswith(suffix))
        if not unit.exists() or unit.read_text() != text:
            unit.write_text(text)
        return unit.relative_to(HERE).as_posix()

    SOURCES = [one_unit("cuda_units.cu", ".cu"), one_unit("cpp_units.cpp", ".cpp")]
setup(
    name="hardact_torch",
    version="0.1.0",
    description="hardact's HardSigmoid, HardTanh, HardSwish and ReLU6 as PyTorch operators (torch.ops.hardact)",
    package_dir={"": "src"},
    packages=find_packages("src"),
    ext_modules=[
        CUDAExtension(
            name="hardact_torch._C",
            sources=SOURCES,
            include_dirs=[hardact_include_dir(), str(HERE / CSRC)],
            # ops/linear_activation.cpp calls cuBLASLt, which torch itself loads (the same library at run time).
            libraries=["cublasLt"],
            extra_compile_args=COMPILE_ARGS,
        )
    ],
    cmdclass={"build_ext": BuildExtension},
    python_requires=">=3.9",
    zip_safe=False,
)
