"""conan create's check of the hardact package: builds examples/consumer_find_package (a CUDA
program that calls hardact::hardsigmoid, found with find_package(hardact CONFIG)) against the
package and runs it: on a GPU it checks the results and prints PASS, without one it says skipped."""

import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, cmake_layout


class HardactTestPackage(ConanFile):
    settings = "os", "arch", "compiler", "build_type"
    generators = "CMakeToolchain"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def build(self):
        cmake = CMake(self)
        cmake.configure(build_script_folder=os.path.join(self.source_folder, os.pardir, "examples",
                                                         "consumer_find_package"))
        cmake.build()

    def test(self):
        if can_run(self):
            self.run(os.path.join(self.cpp.build.bindir, "hardact_consumer"), env="conanrun")
