"""Gradients of the index ops kernelcore/ops/index_arith.py defines where no math family did: argsort's
(X@GRAD = Out@GRAD put back where each sorted value came from, Paddle's argsort_grad)."""
from __future__ import annotations

from ..transforms.backward import grad_rule, standard

if grad_rule("argsort") is None:
    ARGSORT_GRAD = standard("argsort", ins=("X",), outs=("Indices",),
                            comment="X@GRAD[Indices[k]] = Out@GRAD[k] along `axis`.")

    @ARGSORT_GRAD.kernel()
    def argsort_grad(ctx, ins, attrs):
        x, indices, g = ins
        xp = ctx.xp
        if x.ndim == 0:
            return (g,)
        out = xp.zeros_like(x)
        xp.put_along_axis(out, indices, g, axis=attrs["axis"])
        return (out,)
