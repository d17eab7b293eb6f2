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
from .cuda_source import NCHW_INDEX
from .declare import FLAT_THREADS, MAX_INT32_ELEMENTS, RAW, check_flat_launch, declare, flat_blocks, i32, on_device


# along one axis: a pooling window and which outputs' windows hold an input position, as the twins' _bounds
WINDOWS = NCHW_INDEX + r"""
/* positions [lo, hi) along one axis */
struct kc_span { int lo, hi; };
/* output `o`'s window clipped to the input: start = o * stride - pad, end = min(start + kernel, size),
   start = max(start, 0) */
__device__ __forceinline__ kc_span kc_pool_window(int o, int kernel, int stride, int pad, int size) {
    int start = o * stride - pad;
    kc_span s;
    s.lo = max(start, 0);
    s.hi = min(start + kernel, size);
    return s;
}
/* the outputs whose windows [o * stride - pad, o * stride - pad + kernel) hold input position `i` */
__device__ __forceinline__ kc_span kc_pool_outputs(int i, int kernel, int stride, int pad, int outs) {
    kc_span s;
    s.lo = max(0, (i + pad - kernel + stride) / stride);
    s.hi = min(outs, (i + pad) / stride + 1);
    return s;
}
/* what an average divides its window's sum by: the window's cells (exclusive) or the kernel's, at least 1 */
__device__ __forceinline__ float kc_pool_divisor(kc_span ys, kc_span xs, int kh, int kw, int exclusive) {
    int cells = exclusive ? max(ys.hi - ys.lo, 0) * max(xs.hi - xs.lo, 0) : kh * kw;
    return (float)max(cells, 1);
}
"""


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
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n * c * oh * ow) return;
    kc_pixel out = kc_pixel_of(idx, oh, ow);
    kc_span ys = kc_pool_window(out.y, kh, sh, pt, h), xs = kc_pool_window(out.x, kw, sw, pl, wd);
    const float* xc = x + (long long)out.plane * h * wd;
    float acc = is_max ? __int_as_float(0xff800000) : 0.0f;
    for (int iy = ys.lo; iy < ys.hi; ++iy) {
        for (int ix = xs.lo; ix < xs.hi; ++ix) {
            float v = xc[iy * wd + ix];
            if (is_max) acc = (v > acc || v != v) && acc == acc ? v : acc;
            else acc += v;
        }
    }
    if (!is_max) acc = acc / kc_pool_divisor(ys, xs, kh, kw, exclusive);
    y[idx] = acc;
}
""", preamble=WINDOWS, twin=_pool_twin)


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
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n * c * oh * ow) return;
    kc_pixel at = kc_pixel_of(idx, oh, ow);
    kc_span ys = kc_pool_window(at.y, kh, sh, pt, h), xs = kc_pool_window(at.x, kw, sw, pl, wd);
    long long base = (long long)at.plane * h * wd;
    float m = out[idx];
    for (int iy = ys.lo; iy < ys.hi; ++iy) {
        for (int ix = xs.lo; ix < xs.hi; ++ix) {
            if (x[base + iy * wd + ix] == m) {
                atomicAdd(dx + base + iy * wd + ix, g[idx]);
                return;
            }
        }
    }
}
""", preamble=WINDOWS, twin=_max_grad_twin)


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
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n * c * h * wd) return;
    kc_pixel in = kc_pixel_of(idx, h, wd);
    kc_span oys = kc_pool_outputs(in.y, kh, sh, pt, oh), oxs = kc_pool_outputs(in.x, kw, sw, pl, ow);
    const float* gp = g + (long long)in.plane * oh * ow;
    float acc = 0.0f;
    for (int oy = oys.lo; oy < oys.hi; ++oy) {
        kc_span ys = kc_pool_window(oy, kh, sh, pt, h);
        for (int ox = oxs.lo; ox < oxs.hi; ++ox) {
            kc_span xs = kc_pool_window(ox, kw, sw, pl, wd);
            acc += gp[oy * ow + ox] / kc_pool_divisor(ys, xs, kh, kw, exclusive);
        }
    }
    dx[idx] = acc;
}
""", preamble=WINDOWS, twin=_avg_grad_twin)


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
