"""Pooling's fast variants (kernelcore/runtime/fast_paths.py) over pool2d, pool3d and their gradients
(kernelcore/ops/pool.py, kernelcore/grad/pool.py): 2-D max pooling in C, each image's channel in one pass, shared
over the cores, a window's first maximum winning as in the reference (tests/test_native.py compares them); the rest
as the reference, with max pooling's images split over the cores inside a split run (runtime/cpu_parts.py)."""
from __future__ import annotations

import numpy as np

from .. import native
from ..grad import pool as GP
from ..ops import pool as P
from ..ops._spatial import channel_last
from ..runtime.cpu_parts import by_images_in_parts
from ..runtime.fast_paths import fast_kernel


def _windows(x, attrs):
    """(ksize, strides, pads, outs) of a channels-first 2-D max pooling over proper windows (not adaptive, not a
    whole map), else None."""
    if x.ndim != 4 or channel_last(attrs["data_format"]) or attrs["pooling_type"] != "max":
        return None
    ksize, strides, pads, outs, adaptive = P.geometry(attrs.get, x.shape[2:], 2)
    if adaptive or P.whole_maps(x.shape, ksize, pads, outs, adaptive) or list(ksize) == list(x.shape[2:]):
        return None
    return ksize, strides, pads, outs


IN_PARTS = {op_type: P.pool_kernel(op_type, nd, by_images_in_parts) for op_type, nd in (("pool2d", 2), ("pool3d", 3))}
GRADS_IN_PARTS = {f"{op_type}_grad": GP.pool_grad_kernel(op_type, nd, by_images_in_parts)
                  for op_type, nd in (("pool2d", 2), ("pool3d", 3))}


def pool2d(ctx, ins, attrs):
    x = ins[0]
    found = _windows(x, attrs) if native.ready(ctx.xp, x) else None
    if found is None:
        return IN_PARTS["pool2d"](ctx, ins, attrs)
    ksize, strides, pads, outs = found
    return (native.max_pool2d(x, ksize, strides, [lo for lo, _ in pads], outs),)  # native/max_pool.c


def _c_takes_the_grad(xp, ins, attrs):
    x, out, g = ins
    if not native.ready(xp, x, out, g):
        return False
    found = _windows(x, attrs)
    return found is not None and out.shape == g.shape == (*x.shape[:2], *found[3])


def pool2d_grad(ctx, ins, attrs):
    if not _c_takes_the_grad(ctx.xp, ins, attrs):
        return GRADS_IN_PARTS["pool2d_grad"](ctx, ins, attrs)
    x, out, g = ins
    ksize, strides, pads, _ = _windows(x, attrs)
    return (native.max_pool2d_grad(x, out, g, ksize, strides, [lo for lo, _ in pads]),)


def _on_the_host(xp, ins, attrs) -> bool:
    return xp is np


fast_kernel("pool2d", _on_the_host)(pool2d)
fast_kernel("pool2d_grad", _on_the_host)(pool2d_grad)
fast_kernel("pool3d", _on_the_host)(IN_PARTS["pool3d"])
fast_kernel("pool3d_grad", _on_the_host)(GRADS_IN_PARTS["pool3d_grad"])
for _type, _kernel in (*IN_PARTS.items(), *GRADS_IN_PARTS.items()):  # float64: in parts, no C
    fast_kernel(_type, _on_the_host, dtype="float64")(_kernel)
