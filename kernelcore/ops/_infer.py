"""Shape-inference helpers shared by op families."""
from __future__ import annotations

from ..ir.shape_inference import broadcast_shapes


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


def prod(dims) -> int:
    """The product of dims; -1 when any is unknown."""
    n = 1
    for d in dims:
        if d < 0:
            return -1
        n *= d
    return n


def merge_dims(a, b) -> tuple[int, ...]:
    """Two shapes known to match (dims_match per dim): the better-known of each dim."""
    return tuple(x if x >= 0 else y for x, y in zip(a, b))


def check_same_dtype(ic, slots=("X", "Y")) -> None:
    """Paddle's binary kernels take one dtype for both operands; say which differ."""
    a, b = slots
    if ic.dtype(a) != ic.dtype(b):
        ic.fail(f"{a} is {ic.dtype_name(ic.dtype(a))} but {b} is {ic.dtype_name(ic.dtype(b))}; "
                f"expected the same dtype")
