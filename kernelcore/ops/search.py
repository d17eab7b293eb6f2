"""Searching and comparing: searchsorted, where_index (paddle.nonzero / argwhere), masked_select, and the
closeness tests allclose, isclose and equal_all. Outputs shaped by the data (where_index, masked_select) read
the data's count once, as Paddle does."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op

SEARCHSORTED = register_op(
    "searchsorted", "Out = for each of Values, its insertion position in SortedSequence (the innermost dim; leading "
                    "dims pair rows), the leftmost such or with `right` the rightmost.",
    inputs=[In("SortedSequence", "sorted along its last dim"), In("Values", "the values to place")],
    outputs=[Out("Out", "Values' shape, int64 (int32 with out_int32)")],
    attrs=[Attr("out_int32", A.BOOLEAN, "int32 positions", False),
           Attr("right", A.BOOLEAN, "the rightmost position among equal values", False)])


@SEARCHSORTED.kernel()
def searchsorted(ctx, ins, attrs):
    xp = ctx.xp
    seq, values = ins
    side = "right" if attrs["right"] else "left"
    dt = xp.int32 if attrs["out_int32"] else xp.int64
    if seq.ndim <= 1:
        return (xp.searchsorted(seq.reshape(-1), values, side=side).astype(dt),)
    if seq.shape[:-1] != values.shape[:-1]:
        raise ValueError(f"searchsorted: SortedSequence {list(seq.shape)} and Values {list(values.shape)} must "
                         f"share their leading dims")
    rows_s, rows_v = seq.reshape(-1, seq.shape[-1]), values.reshape(-1, values.shape[-1])
    # one search over all rows: row r's values and sequence shifted by r * (a span wider than any row's)
    lo = xp.minimum(rows_s.min(), rows_v.min()) if rows_s.size and rows_v.size else 0
    span = (xp.maximum(rows_s.max(), rows_v.max()) - lo + 1) if rows_s.size and rows_v.size else 1
    shift = xp.arange(rows_s.shape[0], dtype=xp.float64).reshape(-1, 1) * span
    flat = (rows_s.astype(xp.float64) - lo + shift).reshape(-1)
    pos = xp.searchsorted(flat, (rows_v.astype(xp.float64) - lo + shift).reshape(-1), side=side)
    pos = pos.reshape(rows_v.shape) - xp.arange(rows_s.shape[0]).reshape(-1, 1) * seq.shape[-1]
    return (pos.reshape(values.shape).astype(dt),)


WHERE_INDEX = register_op(
    "where_index", "Out = the coordinates of Condition's nonzero (true) elements, one row each, in order.",
    inputs=[In("Condition", "any tensor; nonzero counts as true")],
    outputs=[Out("Out", "[count, rank] int64")])


@WHERE_INDEX.kernel()
def where_index(ctx, ins, attrs):
    (cond,) = ins
    return (ctx.xp.argwhere(cond).astype(ctx.xp.int64),)


MASKED_SELECT = register_op(
    "masked_select", "Y = the elements of X where Mask is true, in order (X and Mask broadcast together).",
    inputs=[In("X", "the tensor picked from"), In("Mask", "bool, broadcastable against X")],
    outputs=[Out("Y", "1-D, X's dtype")])


@MASKED_SELECT.kernel()
def masked_select(ctx, ins, attrs):
    xp = ctx.xp
    x, mask = ins
    shape = xp.broadcast_shapes(x.shape, mask.shape)
    return (xp.broadcast_to(x, shape)[xp.broadcast_to(mask.astype(bool), shape)],)


_CLOSE_ATTRS = [Attr("rtol", A.STRING, "the relative tolerance, as text", "1e-05"),
                Attr("atol", A.STRING, "the absolute tolerance, as text", "1e-08"),
                Attr("equal_nan", A.BOOLEAN, "NaN equals NaN", False)]
_CLOSE_INS = [In("Input", "the tensor compared"), In("Other", "the tensor compared with"),
              In("Rtol", "(one element) overrides rtol", dispensable=True),
              In("Atol", "(one element) overrides atol", dispensable=True)]
ISCLOSE = register_op("isclose", "Out = |Input - Other| <= atol + rtol * |Other|, elementwise.",
                      inputs=_CLOSE_INS, outputs=[Out("Out", "bool, the broadcast shape")], attrs=_CLOSE_ATTRS)
ALLCLOSE = register_op("allclose", "Out = every element of isclose(Input, Other).",
                       inputs=_CLOSE_INS, outputs=[Out("Out", "a 0-d bool")], attrs=_CLOSE_ATTRS)


def close(xp, ins, attrs):
    a, b, rtol_t, atol_t = ins
    rtol = float(attrs["rtol"]) if rtol_t is None else rtol_t.reshape(()).astype(xp.float64)
    atol = float(attrs["atol"]) if atol_t is None else atol_t.reshape(()).astype(xp.float64)
    a64, b64 = a.astype(xp.float64), b.astype(xp.float64)
    near = xp.abs(a64 - b64) <= atol + rtol * xp.abs(b64)
    near = near | (a64 == b64)  # equal infinities
    if attrs["equal_nan"]:
        near = near | (xp.isnan(a64) & xp.isnan(b64))
    return near


@ISCLOSE.kernel()
def isclose(ctx, ins, attrs):
    return (close(ctx.xp, ins, attrs),)


@ALLCLOSE.kernel()
def allclose(ctx, ins, attrs):
    return (close(ctx.xp, ins, attrs).all(),)


EQUAL_ALL = register_op("equal_all", "Out = X and Y have one shape and every element equal.",
                        inputs=[In("X", "a tensor"), In("Y", "a tensor")], outputs=[Out("Out", "a 0-d bool")])


@EQUAL_ALL.kernel()
def equal_all(ctx, ins, attrs):
    xp = ctx.xp
    x, y = ins
    if x.shape != y.shape:
        return (xp.zeros((), dtype=bool),)
    return ((x == y).all(),)
