"""Paddle's side of bench/lstm_models.py; run with Paddle's own python.

    .venv-paddle/bin/python bench/_paddle_lstm.py OUTDIR REPEAT

Builds paddle.nn.LSTM(I, H, num_layers=2) in legacy static mode at batch B, T steps (the fused `rnn` op), saves
the inference model (OUTDIR/lstm.pdmodel + .pdiparams + .npz with the feed and Paddle's output) and a training
program (loss = mean(out), one SGD step: OUTDIR/lstm_train.main.pb, its initial parameters and Paddle's loss in
lstm_train.npz), times REPEAT inference runs and REPEAT training steps of Paddle's Executor, and prints one JSON
line of the seconds each took.
"""
from __future__ import annotations

import json
import os
import sys
import time
import warnings

os.environ["FLAGS_enable_pir_api"] = "0"  # must precede `import paddle`
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

B, T, I, H = 32, 50, 128, 256
SEED = 7


def main() -> None:
    outdir, repeat = sys.argv[1], int(sys.argv[2])
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
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            exe.run(prog, feed={"x": x}, fetch_list=fetches)
            times.append(time.perf_counter() - t0)
    out["infer_s"] = times

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
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            exe.run(main_p, feed={"x": x}, fetch_list=[loss])
            times.append(time.perf_counter() - t0)
    with open(os.path.join(outdir, "lstm_train.main.pb"), "wb") as f:
        f.write(main_p.desc.serialize_to_string())
    np.savez(os.path.join(outdir, "lstm_train.npz"), x=x, loss=np.asarray(loss0),
             **{f"init/{n}": v for n, v in init.items()})
    out.update(train_s=times, loss=loss.name, params=params, lr=0.01)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
