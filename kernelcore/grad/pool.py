"""Gradients of pooling (kernelcore/ops/pool.py): average pooling applies the transpose of its per-dim matrices
(a whole map's gradient spread in one broadcast); max pooling sends each output's gradient to the first maximum of
its window (Paddle's order).
"""
from __future__ import annotations

import itertools
import math
from functools import partial

from ..ops import pool as P
from ..ops._spatial import channels_first, layout_again
from ..transforms.backward import standard


# ---------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------
def _scatter_max(xp, x, mask, g):
    """X@GRAD: each output's gradient added at its max's flat spatial index."""
    n, c = x.shape[:2]
    size = math.prod(x.shape[2:])
    dx = xp.zeros((n * c, size), dtype=g.dtype)
    rows = xp.arange(n * c).reshape(-1, 1)
    xp.add.at(dx, (rows, mask.reshape(n * c, -1).astype(xp.int64)), g.reshape(n * c, -1))
    return dx.reshape(x.shape)


# max pooling's gradient does ~3x the forward's passes per kernel offset (ResNet-18's 3x3 stride-2 pool on
# [8, 64, 32, 32]: 1.6 ms on one core, 1.0 ms in two parts)
GRAD_OVER_FORWARD = 3


def _max_grad_offsets(xp, x, out, g, ksize, strides, pads, outs):
    """Regular windows: for each kernel offset in row-major order, the outputs whose max sits there (and was not
    found at an earlier offset) pass their gradient back. Windows that do not overlap (stride >= kernel, as a
    2x2 stride-2 pool) write their offset's gradients instead of adding them; an input needing no padding is
    neither padded nor cropped (a small CNN's 2x2 pool on [32, 8, 32, 32]: 0.37 -> 0.24 ms)."""
    nd = x.ndim - 2
    widths = [(0, 0), (0, 0)]
    for d in range(nd):
        need = (outs[d] - 1) * strides[d] + ksize[d]
        widths.append((pads[d][0], max(need - x.shape[2 + d] - pads[d][0], 0)))
    padded = any(lo or hi for lo, hi in widths)
    xpad = xp.pad(x, widths, mode="constant", constant_values=x.dtype.type(-xp.inf)) if padded else x
    gpad = xp.zeros(xpad.shape, dtype=g.dtype)
    todo = xp.ones(out.shape, dtype=bool)  # outputs whose max has not been found at an earlier offset
    disjoint = all(s >= k for s, k in zip(strides, ksize))  # every input element in one window at most
    offsets = list(itertools.product(*(range(k) for k in ksize)))
    for i, offs in enumerate(offsets):
        sl = (slice(None), slice(None)) + tuple(
            slice(offs[d], offs[d] + strides[d] * (outs[d] - 1) + 1, strides[d]) for d in range(nd))
        hit = xpad[sl] == out
        hit &= todo
        if i + 1 < len(offsets):
            todo ^= hit  # hit lies within todo: this clears them
        if disjoint:
            gpad[sl] = g * hit  # `gpad` is ours (a multiply: xp.where and a masked copy are slower)
        else:
            gpad[sl] += g * hit  # windows overlap, so add
    if not padded:
        return gpad
    crop = (slice(None), slice(None)) + tuple(slice(lo, lo + x.shape[2 + d]) for d, (lo, _) in
                                              enumerate(widths[2:]))
    return xp.ascontiguousarray(gpad[crop])


def _pool_grad(fwd_type, nd):
    d = standard(fwd_type, ins=("X",), outs=("Out",),
                 comment=f"The gradient of {fwd_type}: average pooling spreads each output's gradient over its "
                         "window (divided as the forward divided); max pooling gives it to the window's first "
                         "maximum.")
    d.kernel()(pool_grad_kernel(fwd_type, nd, P.whole_batch))
    d.runs_in_parts = True  # its variant in parts (kernelcore/native/pool.py) splits max pooling by images


def pool_grad_kernel(fwd_type, nd, by_images):
    """pool2d_grad's / pool3d_grad's kernel, max pooling's images run by `by_images` (ops/pool.py whole_batch's
    signature)."""
    def kernel(ctx, ins, attrs):
        xp = ctx.xp
        x, out, g = ins
        fmt = attrs["data_format"]
        x, out, g = channels_first(xp, x, fmt), channels_first(xp, out, fmt), channels_first(xp, g, fmt)
        ksize, strides, pads, outs, adaptive = P.geometry(attrs.get, x.shape[2:], nd)
        if attrs["pooling_type"] == "avg" and P.whole_maps(x.shape, ksize, pads, outs, adaptive) and \
                g.shape == (*x.shape[:2], *outs) and g.dtype in P.WHOLE_MAP_DTYPES:
            # every input cell gets its map's gradient over the map's size: one broadcast, where the products
            # with 1 x size matrices below walk a few elements at a time (MobileNetV2's [8, 1280, 2, 2]: ~0.3 ms)
            dx = xp.empty(x.shape, dtype=g.dtype)  # written, never a read-only broadcast view (1 x 1 maps)
            dx[...] = g / g.dtype.type(math.prod(x.shape[2:]))
        elif attrs["pooling_type"] == "avg":
            dx = g
            for dim in range(nd):
                a = 2 + dim
                m = xp.asarray(P.avg_matrix(x.shape[a], outs[dim], ksize[dim], strides[dim], pads[dim][0],
                                             adaptive, attrs["exclusive"], g.dtype))
                dx = xp.moveaxis(xp.tensordot(dx, m, axes=([a], [0])), -1, a)
            dx = xp.ascontiguousarray(dx)
        elif adaptive or list(ksize) == list(x.shape[2:]):
            _, mask = P.max_pool_with_index(xp, x, ksize, strides, pads, outs, adaptive)
            dx = _scatter_max(xp, x, mask, g)
        else:
            body = partial(_max_grad_offsets, xp, ksize=ksize, strides=strides, pads=pads, outs=outs)
            work = GRAD_OVER_FORWARD * P.max_pool_work(x.shape, ksize, outs)
            dx = by_images(xp, body, (x, out, g), x.shape, work)
        return (layout_again(xp, dx, fmt),)

    kernel.__name__ = f"{fwd_type}_grad"
    return kernel


def _max_index_grad(fwd_type):
    d = standard(fwd_type, ins=("X",), outs=("Mask",),
                 comment=f"The gradient of {fwd_type}: each Out@GRAD element is added to X@GRAD at Mask's index.")

    @d.kernel()
    def kernel(ctx, ins, attrs):
        x, mask, g = ins
        return (_scatter_max(ctx.xp, x, mask, g),)

    kernel.__name__ = f"{fwd_type}_grad"


_pool_grad("pool2d", 2)
_pool_grad("pool3d", 3)
_max_index_grad("max_pool2d_with_index")
_max_index_grad("max_pool3d_with_index")
