"""Gradients of unpool / unpool3d (kernelcore/ops/unpool.py): X@GRAD = Out@GRAD read at Indices."""
from __future__ import annotations

from ..ops.unpool import flat_maps
from ..transforms.backward import standard


def _make(op_type):
    d = standard(op_type, ins=("X", "Indices"), comment="X@GRAD = Out@GRAD at the positions Indices name.")

    @d.kernel()
    def kernel(ctx, ins, attrs):
        xp = ctx.xp
        x, indices, g = ins
        idx, _ = flat_maps(xp, x, indices, g.shape[2:])
        return (xp.take_along_axis(g.reshape(g.shape[0], g.shape[1], -1), idx, axis=2).reshape(x.shape),)
    kernel.__name__ = f"{op_type}_grad"


_make("unpool")
_make("unpool3d")
