"""Gradients of kernelcore/ops/elementwise_binary.py, with the slots Paddle 2.6.2's backward writes: elementwise
max, min and pow. mod and the logical and bitwise ops have none.
"""
from __future__ import annotations

from ..ops.math import align
from ..transforms.backward import no_grad, standard, wanted
from .math import unbroadcast

# -- elementwise max/min/pow -----------------------------------------------------------------------------
def _binary_grads(dx_of, dy_of):
    def kernel(ctx, ins, attrs):
        x, y, g = ins
        xp = ctx.xp
        xa, ya = align(xp, x, y, attrs["axis"]) if attrs["axis"] != -1 else (x, y)
        dx = unbroadcast(xp.broadcast_to(dx_of(xp, xa, ya, g), g.shape), xa.shape, x.shape) \
            if wanted(ctx, "X@GRAD") else None
        dy = unbroadcast(xp.broadcast_to(dy_of(xp, xa, ya, g), g.shape), ya.shape, y.shape) \
            if wanted(ctx, "Y@GRAD") else None
        return (None if dx is None else dx.astype(x.dtype, copy=False),
                None if dy is None else dy.astype(y.dtype, copy=False))
    return kernel


BINARY = {
    "elementwise_max": ("Out@GRAD where X > Y", "Out@GRAD where X <= Y",
                        lambda xp, x, y, g: g * (x > y), lambda xp, x, y, g: g * (x <= y)),
    "elementwise_min": ("Out@GRAD where X < Y", "Out@GRAD where X >= Y",
                        lambda xp, x, y, g: g * (x < y), lambda xp, x, y, g: g * (x >= y)),
    "elementwise_pow": ("Out@GRAD * Y * X^(Y-1)", "Out@GRAD * X^Y * ln(X)",
                        lambda xp, x, y, g: g * y * xp.power(x, y - 1),
                        lambda xp, x, y, g: g * xp.power(x, y) * xp.log(x)),
}

for _type, (_fx, _fy, _dx, _dy) in BINARY.items():
    _d = standard(_type, ins=("X", "Y"), in_grads=("X", "Y"),
                  comment=f"X@GRAD = {_fx}, Y@GRAD = {_fy}, each summed over the dims its operand was broadcast "
                          f"along.")
    _k = _binary_grads(_dx, _dy)
    _k.__name__ = f"{_type}_grad"
    _d.kernel()(_k)


no_grad("logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
        "elementwise_mod")
