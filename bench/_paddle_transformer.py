"""Paddle 2.6.2's static Executor on the BERT-style encoder of tests/paddle_oracle/make_transformer_models.py;
run with Paddle 2.6.2's own python (the 3.x legacy IR cannot build paddle.nn.Transformer*).

    .venv-paddle2/bin/python bench/_paddle_transformer.py OUTDIR [--batch 8] [--seq 128] [--repeat 7] [--min-s 0.5]

Writes the model with save_inference_model to OUTDIR/bert_encoder (+ .npz: feeds and Paddle's outputs), loads it
back into a fresh scope (the program kernelcore will run), times `exe.run` of it and prints one JSON object:
versions, seconds per run (best, median).
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "tests", "paddle_oracle")]

import numpy as np  # noqa: E402
import paddle  # noqa: E402

import make_transformer_models as models  # noqa: E402
from _timing import measure  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--min-s", type=float, default=0.5)
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    models.make_inference_case(a.outdir, "bert_encoder", functools.partial(models.build_bert, a.batch, a.seq))
    prefix = os.path.join(a.outdir, "bert_encoder")
    ref = np.load(prefix + ".npz")
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe = paddle.static.Executor(paddle.CPUPlace())
        prog, feed_names, fetch_targets = paddle.static.load_inference_model(prefix, exe)
        feed = {n: ref[n] for n in feed_names}
        best, median = measure(lambda: exe.run(prog, feed=feed, fetch_list=fetch_targets), repeat=a.repeat,
                               min_s=a.min_s, warmup=2)
    print(json.dumps({"paddle": paddle.__version__, "numpy": np.__version__, "ops": len(prog.global_block().ops),
                      "best_s": best, "median_s": median}))


if __name__ == "__main__":
    main()
