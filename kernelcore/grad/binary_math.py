"""Gradients of kernelcore/ops/binary_math.py, each operand's summed back to its shape."""
from __future__ import annotations

from .math import unbroadcast
from ..transforms.backward import standard, wanted


def _atan2(xp, x, y, g):
    r2 = x * x + y * y
    return g * y / r2, -g * x / r2


def _fmax(xp, x, y, g):
    pick_x = (x >= y) | xp.isnan(y)
    return g * pick_x, g * ~pick_x


def _fmin(xp, x, y, g):
    pick_x = (x <= y) | xp.isnan(y)
    return g * pick_x, g * ~pick_x


def _copysign(xp, x, y, g):
    return g * xp.sign(x) * xp.where(xp.signbit(y), -1, 1).astype(g.dtype), xp.zeros_like(g)


def _heaviside(xp, x, y, g):
    return xp.zeros_like(g), g * (x == 0)


# op type -> (input slots, output slot, formula, body(xp, x, y, out_grad) -> (dx, dy) in the broadcast shape)
GRADS = {
    "atan2": (("X1", "X2"), "Out", "X1@GRAD = G X2 / (X1^2 + X2^2), X2@GRAD = -G X1 / (X1^2 + X2^2)", _atan2),
    "elementwise_fmax": (("X", "Y"), "Out", "G to whichever operand fmax picked", _fmax),
    "elementwise_fmin": (("X", "Y"), "Out", "G to whichever operand fmin picked", _fmin),
    "copysign": (("x", "y"), "out", "x@GRAD = G sign(x) sign(y), y@GRAD = 0", _copysign),
    "elementwise_heaviside": (("X", "Y"), "Out", "X@GRAD = 0, Y@GRAD = G where X == 0", _heaviside),
}


def _back_to(t, shape, dtype):
    aligned = (1,) * (t.ndim - len(shape)) + tuple(shape)
    return unbroadcast(t, aligned, tuple(shape)).astype(dtype, copy=True)


def _register(op_type, slots, out_slot, formula, body):
    d = standard(op_type, ins=slots, out_grads=(out_slot,), in_grads=slots,
                 comment=f"The gradient of {op_type}: {formula}.")

    def kernel(ctx, ins, attrs):
        x, y, g = ins
        dx, dy = body(ctx.xp, x, y, g)
        return (_back_to(dx, x.shape, x.dtype) if wanted(ctx, slots[0] + "@GRAD") else None,
                _back_to(dy, y.shape, y.dtype) if wanted(ctx, slots[1] + "@GRAD") else None)
    kernel.__name__ = f"{op_type}_grad"
    d.kernel()(kernel)


for _type, (_slots, _out, _formula, _body) in GRADS.items():
    _register(_type, _slots, _out, _formula, _body)
