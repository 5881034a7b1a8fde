"""Builds the `hardact` Python distribution: hardact's headers and CMake package, no compiled code.

    python3 -m pip install .      # from the repository root

The version is read from include/hardact/version.cuh, as CMake reads it. build_py copies
include/hardact/ into the package and writes its CMake package from python/cmake/*.in, so a wheel
carries hardact/include/hardact/*.cuh and hardact/cmake/hardactConfig{,Version}.cmake.
"""

import pathlib
import re
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = pathlib.Path(__file__).resolve().parent


def version_parts():
    text = (ROOT / "include" / "hardact" / "version.cuh").read_text()
    return [re.search(rf"#define HARDACT_VERSION_{part} (\d+)", text).group(1) for part in ("MAJOR", "MINOR", "PATCH")]


class BuildWithHeaders(build_py):
    def run(self):
        super().run()
        package = pathlib.Path(self.build_lib) / "hardact"
        # Fresh each time: build/lib survives between builds, and a header removed from include/
        # must not stay in the wheel.
        shutil.rmtree(package / "include", ignore_errors=True)
        shutil.copytree(ROOT / "include" / "hardact", package / "include" / "hardact")
        major, minor, patch = version_parts()
        (package / "cmake").mkdir(parents=True, exist_ok=True)
        for template in sorted((ROOT / "python" / "cmake").glob("*.cmake.in")):
            text = template.read_text().replace("@HARDACT_VERSION@", f"{major}.{minor}.{patch}")
            (package / "cmake" / template.stem).write_text(text.replace("@HARDACT_VERSION_MAJOR@", major))


setup(version=".".join(version_parts()), cmdclass={"build_py": BuildWithHeaders})
