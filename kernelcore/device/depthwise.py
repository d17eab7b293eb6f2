"""Depthwise 2-D convolution on a GPU as direct kernels, a thread per output (or input) element looping over the
filter's taps, where the reference (kernelcore/ops/conv.py, grad/conv.py) pads the input and runs a multiply and
an add over the whole output per tap (18 launches and a padded copy for a 3x3 filter), or an im2col copy: the
forward, Input@GRAD (a thread per input element gathering the outputs its taps reached) and Filter@GRAD (a thread
block per filter tap summing over the batch and the output positions). Channels first (NCHW), groups equal to the
input channels, any channel multiplier, stride, dilation and padding; the rest goes to the reference."""
from __future__ import annotations

import math

import numpy as np

from ..runtime.fast_paths import fast_kernel
from .conv_shapes import grad_gate, nchw_geometry
from .cuda_source import BLOCK_REDUCE, NCHW_INDEX
from .declare import (FLAT_THREADS, MAX_INT32_ELEMENTS, RAW, check_flat_launch, declare, flat_blocks, i32,
                      on_device)
from .fused_norm import wanted

_GEOMETRY = ("int n, int c, int h, int wd, int mult, int oh, int ow, int kh, int kw, int sh, int sw, int pt, "
             "int pl, int dh, int dw")


def _padded(x, kh, kw, oh, ow, sh, sw, pt, pl, dh, dw):
    """x padded with zeros so that every tap of every output reads inside it (what the kernels' bounds checks
    skip reads as zero)."""
    h, wd = x.shape[2:]
    bottom = max(0, (oh - 1) * sh - pt + (kh - 1) * dh + 1 - h)
    right = max(0, (ow - 1) * sw - pl + (kw - 1) * dw + 1 - wd)
    return np.pad(x, ((0, 0), (0, 0), (pt, bottom), (pl, right)))


def _windows(xpad, ky, kx, oh, ow, sh, sw, dh, dw):
    return xpad[:, :, ky * dh: ky * dh + (oh - 1) * sh + 1: sh, kx * dw: kx * dw + (ow - 1) * sw + 1: sw]


def _forward_twin(grid, block, x, w, y, n, c, h, wd, mult, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw):
    check_flat_launch(grid, block, y.size)
    geo = (int(oh), int(ow), int(sh), int(sw), int(pt), int(pl), int(dh), int(dw))
    xpad = _padded(x.reshape(int(n), int(c), int(h), int(wd)), int(kh), int(kw), *geo)
    xs = np.repeat(xpad, int(mult), axis=1)  # output channel o reads input channel o // mult
    w4 = w.reshape(-1, int(kh), int(kw))
    acc = np.zeros((int(n), int(c) * int(mult), int(oh), int(ow)), np.float32)
    for ky in range(int(kh)):  # the kernel's order of taps
        for kx in range(int(kw)):
            acc += w4[None, :, ky, kx, None, None] * _windows(xs, ky, kx, int(oh), int(ow), int(sh), int(sw),
                                                              int(dh), int(dw))
    y.reshape(acc.shape)[...] = acc


FORWARD = declare("kc_depthwise_forward", RAW, r"""
extern "C" __global__ void kc_depthwise_forward(const float* x, const float* w, float* y, """ + _GEOMETRY + r""") {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n * c * mult * oh * ow) return;
    kc_pixel out = kc_pixel_of(idx, oh, ow);
    int o = out.plane % (c * mult), b = out.plane / (c * mult);
    const float* xc = x + ((long long)b * c + o / mult) * h * wd;
    const float* wo = w + (long long)o * kh * kw;
    float acc = 0.0f;
    for (int ky = 0; ky < kh; ++ky) {
        int iy = kc_tap_input(out.y, ky, sh, pt, dh, h);
        if (iy < 0) continue;
        for (int kx = 0; kx < kw; ++kx) {
            int ix = kc_tap_input(out.x, kx, sw, pl, dw, wd);
            if (ix < 0) continue;
            acc += wo[ky * kw + kx] * xc[iy * wd + ix];
        }
    }
    y[idx] = acc;
}
""", preamble=NCHW_INDEX, twin=_forward_twin)


def _input_grad_twin(grid, block, g, w, dx, n, c, h, wd, mult, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw):
    check_flat_launch(grid, block, dx.size)
    n, c, h, wd, mult, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw = map(int, (n, c, h, wd, mult, oh, ow, kh, kw, sh,
                                                                          sw, pt, pl, dh, dw))
    g4, w4 = g.reshape(n, c * mult, oh, ow), w.reshape(c * mult, kh, kw)
    dpad = np.zeros(_padded(np.zeros((n, c, h, wd), np.float32), kh, kw, oh, ow, sh, sw, pt, pl, dh, dw).shape,
                    np.float32)
    for ky in range(kh):
        for kx in range(kw):
            part = (g4 * w4[None, :, ky, kx, None, None]).reshape(n, c, mult, oh, ow).sum(axis=2)
            _windows(dpad, ky, kx, oh, ow, sh, sw, dh, dw)[...] += part
    dx.reshape(n, c, h, wd)[...] = dpad[:, :, pt:pt + h, pl:pl + wd]


INPUT_GRAD = declare("kc_depthwise_input_grad", RAW, r"""
extern "C" __global__ void kc_depthwise_input_grad(const float* g, const float* w, float* dx, """ + _GEOMETRY + r""") {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n * c * h * wd) return;
    kc_pixel in = kc_pixel_of(idx, h, wd);
    int ch = in.plane % c, b = in.plane / c;
    float acc = 0.0f;
    for (int m = 0; m < mult; ++m) {
        int o = ch * mult + m;
        const float* go = g + ((long long)b * c * mult + o) * oh * ow;
        const float* wo = w + (long long)o * kh * kw;
        for (int ky = 0; ky < kh; ++ky) {
            int oy = kc_tap_output(in.y, ky, sh, pt, dh, oh);
            if (oy < 0) continue;
            for (int kx = 0; kx < kw; ++kx) {
                int ox = kc_tap_output(in.x, kx, sw, pl, dw, ow);
                if (ox < 0) continue;
                acc += wo[ky * kw + kx] * go[oy * ow + ox];
            }
        }
    }
    dx[idx] = acc;
}
""", preamble=NCHW_INDEX, twin=_input_grad_twin)


def _filter_grad_twin(grid, block, x, g, dw_out, n, c, h, wd, mult, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw):
    n, c, h, wd, mult, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw = map(int, (n, c, h, wd, mult, oh, ow, kh, kw, sh,
                                                                          sw, pt, pl, dh, dw))
    if grid != (c * mult * kh * kw,) or block[0] % 32 or len(block) != 1:
        raise ValueError(f"a block per filter tap ({c * mult * kh * kw}): launched grid {grid}, block {block}")
    xs = np.repeat(_padded(x.reshape(n, c, h, wd), kh, kw, oh, ow, sh, sw, pt, pl, dh, dw), mult, axis=1)
    g4 = g.reshape(n, c * mult, oh, ow)
    out = dw_out.reshape(c * mult, kh, kw)
    for ky in range(kh):
        for kx in range(kw):
            out[:, ky, kx] = (g4 * _windows(xs, ky, kx, oh, ow, sh, sw, dh, dw)).sum(axis=(0, 2, 3))


FILTER_GRAD = declare("kc_depthwise_filter_grad", RAW, r"""
extern "C" __global__ void kc_depthwise_filter_grad(const float* x, const float* g, float* dw_out, """ + _GEOMETRY
                      + r""") {
    __shared__ float scratch[32];
    int tap = blockIdx.x;
    int kx = tap % kw, ky = (tap / kw) % kh, o = tap / (kh * kw), ch = o / mult;
    int count = n * oh * ow;
    float s = 0.0f;
    for (int j = threadIdx.x; j < count; j += blockDim.x) {
        int ox = j % ow, oy = (j / ow) % oh, b = j / (ow * oh);
        int iy = kc_tap_input(oy, ky, sh, pt, dh, h), ix = kc_tap_input(ox, kx, sw, pl, dw, wd);
        if (iy < 0 || ix < 0) continue;
        s += g[(((long long)b * c * mult + o) * oh + oy) * ow + ox] * x[(((long long)b * c + ch) * h + iy) * wd + ix];
    }
    s = kc_block_sum(s, scratch);
    if (threadIdx.x == 0) dw_out[tap] = s;
}
""", preamble=BLOCK_REDUCE + NCHW_INDEX, twin=_filter_grad_twin)


def _geometry(x, w, attrs):
    """(strides, pads, dilations, output size) of a depthwise-shaped NCHW float32 convolution, or None where the
    kernels do not take it (the reference then runs, and says what is wrong)."""
    geometry = nchw_geometry(x, w, attrs)
    if geometry is None:
        return None
    c, groups = x.shape[1], attrs["groups"]
    if groups != c or c < 2 or w.shape[1] != 1 or w.shape[0] % c:
        return None
    if x.shape[0] * w.shape[0] * math.prod(geometry[3]) > MAX_INT32_ELEMENTS:
        return None
    return geometry


def _args(x, w, geometry):
    (sh, sw), ((pt, _), (pl, _)), (dh, dw), (oh, ow) = geometry
    n, c, h, wd = x.shape
    return tuple(i32(v) for v in (n, c, h, wd, w.shape[0] // c, oh, ow, w.shape[2], w.shape[3], sh, sw, pt, pl, dh,
                                  dw))


def depthwise_forward_gate(xp, ins, attrs):
    x, w = ins
    return on_device(xp, x, w) and _geometry(x, w, attrs) is not None


def depthwise_forward(ctx, ins, attrs):
    x, w = ins
    xp = ctx.xp
    geometry = _geometry(x, w, attrs)
    y = xp.empty((x.shape[0], w.shape[0], *geometry[3]), dtype=x.dtype)
    FORWARD.on(xp)(flat_blocks(y.size), (FLAT_THREADS,), (x, w, y) + _args(x, w, geometry))
    return (y,)


depthwise_grad_gate = grad_gate(_geometry)


def depthwise_grad(ctx, ins, attrs):
    x, w, g = ins
    xp = ctx.xp
    args = _args(x, w, _geometry(x, w, attrs))
    dx = dw = None
    if wanted(ctx, "Input@GRAD"):
        dx = xp.empty(x.shape, dtype=x.dtype)
        INPUT_GRAD.on(xp)(flat_blocks(dx.size), (FLAT_THREADS,), (g, w, dx) + args)
    if wanted(ctx, "Filter@GRAD"):
        dw = xp.empty(w.shape, dtype=w.dtype)
        FILTER_GRAD.on(xp)((w.size,), (FLAT_THREADS,), (x, g, dw) + args)
    return dx, dw


fast_kernel("depthwise_conv2d", depthwise_forward_gate, place="gpu")(depthwise_forward)
# conv2d: kernelcore/device/conv.py, which sends depthwise-shaped ones here
fast_kernel("depthwise_conv2d_grad", depthwise_grad_gate, place="gpu")(depthwise_grad)
# conv2d_grad: kernelcore/device/conv.py, which sends depthwise-shaped ones here
