"""Activations: one table row per op; one kernel body serves NumPy and CuPy."""
from __future__ import annotations

import math

import numpy as np

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._infer import normalize_axis, same_as
from .math import row_sums


def _sigmoid(xp, x):
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
