"""unpool / unpool3d (paddle.nn.functional.max_unpool1d/2d/3d): each X value written back to the position its max
pooling took it from (Indices: flat positions within each output map); 0 elsewhere."""
from __future__ import annotations

import math

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op


def unpooled_size(attrs, in_spatial):
    """output_size where given, else (in - 1) stride - 2 padding + ksize per dim."""
    if attrs["output_size"]:
        return list(attrs["output_size"])[-len(in_spatial):]
    return [(i - 1) * s - 2 * p + k for i, s, p, k in
            zip(in_spatial, attrs["strides"], attrs["paddings"], attrs["ksize"])]


def flat_maps(xp, x, indices, out_spatial):
    if indices.shape != x.shape:
        raise ValueError(f"unpool: Indices {list(indices.shape)} must have X's shape {list(x.shape)}")
    size = math.prod(out_spatial)
    idx = indices.reshape(x.shape[0], x.shape[1], -1).astype(xp.int64)
    if idx.size and bool(((idx < 0) | (idx >= size)).any()):
        raise ValueError(f"unpool: an index is outside the {list(out_spatial)} output map")
    return idx, size


def _make(op_type, nd):
    d = register_op(
        op_type, f"{nd}-D max unpooling: Out[n, c].flat[Indices[n, c, i]] = X[n, c, i], 0 elsewhere.",
        inputs=[In("X", f"[N, C, {nd} spatial dims], the pooled values"), In("Indices", "X's shape, int")],
        outputs=[Out("Out", "[N, C, output spatial dims], X's dtype")],
        attrs=[Attr("ksize", A.INTS, "the pooling window"), Attr("strides", A.INTS, "the pooling step", [1] * nd),
               Attr("paddings", A.INTS, "the pooling padding", [0] * nd),
               Attr("output_size", A.INTS, "the output's spatial size (empty: from the pooling geometry)", []),
               Attr("unpooling_type", A.STRING, "'max'", "max"),
               Attr("data_format", A.STRING, "channels first", "NCHW" if nd == 2 else "NCDHW")])

    @d.kernel()
    def kernel(ctx, ins, attrs):
        xp = ctx.xp
        x, indices = ins
        if x.ndim != nd + 2:
            raise ValueError(f"{op_type} takes a {nd + 2}-d X, got {list(x.shape)}")
        out_spatial = unpooled_size(attrs, x.shape[2:])
        idx, size = flat_maps(xp, x, indices, out_spatial)
        out = xp.zeros((x.shape[0], x.shape[1], size), dtype=x.dtype)
        xp.put_along_axis(out, idx, x.reshape(x.shape[0], x.shape[1], -1), axis=2)
        return (out.reshape(x.shape[:2] + tuple(out_spatial)),)
    kernel.__name__ = op_type


_make("unpool", 2)
_make("unpool3d", 3)
