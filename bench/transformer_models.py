"""A BERT-style encoder (batch 8, sequence 128, d_model 32, 4 heads, 2 layers): inference and one training step
(Adam), kernelcore beside PyTorch and Paddle 2.6.2's static Executor, on the programs Paddle wrote.

    .venv/bin/python bench/transformer_models.py                 # ~70 s
    .venv/bin/python bench/transformer_models.py --quick         # ~15 s smoke run: fewer windows, rough figures
    .venv/bin/python bench/transformer_models.py --profile       # plus kernelcore's training-step time per op type

Paddle 2.6.2 (.venv-paddle2, required: Paddle 3.x's legacy IR cannot build paddle.nn.Transformer*) writes, through
bench/_paddle_transformer.py, tests/paddle_oracle/make_transformer_models.py's `bert_encoder` (save_inference_model:
encoder states and tanh-pooled first token) and `train_bert_adam` (the same `Bert` with every dropout 0, a Linear
classifier on the pooled output, cross entropy, Adam(1e-3) minimize; its initial persistables and Paddle's loss and
updated persistables after one step) at the asked size.

Inference: kernelcore's Executor.run of the saved program; PyTorch's port (bench/_torch_bert.py: nn.Embedding,
nn.LayerNorm, nn.Linear, exact GELU, F.scaled_dot_product_attention with the additive padding mask; weights mapped
from the program's ops) under torch.inference_mode; Paddle's Executor.run of the same program loaded back.
One training step, from the initial persistables (every side restores them untimed before each timed step, so all
compute the same step): kernelcore's Executor.run(main, training=True) of the Paddle-written program; PyTorch's
zero_grad + forward + cross_entropy + backward + Adam.step() (lr, betas, epsilon from the program's adam ops) +
loss.item(); Paddle's Executor.run of the program. Before timing, kernelcore's outputs, loss and every updated
persistable are checked against Paddle's (rtol 1e-4), and the PyTorch port's outputs (1e-4), loss (1e-4) and two
updated parameters (1e-3) too; without torch the PyTorch columns print "-".

Threads, made equal per row (1 and 2): kernelcore's NumPy BLAS through threadpoolctl, torch.set_num_threads,
Paddle's server started with FLAGS_paddle_num_threads / OMP_NUM_THREADS / MKL_NUM_THREADS. Windows (INFER_PER_WINDOW
runs, TRAIN_PER_WINDOW steps) alternate between the three sides, each after a SETTLE_S pause (the other sides'
OpenMP threads stop spinning: bench/cnn_train.py says why) and WARM_S of the side's own untimed runs (the CPU back
at its steady speed), and the best run of each is compared, the median beside it: the machine is shared, and the
best runs are those other processes left alone. Ratios: kernelcore / the other, best runs.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits  # a dependency of kernelcore's

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]
from _op_profile import blas_kernels, load_avg, op_type_times  # noqa: E402
from _kc_train import KcTrainStep  # noqa: E402
from _timed_runs import WARM_S, timed  # noqa: E402
from _rows import row as json_row, write as write_rows  # noqa: E402
from _paddle_server import PaddleServer, paddle_env  # noqa: E402

import kernelcore as kc  # noqa: E402

PADDLE2 = ROOT / ".venv-paddle2" / "bin" / "python"
INFERENCE, TRAINING = "bert_encoder", "train_bert_adam"
TARGET = 1.5  # a training step <= 1.5x PyTorch's on CPU
INFER_PER_WINDOW, TRAIN_PER_WINDOW = 5, 2
SETTLE_S = 0.3  # before each window: the other sides' OpenMP threads stop spinning (KMP_BLOCKTIME is 200 ms)


def host(v) -> np.ndarray:
    return np.asarray(kc.runtime.place.to_host(v))


class KcInference:
    def __init__(self, outdir: Path):
        self.prog, self.scope, feeds, self.fetches = kc.load_inference_model(outdir / INFERENCE)
        self.ref = np.load(outdir / f"{INFERENCE}.npz")
        self.feed = {n: self.ref[n] for n in feeds}
        self.exe = kc.Executor(kc.CPUPlace())

    def run(self):
        return self.exe.run(self.prog, feed=self.feed, scope=self.scope)

    def arrays(self) -> dict:
        """The program's persistables as the scope holds them (for the PyTorch port)."""
        return {v.name: host(self.scope.find_var(v.name).value) for v in self.prog.global_block().vars
                if v.persistable and v.name not in ("feed", "fetch")}


class KcTrain(KcTrainStep):
    def __init__(self, outdir: Path):
        super().__init__(outdir, TRAINING)

    def check(self) -> tuple[float, int, list[str], list[str]]:
        """(|loss - Paddle's|, persistables compared, those beyond rtol 1e-4, the parameters compared through their
        moments only). The key projections' biases have a gradient of exactly 0 in exact arithmetic (adding a
        constant to a row's logits leaves its softmax unchanged), so both sides compute rounding noise there, which
        Adam scales to steps of about lr with arbitrary signs (tests/test_paddle_transformer.py says the same)."""
        noise = [p for p in self.meta["parameters"] if np.abs(self.ref[f"after/{p}_moment1_0"]).max() < 1e-7]
        return (*self.mismatches(skip=noise), noise)


def rel_diff(got, want) -> float:
    want = np.asarray(want)
    return float(np.abs(np.asarray(got) - want).max() / max(float(np.abs(want).max()), 1e-30))


def windows(sides, server, name, per_window, repeat):
    """Each side's times (kernelcore, PyTorch or None, Paddle), in windows taken in turn, each after a pause and
    WARM_S of the side's own untimed runs."""
    kc_f, pt_f = sides
    kc_t, pt_t, pd_t = [], [], []
    for _ in range(repeat):
        time.sleep(SETTLE_S)
        kc_t += timed(*kc_f, per_window, WARM_S)
        if pt_f is not None:
            time.sleep(SETTLE_S)
            pt_t += timed(*pt_f, per_window, WARM_S)
        time.sleep(SETTLE_S)
        pd_t += server.times(name, per_window, WARM_S)
    return kc_t, pt_t, pd_t


def row(t, kc_t, pt_t, pd_t) -> str:
    def cell(ts, width):
        return (f"{min(ts) * 1e3:{width}.2f} ({statistics.median(ts) * 1e3:{width}.2f})" if ts
                else f"{'-':>{width}s} ({'-':>{width}s})")
    ratio_pt = f"{min(kc_t) / min(pt_t):10.2f}" if pt_t else f"{'-':>10s}"
    return (f"  {t} thread{'s' if t > 1 else ' '}  {cell(kc_t, 8)}  {cell(pt_t, 8)}  {cell(pd_t, 8)}  {ratio_pt}"
            f"  {min(kc_t) / min(pd_t):9.2f}")


HEADER = (f"  {'':9s}  {'kernelcore ms':>19s}  {'PyTorch ms':>19s}  {'Paddle ms':>19s}  {'kc/PyTorch':>10s}"
          f"  {'kc/Paddle':>9s}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=None, help="windows per row (default 15, quick 2)")
    ap.add_argument("--threads", default="1,2", help="thread counts, one row each (default 1,2)")
    ap.add_argument("--quick", action="store_true", help="smoke run: fewer windows, rough figures")
    ap.add_argument("--profile", action="store_true", help="print kernelcore's training-step time per op type")
    ap.add_argument("--json", help="also write the rows (best ms of each side) to this file")
    a = ap.parse_args()
    repeat = a.repeat or (2 if a.quick else 15)
    threads = [int(t) for t in a.threads.split(",")]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load average "
          f"{load_avg()} (at start); python {platform.python_version()}")
    if not PADDLE2.exists():
        print(f"no Paddle 2.6.2 at {PADDLE2}: bash tests/paddle_oracle/setup_env.sh .venv-paddle2 2.6.2")
        return 1
    try:
        import torch
        from _torch_bert import TorchInference, TorchTrainStep
    except ImportError:
        torch = None
    with tempfile.TemporaryDirectory(prefix="kc_bench_transformer_") as tmp:
        outdir = Path(tmp)
        r = subprocess.run([str(PADDLE2), str(HERE / "_paddle_transformer.py"), tmp, "--write", "--batch",
                            str(a.batch), "--seq", str(a.seq)], capture_output=True, text=True,
                           env=dict(paddle_env(), PYTHONHASHSEED="0"), timeout=600)
        if r.returncode != 0:
            print(r.stdout[-3000:], r.stderr[-3000:])
            return 1
        servers = {t: PaddleServer("_paddle_transformer.py", outdir, [INFERENCE, TRAINING], t, python=PADDLE2)
                   for t in threads}
        try:
            results = run_all(a, outdir, servers, threads, repeat, torch,
                              (TorchInference, TorchTrainStep) if torch else None)
        finally:
            for s in servers.values():
                s.close()
    if results is None:
        return 1
    infer, train = results
    print("\nbest run of each (median in brackets); windows alternate between the sides")
    print("Targets")
    for t, kc_t, _, pd_t in infer:
        r = min(kc_t) / min(pd_t)
        print(f"  inference faster than Paddle's executor, {t} thread(s): {'met' if r < 1 else 'NOT met'} "
              f"({r:.2f}x)")
    for t, kc_t, pt_t, _ in train:
        if pt_t:
            r = min(kc_t) / min(pt_t)
            print(f"  training step <= {TARGET}x PyTorch's, {t} thread(s): {'met' if r <= TARGET else 'NOT met'} "
                  f"({r:.2f}x)")
        else:
            print(f"  training step <= {TARGET}x PyTorch's, {t} thread(s): PyTorch not importable, not measured")
    print(f"\nload average {load_avg()} (at end)")
    label = f"BERT-style encoder (b{a.batch}, seq {a.seq})"
    write_rows(a.json, [json_row(label, what, t, kc_t, pt_t, pd_t)
                        for what, rows in (("inference", infer), ("training step", train))
                        for t, kc_t, pt_t, pd_t in rows])
    return 0


def run_all(a, outdir, servers, threads, repeat, torch, torch_sides):
    info = servers[threads[0]].info
    print(f"versions: kernelcore (this tree), numpy {np.__version__}, "
          f"torch {torch.__version__ if torch else '- (not importable)'}, "
          f"Paddle {info['paddle']} (numpy {info['numpy']}; static Executor, CPUPlace)")
    print(f"NumPy's BLAS: {blas_kernels()}")
    print("threads per row: kernelcore = NumPy's BLAS limited by threadpoolctl"
          "; PyTorch = torch.set_num_threads; Paddle = FLAGS_paddle_num_threads/OMP/MKL_NUM_THREADS")
    print(f"\nBERT-style encoder, batch {a.batch}, seq {a.seq}, d_model 32, 4 heads, 2 layers")

    # inference: check, then time
    ki = KcInference(outdir)
    outs = ki.run()
    diffs = [rel_diff(o, ki.ref[f"fetch_{i}"]) for i, o in enumerate(outs)]
    for i, o in enumerate(outs):
        np.testing.assert_allclose(host(o), ki.ref[f"fetch_{i}"], rtol=1e-4, atol=1e-5, err_msg=f"fetch {i}")
    print(f"inference ({info['ops'][INFERENCE]} ops): kernelcore's outputs match Paddle's (rtol 1e-4; max|diff|/max "
          + ", ".join(f"{d:.1e}" for d in diffs) + ")")
    ti = None
    if torch_sides:
        ti = torch_sides[0](ki.prog, ki.arrays(), ki.feed)
        tdiffs = [rel_diff(o.numpy(), ki.ref[f"fetch_{i}"]) for i, o in enumerate(ti.run())]
        print("  PyTorch port: outputs' max|diff|/max of Paddle's " + ", ".join(f"{d:.1e}" for d in tdiffs))
        if max(tdiffs) > 1e-4:
            print("the PyTorch port's outputs do not match Paddle's: not timing it")
            return None

    # training: check, then time
    kt = KcTrain(outdir)
    dloss, n, bad, noise = kt.check()
    loss = float(kt.ref["loss"])
    print(f"training step ({info['ops'][TRAINING]} ops, Adam): kernelcore's loss {loss:.6f} +- {dloss:.1e} of "
          f"Paddle's ({info['loss'][TRAINING]:.6f} in the timing server); {n - len(bad)}/{n} updated persistables "
          f"match Paddle's (rtol 1e-4; {', '.join(noise)}: rounding-noise gradients, compared through their "
          "moments)")
    if dloss > 1e-4 * max(1.0, abs(loss)) or bad:
        print(f"kernelcore's step does not match Paddle's: {bad[:5]}; not timing it")
        return None
    ts = None
    if torch_sides:
        ts = torch_sides[1](kt.prog, kt.init, kt.feed)
        ts.reset()
        tl = abs(ts.step() - loss)
        word, classifier = ts.port.pairs[0][1], ts.port.pairs[-2][1]
        pdiffs = [(p, rel_diff(ts.after(p), kt.ref[f"after/{p}"])) for p in (word, classifier)]
        print(f"  PyTorch port: loss +- {tl:.1e} of Paddle's; after one Adam step (lr {ts.settings['lr']:g}) " +
              ", ".join(f"{p} max|diff|/max {d:.1e}" for p, d in pdiffs))
        if tl > 1e-4 * max(1.0, abs(loss)) or any(d > 1e-3 for _, d in pdiffs):
            print("the PyTorch port's step does not match Paddle's: not timing it")
            return None

    infer, train = [], []
    for t in threads:
        if torch is not None:
            torch.set_num_threads(t)
        with threadpool_limits(limits=t, user_api="blas"):
            infer.append((t, *windows(((None, ki.run), (None, ti.run) if ti else None), servers[t], INFERENCE,
                                      INFER_PER_WINDOW, repeat)))
            train.append((t, *windows(((kt.reset, kt.step), (ts.reset, ts.step) if ts else None), servers[t],
                                      TRAINING, TRAIN_PER_WINDOW, repeat)))
    for title, rows in (("inference", infer), ("training step", train)):
        print(f"\n{title}, best ms (median)")
        print(HEADER)
        for r in rows:
            print(row(*r))
        if title == "inference":
            print("  ratio kernelcore / Paddle (best): " +
                  ", ".join(f"{t} thread(s) {min(k) / min(p):.2f}" for t, k, _, p in rows))
    if a.profile:
        with threadpool_limits(limits=max(threads), user_api="blas"):
            prof = op_type_times(kt.step, 5, before=kt.reset)
        total = sum(ms for _, ms, _ in prof)
        print(f"\nkernelcore's training step per op type ({max(threads)} threads; each op's best of 5 traced "
              f"steps; {total:.1f} ms in all)")
        for typ, ms, n_ops in prof[:14]:
            print(f"  {typ:32s} {ms:8.2f} ms {ms / total:6.1%}  ({n_ops} ops)")
    return infer, train


if __name__ == "__main__":
    sys.exit(main())
