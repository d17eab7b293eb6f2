"""Paddle's 2-layer LSTM (paddle.nn.LSTM: the fused `rnn` op) at batch 32, 50 steps, input 128, hidden 256:
kernelcore beside Paddle's own CPU executor on the same program, inference and one SGD training step.

    .venv/bin/python bench/lstm_models.py [--quick]

Paddle 3.3.1 (.venv-paddle, bench/_paddle_lstm.py) writes the programs, then serves timed windows of its Executor
(one thread, its default); kernelcore loads the same files, checks its output (inference) and loss (training step)
against Paddle's; where PyTorch is importable, its nn.LSTM with the same weights is checked too. Threads are made
equal for the kernelcore / PyTorch rows: one row per count in --threads (default 1,2), with NumPy's OpenBLAS
limited by threadpoolctl and torch.set_num_threads; Paddle's executor runs its default one thread. Every side's
runs are timed in windows of PER_WINDOW calls that alternate between kernelcore, PyTorch and Paddle, each window
after a SETTLE_S pause (PyTorch's OpenMP threads spin a while after its calls, on the same cores) and WARM_S of the
side's own untimed calls (bench/_timed_runs.py: a CPU idle for the pause needs ~50 ms of work to reach its steady
speed), so load from other processes falls on every side alike. Best and median of the calls; ratios are
kernelcore / the other, best against best. PyTorch's own LSTM step is bimodal here: at 2 threads 22-23 ms in
some processes and 35-37 ms in others (the same script, run alone), so compare its figures across runs before
reading one ratio.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits  # a dependency of kernelcore's

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import kernelcore as kc  # noqa: E402
from _op_profile import blas_kernels  # noqa: E402
from _rows import row as json_row, write as write_rows  # noqa: E402
from _paddle_server import PADDLE, PaddleServer  # noqa: E402
from _timed_runs import WARM_S, timed  # noqa: E402



PER_WINDOW = 5  # calls per timing window; windows alternate between kernelcore and PyTorch
SETTLE_S = 0.3  # before each window: the other side's OpenMP threads stop spinning




def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", default="1,2", help="thread counts for the kernelcore / PyTorch rows")
    ap.add_argument("--json", help="also write the rows (best ms of each side) to this file")
    a = ap.parse_args()
    counts = [int(t) for t in a.threads.split(",")]
    repeat = 3 if a.quick else 10
    if not PADDLE.exists():
        sys.exit(f"no Paddle venv at {PADDLE.parent.parent}: bash tests/paddle_oracle/setup_env.sh .venv-paddle 3.3.1")
    with tempfile.TemporaryDirectory(prefix="kc_lstm_") as d:
        d = Path(d)
        paddle = PaddleServer("_paddle_lstm.py", d, [])  # writes the programs, then serves timed windows
        try:
            per_count, p, diff, loss0, tr = measure(paddle, d, counts, repeat)
        finally:
            paddle.close()
    report(p, per_count, diff, loss0, tr, repeat, a.json)
    return 0


def measure(paddle, d: Path, counts, repeat):
    """Check kernelcore's output and first loss against Paddle's, then time every side's windows per thread
    count: (per_count, Paddle's description, output diff, first loss, the training npz)."""
    p = paddle.info
    prog, scope, feeds, fetches = kc.load_inference_model(d / "lstm")
    ref = np.load(d / "lstm.npz")
    x_infer = ref["x"]  # an NpzFile decodes on every access: once here, not in the timed calls
    exe = kc.Executor()
    (got,) = exe.run(prog, feed={"x": x_infer}, scope=scope)
    diff = float(np.abs(got - ref["fetch_0"]).max() / np.abs(ref["fetch_0"]).max())

    main_p = kc.load_program(d / "lstm_train.main.pb")
    tr = np.load(d / "lstm_train.npz")
    x_train = tr["x"]
    tscope = kc.Scope()
    for n in p["params"]:
        tscope.var(n).value = tr[f"init/{n}"]
    for op in main_p.global_block().ops:
        if op.type == "sgd":
            for n in op.input("LearningRate"):
                tscope.var(n).value = np.array([p["lr"]], np.float32)
    (loss0,) = exe.run(main_p, feed={"x": x_train}, fetch_list=[p["loss"]], scope=tscope, training=True)
    per_count = {}
    torch_side = torch_lstm(p, prog, scope, ref, main_p, tr)
    for n in counts:
        kc_inf, kc_train, t_inf, t_train, p_inf, p_train = [], [], [], [], [], []
        kc_calls = ((kc_inf, lambda: exe.run(prog, feed={"x": x_infer}, scope=scope)),
                    (kc_train, lambda: exe.run(main_p, feed={"x": x_train}, fetch_list=[p["loss"]],
                                               scope=tscope, training=True)))
        if torch_side is not None:
            torch_side.set_threads(n)
        with threadpool_limits(limits=n, user_api="blas"):
            for _ in range(repeat):  # windows alternate between the sides, each after a pause (SETTLE_S)
                for out, fn in kc_calls:
                    time.sleep(SETTLE_S)
                    out += timed(None, fn, PER_WINDOW, WARM_S)
                if torch_side is not None:
                    for out, fn in ((t_inf, torch_side.infer), (t_train, torch_side.step)):
                        time.sleep(SETTLE_S)
                        out += timed(None, fn, PER_WINDOW, WARM_S)
                for out, name in ((p_inf, "infer"), (p_train, "train")):
                    time.sleep(SETTLE_S)
                    out += paddle.times(name, PER_WINDOW, WARM_S)
        torch_rows = None if torch_side is None else (t_inf, t_train, torch_side.diff, torch_side.first_loss, n)
        per_count[n] = (kc_inf, kc_train, torch_rows, p_inf, p_train)
    return per_count, p, diff, loss0, tr


def report(p, per_count, diff, loss0, tr, repeat, json_path) -> None:
    """Print the rows, and write them to json_path (when given)."""
    print(f"2-layer LSTM, batch {p['B']}, {p['T']} steps, input {p['I']}, hidden {p['H']}; Paddle {p['paddle']} "
          f"legacy Executor; best (median) of {repeat} windows of {PER_WINDOW}; load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"  NumPy's BLAS: {blas_kernels()}")
    print(f"  output max|diff| / max|Paddle|: {diff:.1e}; first training loss {float(loss0):.8g} vs Paddle "
          f"{float(tr['loss']):.8g}")
    for n, (kc_inf, kc_train, torch_rows, p_inf, p_train) in per_count.items():
        print(f" {n} thread(s) for kernelcore (NumPy's BLAS, threadpoolctl) and PyTorch; Paddle its default 1:")
        for what, k, q in (("inference", kc_inf, p_inf), ("training step (SGD)", kc_train, p_train)):
            print(f"  {what:20s} kernelcore {min(k) * 1e3:8.1f} ms ({statistics.median(k) * 1e3:8.1f})   Paddle "
                  f"{min(q) * 1e3:8.1f} ms ({statistics.median(q) * 1e3:8.1f})   kernelcore / Paddle "
                  f"{min(k) / min(q):.2f}")
        if torch_rows is None:
            print("  PyTorch: not importable here; its column is skipped")
            continue
        t_inf, t_train, t_diff, t_loss, threads = torch_rows
        print(f"  PyTorch {__import__('torch').__version__} nn.LSTM with the same weights ({threads} threads): output "
              f"max|diff| / max|Paddle| {t_diff:.1e}, first loss {t_loss:.8g}")
        for what, k, q in (("inference", kc_inf, t_inf), ("training step (SGD)", kc_train, t_train)):
            print(f"  {what:20s} kernelcore {min(k) * 1e3:8.1f} ms   PyTorch {min(q) * 1e3:8.1f} ms ("
                  f"{statistics.median(q) * 1e3:8.1f})   kernelcore / PyTorch {min(k) / min(q):.2f}")
    label = f"2-layer LSTM (b{p['B']}, {p['T']} steps, hidden {p['H']})"
    write_rows(json_path, [json_row(label, what, n, k, t[i] if t else None, q)
                           for n, (kc_inf, kc_train, t, p_inf, p_train) in per_count.items()
                           for i, (what, k, q) in enumerate((("inference", kc_inf, p_inf),
                                                             ("training step", kc_train, p_train)))])


class TorchLstm:
    """PyTorch's nn.LSTM with the program's weights (Paddle's WeightList: every layer's w_ih, w_hh, then every
    layer's b_ih, b_hh; gates i, f, g, o as PyTorch's): `infer()`, and `step()`, one SGD step on mean(out)."""

    def __init__(self, torch, p, prog, scope, ref, main_p, tr):
        self.torch = torch
        self.lstm = self._build(p, [np.asarray(scope.get(n)) for n in self._weight_names(prog)])
        self.x = torch.from_numpy(ref["x"])
        with torch.no_grad():
            out = self.lstm(self.x)[0].numpy()
        self.diff = float(np.abs(out - ref["fetch_0"]).max() / np.abs(ref["fetch_0"]).max())
        self.train = self._build(p, [tr[f"init/{n}"] for n in self._weight_names(main_p)])
        self.opt = torch.optim.SGD(self.train.parameters(), lr=p["lr"])
        self.xt = torch.from_numpy(tr["x"])
        self.first_loss = self.step()  # the first step's loss, compared with Paddle's

    def _build(self, p, weights):
        L = 2
        lstm = self.torch.nn.LSTM(p["I"], p["H"], num_layers=L, batch_first=True)
        with self.torch.no_grad():
            for k in range(L):
                for name, i in ((f"weight_ih_l{k}", 2 * k), (f"weight_hh_l{k}", 2 * k + 1),
                                (f"bias_ih_l{k}", 2 * L + 2 * k), (f"bias_hh_l{k}", 2 * L + 2 * k + 1)):
                    getattr(lstm, name).copy_(self.torch.from_numpy(np.ascontiguousarray(weights[i])))
        return lstm

    @staticmethod
    def _weight_names(program):
        op = next(o for o in program.global_block().ops if o.type == "rnn")
        return op.input("WeightList")

    def set_threads(self, n: int) -> None:
        self.torch.set_num_threads(n)
        self.infer(), self.step()  # warm-up at this thread count

    def infer(self):
        with self.torch.no_grad():
            self.lstm(self.x)

    def step(self) -> float:
        self.opt.zero_grad()
        loss = self.train(self.xt)[0].mean()
        loss.backward()
        self.opt.step()
        return float(loss.detach())


def torch_lstm(p, prog, scope, ref, main_p, tr) -> TorchLstm | None:
    try:
        import torch
    except ImportError:
        return None
    return TorchLstm(torch, p, prog, scope, ref, main_p, tr)


if __name__ == "__main__":
    sys.exit(main())
