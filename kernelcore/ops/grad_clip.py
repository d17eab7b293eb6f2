"""Gradient clipping: the ops ClipGradByGlobalNorm and ClipGradByNorm write into a training program.

  squared_l2_norm  Out = sum(X * X), a [1] tensor (ClipGradByGlobalNorm: one per gradient, then sum, sqrt,
                   elementwise_max with the clip norm and elementwise_div give every gradient's scale)
  clip_by_norm     Out = X * max_norm / ||X|| where ||X|| > max_norm, else X (ClipGradByNorm, per gradient)

The sums run in float64 for float32 input, as Paddle's CPU kernels accumulate through Eigen in the input's
precision only per packet: a float64 sum is the closer reference and stays within float32 rounding of it.
"""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._infer import same_as


def _norm_infer(ic):
    ic.set_output("Out", (1,), ic.dtype("X"))


SQUARED_L2_NORM = register_op(
    "squared_l2_norm", "Out = sum(X * X) over every element of X, as a [1] tensor of X's dtype.",
    inputs=[In("X", "a float tensor (a gradient)")], outputs=[Out("Out", "[1], X's dtype")],
    infer_shape=_norm_infer)


def sum_of_squares(xp, x):
    acc = "float64" if x.dtype.itemsize <= 4 else x.dtype
    flat = x.reshape(-1).astype(acc)
    return xp.dot(flat, flat)


@SQUARED_L2_NORM.kernel()
def squared_l2_norm(ctx, ins, attrs):
    x = ins[0]
    return (sum_of_squares(ctx.xp, x).astype(x.dtype).reshape(1),)


CLIP_BY_NORM = register_op(
    "clip_by_norm",
    "Out = X * max_norm / ||X||_2 where ||X||_2 > max_norm, else X (an X of all zeros stays zeros).",
    inputs=[In("X", "a float tensor (a gradient)")], outputs=[Out("Out", "X's shape and dtype")],
    attrs=[Attr("max_norm", A.FLOAT, "the largest L2 norm Out may have")],
    infer_shape=same_as())


@CLIP_BY_NORM.kernel()
def clip_by_norm(ctx, ins, attrs):
    x = ins[0]
    xp = ctx.xp
    norm = xp.sqrt(sum_of_squares(xp, x))
    max_norm = attrs["max_norm"]
    scale = xp.where(norm > max_norm, max_norm / xp.maximum(norm, 1e-30), 1.0)
    return ((x * scale.astype(x.dtype)).astype(x.dtype),)
