"""histogram (paddle.histogram) and matrix_rank: counts of values, and of singular values above a tolerance."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from .tensor import check_new_shape

HISTOGRAM = register_op(
    "histogram", "Out = the count of X's values (or their Weight's sum) in each of `bins` equal bins over [min, max] "
                 "(min == max: X's own range); density divides by the total and the bin width.",
    inputs=[In("X", "the values"), In("Weight", "X's shape", dispensable=True)],
    outputs=[Out("Out", "[bins], int64 (X's dtype with Weight or density)")],
    attrs=[Attr("bins", A.LONG, "how many bins", 100), Attr("min", A.FLOAT, "the range's low end", 0.0),
           Attr("max", A.FLOAT, "the range's high end", 0.0), Attr("density", A.BOOLEAN, "normalise", False)])


@HISTOGRAM.kernel()
def histogram(ctx, ins, attrs):
    xp = ctx.xp
    x, w = ins
    bins = attrs["bins"]
    if bins <= 0:
        raise ValueError(f"histogram: bins must be positive, got {bins}")
    check_new_shape([bins])
    lo, hi = attrs["min"], attrs["max"]
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise ValueError(f"histogram: min {lo} exceeds max {hi}")
    counts, _ = xp.histogram(x.reshape(-1), bins=bins, range=(lo, hi),
                             weights=None if w is None else w.reshape(-1), density=attrs["density"])
    if w is None and not attrs["density"]:
        return (counts.astype(xp.int64),)
    return (counts.astype(x.dtype),)


MATRIX_RANK = register_op(
    "matrix_rank", "Out = how many singular values of each matrix exceed the tolerance (default: the largest "
                   "singular value * max(M, N) * the dtype's epsilon).",
    inputs=[In("X", "[..., M, N]"), In("TolTensor", "overrides tol, broadcast over the batch", dispensable=True)],
    outputs=[Out("Out", "[...], int64")],
    attrs=[Attr("tol", A.FLOAT, "the absolute tolerance", 0.0), Attr("hermitian", A.BOOLEAN, "X is symmetric", False),
           Attr("use_default_tol", A.BOOLEAN, "use the default tolerance", True)])


@MATRIX_RANK.kernel()
def matrix_rank(ctx, ins, attrs):
    xp = ctx.xp
    x, tol_t = ins
    if x.ndim < 2:
        raise ValueError(f"matrix_rank takes [..., M, N], got {list(x.shape)}")
    sv = xp.abs(xp.linalg.eigvalsh(x)) if attrs["hermitian"] else xp.linalg.svd(x, compute_uv=False)
    if tol_t is not None:
        tol = tol_t.astype(sv.dtype)[..., None]
    elif attrs["use_default_tol"]:
        tol = sv.max(axis=-1, keepdims=True) * max(x.shape[-2:]) * xp.finfo(x.dtype).eps
    else:
        tol = sv.dtype.type(attrs["tol"])
    return ((sv > tol).sum(axis=-1).astype(xp.int64),)
