"""Gradients of the window ops kernelcore/ops/window_ops.py defines where no family did: roll's (Out@GRAD rolled
back) and index_select's (Out@GRAD added into zeros at Index, repeated indices summed), as Paddle's grad ops."""
from __future__ import annotations

from ..ops.window_ops import roll_array, roll_shifts
from ..transforms.backward import grad_rule, standard

if grad_rule("roll") is None:
    ROLL_GRAD = standard("roll", ins=("X", "ShiftsTensor"), comment="X@GRAD = Out@GRAD rolled by -shifts.")

    @ROLL_GRAD.kernel()
    def roll_grad(ctx, ins, attrs):
        _, shifts_t, g = ins
        shifts, axes = roll_shifts(shifts_t, attrs)
        return (roll_array(ctx.xp, g, [-s for s in shifts], axes),)

if grad_rule("index_select") is None:
    INDEX_SELECT_GRAD = standard("index_select", ins=("X", "Index"),
                                 comment="X@GRAD = zeros with Out@GRAD added at Index along dim.")

    @INDEX_SELECT_GRAD.kernel()
    def index_select_grad(ctx, ins, attrs):
        x, index, g = ins
        xp = ctx.xp
        dim = attrs["dim"] + x.ndim if attrs["dim"] < 0 else attrs["dim"]
        moved = xp.zeros((x.shape[dim],) + tuple(s for d, s in enumerate(x.shape) if d != dim), dtype=g.dtype)
        xp.add.at(moved, index, xp.moveaxis(g, dim, 0))
        return (xp.moveaxis(moved, 0, dim),)
