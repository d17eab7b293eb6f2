"""Vector and matrix norms as Paddle writes them: p_norm (paddle.linalg.norm / vector_norm, normalize, cdist,
pairwise_distance) and frobenius_norm (matrix_norm 'fro')."""
from __future__ import annotations

import math

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._infer import normalize_axis


def p_norm_of(xp, x, p: float, axis, keepdim: bool):
    """(sum |X|^p)^(1/p) along `axis` (None: all); p = inf / -inf: max / min |X|; p = 0: the nonzero count."""
    a = xp.abs(x)
    if p == math.inf:
        return a.max(axis=axis, keepdims=keepdim)
    if p == -math.inf:
        return a.min(axis=axis, keepdims=keepdim)
    if p == 0:
        return (a != 0).astype(x.dtype).sum(axis=axis, keepdims=keepdim)
    if p == 2:
        return xp.sqrt((x * x).sum(axis=axis, keepdims=keepdim))
    return xp.power(xp.power(a, x.dtype.type(p)).sum(axis=axis, keepdims=keepdim), x.dtype.type(1.0 / p))


def p_norm_axis(x_ndim: int, attrs):
    """The reduced axis, or None where `asvector` (or a 0-d X) takes every element."""
    if attrs["asvector"] or x_ndim == 0:
        return None
    return normalize_axis(attrs["axis"], x_ndim)


def _reduced_shape(shape, axes, keep: bool):
    return [1 if i in axes else d for i, d in enumerate(shape) if keep or i not in axes]


def _infer_p_norm(ic):
    shape = ic.shape("X")
    axis = None if ic.attr("asvector") or not shape else normalize_axis(ic.attr("axis"), len(shape), ic)
    axes = set(range(len(shape))) if axis is None else {axis}
    ic.set_output("Out", _reduced_shape(shape, axes, ic.attr("keepdim")), ic.dtype("X"))


P_NORM = register_op(
    "p_norm", "Out = (sum |X|^porder)^(1 / porder) along `axis` (every element with `asvector`); porder inf / -inf "
              "gives max / min |X|, porder 0 the count of nonzero elements.",
    inputs=[In("X", "the input tensor")], outputs=[Out("Out", "X reduced along `axis`, X's dtype")],
    attrs=[Attr("porder", A.FLOAT, "p", 2.0), Attr("axis", A.INT, "the reduced dim", -1),
           Attr("epsilon", A.FLOAT, "the floor of the norm a gradient divides by", 1e-12),
           Attr("keepdim", A.BOOLEAN, "keep the reduced dim with size 1", False),
           Attr("asvector", A.BOOLEAN, "reduce every element (X as one vector)", False)],
    infer_shape=_infer_p_norm)


@P_NORM.kernel()
def p_norm(ctx, ins, attrs):
    (x,) = ins
    return (p_norm_of(ctx.xp, x, attrs["porder"], p_norm_axis(x.ndim, attrs), attrs["keepdim"]),)


def frobenius_axes(ndim: int, attrs):
    if attrs["reduce_all"] or not attrs["dim"]:
        return tuple(range(ndim))
    return tuple(sorted({normalize_axis(d, ndim) for d in attrs["dim"]}))


def _infer_frobenius(ic):
    shape = ic.shape("X")
    axes = set(range(len(shape))) if ic.attr("reduce_all") or not ic.attr("dim") else \
        {normalize_axis(d, len(shape), ic) for d in ic.attr("dim")}
    ic.set_output("Out", _reduced_shape(shape, axes, ic.attr("keep_dim")), ic.dtype("X"))


FROBENIUS_NORM = register_op(
    "frobenius_norm", "Out = sqrt(sum X^2) over the dims in `dim` (every dim with `reduce_all`).",
    inputs=[In("X", "the input tensor")], outputs=[Out("Out", "X reduced over `dim`, X's dtype")],
    attrs=[Attr("dim", A.INTS, "the reduced dims", []),
           Attr("keep_dim", A.BOOLEAN, "keep the reduced dims with size 1", False),
           Attr("reduce_all", A.BOOLEAN, "reduce every dim", False),
           Attr("in_dtype", A.INT, "a dtype hint (ignored)", -1, extra=True),
           Attr("out_dtype", A.INT, "a dtype hint (ignored)", -1, extra=True)],
    infer_shape=_infer_frobenius)


@FROBENIUS_NORM.kernel()
def frobenius_norm(ctx, ins, attrs):
    (x,) = ins
    return (ctx.xp.sqrt((x * x).sum(axis=frobenius_axes(x.ndim, attrs), keepdims=attrs["keep_dim"])),)
