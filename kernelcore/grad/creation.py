"""Gradients of kernelcore/ops/creation.py: meshgrid's grids summed back onto their inputs, diag_v2's diagonal
taken back out (or put back); empty, eye and linspace have none."""
from __future__ import annotations

from ..transforms.backward import no_grad, standard

MESHGRID_GRAD = standard("meshgrid", ins=("X",), comment="X[k]@GRAD = Out[k]@GRAD summed over every dim but k.")


@MESHGRID_GRAD.kernel()
def meshgrid_grad(ctx, ins, attrs):
    xs, gs = ins
    grads = []
    for k, (x, g) in enumerate(zip(xs, gs)):
        if g is None:
            grads.append(ctx.xp.zeros(x.shape, dtype=x.dtype))
            continue
        others = tuple(d for d in range(g.ndim) if d != k)
        grads.append(g.sum(axis=others).reshape(x.shape))
    return (grads,)


DIAG_V2_GRAD = standard("diag_v2", ins=("X",), comment="1-D X: X@GRAD = the diagonal `offset` of Out@GRAD; "
                                                       "2-D X: Out@GRAD placed on that diagonal, 0 elsewhere.")


@DIAG_V2_GRAD.kernel()
def diag_v2_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, g = ins
    k = attrs["offset"]
    if x.ndim <= 1:
        return (xp.diagonal(g, k).reshape(x.shape).copy(),)
    dx = xp.zeros(x.shape, dtype=g.dtype)
    n = g.shape[0]
    rows = xp.arange(n) + max(-k, 0)
    dx[rows, rows + k] = g
    return (dx,)


no_grad("empty", "eye", "linspace", "logspace", "tril_indices", "triu_indices", "randint", "randperm")
