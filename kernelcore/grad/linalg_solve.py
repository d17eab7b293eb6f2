"""Gradients of kernelcore/ops/linalg_solve.py (matrix calculus, batched over the leading dims)."""
from __future__ import annotations

from .math import unbroadcast
from ..ops.linalg_solve import as_chain, as_matrix, factor_product, power_of, t, triangle_mask, triangular_matrix
from ..transforms.backward import standard, wanted


def _summed_to(g, shape):
    return unbroadcast(g, (1,) * (g.ndim - len(shape)) + tuple(shape), tuple(shape)).copy()


DETERMINANT_GRAD = standard("determinant", ins=("Input",), outs=("Out",), in_grads=("Input",),
                            comment="Input@GRAD = Out@GRAD Out Input^-T.")


@DETERMINANT_GRAD.kernel()
def determinant_grad(ctx, ins, attrs):
    xp = ctx.xp
    a, det, g = ins
    return ((g * det)[..., None, None] * t(xp.linalg.inv(a)),)


SLOGDET_GRAD = standard("slogdeterminant", ins=("Input",), in_grads=("Input",),
                        comment="Input@GRAD = Out@GRAD[1] Input^-T (the sign has none).")


@SLOGDET_GRAD.kernel()
def slogdeterminant_grad(ctx, ins, attrs):
    a, g = ins
    return (g[1][..., None, None] * t(ctx.xp.linalg.inv(a)),)


SOLVE_GRAD = standard("solve", ins=("X", "Y"), outs=("Out",), in_grads=("X", "Y"),
                      comment="Y@GRAD = X^-T Out@GRAD, X@GRAD = -Y@GRAD Out^T (each summed to its shape).")


@SOLVE_GRAD.kernel()
def solve_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, y, out, g = ins
    gm, om = as_matrix(g) if y.ndim == 1 else g, as_matrix(out) if y.ndim == 1 else out
    shape = xp.broadcast_shapes(x.shape[:-2], gm.shape[:-2])
    dy = xp.linalg.solve(xp.broadcast_to(t(x), shape + x.shape[-2:]), xp.broadcast_to(gm, shape + gm.shape[-2:]))
    dx = -xp.matmul(dy, t(om))
    return (_summed_to(dx, x.shape) if wanted(ctx, "X@GRAD") else None,
            _summed_to(dy[..., 0] if y.ndim == 1 else dy, y.shape) if wanted(ctx, "Y@GRAD") else None)


TRIANGULAR_SOLVE_GRAD = standard("triangular_solve", ins=("X", "Y"), outs=("Out",), in_grads=("X", "Y"),
                                 comment="Y@GRAD = op(X)^-T Out@GRAD; X@GRAD = -Y@GRAD Out^T (transposed back with "
                                         "`transpose`) on X's triangle.")


@TRIANGULAR_SOLVE_GRAD.kernel()
def triangular_solve_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, y, out, g = ins
    a = triangular_matrix(xp, x, attrs)
    shape = xp.broadcast_shapes(a.shape[:-2], g.shape[:-2])
    dy = xp.linalg.solve(xp.broadcast_to(t(a), shape + a.shape[-2:]), xp.broadcast_to(g, shape + g.shape[-2:]))
    da = -xp.matmul(dy, t(out))
    da = t(da) if attrs["transpose"] else da
    dx = da * triangle_mask(xp, x.shape[-1], attrs["upper"], attrs["unitriangular"], x.dtype)
    return (_summed_to(dx, x.shape) if wanted(ctx, "X@GRAD") else None,
            _summed_to(dy, y.shape) if wanted(ctx, "Y@GRAD") else None)


CHOLESKY_GRAD = standard("cholesky", outs=("Out",), in_grads=("X",), infer_from={"X@GRAD": ("Out", False)},
                         comment="X@GRAD = sym(L^-T Phi(L^T L@GRAD) L^-1), Phi the lower triangle with its "
                                 "diagonal halved, sym(S) = (S + S^T) / 2.")


@CHOLESKY_GRAD.kernel()
def cholesky_grad(ctx, ins, attrs):
    xp = ctx.xp
    out, g = ins
    low, gl = (t(out), t(g)) if attrs["upper"] else (out, g)
    n = low.shape[-1]
    phi = xp.tril(xp.matmul(t(low), gl)) * (1 - 0.5 * xp.eye(n, dtype=low.dtype))
    inv = xp.linalg.inv(low)
    s = xp.matmul(xp.matmul(t(inv), phi), inv)
    return ((s + t(s)) / 2,)


CHOLESKY_SOLVE_GRAD = standard("cholesky_solve", ins=("X", "Y"), outs=("Out",), in_grads=("X", "Y"),
                               comment="X@GRAD = A^-1 Out@GRAD; Y@GRAD = -(S + S^T) Y (lower) or -Y (S + S^T) "
                                       "(upper) on Y's triangle, S = X@GRAD Out^T.")


@CHOLESKY_SOLVE_GRAD.kernel()
def cholesky_solve_grad(ctx, ins, attrs):
    xp = ctx.xp
    b, y, out, g = ins
    a = factor_product(xp, y, attrs["upper"])
    shape = xp.broadcast_shapes(a.shape[:-2], g.shape[:-2])
    db = xp.linalg.solve(xp.broadcast_to(a, shape + a.shape[-2:]), xp.broadcast_to(g, shape + g.shape[-2:]))
    s = xp.matmul(db, t(out))
    sym = s + t(s)
    if attrs["upper"]:
        dy = -xp.triu(xp.matmul(xp.triu(y), sym))
    else:
        dy = -xp.tril(xp.matmul(sym, xp.tril(y)))
    return (_summed_to(db, b.shape) if wanted(ctx, "X@GRAD") else None,
            _summed_to(dy, y.shape) if wanted(ctx, "Y@GRAD") else None)


MATRIX_POWER_GRAD = standard("matrix_power", ins=("X",), outs=("Out",),
                             comment="X@GRAD = sum over k < n of (X^T)^k Out@GRAD (X^T)^(n-1-k); for n < 0 the "
                                     "same through B = X^-1, then -B^T B@GRAD B^T.")


def _power_grad(xp, b, g, m):
    bt = t(b)
    return sum(xp.matmul(xp.matmul(power_of(xp, bt, k), g), power_of(xp, bt, m - 1 - k)) for k in range(m)) \
        if m else xp.zeros_like(g)


@MATRIX_POWER_GRAD.kernel()
def matrix_power_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, _, g = ins
    n = attrs["n"]
    if n >= 0:
        return (_power_grad(xp, x, g, n),)
    b = xp.linalg.inv(x)
    db = _power_grad(xp, b, g, -n)
    return (-xp.matmul(xp.matmul(t(b), db), t(b)),)


MULTI_DOT_GRAD = standard("multi_dot", ins=("X",),
                          comment="X[i]@GRAD = (X[0] ... X[i-1])^T Out@GRAD (X[i+1] ... X[n-1])^T.")


@MULTI_DOT_GRAD.kernel()
def multi_dot_grad(ctx, ins, attrs):
    xp = ctx.xp
    xs, g = ins
    ms = as_chain(xs)
    gm = g
    if xs[0].ndim == 1:
        gm = gm[None]
    if xs[-1].ndim == 1:
        gm = gm[..., None]
    grads = []
    for i, m in enumerate(ms):
        left = xp.eye(ms[0].shape[0], dtype=g.dtype)
        for p in ms[:i]:
            left = xp.matmul(left, p)
        right = xp.eye(ms[-1].shape[1], dtype=g.dtype)
        for p in reversed(ms[i + 1:]):
            right = xp.matmul(p, right)
        grads.append(xp.matmul(xp.matmul(t(left), gm), t(right)).reshape(xs[i].shape))
    return (grads,)
