"""CNN training steps: kernelcore, PyTorch and Paddle's executor on the same Paddle-written training programs.

    .venv/bin/python bench/cnn_train.py              # small CNN (batch 32, 3x32x32) and ResNet-18 (batch 8, 3x64x64)
    .venv/bin/python bench/cnn_train.py --quick      # smoke run: fewer repeats, rough figures
    .venv/bin/python bench/cnn_train.py --profile    # plus kernelcore's kernel time per op type (2 threads)

Paddle 3.3.1 (.venv-paddle, required) writes the programs: tests/paddle_oracle/make_vision_models.py cases
train_cnn_b32 (SmallCNN: conv, batch norm, relu, max pool, depthwise conv, adaptive avg pool, linear),
train_resnet18_b8 (paddle.vision resnet18, 10 classes) and train_mobilenet_v2_b8 (paddle.vision mobilenet_v2, 10
classes, its classifier's Dropout at p = 0 so that every side computes the same step), each a whole Momentum(0.9)
training program with cross-entropy loss, its initial persistables and Paddle's loss and updated persistables after
one step.

One step = one training run from the initial persistables: kernelcore's Executor.run(main, training=True);
PyTorch's zero_grad + forward + cross_entropy + backward + SGD(momentum=0.9).step() + loss.item(); Paddle's
Executor.run of the same program (bench/_paddle_train.py, a server in Paddle's venv). Before each timed step every
side restores the initial parameters (untimed), so every step computes the same thing and none drifts towards
denormals. Before timing, kernelcore's loss and every updated persistable are checked against Paddle's (1e-4),
and PyTorch's (a plain torch.nn port: Conv2d, BatchNorm2d, ReLU, MaxPool2d, AdaptiveAvgPool2d, Linear; weights from
the same init arrays) loss and two updated parameters too.

Threads, made equal per row: kernelcore's NumPy BLAS through threadpoolctl (OpenBLAS), torch.set_num_threads,
Paddle's server started with FLAGS_paddle_num_threads / OMP_NUM_THREADS / MKL_NUM_THREADS. Rows for 1 and 2
threads. Windows of 2 steps alternate between the three, and the best step of each is compared (the median
beside it): the machine is shared, and the best steps are those other processes left alone. Every window starts
after a SETTLE_S pause: Paddle's Intel OpenMP threads spin for 200 ms (KMP_BLOCKTIME) after each of its steps, and
PyTorch's GNU OpenMP threads for a while too, on the same two cores, so without it the window after Paddle's ran
against two spinning threads (kernelcore's two-thread ResNet-18 step: median 85 ms beside a best of 62, 53-56
alone). Then each side runs untimed for WARM_S (bench/_timed_runs.py): a CPU idle for the pause needs ~50 ms of
work to reach its steady speed again, and a window timed from cold measured that ramp.
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

from _paddle_server import PADDLE, PaddleServer, generate  # noqa: E402
from _op_profile import blas_kernels, load_avg, op_type_times  # noqa: E402
from _kc_train import KcTrainStep  # noqa: E402
from _timed_runs import WARM_S, timed  # noqa: E402
from _rows import row as json_row, write as write_rows  # noqa: E402
from _torch_ports import port  # noqa: E402

MODELS = {"train_cnn_b32": "small CNN (b32, 3x32x32)", "train_resnet18_b8": "ResNet-18 (b8, 3x64x64)",
          "train_mobilenet_v2_b8": "MobileNetV2 (b8, 3x64x64)"}
TARGET = 1.5  # issue 11: a training step <= 1.5x PyTorch's on CPU
PER_WINDOW = 2
SETTLE_S = 0.3  # before each window: the other sides' OpenMP threads stop spinning (KMP_BLOCKTIME is 200 ms)
# MobileNetV2's 35 ReLU6s see ~1.3M values a step; float32 rounding that differs between two correct
# implementations (kernelcore's, Paddle's) leaves one or two of them on opposite sides of the kink at 0 (measured:
# a batch-norm output of -1.9e-7 here, above 0 in Paddle), and that gradient, passed back or not, moves the
# gradients of the layers before it by up to a few percent. Such a model's step is timed when the loss matches and
# so does everything the classifier's gradient decides (its weight, bias and their velocities), which no flip in
# the backward pass reaches; how many other persistables differ is printed.
KINK_FLIP_MODELS = {"train_mobilenet_v2_b8"}
KINK_FLIP_NOTE = ("a ReLU6 input within float32 rounding of 0 falls on the other side of the kink than in Paddle, "
                  "which moves the earlier layers' gradients; the loss and the classifier match")


class TorchStep:
    def __init__(self, kcs: KcTrainStep, name: str):
        import torch
        self.torch = torch
        self.model, self.pairs = port(name, kcs.prog, kcs.init, kcs.feed["x"])  # pairs: (tensor, Paddle name, T)
        self.model.train()
        self.x = torch.from_numpy(kcs.feed["x"])
        self.label = torch.from_numpy(kcs.feed["label"].reshape(-1).astype(np.int64))
        self.init = [t.detach().clone() for t, _, _ in self.pairs]
        lr = next(float(np.asarray(kcs.init[op.input("LearningRate")[0]]).reshape(-1)[0])
                  for op in kcs.prog.global_block().ops if op.type == "momentum")
        mu = next(op.attr("mu") for op in kcs.prog.global_block().ops if op.type == "momentum")
        self.opt = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=mu)

    def reset(self):
        with self.torch.no_grad():
            for (t, _, _), v in zip(self.pairs, self.init):
                t.copy_(v)
        self.opt.state.clear()  # no momentum buffers: the first step's velocity is the gradient, as Paddle's

    def step(self):
        self.opt.zero_grad()
        loss = self.torch.nn.functional.cross_entropy(self.model(self.x), self.label)
        loss.backward()
        self.opt.step()
        return loss.item()

    def check(self, kcs: KcTrainStep) -> tuple[float, list[tuple[str, float]]]:
        self.reset()
        loss = self.step()
        diffs = []
        params = [(t, n, tr) for t, n, tr in self.pairs if isinstance(t, self.torch.nn.Parameter)]
        for t, n, tr in (params[0], params[-2]):  # the first conv's weight and the classifier's weight
            got = t.detach().numpy()
            got = got.T if tr else got
            want = kcs.ref[f"after/{n}"]
            diffs.append((n, float(np.abs(got - want).max() / np.abs(want).max())))
        return abs(loss - float(kcs.ref["loss"])), diffs


def profile(kcs: KcTrainStep, runs: int = 5) -> list[tuple[str, float, int]]:
    """kernelcore's kernel time per op type: each op's best over `runs` traced steps, summed by type."""
    return op_type_times(kcs.step, runs, before=kcs.reset)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (smoke run)")
    ap.add_argument("--dir", help="where the programs are (or go); default: a temporary directory")
    ap.add_argument("--repeat", type=int, default=None, help="windows per row (default 15, quick 2)")
    ap.add_argument("--threads", default="1,2", help="thread counts, one row each (default 1,2)")
    ap.add_argument("--models", default=",".join(MODELS), help=f"which of {', '.join(MODELS)}")
    ap.add_argument("--profile", action="store_true", help="print kernelcore's time per op type")
    ap.add_argument("--json", help="also write the rows (best ms of each side) to this file")
    a = ap.parse_args()
    repeat = a.repeat or (2 if a.quick else 15)
    threads = [int(t) for t in a.threads.split(",")]
    names = [n for n in a.models.split(",") if n]
    print(f"machine: {os.cpu_count()} CPUs, load average {load_avg()} (at start)")
    if not PADDLE.exists():
        sys.exit(f"no Paddle 3.3.1 venv at {PADDLE.parent.parent} (bash tests/paddle_oracle/setup_env.sh): the "
                 "programs are written by Paddle, so this benchmark needs it")
    try:
        import torch
    except ImportError:
        torch = None
    tmp = None
    if a.dir:
        outdir = Path(a.dir)
        outdir.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="kc_bench_cnn_train_")
        outdir = Path(tmp.name)
    generate(outdir, MODELS, ".main.pb")
    servers = {t: PaddleServer("_paddle_train.py", outdir, MODELS, t) for t in threads}
    first = servers[threads[0]].info
    print(f"versions: numpy {np.__version__}, torch {torch.__version__ if torch else '- (not importable)'}, Paddle "
          f"{first['paddle']} (legacy static Executor, CPUPlace)")
    print(f"NumPy's BLAS: {blas_kernels()}")
    print("threads per row: kernelcore = NumPy's OpenBLAS limited by threadpoolctl"
          "; PyTorch = torch.set_num_threads; Paddle = FLAGS_paddle_num_threads/OMP/MKL_NUM_THREADS")
    print()
    results = []
    for name in names:
        kcs = KcTrainStep(outdir, name, ("x", "label"))
        dloss, _, bad = kcs.mismatches()
        n_after = sum(k.startswith("after/") for k in kcs.ref.files)
        print(f"{MODELS[name]}: kernelcore's first loss {float(kcs.ref['loss']):.6f} +- {dloss:.1e} of Paddle's "
              f"({servers[threads[0]].info['loss'][name]:.6f} in the timing server); "
              f"{n_after - len(bad)}/{n_after} updated persistables match Paddle's (rtol 1e-4)")
        classifier = [b for b in bad if b.startswith("linear_")]
        if dloss > 1e-4 * max(1.0, abs(float(kcs.ref["loss"]))) or classifier or (bad and name not in KINK_FLIP_MODELS):
            sys.exit(f"{name}: kernelcore's step does not match Paddle's: {(classifier or bad)[:5]}; not timing it")
        if bad:
            print(f"  ({len(bad)} differ beyond 1e-4: {KINK_FLIP_NOTE})")
        ts = None
        if torch is not None:
            ts = TorchStep(kcs, name)
            tl, diffs = ts.check(kcs)
            print(f"  PyTorch port: first loss +- {tl:.1e} of Paddle's; after one step " +
                  ", ".join(f"{n} max|diff|/max {d:.1e}" for n, d in diffs))
            if tl > 1e-3 * max(1.0, abs(float(kcs.ref["loss"]))) or any(d > 1e-3 for _, d in diffs):
                sys.exit(f"{name}: the PyTorch port does not match Paddle's step: not timing it")
        for t in threads:
            kc_t, pt_t, pd_t = [], [], []
            if torch is not None:
                torch.set_num_threads(t)
            with threadpool_limits(limits=t, user_api="blas"):
                for _ in range(repeat):  # each window after a pause and WARM_S of the side's untimed steps
                    time.sleep(SETTLE_S)
                    kc_t += timed(kcs.reset, kcs.step, PER_WINDOW, WARM_S)
                    if ts is not None:
                        time.sleep(SETTLE_S)
                        pt_t += timed(ts.reset, ts.step, PER_WINDOW, WARM_S)
                    time.sleep(SETTLE_S)
                    pd_t += servers[t].times(name, PER_WINDOW, WARM_S)
            results.append((name, t, kc_t, pt_t, pd_t))
            row = (f"  {t} thread{'s' if t > 1 else ' '}: kernelcore {min(kc_t) * 1e3:8.1f} ms "
                   f"({statistics.median(kc_t) * 1e3:8.1f})")
            if pt_t:
                row += f"   PyTorch {min(pt_t) * 1e3:7.1f} ms ({statistics.median(pt_t) * 1e3:7.1f})"
            row += f"   Paddle {min(pd_t) * 1e3:7.1f} ms ({statistics.median(pd_t) * 1e3:7.1f})"
            if pt_t:
                row += f"   kc/PyTorch {min(kc_t) / min(pt_t):5.2f}"
            row += f"   kc/Paddle {min(kc_t) / min(pd_t):5.2f}"
            print(row, flush=True)
        if a.profile:
            with threadpool_limits(limits=max(threads), user_api="blas"):
                rows = profile(kcs)
            total = sum(ms for _, ms, _ in rows)
            print(f"  kernelcore time per op type ({max(threads)} threads; each op's best of 5 traced steps; "
                  f"{total:.1f} ms in all)")
            for typ, ms, n in rows[:14]:
                print(f"    {typ:32s} {ms:8.2f} ms {ms / total:6.1%}  ({n} ops)")
    for s in servers.values():
        s.close()
    print("\nbest step of each (median in brackets); windows of 2 steps alternate between the sides")
    print(f"Target (issue 11): a training step <= {TARGET}x PyTorch's on CPU")
    for name, t, kc_t, pt_t, _ in results:
        if pt_t:
            r = min(kc_t) / min(pt_t)
            print(f"  {MODELS[name]}, {t} thread(s): {'met' if r <= TARGET else 'NOT met'} ({r:.2f}x)")
        else:
            print(f"  {MODELS[name]}, {t} thread(s): PyTorch not importable, not measured")
    print(f"\nload average {load_avg()} (at end)")
    write_rows(a.json, [json_row(MODELS[name], "training step", t, kc_t, pt_t, pd_t)
                        for name, t, kc_t, pt_t, pd_t in results])
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
