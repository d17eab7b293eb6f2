"""Gradients of kernelcore/ops/unary_math.py. Each grad op reads X and Out@GRAD, as Paddle's do; rounding and sign
are flat almost everywhere, so their gradient is 0 (Paddle's too). The predicates have none."""
from __future__ import annotations

from ..ops.unary_math import LN10, LN2
from ..transforms.backward import no_grad, standard


def _zero(xp, x, g):
    return xp.zeros_like(g)


def _logit_grad(xp, x, g, a):
    eps = a["eps"]
    inside = (x >= eps) & (x <= 1 - eps) if eps > 0 else True
    return xp.where(inside, g / (x * (1 - x)), x.dtype.type(0))


def _stanh_grad(xp, x, g, a):
    t = xp.tanh(x * x.dtype.type(a["scale_a"]))
    return g * x.dtype.type(a["scale_a"] * a["scale_b"]) * (1 - t * t)


# op type -> (formula, body(xp, x, out_grad) -> X@GRAD)
GRADS = {
    "square": ("2 X Out@GRAD", lambda xp, x, g: g * x * 2),
    "reciprocal": ("-Out@GRAD / X^2", lambda xp, x, g: -g / (x * x)),
    "floor": ("0", _zero),
    "ceil": ("0", _zero),
    "trunc": ("0", _zero),
    "round": ("0", _zero),
    "sign": ("0", _zero),
    "cos": ("-sin(X) Out@GRAD", lambda xp, x, g: -g * xp.sin(x)),
    "sin": ("cos(X) Out@GRAD", lambda xp, x, g: g * xp.cos(x)),
    "tan": ("Out@GRAD / cos(X)^2", lambda xp, x, g: g / (xp.cos(x) * xp.cos(x))),
    "acos": ("-Out@GRAD / sqrt(1 - X^2)", lambda xp, x, g: -g / xp.sqrt(1 - x * x)),
    "asin": ("Out@GRAD / sqrt(1 - X^2)", lambda xp, x, g: g / xp.sqrt(1 - x * x)),
    "atan": ("Out@GRAD / (1 + X^2)", lambda xp, x, g: g / (1 + x * x)),
    "cosh": ("sinh(X) Out@GRAD", lambda xp, x, g: g * xp.sinh(x)),
    "sinh": ("cosh(X) Out@GRAD", lambda xp, x, g: g * xp.cosh(x)),
    "acosh": ("Out@GRAD / sqrt(X^2 - 1)", lambda xp, x, g: g / xp.sqrt(x * x - 1)),
    "asinh": ("Out@GRAD / sqrt(X^2 + 1)", lambda xp, x, g: g / xp.sqrt(x * x + 1)),
    "atanh": ("Out@GRAD / (1 - X^2)", lambda xp, x, g: g / (1 - x * x)),
    "log1p": ("Out@GRAD / (1 + X)", lambda xp, x, g: g / (1 + x)),
    "log2": ("Out@GRAD / (X ln 2)", lambda xp, x, g: g / (x * LN2)),
    "log10": ("Out@GRAD / (X ln 10)", lambda xp, x, g: g / (x * LN10)),
    "expm1": ("exp(X) Out@GRAD", lambda xp, x, g: g * xp.exp(x)),
}
# op type -> (formula, body(xp, x, out_grad, attrs) -> X@GRAD)
WITH_ATTRS = {
    "logit": ("Out@GRAD / (X (1 - X)), 0 where X was clipped", _logit_grad),
    "stanh": ("Out@GRAD scale_a scale_b (1 - tanh(scale_a X)^2)", _stanh_grad),
}

for _type, (_formula, _body) in {**GRADS, **WITH_ATTRS}.items():
    _d = standard(_type, ins=("X",), comment=f"The gradient of {_type}: X@GRAD = {_formula}.")
    _reads_attrs = _type in WITH_ATTRS

    def _k(ctx, ins, attrs, _body=_body, _reads_attrs=_reads_attrs):
        x, g = ins
        d = _body(ctx.xp, x, g, attrs) if _reads_attrs else _body(ctx.xp, x, g)
        return (d.astype(g.dtype, copy=False),)
    _k.__name__ = f"{_type}_grad"
    _d.kernel()(_k)

no_grad("isnan_v2", "isinf_v2", "isfinite_v2")
