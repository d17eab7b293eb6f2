"""Paddle's 2-layer LSTM (paddle.nn.LSTM: the fused `rnn` op) at batch 32, 50 steps, input 128, hidden 256:
kernelcore beside Paddle's own CPU executor on the same program, inference and one SGD training step.

    .venv/bin/python bench/lstm_models.py [--quick]

Paddle 3.3.1 (.venv-paddle, bench/_paddle_lstm.py) writes the programs and times its Executor (one thread, its
default); kernelcore then loads the same files, checks its output (inference) and loss (training step) against
Paddle's, and times itself. Best and median of the repeats; ratios are kernelcore / Paddle.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import kernelcore as kc  # noqa: E402

PADDLE = ROOT / ".venv-paddle" / "bin" / "python"


def timed(fn, repeat: int) -> list[float]:
    fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    repeat = 3 if a.quick else 10
    if not PADDLE.exists():
        sys.exit(f"no Paddle venv at {PADDLE.parent.parent}: bash tests/paddle_oracle/setup_env.sh .venv-paddle 3.3.1")
    with tempfile.TemporaryDirectory(prefix="kc_lstm_") as d:
        r = subprocess.run([str(PADDLE), str(ROOT / "bench" / "_paddle_lstm.py"), d, str(repeat)], capture_output=True,
                           text=True, env=dict(os.environ, FLAGS_enable_pir_api="0", GLOG_minloglevel="2"))
        if r.returncode != 0:
            sys.exit(f"Paddle failed:\n{r.stderr[-2000:]}")
        p = json.loads(r.stdout.strip().splitlines()[-1])
        d = Path(d)
        prog, scope, feeds, fetches = kc.load_inference_model(d / "lstm")
        ref = np.load(d / "lstm.npz")
        exe = kc.Executor()
        (got,) = exe.run(prog, feed={"x": ref["x"]}, scope=scope)
        diff = float(np.abs(got - ref["fetch_0"]).max() / np.abs(ref["fetch_0"]).max())
        kc_inf = timed(lambda: exe.run(prog, feed={"x": ref["x"]}, scope=scope), repeat)

        main_p = kc.load_program(d / "lstm_train.main.pb")
        tr = np.load(d / "lstm_train.npz")
        tscope = kc.Scope()
        for n in p["params"]:
            tscope.var(n).value = tr[f"init/{n}"]
        for op in main_p.global_block().ops:
            if op.type == "sgd":
                for n in op.input("LearningRate"):
                    tscope.var(n).value = np.array([p["lr"]], np.float32)
        (loss0,) = exe.run(main_p, feed={"x": tr["x"]}, fetch_list=[p["loss"]], scope=tscope, training=True)
        kc_train = timed(lambda: exe.run(main_p, feed={"x": tr["x"]}, fetch_list=[p["loss"]], scope=tscope,
                                         training=True), repeat)
    print(f"2-layer LSTM, batch {p['B']}, {p['T']} steps, input {p['I']}, hidden {p['H']}; Paddle {p['paddle']} "
          f"legacy Executor; best (median) of {repeat}; load average {os.getloadavg()[0]:.2f}")
    print(f"  output max|diff| / max|Paddle|: {diff:.1e}; first training loss {float(loss0):.8g} vs Paddle "
          f"{float(tr['loss']):.8g}")
    for what, k, q in (("inference", kc_inf, p["infer_s"]), ("training step (SGD)", kc_train, p["train_s"])):
        print(f"  {what:20s} kernelcore {min(k) * 1e3:8.1f} ms ({statistics.median(k) * 1e3:8.1f})   Paddle "
              f"{min(q) * 1e3:8.1f} ms ({statistics.median(q) * 1e3:8.1f})   kernelcore / Paddle {min(k) / min(q):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
