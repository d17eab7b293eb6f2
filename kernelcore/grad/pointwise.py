"""Gradients of kernelcore/ops/pointwise.py, with the slots Paddle 2.6.2's backward writes (recorded by
tests/paddle_oracle/make_transformer_models.py; see NOTES.md): abs, sqrt, rsqrt, log, gelu, pow, clip, log_softmax.
"""
from __future__ import annotations

import math

from ..ops.pointwise import clip_bounds, normal_cdf
from ..transforms.backward import standard

# -- unary: op type -> (reads, formula, body(xp, t, g, attrs) -> X@GRAD), t = X or Out as `reads` says -----
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu_grad(xp, x, g, attrs):
    t = x.dtype.type
    if attrs["approximate"]:
        k, c = t(math.sqrt(2 / math.pi)), t(0.044715)
        th = xp.tanh(k * (x + c * x * x * x))
        return g * (t(0.5) * (1 + th) + t(0.5) * x * (1 - th * th) * k * (1 + 3 * c * x * x))
    d = x * x  # Phi(x) + x phi(x), in place on fresh arrays of ours
    d *= t(-0.5)
    xp.exp(d, out=d)
    d *= t(INV_SQRT_2PI)
    d *= x
    d += normal_cdf(xp, x)
    d *= g
    return d


UNARY = {
    "abs": ("X", "Out@GRAD * sign(X)", lambda xp, x, g, a: g * xp.sign(x)),
    "sqrt": ("Out", "Out@GRAD * 0.5 / Out", lambda xp, out, g, a: g * out.dtype.type(0.5) / out),
    "rsqrt": ("Out", "Out@GRAD * -0.5 * Out^3", lambda xp, out, g, a: g * out.dtype.type(-0.5) * out * out * out),
    "log": ("X", "Out@GRAD / X", lambda xp, x, g, a: g / x),
    "gelu": ("X", "Out@GRAD * (Phi(X) + X phi(X)) (exact), or the derivative of the tanh form", _gelu_grad),
}

for _type, (_reads, _formula, _body) in UNARY.items():
    _d = standard(_type, ins=("X",) if _reads == "X" else (), outs=("Out",) if _reads == "Out" else (),
                  infer_from={"X@GRAD": (_reads, False)}, comment=f"The gradient of {_type}: X@GRAD = {_formula}.")

    def _k(ctx, ins, attrs, _body=_body):
        t, g = ins
        return (_body(ctx.xp, t, g, attrs).astype(g.dtype, copy=False),)
    _k.__name__ = f"{_type}_grad"
    _d.kernel()(_k)


POW_GRAD = standard("pow", ins=("X", "FactorTensor"), comment="X@GRAD = Out@GRAD * factor * X^(factor - 1).")


@POW_GRAD.kernel()
def pow_grad(ctx, ins, attrs):
    x, ft, g = ins
    f = attrs["factor"] if ft is None else ft.reshape(()).astype(x.dtype)
    return ((g * f * ctx.xp.power(x, f - 1)).astype(x.dtype, copy=False),)


CLIP_GRAD = standard("clip", ins=("X", "Min", "Max"),
                     comment="X@GRAD = Out@GRAD where min < X < max, else 0 (Paddle's strict bounds).")


@CLIP_GRAD.kernel()
def clip_grad(ctx, ins, attrs):
    x, mn_t, mx_t, g = ins
    lo, hi = clip_bounds(x, mn_t, mx_t, attrs)
    return (ctx.xp.where((x > lo) & (x < hi), g, g.dtype.type(0)),)


LOG_SOFTMAX_GRAD = standard("log_softmax", outs=("Out",), infer_from={"X@GRAD": ("Out", False)},
                            comment="X@GRAD = Out@GRAD - exp(Out) * sum(Out@GRAD along `axis`).")


@LOG_SOFTMAX_GRAD.kernel()
def log_softmax_grad(ctx, ins, attrs):
    out, g = ins
    if out.ndim == 0:
        return (ctx.xp.zeros_like(g),)
    axis = attrs["axis"]
    return (g - ctx.xp.exp(out) * g.sum(axis=axis, keepdims=True),)
