"""Paddle's legacy static Executor on the benchmark's programs; run with Paddle's own python.

    .venv-paddle/bin/python bench/_paddle_chain.py [--ops 200] [--repeat 7] [--min-s 0.2]

Builds, in Paddle's old IR (FLAGS_enable_pir_api=0), the same programs as
executor_overhead.py: a chain of N elementwise_add ops on [1,1] float32 (h = h + y),
the same program with no ops (feeds x, y; fetches x) and a feed-x/fetch-x program;
prints one JSON object: versions, seconds per run (best, median) of each, and the
per-op cost (chain minus its zero-op twin, over N) and the per-run fixed cost.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

os.environ["FLAGS_enable_pir_api"] = "0"  # must precede `import paddle`: the legacy ProgramDesc + Executor
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402
from paddle.base.layer_helper import LayerHelper  # noqa: E402

from _timing import measure  # noqa: E402  - bench/ is sys.path[0] when run as a script


def add_op(h, y):
    """elementwise_add written directly (paddle.add may take the PIR path in 3.x legacy mode)."""
    helper = LayerHelper("elementwise_add")
    out = helper.create_variable_for_type_inference("float32")
    helper.append_op(type="elementwise_add", inputs={"X": [h], "Y": [y]}, outputs={"Out": [out]},
                     attrs={"axis": -1})
    return out


def build(n_ops: int, with_y: bool):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [1, 1], "float32")
        h = x
        if with_y:
            y = paddle.static.data("y", [1, 1], "float32")
            for _ in range(n_ops):
                h = add_op(h, y)
    return main, h


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--min-s", type=float, default=0.2)
    a = ap.parse_args()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    one = np.ones((1, 1), np.float32)
    feeds2 = {"x": one, "y": one}
    progs = {"chain": (build(a.ops, True), feeds2), "chain0": (build(0, True), feeds2),
             "fixed": (build(0, False), {"x": one})}
    res = {}
    for key, ((prog, fetch), feed) in progs.items():
        scope = paddle.static.Scope()
        with paddle.static.scope_guard(scope):
            out = exe.run(prog, feed=feed, fetch_list=[fetch])
            if key == "chain":
                assert float(out[0][0, 0]) == 1 + a.ops, out
                ops = [op.type for op in prog.global_block().ops]
            res[key] = measure(lambda: exe.run(prog, feed=feed, fetch_list=[fetch]),
                               repeat=a.repeat, min_s=a.min_s)
    per_op = tuple((c - z) / a.ops for c, z in zip(res["chain"], res["chain0"]))
    json.dump({"paddle": paddle.__version__, "numpy": np.__version__, "python": sys.version.split()[0],
               "ops": a.ops, "op_types": sorted(set(ops)), "run_s": res, "per_op_s": per_op,
               "fixed_s": res["fixed"]}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
