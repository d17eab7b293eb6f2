"""The gradient of affine_grid (kernelcore/ops/affine_grid.py): Theta@GRAD[n] = sum over positions of
Output@GRAD (x, y, 1)^T."""
from __future__ import annotations

from ..ops.affine_grid import base_grid, output_shape_of
from ..transforms.backward import standard

AFFINE_GRID_GRAD = standard("affine_grid", ins=("Theta", "OutputShape"), out_grads=("Output",), in_grads=("Theta",),
                            comment="Theta@GRAD[n] = sum over positions of Output@GRAD[n, pos] (x, y, 1)^T.")


@AFFINE_GRID_GRAD.kernel()
def affine_grid_grad(ctx, ins, attrs):
    theta, shape_t, g = ins
    base = base_grid(ctx.xp, theta, output_shape_of((theta, shape_t), attrs), attrs["align_corners"])
    nd = base.ndim - 1
    letters = "abc"[:nd]
    return (ctx.xp.einsum(f"n{letters}i,{letters}j->nij", g, base),)
