"""The gradient of lerp (kernelcore/ops/blend.py), as Paddle's lerp_grad: X and Y only (Weight gets none), each
summed back to its own shape."""
from __future__ import annotations

from .math import unbroadcast
from ..transforms.backward import standard, wanted

LERP_GRAD = standard("lerp", ins=("X", "Y", "Weight"), outs=("Out",), in_grads=("X", "Y"),
                     comment="X@GRAD = Out@GRAD * (1 - Weight), Y@GRAD = Out@GRAD * Weight, each summed to its shape.")


def _back_to(g, shape):
    lead = (1,) * (g.ndim - len(shape))
    return unbroadcast(g, lead + tuple(shape), tuple(shape)).copy()


@LERP_GRAD.kernel()
def lerp_grad(ctx, ins, attrs):
    x, y, w, _, g = ins
    w = w.astype(g.dtype, copy=False)
    dx = _back_to(g * (1 - w), x.shape) if wanted(ctx, "X@GRAD") else None
    dy = _back_to(g * w, y.shape) if wanted(ctx, "Y@GRAD") else None
    return dx, dy
