"""Picking elements by index along one axis: take_along_axis (paddle.take_along_axis, quantile) and index_sample
(paddle.index_sample, multi_margin_loss: row i's picks from row i)."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._infer import normalize_axis


def checked_index(xp, index, size: int, op_type: str):
    """Index as int64 with negatives counted from the end, or ValueError naming the first out of [-size, size)."""
    if index.dtype.kind not in "iu":
        raise ValueError(f"{op_type}: the index must be an integer tensor, got {index.dtype}")
    index = index.astype(xp.int64)
    if index.size and bool(((index < -size) | (index >= size)).any()):
        raise ValueError(f"{op_type}: an index is out of range for an axis of size {size}")
    return xp.where(index < 0, index + size, index)


TAKE_ALONG_AXIS = register_op(
    "take_along_axis", "Result[..., i, ...] = Input[..., Index[..., i, ...], ...] along `Axis`.",
    inputs=[In("Input", "the tensor picked from"), In("Index", "int32/int64, Input's rank")],
    outputs=[Out("Result", "Index's shape, Input's dtype")],
    attrs=[Attr("Axis", A.INT, "the axis picked along")])


def along_axis_positions(xp, index, axis: int):
    """A full index tuple: Index along `axis`, each other dim's own position (for gathering and scattering)."""
    grids = []
    for d in range(index.ndim):
        if d == axis:
            grids.append(index)
        else:
            shape = [1] * index.ndim
            shape[d] = index.shape[d]
            grids.append(xp.arange(index.shape[d]).reshape(shape))
    return tuple(grids)


def take_geometry(xp, x, index, axis_attr):
    if index.ndim != x.ndim:
        raise ValueError(f"take_along_axis: Index must have Input's rank {x.ndim}, got shape {list(index.shape)}")
    axis = normalize_axis(axis_attr, x.ndim)
    if any(i > s for d, (i, s) in enumerate(zip(index.shape, x.shape)) if d != axis):
        raise ValueError(f"take_along_axis: Index {list(index.shape)} is larger than Input {list(x.shape)} "
                         f"off the axis")
    return axis, checked_index(xp, index, x.shape[axis], "take_along_axis")


@TAKE_ALONG_AXIS.kernel()
def take_along_axis(ctx, ins, attrs):
    xp = ctx.xp
    x, index = ins
    axis, index = take_geometry(xp, x, index, attrs["Axis"])
    return (x[along_axis_positions(xp, index, axis)],)


INDEX_SAMPLE = register_op(
    "index_sample", "Out[i, j] = X[i, Index[i, j]].",
    inputs=[In("X", "[N, D]"), In("Index", "[N, K] int32/int64")], outputs=[Out("Out", "[N, K], X's dtype")])


def index_sample_positions(xp, x, index):
    if x.ndim != 2 or index.ndim != 2 or index.shape[0] != x.shape[0]:
        raise ValueError(f"index_sample takes X [N, D] and Index [N, K], got {list(x.shape)} and "
                         f"{list(index.shape)}")
    rows = xp.arange(x.shape[0]).reshape(-1, 1)
    return rows, checked_index(xp, index, x.shape[1], "index_sample")


@INDEX_SAMPLE.kernel()
def index_sample(ctx, ins, attrs):
    x, index = ins
    return (x[index_sample_positions(ctx.xp, x, index)],)


def infer_from_index(out_slot, data_slot):
    def infer(ic):
        ic.set_output(out_slot, ic.shape("Index"), ic.dtype(data_slot))
    return infer


TAKE_ALONG_AXIS.infer_shape = infer_from_index("Result", "Input")
INDEX_SAMPLE.infer_shape = infer_from_index("Out", "X")
