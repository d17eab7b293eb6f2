"""Per-op-type kernel time from traces, and what the machine runs (load, BLAS kernels), shared by the model
benchmarks (bench/models.py, bench/cnn_train.py, bench/lstm_models.py)."""
from __future__ import annotations

import os
from collections import defaultdict

import kernelcore as kc


def op_type_times(run_once, runs: int, before=None) -> list[tuple[str, float, int]]:
    """(op type, ms, ops of that type): each op's best time over `runs` traced calls of `run_once()` (each after an
    untraced `before()`), summed by type, largest first (on a shared machine a single run's per-op times mostly
    measure the other processes)."""
    best, types = {}, {}
    for _ in range(runs):
        if before is not None:
            before()
        with kc.trace(retain="none") as tr:
            run_once()
        for ev in tr.events:
            if ev.kind == "op_run" and ev.dur_ns is not None:
                best[ev.op] = min(best.get(ev.op, ev.dur_ns), ev.dur_ns)
                types[ev.op] = ev.op_type
    per = defaultdict(lambda: [0.0, 0])
    for op, ns in best.items():
        per[types[op]][0] += ns / 1e6
        per[types[op]][1] += 1
    return sorted(((t, ms, n) for t, (ms, n) in per.items()), key=lambda r: -r[1])


def load_avg() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "?"


def blas_kernels() -> str:
    """NumPy's BLAS and the kernels it picked (AVX2 or AVX-512 ones, or what OPENBLAS_CORETYPE told it)."""
    from kernelcore.runtime_env import blas_libraries
    found = [f"{b['name']} {b['version']} ({b['kernels'] or '?'} kernels)" for b in blas_libraries()]
    coretype = os.environ.get("OPENBLAS_CORETYPE")
    return (", ".join(found) or "?") + (f"; OPENBLAS_CORETYPE={coretype} in the environment" if coretype else "")
