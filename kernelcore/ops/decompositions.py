"""Matrix decompositions of the last two dims: svd (reduced or full), qr (reduced, complete or 'r') and the
symmetric eigendecompositions eigh / eigvalsh (eigenvalues ascending)."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, one_of, register_op

SVD = register_op(
    "svd", "X = U diag(S) VH, S descending; U [..., M, K], VH [..., K, N] with K = min(M, N) (full_matrices: M and N).",
    inputs=[In("X", "[..., M, N]")],
    outputs=[Out("U", "the left singular vectors (optional: svdvals writes none)", dispensable=True),
             Out("S", "[..., K] the singular values"),
             Out("VH", "the right singular vectors, transposed (optional)", dispensable=True)],
    attrs=[Attr("full_matrices", A.BOOLEAN, "square U and VH", False)])


def parts(xp, result):
    """A decomposition's arrays as device arrays: a no-op on CuPy's; the strict stand-in hands tuple results'
    parts back as host arrays."""
    return tuple(xp.asarray(r) for r in result)


def _matrices(x, op_type):
    if x.ndim < 2:
        raise ValueError(f"{op_type} takes matrices [..., M, N], got {list(x.shape)}")
    return x


@SVD.kernel()
def svd(ctx, ins, attrs):
    u, s, vh = parts(ctx.xp, ctx.xp.linalg.svd(_matrices(ins[0], "svd"), full_matrices=attrs["full_matrices"]))
    return u, s, vh


QR = register_op(
    "qr", "X = Q R, Q with orthonormal columns, R upper triangular; mode 'reduced' (K = min(M, N) columns), "
          "'complete' (Q square) or 'r' (R only; Q empty).",
    inputs=[In("X", "[..., M, N]")], outputs=[Out("Q", "[..., M, K] (or [..., M, M])"), Out("R", "[..., K, N]")],
    attrs=[Attr("mode", A.STRING, "'reduced', 'complete' or 'r'", "reduced",
                checks=(one_of("reduced", "complete", "r"),))])


@QR.kernel()
def qr(ctx, ins, attrs):
    xp = ctx.xp
    x = _matrices(ins[0], "qr")
    mode = attrs["mode"]
    q, r = parts(xp, xp.linalg.qr(x, mode="complete" if mode == "complete" else "reduced"))
    return (xp.zeros((0,), dtype=x.dtype) if mode == "r" else q), r


def _make_eigh(op_type, what):
    d = register_op(
        op_type, f"X = V diag(w) V^T for symmetric X (read from its UPLO triangle); {what}.",
        inputs=[In("X", "[..., N, N] symmetric")],
        outputs=[Out("Eigenvalues", "[..., N] ascending"), Out("Eigenvectors", "[..., N, N], one per column")],
        attrs=[Attr("UPLO", A.STRING, "'L' or 'U': the triangle read", "L", checks=(one_of("L", "U"),))])

    @d.kernel()
    def kernel(ctx, ins, attrs):
        x = _matrices(ins[0], op_type)
        w, v = parts(ctx.xp, ctx.xp.linalg.eigh(x, UPLO=attrs["UPLO"]))
        return w, v
    kernel.__name__ = op_type


_make_eigh("eigh", "both")
_make_eigh("eigvalsh", "the eigenvectors kept for the gradient")
