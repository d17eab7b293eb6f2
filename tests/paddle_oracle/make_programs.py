"""Make PaddlePaddle 3.3.1 (legacy IR) write programs and reference outputs for parity tests.

Run with the Paddle venv's python (see setup_env.sh):

    .venv-paddle/bin/python tests/paddle_oracle/make_programs.py tests/paddle_oracle/out/p3

For every inference case <case> it writes into OUTDIR:
    <case>.pdmodel    serialized ProgramDesc (paddle.static.save_inference_model, feed/fetch ops included)
    <case>.pdiparams  the persistables (save_combine format; see NOTES.md)
    <case>.npz        feed arrays (keys = feed names) and Paddle's executor outputs (fetch_0, fetch_1, ...)
    <case>.json       feed names, fetch names, op types of the saved program, persistable names/shapes
The training case `train_mlp` writes train_mlp.main.pb / train_mlp.startup.pb (serialized ProgramDescs),
train_mlp.npz (feeds, `loss`, `init/<var>` and `after/<var>` for every persistable var) and train_mlp.json.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

os.environ.setdefault("FLAGS_enable_pir_api", "0")  # must precede `import paddle`

# Paddle's control-flow builders collect input/output var names in Python sets, so slot order (while X/Out,
# conditional_block Input/Out) follows string hashing; pin the hash seed so the written bytes are reproducible.
if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable] + sys.argv)
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402
from paddle.base.layer_helper import LayerHelper  # noqa: E402

paddle.enable_static()
SEED = 20261122


def legacy_op(type_, inputs, attrs=None, outs=("Out",), dtype="float32"):
    """Append a legacy op through LayerHelper.

    In Paddle 3.3.1 legacy mode many paddle.* functions (sigmoid, exp, tanh, matmul, sum, ...) dispatch straight to
    PIR's _C_ops and fail with "must be Value, but got Variable"; this writes the old op directly instead.
    """
    helper = LayerHelper(type_)
    out_vars = {k: [helper.create_variable_for_type_inference(dtype)] for k in outs}
    helper.append_op(
        type=type_,
        inputs={k: (v if isinstance(v, list) else [v]) for k, v in inputs.items()},
        outputs=out_vars,
        attrs=attrs or {},
    )
    res = [out_vars[k][0] for k in outs]
    return res[0] if len(res) == 1 else res


def block_summary(program):
    blocks = []
    for b in program.blocks:
        blocks.append(
            {
                "idx": b.idx,
                "parent_idx": b.parent_idx,
                "op_types": [op.type for op in b.ops],
            }
        )
    return blocks


def persistable_info(program):
    out = {}
    for v in program.list_vars():
        if v.persistable and v.name not in ("feed", "fetch"):
            try:
                shape = list(v.shape)
            except Exception:
                shape = None
            out[v.name] = {"shape": shape, "dtype": str(v.dtype)}
    return dict(sorted(out.items()))


# ---------------------------------------------------------------------------------------------------------------
# inference cases
# ---------------------------------------------------------------------------------------------------------------


def build_mlp():
    x = paddle.static.data("x", [8, 13], "float32")
    h = paddle.static.nn.fc(x, 32, activation="relu")
    h = paddle.static.nn.fc(h, 16, activation="tanh")
    y = paddle.static.nn.fc(h, 10, activation="softmax")
    rng = np.random.default_rng(1)
    feeds = {"x": rng.standard_normal((8, 13)).astype("float32")}
    return [x], [y], feeds


def build_mlp_sigmoid_mean():
    x = paddle.static.data("x", [8, 13], "float32")
    h = paddle.static.nn.fc(x, 16, activation="sigmoid")  # mul, elementwise_add, sigmoid
    w = paddle.static.create_parameter(
        [16, 12], "float32", name="mm_w", default_initializer=paddle.nn.initializer.Normal(0.0, 0.5)
    )
    m = legacy_op("matmul_v2", {"X": h, "Y": w}, {"trans_x": False, "trans_y": False})  # [8,12]
    e = legacy_op("exp", {"X": paddle.scale(m, scale=0.5, bias=-0.25)})  # scale, exp
    s = legacy_op("sigmoid", {"X": m})
    a = m - e  # elementwise_sub
    b = a * s  # elementwise_mul
    c = b / (e + 1.0)  # scale, elementwise_div
    cc = paddle.concat([c, e], axis=1)  # [8,24]
    r = paddle.reshape(cc, [8, 4, 6])  # reshape2
    t = paddle.transpose(r, [0, 2, 1])  # transpose2 -> [8,6,4]
    p0, p1 = paddle.split(t, 2, axis=1)  # split -> 2 x [8,3,4]
    u = p0 * p1 - p1  # elementwise_mul, elementwise_sub
    rs = legacy_op("reduce_sum", {"X": u}, {"dim": [2], "keep_dim": False, "reduce_all": False})  # [8,3]
    mean = paddle.mean(rs)  # reduce_mean -> []
    bias = paddle.static.create_parameter(
        [3], "float32", name="row_bias", default_initializer=paddle.nn.initializer.Uniform(-1.0, 1.0)
    )
    rb = rs + bias  # elementwise_add with broadcast (axis=-1)
    ctx = legacy_op("tanh", {"X": rb})
    rng = np.random.default_rng(2)
    feeds = {"x": rng.standard_normal((8, 13)).astype("float32")}
    return [x], [ctx, mean, t], feeds


CASES = {
    "mlp": build_mlp,
    "mlp_sigmoid_mean": build_mlp_sigmoid_mean,
}


def make_inference_case(outdir, name, builder):
    main = paddle.static.Program()
    startup = paddle.static.Program()
    main.random_seed = SEED
    startup.random_seed = SEED
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope), paddle.static.program_guard(main, startup):
        paddle.utils.unique_name.switch()  # fresh names (fc_0, ...) per case
        feed_vars, fetch_vars, feeds = builder()
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        outs = exe.run(main, feed=feeds, fetch_list=fetch_vars)
        prefix = os.path.join(outdir, name)
        paddle.static.save_inference_model(prefix, feed_vars, fetch_vars, exe, program=main)

    # read the saved program back: record what it holds and check Paddle reproduces its own outputs from the files
    scope2 = paddle.static.Scope()
    with paddle.static.scope_guard(scope2):
        exe2 = paddle.static.Executor(paddle.CPUPlace())
        prog, feed_names, fetch_targets = paddle.static.load_inference_model(prefix, exe2)
        outs2 = exe2.run(prog, feed=feeds, fetch_list=fetch_targets)
    for a, b in zip(outs, outs2):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)

    arrays = dict(feeds)
    for i, o in enumerate(outs):
        arrays[f"fetch_{i}"] = np.asarray(o)
    np.savez(prefix + ".npz", **arrays)
    meta = {
        "case": name,
        "paddle_version": paddle.__version__,
        "feed_names": list(feed_names),
        "fetch_names": [v.name for v in fetch_targets],
        "fetch_shapes": [list(np.asarray(o).shape) for o in outs],
        "op_types": [op.type for op in prog.global_block().ops],
        "blocks": block_summary(prog),
        "persistables": persistable_info(prog),
    }
    with open(prefix + ".json", "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: ops={meta['op_types']}")


# ---------------------------------------------------------------------------------------------------------------
# training case
# ---------------------------------------------------------------------------------------------------------------


def make_train_mlp(outdir):
    name = "train_mlp"
    main = paddle.static.Program()
    startup = paddle.static.Program()
    main.random_seed = SEED
    startup.random_seed = SEED
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope), paddle.static.program_guard(main, startup):
        paddle.utils.unique_name.switch()
        x = paddle.static.data("x", [8, 13], "float32")
        label = paddle.static.data("label", [8, 1], "int64")
        h = paddle.static.nn.fc(x, 32, activation="relu")
        logits = paddle.static.nn.fc(h, 10)
        ce = paddle.nn.functional.softmax_with_cross_entropy(logits, label)
        loss = paddle.mean(ce)
        paddle.optimizer.SGD(learning_rate=0.1).minimize(loss, startup)

        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        pnames = sorted(persistable_info(main).keys())

        def snapshot():
            return {n: np.array(scope.find_var(n).get_tensor()) for n in pnames}

        init = snapshot()
        rng = np.random.default_rng(3)
        feeds = {
            "x": rng.standard_normal((8, 13)).astype("float32"),
            "label": rng.integers(0, 10, size=(8, 1)).astype("int64"),
        }
        (loss_v,) = exe.run(main, feed=feeds, fetch_list=[loss])
        after = snapshot()

    check_train_step_numpy(feeds, init, after, float(loss_v))

    prefix = os.path.join(outdir, name)
    with open(prefix + ".main.pb", "wb") as f:
        f.write(main.desc.serialize_to_string())
    with open(prefix + ".startup.pb", "wb") as f:
        f.write(startup.desc.serialize_to_string())
    arrays = dict(feeds)
    arrays["loss"] = np.asarray(loss_v)
    for n in pnames:
        arrays[f"init/{n}"] = init[n]
        arrays[f"after/{n}"] = after[n]
    np.savez(prefix + ".npz", **arrays)
    params = [p.name for p in main.all_parameters()]
    meta = {
        "case": name,
        "paddle_version": paddle.__version__,
        "feed_names": ["x", "label"],
        "loss_name": loss.name,
        "learning_rate": 0.1,
        "parameters": sorted(params),
        "persistables": persistable_info(main),
        "op_types": [op.type for op in main.global_block().ops],
        "blocks": block_summary(main),
        "startup_op_types": [op.type for op in startup.global_block().ops],
        "npz_keys": "feeds by name; loss; init/<persistable> after startup; after/<persistable> after one step",
    }
    with open(prefix + ".json", "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: ops={meta['op_types']}")
    print(f"{name}: startup ops={meta['startup_op_types']}")


def check_train_step_numpy(feeds, init, after, loss):
    """Recompute the forward pass, gradients and one SGD step in float64 numpy; assert Paddle agrees."""
    x, lab = feeds["x"].astype(np.float64), feeds["label"][:, 0]
    w0, b0, w1, b1 = (init[k].astype(np.float64) for k in ("fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"))
    lr = float(init["learning_rate_0"])
    z0 = x @ w0 + b0
    h = np.maximum(z0, 0)
    logits = h @ w1 + b1
    e = np.exp(logits - logits.max(1, keepdims=True))
    sm = e / e.sum(1, keepdims=True)
    n = x.shape[0]
    ref_loss = -np.log(sm[np.arange(n), lab]).mean()
    g = sm.copy()
    g[np.arange(n), lab] -= 1
    g /= n
    gw1, gb1 = h.T @ g, g.sum(0)
    gh = (g @ w1.T) * (z0 > 0)
    gw0, gb0 = x.T @ gh, gh.sum(0)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-5)
    for k, w, gw in (("fc_0.w_0", w0, gw0), ("fc_0.b_0", b0, gb0), ("fc_1.w_0", w1, gw1), ("fc_1.b_0", b1, gb1)):
        np.testing.assert_allclose(after[k], w - lr * gw, rtol=1e-5, atol=1e-6)


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    for name, builder in CASES.items():
        make_inference_case(outdir, name, builder)
    make_train_mlp(outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
