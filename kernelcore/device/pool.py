"""2-D max and average pooling on a GPU as one direct kernel, a thread per output looping over its window, where
the reference (kernelcore/ops/pool.py) pads with -inf and runs a maximum per window offset (9 launches and a padded
copy for 3x3), or contracts with a window matrix it copies from the host on every run (which also keeps a run out
of a captured graph). Window bounds are the reference's (Paddle's): start = o * stride - pad_before, end =
min(start + kernel, in), start = max(start, 0); an exclusive average divides by the window's cells, else by the
kernel's. Channels first, regular windows (global pooling included); adaptive windows go to the reference.
The gradients: max pooling's a thread per output adding its gradient at its window's first maximum (Paddle's
order; atomically, as windows overlap), average pooling's a thread per input element gathering the outputs whose
windows hold it."""
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


def _max_grad_twin(grid, block, x, out, g, dx, n, c, h, wd, oh, ow, kh, kw, sh, sw, pt, pl):
    check_flat_launch(grid, block, out.size)
    n, c, h, wd, oh, ow, kh, kw, sh, sw, pt, pl = map(int, (n, c, h, wd, oh, ow, kh, kw, sh, sw, pt, pl))
    x3, o3, g3 = x.reshape(n * c, h, wd), out.reshape(n * c, oh, ow), g.reshape(n * c, oh, ow)
    d3 = dx.reshape(n * c, h * wd)
    ys, ye = _bounds(np.arange(oh), kh, sh, pt, h)
    xs, xe = _bounds(np.arange(ow), kw, sw, pl, wd)
    planes = np.arange(n * c)
    for oy in range(oh):
        for ox in range(ow):
            rows, cols = np.arange(ys[oy], max(ys[oy], ye[oy])), np.arange(xs[ox], max(xs[ox], xe[ox]))
            if not rows.size or not cols.size:
                continue
            flat = (rows[:, None] * wd + cols[None, :]).reshape(-1)  # the window's cells in row-major order
            hit = x3.reshape(n * c, -1)[:, flat] == o3[:, oy, ox, None]
            found = hit.any(axis=1)
            first = flat[hit.argmax(axis=1)]
            np.add.at(d3, (planes[found], first[found]), g3[found, oy, ox])


MAX_GRAD = declare("kc_max_pool2d_grad", RAW, r"""
extern "C" __global__ void kc_max_pool2d_grad(const float* x, const float* out, const float* g, float* dx, int n,
                                              int c, int h, int wd, int oh, int ow, int kh, int kw, int sh, int sw,
                                              int pt, int pl) {
    int total = n * c * oh * ow;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    int ox = idx % ow, t = idx / ow;
    int oy = t % oh, plane = t / oh;
    int y0 = oy * sh - pt, x0 = ox * sw - pl;
    int y1 = min(y0 + kh, h), x1 = min(x0 + kw, wd);
    y0 = max(y0, 0);
    x0 = max(x0, 0);
    long long base = (long long)plane * h * wd;
    float m = out[idx];
    for (int iy = y0; iy < y1; ++iy) {
        for (int ix = x0; ix < x1; ++ix) {
            if (x[base + iy * wd + ix] == m) {
                atomicAdd(dx + base + iy * wd + ix, g[idx]);
                return;
            }
        }
    }
}
""", twin=_max_grad_twin)


def _avg_grad_twin(grid, block, g, dx, n, c, h, wd, oh, ow, kh, kw, sh, sw, pt, pl, exclusive):
    check_flat_launch(grid, block, dx.size)
    n, c, h, wd, oh, ow, kh, kw, sh, sw, pt, pl = map(int, (n, c, h, wd, oh, ow, kh, kw, sh, sw, pt, pl))
    g4, acc = g.reshape(n, c, oh, ow), np.zeros((n, c, h, wd), np.float32)
    ys, ye = _bounds(np.arange(oh), kh, sh, pt, h)
    xs, xe = _bounds(np.arange(ow), kw, sw, pl, wd)
    for oy in range(oh):
        for ox in range(ow):
            cells = max(ye[oy] - ys[oy], 0) * max(xe[ox] - xs[ox], 0) if exclusive else kh * kw
            acc[:, :, ys[oy]:max(ys[oy], ye[oy]), xs[ox]:max(xs[ox], xe[ox])] += \
                (g4[:, :, oy, ox] / np.float32(max(cells, 1)))[:, :, None, None]
    dx.reshape(n, c, h, wd)[...] = acc


AVG_GRAD = declare("kc_avg_pool2d_grad", RAW, r"""
extern "C" __global__ void kc_avg_pool2d_grad(const float* g, float* dx, int n, int c, int h, int wd, int oh, int ow,
                                              int kh, int kw, int sh, int sw, int pt, int pl, int exclusive) {
    int total = n * c * h * wd;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    int ix = idx % wd, t = idx / wd;
    int iy = t % h, plane = t / h;
    /* the outputs whose windows [o * s - p, o * s - p + k) hold (iy, ix) */
    int oy0 = max(0, (iy + pt - kh + sh) / sh), oy1 = min(oh - 1, (iy + pt) / sh);
    int ox0 = max(0, (ix + pl - kw + sw) / sw), ox1 = min(ow - 1, (ix + pl) / sw);
    const float* gp = g + (long long)plane * oh * ow;
    float acc = 0.0f;
    for (int oy = oy0; oy <= oy1; ++oy) {
        int y0 = oy * sh - pt, y1 = min(y0 + kh, h);
        y0 = max(y0, 0);
        for (int ox = ox0; ox <= ox1; ++ox) {
            int x0 = ox * sw - pl, x1 = min(x0 + kw, wd);
            x0 = max(x0, 0);
            int cells = exclusive ? max(y1 - y0, 0) * max(x1 - x0, 0) : kh * kw;
            acc += gp[oy * ow + ox] / (float)max(cells, 1);
        }
    }
    dx[idx] = acc;
}
""", twin=_avg_grad_twin)


def _grad_gate(xp, ins, attrs):
    x, out, g = ins
    geometry = on_device(xp, x, out, g) and _pool_geometry(x, attrs)
    return bool(geometry) and out.shape == g.shape == (*x.shape[:2], *geometry[3])


@fast_kernel("pool2d_grad", _grad_gate, place="gpu")
def pool2d_grad(ctx, ins, attrs):
    x, out, g = ins
    xp = ctx.xp
    (kh, kw), (sh, sw), ((pt, _), (pl, _)), (oh, ow) = _pool_geometry(x, attrs)
    n, c, h, wd = x.shape
    sizes = tuple(i32(v) for v in (n, c, h, wd, oh, ow, kh, kw, sh, sw, pt, pl))
    if attrs["pooling_type"] == "max":
        dx = xp.zeros(x.shape, dtype=x.dtype)
        MAX_GRAD.on(xp)(flat_blocks(out.size), (FLAT_THREADS,), (x, out, g, dx) + sizes)
    else:
        dx = xp.empty(x.shape, dtype=x.dtype)
        AVG_GRAD.on(xp)(flat_blocks(dx.size), (FLAT_THREADS,), (g, dx) + sizes + (i32(attrs["exclusive"]),))
    return (dx,)
