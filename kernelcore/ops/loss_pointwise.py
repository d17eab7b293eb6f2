"""Losses computed element by element, as Paddle's ops define them: sigmoid_cross_entropy_with_logits, bce_loss,
huber_loss, log_loss and kldiv_loss (the reduction of paddle.nn's losses is left to the ops after them, except
kldiv_loss's own `reduction`)."""
from __future__ import annotations

import math

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, one_of, register_op
from ._infer import same_as


def kept_labels(label, ignore_index: int):
    return label != label.dtype.type(ignore_index)


def kept_count(xp, keep, normalize: bool, dtype):
    """The divisor `normalize` asks for: how many labels are not ignored (at least 1)."""
    return xp.maximum(keep.sum().astype(dtype), dtype.type(1)) if normalize else dtype.type(1)


SIGMOID_CE = register_op(
    "sigmoid_cross_entropy_with_logits",
    "Out = max(X, 0) - X * Label + log(1 + exp(-|X|)); with pos_weight, (1 - Label) X + (1 + (pos_weight - 1) "
    "Label) (log(1 + exp(-|X|)) + max(-X, 0)). 0 where Label == ignore_index; with `normalize`, divided by the "
    "count of the others.",
    inputs=[In("X", "the logits"), In("Label", "targets in [0, 1], X's shape"),
            In("pos_weight", "the weight of positive examples, broadcast against X", dispensable=True)],
    outputs=[Out("Out", "X's shape and dtype")],
    attrs=[Attr("normalize", A.BOOLEAN, "divide by the count of labels not ignored", False),
           Attr("ignore_index", A.INT, "the label value that contributes 0", -100)],
    infer_shape=same_as())


@SIGMOID_CE.kernel()
def sigmoid_cross_entropy_with_logits(ctx, ins, attrs):
    xp = ctx.xp
    x, label, pos_weight = ins
    keep = kept_labels(label, attrs["ignore_index"])
    softplus_neg = xp.log1p(xp.exp(-xp.abs(x))) + xp.maximum(-x, x.dtype.type(0))  # log(1 + exp(-X))
    if pos_weight is None:
        out = x - x * label + softplus_neg
    else:
        out = (1 - label) * x + (1 + (pos_weight - 1) * label) * softplus_neg
    out = xp.where(keep, out, x.dtype.type(0))
    return ((out / kept_count(xp, keep, attrs["normalize"], x.dtype)).astype(x.dtype, copy=False),)


BCE_LOSS = register_op(
    "bce_loss", "Out = -(Label log(X) + (1 - Label) log(1 - X)), each log at least -100 (Paddle's clamp).",
    inputs=[In("X", "probabilities in [0, 1]"), In("Label", "targets, X's shape")],
    outputs=[Out("Out", "X's shape and dtype")], infer_shape=same_as())


@BCE_LOSS.kernel()
def bce_loss(ctx, ins, attrs):
    xp = ctx.xp
    x, label = ins
    tiny = x.dtype.type(math.exp(-100))  # log(max(v, e^-100)): Paddle's max(log(v), -100) without log(0)
    return (-(label * xp.log(xp.maximum(x, tiny)) + (1 - label) * xp.log(xp.maximum(1 - x, tiny))),)


HUBER_LOSS = register_op(
    "huber_loss", "Residual = Y - X; Out = Residual^2 / 2 where |Residual| <= delta, else delta (|Residual| - "
                  "delta / 2).",
    inputs=[In("X", "the prediction"), In("Y", "the target, X's shape")],
    outputs=[Out("Out", "X's shape and dtype"), Out("Residual", "Y - X (kept for the gradient)", intermediate=True)],
    attrs=[Attr("delta", A.FLOAT, "where the loss turns from quadratic to linear", 1.0)])


def _infer_huber(ic):
    ic.set_output("Out", ic.shape("X"), ic.dtype("X"))
    if ic.output_names("Residual"):
        ic.set_output("Residual", ic.shape("X"), ic.dtype("X"))


HUBER_LOSS.infer_shape = _infer_huber


@HUBER_LOSS.kernel()
def huber_loss(ctx, ins, attrs):
    xp = ctx.xp
    x, y = ins
    r = y - x
    delta = x.dtype.type(attrs["delta"])
    a = xp.abs(r)
    return xp.where(a <= delta, r * r / 2, delta * (a - delta / 2)), r


LOG_LOSS = register_op(
    "log_loss", "Loss = -Labels log(Predicted + epsilon) - (1 - Labels) log(1 - Predicted + epsilon).",
    inputs=[In("Predicted", "probabilities"), In("Labels", "targets, Predicted's shape")],
    outputs=[Out("Loss", "Predicted's shape and dtype")],
    attrs=[Attr("epsilon", A.FLOAT, "keeps the logs finite", 1e-4)], infer_shape=same_as("Predicted", "Loss"))


@LOG_LOSS.kernel()
def log_loss(ctx, ins, attrs):
    xp = ctx.xp
    p, label = ins
    eps = p.dtype.type(attrs["epsilon"])
    return (-label * xp.log(p + eps) - (1 - label) * xp.log(1 - p + eps),)


KLDIV_REDUCTIONS = ("none", "batchmean", "mean", "sum")
KLDIV_LOSS = register_op(
    "kldiv_loss", "Loss = Target (log(Target) - X) where Target > 0, else 0 (log_target: exp(Target) (Target - X)); "
                  "then `reduction`: none, sum, mean (over all elements) or batchmean (sum / X.shape[0]).",
    inputs=[In("X", "log-probabilities"), In("Target", "probabilities (log-probabilities with log_target)")],
    outputs=[Out("Loss", "X's shape with reduction 'none', else a 0-d tensor")],
    attrs=[Attr("reduction", A.STRING, "none, batchmean, mean or sum", "mean", checks=(one_of(*KLDIV_REDUCTIONS),)),
           Attr("log_target", A.BOOLEAN, "Target holds log-probabilities", False)])


def _infer_kldiv(ic):
    ic.set_output("Loss", ic.shape("X") if ic.attr("reduction") == "none" else [], ic.dtype("X"))


KLDIV_LOSS.infer_shape = _infer_kldiv


def kldiv_divisor(x, reduction: str):
    if reduction == "mean":
        return max(x.size, 1)
    if reduction == "batchmean":
        return x.shape[0] if x.ndim else 1
    return 1


@KLDIV_LOSS.kernel()
def kldiv_loss(ctx, ins, attrs):
    xp = ctx.xp
    x, t = ins
    if attrs["log_target"]:
        loss = xp.exp(t) * (t - x)
    else:
        positive = t > 0
        safe = xp.where(positive, t, t.dtype.type(1))
        loss = xp.where(positive, t * (xp.log(safe) - x), x.dtype.type(0))
    loss = loss.astype(x.dtype, copy=False)
    if attrs["reduction"] == "none":
        return (loss,)
    return ((loss.sum() / x.dtype.type(kldiv_divisor(x, attrs["reduction"]))).astype(x.dtype),)
