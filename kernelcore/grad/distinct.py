"""The gradient of mode (kernelcore/ops/distinct.py): Out@GRAD at the position Indices names; unique and
unique_consecutive have none (as in Paddle)."""
from __future__ import annotations

from ..ops._infer import normalize_axis
from ..transforms.backward import no_grad, standard

MODE_GRAD = standard("mode", ins=("X",), outs=("Indices",), comment="X@GRAD = Out@GRAD at Indices, 0 elsewhere.")


@MODE_GRAD.kernel()
def mode_grad(ctx, ins, attrs):
    xp = ctx.xp
    x0, idx, g = ins
    x = x0.reshape(1) if x0.ndim == 0 else x0
    axis = normalize_axis(attrs["axis"], x.ndim)
    kept = x.shape[:axis] + (1,) + x.shape[axis + 1:]
    dx = xp.zeros(x.shape, dtype=g.dtype)
    xp.put_along_axis(dx, idx.reshape(kept).astype(xp.int64), g.reshape(kept), axis=axis)
    return (dx.reshape(x0.shape),)


no_grad("unique", "unique_consecutive")
