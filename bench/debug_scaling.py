"""How the debugging functions scale with the record: the Chrome export, a stepper's timesteps and provenance.

    .venv/bin/python bench/debug_scaling.py            # 10^5 and 10^6 events, ~1 min
    .venv/bin/python bench/debug_scaling.py --quick    # 10^4 and 10^5 events

Each figure is one timed call on synthetic events (kernelcore.runtime.events.Event), best of --repeat:
- export: `to_trace_events` (what Trace.to_chrome / save_chrome build) on two shapes of trace, an RNN
  (a step scope per timestep under the run's scope) and a deep one (each iteration's scope a kid of the
  previous, as nested control flow makes them); beside it `json.dumps` of the same events' JSON form, the
  floor any export pays, and the ratio of the two;
- timesteps: one stepper refresh (`RecordedRun.timesteps` of the loop op, at the last event) on the RNN
  trace, first call (index built) and a later call after 1% more events (timesteps) arrived;
- provenance: `sess.provenance(last, depth=6)` on a 48-op graph where every value feeds the next four ops (the
  sidebar's depth), its time and the bytes of its JSON.
Run it under another checkout (PYTHONPATH=...) to compare two versions.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

import kernelcore as kc
from kernelcore.observe.debug import RecordedRun
from kernelcore.runtime.events import Event
from kernelcore.observe.perfetto import to_trace_events


def rnn_events(n: int) -> list:
    """~n events: per timestep a step scope under scope 1, a matmul reading the parameter w and the previous
    step's h, a tanh writing h."""
    evs = [Event(0, "run_begin", 0, scope=1)]
    t = 0
    while len(evs) < n:
        sc = 10 + t
        io = lambda *names: tuple(("X", nm, (4, 8), "float32") for nm in names)  # noqa: E731
        evs += [Event(len(evs), "scope_push", 10 * len(evs), scope=sc, parent_scope=1, block=0, op=0, timestep=t,
                      op_type="recurrent", message="recurrent step"),
                Event(len(evs) + 1, "step_begin", 10 * len(evs) + 1, scope=sc, block=0, op=0, timestep=t),
                Event(len(evs) + 2, "op_run", 10 * len(evs) + 5, scope=sc, block=1, op=0, op_type="matmul",
                      dur_ns=3, inputs=io("w", "h"), outputs=io("m"), timestep=t),
                Event(len(evs) + 3, "op_run", 10 * len(evs) + 8, scope=sc, block=1, op=1, op_type="tanh", dur_ns=2,
                      inputs=io("m"), outputs=io("h"), timestep=t),
                Event(len(evs) + 4, "step_end", 10 * len(evs) + 9, scope=sc, block=0, op=0, timestep=t)]
        t += 1
    return evs


def deep_events(n: int) -> list:
    """~n events: each iteration's scope a kid of the previous one; each op reads w (written once, at the top)
    and x (written by the previous iteration)."""
    io = lambda *names: tuple(("X", nm, (4,), "float32") for nm in names)  # noqa: E731
    evs = [Event(0, "scope_push", 0, scope=1, parent_scope=None),
           Event(1, "op_run", 5, scope=1, block=0, op=0, op_type="fill", dur_ns=1, outputs=io("w", "x"))]
    sc = 1
    while len(evs) < n:
        evs += [Event(len(evs), "scope_push", 10 * len(evs), scope=sc + 1, parent_scope=sc),
                Event(len(evs) + 1, "op_run", 10 * len(evs) + 5, scope=sc + 1, block=1, op=0, op_type="scale",
                      dur_ns=2, inputs=io("w", "x", "b"), outputs=io("x"))]
        sc += 1
    return evs


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


class FakeTrace:
    def __init__(self, events):
        self.events = events


def fib_session():
    p = kc.Program()
    b = p.global_block()
    b.create_var("x", [2])
    b.append_op("scale", {"X": ["x"]}, {"Out": ["a1"]}, {"scale": 2.0})
    names = ["x", "a1"]
    for k in range(2, 49):  # every value feeds the next four ops
        b.append_op("sum", {"X": names[-4:]}, {"Out": [f"a{k}"]})
        names.append(f"a{k}")
    s = kc.debug(p, feed={"x": np.ones(2, np.float32)}, scope=kc.Scope())
    s.run_to_end()
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", type=int, nargs="*", help="event counts (default 10^5 10^6; quick 10^4 10^5)")
    ap.add_argument("--skip-deep-above", type=int, default=None,
                    help="skip the deep-scope export above this many events (an old version may take minutes)")
    args = ap.parse_args()
    sizes = args.sizes or ([10**4, 10**5] if args.quick else [10**5, 10**6])
    print(f"{'case':34} {'events':>9} {'export s':>9} {'dumps s':>8} {'ratio':>6}")
    for n in sizes:
        for label, make in (("export, rnn trace", rnn_events), ("export, deep scopes", deep_events)):
            if make is deep_events and args.skip_deep_above and n > args.skip_deep_above:
                print(f"{label:34} {n:>9}   skipped")
                continue
            evs = make(n)
            base = best(lambda: json.dumps([e.to_json() for e in evs]), args.repeat)
            t = best(lambda: to_trace_events(evs), args.repeat)
            print(f"{label:34} {len(evs):>9} {t:>9.3f} {base:>8.3f} {t / base:>6.2f}")
    for n in sizes[:1]:
        evs = rnn_events(n)
        rec = RecordedRun(FakeTrace(evs), [(1, {}, {})], 1)
        t0 = time.perf_counter()
        steps = rec.timesteps(0, 0)
        first = time.perf_counter() - t0
        t_next = steps[-1].t + 1
        for t in range(t_next, t_next + n // 100):  # more timesteps arrive: the stepper refreshes
            for kind in ("step_begin", "step_end"):
                evs.append(Event(len(evs), kind, len(evs), scope=10 + t, block=0, op=0, timestep=t))
        later = best(lambda: rec.timesteps(0, 0), args.repeat)
        print(f"timesteps, a stepper refresh       {n:>9} first {first:.3f} s, later {later:.4f} s "
              f"({len(steps)} timesteps)")
    s = fib_session()
    t = best(lambda: s.provenance("a48", depth=6), args.repeat)
    size = len(json.dumps(s.provenance("a48", depth=6).to_json()))
    print(f"provenance, 48 shared ops, depth 6  {t:.4f} s, {size} bytes of JSON")


if __name__ == "__main__":
    main()
