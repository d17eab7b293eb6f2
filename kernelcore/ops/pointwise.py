"""Math on each element of one tensor, as Transformer/BERT programs and paddle.* tensor functions write it: abs,
sqrt, rsqrt, log, pow, clip and gelu (with the normal CDF it needs, which NumPy lacks); and log_softmax, the same
kind of op along one axis.
"""
from __future__ import annotations

import math

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._infer import normalize_axis, same_as

SQRT_HALF = 1.0 / math.sqrt(2.0)


ERFC_COEFFS = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587,
               -0.82215223, 0.17087277)


def erfc_nonnegative(xp, z):
    """erfc(z) for z >= 0, computed in place in z's buffer's dtype (z is consumed: pass a fresh array): Numerical
    Recipes' Chebyshev fit, fractional error below 1.2e-7."""
    t = z * 0.5
    t += 1
    xp.reciprocal(t, out=t)
    poly = t * ERFC_COEFFS[-1]  # Horner's rule in place: a fifth less time than with a temporary per step
    for c in ERFC_COEFFS[-2:0:-1]:
        poly += c
        poly *= t
    poly += ERFC_COEFFS[0]
    z *= z
    poly -= z
    r = xp.exp(poly, out=poly)
    r *= t
    return r


def normal_cdf(xp, x):
    """Phi(x) = erfc(-x / sqrt 2) / 2, the standard normal CDF, in x's dtype (NumPy has no erf). From
    h = Phi(-|x|) = erfc(|x| / sqrt 2) / 2, Phi(x) = 0.5 + copysign(0.5 - h, x): one sign pass with no mask
    (xp.where on a mask of random signs took 250 us of gelu's 600 on [8, 128, 64] float32). Below about -5.4
    (float32) Phi rounds to 0, as 1 + erf does in Paddle's float32 kernel."""
    z = xp.abs(x)
    z *= x.dtype.type(SQRT_HALF)
    h = erfc_nonnegative(xp, z)
    h *= 0.5
    xp.subtract(0.5, h, out=h)
    xp.copysign(h, x, out=h)
    h += 0.5
    return h.astype(x.dtype, copy=False)


def gelu_of(xp, x, approximate: bool):
    """x * Phi(x) (exact, via normal_cdf) or Paddle's tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    if approximate:
        inner = x.dtype.type(math.sqrt(2 / math.pi)) * (x + x.dtype.type(0.044715) * x * x * x)
        return x.dtype.type(0.5) * x * (1 + xp.tanh(inner))
    out = normal_cdf(xp, x)
    out *= x
    return out


# -- unary math -----------------------------------------------------------------------------------------
UNARY = {
    "abs": ("Out = |X|", lambda xp, x: xp.abs(x)),
    "sqrt": ("Out = sqrt(X)", lambda xp, x: xp.sqrt(x)),
    "rsqrt": ("Out = 1 / sqrt(X)", lambda xp, x: 1 / xp.sqrt(x)),
    "log": ("Out = ln(X)", lambda xp, x: xp.log(x)),
}

for _type, (_formula, _body) in UNARY.items():
    _d = register_op(_type, f"{_formula}, elementwise.", inputs=[In("X", "the input tensor")],
                     outputs=[Out("Out", "a tensor of X's shape and dtype")], infer_shape=same_as())

    def _k(ctx, ins, attrs, _body=_body):
        return (_body(ctx.xp, ins[0]),)
    _k.__name__ = _type
    _d.kernel()(_k)


GELU = register_op(
    "gelu", "Out = X * Phi(X), Phi the standard normal CDF: exactly (0.5 X (1 + erf(X / sqrt 2))), or with "
            "`approximate` Paddle's tanh form 0.5 X (1 + tanh(sqrt(2/pi) (X + 0.044715 X^3))).",
    inputs=[In("X", "the input tensor")], outputs=[Out("Out", "a tensor of X's shape and dtype")],
    attrs=[Attr("approximate", A.BOOLEAN, "use the tanh approximation", False)], infer_shape=same_as())


@GELU.kernel()
def gelu(ctx, ins, attrs):
    return (gelu_of(ctx.xp, ins[0], attrs["approximate"]),)


def _one_tensor_value(t, slot: str, dtype):
    """A one-element override tensor as a 0-d array of `dtype` (stays on the device)."""
    if t.size != 1:
        raise ValueError(f"{slot} must hold exactly one value, got shape {list(t.shape)}")
    return t.reshape(()).astype(dtype)


POW = register_op(
    "pow", "Out = X ^ factor, elementwise. FactorTensor (one element), when given, replaces `factor`.",
    inputs=[In("X", "the input tensor"),
            In("FactorTensor", "(one-element float tensor) the exponent; overrides `factor`", dispensable=True)],
    outputs=[Out("Out", "a tensor of X's shape and dtype")],
    attrs=[Attr("factor", A.FLOAT, "the exponent", 1.0)], infer_shape=same_as())


@POW.kernel()
def pow_(ctx, ins, attrs):
    x, ft = ins
    f = attrs["factor"] if ft is None else _one_tensor_value(ft, "FactorTensor", x.dtype)
    if x.dtype.kind in "iu" and ft is None:
        f = int(f) if float(f).is_integer() else f
    return (ctx.xp.power(x, f).astype(x.dtype, copy=False),)


pow_.__name__ = "pow"

CLIP = register_op(
    "clip", "Out = min(max(X, min), max), elementwise. The Min/Max tensors (one element each), when given, "
            "replace the attributes. min must not exceed max.",
    inputs=[In("X", "the input tensor"),
            In("Min", "(one element) the lower bound; overrides `min`", dispensable=True),
            In("Max", "(one element) the upper bound; overrides `max`", dispensable=True)],
    outputs=[Out("Out", "a tensor of X's shape and dtype")],
    attrs=[Attr("min", A.FLOAT, "the lower bound"), Attr("max", A.FLOAT, "the upper bound")],
    infer_shape=same_as())


def clip_bounds(x, mn_t, mx_t, attrs):
    lo = x.dtype.type(attrs["min"]) if mn_t is None else _one_tensor_value(mn_t, "Min", x.dtype)
    hi = x.dtype.type(attrs["max"]) if mx_t is None else _one_tensor_value(mx_t, "Max", x.dtype)
    return lo, hi


@CLIP.kernel()
def clip(ctx, ins, attrs):
    x, mn_t, mx_t = ins
    if mn_t is None and mx_t is None and attrs["min"] > attrs["max"]:
        raise ValueError(f"min ({attrs['min']}) must not be greater than max ({attrs['max']})")
    lo, hi = clip_bounds(x, mn_t, mx_t, attrs)
    return (ctx.xp.minimum(ctx.xp.maximum(x, lo), hi),)


def _infer_log_softmax(ic):
    x = ic.shape("X")
    if x:
        normalize_axis(ic.attr("axis"), len(x), ic)
    ic.set_output("Out", x, ic.dtype("X"))


LOG_SOFTMAX = register_op(
    "log_softmax", "Out = X - max - log(sum(exp(X - max))) along `axis`: the log of softmax, computed stably.",
    inputs=[In("X", "the input tensor (logits)")], outputs=[Out("Out", "log-probabilities, X's shape")],
    attrs=[Attr("axis", A.INT, "the dim to normalise over, in [-rank, rank)", -1)],
    infer_shape=_infer_log_softmax)


@LOG_SOFTMAX.kernel()
def log_softmax(ctx, ins, attrs):
    xp, x = ctx.xp, ins[0]
    if x.ndim == 0:
        return (xp.zeros_like(x),)
    axis = normalize_axis(attrs["axis"], x.ndim)
    s = x - x.max(axis=axis, keepdims=True)
    return (s - xp.log(xp.exp(s).sum(axis=axis, keepdims=True)),)
