"""Activations: one table row per op; one kernel body serves NumPy and CuPy."""
from __future__ import annotations

from ..registry import In, Out, register_op
from ._infer import same_as


def _sigmoid(xp, x):
    return 1 / (1 + xp.exp(-x))


def _softmax_last(xp, x):
    e = xp.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# op type -> (formula for the OpProto comment, body(xp, x))
UNARY = {
    "relu": ("Out = max(X, 0)", lambda xp, x: xp.maximum(x, 0)),
    "sigmoid": ("Out = 1 / (1 + exp(-X))", _sigmoid),
    "tanh": ("Out = tanh(X)", lambda xp, x: xp.tanh(x)),
    "exp": ("Out = exp(X)", lambda xp, x: xp.exp(x)),
}


def _unary_kernel(body):
    def kernel(ctx, ins, attrs):
        return (body(ctx.xp, ins[0]),)
    return kernel


for _type, (_formula, _body) in UNARY.items():
    _d = register_op(_type, f"{_type} activation: {_formula}, elementwise.",
                     inputs=[In("X", "the input tensor")], outputs=[Out("Out", "a tensor of X's shape")],
                     infer_shape=same_as())
    _k = _unary_kernel(_body)
    _k.__name__ = _type
    _d.kernel()(_k)
