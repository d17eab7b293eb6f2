"""Gradients of kernelcore/ops/complex_parts.py (a complex value's gradient is dL/dRe + i dL/dIm)."""
from __future__ import annotations

from .math import unbroadcast
from ..transforms.backward import standard, wanted


def _register(op_type, formula, body):
    d = standard(op_type, ins=("X",), comment=f"The gradient of {op_type}: X@GRAD = {formula}.")

    def kernel(ctx, ins, attrs):
        x, g = ins
        return (body(ctx.xp, x, g).astype(x.dtype, copy=False),)
    kernel.__name__ = f"{op_type}_grad"
    d.kernel()(kernel)


_register("real", "Out@GRAD + 0i", lambda xp, x, g: g.astype(x.dtype))
_register("imag", "0 + Out@GRAD i", lambda xp, x, g: 1j * g)
_register("conj", "conj(Out@GRAD)", lambda xp, x, g: xp.conj(g))
_register("as_complex", "[real, imag] of Out@GRAD", lambda xp, x, g: xp.stack([xp.real(g), xp.imag(g)], axis=-1))
_register("as_real", "Out@GRAD[..., 0] + i Out@GRAD[..., 1]", lambda xp, x, g: g[..., 0] + 1j * g[..., 1])


def _angle_grad(xp, x, g):
    if x.dtype.kind != "c":
        return xp.zeros_like(x)
    r2 = xp.real(x) ** 2 + xp.imag(x) ** 2
    safe = xp.where(r2 > 0, r2, 1)
    return xp.where(r2 > 0, g * (-xp.imag(x) + 1j * xp.real(x)) / safe, 0)


_register("angle", "Out@GRAD (-imag(X) + i real(X)) / |X|^2 (0 for a real X)", _angle_grad)

COMPLEX_GRAD = standard("complex", ins=("X", "Y"), in_grads=("X", "Y"),
                        comment="X@GRAD = real(Out@GRAD), Y@GRAD = imag(Out@GRAD), each summed to its shape.")


@COMPLEX_GRAD.kernel()
def complex_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, y, g = ins
    back = lambda t, s: unbroadcast(t, (1,) * (t.ndim - len(s)) + tuple(s), tuple(s)).copy()  # noqa: E731
    return (back(xp.real(g), x.shape).astype(x.dtype) if wanted(ctx, "X@GRAD") else None,
            back(xp.imag(g), y.shape).astype(y.dtype) if wanted(ctx, "Y@GRAD") else None)
