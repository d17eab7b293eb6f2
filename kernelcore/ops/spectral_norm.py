"""spectral_norm (paddle.nn.SpectralNorm): Out = Weight / sigma, sigma its largest singular value as power_iters
rounds of power iteration from U and V estimate it (Weight seen as a matrix with `dim` first)."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._infer import normalize_axis, same_as

SPECTRAL_NORM = register_op(
    "spectral_norm", "Out = Weight / sigma, sigma = u^T W v after power_iters rounds v = W^T u / |W^T u|, u = W v / "
                     "|W v| (each norm plus eps).",
    inputs=[In("Weight", "the weight, at least 2-D"), In("U", "[H] the left vector's start"),
            In("V", "[W] the right vector's start")],
    outputs=[Out("Out", "Weight's shape and dtype")],
    attrs=[Attr("dim", A.INT, "the dim that becomes the matrix's rows", 0),
           Attr("power_iters", A.INT, "rounds of power iteration", 1),
           Attr("eps", A.FLOAT, "added to each norm", 1e-12)],
    infer_shape=same_as("Weight", "Out"))


def as_matrix(xp, w, dim_attr):
    """(Weight as [H, W] with `dim` first, the order that moved it)."""
    dim = normalize_axis(dim_attr, w.ndim)
    order = [dim] + [d for d in range(w.ndim) if d != dim]
    return w.transpose(order).reshape(w.shape[dim], -1), order


def from_matrix(xp, m, shape, order):
    moved = m.reshape([shape[d] for d in order])
    inverse = [order.index(d) for d in range(len(shape))]
    return xp.ascontiguousarray(moved.transpose(inverse))


def sigma_and_vectors(xp, mat, u, v, attrs):
    eps = mat.dtype.type(attrs["eps"])
    u, v = u.reshape(-1).astype(mat.dtype), v.reshape(-1).astype(mat.dtype)
    for _ in range(attrs["power_iters"]):
        v = mat.T @ u
        v = v / (xp.sqrt((v * v).sum()) + eps)
        u = mat @ v
        u = u / (xp.sqrt((u * u).sum()) + eps)
    return (u * (mat @ v)).sum(), u, v


@SPECTRAL_NORM.kernel()
def spectral_norm(ctx, ins, attrs):
    xp = ctx.xp
    w, u, v = ins
    mat, order = as_matrix(xp, w, attrs["dim"])
    sigma, _, _ = sigma_and_vectors(xp, mat, u, v, attrs)
    return (from_matrix(xp, mat / sigma, w.shape, order),)
