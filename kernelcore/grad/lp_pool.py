"""The gradient of lp_pool2d (kernelcore/ops/lp_pool.py): x@GRAD = x^(p-1) * windows^T(out@GRAD * out^(1-p))."""
from __future__ import annotations

from ..ops._spatial import channel_last
from ..ops.lp_pool import apply_windows, channels_first, power, window_sums
from ..transforms.backward import standard

LP_POOL2D_GRAD = standard("lp_pool2d", ins=("x", "KernelSizeTensor", "KernelSizeTensorList"), outs=("out",),
                          out_grads=("out",), in_grads=("x",),
                          comment="x@GRAD = x^(p-1) * (the window sums, transposed, of out@GRAD * out^(1-p)).")


@LP_POOL2D_GRAD.kernel()
def lp_pool2d_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, _, _, out, g = ins
    fmt, p = attrs["data_format"], attrs["norm_type"]
    x, out, g = (channels_first(xp, t, fmt) for t in (x, out, g))
    scaled = g * xp.power(out, out.dtype.type(1 - p)) if p != 1 else g
    dx = apply_windows(xp, scaled, window_sums(xp, attrs, x.shape[2:], x.dtype), transpose=True)
    dx = dx * power(xp, x, p - 1) if p != 1 else dx
    return (xp.ascontiguousarray(xp.moveaxis(dx, 1, -1) if channel_last(fmt) else dx),)
