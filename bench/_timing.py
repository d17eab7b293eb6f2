"""Timing shared by the benchmark scripts (stdlib only: the Paddle script imports it from Paddle's venv).

timeit-style: warm up, pick a loop count so one repeat lasts at least `min_s`, then time
`repeat` repeats and report the best and the median seconds per call. Unlike timeit, the
garbage collector stays on: a user's program runs with it on, and tracing allocates.
"""
from __future__ import annotations

import statistics
import time


def measure(fn, *, repeat: int = 7, min_s: float = 0.2, warmup: int = 3) -> tuple[float, float]:
    """(best, median) seconds per call of `fn()`."""
    for _ in range(warmup):
        fn()
    number = 1
    while True:  # calibrate, like timeit.Timer.autorange
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_s / 4:
            break
        number *= 4 if dt < min_s / 40 else 2
    number = max(1, int(number * min_s / max(dt, 1e-9)))
    per_call = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        per_call.append((time.perf_counter() - t0) / number)
    return min(per_call), statistics.median(per_call)


def measure_interleaved(fns, *, repeat: int = 21, min_s: float = 0.02, warmup: int = 3) -> list[tuple[float, float]]:
    """(best, median) seconds per call of each of `fns`, their repeats taken in turn (a, b, a, b, ...)
    so that a ratio between them is not skewed by load that came and went between them."""
    counts = []
    for fn in fns:
        for _ in range(warmup):
            fn()
        number = 1
        while True:
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            dt = time.perf_counter() - t0
            if dt >= min_s / 4:
                break
            number *= 4 if dt < min_s / 40 else 2
        counts.append(max(1, int(number * min_s / max(dt, 1e-9))))
    per_call = [[] for _ in fns]
    for _ in range(repeat):
        for fn, number, out in zip(fns, counts, per_call):
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            out.append((time.perf_counter() - t0) / number)
    return [(min(p), statistics.median(p)) for p in per_call]
