"""Conan 2 recipe for hardact: a header-only package holding hardact's own CMake install.

    conan create .        # from the repository root; builds and runs test_package/

A consumer writes find_package(hardact CONFIG) and links hardact::hardact, as with any other install:
the package is what `cmake --install` writes (headers, hardactConfig.cmake, its version file and
targets), so Conan generates no config of its own for it (cmake_find_mode "none") and puts the
package on CMAKE_PREFIX_PATH (builddirs) for CMakeToolchain. Packaging configures hardact's
CMakeLists.txt, which needs the CUDA toolkit (find_package(CUDAToolkit)); nothing is compiled.
"""

import os
import re

from conan import ConanFile
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load


class HardactConan(ConanFile):
    name = "hardact"
    description = "Header-only CUDA elementwise activations at memory-copy speed, bit-identical to PyTorch"
    license = "Apache-2.0"
    topics = ("cuda", "activation", "header-only", "pytorch")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    exports_sources = "CMakeLists.txt", "LICENSE", "cmake/*", "include/*"
    no_copy_source = True

    def set_version(self):
        # The one place the version lives (CMakeLists.txt and setup.py read it too).
        text = load(self, os.path.join(self.recipe_folder, "include", "hardact", "version.cuh"))
        self.version = ".".join(re.search(rf"#define HARDACT_VERSION_{part} (\d+)", text).group(1)
                                for part in ("MAJOR", "MINOR", "PATCH"))

    def layout(self):
        cmake_layout(self)

    def generate(self):
        toolchain = CMakeToolchain(self)
        # Only the library and its install rules: no tests, benchmark or examples to compile.
        for option in ("TESTS", "BENCH", "EXAMPLES"):
            toolchain.cache_variables[f"HARDACT_BUILD_{option}"] = False
        toolchain.cache_variables["HARDACT_INSTALL"] = True
        toolchain.generate()

    def build(self):
        CMake(self).configure()

    def package(self):
        CMake(self).install()
        copy(self, "LICENSE", src=self.source_folder, dst=os.path.join(self.package_folder, "licenses"))

    def package_id(self):
        # Headers only: one package for every setting.
        self.info.clear()

    def package_info(self):
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.set_property("cmake_find_mode", "none")
        self.cpp_info.builddirs = ["."]
