"""2-D max pooling's C kernels as fast variants of pool2d and pool2d_grad (kernelcore/ops/pool.py,
kernelcore/grad/pool.py): each image's channel in one pass, shared over the cores, a window's first maximum
winning as in the reference (tests/test_native.py compares them)."""
from __future__ import annotations

from .. import native
from ..ops.pool import geometry, whole_maps
from ..ops._spatial import channel_last
from ..runtime.fast_paths import fast_kernel


def _windows(x, attrs):
    """(ksize, strides, pads, outs) of a channels-first 2-D max pooling over proper windows (not adaptive, not a
    whole map), else None."""
    if x.ndim != 4 or channel_last(attrs["data_format"]) or attrs["pooling_type"] != "max":
        return None
    ksize, strides, pads, outs, adaptive = geometry(attrs.get, x.shape[2:], 2)
    if adaptive or whole_maps(x.shape, ksize, pads, outs, adaptive) or list(ksize) == list(x.shape[2:]):
        return None
    return ksize, strides, pads, outs


@fast_kernel("pool2d", lambda xp, ins, attrs: native.ready(xp, ins[0]) and _windows(ins[0], attrs) is not None)
def pool2d(ctx, ins, attrs):
    x = ins[0]
    ksize, strides, pads, outs = _windows(x, attrs)
    return (native.max_pool2d(x, ksize, strides, [lo for lo, _ in pads], outs),)  # native/max_pool.c


def _grad_gate(xp, ins, attrs):
    x, out, g = ins
    if not native.ready(xp, x, out, g):
        return False
    found = _windows(x, attrs)
    return found is not None and out.shape == g.shape == (*x.shape[:2], *found[3])


@fast_kernel("pool2d_grad", _grad_gate)
def pool2d_grad(ctx, ins, attrs):
    x, out, g = ins
    ksize, strides, pads, _ = _windows(x, attrs)
    return (native.max_pool2d_grad(x, out, g, ksize, strides, [lo for lo, _ in pads]),)
