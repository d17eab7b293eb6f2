"""The gradient of row_conv (kernelcore/ops/row_conv.py)."""
from __future__ import annotations

from ..ops.row_conv import ahead
from ..transforms.backward import standard, wanted

ROW_CONV_GRAD = standard("row_conv", ins=("X", "Filter"), in_grads=("X", "Filter"),
                         comment="X@GRAD[t] = sum over k of Out@GRAD[t - k] Filter[k]; Filter@GRAD[k] = sum over t "
                                 "of Out@GRAD[t] X[t + k].")


def _behind(xp, g, k):
    """g moved k steps forward along time (g[t - k] at t), zeros at the start."""
    if k == 0:
        return g
    pad = xp.zeros(g.shape[:-2] + (min(k, g.shape[-2]),) + g.shape[-1:], dtype=g.dtype)
    return xp.concatenate([pad, g[..., :g.shape[-2] - k, :]], axis=-2)


@ROW_CONV_GRAD.kernel()
def row_conv_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, f, g = ins
    dx = sum(_behind(xp, g, k) * f[k] for k in range(f.shape[0])) if wanted(ctx, "X@GRAD") else None
    df = None
    if wanted(ctx, "Filter@GRAD"):
        lead = tuple(range(x.ndim - 1))
        df = xp.stack([(g * ahead(xp, x, k)).sum(axis=lead) for k in range(f.shape[0])])
    return dx, df
