"""Gradients of kernelcore/ops/decompositions.py (real matrices), from the outputs and their gradients."""
from __future__ import annotations

from ..transforms.backward import standard


def _t(m):
    return m.swapaxes(-1, -2)


def _zero_if_none(xp, g, like):
    return xp.zeros_like(like) if g is None else g


def _off_diagonal_inverse(xp, e):
    """1 / E off the diagonal, 0 on it (E antisymmetric: differences of eigen- or squared singular values)."""
    n = e.shape[-1]
    eye = xp.eye(n, dtype=bool)
    return xp.where(eye, e.dtype.type(0), 1 / xp.where(eye, e.dtype.type(1), e))


SVD_GRAD = standard("svd", ins=("X",), outs=("U", "S", "VH"), out_grads=("U", "S", "VH"),
                    comment="X@GRAD = U [(F o skew(U^T gU)) S + S (F o skew(V^T gV)) + diag(gS)] VH + "
                            "(I - U U^T) gU S^-1 VH + U S^-1 gV^T (I - V VH), F = 1 / (S_j^2 - S_i^2) off the diagonal "
                            "(reduced: full_matrices false).")


@SVD_GRAD.kernel()
def svd_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, u, s, vh, gu, gs, gvh = ins
    if attrs["full_matrices"] and x.shape[-1] != x.shape[-2]:
        raise ValueError("svd's gradient needs full_matrices=false for a non-square X")
    gu, gs, gvh = _zero_if_none(xp, gu, u), _zero_if_none(xp, gs, s), _zero_if_none(xp, gvh, vh)
    v, gv = _t(vh), _t(gvh)
    f = _off_diagonal_inverse(xp, s[..., None, :] ** 2 - s[..., :, None] ** 2)
    utgu, vtgv = xp.matmul(_t(u), gu), xp.matmul(_t(v), gv)
    inner = (f * (utgu - _t(utgu))) * s[..., None, :] + s[..., :, None] * (f * (vtgv - _t(vtgv)))
    inner = inner + gs[..., :, None] * xp.eye(s.shape[-1], dtype=s.dtype)
    dx = xp.matmul(xp.matmul(u, inner), vh)
    inv_s = 1 / s
    m, n = x.shape[-2], x.shape[-1]
    if m > s.shape[-1]:  # the part of gU outside U's span
        dx = dx + xp.matmul((gu - xp.matmul(u, utgu)) * inv_s[..., None, :], vh)
    if n > s.shape[-1]:
        dx = dx + xp.matmul(u * inv_s[..., None, :], _t(gv - xp.matmul(v, vtgv)))
    return (dx,)


QR_GRAD = standard("qr", ins=("X",), outs=("Q", "R"), out_grads=("Q", "R"),
                   comment="M >= N, reduced: X@GRAD = Q (gR + tril(Q^T gQ - gQ^T Q + R gR^T - gR R^T) R^-T) + "
                           "(gQ - Q Q^T gQ) R^-T; M < N: that for X's first M columns with gQ + X[:, M:] gR[:, M:]^T, "
                           "and Q gR[:, M:] for the rest.")


def _times_inverse_transposed_r(xp, a, r):
    """a R^-T, by solving R Y = a^T."""
    return _t(xp.linalg.solve(r, _t(a)))


def _qr_grad_tall(xp, q, r, gq, gr):
    """The gradient for M >= N (R square), after TensorFlow's QrGrad."""
    qdq = xp.matmul(_t(q), gq)
    rdr = xp.matmul(r, _t(gr))
    low = xp.tril(qdq - _t(qdq) + rdr - _t(rdr))
    grad_a = xp.matmul(q, gr + _times_inverse_transposed_r(xp, low, r))
    return grad_a + _times_inverse_transposed_r(xp, gq - xp.matmul(q, qdq), r)


@QR_GRAD.kernel()
def qr_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, q, r, gq, gr = ins
    m, n = x.shape[-2], x.shape[-1]
    if attrs["mode"] == "r" or (attrs["mode"] == "complete" and m > n):
        raise ValueError(f"qr's gradient needs Q: mode 'reduced' (or 'complete' with M <= N), got mode "
                         f"{attrs['mode']!r} and X {list(x.shape)}")
    gq, gr = _zero_if_none(xp, gq, q), _zero_if_none(xp, gr, r)
    if m >= n:
        return (_qr_grad_tall(xp, q, r, gq, gr),)
    # M < N: X = [A | B] with A = Q R[:, :M] square; B = Q R[:, M:] adds gQ's share B gR[:, M:]^T
    b, gr_right = x[..., m:], gr[..., m:]
    da = _qr_grad_tall(xp, q, r[..., :m], gq + xp.matmul(b, _t(gr_right)), gr[..., :m])
    return (xp.concatenate([da, xp.matmul(q, gr_right)], axis=-1),)


def _eigh_grad(op_type):
    d = standard(op_type, ins=("X",), outs=("Eigenvalues", "Eigenvectors"), out_grads=("Eigenvalues", "Eigenvectors"),
                 comment="X@GRAD = V (diag(gw) + (V^T gV - gV^T V) / (2 (w_j - w_i))) V^T, as Paddle's eigh_grad.")

    @d.kernel()
    def kernel(ctx, ins, attrs):
        xp = ctx.xp
        x, w, v, gw, gv = ins
        gw, gv = _zero_if_none(xp, gw, w), _zero_if_none(xp, gv, v)
        vtgv = xp.matmul(_t(v), gv)
        inner = (vtgv - _t(vtgv)) * w.dtype.type(0.5) * _off_diagonal_inverse(xp, w[..., None, :] - w[..., :, None])
        inner = inner + gw[..., :, None] * xp.eye(w.shape[-1], dtype=w.dtype)
        return (xp.matmul(xp.matmul(v, inner), _t(v)),)
    kernel.__name__ = f"{op_type}_grad"


_eigh_grad("eigh")
_eigh_grad("eigvalsh")
