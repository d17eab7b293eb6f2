"""The gradient of nll_loss (kernelcore/ops/nll_loss.py): -Weight[Label] Out@GRAD at each label's class,
divided by Total_weight with reduction mean."""
from __future__ import annotations

from ..ops.nll_loss import picked
from ..transforms.backward import standard

NLL_LOSS_GRAD = standard("nll_loss", ins=("X", "Label", "Weight"), outs=("Total_weight",),
                         comment="X@GRAD[n, Label[n]] = -Weight[Label[n]] Out@GRAD (/ Total_weight for mean).")


@NLL_LOSS_GRAD.kernel()
def nll_loss_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, label, weight, total, g = ins
    _, w = picked(xp, x, label, weight, attrs["ignore_index"])
    d = -w * g  # g: Label's shape (none) or 0-d
    if attrs["reduction"] == "mean":
        d = d / total
    dx = xp.zeros(x.shape, dtype=x.dtype)
    lab = xp.where(label.astype(xp.int64) == attrs["ignore_index"], 0, label.astype(xp.int64))
    xp.put_along_axis(dx, lab[:, None], d.astype(x.dtype)[:, None], axis=1)
    return (dx,)
