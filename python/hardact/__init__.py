"""hardact's headers and CMake package, installed by ``python3 -m pip install .`` at hardact's root.

hardact is a header-only CUDA C++17 library; this package carries no compiled code. It tells a
build where the files are:

    hardact.get_include()    # for -I, e.g. torch.utils.cpp_extension.load_inline(extra_include_paths=[...])
    hardact.get_cmake_dir()  # for CMake: -Dhardact_DIR=..., then find_package(hardact CONFIG)
"""

from importlib.metadata import version
from pathlib import Path

__version__ = version("hardact")

_HERE = Path(__file__).resolve().parent

__all__ = ["__version__", "get_include", "get_cmake_dir"]


def get_include() -> str:
    """The folder holding hardact/hardact.cuh."""
    return str(_HERE / "include")


def get_cmake_dir() -> str:
    """The folder holding hardactConfig.cmake (defines the INTERFACE target hardact::hardact)."""
    return str(_HERE / "cmake")
