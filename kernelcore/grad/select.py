"""Gradients of kernelcore/ops/select.py: Out@GRAD goes back to the elements the mask chose."""
from __future__ import annotations

from ..transforms.backward import standard, wanted
from .math import unbroadcast


# -- where -------------------------------------------------------------------------------------------------
WHERE_GRAD = standard("where", ins=("Condition", "X", "Y"), in_grads=("X", "Y"),
                      comment="X@GRAD = Out@GRAD where Condition, else 0; Y@GRAD = Out@GRAD where not Condition; "
                              "each summed over the dims its operand was broadcast along.")


@WHERE_GRAD.kernel()
def where_grad(ctx, ins, attrs):
    c, x, y, g = ins
    xp = ctx.xp
    c = xp.broadcast_to(c.astype(bool, copy=False), g.shape)
    zero = g.dtype.type(0)
    dx = unbroadcast(xp.where(c, g, zero), x.shape, x.shape) if wanted(ctx, "X@GRAD") else None
    dy = unbroadcast(xp.where(c, zero, g), y.shape, y.shape) if wanted(ctx, "Y@GRAD") else None
    return dx, dy


TRIL_TRIU_GRAD = standard("tril_triu", ins=(), infer_from={"X@GRAD": ("Out@GRAD", False)},
                          comment="X@GRAD = Out@GRAD with the same triangle kept (the rest 0).")


@TRIL_TRIU_GRAD.kernel()
def tril_triu_grad(ctx, ins, attrs):
    g = ins[0]
    fn = ctx.xp.tril if attrs["lower"] else ctx.xp.triu
    return (fn(g, k=attrs["diagonal"]),)
