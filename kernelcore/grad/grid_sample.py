"""The gradient of grid_sampler (kernelcore/ops/grid_sample.py): X@GRAD gathers Output@GRAD back into each tap
by its weight; Grid@GRAD is the bilinear weights' slope times the tapped values (0 for nearest)."""
from __future__ import annotations

from ..ops.grid_sample import corners, tap_values
from ..transforms.backward import standard, wanted

GRID_SAMPLER_GRAD = standard("grid_sampler", ins=("X", "Grid"), out_grads=("Output",), in_grads=("X", "Grid"),
                             comment="X@GRAD: Output@GRAD added into each tap by its weight; Grid@GRAD: the "
                                     "interpolation's slope in x and y, scaled to the normalised coordinates.")


@GRID_SAMPLER_GRAD.kernel()
def grid_sampler_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, grid, g = ins
    taps, (px, py, dpx, dpy) = corners(xp, x, grid, attrs)
    g64 = g.astype(xp.float64)
    dx = xp.zeros(x.shape, dtype=xp.float64) if wanted(ctx, "X@GRAD") else None
    gx, gy = xp.zeros(px.shape), xp.zeros(py.shape)
    x0, y0 = xp.floor(px), xp.floor(py)
    fx, fy = px - x0, py - y0
    for row, col, weight in taps:
        vals, ok, (n, r, c) = tap_values(xp, x, row, col)
        if dx is not None:
            share = xp.moveaxis(g64 * (weight * ok)[:, None], 1, -1)  # [N, Ho, Wo, C]
            moved = xp.moveaxis(dx, 1, -1)  # [N, H, W, C], a view of dx
            xp.add.at(moved, (xp.broadcast_to(n, r.shape), r, c), share)
        if attrs["mode"] == "bilinear":
            seen = (g64 * vals).sum(axis=1)
            right, down = col > x0, row > y0
            gx = gx + seen * xp.where(right, 1.0, -1.0) * xp.where(down, fy, 1 - fy)
            gy = gy + seen * xp.where(down, 1.0, -1.0) * xp.where(right, fx, 1 - fx)
    dgrid = xp.stack([gx * dpx, gy * dpy], axis=-1).astype(grid.dtype) if wanted(ctx, "Grid@GRAD") else None
    return (dx.astype(x.dtype) if dx is not None else None), dgrid
