"""The gradient of bilinear_tensor_product (kernelcore/ops/bilinear.py)."""
from __future__ import annotations

from ..transforms.backward import standard, wanted

BILINEAR_GRAD = standard(
    "bilinear_tensor_product", ins=("X", "Y", "Weight", "Bias"), in_grads=("X", "Y", "Weight", "Bias"),
    comment="X@GRAD = G W Y, Y@GRAD = G X W, Weight@GRAD[k] = sum over b of G[b, k] X[b]^T Y[b], "
            "Bias@GRAD = sum over b of G.")


@BILINEAR_GRAD.kernel()
def bilinear_tensor_product_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, y, w, bias, g = ins
    return (xp.einsum("bk,kij,bj->bi", g, w, y) if wanted(ctx, "X@GRAD") else None,
            xp.einsum("bk,kij,bi->bj", g, w, x) if wanted(ctx, "Y@GRAD") else None,
            xp.einsum("bk,bi,bj->kij", g, x, y) if wanted(ctx, "Weight@GRAD") else None,
            g.sum(axis=0).reshape(bias.shape) if bias is not None and wanted(ctx, "Bias@GRAD") else None)
