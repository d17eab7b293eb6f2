"""Gradients of the losses and of top_k (kernelcore/ops/loss.py), with Paddle's grad-op slots and
formulas. Labels never get a gradient (Paddle's makers write none), nor do top_k's Indices."""
from __future__ import annotations

from ..ops._infer import normalize_axis
from ..ops.loss import pick_labels
from ..transforms.backward import no_grad, standard, wanted


def _class_positions(xp, shape, axis: int):
    """arange(C) shaped to broadcast along `axis` of an array of `shape` (C = shape[axis])."""
    return xp.arange(shape[axis]).reshape([shape[axis] if i == axis else 1 for i in range(len(shape))])


CE_GRAD = standard("cross_entropy", ins=("X", "Label"), out_grads=("Y",),
                   comment="Hard labels: X@GRAD = -Y@GRAD / X at the label's class (0 elsewhere and where "
                           "Label == ignore_index). Soft labels: X@GRAD = -Label * Y@GRAD / X.")


@CE_GRAD.kernel()
def cross_entropy_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, label, gy = ins
    if attrs["soft_label"]:
        return (-label * gy / x,)
    if label.ndim == x.ndim - 1:  # a [...] label: the loss is [...] too
        label, gy = label[..., None], gy[..., None]
    picked, keep = pick_labels(xp, x, label, -1, attrs["ignore_index"])
    at_label = (_class_positions(xp, x.shape, x.ndim - 1) == label.astype(xp.int64)) & keep
    return (xp.where(at_label, -gy / picked, x.dtype.type(0)),)


SWCE_GRAD = standard("softmax_with_cross_entropy", ins=("Label",), outs=("Softmax",), out_grads=("Loss",),
                     in_grads=("Logits",), infer_from={"Logits@GRAD": ("Softmax", False)},
                     comment="Logits@GRAD = (Softmax - onehot(Label)) * Loss@GRAD (hard labels; 0 where Label "
                             "== ignore_index) or (Softmax - Label) * Loss@GRAD (soft labels, which Paddle "
                             "takes to sum to 1). With use_softmax=false (Softmax is Logits, probabilities): "
                             "-Loss@GRAD / Softmax at the label (hard) or -Label * Loss@GRAD / Softmax (soft).")


@SWCE_GRAD.kernel()
def softmax_with_cross_entropy_grad(ctx, ins, attrs):
    xp = ctx.xp
    label, sm, gl = ins
    axis = normalize_axis(attrs["axis"], sm.ndim)
    soft, zero = attrs["soft_label"], sm.dtype.type(0)
    if attrs["use_softmax"]:
        if soft:
            return ((sm - label) * gl,)
        _, keep = pick_labels(xp, sm, label, axis, attrs["ignore_index"])  # checks the label range
        onehot = (_class_positions(xp, sm.shape, axis) == label.astype(xp.int64)).astype(sm.dtype)
        return (xp.where(keep, (sm - onehot) * gl, zero),)
    if soft:
        return (-label * gl / sm,)
    picked, keep = pick_labels(xp, sm, label, axis, attrs["ignore_index"])
    at_label = (_class_positions(xp, sm.shape, axis) == label.astype(xp.int64)) & keep
    return (xp.where(at_label, -gl / picked, zero),)


TOP_K_GRAD = standard("top_k", ins=("X", "K"), outs=("Indices",), in_grads=("X",),
                      comment="X@GRAD = Out@GRAD scattered back to the positions Indices picked; 0 elsewhere. "
                              "(Indices themselves have no gradient.)")


@TOP_K_GRAD.kernel()
def top_k_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, _, indices, g = ins
    if not wanted(ctx, "X@GRAD"):
        return (None,)
    n = x.shape[-1] if x.ndim else 1
    rows = x.size // max(n, 1)
    flat = (xp.arange(rows).reshape(-1, 1) * n + indices.reshape(rows, -1)).reshape(-1)
    dx = xp.zeros(x.size, dtype=x.dtype)
    dx[flat] = g.reshape(-1)  # a row's indices are distinct: plain assignment, no accumulation needed
    return (dx.reshape(x.shape),)


no_grad("arg_max", "accuracy")
