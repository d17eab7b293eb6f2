"""Arithmetic: elementwise binaries with Paddle's `axis` broadcasting, products and reductions."""
from __future__ import annotations

import operator

from ..proto.framework_pb2 import AttrType as A
from ..registry import Attr, In, Out, register_op
from ._infer import elementwise


def align(xp, x, y, axis: int):
    """Reshape the lower-rank operand so its dims line up with the other's from `axis`
    (Paddle's rule; -1 means trailing alignment, which is NumPy's own)."""
    if axis == -1 or x.ndim == y.ndim:
        return x, y
    if x.ndim > y.ndim:
        return x, y.reshape((1,) * axis + y.shape + (1,) * (x.ndim - axis - y.ndim))
    return x.reshape((1,) * axis + x.shape + (1,) * (y.ndim - axis - x.ndim)), y


# op type -> (formula, body)
BINARY = {
    "elementwise_add": ("X + Y", operator.add),
    "elementwise_sub": ("X - Y", operator.sub),
    "elementwise_mul": ("X * Y", operator.mul),
    "elementwise_div": ("X / Y", operator.truediv),
}


def _binary_kernel(body):
    def kernel(ctx, ins, attrs):
        x, y = ins
        axis = attrs["axis"]
        if axis != -1:
            x, y = align(ctx.xp, x, y, axis)
        return (body(x, y),)
    return kernel


for _type, (_formula, _body) in BINARY.items():
    _d = register_op(
        _type, f"Out = {_formula}, elementwise. Y is broadcast against X; its dims line up with X's "
               f"starting at `axis` (-1: the trailing dims).",
        inputs=[In("X", "the first operand"), In("Y", "the second operand, broadcast to X")],
        outputs=[Out("Out", "the result, of the broadcast shape")],
        attrs=[Attr("axis", A.INT, "the dim of X where Y's dims start; -1 aligns trailing dims", -1)],
        infer_shape=elementwise)
    _k = _binary_kernel(_body)
    _k.__name__ = _type
    _d.kernel()(_k)
