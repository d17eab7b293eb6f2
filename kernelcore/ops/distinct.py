"""Distinct values and the most frequent one: unique, unique_consecutive and mode. Outputs shaped by the data read
their sizes once, as Paddle does."""
from __future__ import annotations

from ..ir import dtypes
from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.proto.framework_pb2 import VarType as VT
from ..ir.registry import Attr, In, Out, register_op
from ._infer import normalize_axis
from .tensor import NUMPY_DTYPE

_INDEX_DTYPE = Attr("dtype", A.INT, "(VarType) the index outputs' dtype", VT.INT64, checks=(NUMPY_DTYPE,))

UNIQUE = register_op(
    "unique", "Out = X's distinct values (or slices along `axis`), ascending; Indices = each one's first position, "
              "Index = each element's position in Out, Counts = how often each occurs.",
    inputs=[In("X", "the input tensor")],
    outputs=[Out("Out", "the distinct values"), Out("Indices", "first positions", dispensable=True),
             Out("Index", "the inverse", dispensable=True), Out("Counts", "the counts", dispensable=True)],
    attrs=[Attr("return_index", A.BOOLEAN, "(all outputs are computed)", False),
           Attr("return_inverse", A.BOOLEAN, "(all outputs are computed)", False),
           Attr("return_counts", A.BOOLEAN, "(all outputs are computed)", False),
           Attr("axis", A.INTS, "[] flattens X, else one axis", []), _INDEX_DTYPE,
           Attr("is_sorted", A.BOOLEAN, "(always sorted)", True)])


@UNIQUE.kernel()
def unique(ctx, ins, attrs):
    xp = ctx.xp
    x = ins[0]
    dt = dtypes.to_numpy(attrs["dtype"])
    if attrs["axis"]:
        axis = normalize_axis(attrs["axis"][0], x.ndim)
        out, first, inverse, counts = xp.unique(x, return_index=True, return_inverse=True, return_counts=True,
                                                axis=axis)
    else:
        out, first, inverse, counts = xp.unique(x.reshape(-1), return_index=True, return_inverse=True,
                                                return_counts=True)
    return out, first.astype(dt), inverse.reshape(-1).astype(dt), counts.astype(dt)


UNIQUE_CONSECUTIVE = register_op(
    "unique_consecutive", "Out = X with each run of equal consecutive values (or slices along `axis`) kept once; "
                          "Index = each element's run, Counts = each run's length.",
    inputs=[In("X", "the input tensor")],
    outputs=[Out("Out", "the runs' values"), Out("Index", "each element's run", dispensable=True),
             Out("Counts", "the runs' lengths", dispensable=True)],
    attrs=[Attr("return_inverse", A.BOOLEAN, "(all outputs are computed)", False),
           Attr("return_counts", A.BOOLEAN, "(all outputs are computed)", False),
           Attr("axis", A.INTS, "[] flattens X, else one axis", []), _INDEX_DTYPE])


@UNIQUE_CONSECUTIVE.kernel()
def unique_consecutive(ctx, ins, attrs):
    xp = ctx.xp
    x = ins[0]
    dt = dtypes.to_numpy(attrs["dtype"])
    axis = normalize_axis(attrs["axis"][0], x.ndim) if attrs["axis"] else 0
    t = xp.moveaxis(x, axis, 0) if attrs["axis"] else x.reshape(-1)
    if t.shape[0] == 0:
        return x.copy(), xp.zeros(0, dtype=dt), xp.zeros(0, dtype=dt)
    changed = (t[1:] != t[:-1]).reshape(t.shape[0] - 1, -1).any(axis=1)
    starts = xp.concatenate([xp.ones(1, dtype=bool), changed])
    runs = xp.cumsum(starts) - 1
    first = xp.nonzero(starts)[0]
    counts = xp.diff(xp.concatenate([first, xp.asarray([t.shape[0]])]))
    out = t[first]
    return (xp.moveaxis(out, 0, axis) if attrs["axis"] else out), runs.astype(dt), counts.astype(dt)


MODE = register_op(
    "mode", "Out = the most frequent value along `axis` (the smallest among equally frequent ones); Indices = the "
            "last position holding it.",
    inputs=[In("X", "the input tensor")],
    outputs=[Out("Out", "X reduced along `axis`"), Out("Indices", "positions, int64")],
    attrs=[Attr("axis", A.INT, "the axis", -1), Attr("keepdim", A.BOOLEAN, "keep the axis with size 1", False)])


@MODE.kernel()
def mode(ctx, ins, attrs):
    xp = ctx.xp
    x0 = ins[0]
    x = x0.reshape(1) if x0.ndim == 0 else x0
    axis = normalize_axis(attrs["axis"], x.ndim)
    t = xp.moveaxis(x, axis, -1)
    n = t.shape[-1]
    s = xp.sort(t, axis=-1)
    pos = xp.broadcast_to(xp.arange(n), s.shape)
    new_run = xp.concatenate([xp.ones(s.shape[:-1] + (1,), dtype=bool), s[..., 1:] != s[..., :-1]], axis=-1)
    run_start = xp.maximum.accumulate(xp.where(new_run, pos, 0), axis=-1)
    count_so_far = pos - run_start + 1  # a run's last element holds its length
    best = count_so_far.max(axis=-1, keepdims=True)
    first_best = xp.argmax(count_so_far == best, axis=-1)[..., None]  # the smallest value reaching it
    value = xp.take_along_axis(s, first_best, axis=-1)
    positions = xp.where(t == value, xp.arange(n), -1).max(axis=-1)
    value = value[..., 0]
    if attrs["keepdim"] and x0.ndim:
        value, positions = xp.expand_dims(value, axis), xp.expand_dims(positions, axis)
    return value.astype(x.dtype).reshape(value.shape if x0.ndim else ()), \
        positions.astype(xp.int64).reshape(positions.shape if x0.ndim else ())
