"""A BERT-style encoder (batch 8, sequence 128, d_model 32, 4 heads, 2 layers) run by kernelcore's Executor and by
Paddle 2.6.2's static Executor on the same program: the one Paddle wrote and saved
(tests/paddle_oracle/make_transformer_models.py's `bert_encoder`), with the same parameters and feeds.

    python bench/transformer_models.py                 # ~30 s
    python bench/transformer_models.py --quick         # smoke run, rough figures
    python bench/transformer_models.py --batch 8 --seq 128 --repeat 7

Paddle runs in its own venv (.venv-paddle2) and process, so the two sides are timed one after the other, not
interleaved: on a shared machine, load that comes and goes between them skews the ratio (say so when quoting it).
Both use their default threads. kernelcore's outputs are checked against Paddle's (1e-4 relative) before timing.
Ratio = kernelcore / Paddle, best runs.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]
from _timing import measure  # noqa: E402

import kernelcore as kc  # noqa: E402

PADDLE2 = ROOT / ".venv-paddle2" / "bin" / "python"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="smoke run: fewer, shorter repeats")
    a = ap.parse_args()
    repeat, min_s = (2, 0.05) if a.quick else (a.repeat, 0.5)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; python "
          f"{platform.python_version()}, numpy {np.__version__}")
    if not PADDLE2.exists():
        print(f"no Paddle 2.6.2 at {PADDLE2}: bash tests/paddle_oracle/setup_env.sh .venv-paddle2 2.6.2")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, GLOG_minloglevel="2", PYTHONWARNINGS="ignore", PYTHONHASHSEED="0")
        r = subprocess.run([str(PADDLE2), str(HERE / "_paddle_transformer.py"), tmp, "--batch", str(a.batch),
                            "--seq", str(a.seq), "--repeat", str(repeat), "--min-s", str(min_s)],
                           capture_output=True, text=True, env=env, timeout=1200)
        if r.returncode != 0:
            print(r.stdout[-3000:], r.stderr[-3000:])
            return 1
        pd = json.loads(r.stdout.strip().splitlines()[-1])
        prog, scope, feeds, fetches = kc.load_inference_model(Path(tmp) / "bert_encoder")
        ref = np.load(Path(tmp) / "bert_encoder.npz")
        feed = {n: ref[n] for n in feeds}
        exe = kc.Executor(kc.CPUPlace())
        outs = exe.run(prog, feed=feed, scope=scope)
        for i, o in enumerate(outs):
            np.testing.assert_allclose(o, ref[f"fetch_{i}"], rtol=1e-4, atol=1e-5)
        best, median = measure(lambda: exe.run(prog, feed=feed, scope=scope), repeat=repeat, min_s=min_s, warmup=2)
    print(f"versions: kernelcore (this tree), Paddle {pd['paddle']} (numpy {pd['numpy']})")
    print(f"BERT-style encoder, batch {a.batch}, seq {a.seq}, d_model 32, 4 heads, 2 layers: {pd['ops']} ops "
          f"(outputs match Paddle's to 1e-4)")
    print(f"  {'':28s} {'best ms':>9s} {'median ms':>10s}")
    print(f"  {'kernelcore Executor':28s} {best * 1e3:9.2f} {median * 1e3:10.2f}")
    print(f"  {'Paddle 2.6.2 static Executor':28s} {pd['best_s'] * 1e3:9.2f} {pd['median_s'] * 1e3:10.2f}")
    print(f"  ratio kernelcore / Paddle (best): {best / pd['best_s']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
