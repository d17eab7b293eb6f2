"""CNN inference: kernelcore against Paddle's own CPU executor on the same .pdmodel/.pdiparams.

    .venv/bin/python bench/models.py            # ResNet-18 and MobileNetV2, batch 8, 3x64x64 (~1-2 min)
    .venv/bin/python bench/models.py --quick    # smoke run: fewer repeats, rough figures
    .venv/bin/python bench/models.py --profile  # also kernelcore's time per op type
    .venv/bin/python bench/models.py --all      # then every model's training step, the LSTM and the BERT-style
                                                # encoder (the three benches beside this one), and one summary

Paddle 3.3.1 (.venv-paddle) writes the models (tests/paddle_oracle/make_vision_models.py, cases resnet18_b8 and
mobilenet_v2_b8) into a temporary directory (or --dir) and times its legacy static Executor on them
(bench/_paddle_models.py, run in its venv). kernelcore loads the same files, checks its outputs against Paddle's
(max |diff| / max |Paddle's|). Timing: windows of 3 runs alternate between kernelcore (in this process) and Paddle
(bench/_paddle_models.py serving runs from its venv), 30 windows each (--quick: 5), each after WARM_S of the side's
own untimed runs (bench/_timed_runs.py), so load from other processes falls on both alike; the best single run is
the figure compared (the median beside it), since the machine is shared and the best runs are those other processes
left alone.

Throughput: the FLOPs of the convolutions and matrix products (2 * output elements * filter elements per output
for conv2d/depthwise_conv2d, 2 * M * K * N for matmul_v2/mul; shapes from the program, the batch filled in) over
kernelcore's best time, against NumPy's float32 GEMM (np.matmul, 1024^3 and an im2col-shaped 256 x 2304 x 2048,
the better of the two) measured in the same run.

PyTorch (when importable; `.venv/bin/pip install torch==2.13.0`): plain torch.nn ports of the same networks
(bench/_torch_ports.py) with the program's own parameters, in eval mode under torch.inference_mode(), checked
against Paddle's output like kernelcore's, timed in the same alternating windows at torch's default threads (and
at one thread in the one-thread rows). Without torch its column prints "-".
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import kernelcore as kc  # noqa: E402
from _paddle_server import PADDLE, PaddleServer, generate  # noqa: E402
from _op_profile import blas_kernels, load_avg, op_type_times  # noqa: E402
from _rows import read as read_rows, row as json_row, write as write_rows  # noqa: E402
from _timed_runs import WARM_S, warm_up  # noqa: E402
from _torch_ports import inference_run  # noqa: E402

MODELS = {"resnet18_b8": "ResNet-18", "mobilenet_v2_b8": "MobileNetV2"}
TARGET_GEMM_SHARE = 0.30
TARGET_TRACED = 1.05  # a run under kc.trace() (default retention) over an untraced run
PER_WINDOW = 3  # runs per timing window; windows alternate between kernelcore and Paddle
BLAS_SPIN_S = 0.3  # after the GEMM's window: its BLAS threads stop spinning before kernelcore's next window


def model_flops(prog, batch: int) -> float:
    """FLOPs of the convolutions and matrix products, from the program's declared shapes."""
    block = prog.global_block()

    def shape(name):
        return [batch if d < 0 else d for d in block.var(name).shape]

    total = 0
    for op in block.ops:
        if op.type in ("conv2d", "depthwise_conv2d"):
            out, w = shape(op.output("Output")[0]), shape(op.input("Filter")[0])
            total += 2 * math.prod(out) * math.prod(w[1:])
        elif op.type in ("matmul_v2", "mul"):
            out, x = shape(op.output("Out")[0]), shape(op.input("X")[0])
            k = x[-2] if op.type == "matmul_v2" and op.attr("trans_x") else x[-1]
            total += 2 * math.prod(out) * k
    return float(total)


GEMM_SHAPES = ((1024, 1024, 1024), (256, 2304, 2048))  # the second: ResNet-18's 3x3 256-channel conv, batch 8


class Gemm:
    """NumPy float32 GEMM throughput, timed in the same windows as the models (one call per shape per window), at
    the BLAS's default threads and, where threadpoolctl is importable, at one."""

    def __init__(self):
        rng = np.random.default_rng(0)
        self.ops = [(rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32))
                    for m, k, n in GEMM_SHAPES]
        self.best = [float("inf")] * len(GEMM_SHAPES)
        self.best_one = [float("inf")] * len(GEMM_SHAPES)
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            threadpool_limits = None
        self.limits = threadpool_limits
        for a, b in self.ops:
            np.matmul(a, b)

    def window(self):
        for i, (a, b) in enumerate(self.ops):
            t0 = time.perf_counter()
            np.matmul(a, b)
            self.best[i] = min(self.best[i], time.perf_counter() - t0)
        if self.limits is not None:
            with self.limits(limits=1, user_api="blas"):
                for i, (a, b) in enumerate(self.ops):
                    t0 = time.perf_counter()
                    np.matmul(a, b)
                    self.best_one[i] = min(self.best_one[i], time.perf_counter() - t0)

    def gflops(self, one_thread: bool = False) -> tuple[float, str]:
        """The better shape's GFLOP/s and its shape; one_thread: at one BLAS thread (inf times: never measured)."""
        best = self.best_one if one_thread else self.best
        rates = [2 * m * k * n / t / 1e9 for (m, k, n), t in zip(GEMM_SHAPES, best)]
        i = int(np.argmax(rates))
        m, k, n = GEMM_SHAPES[i]
        return rates[i], f"{m}x{k} @ {k}x{n}"


def profile(prog, scope, feed, runs: int = 10) -> list[tuple[str, float, int]]:
    """kernelcore's kernel time per op type: each op's best over `runs` traced runs, summed by type."""
    exe = kc.Executor(kc.CPUPlace())
    return op_type_times(lambda: exe.run(prog, feed=feed, scope=scope), runs)


OTHER_BENCHES = (  # (script, its arguments) run by --all after this one's CNN inference
    ("cnn_train.py", ["--models", "train_resnet18_b8,train_mobilenet_v2_b8"]),
    ("lstm_models.py", []),
    ("transformer_models.py", []),
)
TARGET_TRAIN = 1.5  # a training step <= 1.5x PyTorch's


def other_benches(outdir: Path, quick: bool) -> list[dict]:
    """Run OTHER_BENCHES one after the other (their output shown as it comes), each writing its rows as JSON."""
    rows = []
    for script, args in OTHER_BENCHES:
        out = outdir / f"rows-{script}.json"
        extra = (["--dir", str(outdir)] if script == "cnn_train.py" else []) + (["--quick"] if quick else [])
        print(f"\n== bench/{script}", flush=True)
        r = subprocess.run([sys.executable, str(Path(__file__).parent / script), *args, *extra, "--json", str(out)])
        if r.returncode != 0:
            print(f"bench/{script} failed (exit {r.returncode}): its rows are missing from the summary")
        rows += read_rows(out)
    return rows


def summary(rows: list[dict], have_torch: bool) -> None:
    """Every row of the run: best ms of each side, the ratios, and issue 11's targets (inference faster than Paddle's
    executor; a training step <= 1.5x PyTorch's)."""
    print("\n== Summary: best ms of each side (Paddle's executor at its default one thread for the CNNs and the LSTM)")
    head = (f"{'model':44s} {'':14s} {'thr':>3s} {'kernelcore':>10s} {'PyTorch':>8s} {'Paddle':>8s} "
            f"{'kc/PyTorch':>10s} {'kc/Paddle':>9s}  target")
    print(head)
    print("-" * len(head))
    fmt = (lambda v: f"{v:.1f}" if v is not None else "-")
    for r in rows:
        kc_ms, pt, pd = r["kernelcore_ms"], r["pytorch_ms"], r["paddle_ms"]
        if r["what"] == "inference":
            target = ("faster than Paddle: " + ("met" if kc_ms < pd else "NOT met")) if pd else ""
        elif pt:
            target = f"<= {TARGET_TRAIN}x PyTorch: " + ("met" if kc_ms <= TARGET_TRAIN * pt else "NOT met")
        else:
            target = "PyTorch not importable: not measured" if not have_torch else "PyTorch not timed"
        print(f"{r['model'][:44]:44s} {r['what']:14s} {r['threads']:3d} {fmt(kc_ms):>10s} {fmt(pt):>8s} "
              f"{fmt(pd):>8s} {(f'{kc_ms / pt:.2f}' if pt else '-'):>10s} {(f'{kc_ms / pd:.2f}' if pd else '-'):>9s}"
              f"  {target}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer, shorter repeats (smoke run)")
    ap.add_argument("--dir", help="where the models are (or go); default: a temporary directory")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--profile", action="store_true", help="print kernelcore's time per op type")
    ap.add_argument("--json", help="also write the rows (best ms of each side) to this file")
    ap.add_argument("--all", action="store_true",
                    help="then the training steps, the LSTM and the BERT-style encoder (bench/cnn_train.py, "
                         "lstm_models.py, transformer_models.py), and one summary of every row with the targets")
    a = ap.parse_args()
    # many short repeats, best kept: on a shared 2-core machine the best single runs are the ones other
    # processes left alone (medians are printed beside them)
    repeat = a.repeat or (5 if a.quick else 30)
    try:
        import torch
        torch_note = (f"PyTorch {torch.__version__}: torch.nn ports with the same weights, eval mode, "
                      f"inference_mode, {torch.get_num_threads()} threads (1 in the one-thread rows)")
    except ImportError:
        torch = None
        torch_note = "PyTorch: not importable in kernelcore's venv (pip install torch==2.13.0); its column is skipped"

    print(f"machine: {os.cpu_count()} CPUs, load average {load_avg()} (at start)")
    print(f"versions: kernelcore {getattr(kc, '__version__', '?')}, numpy {np.__version__}")
    print(f"NumPy's BLAS: {blas_kernels()}")
    if not PADDLE.exists():
        sys.exit(f"no Paddle 3.3.1 venv at {PADDLE.parent.parent} (bash tests/paddle_oracle/setup_env.sh): the models "
                 "are written by Paddle, so this benchmark needs it")
    tmp = None
    if a.dir:
        outdir = Path(a.dir)
        outdir.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="kc_bench_models_")
        outdir = Path(tmp.name)
    generate(outdir, MODELS, ".pdmodel")

    gemm = Gemm()
    for _ in range(repeat):
        gemm.window()
    server = PaddleServer("_paddle_models.py", outdir, MODELS)
    print(f"Paddle {server.info['paddle']} legacy static Executor, CPUPlace, {server.info['threads']}")
    print(torch_note)
    print()
    head = (f"{'model (batch 8, 3x64x64)':26s} {'GFLOP':>6s} {'kc ms':>9s} {'(median)':>9s} {'Paddle ms':>10s} "
            f"{'(median)':>9s} {'kc/Paddle':>9s} {'torch':>6s} {'kc GFLOP/s':>11s} {'of GEMM':>8s} {'max|diff|':>10s}")
    print(head)
    print("-" * len(head))
    rows, one_rows, traced_rows, torch_rows, json_rows = [], [], [], [], []
    profiles = {}
    try:
        from threadpoolctl import threadpool_limits as one_thread
    except ImportError:
        one_thread = None
    for name, label in MODELS.items():
        prog, scope, feeds, fetches = kc.load_inference_model(outdir / name)
        ref = np.load(outdir / f"{name}.npz")
        feed = {n: ref[n] for n in feeds}
        exe = kc.Executor(kc.CPUPlace())
        (out,) = exe.run(prog, feed=feed, scope=scope)
        want = ref["fetch_0"]
        diff = float(np.abs(out - want).max() / np.abs(want).max())
        for _ in range(2):
            exe.run(prog, feed=feed, scope=scope)
        kc_t, kc1_t, pd_t, tr_t, pt_t, pt1_t = [], [], [], [], [], []
        torch_run, torch_diff = None, None
        if torch is not None:
            params = {n: kc.runtime.place.to_host(scope.find_var(n).value) for n in scope.local_var_names()
                      if scope.find_var(n).value is not None}
            torch_run = inference_run(name, prog, params, feed[feeds[0]])
            torch_diff = float(np.abs(torch_run() - want).max() / np.abs(want).max())
            torch_run()

        def window(out, traced=False):
            warm_up(None, lambda: exe.run(prog, feed=feed, scope=scope), WARM_S)
            for _ in range(PER_WINDOW):
                t0 = time.perf_counter()
                if traced:
                    with kc.trace():
                        exe.run(prog, feed=feed, scope=scope)
                else:
                    exe.run(prog, feed=feed, scope=scope)
                out.append(time.perf_counter() - t0)

        def torch_window(out, threads=None):
            before = torch.get_num_threads()
            if threads is not None:
                torch.set_num_threads(threads)
            try:
                warm_up(None, torch_run, WARM_S)
                for _ in range(PER_WINDOW):
                    t0 = time.perf_counter()
                    torch_run()
                    out.append(time.perf_counter() - t0)
            finally:
                torch.set_num_threads(before)

        # windows of PER_WINDOW runs: kernelcore, traced, on 1 BLAS thread, Paddle, PyTorch (default threads, 1)
        for _ in range(repeat):
            window(kc_t)
            window(tr_t, traced=True)
            if one_thread is not None:
                with one_thread(limits=1, user_api="blas"):
                    window(kc1_t)
            pd_t += server.times(name, PER_WINDOW, WARM_S)
            if torch_run is not None:
                torch_window(pt_t)
                torch_window(pt1_t, threads=1)
            gemm.window()
            # OpenBLAS's worker spins ~0.1 s after the two-thread GEMM, on the core the next window's parts need
            # (kernelcore/runtime/cpu_parts.py says why that slows them)
            time.sleep(BLAS_SPIN_S)
        best, median = min(kc_t), statistics.median(kc_t)
        if kc1_t:
            one_rows.append((label, min(kc1_t), statistics.median(kc1_t), min(pd_t), min(pt1_t) if pt1_t else None,
                             model_flops(prog, feed[feeds[0]].shape[0])))
        p = {"best": min(pd_t), "median": statistics.median(pd_t)}
        flops = model_flops(prog, feed[feeds[0]].shape[0])
        torch_col = f"{min(pt_t) * 1e3:.2f}" if pt_t else "-"
        gf = flops / best / 1e9
        rows.append((label, best, p["best"], gf))
        json_rows.append(json_row(label, "inference", os.cpu_count(), kc_t, pt_t, pd_t))
        if kc1_t:
            json_rows.append(json_row(label, "inference", 1, kc1_t, pt1_t, pd_t))
        if pt_t:
            torch_rows.append((label, best, min(pt_t), statistics.median(pt_t), torch_diff))
        traced_rows.append((label, min(tr_t) / best, statistics.median(tr_t) / median))
        print(f"{label:26s} {flops / 1e9:6.2f} {best * 1e3:9.2f} {median * 1e3:9.2f} {p['best'] * 1e3:10.2f} "
              f"{p['median'] * 1e3:9.2f} {best / p['best']:9.2f} {torch_col:>6s} {gf:11.1f} {'':>8s} {diff:10.1e}")
        if a.profile:
            profiles[label] = profile(prog, scope, feed)
    server.close()
    if one_rows:
        print("\nkernelcore with NumPy's BLAS limited to 1 thread (threadpoolctl), as Paddle's executor runs:")
        g1, _ = gemm.gflops(one_thread=True)
        one_share = {label: fl / b / 1e9 / g1 for label, b, _, _, _, fl in one_rows}
        for label, b, m, p1, t1, fl in one_rows:
            print(f"  {label:24s} best {b * 1e3:8.2f} ms (median {m * 1e3:8.2f}), {b / p1:.2f}x Paddle's best" +
                  (f", {b / t1:.2f}x PyTorch's at 1 thread ({t1 * 1e3:.2f} ms)" if t1 else "") +
                  f", {fl / b / 1e9 / g1:.0%} of NumPy's one-thread GEMM ({g1:.1f} GFLOP/s)")
    else:
        one_share = {}
        print("\n(threadpoolctl not importable: no 1-BLAS-thread row)")
    g, g_shape = gemm.gflops()
    print(f"NumPy float32 GEMM: {g:.1f} GFLOP/s ({g_shape}, best call, timed in the same windows); "
          f"'of GEMM' = kc GFLOP/s over it: " + ", ".join(f"{label} {gf / g:.0%}" for label, _, _, gf in rows))
    rows = [(label, kc_t, pd_t, gf / g) for label, kc_t, pd_t, gf in rows]
    print("kernelcore under kc.trace() (default retention) over untraced, same windows: " + ", ".join(
        f"{label} {r:.3f} (medians {rm:.3f})" for label, r, rm in traced_rows))
    if torch_rows:
        print("PyTorch (same weights, default threads): " + ", ".join(
            f"{label} best {pt * 1e3:.2f} ms (median {pm * 1e3:.2f}), kc/PyTorch {b / pt:.2f}, "
            f"output max|diff| {d:.1e}" for label, b, pt, pm, d in torch_rows))
    print()
    print("Targets")
    for label, r, _ in traced_rows:
        print(f"  {label}: traced / untraced <= {TARGET_TRACED}: {'met' if r <= TARGET_TRACED else 'NOT met'} "
              f"({r:.3f})")
    for label, kc_t, pd_t, share in rows:
        print(f"  {label}: faster than Paddle's CPU executor: {'met' if kc_t < pd_t else 'NOT met'} "
              f"({kc_t / pd_t:.2f}x its time); >= {TARGET_GEMM_SHARE:.0%} of NumPy's GEMM throughput: "
              f"{'met' if share >= TARGET_GEMM_SHARE else 'NOT met'} ({share:.0%}"
              + (f"; at one thread {one_share[label]:.0%} of NumPy's one-thread GEMM)" if label in one_share else ")"))
    for label, rows_ in profiles.items():
        total = sum(ms for _, ms, _ in rows_)
        print(f"\nkernelcore time per op type, {label} (each op's best of 10 traced runs; {total:.1f} ms in all)")
        for t, ms, n in rows_:
            print(f"  {t:28s} {ms:8.2f} ms {ms / total:6.1%}  ({n} ops)")
    print(f"\nload average {load_avg()} (at end)")
    write_rows(a.json, json_rows)
    if a.all:
        summary(json_rows + other_benches(outdir, a.quick), torch is not None)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
