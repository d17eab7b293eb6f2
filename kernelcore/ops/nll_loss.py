"""nll_loss (paddle.nn.functional.nll_loss): Out = -Weight[Label] * X[n, Label] per sample (0 where Label ==
ignore_index), then `reduction`; mean divides by Total_weight, the sum of the weights taken."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, one_of, register_op

NLL_LOSS = register_op(
    "nll_loss", "Out = -Weight[Label] X[n, Label, ...]: none keeps one loss per sample, sum adds them, mean divides "
                "the sum by Total_weight.",
    inputs=[In("X", "log-probabilities [N, C] or [N, C, d...]"), In("Label", "[N] or [N, d...] class ids"),
            In("Weight", "[C] per-class weights", dispensable=True)],
    outputs=[Out("Out", "[N, d...] with reduction 'none', else 0-d"), Out("Total_weight", "0-d: the weights' sum")],
    attrs=[Attr("ignore_index", A.LONG, "the label that contributes 0", -100),
           Attr("reduction", A.STRING, "none, mean or sum", "mean", checks=(one_of("none", "mean", "sum"),))])


def picked(xp, x, label, weight, ignore_index):
    """(the log-probabilities at the labels, each sample's weight: 0 where ignored), both Label's shape."""
    if x.ndim < 2 or label.shape != x.shape[:1] + x.shape[2:]:
        raise ValueError(f"nll_loss takes X [N, C, ...] and Label [N, ...], got {list(x.shape)} and "
                         f"{list(label.shape)}")
    lab = label.astype(xp.int64)
    keep = lab != ignore_index
    safe = xp.where(keep, lab, 0)
    c = x.shape[1]
    if safe.size and bool(((safe < 0) | (safe >= c)).any()):
        raise ValueError(f"nll_loss: a label is outside [0, {c})")
    at = xp.take_along_axis(x, safe[:, None], axis=1)[:, 0]
    w = xp.ones(c, dtype=x.dtype) if weight is None else weight.astype(x.dtype)
    return at, xp.where(keep, w[safe], x.dtype.type(0))


@NLL_LOSS.kernel()
def nll_loss(ctx, ins, attrs):
    x, label, weight = ins
    at, w = picked(ctx.xp, x, label, weight, attrs["ignore_index"])
    losses = -at * w
    total = w.sum()
    if attrs["reduction"] == "none":
        return losses, total
    s = losses.sum()
    return (s / total if attrs["reduction"] == "mean" else s).astype(x.dtype), total.astype(x.dtype)
