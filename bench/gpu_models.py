"""Real models on the GPU: kernelcore's CuPy path checked against Paddle's outputs and against its own CPU path,
and timed beside PyTorch on the same GPU.

    .venv/bin/python bench/gpu_models.py --write DIR     # here: Paddle writes the models and its results into DIR
    python3 bench/gpu_models.py DIR                      # where a GPU and CuPy are: check and time each model
    .venv/bin/python bench/gpu_models.py DIR --strict    # the GPU code path through the strict stand-in (no GPU)

--write needs the Paddle venvs (.venv-paddle 3.3.1, .venv-paddle2 2.6.2) and fills DIR (~30 MB, small enough to
carry to a GPU machine that has no Paddle):
  - MobileNetV2 and ResNet-18 inference (batch 8, 3x64x64; tests/paddle_oracle/make_vision_models.py), ResNet-18
    without its .pdiparams (47 MB): its parameters are then drawn from a fixed seed and the GPU is checked against
    kernelcore's CPU path only;
  - the small CNN's training step (momentum, batch 32; bench/cnn_train.py's case);
  - the BERT-style encoder, inference and an adam training step (bench/_paddle_transformer.py, Paddle 2.6.2);
  - the 2-layer LSTM (Paddle's fused `rnn` op), inference and an SGD step (bench/_paddle_lstm.py).

Each model then runs on GPUPlace(0): its output (or loss and every updated persistable) against Paddle's, with
bench/_kc_train.py's tolerance for training (rtol 1e-4), and against the same model on kernelcore's CPU path.
Timing: the best and median of REPEAT calls, each ending in the fetch to the host (which waits for the GPU);
kernelcore on the CPU of the same machine, and the CNNs' PyTorch ports (bench/_torch_ports.py, same weights) on
the GPU under inference_mode, synchronised, in the same run. --strict runs the checks only (the stand-in is NumPy:
its times say nothing). --profile adds each inference model's host time per op type (kernelcore's own work and
the kernel launches, which the GPU runs behind): where it adds up to the whole run, the host is the bottleneck.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import kernelcore as kc  # noqa: E402
from kernelcore.runtime.place import StrictPlace, to_host  # noqa: E402
from _op_profile import op_type_times  # noqa: E402

CNNS = {"resnet18_b8": "ResNet-18 (b8, 3x64x64)", "mobilenet_v2_b8": "MobileNetV2 (b8, 3x64x64)"}
NO_PARAMS = {"resnet18_b8"}  # carried without .pdiparams: seeded parameters, checked against the CPU path only
CNN_TRAIN = "train_cnn_b32"
BERT, BERT_TRAIN = "bert_encoder", "train_bert_adam"
SEED = 20261127


def write(outdir: Path) -> None:
    from _paddle_server import PADDLE, generate, paddle_env
    paddle2 = HERE.parent / ".venv-paddle2" / "bin" / "python"
    outdir.mkdir(parents=True, exist_ok=True)
    generate(outdir, CNNS, ".pdmodel")
    generate(outdir, [CNN_TRAIN], ".main.pb")
    for name in NO_PARAMS:
        (outdir / f"{name}.pdiparams").unlink()
    r = subprocess.run([str(paddle2), str(HERE / "_paddle_transformer.py"), str(outdir), "--write"],
                       env=dict(paddle_env(), PYTHONHASHSEED="0"), capture_output=True, text=True, timeout=600)
    if r.returncode:
        sys.exit(f"Paddle 2.6.2 failed to write the BERT-style encoder:\n{r.stderr[-3000:]}")
    with open(outdir / "lstm.json", "w") as f:
        # its timing server ends at once on an empty stdin: the files and the JSON line are what is wanted here
        r = subprocess.run([str(PADDLE), str(HERE / "_paddle_lstm.py"), str(outdir)], env=paddle_env(),
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=600)
        if r.returncode:
            sys.exit(f"Paddle failed to write the LSTM:\n{r.stderr[-3000:]}")
        f.write(r.stdout.strip().splitlines()[-1])
    for stale in outdir.glob("*.startup.pb"):
        stale.unlink()  # the steps start from the npz's init/ persistables
    size = sum(p.stat().st_size for p in outdir.iterdir())
    print(f"wrote {len(list(outdir.iterdir()))} files, {size / 2**20:.1f} MiB, into {outdir}")


def seeded_params(prog) -> dict:
    """Parameters for a program carried without them: He-scaled weights, batch-norm variances in [0.5, 1.5]."""
    rng = np.random.default_rng(SEED)
    variances = {n for op in prog.global_block().ops if op.type == "batch_norm" for n in op.input("Variance")}
    out = {}
    for v in prog.global_block().desc.vars:
        if not v.persistable or v.name in ("feed", "fetch"):
            continue
        shape = [int(d) for d in v.type.lod_tensor.tensor.dims]
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        if v.name in variances:
            a = rng.uniform(0.5, 1.5, shape)
        elif len(shape) > 1:
            a = rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
        else:
            a = rng.standard_normal(shape) * 0.1
        out[v.name] = a.astype(np.float32)
    return out


def rel_diff(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


class Timer:
    """best and median seconds of `repeat` calls of fn, after `warm` calls; `sync` runs after each call"""

    def __init__(self, repeat: int, warm: int = 3):
        self.repeat, self.warm = repeat, warm

    def __call__(self, fn, sync=None) -> tuple[float, float]:
        for _ in range(self.warm):
            fn()
        if sync:
            sync()
        ts = []
        for _ in range(self.repeat):
            t0 = time.perf_counter()
            fn()
            if sync:
                sync()
            ts.append(time.perf_counter() - t0)
        return min(ts), statistics.median(ts)


class Inference:
    """One inference model on a place, its parameters put there."""

    def __init__(self, outdir: Path, name: str, place):
        self.place = place
        if name in NO_PARAMS:
            self.prog = kc.load_program(outdir / f"{name}.pdmodel")
            self.scope = kc.Scope()
            self.params = seeded_params(self.prog)
            for n, v in self.params.items():
                self.scope.var(n).value = place.xp.asarray(v) if place.kind == "gpu" else v
            feeds = kc.formats.paddle_files.feed_target_names(self.prog)
        else:
            self.prog, self.scope, feeds, _ = kc.load_inference_model(outdir / name, place=place)
            self.params = {n: to_host(self.scope.find_var(n).value) for n in self.scope.local_var_names()
                           if self.scope.find_var(n).value is not None}
        ref = np.load(outdir / f"{name}.npz")
        self.feed = {n: ref[n] for n in feeds}
        self.paddle = None if name in NO_PARAMS else ref["fetch_0"]
        self.exe = kc.Executor(place)

    def run(self):
        return self.exe.run(self.prog, feed=self.feed, scope=self.scope)[0]


class TrainStep:
    """One training step of a Paddle-written program from its npz's init/ persistables, on a place."""

    def __init__(self, outdir: Path, name: str, place, feed_names, loss_name, init=None, extra=None):
        self.ref = np.load(outdir / f"{name}.npz")
        self.prog = kc.load_program(outdir / f"{name}.main.pb")
        self.init = init or {k[len("init/"):]: self.ref[k] for k in self.ref.files if k.startswith("init/")}
        self.init.update(extra or {})
        self.feed = {n: self.ref[n] for n in feed_names}
        self.loss_name, self.place = loss_name, place
        self.exe = kc.Executor(place)
        self.scope = kc.Scope()

    def reset(self):
        for n, v in self.init.items():
            self.scope.var(n).value = self.place.xp.asarray(v) if self.place.kind == "gpu" else v.copy()

    def step(self):
        return self.exe.run(self.prog, feed=self.feed, fetch_list=[self.loss_name], scope=self.scope, training=True)

    def first_step(self) -> tuple[float, dict]:
        """(loss, {updated persistable: host value}) of one step from the initial persistables: those Paddle's
        npz holds after its step, or, where it holds none (the LSTM's), every initial one"""
        self.reset()
        (loss,) = self.step()
        after = {k[len("after/"):] for k in self.ref.files if k.startswith("after/")} or set(self.init)
        return float(np.asarray(loss).reshape(-1)[0]), {n: to_host(self.scope.find_var(n).value) for n in after}


def noise_only(ref) -> set[str]:
    """Parameters whose gradient is 0 in exact arithmetic (the key projections' biases: a constant added to a row's
    logits leaves its softmax unchanged): every side computes rounding noise there, which Adam scales to steps of
    about lr with arbitrary signs, so they are compared through their moments only (as bench/transformer_models.py
    and tests/test_paddle_transformer.py do)."""
    return {k[len("after/"):-len("_moment1_0")] for k in ref.files
            if k.startswith("after/") and k.endswith("_moment1_0") and np.abs(ref[k]).max() < 1e-7}


def mismatches(after: dict, want: dict, skip=()) -> list[str]:
    """updated persistables beyond bench/_kc_train.py's tolerance (rtol 1e-4, atol 1e-4 of the largest |value|)"""
    bad = []
    for n, got in after.items():
        w = want[n]
        if n not in skip and not np.allclose(got, w, rtol=1e-4, atol=max(1e-4 * float(np.abs(w).max()), 1e-6)):
            bad.append(f"{n} ({float(np.abs(got - w).max()):.1e})")
    return bad


def train_cases(outdir: Path):
    """(label, name, feed names, loss name, init or None, extra persistables) of each training step in outdir"""
    cases = []
    meta = json.loads((outdir / f"{CNN_TRAIN}.json").read_text())
    cases.append(("small CNN step, momentum (b32)", CNN_TRAIN, ("x", "label"), meta["loss_name"], None, None))
    meta = json.loads((outdir / f"{BERT_TRAIN}.json").read_text())
    cases.append(("BERT-style step, adam (b8, seq 128)", BERT_TRAIN, meta["feed_names"], meta["loss_name"], None,
                  None))
    p = json.loads((outdir / "lstm.json").read_text())
    tr = np.load(outdir / "lstm_train.npz")
    prog = kc.load_program(outdir / "lstm_train.main.pb")
    lrs = {n: np.array([p["lr"]], np.float32) for op in prog.global_block().ops if op.type == "sgd"
           for n in op.input("LearningRate")}
    cases.append(("2-layer LSTM step, SGD (b32, 50 steps)", "lstm_train", ("x",), p["loss"],
                  {n: tr[f"init/{n}"] for n in p["params"]}, lrs))
    return cases


def torch_cuda_run(name: str, inf: Inference):
    """the CNN's PyTorch port with the same weights on the GPU: (run, sync), or None without torch/CUDA"""
    try:
        import torch
        from _torch_ports import port
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    x = inf.feed[next(iter(inf.feed))]
    model, _ = port(name, inf.prog, inf.params, x)
    model = model.cuda().eval()
    tx = torch.from_numpy(x).cuda()

    def run():
        with torch.inference_mode():
            return model(tx)
    return run, torch.cuda.synchronize


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--write", action="store_true", help="have Paddle write the models into DIR (needs its venvs)")
    ap.add_argument("--strict", action="store_true", help="the strict stand-in instead of CuPy: checks, no timing")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--profile", action="store_true",
                    help="also each inference model's host time per op type on the GPU (traced, not synchronised)")
    a = ap.parse_args()
    outdir = Path(a.dir)
    if a.write:
        if outdir.exists():
            shutil.rmtree(outdir)
        write(outdir)
        return 0
    if not a.strict and not kc.gpu_available():
        print("no GPU with CuPy here: nothing to measure (--strict runs the checks through the stand-in)")
        return 1
    gpu = StrictPlace(0) if a.strict else kc.GPUPlace(0)
    timer = None if a.strict else Timer(a.repeat)
    cpu_timer = Timer(max(3, a.repeat // 6), warm=1)
    print(f"kernelcore {kc.__version__}, numpy {np.__version__}, {os.cpu_count()} CPUs; place {gpu}")
    if not a.strict:
        import cupy
        props = cupy.cuda.runtime.getDeviceProperties(0)
        runtime = cupy.cuda.runtime.runtimeGetVersion()
        print(f"CuPy {cupy.__version__}, {props['name'].decode()}, CUDA runtime {runtime}")
    failures, profiles = [], {}
    head = (f"{'inference':34s} {'vs Paddle':>10s} {'vs kc CPU':>10s} {'GPU ms':>8s} {'(median)':>9s} "
            f"{'kc CPU ms':>10s} {'torch GPU ms':>13s} {'kc/torch':>9s}")
    print("\n" + head + "\n" + "-" * len(head))
    inference = {**CNNS, BERT: "BERT-style encoder (b8, seq 128)", "lstm": "2-layer LSTM (b32, 50 steps)"}
    for name, label in inference.items():
        on_gpu, on_cpu = Inference(outdir, name, gpu), Inference(outdir, name, kc.CPUPlace())
        got, cpu_out = on_gpu.run(), on_cpu.run()
        vs_paddle = None if on_gpu.paddle is None else rel_diff(got, on_gpu.paddle)
        vs_cpu = rel_diff(got, cpu_out)
        if (vs_paddle is not None and vs_paddle > 1e-4) or vs_cpu > 1e-4:
            failures.append(f"{label}: output differs (vs Paddle {vs_paddle}, vs CPU {vs_cpu:.1e})")
        cols = ["-"] * 5
        if timer:
            best, med = timer(on_gpu.run)
            cpu_best, _ = cpu_timer(on_cpu.run)
            cols[:3] = [f"{best * 1e3:.2f}", f"{med * 1e3:.2f}", f"{cpu_best * 1e3:.1f}"]
            t = torch_cuda_run(name, on_gpu) if name in CNNS else None
            if t is not None:
                t_best, _ = timer(*t)
                cols[3:] = [f"{t_best * 1e3:.2f}", f"{best / t_best:.1f}"]
        print(f"{label:34s} {'-' if vs_paddle is None else f'{vs_paddle:.1e}':>10s} {vs_cpu:10.1e} {cols[0]:>8s} "
              f"{cols[1]:>9s} {cols[2]:>10s} {cols[3]:>13s} {cols[4]:>9s}")
        if a.profile:
            profiles[label] = op_type_times(on_gpu.run, 10)
    for label, rows in profiles.items():
        total = sum(ms for _, ms, _ in rows)
        print(f"\n{label}: host time per op type on the GPU path (each op's best of 10 traced runs, the kernels "
              f"launched, not waited for): {total:.2f} ms in all")
        for t, ms, n in rows[:10]:
            print(f"  {t:28s} {ms:8.3f} ms {ms / total:6.1%}  ({n} ops, {ms / n * 1e3:.0f} us each)")
    head = (f"{'training step':38s} {'|loss - Paddle|':>15s} {'params off':>11s} {'off CPU':>8s} {'GPU ms':>8s} "
            f"{'(median)':>9s} {'kc CPU ms':>10s}")
    print("\n" + head + "\n" + "-" * len(head))
    for label, name, feeds, loss_name, init, extra in train_cases(outdir):
        on_gpu, on_cpu = (TrainStep(outdir, name, place, feeds, loss_name, dict(init) if init else None, extra)
                          for place in (gpu, kc.CPUPlace()))
        loss, after = on_gpu.first_step()
        cpu_loss, cpu_after = on_cpu.first_step()
        skip = noise_only(on_gpu.ref)
        paddle_after = {n: on_gpu.ref[f"after/{n}"] for n in after if f"after/{n}" in on_gpu.ref.files}
        bad = mismatches({n: after[n] for n in paddle_after}, paddle_after, skip)
        bad_cpu = mismatches(after, cpu_after, skip)
        loss_off = abs(loss - float(on_gpu.ref["loss"]))
        if bad or bad_cpu or loss_off > 1e-4 * max(1.0, abs(loss)):
            failures.append(f"{label}: loss off by {loss_off:.1e}; beyond tolerance: {', '.join(bad[:5])}; "
                            f"against the CPU path: {', '.join(bad_cpu[:5])}")
        cols = ["-"] * 3
        if timer:
            best, med = timer(on_gpu.step)
            cpu_best, _ = cpu_timer(on_cpu.step)
            cols = [f"{best * 1e3:.2f}", f"{med * 1e3:.2f}", f"{cpu_best * 1e3:.1f}"]
        off = f"{len(bad)}/{len(paddle_after) - len(skip)}"
        print(f"{label:38s} {loss_off:15.1e} {off:>11s} {len(bad_cpu):8d} {cols[0]:>8s} {cols[1]:>9s} {cols[2]:>10s}")
    print()
    for f in failures:
        print("FAILED:", f)
    print("all outputs, losses and updated parameters within 1e-4" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
