"""Sequence-model layers' ops: layer_norm (Transformer/BERT), and adamw (the optimizer they train with).

layer_norm flattens X to a matrix at begin_norm_axis ([left, right]: left = the product of the leading dims,
right = the rest) and normalises each row; Mean and Variance hold one value per row ([left]), Scale and Bias
one per column ([right]), as Paddle's kernel does.
"""
from __future__ import annotations

import math

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, Check, In, Out, register_op
from ._infer import prod
from .math import SUM_BY_PRODUCT_DTYPES, row_sums
from .optimizer import ADAM, _compute_dtype, adam

LAYER_NORM = register_op(
    "layer_norm",
    "Y = (X - mean) / sqrt(variance + epsilon) * Scale + Bias, where mean and variance (biased) are taken "
    "over the dims from begin_norm_axis on, for each index of the dims before it. Scale and Bias (optional) "
    "hold one value per normalised element (length = the product of X's dims from begin_norm_axis).",
    inputs=[In("X", "the input tensor"),
            In("Scale", "(1-D, length right) the per-element gain; none: 1", dispensable=True),
            In("Bias", "(1-D, length right) the per-element offset; none: 0", dispensable=True)],
    outputs=[Out("Y", "the normalised tensor, X's shape and dtype"),
             Out("Mean", "(1-D, length left) the mean of each normalised row", intermediate=True),
             Out("Variance", "(1-D, length left) the biased variance of each row", intermediate=True)],
    attrs=[Attr("epsilon", A.FLOAT, "added to the variance before the square root", 1e-5,
                # Paddle's bound is the float32 0.001f, which the stored float32 attribute may equal exactly
                checks=(Check("in [0, 0.001]", lambda v: 0.0 <= v <= 0.0010000000474974513),)),
           Attr("begin_norm_axis", A.INT, "the first dim normalised over; 1 <= begin_norm_axis < rank", 1)])


def _ln_split(shape, axis: int, fail):
    if not 1 <= axis < len(shape):
        fail(f"begin_norm_axis {axis} is out of range for X of shape {list(shape)}; expected "
             f"1 <= begin_norm_axis < {len(shape)}")
    return prod(shape[:axis]), prod(shape[axis:])


def _ln_infer(ic):
    x = ic.shape("X")
    left, right = _ln_split(x, ic.attr("begin_norm_axis"), ic.fail)
    for slot in ("Scale", "Bias"):
        if ic.has_input(slot):
            s = ic.shape(slot)
            if len(s) != 1 or (right >= 0 and s[0] >= 0 and s[0] != right):
                ic.fail(f"{slot} has shape {list(s)} but X {list(x)} normalises {right} elements from "
                        f"begin_norm_axis {ic.attr('begin_norm_axis')}; expected [{right}]")
    ic.set_output("Y", x, ic.dtype("X"))
    for slot in ("Mean", "Variance"):
        if ic.output_names(slot):
            ic.set_output(slot, (left,), ic.dtype("X"))


LAYER_NORM.infer_shape = _ln_infer


def layer_norm_rows(xp, x, axis: int, eps: float):
    """(x as [left, right], mean [left, 1], variance [left, 1], 1/sqrt(variance + eps) [left, 1])."""
    left, right = math.prod(x.shape[:axis]), math.prod(x.shape[axis:])
    x2 = x.reshape(left, right)
    mean = row_means(xp, x2)
    d = x2 - mean
    var = row_means(xp, d * d)
    inv = 1 / xp.sqrt(var + x.dtype.type(eps))
    return x2, mean, var, inv


def row_means(xp, a2):
    """The mean of each row of a matrix, [rows, 1] (float16 through NumPy's wider accumulator)."""
    return row_sums(xp, a2) / a2.shape[1] if a2.dtype in SUM_BY_PRODUCT_DTYPES else a2.mean(axis=1, keepdims=True)


@LAYER_NORM.kernel()
def layer_norm(ctx, ins, attrs):
    x, scale, bias = ins
    axis = attrs["begin_norm_axis"]
    if not 1 <= axis < x.ndim:
        raise ValueError(f"begin_norm_axis {axis} is out of range for X of shape {list(x.shape)}")
    right = math.prod(x.shape[axis:])
    for slot, t in (("Scale", scale), ("Bias", bias)):
        if t is not None and t.size != right:
            raise ValueError(f"{slot} has {t.size} elements but X {list(x.shape)} normalises {right} per row")
    x2, mean, var, inv = layer_norm_rows(ctx.xp, x, axis, attrs["epsilon"])
    y = (x2 - mean) * inv
    if scale is not None:
        y = y * scale.reshape(1, right)
    if bias is not None:
        y = y + bias.reshape(1, right)
    return y.reshape(x.shape).astype(x.dtype, copy=False), mean.reshape(-1), var.reshape(-1)


# -- adamw ---------------------------------------------------------------------------------------------
ADAMW = register_op(
    "adamw",
    "Adam with decoupled weight decay (AdamW): with lr = LearningRate * lr_ratio, when with_decay first "
    "Param = Param * (1 - lr * coeff); then adam's update with learning rate lr (see adam).",
    inputs=list(ADAM.inputs), outputs=list(ADAM.outputs),
    attrs=[*ADAM.attrs.values(),
           Attr("lr_ratio", A.FLOAT, "a per-parameter factor on the learning rate", 1.0),
           Attr("coeff", A.FLOAT, "the decay coefficient", 0.01),
           Attr("with_decay", A.BOOLEAN, "apply the decay (false: plain adam)", False)],
    infer_shape=ADAM.infer_shape)


@ADAMW.kernel()
def adamw(ctx, ins, attrs):
    ins = list(ins)
    param, lr = ins[0], ins[2]
    skip = ins[9]
    lr = lr * lr.dtype.type(attrs["lr_ratio"])
    if attrs["with_decay"] and not (skip is not None and bool(skip.reshape(-1)[0])):
        mt = _compute_dtype(param)
        decay = 1 - lr.reshape(()).astype(mt) * mt.type(attrs["coeff"])  # 0-d, on the param's device
        p = param.astype(mt, copy=False) * decay
        ins[0] = p.astype(param.dtype, copy=False)
        master = ins[8]
        if attrs["multi_precision"] and master is not None:
            ins[8] = master * decay.astype(master.dtype)
    ins[2] = lr
    return adam(ctx, tuple(ins), attrs)
