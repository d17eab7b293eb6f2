"""Integer arithmetic on indices that decoders and detection heads write: elementwise_floordiv (a flat
beam x vocab index into its beam) and size (paddle.numel).

Registered only where no other family defines them: both are general ops a math family may take over.
"""
from __future__ import annotations

import math

from ..ir import dtypes
from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, has_op, register_op
from ._infer import elementwise
from .math import align


def _floordiv(ctx, ins, attrs):
    x, y = ins
    xp = ctx.xp
    if attrs["axis"] != -1:
        x, y = align(xp, x, y, attrs["axis"])
    if y.dtype.kind in "iu" and bool(xp.any(y == 0)):
        raise ValueError("integer division by zero: Y holds 0")
    return (xp.floor_divide(x, y),)


def _size_infer(ic):
    ic.set_output("Out", (), dtypes.VT.INT64)


def _size(ctx, ins, attrs):
    return (ctx.xp.asarray(math.prod(ins[0].shape), dtype="int64"),)


if not has_op("elementwise_floordiv"):
    register_op(
        "elementwise_floordiv",
        "Out = floor(X / Y), elementwise (Python's //: rounds toward minus infinity, as Paddle's kernel does). Y "
        "is broadcast against X from `axis` (-1: the trailing dims). An integer Y holding 0 is an error.",
        inputs=[In("X", "the dividend"), In("Y", "the divisor, broadcast to X")],
        outputs=[Out("Out", "the quotient, of the broadcast shape")],
        attrs=[Attr("axis", A.INT, "the dim of X where Y's dims start; -1 aligns trailing dims", -1)],
        infer_shape=elementwise).kernel()(_floordiv)

if not has_op("size"):
    register_op(
        "size", "Out = the number of elements of Input, an int64 0-D tensor (paddle.numel).",
        inputs=[In("Input", "any tensor")], outputs=[Out("Out", "int64, 0-D")],
        infer_shape=_size_infer).kernel()(_size)


def _argsort_infer(ic):
    ic.set_output("Out", ic.shape("X"), ic.dtype("X"))
    ic.set_output("Indices", ic.shape("X"), dtypes.VT.INT64)


def _argsort(ctx, ins, attrs):
    x = ins[0]
    xp = ctx.xp
    if x.ndim == 0:
        return x, xp.zeros((), dtype="int64")
    axis = attrs["axis"] + x.ndim if attrs["axis"] < 0 else attrs["axis"]
    if not 0 <= axis < x.ndim:
        raise ValueError(f"axis {attrs['axis']} is out of range for a {x.ndim}-d X")
    # stable both ways: equal values keep their order, as Paddle's comparator sort leaves them
    key = x
    if attrs["descending"]:
        key = -x if x.dtype.kind in "fi" else -x.astype("int64")  # bool and unsigned: negated in a wider type
    idx = xp.argsort(key, axis=axis, kind="stable")
    return xp.take_along_axis(x, idx, axis=axis), idx.astype("int64")


if not has_op("argsort"):
    register_op(
        "argsort",
        "Sort X along `axis` (descending: largest first); equal values keep their order. Out: the sorted values; "
        "Indices (int64): where each came from in X.",
        inputs=[In("X", "the tensor to sort")],
        outputs=[Out("Out", "sorted values, X's shape"), Out("Indices", "int64, X's shape")],
        attrs=[Attr("axis", A.INT, "the axis to sort along", -1),
               Attr("descending", A.BOOLEAN, "largest first", False),
               Attr("stable", A.BOOLEAN, "a stable sort (kernelcore's always is)", False)],
        infer_shape=_argsort_infer).kernel()(_argsort)
