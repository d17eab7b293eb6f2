"""bilinear_tensor_product (paddle.nn.Bilinear): Out[b, k] = X[b] Weight[k] Y[b]^T + Bias[k]."""
from __future__ import annotations

from ..ir.registry import In, Out, register_op

BILINEAR = register_op(
    "bilinear_tensor_product", "Out[b, k] = sum over i, j of X[b, i] Weight[k, i, j] Y[b, j], plus Bias[0, k].",
    inputs=[In("X", "[B, M]"), In("Y", "[B, N]"), In("Weight", "[K, M, N]"), In("Bias", "[1, K]", dispensable=True)],
    outputs=[Out("Out", "[B, K], X's dtype")])


@BILINEAR.kernel()
def bilinear_tensor_product(ctx, ins, attrs):
    x, y, w, bias = ins
    if x.ndim != 2 or y.ndim != 2 or w.ndim != 3 or w.shape[1:] != (x.shape[1], y.shape[1]):
        raise ValueError(f"bilinear_tensor_product takes X [B, M], Y [B, N], Weight [K, M, N], got "
                         f"{list(x.shape)}, {list(y.shape)}, {list(w.shape)}")
    out = ctx.xp.einsum("bi,kij,bj->bk", x, w, y)
    return (out + bias.reshape(1, -1) if bias is not None else out,)
