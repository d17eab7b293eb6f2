"""Shape-inference helpers shared by op families."""
from __future__ import annotations

from ..shape_inference import broadcast_shapes


def same_as(in_slot: str = "X", out_slot: str = "Out"):
    """Out has In's shape and dtype (unary ops)."""
    def infer(ic):
        ic.set_output(out_slot, ic.shape(in_slot), ic.dtype(in_slot))
    return infer


def elementwise(ic):
    x, y = ic.shape("X"), ic.shape("Y")
    if ic.dtype("X") != ic.dtype("Y"):
        ic.fail(f"X is {ic.dtype_name(ic.dtype('X'))} but Y is {ic.dtype_name(ic.dtype('Y'))}")
    ic.set_output("Out", broadcast_shapes(x, y, ic.attr("axis"), ic), ic.dtype("X"))


def normalize_axis(axis: int, ndim: int, ic=None) -> int:
    if not -ndim <= axis < max(ndim, 1):
        if ic is not None:
            ic.fail(f"axis {axis} is out of range for a {ndim}-d input")
        raise ValueError(f"axis {axis} is out of range for a {ndim}-d input")
    return axis + ndim if axis < 0 else axis
