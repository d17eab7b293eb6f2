"""Builds kernelcore's C kernels (kernelcore/native/*.c) for every wheel and editable install (`pip install .`,
`pip install -e .`, `./dev build`), with kernelcore/native/build.py: a library per x86-64 level (baseline, AVX2,
AVX-512), of which the loader picks the highest the CPU runs, so a wheel runs on any x86-64 CPU; elsewhere one
library with generic flags.

The library is plain C (its loops shared over POSIX threads, vectorised with OpenMP simd pragmas), loaded by ctypes
(kernelcore/native/__init__.py): no Python or NumPy headers, and one build serves every Python version. Where no
compiler works the build goes on without it and kernelcore runs its NumPy kernels (`kernelcore env` says which).

Environment: CC (default: cc), KERNELCORE_CFLAGS (one library with these flags instead of the levels: a build for
this machine alone, e.g. -O3 -march=native), KERNELCORE_NATIVE_BUILD=skip to leave the library out.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

BUILD_SCRIPT = Path("kernelcore") / "native" / "build.py"


def native_build(root: Path):
    """kernelcore/native/build.py as a module, loaded by its path: the isolated build environment has no NumPy,
    which importing the kernelcore package would need."""
    spec = importlib.util.spec_from_file_location("kernelcore_native_build", root / BUILD_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        build = native_build(root)
        sources = root / BUILD_SCRIPT.parent
        why_not = build.compile_library(sources)
        if why_not is not None:
            self.app.display_warning(f"kernelcore: the C kernels were not built ({why_not}); "
                                     "kernelcore will run its NumPy kernels")
            return
        built = build.built_libraries(sources)
        self.app.display_info("kernelcore: built " + ", ".join(p.name for p in built))
        if version == "standard":
            # an editable install finds the libraries in the source tree; a wheel carries them and is
            # platform-specific
            for library in built:
                build_data["force_include"][str(library)] = str(library.relative_to(root))
            build_data["pure_python"] = False
            build_data["infer_tag"] = True
