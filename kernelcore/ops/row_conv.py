"""row_conv (paddle.static.nn.row_conv, lookahead convolution): Out[t] = sum over k of X[t + k] * Filter[k], per
feature, within each sequence (X [T, D] one sequence, or [B, T, D])."""
from __future__ import annotations

from ..ir.registry import In, Out, register_op
from ._infer import same_as

ROW_CONV = register_op(
    "row_conv", "Out[..., t, d] = sum over k < K of X[..., t + k, d] * Filter[k, d] (0 past the sequence's end).",
    inputs=[In("X", "[T, D] or [B, T, D]"), In("Filter", "[K, D], K = future context + 1")],
    outputs=[Out("Out", "X's shape and dtype")], infer_shape=same_as())


def ahead(xp, x, k):
    """X moved k steps back along time (X[t + k] at t), zeros at the end."""
    if k == 0:
        return x
    pad = xp.zeros(x.shape[:-2] + (min(k, x.shape[-2]),) + x.shape[-1:], dtype=x.dtype)
    return xp.concatenate([x[..., k:, :], pad], axis=-2)


def check(x, f):
    if x.ndim not in (2, 3) or f.ndim != 2 or f.shape[1] != x.shape[-1]:
        raise ValueError(f"row_conv takes X [(B,) T, D] and Filter [K, D], got {list(x.shape)} and {list(f.shape)}")


@ROW_CONV.kernel()
def row_conv(ctx, ins, attrs):
    x, f = ins
    check(x, f)
    out = ctx.xp.zeros_like(x)
    for k in range(f.shape[0]):
        out = out + ahead(ctx.xp, x, k) * f[k]
    return (out,)
