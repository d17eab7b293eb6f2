"""The gradient of spectral_norm (kernelcore/ops/spectral_norm.py), with u and v held fixed as Paddle's
spectral_norm_grad holds them: Weight@GRAD = G / sigma - sum(G * W) u v^T / sigma^2."""
from __future__ import annotations

from ..ops.spectral_norm import as_matrix, from_matrix, sigma_and_vectors
from ..transforms.backward import standard

SPECTRAL_NORM_GRAD = standard("spectral_norm", ins=("Weight", "U", "V"), in_grads=("Weight",),
                              comment="Weight@GRAD = Out@GRAD / sigma - sum(Out@GRAD * Weight) u v^T / sigma^2 "
                                      "(u, v the power iteration's, held fixed).")


@SPECTRAL_NORM_GRAD.kernel()
def spectral_norm_grad(ctx, ins, attrs):
    xp = ctx.xp
    w, u, v, g = ins
    mat, order = as_matrix(xp, w, attrs["dim"])
    gm, _ = as_matrix(xp, g, attrs["dim"])
    sigma, u, v = sigma_and_vectors(xp, mat, u, v, attrs)
    dm = gm / sigma - (gm * mat).sum() * (u[:, None] * v[None, :]) / (sigma * sigma)
    return (from_matrix(xp, dm, w.shape, order),)
