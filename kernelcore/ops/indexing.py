"""Indexing ops paddle.* writes: gather, gather_nd and scatter (positions given by an index tensor), one_hot_v2,
top_k_v2 and arg_min. Index tensors are checked against the dims they index (one host sync, as Paddle checks too).
"""
from __future__ import annotations

from ..ir import dtypes
from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._infer import normalize_axis
from .loss import _INDEX_DTYPES, _arg_max_shape
from .math import _fail
from .tensor import NUMPY_DTYPE, one_int

VT = dtypes.VT


# -- gather, gather_nd, scatter -----------------------------------------------------------------------------
def _check_index(xp, index, size: int, what: str):
    if index.dtype.kind not in "iu":
        raise TypeError(f"{what} must be int32 or int64, got {index.dtype}")
    if index.size and bool(((index < 0) | (index >= size)).any()):  # one host sync, as Paddle checks too
        raise IndexError(f"{what} must lie in [0, {size}), got values outside it")


GATHER = register_op(
    "gather", "Out = the slices of X picked by Index (1-D) along `axis` (the Axis tensor, when given, wins).",
    inputs=[In("X", "the source tensor"), In("Index", "(1-D int32/int64) the positions to pick"),
            In("Axis", "(one int) the dim to gather along; overrides `axis`", dispensable=True)],
    outputs=[Out("Out", "X with dim `axis` replaced by len(Index)")],
    attrs=[Attr("axis", A.INT, "the dim to gather along", 0)])


def _gather_infer(ic):
    x, idx = ic.shape("X"), ic.shape("Index")
    if len(idx) > 1:
        ic.fail(f"Index must be 1-D (or 0-d), got shape {list(idx)}")
    if ic.has_input("Axis"):
        ic.set_output("Out", [-1] * len(x), ic.dtype("X"))
        return
    axis = normalize_axis(ic.attr("axis"), len(x), ic)
    out = list(x)
    if idx:
        out[axis] = idx[0]
    else:
        out.pop(axis)
    ic.set_output("Out", out, ic.dtype("X"))


GATHER.infer_shape = _gather_infer


def gather_axis(attrs, axis_t, ndim):
    return normalize_axis(one_int(axis_t, "Axis") if axis_t is not None else attrs["axis"], ndim)


@GATHER.kernel()
def gather(ctx, ins, attrs):
    x, index, axis_t = ins
    axis = gather_axis(attrs, axis_t, x.ndim)
    _check_index(ctx.xp, index, x.shape[axis], "Index")
    return (ctx.xp.take(x, index, axis=axis),)


GATHER_ND = register_op(
    "gather_nd", "Out[i...] = X[Index[i..., 0], ..., Index[i..., k-1]]: the last dim of Index (size k) indexes X's "
                 "first k dims; Out's shape is Index.shape[:-1] + X.shape[k:].",
    inputs=[In("X", "the source tensor"), In("Index", "(int32/int64) [..., k], k <= rank of X")],
    outputs=[Out("Out", "the gathered elements or slices")])


def _gather_nd_infer(ic):
    x, idx = ic.shape("X"), ic.shape("Index")
    if not idx:
        ic.fail("Index must have at least one dim")
    k = idx[-1]
    if k > len(x):
        ic.fail(f"Index's last dim is {k} but X {list(x)} has only {len(x)} dims")
    ic.set_output("Out", list(idx[:-1]) + (list(x[k:]) if k >= 0 else [-1]), ic.dtype("X"))


GATHER_ND.infer_shape = _gather_nd_infer


def nd_positions(xp, x_shape, index):
    """The index tensor as a tuple of k int arrays of Index.shape[:-1], bounds-checked."""
    k = index.shape[-1]
    if k > len(x_shape):
        raise ValueError(f"Index's last dim is {k} but X {list(x_shape)} has only {len(x_shape)} dims")
    cols = xp.moveaxis(index, -1, 0)
    for i in range(k):  # a loop over dims of X, not over elements
        _check_index(xp, cols[i], x_shape[i], f"Index[..., {i}]")
    return tuple(cols[i] for i in range(k))


@GATHER_ND.kernel()
def gather_nd(ctx, ins, attrs):
    x, index = ins
    xp = ctx.xp
    pos = nd_positions(xp, x.shape, index)
    if not pos:
        return (xp.broadcast_to(x, index.shape[:-1] + x.shape).copy(),)
    return (x[pos].copy(),)


SCATTER = register_op(
    "scatter", "Out = X with rows Ids (1-D, along dim 0) replaced by the rows of Updates (overwrite), or, "
               "without overwrite, with those rows zeroed and then the Updates rows added (repeated ids add up).",
    inputs=[In("X", "the tensor to update"), In("Ids", "(1-D int32/int64) the rows of X to write"),
            In("Updates", "[len(Ids)] + X.shape[1:], the new rows")],
    outputs=[Out("Out", "the updated copy of X")],
    attrs=[Attr("overwrite", A.BOOLEAN, "true: replace the rows (the last one wins for a repeated id); false: "
                "zero them, then accumulate", True)])


def _scatter_infer(ic):
    x, ids, upd = ic.shape("X"), ic.shape("Ids"), ic.shape("Updates")
    if len(ids) > 1 and not (len(ids) == 2 and ids[1] == 1):
        ic.fail(f"Ids must be 1-D, got shape {list(ids)}")
    if len(upd) != len(x) or any(a >= 0 and b >= 0 and a != b for a, b in zip(upd[1:], x[1:])):
        ic.fail(f"Updates has shape {list(upd)} but X has {list(x)}; expected [len(Ids)] + {list(x[1:])}")
    ic.set_output("Out", x, ic.dtype("X"))


SCATTER.infer_shape = _scatter_infer


@SCATTER.kernel()
def scatter(ctx, ins, attrs):
    x, ids, upd = ins
    xp = ctx.xp
    ids = ids.reshape(-1)
    _check_index(xp, ids, x.shape[0], "Ids")
    if upd.shape[0] != ids.shape[0] or upd.shape[1:] != x.shape[1:]:
        raise ValueError(f"Updates has shape {list(upd.shape)} but Ids has {ids.shape[0]} entries and X is "
                         f"{list(x.shape)}")
    out = x.copy()  # our own array: writing into it mutates no input
    if attrs["overwrite"]:
        out[ids] = upd
    else:
        out[ids] = 0
        xp.add.at(out, ids, upd)
    return (out,)


# -- one_hot_v2, top_k_v2, arg_min --------------------------------------------------------------------------
ONE_HOT_V2 = register_op(
    "one_hot_v2", "Out[..., j] = 1 where X[...] == j, else 0: X.shape + [depth], of `dtype`. An id outside "
                  "[0, depth) is an error, unless allow_out_of_range (its row is then all zeros).",
    inputs=[In("X", "(int32/int64) the ids"),
            In("depth_tensor", "(one int) the depth; overrides `depth`", dispensable=True)],
    outputs=[Out("Out", "the one-hot tensor")],
    attrs=[Attr("depth", A.INT, "the number of classes", -1),
           Attr("dtype", A.INT, "(VarType) Out's dtype; default float32", VT.FP32, checks=(NUMPY_DTYPE,)),
           Attr("allow_out_of_range", A.BOOLEAN, "give all-zero rows for ids outside [0, depth)", False)])


def _one_hot_infer(ic):
    depth = -1 if ic.has_input("depth_tensor") else ic.attr("depth")
    ic.set_output("Out", list(ic.shape("X")) + [depth], ic.attr("dtype"))


ONE_HOT_V2.infer_shape = _one_hot_infer


@ONE_HOT_V2.kernel()
def one_hot_v2(ctx, ins, attrs):
    x, depth_t = ins
    xp = ctx.xp
    depth = one_int(depth_t, "depth_tensor") if depth_t is not None else attrs["depth"]
    if depth <= 0:
        raise ValueError(f"depth must be > 0, got {depth}")
    if not attrs["allow_out_of_range"]:
        _check_index(xp, x, depth, "X (the ids)")
    return ((x[..., None] == xp.arange(depth)).astype(dtypes.to_numpy(attrs["dtype"])),)


TOP_K_V2 = register_op(
    "top_k_v2", "Out, Indices = the k largest (or, without `largest`, smallest) entries of X along `axis` and "
                "their positions, best first (sorted); ties keep the lower index first. The K tensor, when given, "
                "overrides `k`.",
    inputs=[In("X", "the input tensor"), In("K", "(one int) k; overrides `k`", dispensable=True)],
    outputs=[Out("Out", "the values: X's shape with dim `axis` = k"), Out("Indices", "their int64 positions")],
    attrs=[Attr("k", A.INT, "how many entries to keep", 1), Attr("axis", A.INT, "the dim to search", -1),
           Attr("largest", A.BOOLEAN, "keep the largest (false: the smallest)", True),
           Attr("sorted", A.BOOLEAN, "order the kept entries best first (kernelcore always does)", True)])


def _top_k_infer(ic):
    x = ic.shape("X")
    out = list(x)
    if x:
        axis = normalize_axis(ic.attr("axis"), len(x), ic)
        k = -1 if ic.has_input("K") else ic.attr("k")
        if k >= 0 and x[axis] >= 0 and k > x[axis]:
            ic.fail(f"k {k} is larger than X's dim {axis} of size {x[axis]}")
        out[axis] = k
    ic.set_output("Out", out, ic.dtype("X"))
    ic.set_output("Indices", out, VT.INT64)


TOP_K_V2.infer_shape = _top_k_infer


@TOP_K_V2.kernel()
def top_k_v2(ctx, ins, attrs):
    x, k_t = ins
    xp = ctx.xp
    k = one_int(k_t, "K") if k_t is not None else attrs["k"]
    if x.ndim == 0:
        return x.copy(), xp.zeros((), dtype=xp.int64)
    axis = normalize_axis(attrs["axis"], x.ndim)
    if not 0 <= k <= x.shape[axis]:
        raise ValueError(f"k {k} must lie in [0, {x.shape[axis]}] (X's dim {axis})")
    key = x
    if attrs["largest"]:  # the stable ascending sort of a negated key keeps ties in index order
        key = xp.logical_not(x) if x.dtype.kind == "b" else -(x.astype(xp.int64) if x.dtype.kind == "u" else x)
    order = xp.argsort(key, axis=axis, kind="stable")
    idx = xp.take(order, xp.arange(k), axis=axis)
    return xp.take_along_axis(x, idx, axis=axis), idx.astype(xp.int64)


def _infer_arg_min(ic):
    out = _arg_max_shape(ic.shape("X"), ic.attr("axis"), ic.attr("keepdims"), ic.attr("flatten"), ic.fail)
    ic.set_output("Out", out, _INDEX_DTYPES[ic.attr("dtype")])


ARG_MIN = register_op(
    "arg_min", "The index of the smallest entry of X along `axis` (the first one when several are equal).",
    inputs=[In("X", "the input tensor")],
    outputs=[Out("Out", "the indices: X's shape without `axis` (size 1 with keepdims); int64 or int32")],
    attrs=[Attr("axis", A.LONG, "the dim to search along, in [-rank, rank); ignored with flatten"),
           Attr("keepdims", A.BOOLEAN, "keep `axis` (or, with flatten, every dim) as size 1", False),
           Attr("flatten", A.BOOLEAN, "search the flattened X: Out is 0-d (all ones with keepdims)", False),
           Attr("dtype", A.INT, "the index type as a VarType: 3 int64, 2 int32, -1 int64", VT.INT64)],
    infer_shape=_infer_arg_min)


@ARG_MIN.kernel()
def arg_min(ctx, ins, attrs):
    xp = ctx.xp
    x = ins[0]
    shape_ = _arg_max_shape(x.shape, attrs["axis"], attrs["keepdims"], attrs["flatten"], _fail)
    dt = xp.int32 if _INDEX_DTYPES.get(attrs["dtype"], VT.INT64) == VT.INT32 else xp.int64
    r = xp.argmin(x.reshape(-1)) if attrs["flatten"] or x.ndim == 0 else xp.argmin(x, axis=attrs["axis"])
    return (xp.asarray(r).astype(dt).reshape(shape_),)
