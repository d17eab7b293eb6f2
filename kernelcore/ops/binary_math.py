"""Elementwise functions of two tensors (numpy broadcasting): atan2, fmax / fmin (NaN-ignoring max / min),
copysign and heaviside."""
from __future__ import annotations

from ..ir.registry import In, Out, register_op

# op type -> (input slots, output slot, formula, body(xp, x, y))
BINARY = {
    "atan2": (("X1", "X2"), "Out", "Out = atan2(X1, X2), the angle of (X2, X1)", lambda xp, x, y: xp.arctan2(x, y)),
    "elementwise_fmax": (("X", "Y"), "Out", "Out = max(X, Y), the other where one is NaN",
                         lambda xp, x, y: xp.fmax(x, y)),
    "elementwise_fmin": (("X", "Y"), "Out", "Out = min(X, Y), the other where one is NaN",
                         lambda xp, x, y: xp.fmin(x, y)),
    "copysign": (("x", "y"), "out", "out = |x| with y's sign", lambda xp, x, y: xp.copysign(x, y)),
    "elementwise_heaviside": (("X", "Y"), "Out", "Out = 0 where X < 0, Y where X == 0, 1 where X > 0",
                              lambda xp, x, y: xp.heaviside(x, y)),
}


def _register(op_type, slots, out_slot, formula, body):
    d = register_op(op_type, f"{formula}; the operands broadcast together.",
                    inputs=[In(slots[0], "the first operand"), In(slots[1], "the second operand")],
                    outputs=[Out(out_slot, "the broadcast shape, the first operand's dtype")])

    def kernel(ctx, ins, attrs):
        x, y = ins
        return (body(ctx.xp, x, y).astype(x.dtype, copy=False),)
    kernel.__name__ = op_type
    d.kernel()(kernel)


for _type, (_slots, _out, _formula, _body) in BINARY.items():
    _register(_type, _slots, _out, _formula, _body)
