"""Paddle 3's PIR programs: kernelcore's load and run against Paddle Inference's CPU predictor on the same files.

    .venv/bin/python bench/pir_models.py            # the full set (~5 min on 2 cores)
    .venv/bin/python bench/pir_models.py --quick    # two small models, few repeats (< 60 s)

Paddle 3.3.1 (.venv-paddle) writes the programs with its defaults, `.json` + `.pdiparams`
(tests/paddle_oracle/make_pir_models.py; its bench_*_224 cases are full-size classifiers at 3x224x224, batch 1),
into a temporary directory (or --dir, reused when the files are there).

kernelcore, in this process:
- load: `kc.load_program(path)` of the `.json` (a fresh parse each call: nothing is cached between calls) and
  `kc.load_inference_model(prefix)` (the program and its parameters), each --loads times; best and median.
- run: `kc.Executor().run(...)` on the generator's feed, warm, its outputs first compared with those Paddle's
  predictor gave (max |diff| / max |Paddle's|).
Paddle Inference (bench/_pir_paddle.py, a timing server in Paddle's venv): the CPU predictor with oneDNN off and
`set_cpu_math_library_num_threads(n)`, ir_optim off (the program as saved, op for op, what kernelcore runs: the
target compares against this one) and ir_optim on (Paddle's fused passes: shown beside it).

Threads: one row per count in --threads: "default" is the BLAS's own thread count (what kernelcore uses untold; the
predictor is given the same n), and 1 (kernelcore limited through threadpoolctl, which its C kernels follow too).
Timing: windows of a few runs alternate between kernelcore, the predictor without and with ir_optim (each window
after WARM_S of that side's untimed runs, bench/_timed_runs.py), so load from other processes falls on all alike;
the best run is the figure compared, the median beside it. The 1-minute load average is printed at start and end.

Targets (issue 32): loading a program of >= 700 PIR ops takes <= 0.3 s (kc.load_program, best); a run is no slower
than the predictor's with ir_optim off at the same threads (best against best).
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
from threadpoolctl import threadpool_info, threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import kernelcore as kc  # noqa: E402
from _op_profile import load_avg, op_type_times  # noqa: E402
from _paddle_server import PADDLE, PaddleServer  # noqa: E402
from _rows import write as write_rows  # noqa: E402
from _timed_runs import WARM_S, timed  # noqa: E402

GENERATOR = ROOT / "tests" / "paddle_oracle" / "make_pir_models.py"
MODELS = {  # case -> label
    "bench_densenet121_224": "DenseNet-121 224",
    "bench_resnet18_224": "ResNet-18 224",
    "bench_mobilenet_v3_large_224": "MobileNetV3-L 224",
    "densenet121": "DenseNet-121 64",
    "resnext50_32x4d": "ResNeXt-50 64",
    "mobilenet_v3_large": "MobileNetV3-L 64",
    "resnet18": "ResNet-18 64",
    "bert_like": "BERT-like",
    "ocr_det_db": "OCR det (DB)",
    "ocr_rec_svtr": "OCR rec (SVTR)",
}
QUICK = ("resnet18", "ocr_rec_svtr")
TARGET_LOAD_S = 0.3
TARGET_LOAD_OPS = 700  # the load target is about programs at least this big
PER_WINDOW = 2  # runs per timing window


def pir_env() -> dict:
    """Paddle 3 with its defaults (PIR on), quiet."""
    env = dict(os.environ, GLOG_minloglevel="2", PYTHONWARNINGS="ignore")
    env.pop("FLAGS_enable_pir_api", None)
    return env


def generate(outdir: Path, names) -> None:
    """Have Paddle write the named cases into `outdir` unless they are there already."""
    missing = [n for n in names if not (outdir / f"{n}.meta.json").exists()]
    if not missing:
        return
    r = subprocess.run([str(PADDLE), str(GENERATOR), str(outdir), *missing], capture_output=True, text=True,
                       env=pir_env())
    if r.returncode != 0 or any(not (outdir / f"{n}.meta.json").exists() for n in missing):
        sys.exit(f"Paddle could not write {', '.join(missing)}:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")


class PredictorServer(PaddleServer):
    """bench/_pir_paddle.py in Paddle's venv, PIR on: predictors for every case and thread count."""

    def __init__(self, outdir: Path, names, threads):
        self.p = subprocess.Popen([str(PADDLE), str(ROOT / "bench" / "_pir_paddle.py"), str(outdir),
                                   ",".join(map(str, threads)), *names], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=pir_env())
        line = self.p.stdout.readline()
        if not line:
            sys.exit(f"Paddle's predictor server failed:\n{self.p.stderr.read()[-3000:]}")
        self.info = json.loads(line)


def pir_op_count(path: Path) -> int:
    """Ops in the PIR program, nested regions' included (builtin.parameter and the data/fetch ops count too)."""
    def ops_in(regions):
        return sum(len(b["ops"]) + sum(ops_in(op.get("regions", [])) for op in b["ops"])
                   for r in regions for b in r["blocks"])
    return ops_in(json.loads(path.read_text())["program"]["regions"])


def load_times(fn, count: int) -> list[float]:
    out = []
    for _ in range(count):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


class KernelcoreModel:
    """One case loaded by kernelcore, its feed and a run()."""

    def __init__(self, outdir: Path, name: str):
        prefix = outdir / name
        self.meta = json.loads((outdir / f"{name}.meta.json").read_text())
        self.data = np.load(outdir / f"{name}.npz")
        self.prog, self.scope, self.feeds, self.fetches = kc.load_inference_model(str(prefix))
        self.feed = {n: self.data[n] for n in self.meta["feed_names"]}
        self.exe = kc.Executor(kc.CPUPlace())

    def run(self):
        return self.exe.run(self.prog, feed=self.feed, fetch_list=self.fetches, scope=self.scope)

    def max_rel_diff(self) -> float:
        outs = self.run()
        want = [self.data[f"fetch_{i}"] for i in range(len(self.meta["fetch_names"]))]
        return max(float(np.abs(np.asarray(o) - w).max() / max(float(np.abs(w).max()), 1e-30))
                   for o, w in zip(outs, want))


def blas_default_threads() -> int:
    counts = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
    return max(counts) if counts else os.cpu_count() or 1


def time_runs(model: KernelcoreModel, server: PredictorServer, name: str, n: int, limit, windows: int) -> dict:
    """Alternating windows of kernelcore (at `limit` BLAS threads, None: untold) and the predictor off and on."""
    kc_times, off, on = [], [], []
    for _ in range(windows):
        if limit is None:
            kc_times += timed(None, model.run, PER_WINDOW, WARM_S)
        else:
            with threadpool_limits(limits=limit, user_api="blas"):
                kc_times += timed(None, model.run, PER_WINDOW, WARM_S)
        off += server.times(f"{name}:off:{n}", PER_WINDOW, WARM_S)
        on += server.times(f"{name}:on:{n}", PER_WINDOW, WARM_S)
    return {"kc": kc_times, "off": off, "on": on}


def ms(ts) -> str:
    return ms_pair([t * 1e3 for t in ts])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}, few repeats")
    ap.add_argument("--models", help="comma-separated cases (default: all, or --quick's)")
    ap.add_argument("--dir", help="where Paddle writes the programs (kept; default: a temporary directory)")
    ap.add_argument("--threads", default="default,1", help="thread counts: 'default' (the BLAS's) and/or numbers")
    ap.add_argument("--loads", type=int, help="loads timed per entry point (default 7, quick 3)")
    ap.add_argument("--windows", type=int, help=f"timing windows of {PER_WINDOW} runs per side (default 8, quick 2)")
    ap.add_argument("--profile", action="store_true", help="also kernelcore's time per op type, per model")
    ap.add_argument("--json", help="also write the rows (ms) to this file")
    a = ap.parse_args()
    names = a.models.split(",") if a.models else list(QUICK if a.quick else MODELS)
    loads = a.loads or (3 if a.quick else 7)
    windows = a.windows or (2 if a.quick else 8)
    default_n = blas_default_threads()
    thread_rows = [(default_n, None) if t == "default" else (int(t), int(t)) for t in a.threads.split(",")]
    if not PADDLE.exists():
        sys.exit(f"no Paddle venv at {PADDLE}: it writes the programs and is the other column "
                 "(bash tests/paddle_oracle/setup_env.sh)")
    print(f"load average (1, 5, 15 min) at start: {load_avg()}; cores: {os.cpu_count()}; "
          f"BLAS default threads: {default_n}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        outdir = Path(a.dir or tmp)
        outdir.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        generate(outdir, names)
        print(f"Paddle wrote the programs in {time.perf_counter() - t0:.1f} s ({outdir})", flush=True)
        server = PredictorServer(outdir, names, sorted({n for n, _ in thread_rows}))
        try:
            rows = measure(outdir, names, thread_rows, server, loads, windows, a.profile)
        finally:
            server.close()
    print_table(rows, server.info)
    print(f"load average (1, 5, 15 min) at end: {load_avg()}")
    write_rows(a.json, rows)


def measure(outdir: Path, names, thread_rows, server, loads: int, windows: int, profile: bool) -> list[dict]:
    rows = []
    for name in names:
        path = outdir / f"{name}.json"
        load = load_times(lambda: kc.load_program(str(path)), loads)
        load_inf = load_times(lambda: kc.load_inference_model(str(outdir / name)), loads)
        model = KernelcoreModel(outdir, name)
        diff = model.max_rel_diff()
        base = {"model": name, "pir_ops": pir_op_count(path), "kc_ops": len(model.prog.global_block().ops),
                "load_ms": [t * 1e3 for t in load], "load_inference_ms": [t * 1e3 for t in load_inf],
                "max_rel_diff": diff}
        for n, limit in thread_rows:
            t = time_runs(model, server, name, n, limit, windows)
            rows.append({**base, "threads": n, **{f"{k}_ms": [v * 1e3 for v in ts] for k, ts in t.items()}})
            print(f"  {MODELS.get(name, name)}, {n} thread(s): kernelcore {ms(t['kc'])} ms, Paddle ir_optim off "
                  f"{ms(t['off'])}, on {ms(t['on'])} (best/median)", flush=True)
        if profile:
            print(f"  kernelcore time per op type, {MODELS.get(name, name)} (best of 5 traced runs, ms):")
            for op_type, op_ms, count in op_type_times(model.run, 5)[:8]:
                print(f"    {op_type:<24} {op_ms:8.2f}  ({count} ops)")
    return rows


def print_table(rows: list[dict], info: dict) -> None:
    print(f"\nPaddle {info['paddle']} Inference CPU predictor (oneDNN off, set_cpu_math_library_num_threads = the "
          "row's threads); ms best/median; ratio = kernelcore / Paddle, below 1: kernelcore is faster")
    head = ("model", "PIR ops", "load ms", "load+params ms", "thr", "kc run ms", "Paddle off ms", "Paddle on ms",
            "kc/off", "kc/on", "max|diff|")
    print(f"{head[0]:<18} {head[1]:>7} {head[2]:>13} {head[3]:>14} {head[4]:>3} {head[5]:>13} {head[6]:>13} "
          f"{head[7]:>13} {head[8]:>6} {head[9]:>6} {head[10]:>9}")
    for r in rows:
        best = {k: min(r[f"{k}_ms"]) for k in ("kc", "off", "on")}
        print(f"{MODELS.get(r['model'], r['model']):<18} {r['pir_ops']:>7} {ms_pair(r['load_ms']):>13} "
              f"{ms_pair(r['load_inference_ms']):>14} {r['threads']:>3} {ms_pair(r['kc_ms']):>13} "
              f"{ms_pair(r['off_ms']):>13} {ms_pair(r['on_ms']):>13} {best['kc'] / best['off']:>6.2f} "
              f"{best['kc'] / best['on']:>6.2f} {r['max_rel_diff']:>9.1e}")
    print("\nTargets (issue 32)")
    for line in target_lines(rows):
        print(" ", line)


def ms_pair(values_ms) -> str:
    """best/median, two decimals below 10 ms (a small program's run is a fraction of a millisecond)."""
    return "/".join(f"{v:.2f}" if v < 10 else f"{v:.1f}" for v in (min(values_ms), statistics.median(values_ms)))


def target_lines(rows: list[dict]) -> list[str]:
    """One line per target and model: load (programs of >= TARGET_LOAD_OPS PIR ops) and run (every row)."""
    lines, seen = [], set()
    for r in rows:
        label = MODELS.get(r["model"], r["model"])
        if r["model"] not in seen and r["pir_ops"] >= TARGET_LOAD_OPS:
            seen.add(r["model"])
            best = min(r["load_ms"])
            lines.append(f"{label} ({r['pir_ops']} PIR ops): load {best:.0f} ms <= {TARGET_LOAD_S * 1e3:.0f} ms: "
                         f"{'met' if best <= TARGET_LOAD_S * 1e3 else 'NOT met'}")
        ratio = min(r["kc_ms"]) / min(r["off_ms"])
        lines.append(f"{label}, {r['threads']} thread(s): run / Paddle's (ir_optim off) {ratio:.2f} <= 1: "
                     f"{'met' if ratio <= 1 else 'NOT met'}")
    return lines


if __name__ == "__main__":
    main()
