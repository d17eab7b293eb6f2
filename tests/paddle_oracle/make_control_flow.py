"""Make PaddlePaddle 2.6.2 (old IR, its default) write control-flow programs and reference outputs.

Run with the Paddle 2.6.2 venv's python (setup_env.sh .venv-paddle2 2.6.2):

    .venv-paddle2/bin/python tests/paddle_oracle/make_control_flow.py tests/paddle_oracle/out/p2

For every case <case> it writes into OUTDIR:
    <case>.pb      main_program.desc.serialize_to_string(): the whole ProgramDesc, no feed/fetch ops
    <case>.npz     run 0: feeds (keys = feed names), Paddle's outputs fetch_0, fetch_1, ..., and
                   persist/<name> for every persistable var (parameters) as the startup program set them
    <case>.runN.npz further runs of the same program with other feeds (same keys), where a case has them
    <case>.json    feed names, fetch names, op types per block, and the full ProgramDesc as a dict
                   (protobuf MessageToDict, op_callstack attrs dropped) to read the exact slot/attr layout
Cases: while_loop, cond, while_cond (a cond nested in a while body), recurrent, recurrent_reverse.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")

# Paddle's control-flow builders collect input/output var names in Python sets, so slot order (while X/Out,
# conditional_block Input/Out) follows string hashing; pin the hash seed so the written bytes are reproducible.
if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable] + sys.argv)

import numpy as np  # noqa: E402
import paddle  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from paddle.base import core  # noqa: E402
from paddle.base.proto import framework_pb2  # noqa: E402

paddle.enable_static()
SEED = 20261122


def program_dict(program):
    desc = framework_pb2.ProgramDesc.FromString(program.desc.serialize_to_string())
    for b in desc.blocks:
        for op in b.ops:
            keep = [a for a in op.attrs if a.name != "op_callstack"]
            del op.attrs[:]
            op.attrs.extend(keep)
    return json_format.MessageToDict(desc)


# ---------------------------------------------------------------------------------------------------------------
# cases: each returns (feed_names, fetch_vars, [feeds run 0, feeds run 1, ...])
# ---------------------------------------------------------------------------------------------------------------


def build_while_loop():
    x = paddle.static.data("x", [4, 3], "float32")
    i = paddle.full([1], 0, "int64")
    n = paddle.full([1], 10, "int64")
    x0 = paddle.scale(x, 1.0)  # copy: while_loop writes its results back into the loop vars themselves
    acc = paddle.full([4, 3], 0.0, "float32")

    def cond(i, x, acc):
        return i < n

    def body(i, x, acc):
        x = paddle.scale(x, scale=0.5, bias=1.0)  # x = x*0.5 + 1
        acc = acc + x * x
        i = paddle.increment(i)
        return [i, x, acc]

    i_out, x_out, acc_out = paddle.static.nn.while_loop(cond, body, [i, x0, acc])
    rng = np.random.default_rng(10)
    feeds = {"x": rng.standard_normal((4, 3)).astype("float32")}
    return ["x"], [i_out, x_out, acc_out], [feeds]


def build_cond():
    x = paddle.static.data("x", [4, 3], "float32")
    y = paddle.static.data("y", [4, 3], "float32")
    p = paddle.static.data("p", [1], "float32")
    pred = paddle.mean(p) > 0.0

    def true_fn():
        return paddle.exp(x) * 2.0, x + y

    def false_fn():
        return x - 1.0, x * y

    a, b = paddle.static.nn.cond(pred, true_fn, false_fn)
    out = a + b  # use both select_input results after the cond
    rng = np.random.default_rng(11)
    x_v = rng.standard_normal((4, 3)).astype("float32")
    y_v = rng.standard_normal((4, 3)).astype("float32")
    runs = [
        {"x": x_v, "y": y_v, "p": np.array([0.5], "float32")},  # true branch
        {"x": x_v, "y": y_v, "p": np.array([-0.5], "float32")},  # false branch
    ]
    return ["x", "y", "p"], [a, b, out], runs


def build_while_cond():
    x = paddle.static.data("x", [2, 3], "float32")
    i = paddle.full([1], 0, "int64")
    n = paddle.full([1], 6, "int64")
    three = paddle.full([1], 3, "int64")
    x0 = paddle.scale(x, 1.0)

    def cond(i, x):
        return i < n

    def body(i, x):
        x = paddle.static.nn.cond(i < three, lambda: paddle.scale(x, 2.0), lambda: paddle.scale(x, 1.0, -1.0))
        i = paddle.increment(i)
        return [i, x]

    i_out, x_out = paddle.static.nn.while_loop(cond, body, [i, x0])
    rng = np.random.default_rng(12)
    feeds = {"x": rng.standard_normal((2, 3)).astype("float32")}
    return ["x"], [i_out, x_out], [feeds]


T, B, D, H = 5, 2, 3, 4


def _build_recurrent(reverse):
    """h_t = tanh(x_t W + h_{t-1} U), out_t = h_t, built as StaticRNN used to (block API; assign stands in for the
    rnn_memory_helper op, which 2.6.2 no longer registers)."""
    main = paddle.static.default_main_program()
    parent = main.current_block()
    x = paddle.static.data("x", [T, B, D], "float32")
    h0 = paddle.static.data("h0", [B, H], "float32")
    init = paddle.nn.initializer.Normal(0.0, 0.5)
    w = paddle.static.create_parameter([D, H], "float32", name="rnn_w", default_initializer=init)
    u = paddle.static.create_parameter([H, H], "float32", name="rnn_u", default_initializer=init)

    rnn_block = main._create_block()
    # step input: a var in the sub-block with the *same name* as the outer sequence, one step's shape
    x_t = rnn_block.create_var(name=x.name, shape=[B, D], dtype="float32")
    # ex_state: the previous step's state, named in attr ex_states
    h_prev = rnn_block.create_var(name="rnn@mem", shape=[B, H], dtype="float32")
    h = paddle.tanh(paddle.matmul(x_t, w) + paddle.matmul(h_prev, u))
    h_state = paddle.assign(h)  # attr states names this var
    h_out = paddle.assign(h)  # step output: same name inside and outside
    main._rollback()

    out = parent.create_var(name=h_out.name, shape=[T, B, H], dtype="float32")
    step_scopes = parent.create_var(name="rnn_step_scopes", type=core.VarDesc.VarType.STEP_SCOPES)
    attrs = {
        "has_states": True,
        "ex_states": [h_prev.name],
        "states": [h_state.name],
        "sub_block": rnn_block,
    }
    if reverse:
        attrs["reverse"] = True
    parent.append_op(
        type="recurrent",
        inputs={"inputs": [x], "initial_states": [h0], "parameters": [w, u]},
        outputs={"outputs": [out], "step_scopes": [step_scopes]},
        attrs=attrs,
    )
    last = paddle.slice(out, axes=[0], starts=[T - 1], ends=[T]) if not reverse else None
    total = paddle.sum(out)
    rng = np.random.default_rng(13 + int(reverse))
    feeds = {
        "x": rng.standard_normal((T, B, D)).astype("float32"),
        "h0": rng.standard_normal((B, H)).astype("float32"),
    }
    fetches = [out, total] + ([last] if last is not None else [])
    return ["x", "h0"], fetches, [feeds]


def build_recurrent():
    return _build_recurrent(reverse=False)


def build_recurrent_reverse():
    return _build_recurrent(reverse=True)


def rnn_numpy(x, h0, w, u, reverse):
    h = h0
    out = np.zeros((x.shape[0], x.shape[1], w.shape[1]), np.float32)
    steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    for t in steps:
        h = np.tanh(x[t] @ w + h @ u)
        out[t] = h
    return out


CASES = {
    "while_loop": build_while_loop,
    "cond": build_cond,
    "while_cond": build_while_cond,
    "recurrent": build_recurrent,
    "recurrent_reverse": build_recurrent_reverse,
}


def make_case(outdir, name, builder):
    main = paddle.static.Program()
    startup = paddle.static.Program()
    main.random_seed = SEED
    startup.random_seed = SEED
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope), paddle.static.program_guard(main, startup):
        paddle.utils.unique_name.switch()
        feed_names, fetch_vars, runs = builder()
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        pnames = sorted(
            v.name
            for v in main.list_vars()
            if v.persistable and v.type == core.VarDesc.VarType.LOD_TENSOR and v.name not in ("feed", "fetch")
        )
        persist = {n: np.array(scope.find_var(n).get_tensor()) for n in pnames}
        results = []
        for feeds in runs:
            results.append(exe.run(main, feed=feeds, fetch_list=fetch_vars))

    prefix = os.path.join(outdir, name)
    with open(prefix + ".pb", "wb") as f:
        f.write(main.desc.serialize_to_string())
    run_files = []
    for k, (feeds, outs) in enumerate(zip(runs, results)):
        arrays = dict(feeds)
        for i, o in enumerate(outs):
            arrays[f"fetch_{i}"] = np.asarray(o)
        for n, v in persist.items():
            arrays[f"persist/{n}"] = v
        fname = f"{name}.npz" if k == 0 else f"{name}.run{k}.npz"
        np.savez(os.path.join(outdir, fname), **arrays)
        run_files.append(fname)

    # self-checks against numpy, so the references are known to mean what NOTES.md says
    if name.startswith("recurrent"):
        for feeds, outs in zip(runs, results):
            ref = rnn_numpy(feeds["x"], feeds["h0"], persist["rnn_w"], persist["rnn_u"], name.endswith("reverse"))
            np.testing.assert_allclose(outs[0], ref, rtol=1e-5, atol=1e-5)
    if name == "while_loop":
        x = runs[0]["x"].astype(np.float64)
        acc = np.zeros_like(x)
        for _ in range(10):
            x = x * 0.5 + 1
            acc += x * x
        np.testing.assert_allclose(results[0][1], x, rtol=1e-5)
        np.testing.assert_allclose(results[0][2], acc, rtol=1e-5)
    if name == "cond":
        f = runs[0]
        np.testing.assert_allclose(results[0][0], np.exp(f["x"]) * 2, rtol=1e-5)
        np.testing.assert_allclose(results[1][1], f["x"] * f["y"], rtol=1e-5)
    if name == "while_cond":
        x = runs[0]["x"].copy()
        for i in range(6):
            x = x * 2 if i < 3 else x - 1
        np.testing.assert_allclose(results[0][1], x, rtol=1e-5)

    meta = {
        "case": name,
        "paddle_version": paddle.__version__,
        "feed_names": feed_names,
        "fetch_names": [v.name for v in fetch_vars],
        "fetch_shapes": [list(np.asarray(o).shape) for o in results[0]],
        "runs": run_files,
        "persistables": pnames,
        "blocks": [
            {"idx": b.idx, "parent_idx": b.parent_idx, "op_types": [op.type for op in b.ops]} for b in main.blocks
        ],
        "program": program_dict(main),
    }
    with open(prefix + ".json", "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: " + "; ".join(f"block{b['idx']}<-{b['parent_idx']}: {b['op_types']}" for b in meta["blocks"]))


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    for name, builder in CASES.items():
        make_case(outdir, name, builder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
