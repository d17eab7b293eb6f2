"""Gradients of kernelcore/ops/norms_p.py, from X, Out and Out@GRAD as Paddle's p_norm_grad and
frobenius_norm_grad read them."""
from __future__ import annotations

import math

from ..ops.norms_p import frobenius_axes, p_norm_axis
from ..transforms.backward import standard

P_NORM_GRAD = standard(
    "p_norm", ins=("X",), outs=("Out",),
    comment="X@GRAD = sign(X) |X|^(p-1) / max(Out, epsilon)^(p-1) * Out@GRAD; p = +-inf: sign(X) Out@GRAD where "
            "|X| is the norm; p = 0: 0.")


def _keep_reduced(t, axis, ndim):
    """Out or Out@GRAD with its reduced dims back (size 1), so it broadcasts against X."""
    if axis is None:
        return t.reshape((1,) * ndim)
    return t.reshape(t.shape[:axis] + (1,) + t.shape[axis:]) if t.ndim < ndim else t


@P_NORM_GRAD.kernel()
def p_norm_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, out, g = ins
    axis = p_norm_axis(x.ndim, attrs)
    out, g = _keep_reduced(out, axis, x.ndim), _keep_reduced(g, axis, x.ndim)
    p = attrs["porder"]
    if p == 0:
        return (xp.zeros_like(x),)
    if p in (math.inf, -math.inf):
        return ((xp.sign(x) * (xp.abs(x) == out) * g).astype(x.dtype, copy=False),)
    norm = xp.maximum(out, x.dtype.type(attrs["epsilon"]))
    if p == 2:
        return (x * (g / norm),)
    dx = xp.sign(x) * xp.power(xp.abs(x), x.dtype.type(p - 1)) * (g / xp.power(norm, x.dtype.type(p - 1)))
    return (dx.astype(x.dtype, copy=False),)


FROBENIUS_NORM_GRAD = standard("frobenius_norm", ins=("X",), outs=("Out",),
                               comment="X@GRAD = X / Out * Out@GRAD.")


@FROBENIUS_NORM_GRAD.kernel()
def frobenius_norm_grad(ctx, ins, attrs):
    x, out, g = ins
    axes = frobenius_axes(x.ndim, attrs)
    kept = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return (x * (g.reshape(kept) / out.reshape(kept)),)
