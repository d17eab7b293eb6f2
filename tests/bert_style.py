"""A small BERT-style encoder built op by op in a chosen dtype (float32 or float16), for the run comparison
and recorder tests and bench/recorder.py: post-norm layers of multi-head self-attention and a GELU feed-forward,
with every weight a fed input so that two dtypes run the same numbers."""
from __future__ import annotations

import numpy as np

import kernelcore as kc


def build_encoder(dtype: str = "float32", batch: int = 2, seq: int = 8, d_model: int = 16, heads: int = 2,
                  layers: int = 2):
    """(program, output variable, {weight name: shape}) of the encoder; the input is "x" [batch, seq, d_model]."""
    main = kc.Program()
    shapes = {"x": [batch, seq, d_model]}
    with kc.program_guard(main, kc.Program()):
        h = kc.layers.data("x", shapes["x"], dtype)

        def weight(name, shape):
            shapes[name] = shape
            return kc.layers.data(name, shape, dtype)

        def split_heads(t):
            t = kc.op.reshape2(t, shape=[batch, seq, heads, d_model // heads])
            return kc.op.transpose2(t, axis=[0, 2, 1, 3])

        for i in range(layers):
            q, k, v = (split_heads(kc.op.matmul_v2(h, weight(f"l{i}.w{c}", [d_model, d_model]))) for c in "qkv")
            scores = kc.op.scale(kc.op.matmul_v2(q, k, trans_y=True), scale=float((d_model // heads) ** -0.5))
            att = kc.op.matmul_v2(kc.op.softmax(scores), v)
            att = kc.op.reshape2(kc.op.transpose2(att, axis=[0, 2, 1, 3]), shape=[batch, seq, d_model])
            h = kc.op.elementwise_add(h, kc.op.matmul_v2(att, weight(f"l{i}.wo", [d_model, d_model])))
            h = kc.op.layer_norm(h, weight(f"l{i}.ln1.g", [d_model]), weight(f"l{i}.ln1.b", [d_model]),
                                 begin_norm_axis=2)
            ff = kc.op.gelu(kc.op.matmul_v2(h, weight(f"l{i}.w1", [d_model, 4 * d_model])))
            ff = kc.op.matmul_v2(ff, weight(f"l{i}.w2", [4 * d_model, d_model]))
            h = kc.op.layer_norm(kc.op.elementwise_add(h, ff), weight(f"l{i}.ln2.g", [d_model]),
                                 weight(f"l{i}.ln2.b", [d_model]), begin_norm_axis=2)
    return main, h, shapes


def encoder_feed(shapes: dict, seed: int = 0, dtype: str = "float32") -> dict:
    """Inputs and weights: normal inputs, weights scaled by 1/sqrt(fan in), layer norms' gains 1 and biases 0."""
    rng = np.random.default_rng(seed)
    feed = {}
    for name, shape in shapes.items():
        if name.endswith(".g"):
            v = np.ones(shape)
        elif name.endswith(".b"):
            v = np.zeros(shape)
        elif name == "x":
            v = rng.standard_normal(shape)
        else:
            v = rng.standard_normal(shape) / np.sqrt(shape[0])
        feed[name] = v.astype(dtype)
    return feed
