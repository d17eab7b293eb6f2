"""Ops that add, drop, repeat or stack dims, as paddle.* writes them: squeeze2 / unsqueeze2 /
flatten_contiguous_range (with XShape, like reshape2), expand_v2 / expand_as_v2, tile, stack / unstack.

Shape-like inputs (Shape, RepeatTimes, AxesTensor) are small tensors read on the host when the op runs; Paddle gives
them priority over the matching attribute, and so do we.
"""
from __future__ import annotations

import math


from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._infer import normalize_axis
from .shape import XSHAPE, set_xshape, xshape
from .tensor import ints_operand


def _fail_ic(ic, fn, *args):
    try:
        return fn(*args)
    except ValueError as e:
        ic.fail(str(e))


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
