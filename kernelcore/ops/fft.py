"""Discrete Fourier transforms as Paddle's three fft ops write them: fft_c2c (complex to complex), fft_r2c (real
to complex; onesided keeps the last axis' non-negative frequencies) and fft_c2r (a onesided spectrum back to a real
signal of last_dim_size along the last axis). `forward` picks the exponent's sign (e^-i... forward); the scale is
1/n where normalization names this direction ('forward' on a forward transform, 'backward' on an inverse one),
1/sqrt(n) for 'ortho', else 1."""
from __future__ import annotations

import math

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, one_of, register_op
from ._infer import normalize_axis
from .complex_parts import complex_dtype, complex_vt, real_vt


def fft_scale(normalization: str, n: int, forward: bool) -> float:
    if normalization == "ortho":
        return 1 / math.sqrt(n)
    if (normalization == "forward") == forward:
        return 1 / n
    return 1.0


def fft_axes(x, attrs):
    return [normalize_axis(a, x.ndim) for a in attrs["axes"]]


def unscaled(xp, x, axes, forward: bool):
    """sum of x exp(-+ 2 pi i k n / N) over `axes`, unscaled (- forward)."""
    if forward:
        return xp.fft.fftn(x, axes=axes)
    return xp.fft.ifftn(x, axes=axes) * math.prod(x.shape[a] for a in axes)


def transform(xp, x, axes, forward: bool, normalization: str):
    """The full complex transform over `axes` with Paddle's sign and scale."""
    return unscaled(xp, x, axes, forward) * fft_scale(normalization, math.prod(x.shape[a] for a in axes), forward)


def _attrs(extra):
    return [Attr("axes", A.LONGS, "the transformed dims"),
            Attr("normalization", A.STRING, "'backward', 'forward' or 'ortho'", "backward",
                 checks=(one_of("backward", "forward", "ortho"),)),
            Attr("forward", A.BOOLEAN, "the forward transform (e^-i...)", True), *extra]


FFT_C2C = register_op("fft_c2c", "Out = the DFT of X over `axes`.", inputs=[In("X", "complex")],
                      outputs=[Out("Out", "X's shape, complex")], attrs=_attrs([]))
FFT_R2C = register_op("fft_r2c", "Out = the DFT of a real X over `axes` (onesided: the last axis' first n // 2 + 1).",
                      inputs=[In("X", "real")], outputs=[Out("Out", "complex")],
                      attrs=_attrs([Attr("onesided", A.BOOLEAN, "keep only non-negative frequencies", True)]))
FFT_C2R = register_op("fft_c2r", "Out = the real signal whose onesided spectrum is X over `axes`.",
                      inputs=[In("X", "complex, onesided along the last axis")], outputs=[Out("Out", "real")],
                      attrs=_attrs([Attr("last_dim_size", A.LONG, "the output's last axis (0: 2 (m - 1))", 0)]))


@FFT_C2C.kernel()
def fft_c2c(ctx, ins, attrs):
    x = ins[0]
    return (transform(ctx.xp, x, fft_axes(x, attrs), attrs["forward"], attrs["normalization"]).astype(x.dtype),)


@FFT_R2C.kernel()
def fft_r2c(ctx, ins, attrs):
    xp = ctx.xp
    x = ins[0]
    axes = fft_axes(x, attrs)
    out = transform(xp, x, axes, attrs["forward"], attrs["normalization"])
    if attrs["onesided"]:
        last = axes[-1]
        out = xp.take(out, xp.arange(x.shape[last] // 2 + 1), axis=last)
    return (out.astype(complex_dtype(xp, x.dtype)),)


def c2r_size(x, axes, attrs):
    return attrs["last_dim_size"] or 2 * (x.shape[axes[-1]] - 1)


@FFT_C2R.kernel()
def fft_c2r(ctx, ins, attrs):
    xp = ctx.xp
    x = ins[0]
    axes = fft_axes(x, attrs)
    sizes = [x.shape[a] for a in axes[:-1]] + [c2r_size(x, axes, attrs)]
    n = math.prod(sizes)
    spectrum = xp.conj(x) if attrs["forward"] else x  # a real signal: the forward sign is the conjugate's inverse
    out = xp.fft.irfftn(spectrum, s=sizes, axes=axes) * n * fft_scale(attrs["normalization"], n, attrs["forward"])
    return (out.astype(xp.real(x).dtype),)


def _infer_fft(out_dtype, last_size):
    def infer(ic):
        shape = list(ic.shape("X"))
        axes = [a + len(shape) if a < 0 else a for a in ic.attr("axes")]
        if axes and shape[axes[-1]] >= 0:
            shape[axes[-1]] = last_size(ic, shape[axes[-1]])
        ic.set_output("Out", shape, out_dtype(ic.dtype("X")))
    return infer


FFT_C2C.infer_shape = _infer_fft(lambda d: d, lambda ic, n: n)
FFT_R2C.infer_shape = _infer_fft(complex_vt, lambda ic, n: n // 2 + 1 if ic.attr("onesided") else n)
FFT_C2R.infer_shape = _infer_fft(real_vt, lambda ic, n: ic.attr("last_dim_size") or 2 * (n - 1))
