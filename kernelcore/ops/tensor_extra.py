"""Tensor functions paddle.* writes in Transformer/BERT programs and common model code: shape, range,
assign_value, squeeze2/unsqueeze2/flatten_contiguous_range (with XShape, like reshape2), expand_v2/expand_as_v2,
tile, stack/unstack, gather/gather_nd/scatter, where, cumsum, tril_triu, one_hot_v2, top_k_v2, arg_min.

Shape-like inputs (Shape, RepeatTimes, AxesTensor, Axis, K, depth_tensor, Start/End/Step) are small tensors read
on the host when the op runs; Paddle gives them priority over the matching attribute, and so do we.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes
from ..runtime.place import to_host
from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._infer import normalize_axis
from .loss import _INDEX_DTYPES, _arg_max_shape
from .math import _fail
from .shape import XSHAPE, set_xshape, xshape
from .tensor import NUMPY_DTYPE, ints_operand, one_int

VT = dtypes.VT


def _fail_ic(ic, fn, *args):
    try:
        return fn(*args)
    except ValueError as e:
        ic.fail(str(e))


# -- shape, range, assign_value ---------------------------------------------------------------------------
SHAPE = register_op(
    "shape", "Out = the shape of Input as a 1-D int32 tensor (one entry per dim).",
    inputs=[In("Input", "any tensor")], outputs=[Out("Out", "int32 [rank]")],
    infer_shape=lambda ic: ic.set_output("Out", (len(ic.shape("Input")),), VT.INT32))


@SHAPE.kernel()
def shape(ctx, ins, attrs):
    return (ctx.xp.asarray(ins[0].shape, dtype=ctx.xp.int32),)


def _host_scalar(t, slot: str):
    v = np.asarray(to_host(t)).reshape(-1)
    if v.size != 1:
        raise ValueError(f"{slot} must hold one value, got {v.size}")
    return v[0].item()


RANGE = register_op(
    "range", "Out = [Start, Start + Step, ...) up to End (exclusive), of Start's dtype: "
             "ceil((End - Start) / Step) elements. Step must not be 0.",
    inputs=[In("Start", "(one element) the first value"), In("End", "(one element) the bound, exclusive"),
            In("Step", "(one element) the spacing, nonzero")],
    outputs=[Out("Out", "1-D, Start's dtype")],
    infer_shape=lambda ic: ic.set_output("Out", (-1,), ic.dtype("Start")))


@RANGE.kernel()
def range_(ctx, ins, attrs):
    start, end, step = (_host_scalar(t, s) for t, s in zip(ins, ("Start", "End", "Step")))
    if step == 0:
        raise ValueError("Step must not be 0")
    n = max(int(math.ceil((end - start) / step)), 0)
    dt = ins[0].dtype
    xp = ctx.xp
    steps = xp.arange(n, dtype=xp.float64 if dt.kind == "f" else xp.int64)
    return ((steps * step + start).astype(dt),)


range_.__name__ = "range"

_VALUE_FIELDS = {VT.BOOL: "bool_values", VT.INT32: "int32_values", VT.INT64: "int64_values",
                 VT.FP32: "fp32_values", VT.FP64: "fp64_values"}

ASSIGN_VALUE = register_op(
    "assign_value", "Out = a tensor of `shape` and `dtype` holding the values of the attribute that matches the "
                    "dtype (bool_values, int32_values, int64_values, fp32_values, fp64_values), row-major.",
    outputs=[Out("Out", "the constant tensor")],
    attrs=[Attr("shape", A.INTS, "the output's shape"),
           Attr("dtype", A.INT, "(VarType) the output's dtype: bool, int32, int64, float32 or float64",
                checks=(NUMPY_DTYPE,)),
           Attr("bool_values", A.INTS, "the values when dtype is bool (as 0/1)", []),
           Attr("int32_values", A.INTS, "the values when dtype is int32", []),
           Attr("int64_values", A.LONGS, "the values when dtype is int64", []),
           Attr("fp32_values", A.FLOATS, "the values when dtype is float32", []),
           Attr("fp64_values", A.FLOAT64S, "the values when dtype is float64", [])],
    infer_shape=lambda ic: ic.set_output("Out", tuple(ic.attr("shape")), ic.attr("dtype")))


@ASSIGN_VALUE.kernel()
def assign_value(ctx, ins, attrs):
    field = _VALUE_FIELDS.get(attrs["dtype"])
    if field is None:
        raise ValueError(f"dtype {attrs['dtype']} has no values attribute; expected bool, int32, int64, "
                         f"float32 or float64")
    vals, shape_ = attrs[field], attrs["shape"]
    if len(vals) != math.prod(shape_):
        raise ValueError(f"{field} holds {len(vals)} values but shape {shape_} needs {math.prod(shape_)}")
    host = np.asarray(vals, dtype=dtypes.to_numpy(attrs["dtype"])).reshape(shape_)
    return (ctx.xp.asarray(host),)


# -- squeeze / unsqueeze / flatten ---------------------------------------------------------------------------
def unsqueeze_dims(in_dims, axes) -> list[int]:
    """Insert a 1 at each axis in turn (a negative axis counts from the end of the shape so far, plus one)."""
    out = list(in_dims)
    for a in axes:
        n = len(out)
        if not -n - 1 <= a <= n:
            raise ValueError(f"axis {a} is out of range for unsqueezing a {n}-d shape {out}")
        out.insert(a + n + 1 if a < 0 else a, 1)
    return out


def squeeze_dims(in_dims, axes) -> list[int]:
    """Drop the listed dims that have size 1 (others are kept, as Paddle does); no axes: every size-1 dim."""
    n = len(in_dims)
    if not axes:
        return [d for d in in_dims if d != 1]
    drop = set()
    for a in axes:
        if not -n <= a < max(n, 1):
            raise ValueError(f"axis {a} is out of range for squeezing a {n}-d shape {list(in_dims)}")
        a = a + n if a < 0 else a
        if n and in_dims[a] == 1:
            drop.add(a)
    return [d for i, d in enumerate(in_dims) if i not in drop]


_AXES_SLOTS = [In("AxesTensor", "(1-D int tensor) the axes; overrides `axes`", dispensable=True),
               In("AxesTensorList", "(1-element int tensors) the axes one by one; override `axes`",
                  duplicable=True, dispensable=True)]

UNSQUEEZE2 = register_op(
    "unsqueeze2", "Out = X with a dim of size 1 inserted at each of `axes`, in order (a negative axis counts "
                  "from the end of the shape built so far). AxesTensor / AxesTensorList override `axes`.",
    inputs=[In("X", "the input tensor"), *_AXES_SLOTS],
    outputs=[Out("Out", "X with the new dims"), XSHAPE],
    attrs=[Attr("axes", A.INTS, "where to insert dims of size 1", [])])


def _unsqueeze_infer(ic):
    if ic.has_input("AxesTensor") or ic.input_names("AxesTensorList"):
        n = len(ic.input_names("AxesTensorList")) or max(ic.shape("AxesTensor")[0], -1)
        if n < 0:
            return
        ic.set_output("Out", [-1] * (len(ic.shape("X")) + n), ic.dtype("X"))
    else:
        ic.set_output("Out", _fail_ic(ic, unsqueeze_dims, ic.shape("X"), ic.attr("axes")), ic.dtype("X"))
    if ic.output_names("XShape"):
        set_xshape(ic)


UNSQUEEZE2.infer_shape = _unsqueeze_infer


def _axes_from(attrs, axes_t, axes_list):
    return ints_operand(axes_list, axes_t, attrs["axes"], "AxesTensorList")


@UNSQUEEZE2.kernel()
def unsqueeze2(ctx, ins, attrs):
    x, axes_t, axes_list = ins
    return x.reshape(unsqueeze_dims(x.shape, _axes_from(attrs, axes_t, axes_list))), xshape(ctx.xp, x)


SQUEEZE2 = register_op(
    "squeeze2", "Out = X without the dims of size 1 listed in `axes` (listed dims of another size are kept); "
                "empty `axes`: without every dim of size 1.",
    inputs=[In("X", "the input tensor")], outputs=[Out("Out", "X without those dims"), XSHAPE],
    attrs=[Attr("axes", A.INTS, "the dims to remove; negative counts from the end", [])])


def _squeeze_infer(ic):
    x = ic.shape("X")
    axes = ic.attr("axes")
    ic.set_output("Out", _fail_ic(ic, squeeze_dims, x, axes), ic.dtype("X"))
    if ic.output_names("XShape"):
        set_xshape(ic)


SQUEEZE2.infer_shape = _squeeze_infer


@SQUEEZE2.kernel()
def squeeze2(ctx, ins, attrs):
    x = ins[0]
    return x.reshape(squeeze_dims(x.shape, attrs["axes"])), xshape(ctx.xp, x)


def flatten_dims(in_dims, start: int, stop: int) -> list[int]:
    n = len(in_dims)
    if n == 0:
        return [1]
    s, e = normalize_axis(start, n), normalize_axis(stop, n)
    if s > e:
        raise ValueError(f"start_axis {start} comes after stop_axis {stop} for a {n}-d X")
    mid = -1 if any(d < 0 for d in in_dims[s:e + 1]) else math.prod(in_dims[s:e + 1])
    return list(in_dims[:s]) + [mid] + list(in_dims[e + 1:])


FLATTEN = register_op(
    "flatten_contiguous_range", "Out = X with dims start_axis..stop_axis (inclusive) merged into one.",
    inputs=[In("X", "the input tensor")], outputs=[Out("Out", "the flattened tensor"), XSHAPE],
    attrs=[Attr("start_axis", A.INT, "the first dim merged; negative counts from the end", 1),
           Attr("stop_axis", A.INT, "the last dim merged; negative counts from the end", 1)])


def _flatten_infer(ic):
    ic.set_output("Out", _fail_ic(ic, flatten_dims, ic.shape("X"), ic.attr("start_axis"), ic.attr("stop_axis")),
                  ic.dtype("X"))
    if ic.output_names("XShape"):
        set_xshape(ic)


FLATTEN.infer_shape = _flatten_infer


@FLATTEN.kernel()
def flatten_contiguous_range(ctx, ins, attrs):
    x = ins[0]
    return x.reshape(flatten_dims(x.shape, attrs["start_axis"], attrs["stop_axis"])), xshape(ctx.xp, x)


# -- expand, tile -------------------------------------------------------------------------------------------
def expand_dims(in_dims, target) -> list[int]:
    """expand_v2's rule: X is aligned to the trailing dims of `target`; -1 keeps X's dim; a dim of X that is
    not 1 must equal the target's."""
    target = list(target)
    if len(target) < len(in_dims):
        raise ValueError(f"the target shape {target} has fewer dims than X {list(in_dims)}")
    lead = len(target) - len(in_dims)
    out = []
    for i, t in enumerate(target):
        d = in_dims[i - lead] if i >= lead else None
        if t == -1:
            if d is None:
                raise ValueError(f"target shape {target}: -1 at a new leading dim {i}")
            out.append(d)
        elif t <= 0:
            raise ValueError(f"target shape {target}: dim {i} is {t}; expected > 0 or -1")
        else:
            if d is not None and d not in (1, t, -1):
                raise ValueError(f"X {list(in_dims)} cannot expand to {target}: dim {i - lead} of X is {d}, "
                                 f"expected 1 or {t}")
            out.append(t)
    return out


EXPAND_V2 = register_op(
    "expand_v2", "Out = X broadcast to `shape` (X's dims line up with the trailing dims; -1 keeps X's dim). "
                 "Shape (a 1-D tensor) or expand_shapes_tensor (one-element tensors), when given, override it.",
    inputs=[In("X", "the input tensor"),
            In("Shape", "(1-D int tensor) the target shape; overrides `shape`", dispensable=True),
            In("expand_shapes_tensor", "(1-element int tensors) the target dims one by one", duplicable=True,
               dispensable=True)],
    outputs=[Out("Out", "X expanded")],
    attrs=[Attr("shape", A.INTS, "the target shape", [])])


def _expand_infer(ic):
    if ic.has_input("Shape") or ic.input_names("expand_shapes_tensor"):
        n = len(ic.input_names("expand_shapes_tensor")) or ic.shape("Shape")[0]
        if n >= 0:
            ic.set_output("Out", [-1] * n, ic.dtype("X"))
        return
    ic.set_output("Out", _fail_ic(ic, expand_dims, ic.shape("X"), ic.attr("shape")), ic.dtype("X"))


EXPAND_V2.infer_shape = _expand_infer


@EXPAND_V2.kernel()
def expand_v2(ctx, ins, attrs):
    x, shape_t, shape_list = ins
    target = ints_operand(shape_list, shape_t, attrs["shape"], "expand_shapes_tensor")
    return (ctx.xp.broadcast_to(x, expand_dims(x.shape, target)).copy(),)


EXPAND_AS_V2 = register_op(
    "expand_as_v2", "Out = X broadcast to Y's shape (or to `target_shape` when Y is not given).",
    inputs=[In("X", "the input tensor"), In("Y", "the tensor whose shape Out takes", dispensable=True)],
    outputs=[Out("Out", "X expanded")],
    attrs=[Attr("target_shape", A.INTS, "the target shape, used when Y is not given", [])])


def _expand_as_infer(ic):
    target = ic.shape("Y") if ic.has_input("Y") else ic.attr("target_shape")
    ic.set_output("Out", _fail_ic(ic, expand_dims, ic.shape("X"), target), ic.dtype("X"))


EXPAND_AS_V2.infer_shape = _expand_as_infer


@EXPAND_AS_V2.kernel()
def expand_as_v2(ctx, ins, attrs):
    x, y = ins
    target = y.shape if y is not None else attrs["target_shape"]
    return (ctx.xp.broadcast_to(x, expand_dims(x.shape, target)).copy(),)


def tile_reps(ndim: int, reps) -> tuple[list[int], list[int]]:
    """(X's dims padded with leading 1s, repeats padded with leading 1s), both of one length."""
    reps = list(reps)
    if any(r <= 0 for r in reps):
        raise ValueError(f"repeat_times {reps}: every entry must be > 0")
    n = max(ndim, len(reps))
    return n - ndim, [1] * (n - len(reps)) + reps


TILE = register_op(
    "tile", "Out = X repeated repeat_times[i] times along dim i (X's dims and repeat_times are aligned at the "
            "end, the shorter padded with leading 1s). RepeatTimes / repeat_times_tensor override the attribute.",
    inputs=[In("X", "the input tensor"),
            In("RepeatTimes", "(1-D int tensor) the repeats; overrides repeat_times", dispensable=True),
            In("repeat_times_tensor", "(1-element int tensors) the repeats one by one", duplicable=True,
               dispensable=True)],
    outputs=[Out("Out", "X tiled")],
    attrs=[Attr("repeat_times", A.INTS, "the repeats per dim", [])])


def _tile_infer(ic):
    if ic.has_input("RepeatTimes") or ic.input_names("repeat_times_tensor"):
        n = len(ic.input_names("repeat_times_tensor")) or ic.shape("RepeatTimes")[0]
        if n >= 0:
            ic.set_output("Out", [-1] * max(n, len(ic.shape("X"))), ic.dtype("X"))
        return
    x = ic.shape("X")
    pad, reps = _fail_ic(ic, tile_reps, len(x), ic.attr("repeat_times"))
    dims = [1] * pad + list(x)
    ic.set_output("Out", [d * r if d >= 0 else -1 for d, r in zip(dims, reps)], ic.dtype("X"))


TILE.infer_shape = _tile_infer


@TILE.kernel()
def tile(ctx, ins, attrs):
    x, reps_t, reps_list = ins
    reps = ints_operand(reps_list, reps_t, attrs["repeat_times"], "repeat_times_tensor")
    _, reps = tile_reps(x.ndim, reps)
    return (ctx.xp.tile(x, reps),)


# -- stack, unstack -----------------------------------------------------------------------------------------
STACK = register_op(
    "stack", "Y = the X tensors (all of one shape and dtype) joined along a new dim at `axis`.",
    inputs=[In("X", "the tensors to stack", duplicable=True)], outputs=[Out("Y", "the stacked tensor")],
    attrs=[Attr("axis", A.INT, "where the new dim goes, in [-(rank+1), rank+1)", 0)])


def _stack_infer(ic):
    shapes = ic.shapes("X")
    for i, s in enumerate(shapes[1:], 1):
        if len(s) != len(shapes[0]) or any(a >= 0 and b >= 0 and a != b for a, b in zip(s, shapes[0])):
            ic.fail(f"X[{i}] has shape {list(s)} but X[0] has {list(shapes[0])}; every input must have the same "
                    f"shape")
    axis = normalize_axis(ic.attr("axis"), len(shapes[0]) + 1, ic)
    out = list(shapes[0])
    out.insert(axis, len(shapes))
    ic.set_output("Y", out, ic.dtype("X", 0))


STACK.infer_shape = _stack_infer


@STACK.kernel()
def stack(ctx, ins, attrs):
    xs = ins[0]
    for i, x in enumerate(xs[1:], 1):
        if x.shape != xs[0].shape or x.dtype != xs[0].dtype:
            raise ValueError(f"X[{i}] is {x.dtype}{list(x.shape)} but X[0] is {xs[0].dtype}{list(xs[0].shape)}")
    return (ctx.xp.stack(xs, axis=normalize_axis(attrs["axis"], xs[0].ndim + 1)),)


UNSTACK = register_op(
    "unstack", "Y[i] = X's slice i along `axis`, that dim removed; `num` must equal X's size along it.",
    inputs=[In("X", "the tensor to unstack")], outputs=[Out("Y", "the slices", duplicable=True)],
    attrs=[Attr("axis", A.INT, "the dim to split", 0), Attr("num", A.INT, "the number of slices", 0)])


def _unstack_infer(ic):
    x = ic.shape("X")
    axis = normalize_axis(ic.attr("axis"), len(x), ic)
    n = len(ic.output_names("Y"))
    if x[axis] >= 0 and x[axis] != n:
        ic.fail(f"X {list(x)} has {x[axis]} slices along axis {axis} but Y names {n} variables")
    for i in range(n):
        ic.set_output("Y", [d for j, d in enumerate(x) if j != axis], ic.dtype("X"), i)


UNSTACK.infer_shape = _unstack_infer


@UNSTACK.kernel()
def unstack(ctx, ins, attrs):
    x = ins[0]
    axis = normalize_axis(attrs["axis"], x.ndim)
    n = len(ctx.output_names("Y"))
    if x.shape[axis] != n:
        raise ValueError(f"X {list(x.shape)} has {x.shape[axis]} slices along axis {axis} but Y names {n} variables")
    return ([ctx.xp.take(x, i, axis=axis) for i in range(n)],)


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


# -- where, cumsum, tril_triu -------------------------------------------------------------------------------
def _where_infer(ic):
    from ..ir.shape_inference import broadcast_shapes
    if ic.dtype("X") != ic.dtype("Y"):
        ic.fail(f"X is {ic.dtype_name(ic.dtype('X'))} but Y is {ic.dtype_name(ic.dtype('Y'))}; expected the same")
    s = broadcast_shapes(ic.shape("X"), ic.shape("Y"), -1, ic)
    ic.set_output("Out", broadcast_shapes(ic.shape("Condition"), s, -1, ic), ic.dtype("X"))


WHERE = register_op(
    "where", "Out = X where Condition is true, else Y, elementwise (the three broadcast like NumPy).",
    inputs=[In("Condition", "bool tensor"), In("X", "values where true"), In("Y", "values where false")],
    outputs=[Out("Out", "the selected values")], infer_shape=_where_infer)


@WHERE.kernel()
def where(ctx, ins, attrs):
    c, x, y = ins
    return (ctx.xp.where(c.astype(bool, copy=False), x, y),)


CUMSUM = register_op(
    "cumsum", "Out = the running sum of X along `axis` (of the flattened X with `flatten`); `exclusive` leaves "
              "out each element itself, `reverse` sums from the end.",
    inputs=[In("X", "the input tensor")], outputs=[Out("Out", "X's shape (1-D with flatten), X's dtype")],
    attrs=[Attr("axis", A.INT, "the dim to sum along", -1),
           Attr("flatten", A.BOOLEAN, "sum over the flattened X", False),
           Attr("exclusive", A.BOOLEAN, "exclude each element from its own sum", False),
           Attr("reverse", A.BOOLEAN, "sum from the last element backwards", False)])


def _cumsum_infer(ic):
    x = ic.shape("X")
    if ic.attr("flatten"):
        n = math.prod(x) if all(d >= 0 for d in x) else -1
        ic.set_output("Out", (n,), ic.dtype("X"))
        return
    if x:
        normalize_axis(ic.attr("axis"), len(x), ic)
    ic.set_output("Out", x, ic.dtype("X"))


CUMSUM.infer_shape = _cumsum_infer


def cumsum_of(xp, x, axis: int, exclusive: bool, reverse: bool):
    if reverse:
        x = xp.flip(x, axis=axis)
    out = xp.cumsum(x, axis=axis, dtype=x.dtype)
    if exclusive:
        out = out - x
    if reverse:
        out = xp.flip(out, axis=axis)
    return xp.ascontiguousarray(out)


@CUMSUM.kernel()
def cumsum(ctx, ins, attrs):
    x = ins[0]
    if attrs["flatten"] or x.ndim == 0:
        x, axis = x.reshape(-1), 0
    else:
        axis = normalize_axis(attrs["axis"], x.ndim)
    return (cumsum_of(ctx.xp, x, axis, attrs["exclusive"], attrs["reverse"]),)


TRIL_TRIU = register_op(
    "tril_triu", "Out = X with the elements above (lower: tril) or below (triu) the `diagonal`-th diagonal of its "
                 "last two dims set to 0. diagonal 0 is the main diagonal, > 0 above it, < 0 below.",
    inputs=[In("X", "a tensor of rank >= 2")], outputs=[Out("Out", "X's shape and dtype")],
    attrs=[Attr("diagonal", A.INT, "which diagonal bounds the kept triangle", 0),
           Attr("lower", A.BOOLEAN, "true: keep the lower triangle (tril); false: the upper (triu)", False)])


def _tril_infer(ic):
    if len(ic.shape("X")) < 2:
        ic.fail(f"X must have rank >= 2, got shape {list(ic.shape('X'))}")
    ic.set_output("Out", ic.shape("X"), ic.dtype("X"))


TRIL_TRIU.infer_shape = _tril_infer


@TRIL_TRIU.kernel()
def tril_triu(ctx, ins, attrs):
    x = ins[0]
    if x.ndim < 2:
        raise ValueError(f"X must have rank >= 2, got shape {list(x.shape)}")
    fn = ctx.xp.tril if attrs["lower"] else ctx.xp.triu
    return (fn(x, k=attrs["diagonal"]),)


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
