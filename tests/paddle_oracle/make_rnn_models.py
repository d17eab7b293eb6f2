"""Make PaddlePaddle write its fused `rnn` op (paddle.nn.LSTM / GRU / SimpleRNN) and reference outputs.

Run with a Paddle venv's python (3.3.1 in legacy-IR mode, or 2.6.2):

    .venv-paddle/bin/python tests/paddle_oracle/make_rnn_models.py tests/paddle_oracle/out/rnn

For every inference case <case> it writes into OUTDIR:
    <case>.pdmodel / <case>.pdiparams   paddle.static.save_inference_model (feed/fetch ops included)
    <case>.npz      the feeds (keys = feed names) and Paddle's outputs fetch_0, fetch_1, ...
    <case>.json     feed/fetch names, op types of the saved program, and every op's slots and attrs
                    (op_callstack dropped) as Paddle wrote them, to read the exact layout
Cases (fixed seeds, batch-first input [B, T, I] as the layers default to):
    lstm2, lstm2_len            2-layer LSTM; _len: with sequence_length
    gru_bi, gru_bi_len          1-layer bidirectional GRU
    rnn_tanh, rnn_tanh_len      2-layer SimpleRNN, tanh
    rnn_relu, rnn_relu_len      1-layer bidirectional SimpleRNN, relu
    lstm_cell, gru_cell, rnn_cell   LSTMCell / GRUCell / SimpleRNNCell called once per timestep of a
                    fixed-length input (they write plain ops, no `rnn`); written only where this Paddle
                    can build them (3.3.1's legacy mode cannot: see NOTES.md)
The training case `train_lstm` (2-layer LSTM, loss = mean of its output, one SGD step, lr 0.1) writes
train_lstm.main.pb / train_lstm.startup.pb (serialized ProgramDescs), train_lstm.npz (feeds, `loss`,
`init/<param>`, `grad/<param>` and `after/<param>`) and train_lstm.json.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

os.environ.setdefault("FLAGS_enable_pir_api", "0")  # must precede `import paddle`
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

try:  # the protobuf module moved between releases
    from paddle.base.proto import framework_pb2  # noqa: E402
except ImportError:  # pragma: no cover
    from paddle.fluid.proto import framework_pb2  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from static_case import save_inference_case  # noqa: E402

paddle.enable_static()
SEED = 20261123
B, T, I, H = 4, 6, 3, 5
LENGTHS = np.array([6, 3, 1, 5], dtype="int64")


def ops_layout(program):
    """Every op of every block: type, input/output slots -> names, attrs (op_callstack dropped)."""
    desc = framework_pb2.ProgramDesc.FromString(program.desc.serialize_to_string())
    out = []
    for b in desc.blocks:
        for op in b.ops:
            attrs = {}
            for a in op.attrs:
                if a.name == "op_callstack":
                    continue
                d = json_format.MessageToDict(a)
                d.pop("name", None)
                attrs[a.name] = d
            out.append({"block": b.idx, "type": op.type,
                        "inputs": {v.parameter: list(v.arguments) for v in op.inputs},
                        "outputs": {v.parameter: list(v.arguments) for v in op.outputs},
                        "attrs": attrs})
    return out


def build_layer(kind, with_len):
    """(feed names, fetch vars, feeds): one nn.LSTM/GRU/SimpleRNN over x [B, T, I]."""
    x = paddle.static.data("x", [-1, T, I], "float32")
    feeds = {"x": np.random.default_rng(1).standard_normal((B, T, I)).astype("float32")}
    names = ["x"]
    seq_len = None
    if with_len:
        seq_len = paddle.static.data("seq_len", [-1], "int64")
        feeds["seq_len"] = LENGTHS
        names.append("seq_len")
    if kind == "lstm2":
        layer = paddle.nn.LSTM(I, H, num_layers=2)
        y, (h, c) = layer(x, sequence_length=seq_len)
        return names, [y, h, c], feeds
    if kind == "gru_bi":
        layer = paddle.nn.GRU(I, H, num_layers=1, direction="bidirect")
    elif kind == "rnn_tanh":
        layer = paddle.nn.SimpleRNN(I, H, num_layers=2, activation="tanh")
    elif kind == "rnn_relu":
        layer = paddle.nn.SimpleRNN(I, H, num_layers=1, direction="bidirect", activation="relu")
    else:
        raise ValueError(kind)
    y, h = layer(x, sequence_length=seq_len)
    return names, [y, h], feeds


def build_cell(kind):
    """A cell called once per timestep (static unrolled loop)."""
    x = paddle.static.data("x", [-1, T, I], "float32")
    feeds = {"x": np.random.default_rng(1).standard_normal((B, T, I)).astype("float32")}
    cell = {"lstm_cell": paddle.nn.LSTMCell, "gru_cell": paddle.nn.GRUCell,
            "rnn_cell": paddle.nn.SimpleRNNCell}[kind](I, H)
    state = None
    outs = []
    for t in range(T):
        y, state = cell(x[:, t, :], state)
        outs.append(y)
    # each step's output fetched by itself (no stack op), then the final state(s)
    fetch = outs + (list(state) if isinstance(state, (list, tuple)) else [state])
    return ["x"], fetch, feeds


def save_case(outdir, name, build):
    main, saved, meta = save_inference_case(outdir, name, build, SEED)
    meta.update({"op_types": [op.type for op in saved.global_block().ops],
                 "main_op_types": [op.type for op in main.global_block().ops],
                 "ops": ops_layout(saved)})
    with open(os.path.join(outdir, name) + ".json", "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    return meta


def make_train_lstm(outdir):
    """loss = mean(LSTM(x)); one SGD step (lr 0.1) — grads recorded from Paddle's own backward."""
    name = "train_lstm"
    paddle.seed(SEED)
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = SEED
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [-1, T, I], "float32")
        layer = paddle.nn.LSTM(I, H, num_layers=2)
        y, _ = layer(x)
        loss = paddle.mean(y)
        params = [p for p in main.all_parameters()]
        opt = paddle.optimizer.SGD(learning_rate=0.1)
        _, grads = opt.minimize(loss)
    feeds = {"x": np.random.default_rng(2).standard_normal((B, T, I)).astype("float32")}
    exe = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        rnn_params = [p.name for p in params if scope.find_var(p.name) is not None]
        init = {n: np.array(scope.find_var(n).get_tensor()) for n in rnn_params}
        grad_vars = [g for p, g in grads]
        res = exe.run(main, feed=feeds, fetch_list=[loss] + grad_vars)
        after = {n: np.array(scope.find_var(n).get_tensor()) for n in rnn_params}
    loss_v, grad_vals = res[0], res[1:]
    arrays = dict(feeds)
    arrays["loss"] = np.asarray(loss_v)
    for n, v in init.items():
        arrays[f"init/{n}"] = v
        arrays[f"after/{n}"] = after[n]
    for (p, _), g in zip(grads, grad_vals):
        arrays[f"grad/{p.name}"] = np.asarray(g)
    np.savez(os.path.join(outdir, name + ".npz"), **arrays)
    with open(os.path.join(outdir, name + ".main.pb"), "wb") as f:
        f.write(main.desc.serialize_to_string())
    with open(os.path.join(outdir, name + ".startup.pb"), "wb") as f:
        f.write(startup.desc.serialize_to_string())
    meta = {"paddle": paddle.__version__, "feed_names": ["x"], "loss": loss.name, "lr": 0.1,
            "params": [p.name for p, _ in grads], "grads": [g.name for _, g in grads],
            "op_types": [op.type for op in main.global_block().ops], "ops": ops_layout(main)}
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)


LAYER_CASES = ["lstm2", "gru_bi", "rnn_tanh", "rnn_relu"]
CELL_CASES = ["lstm_cell", "gru_cell", "rnn_cell"]


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    written, skipped = [], {}
    for kind in LAYER_CASES:
        for with_len in (False, True):
            name = kind + ("_len" if with_len else "")
            save_case(outdir, name, lambda: build_layer(kind, with_len))
            written.append(name)
    for kind in CELL_CASES:
        try:
            save_case(outdir, kind, lambda: build_cell(kind))
            written.append(kind)
        except Exception as e:  # 3.3.1 legacy mode: "must be Value, but got Variable"
            skipped[kind] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    make_train_lstm(outdir)
    written.append("train_lstm")
    with open(os.path.join(outdir, "index.json"), "w") as f:
        json.dump({"paddle": paddle.__version__, "cases": written, "skipped": skipped}, f, indent=1)
    print(json.dumps({"cases": written, "skipped": skipped}))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/paddle_oracle/out/rnn")
