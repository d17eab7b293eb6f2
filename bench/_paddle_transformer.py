"""Paddle 2.6.2's side of bench/transformer_models.py: it writes the BERT-style encoder's programs, then its static
Executor serves timed runs of them; run with Paddle 2.6.2's own python (the 3.x legacy IR cannot build
paddle.nn.Transformer*).

    .venv-paddle2/bin/python bench/_paddle_transformer.py OUTDIR --write [--batch 8] [--seq 128]
    FLAGS_paddle_num_threads=N .venv-paddle2/bin/python bench/_paddle_transformer.py OUTDIR bert_encoder train_bert_adam

--write: tests/paddle_oracle/make_transformer_models.py's cases at that size: the inference model `bert_encoder`
(save_inference_model: OUTDIR/bert_encoder.pdmodel/.pdiparams, .npz: feeds and Paddle's outputs) and the training
case `train_bert_adam` (the same encoder, dropout 0, a Linear classifier, cross entropy, Adam: .main.pb, .npz with
feeds, loss, init/ and after/ of every persistable, .json); prints one JSON line (version, op counts).

Otherwise a timing server (bench/_paddle_server.py's protocol): it loads the named cases (the inference model back
into a fresh scope, the training program from its .main.pb), prints one JSON line {"paddle", "numpy", "threads",
"ops": {NAME: op count}, "loss": {training NAME: first loss}}, then answers "NAME COUNT" lines from stdin with a
JSON list of the seconds each of COUNT Executor.run calls took; a training step starts from the initial
persistables, restored before it, untimed. An empty line or EOF ends it.
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
from _timed_runs import serve as serve_requests  # noqa: E402

INFERENCE, TRAINING = "bert_encoder", "train_bert_adam"


def write(outdir: str, batch: int, seq: int) -> None:
    os.makedirs(outdir, exist_ok=True)
    models.make_inference_case(outdir, INFERENCE, functools.partial(models.build_bert, batch, seq))
    models.make_train_case(outdir, TRAINING, models.TRAIN_CASES[TRAINING][1],
                           functools.partial(models.build_train_bert, batch, seq))


def inference_runner(prefix: str):
    ref = np.load(prefix + ".npz")
    scope = paddle.static.Scope()
    exe = paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(scope):
        prog, feed_names, fetch_targets = paddle.static.load_inference_model(prefix, exe)
    feed = {n: ref[n] for n in feed_names}

    def run():
        with paddle.static.scope_guard(scope):
            return exe.run(prog, feed=feed, fetch_list=fetch_targets)

    return prog, None, run, None


def training_runner(prefix: str):
    meta = json.load(open(prefix + ".json"))
    ref = np.load(prefix + ".npz")
    with open(prefix + ".main.pb", "rb") as f:
        prog = paddle.static.Program.parse_from_string(f.read())
    place = paddle.CPUPlace()
    scope = paddle.static.Scope()
    exe = paddle.static.Executor(place)
    init = {k[len("init/"):]: ref[k] for k in ref.files if k.startswith("init/")}
    feed = {n: ref[n] for n in meta["feed_names"]}

    def reset():
        for n, v in init.items():
            scope.var(n).get_tensor().set(v, place)

    def step():
        with paddle.static.scope_guard(scope):
            return exe.run(prog, feed=feed, fetch_list=[meta["loss_name"]])

    reset()
    loss = float(np.asarray(step()[0]).reshape(-1)[0])
    return prog, reset, step, loss


def serve(outdir: str, names: list[str]) -> None:
    runs, ops, losses = {}, {}, {}
    for name in names:
        prefix = os.path.join(outdir, name)
        prog, reset, run, loss = (training_runner if name.startswith("train_") else inference_runner)(prefix)
        for _ in range(2):  # warm-up
            if reset is not None:
                reset()
            run()
        runs[name] = (reset, run)
        ops[name] = len(prog.global_block().ops)
        if loss is not None:
            losses[name] = loss
    print(json.dumps({"paddle": paddle.__version__, "numpy": np.__version__,
                      "threads": paddle.get_flags(["FLAGS_paddle_num_threads"]), "ops": ops, "loss": losses},
                     default=str), flush=True)
    serve_requests(runs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("names", nargs="*")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    a = ap.parse_args()
    if a.write:
        write(a.outdir, a.batch, a.seq)
        print(json.dumps({"paddle": paddle.__version__, "numpy": np.__version__}))
    else:
        serve(a.outdir, a.names)


if __name__ == "__main__":
    main()
