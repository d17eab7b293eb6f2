"""What the "Training health" panel costs in the kernel (kernelcore_widgets/health_comm.py): one state built and
the JSON of its push, for recordings of growing length, at the panel's default points a series and at the
most it may ask; and what a connected panel adds to a loop: the observer each cell gets (an unrecorded loop,
nothing to push) and its pushes (a recorded loop), in iterations per CPU second of this process.

    .venv/bin/python bench/health_panel.py            # 1,000, 10,000 and 100,000 iterations
    .venv/bin/python bench/health_panel.py --quick    # 1,000 and 10,000

The long recordings are bench/health_view.py's (the MLP's first iteration's rows repeated).
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "widgets"), str(ROOT / "bench")]

from _timing import measure  # noqa: E402
from health_view import recording  # noqa: E402
from test_recorder import _mlp  # noqa: E402

import kernelcore as kc  # noqa: E402
from kernelcore.observe.recorder import record  # noqa: E402
from kernelcore_widgets import health_comm as hc  # noqa: E402
from kernelcore_widgets import health_follow as hf  # noqa: E402


def state_cost(rec, points: int) -> tuple[float, int]:
    ch = hc.HealthChannel(lambda m: None, namespace=lambda: {"rec": rec})
    ch.points = points
    best, _ = measure(ch.state, repeat=3, min_s=0.05, warmup=1)
    sent: list = []
    hc.HealthChannel(sent.append, namespace=lambda: {"rec": rec}).handle({"req": 1, "type": "state",
                                                                          "points": points})
    return best, len(json.dumps(sent[0]))


# the loops' cells as the pre_run_cell hook sees them (a cell that names `record` is observed)
CELLS = {False: "for _ in range(n):\n    exe.run(main, ...)",
         True: "with kc.record(main, scope) as rec:\n    for _ in range(n): ..."}


def loop_rate(recorded: bool, panel: bool, n: int = 2000) -> float:
    """Iterations per CPU second, with a connected panel (its observer and pushes) or none."""
    main, scope, loss, feed = _mlp()
    exe = kc.Executor()
    ns: dict = {}
    channels = {hc.HealthChannel(lambda m: None, namespace=lambda: ns)} if panel else set()
    saved, hf.channels = hf.channels, channels
    follower = hf.Follower()
    try:
        follower.cell_starts(SimpleNamespace(raw_cell=CELLS[recorded]))
        t0 = time.process_time()
        if recorded:
            with record(main, scope, nan=False) as ns["rec"]:
                for _ in range(n):
                    exe.run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
        else:
            for _ in range(n):
                exe.run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
        dt = time.process_time() - t0
        follower.cell_ended()
    finally:
        hf.channels = saved
    return n / dt


def main(argv: list[str]) -> None:
    sizes = (1_000, 10_000) if "--quick" in argv else (1_000, 10_000, 100_000)
    print(f"{'iterations':>10} {'rows':>9} {'points':>7} {'state s':>9} {'message KiB':>12}")
    for n in sizes:
        rec, _loss = recording(n)
        for points in (hc.DEFAULT_POINTS, hc.MAX_POINTS_PER_SERIES):
            best, size = state_cost(rec, points)
            print(f"{n:>10} {len(rec.summaries):>9} {points:>7} {best:>9.4f} {size / 1024:>12.1f}")
    for recorded in (False, True):
        alone = with_panel = 0.0
        for _ in range(3):  # interleaved, best of three each
            alone = max(alone, loop_rate(recorded, False))
            with_panel = max(with_panel, loop_rate(recorded, True))
        what = "recorded" if recorded else "unrecorded"
        print(f"{what} MLP loop: {alone:.0f} it/s, with a panel connected: {with_panel:.0f} it/s "
              f"({100 * (alone - with_panel) / alone:+.1f}% slower)")


if __name__ == "__main__":
    main(sys.argv[1:])
