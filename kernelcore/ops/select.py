"""Elements chosen by a mask: where (X where Condition, else Y) and tril_triu (a triangle of the last two dims
kept, the rest zero).
"""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op


# -- where ---------------------------------------------------------------------------------------------------
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
