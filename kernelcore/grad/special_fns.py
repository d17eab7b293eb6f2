"""Gradients of kernelcore/ops/special_fns.py: each derivative is another function of the family."""
from __future__ import annotations

import math

from ..ops.special_fns import bessel_i0, bessel_i1, bessel_scaled, digamma_of, polygamma_of
from ..transforms.backward import standard


def _i1_over_x(xp, x):
    """I1(x) / x, 1/2 at 0."""
    return xp.where(x == 0, 0.5, bessel_i1(xp, x) / xp.where(x == 0, 1.0, x))


def _i1e_over_x(xp, x):
    return xp.where(x == 0, 0.5, xp.sign(x) * bessel_scaled(xp, x, 1) / xp.where(x == 0, 1.0, x))


# op type -> (slots (in, out), what the grad op reads besides the out gradient, formula, body(xp, t, attrs) ->
# d out / d in, t the input (or, for erfinv, the output) in float64)
GRADS = {
    "lgamma": (("X", "Out"), "in", "digamma(X)", lambda xp, x, a: digamma_of(xp, x)),
    "gammaln": (("x", "out"), "in", "digamma(x)", lambda xp, x, a: digamma_of(xp, x)),
    "digamma": (("X", "Out"), "in", "polygamma(1, X)", lambda xp, x, a: polygamma_of(xp, 1, x)),
    "polygamma": (("x", "out"), "in", "polygamma(n + 1, x)", lambda xp, x, a: polygamma_of(xp, a["n"] + 1, x)),
    "erf": (("X", "Out"), "in", "2 / sqrt(pi) exp(-X^2)",
            lambda xp, x, a: 2 / math.sqrt(math.pi) * xp.exp(-x * x)),
    "erfinv": (("X", "Out"), "out", "sqrt(pi) / 2 exp(Out^2)", lambda xp, y, a: math.sqrt(math.pi) / 2 * xp.exp(y * y)),
    "i0": (("x", "out"), "in", "I1(x)", lambda xp, x, a: bessel_i1(xp, x)),
    "i0e": (("x", "out"), "in", "i1e(x) - sign(x) i0e(x)",
            lambda xp, x, a: xp.sign(x) * (bessel_scaled(xp, x, 1) - bessel_scaled(xp, x, 0))),
    "i1": (("x", "out"), "in", "I0(x) - I1(x) / x", lambda xp, x, a: bessel_i0(xp, x) - _i1_over_x(xp, x)),
    "i1e": (("x", "out"), "in", "i0e(x) - i1e(x) (sign(x) + 1 / x)",
            lambda xp, x, a: bessel_scaled(xp, x, 0) - xp.abs(bessel_scaled(xp, x, 1)) - _i1e_over_x(xp, x)),
}


def _register(op_type, slots, reads, formula, body):
    x_slot, out_slot = slots
    d = standard(op_type, ins=(x_slot,) if reads == "in" else (), outs=(out_slot,) if reads == "out" else (),
                 out_grads=(out_slot,), in_grads=(x_slot,),
                 infer_from={f"{x_slot}@GRAD": (x_slot if reads == "in" else out_slot, False)},
                 comment=f"The gradient of {op_type}: {x_slot}@GRAD = {out_slot}@GRAD * {formula}.")

    def kernel(ctx, ins, attrs):
        t, g = ins
        return ((g * body(ctx.xp, t.astype(ctx.xp.float64), attrs)).astype(g.dtype),)
    kernel.__name__ = f"{op_type}_grad"
    d.kernel()(kernel)


for _type, (_slots, _reads, _formula, _body) in GRADS.items():
    _register(_type, _slots, _reads, _formula, _body)
