"""Gradients of kernelcore/ops/reorder.py: each rearrangement's inverse applied to the output gradient."""
from __future__ import annotations

from ..ops.reorder import flipped, pixels_to_space, shuffle_channels, space_to_pixels
from ..transforms.backward import standard

FLIP_GRAD = standard("flip", ins=("X",), comment="X@GRAD = Out@GRAD reversed along the same dims.")


@FLIP_GRAD.kernel()
def flip_grad(ctx, ins, attrs):
    return (flipped(ins[1], attrs["axis"]),)


CHANNEL_SHUFFLE_GRAD = standard("channel_shuffle", ins=("X",),
                                comment="X@GRAD = Out@GRAD shuffled back (groups C / groups).")


@CHANNEL_SHUFFLE_GRAD.kernel()
def channel_shuffle_grad(ctx, ins, attrs):
    x, g = ins
    channels = x.shape[3 if attrs["data_format"] == "NHWC" else 1]
    return (shuffle_channels(g, channels // attrs["groups"], attrs["data_format"]),)


PIXEL_SHUFFLE_GRAD = standard("pixel_shuffle", ins=("X",), comment="X@GRAD = pixel_unshuffle(Out@GRAD).")


@PIXEL_SHUFFLE_GRAD.kernel()
def pixel_shuffle_grad(ctx, ins, attrs):
    return (space_to_pixels(ins[1], attrs["upscale_factor"], attrs["data_format"]),)


PIXEL_UNSHUFFLE_GRAD = standard("pixel_unshuffle", ins=("X",), comment="X@GRAD = pixel_shuffle(Out@GRAD).")


@PIXEL_UNSHUFFLE_GRAD.kernel()
def pixel_unshuffle_grad(ctx, ins, attrs):
    return (pixels_to_space(ins[1], attrs["downscale_factor"], attrs["data_format"]),)
