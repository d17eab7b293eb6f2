"""Ops a Swin Transformer's shifted windows write, where no other family defines them: roll (the cyclic shift
of the feature map before and after window attention) and index_select (the relative position bias table
gathered by a fixed index).

Registered only where no family did: both are general tensor ops a tensor family may take over.
"""
from __future__ import annotations


from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, has_op, register_op
from ._infer import normalize_axis, same_as
from .tensor import host_ints


def roll_shifts(shifts_t, attrs) -> tuple[list[int], list[int]]:
    shifts = host_ints(shifts_t) if shifts_t is not None else list(attrs["shifts"])
    axes = list(attrs["axis"])
    if axes and len(axes) != len(shifts):
        raise ValueError(f"shifts {shifts} and axis {axes} must be of one length")
    if not axes and len(shifts) != 1:
        raise ValueError(f"with no axis (the flattened tensor), shifts must hold one value, got {shifts}")
    return shifts, axes


def roll_array(xp, x, shifts, axes):
    if not axes:  # Paddle rolls the flattened tensor and restores its shape
        return xp.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
    return xp.roll(x, shifts, axis=[normalize_axis(a, x.ndim) for a in axes])


def _roll(ctx, ins, attrs):
    x, shifts_t = ins
    shifts, axes = roll_shifts(shifts_t, attrs)
    return (roll_array(ctx.xp, x, shifts, axes),)


def _index_select_infer(ic):
    x, index = list(ic.shape("X")), ic.shape("Index")
    if len(index) != 1:
        ic.fail(f"Index must be 1-D, got shape {list(index)}")
    dim = normalize_axis(ic.attr("dim") or 0, len(x), ic)
    x[dim] = index[0]
    ic.set_output("Out", x, ic.dtype("X"))


def checked_index(xp, index, size: int):
    if index.ndim != 1 or index.dtype.kind not in "iu":
        raise ValueError(f"Index must be a 1-D integer tensor, got {index.dtype} {list(index.shape)}")
    if index.size and bool(xp.any((index < 0) | (index >= size))):
        raise ValueError(f"Index values must be in [0, {size}) (the selected dim's size)")
    return index


def _index_select(ctx, ins, attrs):
    x, index = ins
    dim = normalize_axis(attrs["dim"], x.ndim)
    return (ctx.xp.take(x, checked_index(ctx.xp, index, x.shape[dim]), axis=dim),)


if not has_op("roll"):
    register_op(
        "roll",
        "Out = X shifted cyclically by `shifts` along `axis` (no axis: along the flattened tensor, shape kept).",
        inputs=[In("X", "the tensor to roll"), In("ShiftsTensor", "1-D int64: overrides `shifts`", dispensable=True)],
        outputs=[Out("Out", "X's shape and dtype")],
        attrs=[Attr("shifts", A.LONGS, "the shift per axis", []), Attr("axis", A.LONGS, "the axes to roll", [])],
        infer_shape=same_as()).kernel()(_roll)

if not has_op("index_select"):
    register_op(
        "index_select", "Out = X's slices at Index along `dim` (Out's dim has Index's length).",
        inputs=[In("X", "the tensor to select from"), In("Index", "1-D int32/int64 indices into dim")],
        outputs=[Out("Out", "X's shape with dim = len(Index)")],
        attrs=[Attr("dim", A.INT, "the dim to select along", 0)],
        infer_shape=_index_select_infer).kernel()(_index_select)

