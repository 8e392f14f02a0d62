"""Build hook: bundles libreprocl into the package unless an installed one is found.

`pip install ./python` runs CMake on the parent source tree (the library and CLI targets; no tests)
and copies libreprocl.so.0 (and the reprocl CLI, which reprocl.tools.check/fingerprint run; leave it out
with REPROCL_BUNDLE_CLI=0) into reprocl/_lib/. The kernels are embedded in the library, so nothing else
is needed at run time. Skipped when REPROCL_LIBRARY is set or `pkg-config reprocl` finds an installed
library (the package then loads that one); REPROCL_BUNDLE=1 forces the build, REPROCL_BUNDLE=0 forbids it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent


def _installed() -> bool:
    if os.environ.get("REPROCL_LIBRARY"):
        return True
    pc = shutil.which("pkg-config")
    return bool(pc) and subprocess.run([pc, "--exists", "reprocl"], check=False).returncode == 0


def _build_library(dest: Path) -> None:
    if not (SOURCE / "CMakeLists.txt").exists() or not (SOURCE / "include" / "reprocl").is_dir():
        raise RuntimeError(f"reprocl: no installed libreprocl (pkg-config reprocl) and no source tree at {SOURCE}")
    build = HERE / "build" / "cmake"
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    cfg = ["cmake", "-S", str(SOURCE), "-B", str(build), *gen, "-DCMAKE_BUILD_TYPE=Release",
           "-DREPROCL_BUILD_TESTS=OFF"]
    print("reprocl: building libreprocl:", " ".join(cfg), file=sys.stderr)
    subprocess.run(cfg, check=True)
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
    # With Ninja the name "reprocl" is also the CLI's output file, which wins: name the library's file.
    lib_target = "libreprocl.so" if gen else "reprocl"
    with_cli = os.environ.get("REPROCL_BUNDLE_CLI", "1") == "1"
    targets = [lib_target, "reprocl_cli"] if with_cli else [lib_target]
    subprocess.run(["cmake", "--build", str(build), "--target", *targets, "--parallel", jobs], check=True)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(build / "libreprocl.so.0", dest / "libreprocl.so.0", follow_symlinks=True)
    if with_cli:  # check() and fingerprint() run it (the suites live in the CLI)
        shutil.copy2(build / "reprocl", dest / "reprocl")


class BuildPyWithLibrary(build_py):
    def run(self) -> None:
        mode = os.environ.get("REPROCL_BUNDLE", "auto")
        if mode == "1" or (mode == "auto" and not _installed()):
            _build_library(HERE / "reprocl" / "_lib")
        super().run()


class BinaryDistribution(Distribution):
    """The wheel holds a native library: tag it for the platform, not py3-none-any."""

    def has_ext_modules(self) -> bool:
        return True


setup(cmdclass={"build_py": BuildPyWithLibrary}, distclass=BinaryDistribution)
