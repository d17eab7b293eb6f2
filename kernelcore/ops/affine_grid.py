"""affine_grid (paddle.nn.functional.affine_grid): the sampling grid Theta maps the output's normalised
coordinates to, for grid_sample."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from .tensor import host_ints

AFFINE_GRID = register_op(
    "affine_grid", "Output[n, h, w] = Theta[n] @ (x_w, y_h, 1): each output pixel's normalised coordinates in [-1, 1] "
                   "(pixel centres unless align_corners) moved by Theta (2-D: [N, 2, 3]; 3-D: [N, 3, 4]).",
    inputs=[In("Theta", "[N, 2, 3] or [N, 3, 4]"), In("OutputShape", "(1-D int) overrides output_shape",
                                                       dispensable=True)],
    outputs=[Out("Output", "[N, H, W, 2] or [N, D, H, W, 3], Theta's dtype")],
    attrs=[Attr("output_shape", A.INTS, "[N, C, H, W] or [N, C, D, H, W]", []),
           Attr("align_corners", A.BOOLEAN, "-1 and 1 are the corner pixels' centres", True)])


def axis_coords(xp, n, align_corners, dtype):
    c = xp.linspace(-1.0, 1.0, n) if n > 1 else xp.zeros(1)
    return (c if align_corners else c * (n - 1) / n).astype(dtype)


def base_grid(xp, theta, out_shape, align_corners):
    """[spatial..., nd + 1]: each output position's (x, y[, z], 1)."""
    spatial = list(out_shape[2:])
    nd = len(spatial)
    if theta.ndim != 3 or theta.shape[1:] != (nd, nd + 1):
        raise ValueError(f"affine_grid: Theta must be [N, {nd}, {nd + 1}] for a {nd}-D output, got "
                         f"{list(theta.shape)}")
    coords = [axis_coords(xp, s, align_corners, theta.dtype) for s in spatial]
    mesh = xp.meshgrid(*coords, indexing="ij")  # ordered (d,) h, w
    return xp.stack(list(mesh[::-1]) + [xp.ones(spatial, dtype=theta.dtype)], axis=-1)  # (x, y[, z], 1)


def output_shape_of(ins, attrs):
    shape = host_ints(ins[1]) if ins[1] is not None else list(attrs["output_shape"])
    if len(shape) not in (4, 5):
        raise ValueError(f"affine_grid: output_shape must be [N, C, H, W] or [N, C, D, H, W], got {shape}")
    return shape


@AFFINE_GRID.kernel()
def affine_grid(ctx, ins, attrs):
    theta = ins[0]
    base = base_grid(ctx.xp, theta, output_shape_of(ins, attrs), attrs["align_corners"])
    return (ctx.xp.einsum("...j,nij->n...i", base, theta),)
