"""Gradients of kernelcore/ops/fft.py: each transform's adjoint (the other sign, the same scale), with a
onesided spectrum's dropped half taken as zeros (r2c) or its mirrored half counted (c2r)."""
from __future__ import annotations

import math

from ..ops.fft import c2r_size, fft_axes, fft_scale, unscaled
from ..transforms.backward import standard

FFT_C2C_GRAD = standard("fft_c2c", ins=("X",), comment="X@GRAD = the transform of the other sign, same scale.")


@FFT_C2C_GRAD.kernel()
def fft_c2c_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, g = ins
    axes = fft_axes(x, attrs)
    n = math.prod(x.shape[a] for a in axes)
    adj = unscaled(xp, g, axes, not attrs["forward"])
    return ((adj * fft_scale(attrs["normalization"], n, attrs["forward"])).astype(x.dtype),)


FFT_R2C_GRAD = standard("fft_r2c", ins=("X",), comment="X@GRAD = real(the other-sign transform of Out@GRAD, zero-"
                                                       "padded to the full last axis), same scale.")


@FFT_R2C_GRAD.kernel()
def fft_r2c_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, g = ins
    axes = fft_axes(x, attrs)
    if attrs["onesided"]:
        last = axes[-1]
        pad = [(0, 0)] * g.ndim
        pad[last] = (0, x.shape[last] - g.shape[last])
        g = xp.pad(g, pad)
    n = math.prod(x.shape[a] for a in axes)
    adj = unscaled(xp, g, axes, not attrs["forward"])
    return ((xp.real(adj) * fft_scale(attrs["normalization"], n, attrs["forward"])).astype(x.dtype),)


FFT_C2R_GRAD = standard("fft_c2r", ins=("X",), comment="X@GRAD = the onesided other-sign transform of Out@GRAD, "
                                                       "same scale, the bins that stand for two doubled.")


@FFT_C2R_GRAD.kernel()
def fft_c2r_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, g = ins
    axes = fft_axes(x, attrs)
    last = axes[-1]
    sizes = [x.shape[a] for a in axes[:-1]] + [c2r_size(x, axes, attrs)]
    n = math.prod(sizes)
    full = unscaled(xp, g.astype(x.dtype), axes, not attrs["forward"])
    half = xp.take(full, xp.arange(x.shape[last]), axis=last)
    m = x.shape[last]
    weight = xp.full(m, 2.0)
    weight[0] = 1.0
    if sizes[-1] % 2 == 0 and m - 1 == sizes[-1] // 2:
        weight[m - 1] = 1.0
    shape = [1] * x.ndim
    shape[last] = m
    return ((half * weight.reshape(shape) * fft_scale(attrs["normalization"], n, attrs["forward"])).astype(x.dtype),)
