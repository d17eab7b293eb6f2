"""Gradients of the activations (kernelcore/ops/activation.py). As in Paddle, relu's, sigmoid's, tanh's, exp's and
softmax's grad ops read the forward output Out rather than X: each of these derivatives is a function of Out; the
vision models' activations read what Paddle's grad makers pick (X, Out or both)."""
from __future__ import annotations

from ..ops.activation import sigmoid
from ..ops.math import SUM_BY_PRODUCT_DTYPES
from ..transforms.backward import standard


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


# ---------------------------------------------------------------------------
# activations: X@GRAD = Out@GRAD * f'(X)
# ---------------------------------------------------------------------------
def _c(x, v):
    return x.dtype.type(v)


def _d_softplus(xp, x, beta, threshold):
    bx = x * _c(x, beta)
    return xp.where(bx > _c(x, threshold), _c(x, 1), sigmoid(xp, xp.minimum(bx, _c(x, threshold))))


def _d_mish(xp, x, a):
    t = _c(x, a["threshold"])
    sp = xp.where(x > t, x, xp.log1p(xp.exp(xp.minimum(x, t))))
    th = xp.tanh(sp)
    return th + x * (1 - th * th) * _d_softplus(xp, x, 1.0, a["threshold"])


def _d_hard_swish(xp, x, a):
    off, thr, sc = _c(x, a["offset"]), _c(x, a["threshold"]), _c(x, a["scale"])
    inner = x + off
    return xp.where(inner <= 0, _c(x, 0), xp.where(inner >= thr, thr / sc, (2 * x + off) / sc))


# X@GRAD = Out@GRAD * f'(X), the grad op reading X (Paddle's slots for these)
DERIVATIVES = {
    "leaky_relu": lambda xp, x, a: xp.where(x >= 0, _c(x, 1), _c(x, a["alpha"])),
    "hard_swish": _d_hard_swish,
    "swish": lambda xp, x, a: (lambda s: s + _c(x, a["beta"]) * x * s * (1 - s))(
        sigmoid(xp, x * _c(x, a["beta"]))),
    "softplus": lambda xp, x, a: _d_softplus(xp, x, a["beta"], a["threshold"]),
    "mish": _d_mish,
    "brelu": lambda xp, x, a: ((x > _c(x, a["t_min"])) & (x < _c(x, a["t_max"]))).astype(x.dtype),
    "celu": lambda xp, x, a: xp.where(x > 0, _c(x, 1), xp.exp(xp.minimum(x, _c(x, 0)) / _c(x, a["alpha"]))),
    # sigmoid(-X) as 0.5 * (1 - tanh(X / 2)): no overflow for large |X|
    "logsigmoid": lambda xp, x, a: _c(x, 0.5) * (1 - xp.tanh(x * _c(x, 0.5))),
    "softsign": lambda xp, x, a: 1 / ((1 + xp.abs(x)) * (1 + xp.abs(x))),
    "tanh_shrink": lambda xp, x, a: xp.tanh(x) * xp.tanh(x),
    "hard_shrink": lambda xp, x, a: (xp.abs(x) > _c(x, a["threshold"])).astype(x.dtype),
    "softshrink": lambda xp, x, a: (xp.abs(x) > _c(x, a["lambda"])).astype(x.dtype),
    "thresholded_relu": lambda xp, x, a: (x > _c(x, a["threshold"])).astype(x.dtype),
}
# the same, where Paddle's grad op reads both X and Out (the derivative is taken from X)
DERIVATIVES_READING_OUT_TOO = {
    "elu": lambda xp, x, a: xp.where(x > 0, _c(x, 1), _c(x, a["alpha"]) * xp.exp(xp.minimum(x, _c(x, 0)))),
    "silu": lambda xp, x, a: (lambda s: s * (1 + x * (1 - s)))(sigmoid(xp, x)),
}
# X@GRAD = Out@GRAD * f'(X) written as a function of Out, the grad op reading Out only (Paddle's slots)
OUT_DERIVATIVES = {
    "relu6": lambda xp, out, a: ((out > 0) & (out < _c(out, a["threshold"]))).astype(out.dtype),
    "hard_sigmoid": lambda xp, out, a: ((out > 0) & (out < 1)).astype(out.dtype) * _c(out, a["slope"]),
    # Out > 0: scale; else Out = scale * alpha * (exp(X) - 1), whose derivative is Out + scale * alpha
    "selu": lambda xp, out, a: xp.where(out > 0, _c(out, a["scale"]), out + _c(out, a["scale"] * a["alpha"])),
}


def _act_kernel(deriv, reads_out_too=False):
    def kernel(ctx, ins, attrs):
        x, g = (ins[0], ins[2]) if reads_out_too else ins
        return (g * deriv(ctx.xp, x, attrs),)
    return kernel


for _table, _slots in ((DERIVATIVES, dict(ins=("X",))), (DERIVATIVES_READING_OUT_TOO, dict(ins=("X",), outs=("Out",))),
                       (OUT_DERIVATIVES, dict(outs=("Out",), infer_from={"X@GRAD": ("Out", False)}))):
    for _t, _deriv in _table.items():
        _reads = " and ".join(_slots.get("ins", ()) + _slots.get("outs", ()))
        _d = standard(_t, comment=f"The gradient of {_t}: X@GRAD = Out@GRAD * {_t}'(X), as Paddle's {_t}_grad "
                                  f"computes it (reading {_reads}).", **_slots)
        _k = _act_kernel(_deriv, _table is DERIVATIVES_READING_OUT_TOO)
        _k.__name__ = f"{_t}_grad"
        _d.kernel()(_k)


MAXOUT_GRAD = standard("maxout", ins=("X",), outs=("Out",),
                       comment="The gradient of maxout: each Out@GRAD element goes to the first channel of its run "
                               "that holds the maximum (Paddle's order).")


@MAXOUT_GRAD.kernel()
def maxout_grad(ctx, ins, attrs):
    from ..ops.activation import maxout_geometry, maxout_runs
    xp = ctx.xp
    x, out, g = ins
    groups = attrs["groups"]
    axis = maxout_geometry(x.shape, groups, attrs["axis"])
    runs = maxout_runs(x, groups, axis)
    first = xp.argmax(runs == xp.expand_dims(out, axis + 1), axis=axis + 1)  # the first maximum of each run
    hit = xp.expand_dims(first, axis + 1) == xp.arange(groups).reshape((groups,) + (1,) * (x.ndim - axis - 1))
    return ((hit * xp.expand_dims(g, axis + 1)).astype(g.dtype).reshape(x.shape),)


PRELU_GRAD = standard("prelu", ins=("X", "Alpha"), in_grads=("X", "Alpha"),
                      comment="The gradient of prelu: X@GRAD = Out@GRAD where X > 0, else Alpha * Out@GRAD; "
                              "Alpha@GRAD = the sum of X * Out@GRAD where X <= 0, over the dims Alpha is shared "
                              "along.")


@PRELU_GRAD.kernel()
def prelu_grad(ctx, ins, attrs):
    from ..ops.activation import alpha_shape
    xp = ctx.xp
    x, alpha, g = ins
    shape, _ = alpha_shape(x.shape, attrs["mode"], attrs["data_format"])
    a = alpha.reshape(shape).astype(x.dtype)
    pos = x > 0
    dx = xp.where(pos, g, g * a)
    contrib = xp.where(pos, g.dtype.type(0), g * x)
    red = tuple(i for i, s in enumerate(shape) if s == 1)
    da = contrib.sum(axis=red, keepdims=True).reshape(alpha.shape).astype(alpha.dtype)
    return dx, da
