"""What the GPU convolution kernels (conv.py, depthwise.py) share of a 2-D NCHW convolution's shape: its strides,
paddings, dilations and output size from the op's attributes, and the gate of a gradient kernel built on them."""
from __future__ import annotations

from ..ops.conv import conv_geometry, output_sizes
from .declare import on_device


def nchw_geometry(x, w, attrs):
    """(strides, pads, dilations, output size) of a 2-D NCHW convolution of x by w, or None where the attributes do
    not describe one (the reference then runs, and says what is wrong)."""
    if attrs["data_format"] not in ("NCHW", "AnyLayout") or x.ndim != 4 or w.ndim != 4:
        return None
    try:
        strides, pads, dils = conv_geometry(attrs.__getitem__, x.shape[2:], w.shape[2:], 2)
        return strides, pads, dils, output_sizes(x.shape, w.shape, strides, pads, dils)
    except ValueError:
        return None


def grad_gate(geometry):
    """The gate of a convolution's gradient kernel: inputs (x, w, the output's gradient) on the device, a shape
    `geometry(x, w, attrs)` takes, and the gradient shaped as that convolution's output."""
    def gate(xp, ins, attrs) -> bool:
        x, w, g = ins
        found = on_device(xp, x, w, g) and geometry(x, w, attrs)
        return bool(found) and g.shape == (x.shape[0], w.shape[0], *found[3])
    return gate
