"""Compiles kernelcore's C kernels (the *.c beside this file) into the libraries kernelcore/native/__init__.py loads.

Run by hatch_build.py for every wheel and editable install, and by hand after editing a .c or .h in an editable
install (the loader refuses a library built from other sources than those beside it):

    python -m kernelcore.native

Standard library only: hatch_build.py loads this file by its path in an isolated build environment (no NumPy).

Portable builds: a wheel runs on CPUs other than the one that built it, so nothing is built for the build
machine's own CPU. On x86-64 the library is built three times, each whole: for the baseline x86-64 that every
x86-64 CPU runs (libkernelcore_cpu.so, which also holds the probe kc_native_cpu_level), for x86-64-v3 (AVX2, FMA:
2013's CPUs on) and x86-64-v4 (AVX-512). The loader asks the baseline library's probe which levels the CPU and
its OS support (__builtin_cpu_supports, which checks both) and loads the highest one built. A whole library per
level, rather than a few hot functions cloned per level, keeps every loop and everything inlined into it at the
chosen level. The kernels call fmaf where they fuse a multiply and an add (ISO C mode contracts nothing else), so
every level computes the same roundings; sums vectorised with `omp simd` may add their lanes in another order at
another vector width, so the last bits of a reduction can differ between levels (as between OpenBLAS's kernels).
Elsewhere one library with generic flags.

Environment: CC (default: cc); KERNELCORE_CFLAGS: one library with these flags instead of the levels (for a build
that stays on this machine, e.g. "-O3 -march=native"); KERNELCORE_NATIVE_BUILD=skip to leave the library out.
"""
from __future__ import annotations

import hashlib
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASENAME = "libkernelcore_cpu"
BASELINE = "x86-64"
# (level, flags) for x86-64; the first is the baseline, built into BASENAME.so
X86_LEVELS = ((BASELINE, "-O3 -march=x86-64 -mtune=generic"),
              ("x86-64-v3", "-O3 -march=x86-64-v3 -mtune=generic"),
              ("x86-64-v4", "-O3 -march=x86-64-v4 -mtune=generic"))
GENERIC_FLAGS = "-O3"
COMMON_FLAGS = ["-std=c11", "-fopenmp-simd", "-pthread", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall",
                # every exported function is declared in kc_native.h, the header the bindings are checked against
                "-Werror=missing-prototypes"]
COMPILE_TIMEOUT_S = 300


def source_files(directory: Path = HERE) -> list[Path]:
    """The C sources and headers a build reads, in a fixed order."""
    return sorted([*directory.glob("*.c"), *directory.glob("*.h")], key=lambda p: p.name)


def source_digest(directory: Path = HERE) -> str | None:
    """SHA-256 over the names and bytes of the sources (contents, not times: a checkout or a copy that keeps the
    bytes keeps the digest); None where no sources are beside the library."""
    files = source_files(directory)
    if not files:
        return None
    h = hashlib.sha256()
    for p in files:
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def library_path(directory: Path, level: str | None) -> Path:
    """The library built for `level` (None or the baseline: BASENAME.so)."""
    return directory / (f"{BASENAME}.so" if level in (None, BASELINE) else f"{BASENAME}.{level}.so")


def is_x86_64() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


def planned_builds() -> list[tuple[str | None, list[str]]]:
    """(level, flags) of each library to build: the x86-64 levels, or one library (level None) with
    KERNELCORE_CFLAGS or generic flags."""
    custom = os.environ.get("KERNELCORE_CFLAGS")
    if custom is not None:
        return [(None, shlex.split(custom))]
    if is_x86_64():
        return [(level, shlex.split(flags)) for level, flags in X86_LEVELS]
    return [(None, shlex.split(GENERIC_FLAGS))]


def _command(cc: list[str], flags: list[str], level: str | None, digest: str, sources: list[str], out: Path):
    defines = [f'-DKC_SOURCES_DIGEST="{digest}"', f'-DKC_NATIVE_LEVEL="{level or "custom"}"']
    return [*cc, *flags, *COMMON_FLAGS, *defines, "-o", str(out), *sources, "-lm"]


def compile_library(directory: Path = HERE) -> str | None:
    """Build every planned library into `directory` (the sources' own); None when built, else why not.

    The compilers run side by side, each into a temporary file renamed over the library when all succeeded (a
    process that loaded the old library keeps its mapping). A level the compiler does not know (-march=x86-64-v3
    needs GCC 11 or clang 12) is left out; the baseline failing leaves no library at all, so that an older build
    of other sources is never loaded in its place."""
    if os.environ.get("KERNELCORE_NATIVE_BUILD", "").strip().lower() == "skip":
        return "KERNELCORE_NATIVE_BUILD=skip"
    if not sys.platform.startswith("linux"):
        return f"the C kernels are built on Linux only (this is {sys.platform})"
    digest = source_digest(directory)
    if digest is None:
        return f"no C sources in {directory}"
    cc = shlex.split(os.environ.get("CC", "cc"))
    sources = [str(p) for p in source_files(directory) if p.suffix == ".c"]
    plans = planned_builds()
    jobs = []
    for level, flags in plans:
        out = library_path(directory, level)
        tmp = out.with_name(f"{out.stem}.{os.getpid()}.so.tmp")
        cmd = _command(cc, flags, level, digest, sources, tmp)
        try:
            proc = subprocess.Popen(cmd, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        except OSError as e:
            _end(jobs)
            return f"{cmd[0]} failed to run: {e}"
        jobs.append((level, out, tmp, cmd, proc))
    results = _finish(jobs)
    built = [(out, tmp) for level, out, tmp, cmd, ok, why in results if ok]
    failed = {level: (cmd, why) for level, out, tmp, cmd, ok, why in results if not ok}
    for level, out, tmp, cmd, ok, why in results:
        if not ok:
            tmp.unlink(missing_ok=True)
    baseline = plans[0][0]
    if baseline in failed:
        for out, tmp in built:
            tmp.unlink(missing_ok=True)
        _remove_libraries(directory)
        cmd, why = failed[baseline]
        return f"{' '.join(cmd)} failed: {why}"
    _remove_libraries(directory, keep={out for out, _ in built})
    # the baseline last: a loader that sees the new probe finds the new levels beside it
    for out, tmp in sorted(built, key=lambda b: b[0] == library_path(directory, baseline)):
        os.replace(tmp, out)
    return None


def _finish(jobs):
    results = []
    for level, out, tmp, cmd, proc in jobs:
        try:
            _, err = proc.communicate(timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            results.append((level, out, tmp, cmd, False, f"no result after {COMPILE_TIMEOUT_S} s"))
            continue
        why = f"exit status {proc.returncode}:\n{err.strip()[-2000:]}"
        results.append((level, out, tmp, cmd, proc.returncode == 0, why))
    return results


def _end(jobs) -> None:
    for _, _, tmp, _, proc in jobs:
        proc.kill()
        proc.communicate()
        tmp.unlink(missing_ok=True)


def _remove_libraries(directory: Path, keep: set[Path] = frozenset()) -> None:
    """Remove built libraries not in `keep`: a level left out of this build must not be loaded from an older
    one."""
    for p in directory.glob(f"{BASENAME}*.so"):
        if p not in keep:
            p.unlink(missing_ok=True)


def built_libraries(directory: Path = HERE) -> list[Path]:
    """The libraries present in `directory` (what a wheel carries)."""
    return sorted(directory.glob(f"{BASENAME}*.so"))


def main() -> int:
    why_not = compile_library(HERE)
    if why_not is not None:
        print(f"kernelcore: the C kernels were not built: {why_not}", file=sys.stderr)
        return 1
    print("kernelcore: built " + ", ".join(p.name for p in built_libraries(HERE)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
