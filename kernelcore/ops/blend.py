"""lerp (paddle.lerp, quantile): Out = X + Weight * (Y - X), the three broadcast together."""
from __future__ import annotations

from ..ir.registry import In, Out, register_op
from ..ir.shape_inference import broadcast_shapes

LERP = register_op(
    "lerp", "Out = X + Weight * (Y - X), X, Y and Weight broadcast together (numpy rules).",
    inputs=[In("X", "the start"), In("Y", "the end"), In("Weight", "the fraction of the way from X to Y")],
    outputs=[Out("Out", "the broadcast shape, X's dtype")])


def _infer_lerp(ic):
    shape = broadcast_shapes(broadcast_shapes(ic.shape("X"), ic.shape("Y"), -1, ic), ic.shape("Weight"), -1, ic)
    ic.set_output("Out", shape, ic.dtype("X"))


LERP.infer_shape = _infer_lerp


@LERP.kernel()
def lerp(ctx, ins, attrs):
    x, y, w = ins
    return ((x + w.astype(x.dtype, copy=False) * (y - x)).astype(x.dtype, copy=False),)
