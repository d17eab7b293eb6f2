"""Make PaddlePaddle 3.3.1 (legacy IR) run a training program that kernelcore built (layers, append_backward,
an optimizer), for the parity tests.

    run_kc_training.py MAIN.pb STATE.npz OUT.npz

MAIN.pb is a serialized ProgramDesc (forward, gradient and update ops). STATE.npz holds `init/<name>` for
every persistable variable (the values kernelcore's startup program gave them), `feed<k>/<name>` for the
feeds of step k = 0, 1, ... and `fetch` (a string array: the names to fetch each step). Paddle loads the
initial values into a fresh scope, runs MAIN once per step with those feeds, and writes `step<k>/<fetch>`
and `after/<name>` (every persistable after the last step) to OUT.npz.
"""
from __future__ import annotations

import os
import sys
import warnings

os.environ.setdefault("FLAGS_enable_pir_api", "0")  # must precede `import paddle`
os.environ.setdefault("GLOG_minloglevel", "1")
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

paddle.enable_static()


def main(program_path, state_path, out_path):
    with open(program_path, "rb") as f:
        program = paddle.static.Program.parse_from_string(f.read())
    state = dict(np.load(state_path))
    fetch = [str(n) for n in state.pop("fetch")]
    init = {k[len("init/"):]: v for k, v in state.items() if k.startswith("init/")}
    steps = sorted({int(k.split("/")[0][len("feed"):]) for k in state if k.startswith("feed")})
    scope = paddle.static.Scope()
    place = paddle.CPUPlace()
    out = {}
    with paddle.static.scope_guard(scope):
        for name, value in init.items():
            scope.var(name).get_tensor().set(value, place)
        exe = paddle.static.Executor(place)
        for k in steps:
            feed = {key.split("/", 1)[1]: v for key, v in state.items() if key.startswith(f"feed{k}/")}
            vals = exe.run(program, feed=feed, fetch_list=fetch)
            for n, v in zip(fetch, vals):
                out[f"step{k}/{n}"] = np.asarray(v)
        for name in init:
            out[f"after/{name}"] = np.array(scope.find_var(name).get_tensor())
    np.savez(out_path, **out)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    main(*sys.argv[1:])
