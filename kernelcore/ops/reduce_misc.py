"""Reductions with a formula of their own: logsumexp, dist (the p-norm of X - Y), renorm (slices scaled down to a
norm), kthvalue, and reduce_as (a sum down to another tensor's shape)."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._infer import normalize_axis
from .norms_p import p_norm_of

LOGSUMEXP = register_op(
    "logsumexp", "Out = log(sum(exp(X))) over `axis` (every dim with reduce_all or an empty axis), computed on X "
                 "minus its max.",
    inputs=[In("X", "the input tensor")], outputs=[Out("Out", "X reduced, X's dtype")],
    attrs=[Attr("axis", A.INTS, "the reduced dims", []), Attr("keepdim", A.BOOLEAN, "keep them with size 1", False),
           Attr("reduce_all", A.BOOLEAN, "reduce every dim", False)])


def logsumexp_axes(x, attrs):
    if attrs["reduce_all"] or not attrs["axis"] or x.ndim == 0:
        return tuple(range(x.ndim))
    return tuple(sorted({normalize_axis(a, x.ndim) for a in attrs["axis"]}))


@LOGSUMEXP.kernel()
def logsumexp(ctx, ins, attrs):
    xp = ctx.xp
    x = ins[0]
    axes = logsumexp_axes(x, attrs)
    m = x.max(axis=axes, keepdims=True) if x.size else xp.zeros((1,) * x.ndim, dtype=x.dtype)
    m = xp.where(xp.isfinite(m), m, x.dtype.type(0))
    out = xp.log(xp.exp(x - m).sum(axis=axes, keepdims=True)) + m
    return (out if attrs["keepdim"] else out.reshape([d for i, d in enumerate(out.shape) if i not in axes]),)


DIST = register_op("dist", "Out = the p-norm of X - Y (broadcast together) over every element.",
                   inputs=[In("X", "a tensor"), In("Y", "broadcastable against X")],
                   outputs=[Out("Out", "0-d, X's dtype")], attrs=[Attr("p", A.FLOAT, "p", 2.0)])


@DIST.kernel()
def dist(ctx, ins, attrs):
    x, y = ins
    return (p_norm_of(ctx.xp, (x - y).reshape(-1), attrs["p"], None, False).astype(x.dtype),)


RENORM = register_op(
    "renorm", "Out = X with each slice along `axis` whose p-norm exceeds max_norm scaled by max_norm / (norm + "
              "1e-7).",
    inputs=[In("X", "the input tensor")], outputs=[Out("Out", "X's shape and dtype")],
    attrs=[Attr("p", A.FLOAT, "p"), Attr("axis", A.INT, "the axis whose slices are scaled"),
           Attr("max_norm", A.FLOAT, "the largest norm kept")])


def renorm_scale(xp, x, attrs):
    """(each slice's norm, its scale), both shaped to broadcast against X."""
    axis = normalize_axis(attrs["axis"], x.ndim)
    others = tuple(d for d in range(x.ndim) if d != axis)
    norm = p_norm_of(xp, x, attrs["p"], others, True)
    limit = x.dtype.type(attrs["max_norm"])
    return norm, xp.where(norm > limit, limit / (norm + x.dtype.type(1e-7)), x.dtype.type(1))


@RENORM.kernel()
def renorm(ctx, ins, attrs):
    x = ins[0]
    return (x * renorm_scale(ctx.xp, x, attrs)[1],)


KTHVALUE = register_op(
    "kthvalue", "Out = the k-th smallest element along `axis` (k from 1); Indices = its position.",
    inputs=[In("X", "the input tensor")],
    outputs=[Out("Out", "X reduced along `axis`, X's dtype"), Out("Indices", "its positions, int64")],
    attrs=[Attr("k", A.INT, "which (1 = the smallest)"), Attr("axis", A.INT, "the axis", -1),
           Attr("keepdim", A.BOOLEAN, "keep the axis with size 1", False)])


@KTHVALUE.kernel()
def kthvalue(ctx, ins, attrs):
    xp = ctx.xp
    x = ins[0].reshape(-1) if ins[0].ndim == 0 else ins[0]
    axis = normalize_axis(attrs["axis"], x.ndim)
    k = attrs["k"]
    if not 1 <= k <= x.shape[axis]:
        raise ValueError(f"kthvalue: k={k} is outside [1, {x.shape[axis]}]")
    idx = xp.take(xp.argsort(x, axis=axis, kind="stable"), [k - 1], axis=axis)
    out = xp.take_along_axis(x, idx, axis=axis)
    if not attrs["keepdim"] or ins[0].ndim == 0:
        out, idx = out.squeeze(axis), idx.squeeze(axis)
    return out.reshape(out.shape if ins[0].ndim else ()), idx.astype(xp.int64).reshape(idx.shape if ins[0].ndim else ())


REDUCE_AS = register_op("reduce_as", "out = x summed over the dims where target's shape is 1 or missing.",
                        inputs=[In("x", "the tensor summed"), In("target", "whose shape x is summed to")],
                        outputs=[Out("out", "target's shape, x's dtype")])


def summed_to(t, shape):
    lead = t.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and t.shape[lead + i] != 1)
    return t.sum(axis=axes, keepdims=True).reshape(shape) if axes else t.reshape(shape).copy()


@REDUCE_AS.kernel()
def reduce_as(ctx, ins, attrs):
    x, target = ins
    return (summed_to(x, target.shape),)
