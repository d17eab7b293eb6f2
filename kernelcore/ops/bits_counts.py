"""Integer and bit-level ops: bincount, the bit shifts, is_empty and nextafter."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from .tensor import check_new_shape

BINCOUNT = register_op(
    "bincount", "Out[v] = how many elements of X equal v (the sum of their Weights with Weights).",
    inputs=[In("X", "1-D non-negative ints"), In("Weights", "X's shape", dispensable=True)],
    outputs=[Out("Out", "[max(max(X) + 1, minlength)], int64 or Weights' dtype")],
    attrs=[Attr("minlength", A.INT, "the least length of Out", 0)])


@BINCOUNT.kernel()
def bincount(ctx, ins, attrs):
    xp = ctx.xp
    x, w = ins
    if x.ndim != 1 or x.dtype.kind not in "iu":
        raise ValueError(f"bincount takes a 1-D int X, got {x.dtype} {list(x.shape)}")
    if x.size and int(x.min()) < 0:
        raise ValueError("bincount: X holds a negative value")
    n = max(int(x.max()) + 1 if x.size else 0, attrs["minlength"])
    check_new_shape([n])
    out = xp.bincount(x, weights=w, minlength=n)
    return (out.astype(w.dtype) if w is not None else out.astype(xp.int64),)


def _shift(left: bool):
    def body(xp, x, y, arithmetic):
        if left:
            return xp.left_shift(x, y)
        if arithmetic or x.dtype.kind == "u":
            return xp.right_shift(x, y)
        unsigned = x.view(x.dtype.str.replace("i", "u"))  # a logical shift: the sign bit moves like any other
        return xp.right_shift(unsigned, y.astype(unsigned.dtype)).view(x.dtype)
    return body


for _type, _body in (("bitwise_left_shift", _shift(True)), ("bitwise_right_shift", _shift(False))):
    _d = register_op(_type, f"out = x shifted {'left' if 'left' in _type else 'right'} by y bits (broadcast); "
                            "is_arithmetic keeps the sign on a right shift.",
                     inputs=[In("x", "ints"), In("y", "shift counts")], outputs=[Out("out", "x's dtype")],
                     attrs=[Attr("is_arithmetic", A.BOOLEAN, "arithmetic (sign-keeping) right shift", True)])

    def _k(ctx, ins, attrs, _body=_body):
        x, y = ins
        return (_body(ctx.xp, x, y, attrs["is_arithmetic"]).astype(x.dtype, copy=False),)
    _k.__name__ = _type
    _d.kernel()(_k)


IS_EMPTY = register_op("is_empty", "Out = X has no elements.", inputs=[In("X", "any tensor")],
                       outputs=[Out("Out", "a 0-d bool")])


@IS_EMPTY.kernel()
def is_empty(ctx, ins, attrs):
    return (ctx.xp.asarray(ins[0].size == 0),)


NEXTAFTER = register_op("nextafter", "out = the float after x in the direction of y.",
                        inputs=[In("x", "floats"), In("y", "broadcastable")], outputs=[Out("out", "x's dtype")])


@NEXTAFTER.kernel()
def nextafter(ctx, ins, attrs):
    x, y = ins
    return (ctx.xp.nextafter(x, y.astype(x.dtype)),)
