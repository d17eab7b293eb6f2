"""Gradients of unfold and fold (kernelcore/ops/patches.py): each is the other's adjoint."""
from __future__ import annotations

from ..ops.patches import fold_of, unfold_of
from ..transforms.backward import standard

UNFOLD_GRAD = standard("unfold", ins=("X",), out_grads=("Y",), comment="X@GRAD = fold(Y@GRAD).")


@UNFOLD_GRAD.kernel()
def unfold_grad(ctx, ins, attrs):
    x, g = ins
    return (fold_of(ctx.xp, g, attrs, x.shape[2:]),)


FOLD_GRAD = standard("fold", ins=("X",), out_grads=("Y",), comment="X@GRAD = unfold(Y@GRAD).")


@FOLD_GRAD.kernel()
def fold_grad(ctx, ins, attrs):
    return (unfold_of(ctx.xp, ins[1], attrs),)
