"""Gradients of the gradient-clipping ops (kernelcore/ops/grad_clip.py): squared_l2_norm_grad, as Paddle
writes it (X@GRAD = 2 X Out@GRAD). clip_by_norm has none in Paddle either: it only ever acts on gradients."""
from __future__ import annotations

from ..transforms.backward import no_grad, standard

SQUARED_L2_NORM_GRAD = standard("squared_l2_norm", ins=("X",),
                                comment="X@GRAD = 2 * X * Out@GRAD (Out@GRAD a [1] tensor).")


@SQUARED_L2_NORM_GRAD.kernel()
def squared_l2_norm_grad(ctx, ins, attrs):
    x, g = ins
    return ((2 * x * g.reshape(())).astype(x.dtype),)


no_grad("clip_by_norm")
