"""Activations: one table row per op (formula, attributes, body); one kernel body serves NumPy and CuPy.

relu, sigmoid, tanh, exp and softmax, then the activations vision models write (relu6, hard_swish, swish, elu,
prelu, maxout, ...). Constants are cast to X's dtype before they meet X, so float32 stays float32.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, Check, In, Out, register_op
from ._infer import normalize_axis, same_as
from ._spatial import attr_or
from .math import row_sums


def sigmoid(xp, x):
    return 1 / (1 + xp.exp(-x))


# Softmax is shift-invariant, so exp(X) needs no shift by each row's max where it can neither overflow nor leave
# a row's sum too small to keep its precision: X's largest value at most _EXP_ROOM - log(row length) below
# log(the largest finite value), and every row's sum of exp(X) at least _ROW_SUM_FLOOR (shares of a row below
# the normal range are then under 1e-18 of it, as they are after a shift). The row maxima along rows of 128
# took 286 us of a [8, 4, 128, 128] float32 softmax's 870 (one thread, Intel Xeon) and the subtraction 195; the
# whole-array max this reads instead takes 40. An attention mask's -1e4 or -inf gives exp 0 either way.
_EXP_ROOM = {np.dtype(np.float32): 80.0, np.dtype(np.float64): 700.0}
_ROW_SUM_FLOOR = {np.dtype(np.float32): 1e-20, np.dtype(np.float64): 1e-280}


def _softmax_rows_unshifted(x):
    """exp(X) / its row sums along the last axis without subtracting the row maxima (NumPy, float32/64), or
    None where that could overflow or lose precision (then the caller shifts)."""
    if x.size == 0 or not x.max() <= _EXP_ROOM[x.dtype] - math.log(x.shape[-1]):  # NaN fails the test too
        return None
    e = np.exp(x)
    sums = row_sums(np, e)
    if not sums.min() >= _ROW_SUM_FLOOR[x.dtype]:
        return None
    e /= sums
    return e


def softmax_of(xp, x, axis: int = -1):
    """exp(X) / sum(exp(X)) along `axis`, computed on X minus its max so no exp overflows. Along the last axis
    on the CPU the shift is skipped where it could change nothing but rounding (see _EXP_ROOM).
    (Paddle's CPU kernel also clips X - max at -64, so no output falls below ~1.6e-28; not done here.)"""
    if x.ndim == 0:
        return xp.ones_like(x)
    if xp is np and axis in (-1, x.ndim - 1) and x.dtype in _EXP_ROOM:
        e = _softmax_rows_unshifted(x)
        if e is not None:
            return e
    # NumPy's fmax along rows took 275 us on [8, 4, 128, 128] float32 where max took 390; a NaN, which fmax
    # skips, still makes its whole row NaN (through X - max and the sum), as with max
    e = x - (np.fmax.reduce(x, axis=axis, keepdims=True) if xp is np else x.max(axis=axis, keepdims=True))
    e = xp.exp(e, out=e) if e.dtype.kind == "f" else xp.exp(e)  # `e` is a fresh array of ours
    e /= row_sums(xp, e) if axis in (-1, x.ndim - 1) else e.sum(axis=axis, keepdims=True)
    return e


def _softmax_last(xp, x):
    return softmax_of(xp, x, -1)


# op type -> (formula for the OpProto comment, body(xp, x))
UNARY = {
    "relu": ("Out = max(X, 0)", lambda xp, x: xp.maximum(x, 0)),
    "sigmoid": ("Out = 1 / (1 + exp(-X))", sigmoid),
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


def _infer_softmax(ic):
    if ic.shape("X") or ic.attr("axis") not in (-1, 0):  # a 0-d X takes axis -1 or 0 (Out = 1)
        normalize_axis(ic.attr("axis"), len(ic.shape("X")), ic)
    ic.set_output("Out", ic.shape("X"), ic.dtype("X"))


SOFTMAX = register_op(
    "softmax", "Out = exp(X) / sum(exp(X)) along `axis`: each slice along `axis` becomes a probability "
               "distribution. Computed on X minus its max along `axis` (numerically stable).",
    inputs=[In("X", "the input tensor (logits)")], outputs=[Out("Out", "probabilities, of X's shape")],
    attrs=[Attr("axis", A.INT, "the dim to normalise over, in [-rank, rank)", -1),
           Attr("data_format", A.STRING, "layout hint (ignored)", "AnyLayout", extra=True),
           Attr("onednn_data_type", A.STRING, "oneDNN hint (ignored)", "", extra=True)],
    infer_shape=_infer_softmax)


@SOFTMAX.kernel()
def softmax(ctx, ins, attrs):
    x = ins[0]
    if x.ndim:
        normalize_axis(attrs["axis"], x.ndim)
    return (softmax_of(ctx.xp, x, attrs["axis"]),)


# ---------------------------------------------------------------------------------------------------------
# the activations vision models write
# ---------------------------------------------------------------------------------------------------------
def _c(x, v):
    return x.dtype.type(v)


def _softplus(xp, x, beta, threshold):
    """Paddle's SoftplusFunctor: x where beta * x > threshold, else log(1 + exp(beta * x)) / beta."""
    bx = x * _c(x, beta)
    # exp of the clipped value: the branch not taken must not overflow
    soft = xp.log1p(xp.exp(xp.minimum(bx, _c(x, threshold)))) / _c(x, beta)
    return xp.where(bx > _c(x, threshold), x, soft)


def _hard_swish(xp, x, a):
    return x * xp.minimum(xp.maximum(x + _c(x, a["offset"]), _c(x, 0)), _c(x, a["threshold"])) / _c(x, a["scale"])


def _mish(xp, x, a):
    return x * xp.tanh(_softplus(xp, x, 1.0, a["threshold"]))


def _elu(xp, x, a):
    return xp.where(x > 0, x, _c(x, a["alpha"]) * xp.expm1(xp.minimum(x, _c(x, 0))))


# op type -> (formula, attrs, body(xp, x, attrs))
EXTRA = {
    "relu6": ("Out = min(max(X, 0), threshold)",
              [Attr("threshold", A.FLOAT, "the upper clip", 6.0)],
              lambda xp, x, a: xp.clip(x, _c(x, 0), _c(x, a["threshold"]))),
    "leaky_relu": ("Out = X if X >= 0 else alpha * X",
                   [Attr("alpha", A.FLOAT, "the slope for negative X", 0.02)],
                   lambda xp, x, a: xp.where(x >= 0, x, x * _c(x, a["alpha"]))),
    "elu": ("Out = X if X > 0 else alpha * (exp(X) - 1)",
            [Attr("alpha", A.FLOAT, "the negative saturation", 1.0)], _elu),
    "hard_swish": ("Out = X * min(max(X + offset, 0), threshold) / scale",
                   [Attr("threshold", A.FLOAT, "the upper clip", 6.0),
                    Attr("scale", A.FLOAT, "the divisor", 6.0),
                    Attr("offset", A.FLOAT, "added to X before clipping", 3.0)], _hard_swish),
    "hard_sigmoid": ("Out = min(max(slope * X + offset, 0), 1)",
                     [Attr("slope", A.FLOAT, "the slope", 0.2), Attr("offset", A.FLOAT, "the offset", 0.5)],
                     lambda xp, x, a: xp.clip(x * _c(x, a["slope"]) + _c(x, a["offset"]), _c(x, 0), _c(x, 1))),
    "swish": ("Out = X * sigmoid(beta * X)",
              [Attr("beta", A.FLOAT, "the sigmoid's slope", 1.0)],
              lambda xp, x, a: x * sigmoid(xp, x * _c(x, a["beta"]))),
    "silu": ("Out = X * sigmoid(X)", [], lambda xp, x, a: x * sigmoid(xp, x)),
    "softplus": ("Out = X if beta * X > threshold else log(1 + exp(beta * X)) / beta",
                 [Attr("beta", A.FLOAT, "the sharpness", 1.0),
                  Attr("threshold", A.FLOAT, "above it (on beta * X) Out = X", 20.0)],
                 lambda xp, x, a: _softplus(xp, x, a["beta"], a["threshold"])),
    "mish": ("Out = X * tanh(softplus(X)), softplus(X) = X where X > threshold",
             [Attr("threshold", A.FLOAT, "softplus returns X above it", 20.0)], _mish),
    # the rest of paddle.nn's activations, with the op types, attributes and defaults Paddle's ops declare
    "brelu": ("Out = min(max(X, t_min), t_max) (paddle.nn.Hardtanh)",
              [Attr("t_min", A.FLOAT, "the lower clip", 0.0), Attr("t_max", A.FLOAT, "the upper clip", 24.0)],
              lambda xp, x, a: xp.clip(x, _c(x, a["t_min"]), _c(x, a["t_max"]))),
    "celu": ("Out = max(0, X) + min(0, alpha * (exp(X / alpha) - 1))",
             [Attr("alpha", A.FLOAT, "the negative saturation and scale", 1.0)],
             lambda xp, x, a: xp.maximum(x, _c(x, 0)) + xp.minimum(
                 _c(x, a["alpha"]) * xp.expm1(xp.minimum(x, _c(x, 0)) / _c(x, a["alpha"])), _c(x, 0))),
    "selu": ("Out = scale * (X if X > 0 else alpha * (exp(X) - 1))",
             [Attr("scale", A.FLOAT, "the output scale", 1.0507009873554805),
              Attr("alpha", A.FLOAT, "the negative saturation", 1.6732632423543772)],
             lambda xp, x, a: _c(x, a["scale"]) * xp.where(
                 x > 0, x, _c(x, a["alpha"]) * xp.expm1(xp.minimum(x, _c(x, 0))))),
    "logsigmoid": ("Out = log(sigmoid(X)) = -(log(1 + exp(-|X|)) + max(-X, 0))", [],
                   lambda xp, x, a: -(xp.log1p(xp.exp(-xp.abs(x))) + xp.maximum(-x, _c(x, 0)))),
    "softsign": ("Out = X / (1 + |X|)", [], lambda xp, x, a: x / (1 + xp.abs(x))),
    "tanh_shrink": ("Out = X - tanh(X)", [], lambda xp, x, a: x - xp.tanh(x)),
    "hard_shrink": ("Out = X where |X| > threshold, else 0",
                    [Attr("threshold", A.FLOAT, "the half-width of the zeroed band", 0.5)],
                    lambda xp, x, a: x * (xp.abs(x) > _c(x, a["threshold"]))),
    "softshrink": ("Out = X - lambda where X > lambda, X + lambda where X < -lambda, else 0",
                   [Attr("lambda", A.FLOAT, "the half-width of the zeroed band", 0.5)],
                   lambda xp, x, a: xp.where(x > _c(x, a["lambda"]), x - _c(x, a["lambda"]),
                                             xp.where(x < -_c(x, a["lambda"]), x + _c(x, a["lambda"]), _c(x, 0)))),
    "thresholded_relu": ("Out = X where X > threshold, else value",
                         [Attr("threshold", A.FLOAT, "the threshold", 1.0),
                          Attr("value", A.FLOAT, "what X at or below the threshold becomes", 0.0)],
                         lambda xp, x, a: xp.where(x > _c(x, a["threshold"]), x, _c(x, a["value"]))),
}


def _kernel(body):
    def kernel(ctx, ins, attrs):
        return (body(ctx.xp, ins[0], attrs),)
    return kernel


for _type, (_formula, _attrs, _body) in EXTRA.items():
    _d = register_op(_type, f"{_type} activation: {_formula}, elementwise.",
                     inputs=[In("X", "the input tensor")], outputs=[Out("Out", "a tensor of X's shape and dtype")],
                     attrs=_attrs, infer_shape=same_as())
    _k = _kernel(_body)
    _k.__name__ = _type
    _d.kernel()(_k)


# ---------------------------------------------------------------------------
PRELU = register_op(
    "prelu",
    "Out = X if X > 0 else Alpha * X, with Alpha one scalar (mode 'all'), one value per channel ('channel') or one "
    "per element of a sample ('element').",
    inputs=[In("X", "the input, [N, C, ...] (channels last with data_format NHWC)"),
            In("Alpha", "'all': 1 element; 'channel': C elements; 'element': prod(X.shape[1:]) elements")],
    outputs=[Out("Out", "X's shape and dtype")],
    attrs=[Attr("mode", A.STRING, "'all', 'channel' or 'element'",
                checks=(Check("'all', 'channel' or 'element'", lambda v: v in ("all", "channel", "element")),)),
           Attr("data_format", A.STRING, "'NCHW' (channel axis 1) or 'NHWC' (channel axis last)", "NCHW")],
    infer_shape=same_as())


def alpha_shape(x_shape, mode, fmt):
    nd = len(x_shape)
    if mode == "all":
        return (1,) * nd, 1
    if mode == "channel":
        axis = nd - 1 if fmt in ("NHWC", "NDHWC", "NLC") and nd > 2 else 1
        shape = [1] * nd
        shape[axis] = x_shape[axis]
        return tuple(shape), x_shape[axis]
    return (1, *x_shape[1:]), math.prod(x_shape[1:])


@PRELU.kernel()
def prelu(ctx, ins, attrs):
    x, alpha = ins
    xp = ctx.xp
    shape, size = alpha_shape(x.shape, attrs["mode"], attrs["data_format"])
    if alpha.size != size:
        raise ValueError(f"Alpha must hold {size} element(s) for mode {attrs['mode']!r} and X {list(x.shape)}, "
                         f"got shape {list(alpha.shape)}")
    a = alpha.reshape(shape).astype(x.dtype, copy=False)
    return (xp.where(x > 0, x, x * a),)


# ---------------------------------------------------------------------------
def maxout_geometry(shape, groups, axis):
    nd = len(shape)
    if not -nd <= axis < nd:
        raise ValueError(f"axis {axis} is out of range for a {nd}-D X")
    axis %= nd
    if groups <= 0 or (shape[axis] >= 0 and shape[axis] % groups):
        raise ValueError(f"X's {shape[axis]} channels (axis {axis}) must divide by groups={groups}")
    return axis


MAXOUT = register_op(
    "maxout",
    "Out[..., i, ...] = max over k < groups of X[..., i * groups + k, ...] along `axis`: the channels in runs of "
    "`groups`, each run's largest.",
    inputs=[In("X", "the input, [N, C, H, W] (or channels last, axis -1 / 3)")],
    outputs=[Out("Out", "X's shape with C / groups channels")],
    attrs=[Attr("groups", A.INT, "how many channels each output channel takes the max of"),
           Attr("axis", A.INT, "the channel axis: 1 (channels first) or -1 / 3 (channels last)", 1)])


def _maxout_infer(ic):
    shape = list(ic.shape("X"))
    groups = attr_or(ic, "groups", 0)
    try:
        axis = maxout_geometry(shape, groups, attr_or(ic, "axis", 1))
    except ValueError as e:
        ic.fail(str(e))
    if shape[axis] >= 0:
        shape[axis] //= groups
    ic.set_output("Out", shape, ic.dtype("X"))


MAXOUT.infer_shape = _maxout_infer


def maxout_runs(x, groups, axis):
    """X viewed with its channel axis split into (channels / groups, groups)."""
    return x.reshape(x.shape[:axis] + (x.shape[axis] // groups, groups) + x.shape[axis + 1:])


@MAXOUT.kernel()
def maxout(ctx, ins, attrs):
    (x,) = ins
    axis = maxout_geometry(x.shape, attrs["groups"], attrs["axis"])
    return (maxout_runs(x, attrs["groups"], axis).max(axis=axis + 1),)
