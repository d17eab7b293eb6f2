"""What running Paddle's fused rnn op timestep by timestep costs, as ratios measured in one run.

    python bench/rnn_fused.py [--quick]

For a one-layer LSTM (T=100) at two sizes it prints the time per timestep of: (a) a bare NumPy loop doing the
same math (one input GEMM, then the cell per step, no scopes); (b) kernelcore's rnn op, untraced (a step scope,
its bound values and its events per timestep); (c) the same under kc.trace() (shapes); (d) a debug session run
to the end (pausing machinery on, values kept by reference). Ratios are to (a), taken interleaved
(bench/_timing.py) so load that comes and goes skews them less. The machine's load is printed: on a shared
machine, quote the ratios, not the microseconds.
"""
import argparse
import os
import platform
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import measure_interleaved  # noqa: E402

import kernelcore as kc  # noqa: E402
from kernelcore.native.rnn import FAST as STEPS  # noqa: E402  - the rnn op's fast variant's steps
from kernelcore.ops.rnn import cell_forward  # noqa: E402


def build(T, B, I, H):
    rng = np.random.default_rng(0)
    f32 = lambda *s: (rng.standard_normal(s) * 0.2).astype(np.float32)  # noqa: E731
    feed = {"x": f32(T, B, I), "h0": f32(1, B, H), "c0": f32(1, B, H), "w_ih": f32(4 * H, I),
            "w_hh": f32(4 * H, H), "b_ih": f32(4 * H), "b_hh": f32(4 * H)}
    prog = kc.Program()
    blk = prog.global_block()
    for name, v in feed.items():
        blk.create_var(name, list(v.shape))
    blk.append_op("rnn", {"Input": ["x"], "PreState": ["h0", "c0"], "WeightList": ["w_ih", "w_hh", "b_ih", "b_hh"]},
                  {"Out": ["out"], "State": ["h_n", "c_n"], "Reserve": ["reserve"], "DropoutState": ["drop"]},
                  {"mode": "LSTM", "num_layers": 1, "hidden_size": H, "input_size": I, "is_test": True})
    return prog, feed


def bare(feed):
    x = feed["x"]
    T, B, I = x.shape
    xp = (x.reshape(T * B, I) @ feed["w_ih"].T + (feed["b_ih"] + feed["b_hh"])).reshape(T, B, -1)
    h, c = feed["h0"][0], feed["c0"][0]
    out = np.empty((T, B, h.shape[1]), np.float32)
    w_hh_t = STEPS.recurrent_weight(np, feed["w_hh"], 4)  # as the rnn op packs it: the same step kernel
    for t in range(T):
        _, h, c = cell_forward(np, "LSTM", xp[t], h, c, w_hh_t, feed["b_hh"], steps=STEPS)
        out[t] = h
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    repeat, min_s = (3, 0.01) if args.quick else (15, 0.05)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"versions: numpy {np.__version__}, python {platform.python_version()}")
    T = 100
    for B, I, H in ((1, 8, 8), (32, 64, 128)):
        prog, feed = build(T, B, I, H)
        exe = kc.Executor()
        scope = kc.Scope()
        got = exe.run(prog, feed=feed, fetch_list=["out"], scope=scope)[0]
        np.testing.assert_allclose(got, bare(feed), rtol=1e-5, atol=1e-6)

        def run():
            exe.run(prog, feed=feed, fetch_list=["out"], scope=scope)

        def traced():
            with kc.trace():
                run()

        def debugged():
            kc.debug(prog, feed=feed, fetch_list=["out"], scope=kc.Scope()).run_to_end()

        rows = measure_interleaved([lambda: bare(feed), run, traced, debugged], repeat=repeat, min_s=min_s)
        base = rows[0][1]
        print(f"\nLSTM, T={T}, batch {B}, input {I}, hidden {H}: median µs per timestep (ratio to NumPy)")
        for name, (_, med) in zip(("(a) NumPy loop, no scopes", "(b) kernelcore rnn op, untraced",
                                   "(c) kc.trace() (shapes)", "(d) kc.debug(...).run_to_end()"), rows):
            print(f"  {name:34s} {med / T * 1e6:9.1f} µs   {med / base:5.2f}x")


if __name__ == "__main__":
    main()
