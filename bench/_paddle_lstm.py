"""Paddle's side of bench/lstm_models.py; run with Paddle's own python.

    .venv-paddle/bin/python bench/_paddle_lstm.py OUTDIR

Builds paddle.nn.LSTM(I, H, num_layers=2) in legacy static mode at batch B, T steps (the fused `rnn` op), saves
the inference model (OUTDIR/lstm.pdmodel + .pdiparams + .npz with the feed and Paddle's output) and a training
program (loss = mean(out), one SGD step: OUTDIR/lstm_train.main.pb, its initial parameters and Paddle's loss in
lstm_train.npz), prints one JSON line describing them, then serves timed windows of its Executor from stdin
(bench/_timed_runs.py's protocol: "infer COUNT WARM_S" or "train COUNT WARM_S"), so that bench/lstm_models.py
alternates them with kernelcore's and PyTorch's windows and load from other processes falls on every side alike.
"""
from __future__ import annotations

import json
import os
import sys
import warnings

os.environ["FLAGS_enable_pir_api"] = "0"  # must precede `import paddle`
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

from _timed_runs import serve  # noqa: E402

B, T, I, H = 32, 50, 128, 256
SEED = 7


def main() -> None:
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    paddle.enable_static()
    paddle.seed(SEED)
    x = np.random.default_rng(0).standard_normal((B, T, I)).astype("float32")
    exe = paddle.static.Executor(paddle.CPUPlace())
    out = {"paddle": paddle.__version__, "B": B, "T": T, "I": I, "H": H}

    # inference
    main_p, startup = paddle.static.Program(), paddle.static.Program()
    main_p.random_seed = startup.random_seed = SEED
    with paddle.static.program_guard(main_p, startup):
        xv = paddle.static.data("x", [-1, T, I], "float32")
        y, _ = paddle.nn.LSTM(I, H, num_layers=2)(xv)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        prefix = os.path.join(outdir, "lstm")
        paddle.static.save_inference_model(prefix, [xv], [y], exe, program=main_p)
        prog, feeds, fetches = paddle.static.load_inference_model(prefix, exe)
        (ref,) = exe.run(prog, feed={"x": x}, fetch_list=fetches)
        np.savez(prefix + ".npz", x=x, fetch_0=ref)
    infer_scope = scope

    def infer():
        with paddle.static.scope_guard(infer_scope):
            exe.run(prog, feed={"x": x}, fetch_list=fetches)

    # one training step
    main_p, startup = paddle.static.Program(), paddle.static.Program()
    main_p.random_seed = startup.random_seed = SEED
    with paddle.static.program_guard(main_p, startup):
        xv = paddle.static.data("x", [-1, T, I], "float32")
        y, _ = paddle.nn.LSTM(I, H, num_layers=2)(xv)
        loss = paddle.mean(y)
        _, grads = paddle.optimizer.SGD(learning_rate=0.01).minimize(loss)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        params = [p.name for p, _ in grads]
        init = {n: np.array(scope.find_var(n).get_tensor()) for n in params}
        (loss0,) = exe.run(main_p, feed={"x": x}, fetch_list=[loss])

    def train():  # the parameters move a step each call: the timing, not the values, is what is served
        with paddle.static.scope_guard(scope):
            exe.run(main_p, feed={"x": x}, fetch_list=[loss])
    with open(os.path.join(outdir, "lstm_train.main.pb"), "wb") as f:
        f.write(main_p.desc.serialize_to_string())
    np.savez(os.path.join(outdir, "lstm_train.npz"), x=x, loss=np.asarray(loss0),
             **{f"init/{n}": v for n, v in init.items()})
    out.update(loss=loss.name, params=params, lr=0.01)
    print(json.dumps(out), flush=True)
    serve({"infer": (None, infer), "train": (None, train)})


if __name__ == "__main__":
    main()
