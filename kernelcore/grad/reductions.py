"""Gradients of kernelcore/ops/reductions.py, with the slots Paddle 2.6.2's backward writes: reduce max, min and
prod. reduce_any and reduce_all have none.
"""
from __future__ import annotations

from ..ops.math import reduce_axes
from ..transforms.backward import no_grad, standard
from .math import _fail

# -- reduce max/min/prod -----------------------------------------------------------------------------------
def _kept(x, attrs):
    axes = reduce_axes(attrs["dim"], x.ndim, attrs["reduce_all"], _fail)
    return tuple(1 if i in axes else d for i, d in enumerate(x.shape))


def _reduce_grad(body):
    def kernel(ctx, ins, attrs):
        x, out, g = ins
        kept = _kept(x, attrs)
        return (body(ctx.xp, x, out.reshape(kept), g.reshape(kept)).astype(x.dtype, copy=False),)
    return kernel


REDUCE = {
    "reduce_max": ("Out@GRAD where X equals the max (every tied element gets it), else 0",
                   lambda xp, x, out, g: xp.where(x == out, g, g.dtype.type(0))),
    "reduce_min": ("Out@GRAD where X equals the min (every tied element gets it), else 0",
                   lambda xp, x, out, g: xp.where(x == out, g, g.dtype.type(0))),
    "reduce_prod": ("Out@GRAD * Out / X", lambda xp, x, out, g: xp.broadcast_to(g * out, x.shape) / x),
}

for _type, (_formula, _body) in REDUCE.items():
    _d = standard(_type, ins=("X",), outs=("Out",), comment=f"X@GRAD = {_formula}, broadcast over the reduced dims.")
    _k = _reduce_grad(_body)
    _k.__name__ = f"{_type}_grad"
    _d.kernel()(_k)


no_grad("reduce_any", "reduce_all")
