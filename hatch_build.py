"""Builds kernelcore's C kernels (kernelcore/native/*.c) into kernelcore/native/libkernelcore_cpu.so with the
machine's C compiler, for every wheel and editable install (`pip install .`, `pip install -e .`, `./dev build`).

The library is plain C (its loops shared over POSIX threads, vectorised with OpenMP simd pragmas), loaded by ctypes (kernelcore/native/__init__.py): no Python or NumPy headers,
and one build serves every Python version. Where no compiler works the build goes on without it and kernelcore
runs its NumPy kernels (`kernelcore env` says which).

Environment: CC (default: cc), KERNELCORE_CFLAGS (default: -O3 -march=native; a wheel for other machines needs
e.g. -O3 -march=x86-64-v3), KERNELCORE_NATIVE_BUILD=skip to leave the library out.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCES = Path("kernelcore") / "native"
LIBRARY = SOURCES / "libkernelcore_cpu.so"
DEFAULT_CFLAGS = "-O3 -march=native"


def compile_library(root: Path) -> str | None:
    """Compile the library in place; None when built, else why not."""
    if os.environ.get("KERNELCORE_NATIVE_BUILD", "").strip().lower() == "skip":
        return "KERNELCORE_NATIVE_BUILD=skip"
    if not sys.platform.startswith("linux"):
        return f"the C kernels are built on Linux only (this is {sys.platform})"
    sources = sorted(str(p) for p in (root / SOURCES).glob("*.c"))
    cc = shlex.split(os.environ.get("CC", "cc"))
    cflags = shlex.split(os.environ.get("KERNELCORE_CFLAGS", DEFAULT_CFLAGS))
    out = root / LIBRARY
    tmp = out.with_suffix(".so.tmp")
    cmd = [*cc, *cflags, "-std=c11", "-fopenmp-simd", "-pthread", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall",
           "-o", str(tmp), *sources, "-lm"]
    try:
        done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{cmd[0]} failed to run: {e}"
    if done.returncode != 0:
        tmp.unlink(missing_ok=True)
        out.unlink(missing_ok=True)  # an older build of other sources must not be loaded instead
        return f"{' '.join(cmd)} exited with {done.returncode}:\n{done.stderr.strip()[-2000:]}"
    os.replace(tmp, out)  # a running process that loaded the old library keeps its mapping
    return None


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        why_not = compile_library(root)
        if why_not is not None:
            self.app.display_warning(f"kernelcore: the C kernels were not built ({why_not}); "
                                     "kernelcore will run its NumPy kernels")
            return
        self.app.display_info(f"kernelcore: built {LIBRARY}")
        if version == "standard":
            # an editable install finds the library in the source tree; a wheel carries it and is
            # platform-specific
            build_data["force_include"][str(root / LIBRARY)] = str(LIBRARY)
            build_data["pure_python"] = False
            build_data["infer_tag"] = True
