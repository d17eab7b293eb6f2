"""Small linear algebra Paddle writes as ops of their own: bmm, dot, mv, addmm, cross, trace, diagonal and
inverse. Matrices are the last two dims; leading dims are a batch."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._infer import normalize_axis


def _op(op_type, comment, inputs, outputs=(Out("Out", "the result, X's dtype"),), attrs=()):
    return register_op(op_type, comment, inputs=inputs, outputs=list(outputs), attrs=list(attrs))


BMM = _op("bmm", "Out[b] = X[b] @ Y[b].", [In("X", "[B, M, K]"), In("Y", "[B, K, N]")])


@BMM.kernel()
def bmm(ctx, ins, attrs):
    x, y = ins
    if x.ndim != 3 or y.ndim != 3 or x.shape[0] != y.shape[0] or x.shape[2] != y.shape[1]:
        raise ValueError(f"bmm takes [B, M, K] and [B, K, N], got {list(x.shape)} and {list(y.shape)}")
    return (ctx.xp.matmul(x, y),)


DOT = _op("dot", "Out = sum(X * Y) along the last dim (1-D: a 0-d tensor; 2-D: one value per row).",
          [In("X", "1-D or 2-D"), In("Y", "X's shape")])


@DOT.kernel()
def dot(ctx, ins, attrs):
    x, y = ins
    if x.shape != y.shape or x.ndim not in (1, 2):
        raise ValueError(f"dot takes two 1-D or 2-D tensors of one shape, got {list(x.shape)} and {list(y.shape)}")
    return ((x * y).sum(axis=-1),)


MV = _op("mv", "Out = X @ Vec.", [In("X", "[M, N]"), In("Vec", "[N]")])


@MV.kernel()
def mv(ctx, ins, attrs):
    x, v = ins
    if x.ndim != 2 or v.ndim != 1 or x.shape[1] != v.shape[0]:
        raise ValueError(f"mv takes [M, N] and [N], got {list(x.shape)} and {list(v.shape)}")
    return (ctx.xp.matmul(x, v),)


ADDMM = _op("addmm", "Out = Beta * Input + Alpha * (X @ Y), Input broadcast to [M, N].",
            [In("Input", "broadcastable to [M, N]"), In("X", "[M, K]"), In("Y", "[K, N]")],
            attrs=[Attr("Beta", A.FLOAT, "Input's factor", 1.0), Attr("Alpha", A.FLOAT, "the product's factor", 1.0)])


@ADDMM.kernel()
def addmm(ctx, ins, attrs):
    inp, x, y = ins
    t = x.dtype.type
    return ((t(attrs["Beta"]) * inp + t(attrs["Alpha"]) * ctx.xp.matmul(x, y)).astype(x.dtype, copy=False),)


CROSS = _op("cross", "Out = the cross product of X and Y along `dim` (default: the first dim of size 3).",
            [In("X", "a tensor with a dim of size 3"), In("Y", "X's shape")],
            attrs=[Attr("dim", A.INT, "the dim of size 3 (9, Paddle's default, picks the first such)", 9)])


def cross_dim(shape, dim: int) -> int:
    if dim == 9:  # Paddle's DefaultDim: no dim given
        found = [i for i, d in enumerate(shape) if d == 3]
        if not found:
            raise ValueError(f"cross: no dim of size 3 in {list(shape)}")
        return found[0]
    d = normalize_axis(dim, len(shape))
    if shape[d] != 3:
        raise ValueError(f"cross: dim {dim} of {list(shape)} has size {shape[d]}, not 3")
    return d


def cross_of(xp, a, b, d):
    return xp.cross(a, b, axis=d)


@CROSS.kernel()
def cross(ctx, ins, attrs):
    x, y = ins
    if x.shape != y.shape:
        raise ValueError(f"cross takes X and Y of one shape, got {list(x.shape)} and {list(y.shape)}")
    return (cross_of(ctx.xp, x, y, cross_dim(x.shape, attrs["dim"])),)


_DIAG_ATTRS = [Attr("offset", A.INT, "the diagonal (> 0 above the main one)", 0),
               Attr("axis1", A.INT, "the first matrix dim", 0), Attr("axis2", A.INT, "the second matrix dim", 1)]
TRACE = _op("trace", "Out = the sum of the diagonal `offset` of the matrices over (axis1, axis2).",
            [In("Input", "at least 2-D")], attrs=_DIAG_ATTRS)
DIAGONAL = _op("diagonal", "Out = the diagonal `offset` over (axis1, axis2), as the last dim.",
               [In("Input", "at least 2-D")], attrs=_DIAG_ATTRS)


def diagonal_of(xp, x, attrs):
    a1, a2 = normalize_axis(attrs["axis1"], x.ndim), normalize_axis(attrs["axis2"], x.ndim)
    if a1 == a2:
        raise ValueError(f"axis1 and axis2 must differ, both are {a1}")
    return xp.diagonal(x, attrs["offset"], a1, a2)


@TRACE.kernel()
def trace(ctx, ins, attrs):
    return (diagonal_of(ctx.xp, ins[0], attrs).sum(axis=-1),)


@DIAGONAL.kernel()
def diagonal(ctx, ins, attrs):
    return (diagonal_of(ctx.xp, ins[0], attrs).copy(),)


INVERSE = _op("inverse", "Output = Input^-1 for each matrix of the batch.", [In("Input", "[..., N, N]")],
              outputs=[Out("Output", "Input's shape and dtype")])


@INVERSE.kernel()
def inverse(ctx, ins, attrs):
    (a,) = ins
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"inverse takes square matrices [..., N, N], got {list(a.shape)}")
    return (ctx.xp.linalg.inv(a),)
