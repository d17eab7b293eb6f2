"""Gradients of kernelcore/ops/along_axis.py: the output gradient added back where each element was picked from
(an element picked twice gets both)."""
from __future__ import annotations

from ..ops.along_axis import take_geometry, along_axis_positions, index_sample_positions
from ..transforms.backward import standard

TAKE_ALONG_AXIS_GRAD = standard("take_along_axis", ins=("Input", "Index"), out_grads=("Result",),
                                in_grads=("Input",), comment="Input@GRAD = Result@GRAD added at the picked positions.")


@TAKE_ALONG_AXIS_GRAD.kernel()
def take_along_axis_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, index, g = ins
    axis, index = take_geometry(xp, x, index, attrs["Axis"])
    dx = xp.zeros(x.shape, dtype=g.dtype)
    xp.add.at(dx, along_axis_positions(xp, index, axis), g)
    return (dx,)


INDEX_SAMPLE_GRAD = standard("index_sample", ins=("X", "Index"), comment="X@GRAD = Out@GRAD added at the picks.")


@INDEX_SAMPLE_GRAD.kernel()
def index_sample_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, index, g = ins
    dx = xp.zeros(x.shape, dtype=g.dtype)
    xp.add.at(dx, index_sample_positions(xp, x, index), g)
    return (dx,)
