"""Gradients of reduce_amax / reduce_amin (kernelcore/ops/reduce_extrema.py): Out@GRAD shared evenly among the
elements equal to the extreme, as Paddle's amax_grad shares it."""
from __future__ import annotations

from ..ops.reduce_extrema import extrema_axes
from ..transforms.backward import standard


def _make(op_type):
    d = standard(op_type, ins=("X",), outs=("Out",),
                 comment="X@GRAD = Out@GRAD * (X == Out) / (the count of such elements).")

    def kernel(ctx, ins, attrs):
        x, out, g = ins
        axes = extrema_axes(x, attrs)
        kept = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
        hit = (x == out.reshape(kept)).astype(g.dtype)
        return (hit * (g.reshape(kept) / hit.sum(axis=axes, keepdims=True)),)
    kernel.__name__ = f"{op_type}_grad"
    d.kernel()(kernel)


_make("reduce_amax")
_make("reduce_amin")
