"""Make PaddlePaddle 3.3.1 (legacy IR) write training programs for the program graph's hierarchy tests and
the browser benchmark. Run with the Paddle venv's python:

    .venv-paddle/bin/python tests/paddle_oracle/make_big_programs.py tests/paddle_oracle/out/p3 [LAYERS]

Writes into OUTDIR:
    mlp<LAYERS>.main.pb  a training program (serialized ProgramDesc): an MLP of LAYERS relu `fc` layers
                         (default 640: 5,123 ops), mean loss, SGD's minimize. Ops carry Paddle's own
                         op_role, op_namescope and op_callstack attributes.
    scoped.main.pb       a small training program built inside `paddle.static.name_scope` blocks
                         ("encoder/layer_0", ...) so ops carry non-trivial op_namescope values.
    <name>.json          op count, op types and the namescopes seen, for the tests to compare against.
"""
from __future__ import annotations

import json
import os
import sys
import warnings

os.environ.setdefault("FLAGS_enable_pir_api", "0")  # must precede `import paddle`
if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable] + sys.argv)
warnings.filterwarnings("ignore")

import paddle  # noqa: E402

paddle.enable_static()


def _write(outdir, name, main):
    with open(os.path.join(outdir, name + ".main.pb"), "wb") as f:
        f.write(main.desc.serialize_to_string())
    ops = [op for b in main.blocks for op in b.ops]
    meta = {"case": name, "paddle_version": paddle.__version__, "ops": len(ops),
            "op_types": sorted({op.type for op in ops}),
            "namescopes": sorted({op.attr("op_namescope") for op in ops if op.has_attr("op_namescope")}),
            "roles": sorted({int(op.attr("op_role")) for op in ops if op.has_attr("op_role")})}
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: {meta['ops']} ops, roles {meta['roles']}, {len(meta['namescopes'])} namescopes")


def make_mlp(outdir, layers):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        paddle.utils.unique_name.switch()
        h = paddle.static.data("x", [-1, 16], "float32")
        for _ in range(layers):
            h = paddle.static.nn.fc(h, 16, activation="relu")
        loss = paddle.mean(h)
        paddle.optimizer.SGD(learning_rate=0.01).minimize(loss, startup)
    _write(outdir, f"mlp{layers}", main)


def make_scoped(outdir):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        paddle.utils.unique_name.switch()
        h = paddle.static.data("x", [-1, 8], "float32")
        with paddle.static.name_scope("encoder"):
            for i in range(3):
                with paddle.static.name_scope(f"layer_{i}"):
                    h = paddle.static.nn.fc(h, 8, activation="relu")
        with paddle.static.name_scope("head"):
            h = paddle.static.nn.fc(h, 4)
        loss = paddle.mean(h)
        paddle.optimizer.SGD(learning_rate=0.01).minimize(loss, startup)
    _write(outdir, "scoped", main)


def main(argv):
    outdir = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "out", "p3")
    layers = int(argv[2]) if len(argv) > 2 else 640
    os.makedirs(outdir, exist_ok=True)
    make_mlp(outdir, layers)
    make_scoped(outdir)


if __name__ == "__main__":
    main(sys.argv)
