"""Gradients of kernelcore/ops/scan.py."""
from __future__ import annotations

from ..ops._infer import normalize_axis
from ..ops.along_axis import along_axis_positions
from ..ops.scan import cumprod_axis, cumsum_of, logcumsumexp_input, scan
from ..transforms.backward import standard


def _suffix_sums(xp, t, axis, reverse, exclusive):
    """The adjoint of an (exclusive, reversed) running sum: the running sum the other way."""
    return scan(xp, t, axis, not reverse, exclusive, lambda v, a: xp.cumsum(v, axis=a), t.dtype.type(0))


CUMPROD_GRAD = standard("cumprod", ins=("X",), outs=("Out",),
                        comment="X@GRAD[i] = sum over j reached from i of Out@GRAD[j] * Out[j] / X[i] (X nonzero).")


@CUMPROD_GRAD.kernel()
def cumprod_grad(ctx, ins, attrs):
    xp = ctx.xp
    x0, out, g = ins
    x = x0.reshape(-1) if x0.ndim == 0 else x0
    axis = cumprod_axis(x, attrs)
    out, g = out.reshape(x.shape), g.reshape(x.shape)
    dx = _suffix_sums(xp, g * out, axis, attrs["reverse"], attrs["exclusive"]) / x
    return (dx.reshape(x0.shape),)


LOGCUMSUMEXP_GRAD = standard("logcumsumexp", ins=("X",), outs=("Out",),
                             comment="X@GRAD[i] = sum over j reached from i of Out@GRAD[j] exp(X[i] - Out[j]).")


@LOGCUMSUMEXP_GRAD.kernel()
def logcumsumexp_grad(ctx, ins, attrs):
    xp = ctx.xp
    x0, out, g = ins
    x, axis = logcumsumexp_input(x0, attrs)
    out, g = out.reshape(x.shape), g.reshape(x.shape)
    m = out.max() if out.size else out.dtype.type(0)
    weights = xp.where(xp.isfinite(out), g * xp.exp(m - out), g.dtype.type(0))  # an exclusive scan's first is -inf
    dx = _suffix_sums(xp, weights, axis, attrs["reverse"], attrs["exclusive"]) * xp.exp(x - m)
    return (dx.reshape(x0.shape),)


def _extreme_grad(op_type):
    d = standard(op_type, ins=("x",), outs=("indices",), out_grads=("out",), in_grads=("x",),
                 comment="x@GRAD = out@GRAD added at the positions `indices` names.")

    @d.kernel()
    def kernel(ctx, ins, attrs):
        xp = ctx.xp
        x0, idx, g = ins
        x = x0.reshape(-1) if x0.ndim == 0 else x0
        axis = normalize_axis(attrs["axis"], x.ndim)
        dx = xp.zeros(x.shape, dtype=g.dtype)
        xp.add.at(dx, along_axis_positions(xp, idx.reshape(x.shape).astype(xp.int64), axis), g.reshape(x.shape))
        return (dx.reshape(x0.shape),)
    kernel.__name__ = f"{op_type}_grad"


_extreme_grad("cummax")
_extreme_grad("cummin")


CUMSUM_GRAD = standard("cumsum", ins=("X",),
                       comment="X@GRAD = the running sum of Out@GRAD in the other direction (exclusive kept).")


@CUMSUM_GRAD.kernel()
def cumsum_grad(ctx, ins, attrs):
    x, g = ins
    if attrs["flatten"] or x.ndim == 0:
        flat = cumsum_of(ctx.xp, g.reshape(-1), 0, attrs["exclusive"], not attrs["reverse"])
        return (flat.reshape(x.shape),)
    axis = normalize_axis(attrs["axis"], x.ndim)
    return (cumsum_of(ctx.xp, g, axis, attrs["exclusive"], not attrs["reverse"]),)
