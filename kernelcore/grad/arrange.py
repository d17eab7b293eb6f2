"""Gradients of kernelcore/ops/arrange.py: each output gradient sent back to the positions its values came from."""
from __future__ import annotations

from .math import unbroadcast
from ..ops._infer import normalize_axis
from ..ops.arrange import (crop_index, diag_embed_geometry, diagonal_positions, diagonal_view_index, multiplex_ids,
                           repeats_of, strided_index)
from ..transforms.backward import standard

STRIDED_SLICE_GRAD = standard(
    "strided_slice", ins=("Input", "StartsTensor", "EndsTensor", "StridesTensor", "StartsTensorList",
                          "EndsTensorList", "StridesTensorList"), in_grads=("Input",),
    comment="Input@GRAD = Out@GRAD at the sliced positions, 0 elsewhere.")


@STRIDED_SLICE_GRAD.kernel()
def strided_slice_grad(ctx, ins, attrs):
    x, g = ins[0], ins[-1]
    index = strided_index(x, ins[:-1], attrs)
    dx = ctx.xp.zeros(x.shape, dtype=g.dtype)
    dx[index] = g.reshape(dx[index].shape)
    return (dx,)


CROP_TENSOR_GRAD = standard("crop_tensor", ins=("X", "Shape", "ShapeTensor", "Offsets", "OffsetsTensor"),
                            comment="X@GRAD = Out@GRAD in the cropped window, 0 elsewhere.")


@CROP_TENSOR_GRAD.kernel()
def crop_tensor_grad(ctx, ins, attrs):
    x, g = ins[0], ins[-1]
    dx = ctx.xp.zeros(x.shape, dtype=g.dtype)
    dx[crop_index(x, ins[:-1], attrs)] = g
    return (dx,)


UNBIND_GRAD = standard("unbind", ins=("X",),
                       comment="X@GRAD = the Out@GRAD stacked along `axis` (0 for a missing one).")


@UNBIND_GRAD.kernel()
def unbind_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, gs = ins
    axis = normalize_axis(attrs["axis"], x.ndim)
    part = x.shape[:axis] + x.shape[axis + 1:]
    return (xp.stack([g if g is not None else xp.zeros(part, dtype=x.dtype) for g in gs], axis=axis),)


BROADCAST_TENSORS_GRAD = standard("broadcast_tensors", ins=("X",),
                                  comment="X[i]@GRAD = Out[i]@GRAD summed to X[i]'s shape.")


@BROADCAST_TENSORS_GRAD.kernel()
def broadcast_tensors_grad(ctx, ins, attrs):
    xs, gs = ins
    out = []
    for x, g in zip(xs, gs):
        if g is None:
            out.append(ctx.xp.zeros(x.shape, dtype=x.dtype))
        else:
            out.append(unbroadcast(g, (1,) * (g.ndim - x.ndim) + x.shape, x.shape).copy())
    return (out,)


DIAG_EMBED_GRAD = standard("diag_embed", ins=("Input",), in_grads=("Input",),
                           comment="Input@GRAD = the diagonal `offset` of Out@GRAD over (dim1, dim2).")


@DIAG_EMBED_GRAD.kernel()
def diag_embed_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, g = ins
    _, d1, d2 = diag_embed_geometry(x, attrs)
    i, j = diagonal_positions(xp, x.shape[-1], attrs["offset"])
    return (xp.moveaxis(g, (d1, d2), (-2, -1))[..., i, j].reshape(x.shape),)


REPEAT_INTERLEAVE_GRAD = standard("repeat_interleave", ins=("X", "RepeatsTensor"),
                                  comment="X@GRAD = Out@GRAD summed over each slice's repeats.")


@REPEAT_INTERLEAVE_GRAD.kernel()
def repeat_interleave_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, reps_t, g = ins
    t, axis, reps = repeats_of(xp, x, (x, reps_t), attrs)
    source = xp.repeat(xp.arange(t.shape[axis]), reps)
    dx = xp.zeros((t.shape[axis],) + t.shape[:axis] + t.shape[axis + 1:], dtype=g.dtype)
    xp.add.at(dx, source, xp.moveaxis(g, axis, 0))
    return (xp.moveaxis(dx, 0, axis).reshape(x.shape),)


KRON_GRAD = standard("kron", ins=("X", "Y"), in_grads=("X", "Y"),
                     comment="Out@GRAD seen as [x0, y0, x1, y1, ...]: X@GRAD sums it against Y, Y@GRAD against X.")


@KRON_GRAD.kernel()
def kron_grad(ctx, ins, attrs):
    x, y, g = ins
    nd = max(x.ndim, y.ndim)
    xs, ys = (1,) * (nd - x.ndim) + x.shape, (1,) * (nd - y.ndim) + y.shape
    pairs = [d for a, b in zip(xs, ys) for d in (a, b)]
    gr = g.reshape(pairs)
    xr = x.reshape([d for a in xs for d in (a, 1)])
    yr = y.reshape([d for b in ys for d in (1, b)])
    dx = (gr * yr).sum(axis=tuple(range(1, 2 * nd, 2))).reshape(x.shape)
    dy = (gr * xr).sum(axis=tuple(range(0, 2 * nd, 2))).reshape(y.shape)
    return dx, dy


MULTIPLEX_GRAD = standard("multiplex", ins=("X", "Ids"),
                          comment="X[k]@GRAD[b] = Out@GRAD[b] where Ids[b] == k, else 0.")


@MULTIPLEX_GRAD.kernel()
def multiplex_grad(ctx, ins, attrs):
    xp = ctx.xp
    xs, ids, g = ins
    sel = multiplex_ids(xp, xs, ids)
    shape = (g.shape[0],) + (1,) * (g.ndim - 1)
    return ([xp.where((sel == k).reshape(shape), g, g.dtype.type(0)) for k in range(len(xs))],)


FILL_DIAGONAL_TENSOR_GRAD = standard("fill_diagonal_tensor", ins=("X", "Y"), in_grads=("X", "Y"),
                                     comment="X@GRAD = Out@GRAD with the diagonal zeroed; Y@GRAD = that diagonal.")


@FILL_DIAGONAL_TENSOR_GRAD.kernel()
def fill_diagonal_tensor_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, y, g = ins
    dims, (i, j) = diagonal_view_index(xp, x, attrs)
    dy = xp.moveaxis(g, dims, (-2, -1))[..., i, j].reshape(y.shape)
    dx = g.copy()
    xp.moveaxis(dx, dims, (-2, -1))[..., i, j] = 0
    return dx, dy
