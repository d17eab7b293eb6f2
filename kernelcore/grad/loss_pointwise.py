"""Gradients of kernelcore/ops/loss_pointwise.py, with the slots Paddle's grad ops read. Labels and targets get
none (Paddle's makers write none)."""
from __future__ import annotations

from ..ops.loss_pointwise import kept_count, kept_labels, kldiv_divisor
from ..transforms.backward import standard, wanted

SIGMOID_CE_GRAD = standard(
    "sigmoid_cross_entropy_with_logits", ins=("X", "Label", "pos_weight"),
    comment="X@GRAD = (sigmoid(X) - Label) Out@GRAD; with pos_weight, ((1 - Label) - (1 + (pos_weight - 1) Label) "
            "sigmoid(-X)) Out@GRAD; 0 where Label == ignore_index, divided by the kept count with `normalize`.")


@SIGMOID_CE_GRAD.kernel()
def sigmoid_cross_entropy_with_logits_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, label, pos_weight, g = ins
    keep = kept_labels(label, attrs["ignore_index"])
    sig_neg = 1 / (1 + xp.exp(x))  # sigmoid(-X)
    if pos_weight is None:
        d = (1 - sig_neg) - label
    else:
        d = (1 - label) - (1 + (pos_weight - 1) * label) * sig_neg
    d = xp.where(keep, d * g, x.dtype.type(0)) / kept_count(xp, keep, attrs["normalize"], x.dtype)
    return (d.astype(x.dtype, copy=False),)


BCE_LOSS_GRAD = standard("bce_loss", ins=("X", "Label"),
                         comment="X@GRAD = Out@GRAD (X - Label) / max((1 - X) X, 1e-12).")


@BCE_LOSS_GRAD.kernel()
def bce_loss_grad(ctx, ins, attrs):
    x, label, g = ins
    return (g * (x - label) / ctx.xp.maximum((1 - x) * x, x.dtype.type(1e-12)),)


HUBER_LOSS_GRAD = standard("huber_loss", outs=("Residual",), in_grads=("X", "Y"),
                           infer_from={"X@GRAD": ("Residual", False), "Y@GRAD": ("Residual", False)},
                           comment="Y@GRAD = Out@GRAD * clip(Residual, -delta, delta); X@GRAD = -Y@GRAD.")


@HUBER_LOSS_GRAD.kernel()
def huber_loss_grad(ctx, ins, attrs):
    r, g = ins
    delta = r.dtype.type(attrs["delta"])
    dy = g * ctx.xp.clip(r, -delta, delta)
    return (-dy if wanted(ctx, "X@GRAD") else None), (dy if wanted(ctx, "Y@GRAD") else None)


LOG_LOSS_GRAD = standard("log_loss", ins=("Predicted", "Labels"), out_grads=("Loss",), in_grads=("Predicted",),
                         comment="Predicted@GRAD = Loss@GRAD (-Labels / (Predicted + epsilon) + (1 - Labels) / "
                                 "(1 - Predicted + epsilon)).")


@LOG_LOSS_GRAD.kernel()
def log_loss_grad(ctx, ins, attrs):
    p, label, g = ins
    eps = p.dtype.type(attrs["epsilon"])
    return (g * (-label / (p + eps) + (1 - label) / (1 - p + eps)),)


KLDIV_LOSS_GRAD = standard("kldiv_loss", ins=("X", "Target"), out_grads=("Loss",),
                           comment="X@GRAD = -Target Loss@GRAD where Target > 0 (log_target: -exp(Target) "
                                   "Loss@GRAD), divided as the reduction divided.")


@KLDIV_LOSS_GRAD.kernel()
def kldiv_loss_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, t, g = ins
    if attrs["log_target"]:
        d = -xp.exp(t)
    else:
        d = xp.where(t > 0, -t, t.dtype.type(0))
    d = d.astype(x.dtype, copy=False) * g
    return ((d / x.dtype.type(kldiv_divisor(x, attrs["reduction"]))).astype(x.dtype, copy=False),)
