"""Ops that move elements without computing: flip, and the channel rearrangements channel_shuffle, pixel_shuffle
and pixel_unshuffle (each the other's inverse, which is how their gradients are written)."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, larger_than, register_op
from ._infer import normalize_axis, same_as

FLIP = register_op(
    "flip", "Out = X reversed along each dim in `axis`.",
    inputs=[In("X", "the input tensor")], outputs=[Out("Out", "X's shape and dtype")],
    attrs=[Attr("axis", A.INTS, "the dims to reverse")], infer_shape=same_as())


def flipped(x, axes):
    dims = {normalize_axis(a, x.ndim) for a in axes} if x.ndim else set()
    return x[tuple(slice(None, None, -1) if d in dims else slice(None) for d in range(x.ndim))].copy()


@FLIP.kernel()
def flip(ctx, ins, attrs):
    return (flipped(ins[0], attrs["axis"]),)


def _channels_last(fmt: str) -> bool:
    return fmt == "NHWC"


def shuffle_channels(x, groups: int, fmt: str):
    """[N, C, H, W] seen as [N, groups, C / groups, H, W], the two channel dims swapped."""
    c_axis = 3 if _channels_last(fmt) else 1
    c = x.shape[c_axis]
    if x.ndim != 4 or groups <= 0 or c % groups:
        raise ValueError(f"channel_shuffle takes a 4-d X whose {c} channels divide by groups={groups}, "
                         f"got shape {list(x.shape)}")
    split = x.shape[:c_axis] + (groups, c // groups) + x.shape[c_axis + 1:]
    order = list(range(5))
    order[c_axis], order[c_axis + 1] = order[c_axis + 1], order[c_axis]
    return x.reshape(split).transpose(order).reshape(x.shape)


CHANNEL_SHUFFLE = register_op(
    "channel_shuffle", "Out = X's channels regrouped: channel g * (C / groups) + i moves to i * groups + g.",
    inputs=[In("X", "a 4-d tensor, NCHW or NHWC")], outputs=[Out("Out", "X's shape and dtype")],
    attrs=[Attr("groups", A.INT, "how many groups the channels form", checks=(larger_than(0),)),
           Attr("data_format", A.STRING, "'NCHW' or 'NHWC'", "NCHW")], infer_shape=same_as())


@CHANNEL_SHUFFLE.kernel()
def channel_shuffle(ctx, ins, attrs):
    return (shuffle_channels(ins[0], attrs["groups"], attrs["data_format"]),)


def _check_4d(x, op_type):
    if x.ndim != 4:
        raise ValueError(f"{op_type} takes a 4-d X, got shape {list(x.shape)}")


def pixels_to_space(x, r: int, fmt: str):
    """[N, C r r, H, W] -> [N, C, H r, W r] (pixel_shuffle)."""
    _check_4d(x, "pixel_shuffle")
    if _channels_last(fmt):
        n, h, w, crr = x.shape
        if crr % (r * r):
            raise ValueError(f"pixel_shuffle: {crr} channels do not divide by upscale_factor^2 = {r * r}")
        return x.reshape(n, h, w, crr // (r * r), r, r).transpose(0, 1, 4, 2, 5, 3).reshape(n, h * r, w * r, -1)
    n, crr, h, w = x.shape
    if crr % (r * r):
        raise ValueError(f"pixel_shuffle: {crr} channels do not divide by upscale_factor^2 = {r * r}")
    return x.reshape(n, crr // (r * r), r, r, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(n, -1, h * r, w * r)


def space_to_pixels(x, r: int, fmt: str):
    """[N, C, H r, W r] -> [N, C r r, H, W] (pixel_unshuffle)."""
    _check_4d(x, "pixel_unshuffle")
    if _channels_last(fmt):
        n, hr, wr, c = x.shape
        if hr % r or wr % r:
            raise ValueError(f"pixel_unshuffle: H={hr} and W={wr} must divide by downscale_factor={r}")
        return x.reshape(n, hr // r, r, wr // r, r, c).transpose(0, 1, 3, 5, 2, 4).reshape(n, hr // r, wr // r, -1)
    n, c, hr, wr = x.shape
    if hr % r or wr % r:
        raise ValueError(f"pixel_unshuffle: H={hr} and W={wr} must divide by downscale_factor={r}")
    return x.reshape(n, c, hr // r, r, wr // r, r).transpose(0, 1, 3, 5, 2, 4).reshape(n, -1, hr // r, wr // r)


PIXEL_SHUFFLE = register_op(
    "pixel_shuffle", "Out[n, c, h r + i, w r + j] = X[n, c r r + i r + j, h, w]: channels into space.",
    inputs=[In("X", "a 4-d tensor, NCHW or NHWC")], outputs=[Out("Out", "[N, C / r^2, H r, W r]")],
    attrs=[Attr("upscale_factor", A.INT, "r", 1, checks=(larger_than(0),)),
           Attr("data_format", A.STRING, "'NCHW' or 'NHWC'", "NCHW")])

PIXEL_UNSHUFFLE = register_op(
    "pixel_unshuffle", "The inverse of pixel_shuffle: space into channels.",
    inputs=[In("X", "a 4-d tensor, NCHW or NHWC")], outputs=[Out("Out", "[N, C r^2, H / r, W / r]")],
    attrs=[Attr("downscale_factor", A.INT, "r", 1, checks=(larger_than(0),)),
           Attr("data_format", A.STRING, "'NCHW' or 'NHWC'", "NCHW")])


@PIXEL_SHUFFLE.kernel()
def pixel_shuffle(ctx, ins, attrs):
    return (pixels_to_space(ins[0], attrs["upscale_factor"], attrs["data_format"]),)


@PIXEL_UNSHUFFLE.kernel()
def pixel_unshuffle(ctx, ins, attrs):
    return (space_to_pixels(ins[0], attrs["downscale_factor"], attrs["data_format"]),)
