"""Gradients of the indexing ops (kernelcore/ops/indexing.py): gather, gather_nd and scatter send Out@GRAD back to
the positions they read; top_k_v2 to the positions its Indices name; one_hot_v2 and arg_min have none.
"""
from __future__ import annotations

from ..ops.indexing import gather_axis, nd_positions
from ..ops._infer import normalize_axis
from ..transforms.backward import no_grad, standard, wanted


# -- gather, gather_nd, scatter ---------------------------------------------------------------------------
GATHER_GRAD = standard("gather", ins=("X", "Index", "Axis"),
                       comment="X@GRAD = zeros of X's shape with the Out@GRAD slices added at Index along the "
                               "gather axis (repeated indices add up).")


@GATHER_GRAD.kernel()
def gather_grad(ctx, ins, attrs):
    x, index, axis_t, g = ins
    xp = ctx.xp
    axis = gather_axis(attrs, axis_t, x.ndim)
    if index.ndim == 0:  # a 0-d Index dropped the gather axis from Out: put it back
        g = xp.expand_dims(g, axis)
    dx = xp.zeros(x.shape, dtype=g.dtype)  # our own array
    dxm = xp.moveaxis(dx, axis, 0)  # a view of dx: adding into it fills dx
    xp.add.at(dxm, index.reshape(-1), xp.moveaxis(g, axis, 0))
    return (dx,)


GATHER_ND_GRAD = standard("gather_nd", ins=("X", "Index"),
                          comment="X@GRAD = zeros of X's shape with each Out@GRAD element or slice added where "
                                  "Index picked it (repeats add up).")


@GATHER_ND_GRAD.kernel()
def gather_nd_grad(ctx, ins, attrs):
    x, index, g = ins
    xp = ctx.xp
    pos = nd_positions(xp, x.shape, index)
    if not pos:
        lead = index.ndim - 1
        return (g.reshape((-1,) + x.shape).sum(axis=0).astype(x.dtype, copy=False) if lead else g.copy(),)
    dx = xp.zeros(x.shape, dtype=g.dtype)
    xp.add.at(dx, pos, g)
    return (dx,)


SCATTER_GRAD = standard("scatter", ins=("Ids", "Updates"), in_grads=("X", "Updates"),
                        infer_from={"X@GRAD": ("Out@GRAD", False)},
                        comment="X@GRAD = Out@GRAD with the rows Ids wrote set to 0; Updates@GRAD = the rows of "
                                "Out@GRAD at Ids.")


@SCATTER_GRAD.kernel()
def scatter_grad(ctx, ins, attrs):
    ids, upd, g = ins
    ids = ids.reshape(-1)
    dx = dupd = None
    if wanted(ctx, "X@GRAD"):
        dx = g.copy()
        dx[ids] = 0
    if wanted(ctx, "Updates@GRAD"):
        dupd = ctx.xp.take(g, ids, axis=0).astype(upd.dtype, copy=False)
    return dx, dupd


TOP_K_V2_GRAD = standard("top_k_v2", ins=("X", "K"), outs=("Indices",),
                         comment="X@GRAD = zeros of X's shape with Out@GRAD put where Indices point along `axis`.")


@TOP_K_V2_GRAD.kernel()
def top_k_v2_grad(ctx, ins, attrs):
    x, _, idx, g = ins
    xp = ctx.xp
    if x.ndim == 0:
        return (g.copy(),)
    axis = normalize_axis(attrs["axis"], x.ndim)
    dx = xp.zeros(x.shape, dtype=g.dtype)
    dxm, im, gm = (xp.moveaxis(a, axis, -1) for a in (dx, idx, g))  # dxm: a view of dx
    lead = xp.indices(im.shape[:-1]) if im.ndim > 1 else ()
    dxm[tuple(i[..., None] for i in lead) + (im,)] = gm
    return (dx,)


no_grad("one_hot_v2", "arg_min")
