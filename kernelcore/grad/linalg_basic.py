"""Gradients of kernelcore/ops/linalg_basic.py."""
from __future__ import annotations

from .math import unbroadcast
from ..ops.linalg_basic import cross_dim, cross_of, diagonal_of
from ..transforms.backward import standard, wanted


def _t(m):
    return m.swapaxes(-1, -2)


BMM_GRAD = standard("bmm", ins=("X", "Y"), in_grads=("X", "Y"), comment="X@GRAD = G Y^T, Y@GRAD = X^T G.")


@BMM_GRAD.kernel()
def bmm_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, y, g = ins
    return (xp.matmul(g, _t(y)) if wanted(ctx, "X@GRAD") else None,
            xp.matmul(_t(x), g) if wanted(ctx, "Y@GRAD") else None)


DOT_GRAD = standard("dot", ins=("X", "Y"), in_grads=("X", "Y"), comment="X@GRAD = G Y, Y@GRAD = G X (per row).")


@DOT_GRAD.kernel()
def dot_grad(ctx, ins, attrs):
    x, y, g = ins
    g = g.reshape(g.shape + (1,))
    return (g * y if wanted(ctx, "X@GRAD") else None), (g * x if wanted(ctx, "Y@GRAD") else None)


MV_GRAD = standard("mv", ins=("X", "Vec"), in_grads=("X", "Vec"), comment="X@GRAD = G Vec^T, Vec@GRAD = X^T G.")


@MV_GRAD.kernel()
def mv_grad(ctx, ins, attrs):
    x, v, g = ins
    return (g[:, None] * v[None, :] if wanted(ctx, "X@GRAD") else None,
            ctx.xp.matmul(x.T, g) if wanted(ctx, "Vec@GRAD") else None)


ADDMM_GRAD = standard("addmm", ins=("Input", "X", "Y"), in_grads=("Input", "X", "Y"),
                      comment="Input@GRAD = Beta G (summed to Input's shape), X@GRAD = Alpha G Y^T, "
                              "Y@GRAD = Alpha X^T G.")


@ADDMM_GRAD.kernel()
def addmm_grad(ctx, ins, attrs):
    xp = ctx.xp
    inp, x, y, g = ins
    t = g.dtype.type
    d_inp = None
    if wanted(ctx, "Input@GRAD"):
        aligned = (1,) * (g.ndim - inp.ndim) + inp.shape
        d_inp = (unbroadcast(g, aligned, inp.shape) * t(attrs["Beta"])).astype(inp.dtype, copy=False)
    alpha = t(attrs["Alpha"])
    return (d_inp, xp.matmul(g, y.T) * alpha if wanted(ctx, "X@GRAD") else None,
            xp.matmul(x.T, g) * alpha if wanted(ctx, "Y@GRAD") else None)


CROSS_GRAD = standard("cross", ins=("X", "Y"), in_grads=("X", "Y"),
                      comment="X@GRAD = Y x G, Y@GRAD = G x X.")


@CROSS_GRAD.kernel()
def cross_grad(ctx, ins, attrs):
    x, y, g = ins
    d = cross_dim(x.shape, attrs["dim"])
    return (cross_of(ctx.xp, y, g, d) if wanted(ctx, "X@GRAD") else None,
            cross_of(ctx.xp, g, x, d) if wanted(ctx, "Y@GRAD") else None)


def _onto_diagonal(xp, x, g_diag, attrs):
    """Zeros of x's shape with `g_diag` (the diagonal's shape: batch dims then the diagonal) on the diagonal."""
    dx = xp.zeros(x.shape, dtype=g_diag.dtype)
    view = diagonal_of(xp, dx, attrs)  # NumPy's diagonal is read-only: write through index arrays instead
    n = view.shape[-1]
    a1, a2 = attrs["axis1"] % x.ndim, attrs["axis2"] % x.ndim
    k = attrs["offset"]
    i = xp.arange(n) + max(-k, 0)
    j = xp.arange(n) + max(k, 0)
    batch = [d for d in range(x.ndim) if d not in (a1, a2)]
    moved = xp.moveaxis(dx, (a1, a2), (-2, -1))  # a view: writing it writes dx
    moved[..., i, j] = g_diag.reshape([x.shape[d] for d in batch] + [n])
    return dx


TRACE_GRAD = standard("trace", ins=("Input",), in_grads=("Input",),
                      comment="Input@GRAD = Out@GRAD on the diagonal, 0 elsewhere.")


@TRACE_GRAD.kernel()
def trace_grad(ctx, ins, attrs):
    x, g = ins
    n = diagonal_of(ctx.xp, x, attrs).shape[-1]
    return (_onto_diagonal(ctx.xp, x, ctx.xp.broadcast_to(g[..., None], g.shape + (n,)), attrs),)


DIAGONAL_GRAD = standard("diagonal", ins=("Input",), in_grads=("Input",),
                         comment="Input@GRAD = Out@GRAD on the diagonal, 0 elsewhere.")


@DIAGONAL_GRAD.kernel()
def diagonal_grad(ctx, ins, attrs):
    x, g = ins
    return (_onto_diagonal(ctx.xp, x, g, attrs),)


INVERSE_GRAD = standard("inverse", outs=("Output",), out_grads=("Output",), in_grads=("Input",),
                        infer_from={"Input@GRAD": ("Output", False)},
                        comment="Input@GRAD = -Output^T Output@GRAD Output^T.")


@INVERSE_GRAD.kernel()
def inverse_grad(ctx, ins, attrs):
    xp = ctx.xp
    inv, g = ins
    return (-xp.matmul(xp.matmul(_t(inv), g), _t(inv)),)
