"""The cost of tracing and of debug stepping on a 100-step RNN (and a 60-step LSTM), as ratios to an
untraced run.

    python bench/rnn_debug_cost.py [--quick]

One run prints: an untraced run; runs traced with each retention policy; a debug session
run to the end (pausing machinery on, no breakpoints); a session stepped op by op; and a
session stepped timestep by timestep. Ratios are to the untraced run in the same process.
"""
import argparse
import os
import platform
import time

import numpy as np

import kernelcore as kc


def build(T, B, D, H):
    prog = kc.Program()
    with kc.program_guard(prog):
        g = prog.global_block()
        x = g.create_var("x", [T, B, D])
        h0 = g.create_var("h0", [B, H])
        w = g.create_parameter("w", [D, H])
        u = g.create_parameter("u", [H, H])
        rnn = kc.layers.StaticRNN()
        with rnn.step():
            x_t = rnn.step_input(x)
            h = rnn.memory(init=h0)
            h_new = kc.op.tanh(kc.op.elementwise_add(kc.op.matmul_v2(x_t, w), kc.op.matmul_v2(h, u)))
            rnn.update_memory(h, h_new)
            rnn.step_output(h_new)
        out = rnn()
    rng = np.random.default_rng(0)
    scope = kc.Scope()
    scope.set("w", rng.standard_normal((D, H)).astype(np.float32) * 0.1)
    scope.set("u", rng.standard_normal((H, H)).astype(np.float32) * 0.1)
    feed = {"x": rng.standard_normal((T, B, D)).astype(np.float32), "h0": np.zeros((B, H), np.float32)}
    return prog, scope, feed, out


def build_lstm(T=60, B=16, D=64, H=64):
    """kc.layers.lstm over a time-major [T, B, D] input (batch 16, hidden 64), parameters initialised by
    its startup program."""
    prog, startup = kc.Program(), kc.Program()
    with kc.program_guard(prog, startup):
        x = prog.global_block().create_var("x", [T, B, D])
        out = kc.layers.lstm(x, H, name="lstm")
    scope = kc.Scope()
    kc.Executor().run(startup, scope=scope)
    feed = {"x": np.random.default_rng(0).standard_normal((T, B, D)).astype(np.float32)}
    return prog, scope, feed, out


def best_in_turn(rows, repeat):
    """Best time of each (name, fn), the rows timed in turn (row 1, row 2, ..., row 1, ...) so that a burst
    of load from other processes falls on all of them alike instead of on whichever ran then."""
    for _, fn in rows:
        fn()
    times = {name: [] for name, _ in rows}
    for _ in range(repeat):
        for name, fn in rows:
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return [(name, min(times[name])) for name, _ in rows]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--steps", type=int, default=100)
    args = ap.parse_args()
    T, B, D, H = args.steps, 32, 64, 128
    repeat = 2 if args.quick else 15
    prog, scope, feed, out = build(T, B, D, H)
    exe = kc.Executor()
    print(f"kernelcore {kc.__version__}, numpy {np.__version__}, Python {platform.python_version()}, "
          f"{platform.machine()}; 1-min load average {os.getloadavg()[0]:.2f} at start")
    print(f"simple RNN: T={T} steps, batch {B}, input {D}, hidden {H}; best of {repeat}, the rows timed in turn\n")

    def untraced():
        exe.run(prog, feed, [out], scope)

    def traced_with(retain):
        def traced():
            with kc.trace(retain):
                exe.run(prog, feed, [out], scope)
        return traced

    def step_ops():
        s = kc.debug(prog, feed, [out], scope)
        while not s.finished:
            s.step()

    def step_t():
        s = kc.debug(prog, feed, [out], scope)
        while not s.finished:
            s.step_timestep()

    rows = best_in_turn([("untraced run", untraced)]
                        + [(f"traced, retain={r}", traced_with(r)) for r in ("none", "shapes", "references")]
                        + [("debug session, run to end", lambda: kc.debug(prog, feed, [out], scope).run_to_end()),
                           ("debug session, step() per op", step_ops),
                           ("debug session, step_timestep()", step_t)], repeat)
    base = rows[0][1]
    print(f"{'what':34} {'ms':>9} {'ratio':>7}")
    for name, t in rows:
        print(f"{name:34} {t * 1e3:9.3f} {t / base:7.2f}")
    n_ops = T * 4 + 1
    s = kc.debug(prog, feed, [out], scope)
    n = 0
    while not s.finished:
        s.step()
        n += 1
    per = dict(rows)["debug session, step() per op"] / n  # the best of the in-turn runs, per step
    print(f"\none debug step (one op run, position and breakpoints checked): {per * 1e6:.1f} µs "
          f"over {n} steps (~{n_ops} ops)")

    lprog, lscope, lfeed, lout = build_lstm()

    def ltraced():
        with kc.trace():
            exe.run(lprog, lfeed, [lout], lscope)
    (_, lbase), (_, lt) = best_in_turn([("untraced", lambda: exe.run(lprog, lfeed, [lout], lscope)),
                                        ("traced", ltraced)], repeat)
    print(f"\nLSTM (kc.layers.lstm): T=60 steps, batch 16, input 64, hidden 64; best of {repeat}")
    print(f"{'untraced run':34} {lbase * 1e3:9.3f} {1:7.2f}")
    print(f"{'traced, default retention':34} {lt * 1e3:9.3f} {lt / lbase:7.2f}")


if __name__ == "__main__":
    main()
