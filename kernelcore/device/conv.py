"""A one-group 2-D convolution on a GPU without the reference's im2col copy, forward and Input@GRAD.

Forward (KxK, any stride, padding and dilation): every filter tap's product with every input pixel in one batched
GEMM (the filter's taps stacked as rows, (kh * kw * Cout, Cin) @ X (Cin, H * W) per image), then one kernel, a
thread per output element summing the kh * kw products its window reaches (taps outside the input add nothing, so
there is no padded copy). Two launches where the reference pads, copies the im2col columns, multiplies and
transposes. 1x1 stride-1 unpadded filters stay the reference's (a GEMM on the input itself); a product buffer
more than eight times the im2col columns' size (strides with many more output than input channels, such as
ResNet's 7x7 stride-2 stem over 3 channels) goes to the reference too.

Input@GRAD without the reference's col2im (kernelcore/grad/conv.py: one
strided add over the padded input per filter tap, then a crop): the columns' gradient in one batched GEMM (W^T @
Output@GRAD per image), then one kernel, a thread per input element gathering the columns its taps reached.
Filter@GRAD stays the reference's GEMM over im2col columns. conv2d_grad of depthwise shape goes to
kernelcore/device/depthwise.py; other group counts, channels last and other dtypes to the reference."""
from __future__ import annotations

import math

import numpy as np

from ..grad.conv import conv_filter_grad
from ..runtime.fast_paths import fast_kernel
from .conv_shapes import grad_gate, nchw_geometry
from .cuda_source import NCHW_INDEX
from .declare import (FLAT_THREADS, MAX_INT32_ELEMENTS, RAW, check_flat_launch, declare, flat_blocks, i32,
                      on_device)
from .depthwise import depthwise_forward, depthwise_forward_gate, depthwise_grad, depthwise_grad_gate
from .fused_norm import wanted


def _col2im_twin(grid, block, cols, dx, n, c, h, wd, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw):
    n, c, h, wd, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw = map(int, (n, c, h, wd, oh, ow, kh, kw, sh, sw, pt, pl,
                                                                    dh, dw))
    check_flat_launch(grid, block, n * c * h * wd)
    c6 = cols.reshape(n, c, kh, kw, oh, ow)
    bottom = max(0, (oh - 1) * sh - pt + (kh - 1) * dh + 1 - h)
    right = max(0, (ow - 1) * sw - pl + (kw - 1) * dw + 1 - wd)
    dpad = np.zeros((n, c, pt + h + bottom, pl + wd + right), np.float32)
    for ky in range(kh):
        for kx in range(kw):
            dpad[:, :, ky * dh: ky * dh + (oh - 1) * sh + 1: sh, kx * dw: kx * dw + (ow - 1) * sw + 1: sw] += \
                c6[:, :, ky, kx]
    dx.reshape(n, c, h, wd)[...] = dpad[:, :, pt:pt + h, pl:pl + wd]


COL2IM = declare("kc_col2im", RAW, r"""
extern "C" __global__ void kc_col2im(const float* cols, float* dx, int n, int c, int h, int wd, int oh, int ow,
                                     int kh, int kw, int sh, int sw, int pt, int pl, int dh, int dw) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n * c * h * wd) return;
    kc_pixel in = kc_pixel_of(idx, h, wd);
    long long p = (long long)oh * ow;
    const float* cb = cols + (long long)in.plane * kh * kw * p;
    float acc = 0.0f;
    for (int ky = 0; ky < kh; ++ky) {
        int oy = kc_tap_output(in.y, ky, sh, pt, dh, oh);
        if (oy < 0) continue;
        for (int kx = 0; kx < kw; ++kx) {
            int ox = kc_tap_output(in.x, kx, sw, pl, dw, ow);
            if (ox < 0) continue;
            acc += cb[(ky * kw + kx) * p + oy * ow + ox];
        }
    }
    dx[idx] = acc;
}
""", preamble=NCHW_INDEX, twin=_col2im_twin)


def _tap_sum_twin(grid, block, taps, y, n, o, h, wd, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw):
    n, o, h, wd, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw = map(int, (n, o, h, wd, oh, ow, kh, kw, sh, sw, pt, pl,
                                                                    dh, dw))
    check_flat_launch(grid, block, n * o * oh * ow)
    t6 = taps.reshape(n, kh, kw, o, h, wd)
    acc = np.zeros((n, o, oh, ow), np.float32)
    for ky in range(kh):
        oy0, oy1 = _valid_outputs(oh, sh, ky * dh - pt, h)
        for kx in range(kw):
            ox0, ox1 = _valid_outputs(ow, sw, kx * dw - pl, wd)
            if oy0 >= oy1 or ox0 >= ox1:
                continue
            iy, ix = oy0 * sh + ky * dh - pt, ox0 * sw + kx * dw - pl
            acc[:, :, oy0:oy1, ox0:ox1] += t6[:, ky, kx, :, iy: iy + (oy1 - oy0 - 1) * sh + 1: sh,
                                              ix: ix + (ox1 - ox0 - 1) * sw + 1: sw]
    y.reshape(n, o, oh, ow)[...] = acc


def _valid_outputs(outs, stride, shift, size):
    """The output positions [first, end) whose input position p * stride + shift lies in [0, size)."""
    first = -(shift // stride) if shift < 0 else 0  # ceil(-shift / stride)
    end = min(outs, max(0, -((shift - size) // stride)))  # ceil((size - shift) / stride)
    return first, max(first, end)


TAP_SUM = declare("kc_conv_tap_sum", RAW, r"""
extern "C" __global__ void kc_conv_tap_sum(const float* taps, float* y, int n, int o, int h, int wd, int oh, int ow,
                                           int kh, int kw, int sh, int sw, int pt, int pl, int dh, int dw) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n * o * oh * ow) return;
    kc_pixel out = kc_pixel_of(idx, oh, ow);
    int oc = out.plane % o, b = out.plane / o;
    long long plane = (long long)h * wd;
    float acc = 0.0f;
    for (int ky = 0; ky < kh; ++ky) {
        int iy = kc_tap_input(out.y, ky, sh, pt, dh, h);
        if (iy < 0) continue;
        for (int kx = 0; kx < kw; ++kx) {
            int ix = kc_tap_input(out.x, kx, sw, pl, dw, wd);
            if (ix < 0) continue;
            acc += taps[(((long long)b * kh * kw + ky * kw + kx) * o + oc) * plane + (long long)iy * wd + ix];
        }
    }
    y[idx] = acc;
}
""", preamble=NCHW_INDEX, twin=_tap_sum_twin)


def _geometry(x, w, attrs):
    """(strides, pads, dilations, output size) of a one-group NCHW convolution the kernel takes, or None."""
    geometry = nchw_geometry(x, w, attrs)
    if geometry is None or attrs["groups"] != 1 or w.shape[1] != x.shape[1]:
        return None
    if x.shape[0] * w[0].size * math.prod(geometry[3]) > MAX_INT32_ELEMENTS or x.size > MAX_INT32_ELEMENTS:
        return None
    return geometry


_plain_gate = grad_gate(_geometry)


def _plain_grad(ctx, ins, attrs):
    x, w, g = ins
    xp = ctx.xp
    strides, pads, dils, outs = _geometry(x, w, attrs)
    dx = dw = None
    if wanted(ctx, "Input@GRAD"):
        n, o = g.shape[:2]
        cols = xp.matmul(w.reshape(o, -1).T, g.reshape(n, o, -1))  # (n, Cin * taps, output positions)
        dx = xp.empty(x.shape, dtype=x.dtype)
        (sh, sw), ((pt, _), (pl, _)), (dh, dwid), (oh, ow) = strides, pads, dils, outs
        COL2IM.on(xp)(flat_blocks(dx.size), (FLAT_THREADS,), (xp.ascontiguousarray(cols), dx) + tuple(
            i32(v) for v in (*x.shape, oh, ow, w.shape[2], w.shape[3], sh, sw, pt, pl, dh, dwid)))
    if wanted(ctx, "Filter@GRAD"):
        dw = conv_filter_grad(xp, x, g, w.shape, strides, pads, dils, 1)
    return dx, dw


def _forward_gate(xp, ins, attrs):
    x, w = ins
    geometry = on_device(xp, x, w) and _geometry(x, w, attrs)
    if not geometry:
        return False
    (sh, sw), pads, _dils, outs = geometry
    n, c, h, wd = x.shape
    o, taps = w.shape[0], w.shape[2] * w.shape[3]
    if taps == 1 and (sh, sw) == (1, 1) and not any(lo or hi for lo, hi in pads):
        return False  # the reference multiplies the input itself: no copy to save
    products = n * taps * o * h * wd
    return products <= MAX_INT32_ELEMENTS and products <= 8 * n * c * taps * math.prod(outs)


def _plain_forward(ctx, ins, attrs):
    x, w = ins
    xp = ctx.xp
    (sh, sw), ((pt, _), (pl, _)), (dh, dwid), (oh, ow) = _geometry(x, w, attrs)
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    rows = xp.ascontiguousarray(w.transpose(2, 3, 0, 1)).reshape(kh * kw * o, c)
    taps = xp.matmul(rows, x.reshape(n, c, h * wd))  # (n, kh * kw * Cout, H * W)
    y = xp.empty((n, o, oh, ow), dtype=x.dtype)
    TAP_SUM.on(xp)(flat_blocks(y.size), (FLAT_THREADS,), (xp.ascontiguousarray(taps), y) + tuple(
        i32(v) for v in (n, o, h, wd, oh, ow, kh, kw, sh, sw, pt, pl, dh, dwid)))
    return (y,)


@fast_kernel("conv2d", lambda xp, ins, attrs: depthwise_forward_gate(xp, ins, attrs) or _forward_gate(xp, ins, attrs),
             place="gpu")
def conv2d(ctx, ins, attrs):
    if depthwise_forward_gate(ctx.xp, ins, attrs):
        return depthwise_forward(ctx, ins, attrs)
    return _plain_forward(ctx, ins, attrs)


@fast_kernel("conv2d_grad", lambda xp, ins, attrs: depthwise_grad_gate(xp, ins, attrs) or _plain_gate(xp, ins, attrs),
             place="gpu")
def conv2d_grad(ctx, ins, attrs):
    if depthwise_grad_gate(ctx.xp, ins, attrs):
        return depthwise_grad(ctx, ins, attrs)
    return _plain_grad(ctx, ins, attrs)
