"""Writing into a copy of a tensor at given positions: scatter_nd_add, index_add, put_along_axis, index_put and
masked_fill. Repeated positions accumulate where the op adds; where it assigns, the last write wins (as NumPy's)."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, one_of, register_op
from ._infer import normalize_axis, same_as
from .along_axis import along_axis_positions, checked_index


def nd_positions(xp, x, index):
    """scatter_nd_add's Index [..., k] as a tuple of k index arrays into X's first k dims."""
    k = index.shape[-1] if index.ndim else 0
    if index.ndim == 0 or k > x.ndim:
        raise ValueError(f"scatter_nd_add: Index [..., k] with k <= {x.ndim} expected, got {list(index.shape)}")
    return tuple(checked_index(xp, index[..., i], x.shape[i], "scatter_nd_add") for i in range(k))


SCATTER_ND_ADD = register_op(
    "scatter_nd_add", "Out = X with Updates[i...] added at X[Index[i..., :]] (repeats accumulate).",
    inputs=[In("X", "the tensor added into"), In("Index", "[..., k] int positions into X's first k dims"),
            In("Updates", "Index.shape[:-1] + X.shape[k:]")],
    outputs=[Out("Out", "X's shape and dtype")], infer_shape=same_as())


@SCATTER_ND_ADD.kernel()
def scatter_nd_add(ctx, ins, attrs):
    xp = ctx.xp
    x, index, updates = ins
    out = x.copy()
    xp.add.at(out, nd_positions(xp, x, index), updates.astype(x.dtype, copy=False))
    return (out,)


INDEX_ADD = register_op(
    "index_add", "Out = X with AddValue's slices added at the positions Index names along `axis`.",
    inputs=[In("X", "the tensor added into"), In("Index", "1-D int positions along `axis`"),
            In("AddValue", "X's shape with len(Index) along `axis`")],
    outputs=[Out("Out", "X's shape and dtype")], attrs=[Attr("axis", A.INT, "the axis", 0)], infer_shape=same_as())


def index_along(xp, x, index, axis_attr, op_type):
    axis = normalize_axis(axis_attr, x.ndim)
    return axis, checked_index(xp, index.reshape(-1), x.shape[axis], op_type)


@INDEX_ADD.kernel()
def index_add(ctx, ins, attrs):
    xp = ctx.xp
    x, index, value = ins
    axis, idx = index_along(xp, x, index, attrs["axis"], "index_add")
    out = xp.moveaxis(x.copy(), axis, 0)
    xp.add.at(out, idx, xp.moveaxis(value.astype(x.dtype, copy=False), axis, 0))
    return (xp.ascontiguousarray(xp.moveaxis(out, 0, axis)),)


PUT_ALONG_AXIS = register_op(
    "put_along_axis", "Result = Input with Value written ('assign') or added ('add') at Index along `Axis`.",
    inputs=[In("Input", "the tensor written into"), In("Index", "int, Input's rank"),
            In("Value", "broadcastable to Index's shape")],
    outputs=[Out("Result", "Input's shape and dtype")],
    attrs=[Attr("Axis", A.INT, "the axis"), Attr("Reduce", A.STRING, "'assign' or 'add'", "assign",
                                                   checks=(one_of("assign", "add"),)),
           Attr("Include_self", A.BOOLEAN, "(only true: Input's own values take part)", True)],
    infer_shape=same_as("Input", "Result"))


def put_positions(xp, x, index, axis_attr):
    if index.ndim != x.ndim:
        raise ValueError(f"put_along_axis: Index must have Input's rank {x.ndim}, got {list(index.shape)}")
    axis = normalize_axis(axis_attr, x.ndim)
    return along_axis_positions(xp, checked_index(xp, index, x.shape[axis], "put_along_axis"), axis)


@PUT_ALONG_AXIS.kernel()
def put_along_axis(ctx, ins, attrs):
    xp = ctx.xp
    x, index, value = ins
    if not attrs["Include_self"]:
        raise ValueError("put_along_axis: Include_self=false is not supported")
    pos = put_positions(xp, x, index, attrs["Axis"])
    out = x.copy()
    v = xp.broadcast_to(value.astype(x.dtype, copy=False), index.shape)
    if attrs["Reduce"] == "add":
        xp.add.at(out, pos, v)
    else:
        out[pos] = v
    return (out,)


INDEX_PUT = register_op(
    "index_put", "out = x with value written (or with `accumulate` added) at x[indices...].",
    inputs=[In("x", "the tensor written into"), In("indices", "int (or one bool) index tensors", duplicable=True),
            In("value", "broadcastable to the indexed shape")],
    outputs=[Out("out", "x's shape and dtype")], attrs=[Attr("accumulate", A.BOOLEAN, "add instead of write", False)],
    infer_shape=same_as("x", "out"))


def put_index(xp, x, indices):
    if len(indices) == 1 and indices[0].dtype == bool:
        return indices[0]
    if len(indices) > x.ndim:
        raise ValueError(f"index_put: {len(indices)} index tensors for a {x.ndim}-d x")
    return tuple(checked_index(xp, i, x.shape[d], "index_put") for d, i in enumerate(indices))


@INDEX_PUT.kernel()
def index_put(ctx, ins, attrs):
    xp = ctx.xp
    x, indices, value = ins
    pos = put_index(xp, x, indices)
    out = x.copy()
    v = value.astype(x.dtype, copy=False)
    if attrs["accumulate"]:
        xp.add.at(out, pos, xp.broadcast_to(v, out[pos].shape))
    else:
        out[pos] = v
    return (out,)


MASKED_FILL = register_op(
    "masked_fill", "out = value where mask is true, else x (broadcast together).",
    inputs=[In("x", "the tensor"), In("mask", "bool, broadcastable"), In("value", "a one-element tensor")],
    outputs=[Out("out", "the broadcast shape, x's dtype")])


@MASKED_FILL.kernel()
def masked_fill(ctx, ins, attrs):
    x, mask, value = ins
    return (ctx.xp.where(mask.astype(bool), value.astype(x.dtype), x),)
