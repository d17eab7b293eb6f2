"""grid_sampler (paddle.nn.functional.grid_sample, 4-D): Output[n, c, h, w] = X[n, c] read at Grid[n, h, w] = (x, y)
in [-1, 1], bilinearly (or at the nearest pixel); positions outside read 0 ('zeros') or the edge ('border')."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, one_of, register_op

GRID_SAMPLER = register_op(
    "grid_sampler", "Output[n, c, h, w] = X[n, c] sampled at Grid[n, h, w] (x then y, normalised to [-1, 1]).",
    inputs=[In("X", "[N, C, H, W]"), In("Grid", "[N, Ho, Wo, 2]")], outputs=[Out("Output", "[N, C, Ho, Wo]")],
    attrs=[Attr("mode", A.STRING, "'bilinear' or 'nearest'", "bilinear", checks=(one_of("bilinear", "nearest"),)),
           Attr("padding_mode", A.STRING, "'zeros' or 'border' ('reflection' is not supported)", "zeros",
                checks=(one_of("zeros", "border", "reflection"),)),
           Attr("align_corners", A.BOOLEAN, "-1 and 1 are the corner pixels' centres", True)])


def unnormalise(xp, g, size, attrs):
    """(pixel coordinate, d coordinate / d g) along one axis, border-clamped where asked."""
    if attrs["align_corners"]:
        pos, scale = (g + 1) * ((size - 1) / 2), (size - 1) / 2
    else:
        pos, scale = ((g + 1) * size - 1) / 2, size / 2
    if attrs["padding_mode"] == "border":
        inside = (pos >= 0) & (pos <= size - 1)
        return xp.clip(pos, 0, size - 1), xp.where(inside, scale, 0.0)
    return pos, xp.full(pos.shape, scale)


def corners(xp, x, grid, attrs):
    """Per output position: the 4 (or 1, nearest) taps as (row, col, weight, in-bounds), plus the coordinates."""
    if attrs["padding_mode"] == "reflection":
        raise ValueError("grid_sampler: padding_mode 'reflection' is not supported")
    if x.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != x.shape[0]:
        raise ValueError(f"grid_sampler takes X [N, C, H, W] and Grid [N, Ho, Wo, 2], got {list(x.shape)} and "
                         f"{list(grid.shape)}")
    h, w = x.shape[2], x.shape[3]
    px, dpx = unnormalise(xp, grid[..., 0].astype(xp.float64), w, attrs)
    py, dpy = unnormalise(xp, grid[..., 1].astype(xp.float64), h, attrs)
    if attrs["mode"] == "nearest":
        cx, cy = xp.rint(px), xp.rint(py)
        return [(cy, cx, xp.ones(px.shape))], (px, py, dpx, dpy)
    x0, y0 = xp.floor(px), xp.floor(py)
    fx, fy = px - x0, py - y0
    taps = [(y0, x0, (1 - fx) * (1 - fy)), (y0, x0 + 1, fx * (1 - fy)), (y0 + 1, x0, (1 - fx) * fy),
            (y0 + 1, x0 + 1, fx * fy)]
    return taps, (px, py, dpx, dpy)


def tap_values(xp, x, row, col):
    """X[n, :, row, col] for each output position ([N, C, Ho, Wo]), 0 outside, and the in-bounds mask."""
    h, w = x.shape[2], x.shape[3]
    ok = (row >= 0) & (row <= h - 1) & (col >= 0) & (col <= w - 1)
    r = xp.clip(row, 0, h - 1).astype(xp.int64)
    c = xp.clip(col, 0, w - 1).astype(xp.int64)
    n = xp.arange(x.shape[0]).reshape(-1, 1, 1)
    vals = x[n, :, r, c]  # [N, Ho, Wo, C]
    return xp.moveaxis(vals, -1, 1) * ok[:, None], ok, (n, r, c)


@GRID_SAMPLER.kernel()
def grid_sampler(ctx, ins, attrs):
    xp = ctx.xp
    x, grid = ins
    taps, _ = corners(xp, x, grid, attrs)
    out = xp.zeros((x.shape[0], x.shape[1]) + grid.shape[1:3], dtype=xp.float64)
    for row, col, weight in taps:
        vals, _, _ = tap_values(xp, x, row, col)
        out = out + vals * weight[:, None]
    return (out.astype(x.dtype),)
