"""Gradients of kernelcore/ops/reduce_misc.py."""
from __future__ import annotations

import math

from .math import unbroadcast
from ..ops._infer import normalize_axis
from ..ops.reduce_misc import logsumexp_axes, renorm_scale
from ..transforms.backward import standard, wanted

LOGSUMEXP_GRAD = standard("logsumexp", ins=("X",), outs=("Out",), comment="X@GRAD = Out@GRAD exp(X - Out).")


@LOGSUMEXP_GRAD.kernel()
def logsumexp_grad(ctx, ins, attrs):
    x, out, g = ins
    axes = logsumexp_axes(x, attrs)
    kept = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return (g.reshape(kept) * ctx.xp.exp(x - out.reshape(kept)),)


DIST_GRAD = standard("dist", ins=("X", "Y"), outs=("Out",), in_grads=("X", "Y"),
                     comment="With D = X - Y: X@GRAD = Out@GRAD d|D|_p / dD, Y@GRAD = its negative, each summed to "
                             "its shape.")


def _norm_derivative(xp, d, out, p):
    if p == 0:
        return xp.zeros_like(d)
    if math.isinf(p):
        return xp.sign(d) * (xp.abs(d) == out)
    positive = out > 0  # a zero norm: no direction, gradient 0
    safe = xp.where(positive, out, d.dtype.type(1))
    return xp.where(positive, xp.sign(d) * xp.power(xp.abs(d), d.dtype.type(p - 1)) /
                    xp.power(safe, d.dtype.type(p - 1)), d.dtype.type(0))


@DIST_GRAD.kernel()
def dist_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, y, out, g = ins
    d = x - y
    dd = (_norm_derivative(xp, d, out, attrs["p"]) * g).astype(x.dtype, copy=False)
    back = lambda t, s: unbroadcast(t, (1,) * (t.ndim - len(s)) + tuple(s), tuple(s)).copy()  # noqa: E731
    return (back(dd, x.shape) if wanted(ctx, "X@GRAD") else None,
            back(-dd, y.shape) if wanted(ctx, "Y@GRAD") else None)


RENORM_GRAD = standard("renorm", ins=("X",),
                       comment="X@GRAD = s Out@GRAD + X ds/dnorm dnorm/dX sum(Out@GRAD X) over each scaled slice.")


@RENORM_GRAD.kernel()
def renorm_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, g = ins
    norm, scale = renorm_scale(xp, x, attrs)
    axis = normalize_axis(attrs["axis"], x.ndim)
    others = tuple(d for d in range(x.ndim) if d != axis)
    limit, p = x.dtype.type(attrs["max_norm"]), attrs["p"]
    scaled = norm > limit
    dscale = xp.where(scaled, -limit / ((norm + x.dtype.type(1e-7)) ** 2), x.dtype.type(0))
    dnorm = _norm_derivative(xp, x, norm, p) if p != 2 else x / xp.where(norm > 0, norm, x.dtype.type(1))
    return (scale * g + dnorm * dscale * (g * x).sum(axis=others, keepdims=True),)


KTHVALUE_GRAD = standard("kthvalue", ins=("X",), outs=("Indices",),
                         comment="X@GRAD = Out@GRAD at the k-th smallest element's position, 0 elsewhere.")


@KTHVALUE_GRAD.kernel()
def kthvalue_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, idx, g = ins
    x1 = x.reshape(-1) if x.ndim == 0 else x
    axis = normalize_axis(attrs["axis"], x1.ndim)
    if not attrs["keepdim"] and x.ndim:
        idx, g = xp.expand_dims(idx, axis), xp.expand_dims(g, axis)
    dx = xp.zeros(x1.shape, dtype=g.dtype)
    xp.put_along_axis(dx, idx.reshape(dx.shape[:axis] + (1,) + dx.shape[axis + 1:]).astype(xp.int64),
                      g.reshape(dx.shape[:axis] + (1,) + dx.shape[axis + 1:]), axis=axis)
    return (dx.reshape(x.shape),)


REDUCE_AS_GRAD = standard("reduce_as", ins=("x", "target"), out_grads=("out",), in_grads=("x",),
                          comment="x@GRAD = out@GRAD broadcast back to x's shape.")


@REDUCE_AS_GRAD.kernel()
def reduce_as_grad(ctx, ins, attrs):
    x, target, g = ins
    lead = (1,) * (x.ndim - g.ndim)
    return (ctx.xp.broadcast_to(g.reshape(lead + g.shape), x.shape).copy(),)
