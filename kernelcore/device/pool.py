"""2-D max and average pooling on a GPU as one direct kernel, a thread per output looping over its window, where
the reference (kernelcore/ops/pool.py) pads with -inf and runs a maximum per window offset (9 launches and a padded
copy for 3x3), or contracts with a window matrix it copies from the host on every run (which also keeps a run out
of a captured graph). Window bounds are the reference's (Paddle's): start = o * stride - pad_before, end =
min(start + kernel, in), start = max(start, 0); an exclusive average divides by the window's cells, else by the
kernel's. Channels first, regular windows (global pooling included); adaptive windows go to the reference."""
from __future__ import annotations

import numpy as np

from ..ops.pool import geometry
from ..runtime.fast_paths import fast_kernel
from .declare import FLAT_THREADS, MAX_INT32_ELEMENTS, RAW, check_flat_launch, declare, flat_blocks, i32, on_device


def _bounds(o, k, s, lo, size):
    start = o * s - lo
    return np.maximum(start, 0), np.minimum(start + k, size)


def _pool_twin(grid, block, x, y, n, c, h, wd, oh, ow, kh, kw, sh, sw, pt, pl, is_max, exclusive):
    check_flat_launch(grid, block, y.size)
    n, c, h, wd, oh, ow, kh, kw, sh, sw, pt, pl = map(int, (n, c, h, wd, oh, ow, kh, kw, sh, sw, pt, pl))
    x4, y4 = x.reshape(n, c, h, wd), y.reshape(n, c, oh, ow)
    ys, ye = _bounds(np.arange(oh), kh, sh, pt, h)
    xs, xe = _bounds(np.arange(ow), kw, sw, pl, wd)
    for oy in range(oh):
        for ox in range(ow):
            win = x4[:, :, ys[oy]:max(ys[oy], ye[oy]), xs[ox]:max(xs[ox], xe[ox])].reshape(n, c, -1)
            if is_max:
                y4[:, :, oy, ox] = np.max(win, axis=2, initial=-np.inf)  # a NaN in the window wins, as in the kernel
            else:
                cells = max(ye[oy] - ys[oy], 0) * max(xe[ox] - xs[ox], 0) if exclusive else kh * kw
                y4[:, :, oy, ox] = win.sum(axis=2) / np.float32(max(cells, 1))


POOL = declare("kc_pool2d", RAW, r"""
extern "C" __global__ void kc_pool2d(const float* x, float* y, int n, int c, int h, int wd, int oh, int ow, int kh,
                                     int kw, int sh, int sw, int pt, int pl, int is_max, int exclusive) {
    int total = n * c * oh * ow;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    int ox = idx % ow, t = idx / ow;
    int oy = t % oh, plane = t / oh;
    int y0 = oy * sh - pt, x0 = ox * sw - pl;
    int y1 = min(y0 + kh, h), x1 = min(x0 + kw, wd);
    y0 = max(y0, 0);
    x0 = max(x0, 0);
    const float* xc = x + (long long)plane * h * wd;
    float acc = is_max ? __int_as_float(0xff800000) : 0.0f;
    for (int iy = y0; iy < y1; ++iy) {
        for (int ix = x0; ix < x1; ++ix) {
            float v = xc[iy * wd + ix];
            if (is_max) acc = (v > acc || v != v) && acc == acc ? v : acc;
            else acc += v;
        }
    }
    if (!is_max) {
        int cells = exclusive ? max(y1 - y0, 0) * max(x1 - x0, 0) : kh * kw;
        acc = acc / (float)max(cells, 1);
    }
    y[idx] = acc;
}
""", twin=_pool_twin)


def _pool_geometry(x, attrs):
    if x.ndim != 4 or attrs["data_format"] not in ("NCHW", "AnyLayout") or attrs["pooling_type"] not in ("max",
                                                                                                        "avg"):
        return None
    try:
        ksize, strides, pads, outs, adaptive = geometry(attrs.get, x.shape[2:], 2)
    except ValueError:
        return None
    if adaptive or x.shape[0] * x.shape[1] * outs[0] * outs[1] > MAX_INT32_ELEMENTS:
        return None
    return ksize, strides, pads, outs


@fast_kernel("pool2d", lambda xp, ins, attrs: on_device(xp, ins[0]) and _pool_geometry(ins[0], attrs) is not None,
             place="gpu")
def pool2d(ctx, ins, attrs):
    x = ins[0]
    xp = ctx.xp
    (kh, kw), (sh, sw), ((pt, _), (pl, _)), (oh, ow) = _pool_geometry(x, attrs)
    n, c, h, wd = x.shape
    y = xp.empty((n, c, oh, ow), dtype=x.dtype)
    POOL.on(xp)(flat_blocks(y.size), (FLAT_THREADS,), (x, y) + tuple(i32(v) for v in (
        n, c, h, wd, oh, ow, kh, kw, sh, sw, pt, pl, attrs["pooling_type"] == "max", attrs["exclusive"])))
    return (y,)
