"""Elementwise math Paddle writes as ops of their own: powers, rounding, sign, trigonometry, logarithms and the
NaN/Inf predicates. One table row per op (formula, attributes, body(xp, x, attrs)); one body serves NumPy and CuPy.

Constants meet X as Python scalars, so float32 stays float32 (NEP 50).
"""
from __future__ import annotations

import math

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._infer import same_as


def round_half_away(xp, x, attrs):
    """Paddle rounds halves away from zero (std::round), NumPy to even; `decimals` scales first, as Paddle does."""
    if x.dtype.kind != "f":
        return x.copy()
    scale = 10.0 ** attrs["decimals"]
    scaled = x * x.dtype.type(scale) if attrs["decimals"] else x
    rounded = xp.sign(scaled) * xp.floor(xp.abs(scaled) + x.dtype.type(0.5))
    return rounded / x.dtype.type(scale) if attrs["decimals"] else rounded


def logit_of(xp, x, eps: float):
    if eps > 0:
        x = xp.clip(x, x.dtype.type(eps), x.dtype.type(1 - eps))
    return xp.log(x / (1 - x))


# op type -> (formula, attrs, body(xp, x, attrs))
FLOAT_OUT = {
    "square": ("Out = X * X", [], lambda xp, x, a: x * x),
    "reciprocal": ("Out = 1 / X", [], lambda xp, x, a: 1 / x),
    "floor": ("Out = floor(X)", [], lambda xp, x, a: xp.floor(x)),
    "ceil": ("Out = ceil(X)", [], lambda xp, x, a: xp.ceil(x)),
    "trunc": ("Out = X rounded toward zero", [], lambda xp, x, a: xp.trunc(x) if x.dtype.kind == "f" else x.copy()),
    "round": ("Out = X rounded to `decimals` places, halves away from zero",
              [Attr("decimals", A.INT, "the decimal places kept", 0)], round_half_away),
    "sign": ("Out = -1, 0 or 1 by X's sign", [], lambda xp, x, a: xp.sign(x)),
    "cos": ("Out = cos(X)", [], lambda xp, x, a: xp.cos(x)),
    "sin": ("Out = sin(X)", [], lambda xp, x, a: xp.sin(x)),
    "tan": ("Out = tan(X)", [], lambda xp, x, a: xp.tan(x)),
    "acos": ("Out = arccos(X)", [], lambda xp, x, a: xp.arccos(x)),
    "asin": ("Out = arcsin(X)", [], lambda xp, x, a: xp.arcsin(x)),
    "atan": ("Out = arctan(X)", [], lambda xp, x, a: xp.arctan(x)),
    "cosh": ("Out = cosh(X)", [], lambda xp, x, a: xp.cosh(x)),
    "sinh": ("Out = sinh(X)", [], lambda xp, x, a: xp.sinh(x)),
    "acosh": ("Out = arccosh(X)", [], lambda xp, x, a: xp.arccosh(x)),
    "asinh": ("Out = arcsinh(X)", [], lambda xp, x, a: xp.arcsinh(x)),
    "atanh": ("Out = arctanh(X)", [], lambda xp, x, a: xp.arctanh(x)),
    "log1p": ("Out = ln(1 + X)", [], lambda xp, x, a: xp.log1p(x)),
    "log2": ("Out = log2(X)", [], lambda xp, x, a: xp.log2(x)),
    "log10": ("Out = log10(X)", [], lambda xp, x, a: xp.log10(x)),
    "expm1": ("Out = exp(X) - 1", [], lambda xp, x, a: xp.expm1(x)),
    "logit": ("Out = log(X / (1 - X)), X first clipped to [eps, 1 - eps] where eps > 0",
              [Attr("eps", A.FLOAT, "the clip bound (0: no clip)", 1e-6)], lambda xp, x, a: logit_of(xp, x, a["eps"])),
    "stanh": ("Out = scale_b * tanh(scale_a * X)",
              [Attr("scale_a", A.FLOAT, "X's scale", 0.67), Attr("scale_b", A.FLOAT, "Out's scale", 1.7159)],
              lambda xp, x, a: x.dtype.type(a["scale_b"]) * xp.tanh(x * x.dtype.type(a["scale_a"]))),
}

# op type -> (formula, body(xp, x)); Out is bool
PREDICATES = {
    "isnan_v2": ("Out = X is NaN", lambda xp, x: xp.isnan(x)),
    "isinf_v2": ("Out = X is +-Inf", lambda xp, x: xp.isinf(x)),
    "isfinite_v2": ("Out = X is neither NaN nor +-Inf", lambda xp, x: xp.isfinite(x)),
}


def _infer_bool(ic):
    ic.set_output("Out", ic.shape("X"), "bool")


def _register(op_type, comment, attrs, infer, body):
    d = register_op(op_type, comment, inputs=[In("X", "the input tensor")],
                    outputs=[Out("Out", "a tensor of X's shape")], attrs=attrs, infer_shape=infer)

    def kernel(ctx, ins, attrs):
        return (body(ctx.xp, ins[0], attrs),)
    kernel.__name__ = op_type
    d.kernel()(kernel)


for _type, (_formula, _attrs, _body) in FLOAT_OUT.items():
    _register(_type, f"{_formula}, elementwise; X's dtype.", _attrs, same_as(), _body)

for _type, (_formula, _body) in PREDICATES.items():
    _register(_type, f"{_formula}, elementwise; a bool tensor.", [], _infer_bool,
              lambda xp, x, a, _body=_body: _body(xp, x))

LN2, LN10 = math.log(2.0), math.log(10.0)
