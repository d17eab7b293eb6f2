"""Paddle's legacy static Executor on saved inference models; run with Paddle's own python.

    .venv-paddle/bin/python bench/_paddle_models.py DIR NAME [NAME ...]

Loads DIR/NAME.pdmodel + .pdiparams (paddle.static.load_inference_model) with DIR/NAME.npz's feed arrays, runs
each once (warm-up), prints one JSON line {"paddle": version, "threads": ..., "ready": [names]}, then serves
requests from stdin, one per line: "NAME COUNT" runs that model COUNT times and prints a JSON list of the seconds
each Executor.run took. bench/models.py alternates these windows with kernelcore's, so that load from other
processes falls on both alike. An empty line or EOF ends it.
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
    runs = {}
    for name in names:
        prefix = os.path.join(outdir, name)
        ref = np.load(prefix + ".npz")
        scope = paddle.static.Scope()
        with paddle.static.scope_guard(scope):
            exe = paddle.static.Executor(paddle.CPUPlace())
            prog, feed_names, fetch_targets = paddle.static.load_inference_model(prefix, exe)
        feed = {n: ref[n] for n in feed_names}

        def run(exe=exe, prog=prog, feed=feed, fetch=fetch_targets, scope=scope):
            with paddle.static.scope_guard(scope):
                return exe.run(prog, feed=feed, fetch_list=fetch)
        for _ in range(3):
            run()
        runs[name] = run
    print(json.dumps({"paddle": paddle.__version__, "threads": paddle.get_flags(["FLAGS_paddle_num_threads"]),
                      "ready": names}, default=str), flush=True)
    serve({name: (None, run) for name, run in runs.items()})


if __name__ == "__main__":
    main()
