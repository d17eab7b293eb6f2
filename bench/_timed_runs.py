"""Timing loops shared by every side of the model benchmarks: kernelcore's in the bench's process, and the timing
servers that run in Paddle's venvs (bench/_paddle_models.py, _paddle_train.py, _paddle_transformer.py). Standard
library only, so that any venv can import it."""
from __future__ import annotations

import json
import sys
import time


def timed(reset, run, count: int) -> list[float]:
    """The seconds of `count` calls of run(), each after an untimed reset() (None: none)."""
    out = []
    for _ in range(count):
        if reset is not None:
            reset()
        t0 = time.perf_counter()
        run()
        out.append(time.perf_counter() - t0)
    return out


def serve(runs: dict) -> None:
    """Answer requests from stdin, one per line: "NAME COUNT" times COUNT calls of runs[NAME] = (reset or None,
    run) and prints a JSON list of their seconds; an empty line or EOF ends it."""
    for line in sys.stdin:
        if not line.strip():
            break
        name, count = line.split()
        reset, run = runs[name]
        print(json.dumps(timed(reset, run, int(count))), flush=True)
