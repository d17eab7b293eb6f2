"""One training step of the digits MLP: kernelcore against the same model in PyTorch (CPU, eager).

    python bench/train_step.py            # ~20 s
    python bench/train_step.py --quick    # smoke run, ~3 s, rough figures

The model is examples/train_digits_mlp.py's: 64 -> 128 relu -> 64 relu -> dropout(0.1, upscale_in_train)
-> 10, softmax cross entropy, mean, Adam. A kernelcore step is one `Executor.run(main, training=True)`
of the program `Adam.minimize` wrote (forward, gradient ops, one `adam` op per parameter) with a batch
fed and the loss fetched; both sides cycle through the digits training set in fixed batches. A PyTorch step is `zero_grad(set_to_none=True)`, forward, `F.cross_entropy`,
`backward()`, `Adam.step()` (PyTorch's default implementation for CPU tensors) and `loss.item()`.
Both use the default threads (the ratio); nothing is tuned. An extra row gives PyTorch pinned to one
thread (`torch.set_num_threads(1)`, set before each of its steps, the default restored before each
default-threads step): on a 2-core machine shared with other work, PyTorch's intra-op threads can cost
more than they give at this size. The rows are timed in turn (short alternating windows,
bench/_timing.measure_interleaved), at the example's batch size (32) and at 256; the ratio is kernelcore
over PyTorch (default threads), best windows. Target: <= 1.3 at batch 32.
"""
from __future__ import annotations

import argparse
import itertools
import os
import platform
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT), str(ROOT / "examples")]
from _timing import measure_interleaved  # noqa: E402

import kernelcore as kc  # noqa: E402

TARGET = 1.3
BATCHES = (32, 256)


RESET_EPOCHS = 5  # both sides go back to their initial state after this many passes over the data


def digit_batches(batch: int) -> list:
    """The digits training set in fixed mini-batches, cycled through by both sides. Real data, and a
    reset to the initial state every RESET_EPOCHS passes, keep the timed steps in the early-training
    regime: a memorised training set drives gradients and Adam's moments into float32 denormals, and x86
    arithmetic on those is several times slower (kernelcore's step at batch 32 went from 0.4 to 1.3 ms
    between epochs 15 and 27 of an unreset run)."""
    import digits_data
    x, y, _, _ = digits_data.load(0)
    n = len(x) // batch * batch
    return [(x[i:i + batch], y[i:i + batch]) for i in range(0, n, batch)]


def kernelcore_step(batch: int):
    import train_digits_mlp
    main, startup, _, loss, _ = train_digits_mlp.build()
    exe = kc.Executor(kc.CPUPlace())
    exe.seed(0)
    scope = kc.Scope()
    exe.run(startup, scope=scope)
    batches = [{"x": xb, "label": yb} for xb, yb in digit_batches(batch)]
    feeds = itertools.cycle(batches)
    fetch = [loss]
    exe.prepare(main)
    reset_every, count = RESET_EPOCHS * len(batches), [0]

    def step():
        count[0] += 1
        if count[0] % reset_every == 0:
            exe.run(startup, scope=scope)  # parameters, Adam's moments and beta powers start over
        return exe.run(main, feed=next(feeds), fetch_list=fetch, scope=scope, training=True)[0]
    return step, sum(len(b.ops) for b in main.blocks)


def torch_step(batch: int):
    import torch
    from torch import nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Dropout(0.1),
                          nn.Linear(64, 10))
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=0.001)
    batches = [(torch.from_numpy(xb), torch.from_numpy(yb[:, 0])) for xb, yb in digit_batches(batch)]
    data = itertools.cycle(batches)
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    reset_every, count = RESET_EPOCHS * len(batches), [0]

    def step():
        count[0] += 1
        if count[0] % reset_every == 0:
            model.load_state_dict(initial)
            opt.state.clear()  # Adam's moments and step counts start over
        x, y = next(data)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few short repeats: a smoke run")
    args = ap.parse_args()
    repeat, min_s = (5, 0.01) if args.quick else (31, 0.05)
    try:
        import torch
        torch_version = torch.__version__
    except ImportError:
        torch = None
        torch_version = "not installed (.venv/bin/pip install torch==2.13.0)"
    model = platform.processor() or platform.machine()
    try:
        model = next(l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                     if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"machine: {model}, {os.cpu_count()} logical cores; load average {os.getloadavg()[0]:.2f}")
    print(f"versions: Python {platform.python_version()}, NumPy {np.__version__}, kernelcore {kc.__version__}, "
          f"PyTorch {torch_version}")
    print("\nTraining step of the digits MLP (64-128-64-10, dropout 0.1, softmax CE, Adam), ms per step")
    print(f"{'batch':>6} | {'kernelcore':>10} | {'median':>8} | {'PyTorch':>8} | {'median':>8} | kc ÷ torch "
          f"| {'PyTorch 1 thread':>16} | {'median':>8} | kc ÷ it")
    ratios = {}
    for batch in BATCHES:
        kc_step, n_ops = kernelcore_step(batch)
        if torch is None:
            (kb, km), = measure_interleaved([kc_step], repeat=repeat, min_s=min_s)
            print(f"{batch:>6} | {kb * 1e3:>10.3f} | {km * 1e3:>8.3f} | {'—':>8} | {'—':>8} | —")
            continue
        threads = torch.get_num_threads()
        t_default, t_one = torch_step(batch), torch_step(batch)

        def default_threads():
            torch.set_num_threads(threads)
            return t_default()

        def one_thread():
            torch.set_num_threads(1)
            return t_one()
        (kb, km), (tb, tm), (ob, om) = measure_interleaved([kc_step, default_threads, one_thread], repeat=repeat,
                                                           min_s=min_s)
        torch.set_num_threads(threads)
        ratios[batch] = kb / tb
        print(f"{batch:>6} | {kb * 1e3:>10.3f} | {km * 1e3:>8.3f} | {tb * 1e3:>8.3f} | {tm * 1e3:>8.3f} | "
              f"{kb / tb:>10.2f} | {ob * 1e3:>16.3f} | {om * 1e3:>8.3f} | {kb / ob:.2f}")
    print(f"\n(kernelcore runs {n_ops} ops per step; PyTorch's default threads: "
          f"{torch.get_num_threads() if torch is not None else '—'}; load average at end {os.getloadavg()[0]:.2f})")
    if 32 in ratios:
        met = "met" if ratios[32] <= TARGET else "NOT met"
        print(f"Target: kernelcore ÷ PyTorch <= {TARGET} at batch 32: {ratios[32]:.2f}, {met}")


if __name__ == "__main__":
    main()
