"""What the training-health view costs: HealthView.refresh (the recorder's columns read, every op's series
reduced, one page of sparklines downsampled) and the JSON it sends, for recordings of growing length; and what
`view.follow()` adds to a recorded training loop (redraws at most every MIN_REDRAW_S seconds), in iterations per CPU second of this process.

    .venv/bin/python bench/health_view.py            # 1,000, 10,000 and 100,000 iterations
    .venv/bin/python bench/health_view.py --quick    # 1,000 and 10,000

The long recordings are the MLP's first iteration's rows repeated (the table's own append, as the recorder calls
it), with one spike, so the figures are the view's and not the training's.
"""
from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "widgets"), str(ROOT / "bench")]

from _timing import measure  # noqa: E402
from test_recorder import _mlp  # noqa: E402

import kernelcore as kc  # noqa: E402
from kernelcore.observe.recorder import record  # noqa: E402
from kernelcore_widgets import HealthView  # noqa: E402


def recording(iterations: int):
    main, scope, loss, feed = _mlp()
    with record(main, scope, keep_last=0) as rec:
        kc.Executor().run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
    table = rec.summaries
    cols = table.columns()
    rows = table.rows()
    for it in range(1, iterations):
        for r in range(len(rows)):
            s = (int(cols["numel"][r]), 0, 0, 0, 0, 0, 0, 0.0, 1.0, 0.5, 1e6 if it == iterations // 2 else 1.0 + it)
            table.append(it, int(rows["order"][r]), int(rows["site"][r]), s)
    return rec, loss


def loop_rate(follow: bool, n: int = 2000) -> float:
    """Iterations per CPU second of this process (the machine may be shared: wall time would count others)."""
    main, scope, loss, feed = _mlp()
    exe = kc.Executor()
    with record(main, scope, nan=False) as rec:
        view = HealthView(rec, loss=loss.name)
        t0 = time.process_time()
        with view.follow() if follow else contextlib.nullcontext():
            for _ in range(n):
                exe.run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
        dt = time.process_time() - t0
    view.close()
    return n / dt


def main(argv: list[str]) -> None:
    sizes = (1_000, 10_000) if "--quick" in argv else (1_000, 10_000, 100_000)
    print(f"{'iterations':>10} {'rows':>9} {'refresh s':>10} {'payload KiB':>12} {'max points/op':>14}")
    for n in sizes:
        rec, loss = recording(n)
        view = HealthView(rec, loss=loss.name)
        best, _ = measure(view.refresh, repeat=3, min_s=0.05, warmup=1)
        payload = json.dumps({"ops": view.ops, "loss": view.loss, "grads": view.grads, "overview": view.overview})
        points = max(len(r["points"]) for r in view.ops)
        print(f"{n:>10} {len(rec.summaries):>9} {best:>10.4f} {len(payload) / 1024:>12.1f} {points:>14}")
        view.close()
    plain = followed = 0.0
    for _ in range(3):  # interleaved, best of three each
        plain, followed = max(plain, loop_rate(False)), max(followed, loop_rate(True))
    print(f"recorded MLP loop: {plain:.0f} it/s, with view.follow(): {followed:.0f} it/s "
          f"({100 * (plain - followed) / plain:+.1f}% slower)")


if __name__ == "__main__":
    main(sys.argv[1:])
