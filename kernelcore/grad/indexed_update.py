"""Gradients of kernelcore/ops/indexed_update.py: the updated tensor's gradient passes where nothing was
overwritten; the written values' gradient is read back from the positions they went to."""
from __future__ import annotations

from .math import unbroadcast
from ..ops.indexed_update import index_along, nd_positions, put_index, put_positions
from ..transforms.backward import standard, wanted


def _summed_to(t, shape):
    return unbroadcast(t, (1,) * (t.ndim - len(shape)) + tuple(shape), tuple(shape)).copy()


SCATTER_ND_ADD_GRAD = standard("scatter_nd_add", ins=("X", "Index", "Updates"), in_grads=("X", "Updates"),
                               comment="X@GRAD = Out@GRAD; Updates@GRAD = Out@GRAD[Index].")


@SCATTER_ND_ADD_GRAD.kernel()
def scatter_nd_add_grad(ctx, ins, attrs):
    x, index, updates, g = ins
    return (g.copy() if wanted(ctx, "X@GRAD") else None,
            g[nd_positions(ctx.xp, x, index)] if wanted(ctx, "Updates@GRAD") else None)


INDEX_ADD_GRAD = standard("index_add", ins=("X", "Index", "AddValue"), in_grads=("X", "AddValue"),
                          comment="X@GRAD = Out@GRAD; AddValue@GRAD = Out@GRAD at Index along `axis`.")


@INDEX_ADD_GRAD.kernel()
def index_add_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, index, _, g = ins
    axis, idx = index_along(xp, x, index, attrs["axis"], "index_add")
    return (g.copy() if wanted(ctx, "X@GRAD") else None,
            xp.take(g, idx, axis=axis) if wanted(ctx, "AddValue@GRAD") else None)


PUT_ALONG_AXIS_GRAD = standard("put_along_axis", ins=("Input", "Index", "Value"), out_grads=("Result",),
                               in_grads=("Input", "Value"),
                               comment="Input@GRAD = Result@GRAD, 0 where 'assign' overwrote; Value@GRAD = "
                                       "Result@GRAD at Index (summed to Value's shape).")


@PUT_ALONG_AXIS_GRAD.kernel()
def put_along_axis_grad(ctx, ins, attrs):
    x, index, value, g = ins
    pos = put_positions(ctx.xp, x, index, attrs["Axis"])
    dx = None
    if wanted(ctx, "Input@GRAD"):
        dx = g.copy()
        if attrs["Reduce"] == "assign":
            dx[pos] = 0
    dv = _summed_to(g[pos], value.shape) if wanted(ctx, "Value@GRAD") else None
    return dx, dv


INDEX_PUT_GRAD = standard("index_put", ins=("x", "indices", "value"), out_grads=("out",), in_grads=("x", "value"),
                          comment="x@GRAD = out@GRAD, 0 where written without accumulate; value@GRAD = out@GRAD at "
                                  "the indices (summed to value's shape).")


@INDEX_PUT_GRAD.kernel()
def index_put_grad(ctx, ins, attrs):
    x, indices, value, g = ins
    pos = put_index(ctx.xp, x, indices)
    dx = None
    if wanted(ctx, "x@GRAD"):
        dx = g.copy()
        if not attrs["accumulate"]:
            dx[pos] = 0
    dv = _summed_to(g[pos], value.shape) if wanted(ctx, "value@GRAD") else None
    return dx, dv


MASKED_FILL_GRAD = standard("masked_fill", ins=("x", "mask", "value"), out_grads=("out",), in_grads=("x", "value"),
                            comment="x@GRAD = out@GRAD where mask is false; value@GRAD = the sum of out@GRAD where "
                                    "it is true.")


@MASKED_FILL_GRAD.kernel()
def masked_fill_grad(ctx, ins, attrs):
    x, mask, value, g = ins
    m = mask.astype(bool)
    zero = g.dtype.type(0)
    return (_summed_to(ctx.xp.where(m, zero, g), x.shape) if wanted(ctx, "x@GRAD") else None,
            ctx.xp.where(m, g, zero).sum().reshape(value.shape).astype(value.dtype) if wanted(ctx, "value@GRAD")
            else None)
