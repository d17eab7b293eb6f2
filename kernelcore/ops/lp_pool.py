"""lp_pool2d (paddle.nn.functional.lp_pool1d / lp_pool2d): Out = (sum of X^norm_type over each window)^(1 / norm_type).

Windows are summed one spatial dim at a time, as a product with a 0/1 window matrix (pool.py's average matrix times
the kernel size), so the gradient is the product with its transpose."""
from __future__ import annotations

import math

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._spatial import channel_last
from .pool import avg_matrix, geometry

LP_POOL2D = register_op(
    "lp_pool2d", "Out[n, c, i, j] = (sum over window (i, j) of x^norm_type)^(1 / norm_type); padded cells count 0.",
    inputs=[In("x", "[N, C, H, W] (or NHWC)"),
            In("KernelSizeTensor", "the kernel size as a tensor (not read: kernel_size holds it)", dispensable=True),
            In("KernelSizeTensorList", "the kernel size as tensors (not read)", duplicable=True, dispensable=True)],
    outputs=[Out("out", "the pooled tensor, x's dtype")],
    attrs=[Attr("kernel_size", A.LONGS, "the window per spatial dim"),
           Attr("strides", A.INTS, "the window's step per spatial dim", [1, 1]),
           Attr("paddings", A.INTS, "padding per spatial dim", [0, 0]),
           Attr("ceil_mode", A.BOOLEAN, "round the output size up", False),
           Attr("exclusive", A.BOOLEAN, "(not read: a sum has no divisor)", True),
           Attr("data_format", A.STRING, "'NCHW' or 'NHWC'", "NCHW"),
           Attr("pooling_type", A.STRING, "(not read)", ""),
           Attr("global_pooling", A.BOOLEAN, "pool over the whole map", False),
           Attr("adaptive", A.BOOLEAN, "kernel_size is the output size", False),
           Attr("padding_algorithm", A.STRING, "'EXPLICIT', 'SAME' or 'VALID'", "EXPLICIT"),
           Attr("norm_type", A.FLOAT, "p", 2.0)])


def window_sums(xp, attrs, spatial, dtype):
    """One [out, in] 0/1 matrix per spatial dim."""
    names = {"ksize": "kernel_size"}
    ksize, strides, pads, outs, adaptive = geometry(lambda n: attrs[names.get(n, n)], spatial, 2)
    return [xp.asarray(avg_matrix(spatial[d], outs[d], ksize[d], strides[d], pads[d][0], adaptive, False, dtype)
                       * (1 if adaptive else ksize[d])) for d in range(2)]


def channels_first(xp, x, fmt):
    if x.ndim != 4:
        raise ValueError(f"lp_pool2d takes a 4-d x, got shape {list(x.shape)}")
    return xp.moveaxis(x, -1, 1) if channel_last(fmt) else x


def apply_windows(xp, t, mats, transpose=False):
    for d, m in enumerate(mats):
        a = 2 + d
        t = xp.moveaxis(xp.tensordot(t, m, axes=([a], [0 if transpose else 1])), -1, a)
    return t


def power(xp, t, p):
    return t * t if p == 2 else xp.power(t, t.dtype.type(p))


@LP_POOL2D.kernel()
def lp_pool2d(ctx, ins, attrs):
    xp = ctx.xp
    x = channels_first(xp, ins[0], attrs["data_format"])
    p = attrs["norm_type"]
    if p == 0 or math.isinf(p):
        raise ValueError(f"lp_pool2d: norm_type must be finite and nonzero, got {p}")
    sums = apply_windows(xp, power(xp, x, p), window_sums(xp, attrs, x.shape[2:], x.dtype))
    out = xp.power(sums, x.dtype.type(1.0 / p))
    return (xp.ascontiguousarray(xp.moveaxis(out, 1, -1) if channel_last(attrs["data_format"]) else out),)
