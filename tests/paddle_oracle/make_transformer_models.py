"""Make PaddlePaddle 2.6.2 write Transformer / BERT-style programs and tensor-function programs, with reference
outputs, for kernelcore's transformer parity tests (Paddle 3.3.1's legacy mode cannot build paddle.nn.Transformer*).

    .venv-paddle2/bin/python tests/paddle_oracle/make_transformer_models.py OUTDIR

Inference cases (save_inference_model) write OUTDIR/<case>.pdmodel/.pdiparams/.npz/.json exactly like
make_programs.py: the npz holds the feeds by name and Paddle's outputs as fetch_0, fetch_1, ...; the json the feed
and fetch names and the op types of the saved program.

Training cases (`train_transformer_adam`, `train_transformer_adamw`: a small Transformer classifier;
`train_bert_adam`: the BERT-style encoder with a classifier on its pooled output, every dropout 0) write
<case>.main.pb / <case>.startup.pb (serialized ProgramDescs, main with `minimize` applied), <case>.npz (feeds, `loss`,
`init/<var>` and `after/<var>` for every persistable, after one step, and `grad/<param>`: Paddle's gradient of each
parameter in that step) and <case>.json (op types, and the slots of every grad/optimizer op written).
`grad_funcs` is Paddle's backward of a weighted sum of tensor functions (main program with its grad ops, Paddle's
gradients of the two inputs).
"""
from __future__ import annotations

import json
import os
import sys
import warnings

# reproducible slot order (see make_programs.py); only when run as a script: bench/_paddle_transformer.py imports it
if __name__ == "__main__" and os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable] + sys.argv)
os.environ.setdefault("GLOG_minloglevel", "1")
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402
import paddle.nn as nn  # noqa: E402
import paddle.nn.functional as F  # noqa: E402

paddle.enable_static()
SEED = 20261123
D_MODEL, HEADS, FFN = 32, 4, 64


def persistable_info(program):
    out = {}
    for v in program.list_vars():
        if v.persistable and v.name not in ("feed", "fetch"):
            out[v.name] = {"shape": list(v.shape), "dtype": str(v.dtype)}
    return dict(sorted(out.items()))


def op_slots(program):
    """type -> {inputs: slots, outputs: slots, attrs: names} of the first op of each type (block 0)."""
    seen = {}
    for op in program.global_block().ops:
        if op.type in seen:
            continue
        seen[op.type] = {"inputs": {s: len(op.input(s)) for s in op.input_names},
                         "outputs": {s: len(op.output(s)) for s in op.output_names},
                         "attrs": {a: _attr_value(op, a) for a in sorted(op.attr_names)
                                   if a not in ("op_callstack", "op_namescope", "op_role_var")}}
    return seen


def _attr_value(op, a):
    try:
        v = op.attr(a)
    except Exception:  # block attributes
        return "<block>"
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [x if isinstance(x, (bool, int, float, str)) else str(x) for x in v]
    return str(v)


# ---------------------------------------------------------------------------------------------------------------
# inference cases
# ---------------------------------------------------------------------------------------------------------------
def build_encoder():
    """(a) paddle.nn.TransformerEncoder, 2 layers, d_model 32, 4 heads, a boolean padding mask."""
    x = paddle.static.data("src", [2, 6, D_MODEL], "float32")
    mask = paddle.static.data("src_mask", [2, 1, 1, 6], "bool")
    layer = nn.TransformerEncoderLayer(D_MODEL, HEADS, FFN, dropout=0.1, activation="gelu")
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(D_MODEL))
    enc.eval()
    y = enc(x, src_mask=mask)
    rng = np.random.default_rng(1)
    m = np.ones((2, 1, 1, 6), bool)
    m[1, ..., 4:] = False  # the second sequence has two padding positions
    return [x, mask], [y], {"src": rng.standard_normal((2, 6, D_MODEL)).astype("float32"), "src_mask": m}


class Bert(nn.Layer):
    """`dropout` 0 drops every Dropout (Paddle writes no dropout op for p = 0), so that a training step is
    deterministic."""

    def __init__(self, vocab=50, max_pos=16, types=2, dropout=0.1):
        super().__init__()
        self.word = nn.Embedding(vocab, D_MODEL, padding_idx=0)
        self.pos = nn.Embedding(max_pos, D_MODEL)
        self.type = nn.Embedding(types, D_MODEL)
        self.norm = nn.LayerNorm(D_MODEL, epsilon=1e-12)
        self.drop = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(D_MODEL, HEADS, FFN, dropout=dropout, activation="gelu",
                                           attn_dropout=dropout, act_dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.pooler = nn.Linear(D_MODEL, D_MODEL)

    def forward(self, ids, token_type):
        seq = paddle.shape(ids)[1]
        pos_ids = paddle.arange(0, seq, dtype="int64").unsqueeze(0)
        pos_ids = paddle.expand_as(pos_ids, ids)
        emb = self.word(ids) + self.pos(pos_ids) + self.type(token_type)
        emb = self.drop(self.norm(emb))
        mask = paddle.unsqueeze((ids == 0).astype("float32") * -1e4, axis=[1, 2])
        h = self.encoder(emb, src_mask=mask)
        pooled = paddle.tanh(self.pooler(h[:, 0]))
        return h, pooled


def build_bert(batch=2, seq=8):
    """(b) a BERT-style encoder: word + position + token-type embeddings, LayerNorm, Dropout (eval),
    TransformerEncoder, a tanh pooler over the first token."""
    ids = paddle.static.data("input_ids", [batch, seq], "int64")
    tt = paddle.static.data("token_type_ids", [batch, seq], "int64")
    model = Bert(max_pos=max(16, seq))
    model.eval()
    h, pooled = model(ids, tt)
    rng = np.random.default_rng(2)
    feed_ids = rng.integers(1, 50, size=(batch, seq)).astype("int64")
    feed_ids[-1, seq - 3:] = 0  # padding
    feed_tt = np.zeros((batch, seq), "int64")
    feed_tt[:, seq // 2:] = 1
    return [ids, tt], [h, pooled], {"input_ids": feed_ids, "token_type_ids": feed_tt}


def build_decoder():
    """(c) paddle.nn.TransformerDecoder with a causal mask (paddle.tensor.triu of -inf)."""
    tgt = paddle.static.data("tgt", [2, 5, D_MODEL], "float32")
    memory = paddle.static.data("memory", [2, 7, D_MODEL], "float32")
    layer = nn.TransformerDecoderLayer(D_MODEL, HEADS, FFN, dropout=0.1, normalize_before=True)
    dec = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(D_MODEL))
    dec.eval()
    causal = paddle.tensor.triu(paddle.full([5, 5], -np.inf, "float32"), 1)
    y = dec(tgt, memory, tgt_mask=causal)
    rng = np.random.default_rng(3)
    return [tgt, memory], [y], {"tgt": rng.standard_normal((2, 5, D_MODEL)).astype("float32"),
                                "memory": rng.standard_normal((2, 7, D_MODEL)).astype("float32")}


def build_tensor_funcs():
    """Common tensor functions, one fetch each (so save_inference_model keeps them all)."""
    x = paddle.static.data("x", [3, 4, 5], "float32")
    idx = paddle.static.data("idx", [4], "int64")
    ix = paddle.static.data("ix", [3, 4], "int32")
    outs = []
    outs.append(paddle.shape(x))
    n = paddle.shape(x)[2]
    outs.append(x[:, 1:, 1:n - 1])  # slice with a run-time bound: EndsTensorList
    outs.append(paddle.arange(2, 11, 3, dtype="int64"))
    outs.append(paddle.tril(x[0], -1))
    outs.append(paddle.triu(x[1], 1))
    outs.append(paddle.gather(x, idx[:2], axis=1))
    outs.append(paddle.gather(x, idx[1:]))  # axis 0: ids 1, 2, 0
    nd_index = paddle.reshape(paddle.cast(idx, "int64"), [2, 2]) % 3
    outs.append(paddle.gather_nd(x, nd_index))
    upd = paddle.full([2, 4, 5], 2.5, "float32")
    outs.append(paddle.scatter(x, paddle.to_tensor(np.array([2, 0], "int64")), upd, overwrite=True))
    outs.append(paddle.scatter(x, paddle.to_tensor(np.array([1, 1], "int64")), upd, overwrite=False))
    outs.append(paddle.where(x > 0, x, x * 0.5))
    outs.append(paddle.stack([x[0], x[1], x[2]], axis=1))
    outs.extend(paddle.unstack(x, axis=2)[:2])
    sq = paddle.unsqueeze(x, [0, 3])
    outs.append(sq)
    outs.append(paddle.squeeze(sq, [0]))
    outs.append(paddle.flatten(x, 1, 2))
    outs.append(paddle.expand(x[:, :1, :], [3, 4, 5]))
    outs.append(paddle.tile(x[0], [2, 1, 3]))
    outs.append(paddle.cumsum(x, axis=1))
    outs.append(paddle.cumsum(x))  # flatten=true
    outs.append(paddle.clip(x, -0.5, 0.7))
    outs.append(paddle.abs(x))
    ax = paddle.abs(x) + 0.1
    outs.append(paddle.sqrt(ax))
    outs.append(paddle.rsqrt(ax))
    outs.append(paddle.pow(ax, 1.5))
    outs.append(paddle.max(x, axis=1))
    outs.append(paddle.min(x, axis=[0, 2], keepdim=True))
    outs.append(paddle.prod(x, axis=2))
    outs.append(paddle.any(x > 1.0, axis=1))
    outs.append(paddle.all(x > -2.0, axis=2))
    outs.append(paddle.argmax(x, axis=1))
    outs.append(paddle.argmin(x, axis=-1, keepdim=True))
    vals, inds = paddle.topk(x, 3, axis=-1)
    outs.extend([vals, inds])
    vals2, inds2 = paddle.topk(x, 2, axis=1, largest=False)
    outs.extend([vals2, inds2])
    outs.append(F.one_hot(idx, 6))
    outs.append(F.log_softmax(x, axis=1))
    outs.append(F.softmax(x, axis=0))
    outs.append(paddle.masked_fill(x, x < 0, -9.0) if hasattr(paddle, "masked_fill")
                else paddle.where(x < 0, paddle.full_like(x, -9.0), x))
    outs.append(paddle.cast(x * 3, "int32"))
    a, b = x > 0, x < 0.5
    outs.extend([paddle.logical_and(a, b), paddle.logical_or(a, b), paddle.logical_xor(a, b), paddle.logical_not(a)])
    jx = ix + 7
    outs.extend([paddle.bitwise_and(ix, jx), paddle.bitwise_or(ix, jx), paddle.bitwise_xor(ix, jx),
                 paddle.bitwise_not(ix)])
    outs.append(F.gelu(x))
    outs.append(F.gelu(x, approximate=True))
    outs.append(paddle.full_like(x, 3.0))
    outs.append(paddle.zeros_like(ix))
    emb = nn.Embedding(10, 6)
    outs.append(emb(ix % 10))
    lin = nn.Linear(5, 7)
    outs.append(lin(x))
    outs.append(F.dropout(x, 0.3, training=False, mode="downscale_in_infer"))
    outs.append(F.dropout(x, 0.3, training=False, mode="upscale_in_train"))
    outs.append(F.layer_norm(x, [4, 5]))
    outs.append(paddle.sum(x, axis=[0, 2]))
    outs.append(paddle.maximum(x, x[0]))
    outs.append(paddle.minimum(x, x[0]))
    outs.append(x ** 2)
    outs.append(paddle.exp(x) - paddle.log(ax))
    rng = np.random.default_rng(4)
    feeds = {"x": rng.standard_normal((3, 4, 5)).astype("float32"),
             "idx": np.array([3, 1, 2, 0], "int64"),
             "ix": rng.integers(-20, 20, size=(3, 4)).astype("int32")}
    return [x, idx, ix], outs, feeds


CASES = {
    "transformer_encoder": build_encoder,
    "bert_encoder": build_bert,
    "transformer_decoder": build_decoder,
    "tensor_funcs": build_tensor_funcs,
}


def make_inference_case(outdir, name, builder):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = SEED
    paddle.seed(SEED)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope), paddle.static.program_guard(main, startup):
        paddle.utils.unique_name.switch()
        feed_vars, fetch_vars, feeds = builder()
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        outs = exe.run(main, feed=feeds, fetch_list=fetch_vars)
        prefix = os.path.join(outdir, name)
        paddle.static.save_inference_model(prefix, feed_vars, fetch_vars, exe, program=main)
    scope2 = paddle.static.Scope()
    with paddle.static.scope_guard(scope2):
        exe2 = paddle.static.Executor(paddle.CPUPlace())
        prog, feed_names, fetch_targets = paddle.static.load_inference_model(prefix, exe2)
        outs2 = exe2.run(prog, feed=feeds, fetch_list=fetch_targets)
    for i, (a, b, v) in enumerate(zip(outs, outs2, fetch_vars)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=f"{name}: fetch {i} ({v.name})")
    arrays = dict(feeds)
    for i, o in enumerate(outs2):
        arrays[f"fetch_{i}"] = np.asarray(o)
    np.savez(prefix + ".npz", **arrays)
    meta = {"case": name, "paddle_version": paddle.__version__, "feed_names": list(feed_names),
            "fetch_names": [v.name for v in fetch_targets],
            "fetch_shapes": [list(np.asarray(o).shape) for o in outs2],
            "op_types": [op.type for op in prog.global_block().ops],
            "ops": op_slots(prog), "persistables": persistable_info(prog)}
    with open(prefix + ".json", "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: {len(meta['op_types'])} ops, types={sorted(set(meta['op_types']))}")


# ---------------------------------------------------------------------------------------------------------------
# training cases
# ---------------------------------------------------------------------------------------------------------------
def build_train_model():
    """A small Transformer classifier: embedding + TransformerEncoder (dropout 0, so a step is deterministic) +
    mean pooling + Linear + cross entropy."""
    ids = paddle.static.data("ids", [4, 6], "int64")
    label = paddle.static.data("label", [4, 1], "int64")
    emb = nn.Embedding(20, D_MODEL)
    pos = paddle.create_parameter([6, D_MODEL], "float32", name="pos_table",
                                  default_initializer=nn.initializer.Normal(0.0, 0.1))
    layer = nn.TransformerEncoderLayer(D_MODEL, HEADS, FFN, dropout=0.0, activation="gelu")
    enc = nn.TransformerEncoder(layer, 2)
    head = nn.Linear(D_MODEL, 3)
    h = emb(ids) + pos
    mask = paddle.unsqueeze((ids == 0).astype("float32") * -1e4, axis=[1, 2])
    h = enc(h, src_mask=mask)
    logits = head(paddle.mean(h, axis=1))
    loss = F.cross_entropy(logits, label)
    rng = np.random.default_rng(5)
    feed_ids = rng.integers(1, 20, size=(4, 6)).astype("int64")
    feed_ids[0, 4:] = 0
    feeds = {"ids": feed_ids, "label": rng.integers(0, 3, size=(4, 1)).astype("int64")}
    return loss, feeds


def build_train_bert(batch=4, seq=16, classes=3):
    """The BERT-style encoder of build_bert with every dropout at 0 (a step is deterministic) + a Linear classifier on
    the pooled output + cross entropy; the last sequence ends in three padding ids (0)."""
    ids = paddle.static.data("input_ids", [batch, seq], "int64")
    tt = paddle.static.data("token_type_ids", [batch, seq], "int64")
    label = paddle.static.data("label", [batch, 1], "int64")
    model = Bert(max_pos=max(16, seq), dropout=0.0)
    head = nn.Linear(D_MODEL, classes)
    _, pooled = model(ids, tt)
    loss = F.cross_entropy(head(pooled), label)
    rng = np.random.default_rng(7)
    feed_ids = rng.integers(1, 50, size=(batch, seq)).astype("int64")
    feed_ids[-1, seq - 3:] = 0  # padding
    feed_tt = np.zeros((batch, seq), "int64")
    feed_tt[:, seq // 2:] = 1
    feeds = {"input_ids": feed_ids, "token_type_ids": feed_tt,
             "label": rng.integers(0, classes, size=(batch, 1)).astype("int64")}
    return loss, feeds


def make_train_case(outdir, name, make_opt, builder=build_train_model):
    """One training step of `builder()` (-> loss, feeds) with `make_opt()`'s minimize, written as the module's
    docstring says."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = SEED
    paddle.seed(SEED)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope), paddle.static.program_guard(main, startup):
        paddle.utils.unique_name.switch()
        loss, feeds = builder()
        make_opt().minimize(loss, startup)
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        pnames = sorted(persistable_info(main))

        def snapshot():
            return {n: np.array(scope.find_var(n).get_tensor()) for n in pnames}

        init = snapshot()
        params = sorted(p.name for p in main.all_parameters())
        loss_v, *grads = exe.run(main, feed=feeds, fetch_list=[loss] + [p + "@GRAD" for p in params])
        after = snapshot()
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
    for n, g in zip(params, grads):
        arrays[f"grad/{n}"] = np.asarray(g)
    np.savez(prefix + ".npz", **arrays)
    meta = {"case": name, "paddle_version": paddle.__version__, "feed_names": list(feeds), "loss_name": loss.name,
            "parameters": sorted(p.name for p in main.all_parameters()), "persistables": persistable_info(main),
            "op_types": [op.type for op in main.global_block().ops], "ops": op_slots(main),
            "startup_op_types": [op.type for op in startup.global_block().ops]}
    with open(prefix + ".json", "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: loss {float(loss_v):.6f}, {len(meta['op_types'])} ops, types={sorted(set(meta['op_types']))}")


def make_grad_case(outdir, name="grad_funcs"):
    """Paddle differentiates a weighted sum of many tensor functions of x and y (paddle.static.append_backward);
    writes <name>.main.pb (forward + Paddle's grad ops), <name>.npz (feeds, `loss`, `grad/x`, `grad/y`) and
    <name>.json (feed names, loss name, op types, grad-op slots)."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = SEED
    with paddle.static.program_guard(main, startup):
        paddle.utils.unique_name.switch()
        x = paddle.static.data("x", [3, 4, 5], "float32")
        y = paddle.static.data("y", [3, 4, 5], "float32")
        x.stop_gradient = y.stop_gradient = False
        idx = paddle.static.data("idx", [2], "int64")
        ax = paddle.abs(x) + 0.5
        n = paddle.shape(x)[2]
        outs = [paddle.sqrt(ax), paddle.rsqrt(ax), paddle.log(ax), paddle.pow(ax, 1.5), paddle.clip(x, -0.5, 0.5),
                paddle.maximum(x, y), paddle.minimum(x, y), ax ** y, paddle.max(x, 1), paddle.min(y, [0, 2]),
                paddle.prod(ax, 2), F.log_softmax(x, 1), paddle.unsqueeze(x, [0, 3]),
                paddle.squeeze(paddle.unsqueeze(y, [1]), [1]), paddle.flatten(x, 1, 2),
                paddle.expand(x[:, :1], [2, 3, 4, 5]), paddle.expand_as(y[:1], x), paddle.tile(x, [1, 2, 1]),
                paddle.stack([x, y], 1), paddle.unstack(y, axis=1)[2], paddle.gather(x, idx, axis=1),
                paddle.gather_nd(y, paddle.reshape(idx, [1, 2])), paddle.scatter(x[0], idx, y[0, :2]),
                paddle.where(x > y, x, y), paddle.cumsum(x, 1), paddle.tril(y[0], -1), paddle.triu(x[1], 1),
                paddle.topk(y, 2)[0], F.gelu(x), F.gelu(y, approximate=True),
                F.layer_norm(x, [5]), x[:, 1:, 1:n - 1], paddle.abs(y)]
        loss = paddle.add_n([paddle.sum(o) * (0.1 * (i + 1)) for i, o in enumerate(outs)])
        paddle.static.append_backward(loss)
    rng = np.random.default_rng(6)
    feeds = {"x": (rng.uniform(0.2, 1.5, (3, 4, 5)) * rng.choice([-1, 1], (3, 4, 5))).astype("float32"),
             "y": (rng.uniform(0.2, 1.5, (3, 4, 5)) * rng.choice([-1, 1], (3, 4, 5))).astype("float32"),
             "idx": np.array([1, 3], "int64")}
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        loss_v, gx, gy = exe.run(main, feed=feeds, fetch_list=[loss, "x@GRAD", "y@GRAD"])
    prefix = os.path.join(outdir, name)
    with open(prefix + ".main.pb", "wb") as f:
        f.write(main.desc.serialize_to_string())
    np.savez(prefix + ".npz", **feeds, loss=np.asarray(loss_v), **{"grad/x": gx, "grad/y": gy})
    meta = {"case": name, "paddle_version": paddle.__version__, "feed_names": list(feeds), "loss_name": loss.name,
            "op_types": [op.type for op in main.global_block().ops], "ops": op_slots(main)}
    with open(prefix + ".json", "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: loss {float(loss_v):.6f}, {len(meta['op_types'])} ops")


TRAIN_CASES = {  # name: (builder, optimizer)
    "train_transformer_adam": (build_train_model, lambda: paddle.optimizer.Adam(learning_rate=0.01)),
    "train_transformer_adamw": (build_train_model,
                                lambda: paddle.optimizer.AdamW(learning_rate=0.01, weight_decay=0.05)),
    "train_bert_adam": (build_train_bert, lambda: paddle.optimizer.Adam(learning_rate=1e-3)),
}


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    outdir = argv[1]
    only = set(argv[2:])
    os.makedirs(outdir, exist_ok=True)
    for name, builder in CASES.items():
        if not only or name in only:
            make_inference_case(outdir, name, builder)
    for name, (builder, opt) in TRAIN_CASES.items():
        if not only or name in only:
            make_train_case(outdir, name, opt, builder)
    if not only or "grad_funcs" in only:
        make_grad_case(outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
