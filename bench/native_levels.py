"""The C kernels' libraries against each other on ResNet-18 and MobileNetV2 inference, in one process.

    .venv/bin/python bench/native_levels.py --dir DIR                      # every x86-64 level this CPU runs
    .venv/bin/python bench/native_levels.py --dir DIR --against OLD.so     # and a library built elsewhere

kernelcore/native/build.py builds the library once per x86-64 level (baseline, AVX2, AVX-512) and the loader takes
the highest the CPU runs. This times the same models with each level's library swapped in turn under the same
executor (and, with --against, a library built another way, e.g. `-O3 -march=native` from an older checkout: its
kernels must have this checkout's signatures), windows alternating so that the machine's load falls on all alike,
and says which give other output bits than the first (the baseline level, which does not fuse multiply-adds).
DIR holds the models bench/models.py writes (resnet18_b8, mobilenet_v2_b8: run it once with --dir DIR). Figures:
each library's best run, and its ratio to the first library's.
"""
from __future__ import annotations

import argparse
import ctypes
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import kernelcore as kc  # noqa: E402
from kernelcore import native  # noqa: E402

MODELS = ("resnet18_b8", "mobilenet_v2_b8")
WARM_RUNS, TIMED_RUNS = 2, 3  # per window and library


def libraries(against: str | None) -> dict[str, ctypes.CDLL]:
    """Label -> library: the one given with --against first, then every level built here that this CPU runs."""
    found = {}
    if against:
        lib = ctypes.CDLL(against)
        for name, (restype, argtypes) in native.SIGNATURES.items():
            if hasattr(lib, name):
                fn = getattr(lib, name)
                fn.argtypes, fn.restype = argtypes, restype
        found[Path(against).name] = lib
    for level in native.LEVELS.values():
        lib, state, _ = native.open_library(native.LIBRARY.parent, level)
        if lib is not None and lib.kc_native_level().decode() == level:
            found[level] = lib
    return found


def best_runs(exe, prog, scope, feed, libs, windows: int):
    """Each library's best run (s) and last output, windows alternating between the libraries."""
    best = dict.fromkeys(libs, float("inf"))
    outs = {}
    for _ in range(windows):
        for label, lib in libs.items():
            native._lib = lib
            for _ in range(WARM_RUNS):
                exe.run(prog, feed=feed, scope=scope)
            for _ in range(TIMED_RUNS):
                start = time.perf_counter()
                (out,) = exe.run(prog, feed=feed, scope=scope)
                best[label] = min(best[label], time.perf_counter() - start)
            outs[label] = np.array(out)
    return best, outs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True, help="where bench/models.py wrote the models")
    ap.add_argument("--against", help="another build of the library to time first")
    ap.add_argument("--windows", type=int, default=12)
    ap.add_argument("--threads", default="1,2")
    args = ap.parse_args()
    if native.library() is None:
        print(f"no C kernels here: {native.native_state()}")
        return 1
    chosen = native.library()
    libs = libraries(args.against)
    print(f"libraries: {', '.join(libs)}; the loader's pick here: {chosen.kc_native_level().decode()}")
    try:
        for name in MODELS:
            prog, scope, feeds, _ = kc.load_inference_model(Path(args.dir) / name)
            ref = np.load(Path(args.dir) / f"{name}.npz")
            feed = {n: ref[n] for n in feeds}
            exe = kc.Executor(kc.CPUPlace())
            for threads in (int(t) for t in args.threads.split(",")):
                with threadpool_limits(threads):
                    best, outs = best_runs(exe, prog, scope, feed, libs, args.windows)
                first = next(iter(libs))
                print(f"{name:16s} {threads} thread(s): " + ", ".join(
                    f"{label} {t * 1e3:.2f} ms ({t / best[first]:.3f}"
                    f"{'' if np.array_equal(outs[label], outs[first]) else ', other bits'})"
                    for label, t in best.items()), flush=True)
    finally:
        native._lib = chosen
    return 0


if __name__ == "__main__":
    sys.exit(main())
