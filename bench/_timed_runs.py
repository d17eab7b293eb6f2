"""Timing loops shared by every side of the model benchmarks: kernelcore's in the bench's process, and the timing
servers that run in Paddle's venvs (bench/_paddle_models.py, _paddle_train.py, _paddle_transformer.py). Standard
library only, so that any venv can import it."""
from __future__ import annotations

import json
import sys
import time


# after a pause each side first runs untimed this long: a CPU left idle for SETTLE_S took ~50 ms of work to reach
# its steady speed again (kernelcore's BERT-style training step, two threads: 12.5 ms best right after a 0.3 s
# pause, 10.3 after 20 ms of warm-up, 9.3 after 50, 100 or 200), and a window of a few short calls timed from cold
# measured that ramp instead of the step
WARM_S = 0.1


def warm_up(reset, run, seconds: float) -> None:
    """Untimed calls of run() (each after reset(), None: none) for `seconds`, at least one."""
    until = time.perf_counter() + seconds
    while True:
        if reset is not None:
            reset()
        run()
        if time.perf_counter() >= until:
            break


def timed(reset, run, count: int, warm_s: float = 0.0) -> list[float]:
    """The seconds of `count` calls of run(), each after an untimed reset() (None: none); with warm_s, first
    untimed calls (at least one) for that long."""
    if warm_s > 0:
        warm_up(reset, run, warm_s)
    out = []
    for _ in range(count):
        if reset is not None:
            reset()
        t0 = time.perf_counter()
        run()
        out.append(time.perf_counter() - t0)
    return out


def serve(runs: dict) -> None:
    """Answer requests from stdin, one per line: "NAME COUNT [WARM_S]" times COUNT calls of runs[NAME] = (reset or
    None, run), after WARM_S seconds of untimed calls, and prints a JSON list of their seconds; an empty line or
    EOF ends it."""
    for line in sys.stdin:
        if not line.strip():
            break
        name, count, *warm = line.split()
        reset, run = runs[name]
        print(json.dumps(timed(reset, run, int(count), float(warm[0]) if warm else 0.0)), flush=True)
