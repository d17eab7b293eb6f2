"""Make PaddlePaddle 3.3.1 (legacy IR) differentiate small programs, for kernelcore's backward parity tests.

    .venv-paddle/bin/python tests/paddle_oracle/make_backward_cases.py OUTDIR

For every case <c> it writes into OUTDIR:
    bw_<c>.fwd.pb   the forward program (serialized ProgramDesc, before append_backward)
    bw_<c>.bwd.pb   the same program after paddle.static.append_backward (Paddle's grad ops; no optimizer)
    bw_<c>.npz      feed/<name> (the feeds), init/<name> (parameters after the startup program) and
                    grad/<name> (every <var>@GRAD of the program, as Paddle's executor computed it)
    bw_<c>.json     loss name, append_backward's (param, grad) pairs (in Paddle's order: creation order, which a
                    serialized program does not keep) and arguments, and `same_ops_as`: the case whose backward
                    ops kernelcore must write (itself, except where kernelcore prunes more; see no_grad_set)
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

import numpy as np  # noqa: E402
import paddle  # noqa: E402

from make_programs import SEED, legacy_op  # noqa: E402

paddle.enable_static()


def param(name, shape, low=-1.0, high=1.0):
    return paddle.static.create_parameter(shape, "float32", name=name,
                                          default_initializer=paddle.nn.initializer.Uniform(low, high))


def data(name, shape, dtype="float32"):
    return paddle.static.data(name, shape, dtype)


def normal(*shape):
    return lambda rng: rng.standard_normal(shape).astype("float32")


# Each builder returns (loss, {feed name: fn(rng) -> array}, append_backward kwargs, same_ops_as): same_ops_as
# names another case whose backward ops kernelcore is to write instead of this case's own (None: this one's).
def mlp_all_ops():
    """make_programs.py's mlp_sigmoid_mean network, ending in a mean: most differentiable ops in one program."""
    x = data("x", [8, 13])
    h = paddle.static.nn.fc(x, 16, activation="sigmoid")
    w = param("mm_w", [16, 12], -0.5, 0.5)
    m = legacy_op("matmul_v2", {"X": h, "Y": w}, {"trans_x": False, "trans_y": False})
    e = legacy_op("exp", {"X": paddle.scale(m, scale=0.5, bias=-0.25)})
    s = legacy_op("sigmoid", {"X": m})
    c = ((m - e) * s) / (e + 1.0)
    cc = paddle.concat([c, e], axis=1)
    t = paddle.transpose(paddle.reshape(cc, [8, 4, 6]), [0, 2, 1])
    p0, p1 = paddle.split(t, 2, axis=1)
    u = p0 * p1 - p1
    rs = legacy_op("reduce_sum", {"X": u}, {"dim": [2], "keep_dim": False, "reduce_all": False})
    rb = rs + param("row_bias", [3])
    loss = paddle.mean(legacy_op("tanh", {"X": rb}))
    return loss, {"x": normal(8, 13)}, {}, None


def twice():
    x = param("x", [3, 4])
    return paddle.mean(legacy_op("tanh", {"X": x}) + legacy_op("exp", {"X": x})), {}, {}, None


def square():
    x = param("x", [3, 4])
    return paddle.mean(x * x), {}, {}, None


def thrice():
    x = param("x", [3, 4])
    a, b = legacy_op("tanh", {"X": x}), legacy_op("exp", {"X": x})
    return paddle.mean(a * x + b), {}, {}, None


def split_unused():
    a, _ = paddle.split(param("x", [4, 6]), 2, axis=1)
    return paddle.mean(legacy_op("tanh", {"X": a})), {}, {}, None


def concat_stopped():
    c = paddle.concat([param("x", [4, 6]), data("y", [4, 2]), param("z", [4, 3])], axis=1)
    return paddle.mean(legacy_op("sigmoid", {"X": c})), {"y": normal(4, 2)}, {}, None


def sum_scale():
    s = legacy_op("sum", {"X": [param("x", [4, 6]), param("y", [4, 6])]})
    return paddle.mean(legacy_op("tanh", {"X": paddle.scale(s, 2.0)})), {}, {}, None


def _two_branches():
    x = data("x", [3, 4])
    mul = {"x_num_col_dims": 1, "y_num_col_dims": 1}
    h = legacy_op("mul", {"X": x, "Y": param("w", [4, 5])}, mul)
    t = legacy_op("tanh", {"X": legacy_op("mul", {"X": x, "Y": param("v", [4, 5])}, mul)})
    return x, h, t


def stop_gradient_var():
    _, h, t = _two_branches()
    t.stop_gradient = True
    return paddle.mean(h + t), {"x": normal(3, 4)}, {}, None


def no_grad_set():
    """Paddle keeps tanh_grad here although nothing reads its result (v is in no_grad_set and x is data);
    kernelcore prunes that branch as Paddle itself does when the branch is cut by stop_gradient: its ops are
    to match the stop_gradient_var case's."""
    _, h, t = _two_branches()
    return paddle.mean(h + t), {"x": normal(3, 4)}, {"no_grad_set": ["v"]}, "stop_gradient_var"


def parameter_subset():
    x = data("x", [3, 4])
    h = legacy_op("mul", {"X": x, "Y": param("w", [4, 5])}, {"x_num_col_dims": 1, "y_num_col_dims": 1})
    return paddle.mean(legacy_op("relu", {"X": h + param("b", [5])})), {"x": normal(3, 4)}, \
        {"parameter_list": ["w"]}, None


def softmax_ce():
    x, label = data("x", [4, 5]), data("label", [4, 1], "int64")
    h = paddle.static.nn.fc(x, 6)
    p = legacy_op("softmax", {"X": h}, {"axis": -1})
    ce = legacy_op("cross_entropy", {"X": p, "Label": label}, {"soft_label": False, "ignore_index": -100},
                   outs=("Y",))
    feeds = {"x": normal(4, 5), "label": lambda rng: rng.integers(0, 6, (4, 1)).astype("int64")}
    return paddle.mean(ce), feeds, {}, None


def swce_soft():
    logits = param("logits", [4, 5])
    label = data("soft", [4, 5])
    _, loss = legacy_op("softmax_with_cross_entropy", {"Logits": logits, "Label": label},
                        {"soft_label": True, "axis": -1}, outs=("Softmax", "Loss"))

    def soft(rng):
        v = rng.uniform(0.1, 1.0, (4, 5))
        return (v / v.sum(1, keepdims=True)).astype("float32")
    return paddle.mean(loss), {"soft": soft}, {}, None


def embedding():
    ids = data("ids", [4, 3], "int64")
    e = legacy_op("lookup_table_v2", {"Ids": ids, "W": param("emb", [10, 6])}, {"padding_idx": -1})
    rs = legacy_op("reduce_sum", {"X": e}, {"dim": [1], "keep_dim": False, "reduce_all": False})
    feeds = {"ids": lambda rng: np.array([[1, 3, 3], [0, 9, 1], [3, 3, 3], [5, 1, 0]], dtype="int64")}
    return paddle.mean(legacy_op("tanh", {"X": rs})), feeds, {}, None


def cast_assign():
    x = param("x", [3, 4])
    d = legacy_op("cast", {"X": x}, {"in_dtype": 5, "out_dtype": 6}, dtype="float64")
    a = legacy_op("assign", {"X": d}, dtype="float64")
    return paddle.mean(legacy_op("tanh", {"X": a}, dtype="float64")), {}, {}, None


def top_k():
    x = param("x", [3, 6])
    from paddle.base.layer_helper import LayerHelper
    helper = LayerHelper("top_k")
    out = helper.create_variable_for_type_inference("float32")
    idx = helper.create_variable_for_type_inference("int64")
    helper.append_op(type="top_k", inputs={"X": [x]}, outputs={"Out": [out], "Indices": [idx]}, attrs={"k": 2})
    return paddle.mean(legacy_op("exp", {"X": out})), {}, {}, None


# paddle.nn's activation layers as Paddle writes them (its ops, attributes and grad ops' slots: relu6_grad and
# hard_sigmoid_grad read Out, elu_grad and silu_grad X and Out, ...). GELU, Sigmoid, Softplus and Tanh do not build
# in 3.3.1's legacy mode; make_transformer_models.py (Paddle 2.6.2) and the cases above write those.
ACTIVATIONS = {
    "relu6": lambda: paddle.nn.ReLU6(), "elu": lambda: paddle.nn.ELU(0.8), "celu": lambda: paddle.nn.CELU(0.7),
    "selu": lambda: paddle.nn.SELU(), "silu": lambda: paddle.nn.Silu(), "swish": lambda: paddle.nn.Swish(),
    "hardswish": lambda: paddle.nn.Hardswish(), "hardsigmoid": lambda: paddle.nn.Hardsigmoid(),
    "hardtanh": lambda: paddle.nn.Hardtanh(-1.5, 2.0), "leakyrelu": lambda: paddle.nn.LeakyReLU(0.1),
    "mish": lambda: paddle.nn.Mish(), "logsigmoid": lambda: paddle.nn.LogSigmoid(),
    "softsign": lambda: paddle.nn.Softsign(), "tanhshrink": lambda: paddle.nn.Tanhshrink(),
    "hardshrink": lambda: paddle.nn.Hardshrink(0.4), "softshrink": lambda: paddle.nn.Softshrink(0.4),
    "thresholdedrelu": lambda: paddle.nn.ThresholdedReLU(0.5), "maxout": lambda: paddle.nn.Maxout(2),
}


def _activation(make_layer):
    def build():
        x = param("x", [3, 4, 2, 3], low=-4.0, high=4.0)  # both sides of every kink and clip
        return paddle.mean(make_layer()(x)), {}, {}, None
    return build


CASES = {f.__name__: f for f in (mlp_all_ops, twice, square, thrice, split_unused, concat_stopped, sum_scale,
                                  stop_gradient_var, no_grad_set, parameter_subset, softmax_ce, swce_soft,
                                  embedding, cast_assign, top_k)}
CASES.update({f"act_{name}": _activation(make) for name, make in ACTIVATIONS.items()})


def make_case(outdir, name, builder):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = SEED
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope), paddle.static.program_guard(main, startup):
        paddle.utils.unique_name.switch()
        loss, feed_fns, kwargs, same_ops_as = builder()
        fwd_bytes = main.desc.serialize_to_string()
        pairs = paddle.static.append_backward(loss, **kwargs)
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        params = sorted(p.name for p in main.all_parameters())
        init = {n: np.array(scope.find_var(n).get_tensor()) for n in params}
        rng = np.random.default_rng(5)
        feeds = {n: fn(rng) for n, fn in feed_fns.items()}
        grads = sorted(v for v in main.global_block().vars if v.endswith("@GRAD"))
        outs = exe.run(main, feed=feeds, fetch_list=grads)
    prefix = os.path.join(outdir, f"bw_{name}")
    with open(prefix + ".fwd.pb", "wb") as f:
        f.write(fwd_bytes)
    with open(prefix + ".bwd.pb", "wb") as f:
        f.write(main.desc.serialize_to_string())
    arrays = {f"feed/{n}": v for n, v in feeds.items()}
    arrays.update({f"init/{n}": v for n, v in init.items()})
    arrays.update({f"grad/{n}": np.asarray(v) for n, v in zip(grads, outs)})
    np.savez(prefix + ".npz", **arrays)
    meta = {"case": name, "paddle_version": paddle.__version__, "loss": loss.name,
            "pairs": [[p.name, g.name] for p, g in pairs], "same_ops_as": same_ops_as or name,
            "op_types": [op.type for op in main.global_block().ops], **kwargs}
    with open(prefix + ".json", "w") as f:
        json.dump(meta, f, indent=1)
    print(f"bw_{name}: {meta['op_types']}")


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    os.makedirs(argv[1], exist_ok=True)
    for name, builder in CASES.items():
        make_case(argv[1], name, builder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
