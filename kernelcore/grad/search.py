"""Gradient of masked_select (kernelcore/ops/search.py): Y@GRAD written back where Mask is true; the searches and
closeness tests have none."""
from __future__ import annotations

from .math import unbroadcast
from ..transforms.backward import no_grad, standard

MASKED_SELECT_GRAD = standard("masked_select", ins=("X", "Mask"), out_grads=("Y",),
                              comment="X@GRAD = Y@GRAD where Mask is true, 0 elsewhere (summed to X's shape).")


@MASKED_SELECT_GRAD.kernel()
def masked_select_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, mask, g = ins
    shape = xp.broadcast_shapes(x.shape, mask.shape)
    dx = xp.zeros(shape, dtype=g.dtype)
    dx[xp.broadcast_to(mask.astype(bool), shape)] = g
    return (unbroadcast(dx, (1,) * (len(shape) - x.ndim) + x.shape, x.shape).copy(),)


no_grad("searchsorted", "where_index", "isclose", "allclose", "equal_all")
