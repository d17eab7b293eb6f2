"""Paddle's side of bench/cnn_train.py: its legacy static Executor running saved training programs; run with
Paddle's own python.

    FLAGS_paddle_num_threads=N .venv-paddle/bin/python bench/_paddle_train.py DIR NAME [NAME ...]

For each NAME: DIR/NAME.main.pb (the unpruned training program make_vision_models.py wrote) and DIR/NAME.npz
(feeds x, label; init/<persistable>). Prints one JSON line {"paddle": version, "threads": ..., "loss": {NAME:
first loss}}, then serves requests from stdin, one per line: "NAME COUNT" runs COUNT training steps, each from
the initial persistables (restored before the step, untimed), and prints a JSON list of the seconds each
Executor.run took. An empty line or EOF ends it.
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


def main() -> None:
    outdir, names = sys.argv[1], sys.argv[2:]
    paddle.enable_static()
    place = paddle.CPUPlace()
    runs, losses = {}, {}
    for name in names:
        prefix = os.path.join(outdir, name)
        meta = json.load(open(prefix + ".json"))
        ref = np.load(prefix + ".npz")
        with open(prefix + ".main.pb", "rb") as f:
            prog = paddle.static.Program.parse_from_string(f.read())
        scope = paddle.static.Scope()
        exe = paddle.static.Executor(place)
        init = {k[len("init/"):]: ref[k] for k in ref.files if k.startswith("init/")}
        feed = {"x": ref["x"], "label": ref["label"]}

        def reset(scope=scope, init=init):
            for n, v in init.items():
                scope.var(n).get_tensor().set(v, place)

        def step(exe=exe, prog=prog, feed=feed, scope=scope, loss=meta["loss_name"]):
            with paddle.static.scope_guard(scope):
                return exe.run(prog, feed=feed, fetch_list=[loss])

        reset()
        losses[name] = float(np.asarray(step()[0]).reshape(-1)[0])
        for _ in range(2):
            reset()
            step()
        runs[name] = (reset, step)
    print(json.dumps({"paddle": paddle.__version__, "threads": paddle.get_flags(["FLAGS_paddle_num_threads"]),
                      "loss": losses}, default=str), flush=True)
    serve(runs)


if __name__ == "__main__":
    main()
