"""Gradients of the arithmetic ops (kernelcore/ops/math.py), with Paddle's grad-op slots.

Broadcasting: a forward elementwise op lines Y up with X from `axis` (ops.math.align); the gradient of
each operand is the output gradient summed over the dims that operand was broadcast along, then
reshaped to the operand's own shape (`unbroadcast`).
"""
from __future__ import annotations

import math

import numpy as np

from ..ops.math import align, leading_sums, matmul_whole, reduce_axes
from ..transforms.backward import GradContext, no_grad, rule, standard, wanted


def _fail(message: str):
    raise ValueError(message)


def unbroadcast(g, aligned_shape, shape):
    """Sum `g` down to `aligned_shape` (the operand as it took part in the broadcast: leading dims
    missing, size-1 dims stretched), then give it `shape`. Where nothing is summed the result is `g` itself
    (reshaped, a view), not a copy: no kernel writes into its inputs, and the executor donates a value to an
    in-place update only where nothing else holds it (runner.make_runner), so sharing is safe. The copy took
    190 us of each [8, 4, 128, 128] attention-mask add's gradient. A read-only `g` (a broadcast_to view) is
    still copied, so that every gradient a run hands back can be written to."""
    lead = g.ndim - len(aligned_shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(aligned_shape)
                                      if d == 1 and g.shape[lead + i] != 1)
    if axes and axes == tuple(range(len(axes))) and isinstance(g, np.ndarray):  # a bias's: the leading dims
        return leading_sums(np, g, len(axes)).reshape(shape)
    if axes:
        return g.sum(axis=axes, keepdims=True).reshape(shape)
    if isinstance(g, np.ndarray) and not g.flags.writeable:
        return g.reshape(shape).copy()
    return g.reshape(shape)


# -- elementwise_add/sub/mul/div ------------------------------------------------------------------------
def _aligned(ctx, x, y, axis):
    xa, ya = align(ctx.xp, x, y, axis) if axis != -1 else (x, y)
    return xa.shape, ya.shape


ADD_GRAD = standard("elementwise_add", ins=("X", "Y"), in_grads=("X", "Y"),
                    comment="X@GRAD, Y@GRAD = Out@GRAD, each summed over the dims its operand was "
                            "broadcast along.")


@ADD_GRAD.kernel()
def elementwise_add_grad(ctx, ins, attrs):
    x, y, g = ins
    xs, ys = _aligned(ctx, x, y, attrs["axis"])
    return (unbroadcast(g, xs, x.shape) if wanted(ctx, "X@GRAD") else None,
            unbroadcast(g, ys, y.shape) if wanted(ctx, "Y@GRAD") else None)


SUB_GRAD = standard("elementwise_sub", ins=("X", "Y"), in_grads=("X", "Y"),
                    comment="X@GRAD = Out@GRAD, Y@GRAD = -Out@GRAD, each summed over the dims its operand "
                            "was broadcast along.")


@SUB_GRAD.kernel()
def elementwise_sub_grad(ctx, ins, attrs):
    x, y, g = ins
    xs, ys = _aligned(ctx, x, y, attrs["axis"])
    return (unbroadcast(g, xs, x.shape) if wanted(ctx, "X@GRAD") else None,
            unbroadcast(-g, ys, y.shape) if wanted(ctx, "Y@GRAD") else None)


MUL_GRAD = standard("elementwise_mul", ins=("X", "Y"), in_grads=("X", "Y"),
                    comment="X@GRAD = Out@GRAD * Y, Y@GRAD = Out@GRAD * X, each summed over the dims its "
                            "operand was broadcast along.")


@MUL_GRAD.kernel()
def elementwise_mul_grad(ctx, ins, attrs):
    x, y, g = ins
    xa, ya = align(ctx.xp, x, y, attrs["axis"]) if attrs["axis"] != -1 else (x, y)
    return (unbroadcast(g * ya, xa.shape, x.shape) if wanted(ctx, "X@GRAD") else None,
            unbroadcast(g * xa, ya.shape, y.shape) if wanted(ctx, "Y@GRAD") else None)


DIV_GRAD = standard("elementwise_div", ins=("X", "Y"), outs=("Out",), in_grads=("X", "Y"),
                    comment="X@GRAD = Out@GRAD / Y, Y@GRAD = -Out@GRAD * Out / Y, each summed over the "
                            "dims its operand was broadcast along.")


@DIV_GRAD.kernel()
def elementwise_div_grad(ctx, ins, attrs):
    x, y, out, g = ins
    xa, ya = align(ctx.xp, x, y, attrs["axis"]) if attrs["axis"] != -1 else (x, y)
    dx = g / ya
    return (unbroadcast(dx, xa.shape, x.shape) if wanted(ctx, "X@GRAD") else None,
            unbroadcast(-dx * out, ya.shape, y.shape) if wanted(ctx, "Y@GRAD") else None)


# -- products -----------------------------------------------------------------------------------------
MUL_OP_GRAD = standard("mul", ins=("X", "Y"), in_grads=("X", "Y"),
                       comment="With X, Y and Out@GRAD flattened to matrices as the forward op flattens "
                               "them: X@GRAD = Out@GRAD * Y^T, Y@GRAD = X^T * Out@GRAD, in X's and Y's shapes.")


def mul_grad_kernel(matmul):
    """mul_grad's kernel, its products `matmul(xp, a, b)`'s."""
    def mul_grad(ctx, ins, attrs):
        return _mul_grad(ctx, ins, attrs, matmul)
    return mul_grad


def _mul_grad(ctx, ins, attrs, matmul):
    x, y, g = ins
    xn, yn = attrs["x_num_col_dims"], attrs["y_num_col_dims"]
    x2 = x.reshape(math.prod(x.shape[:xn]), math.prod(x.shape[xn:]))
    y2 = y.reshape(math.prod(y.shape[:yn]), math.prod(y.shape[yn:]))
    g2 = g.reshape(x2.shape[0], y2.shape[1])
    xp = ctx.xp
    return (matmul(xp, g2, y2.T).reshape(x.shape) if wanted(ctx, "X@GRAD") else None,
            matmul(xp, x2.T, g2).reshape(y.shape) if wanted(ctx, "Y@GRAD") else None)


MUL_OP_GRAD.kernel()(mul_grad_kernel(matmul_whole))


MATMUL_V2_GRAD = standard("matmul_v2", ins=("X", "Y"), in_grads=("X", "Y"),
                          comment="The gradients of Out = op(X) @ op(Y): Out@GRAD @ op(Y)^T and "
                                  "op(X)^T @ Out@GRAD (transposed back where trans_x / trans_y), summed over "
                                  "broadcast batch dims; a 1-D operand's added dim is dropped again.")


def matmul_v2_grad_kernel(matmul):
    """matmul_v2_grad's kernel, its products `matmul(xp, a, b)`'s."""
    def matmul_v2_grad(ctx, ins, attrs):
        return _matmul_v2_grad(ctx, ins, attrs, matmul)
    return matmul_v2_grad


def _matmul_v2_grad(ctx, ins, attrs, matmul):
    xp = ctx.xp
    x, y, g = ins
    tx, ty = attrs["trans_x"] and x.ndim >= 2, attrs["trans_y"] and y.ndim >= 2
    xm = x[None, :] if x.ndim == 1 else x  # the operands as the product saw them
    ym = y[:, None] if y.ndim == 1 else y
    if y.ndim == 1:  # put back the dims the forward dropped from Out
        g = g[..., None]
    if x.ndim == 1:
        g = g[..., None, :]
    a = xp.swapaxes(xm, -1, -2) if tx else xm  # [..., M, K]
    b = xp.swapaxes(ym, -1, -2) if ty else ym  # [..., K, N]
    dx = dy = None
    if wanted(ctx, "X@GRAD"):
        da = matmul(xp, g, xp.swapaxes(b, -1, -2))
        dx = unbroadcast(xp.swapaxes(da, -1, -2) if tx else da, xm.shape, x.shape)
    if wanted(ctx, "Y@GRAD"):
        db = matmul(xp, xp.swapaxes(a, -1, -2), g)
        dy = unbroadcast(xp.swapaxes(db, -1, -2) if ty else db, ym.shape, y.shape)
    return dx, dy


MATMUL_V2_GRAD.kernel()(matmul_v2_grad_kernel(matmul_whole))


COSINE_GRAD = standard("cosine", ins=("a", "b"), outs=("output",), out_grads=("output",), in_grads=("a", "b"),
                       comment="kernelcore's cosine (seed 003; Paddle's own is cos_sim): a@GRAD = "
                               "output@GRAD * (scale * b / (|a| |b|) - output * a / |a|^2), b@GRAD likewise.")


@COSINE_GRAD.kernel()
def cosine_grad(ctx, ins, attrs):
    xp = ctx.xp
    a, b, out, g = ins
    na = xp.sqrt((a * a).sum(axis=1, keepdims=True))
    nb = xp.sqrt((b * b).sum(axis=1, keepdims=True))
    s = attrs["scale"]
    da = g * (s * b / (na * nb) - out * a / (na * na)) if wanted(ctx, "a@GRAD") else None
    db = g * (s * a / (na * nb) - out * b / (nb * nb)) if wanted(ctx, "b@GRAD") else None
    return da, db


# -- sums, means, scaling -----------------------------------------------------------------------------
@rule("sum")
def sum_grad_rule(g: GradContext):
    """Paddle's SumGradDescMaker: each wanted X[i]@GRAD = scale(Out@GRAD, 1.0), one op per input."""
    og = g.output_grad("Out")
    return [g.grad_op("scale", {"X": og}, {"Out": [xg]}, {"scale": 1.0}) for xg in g.input_grad("X")]


@rule("scale")
def scale_grad_rule(g: GradContext):
    """Paddle's ScaleGradMaker: X@GRAD = scale * Out@GRAD (no bias; ScaleTensor, if given, again)."""
    inputs = {"X": g.output_grad("Out")}
    if g.has_input("ScaleTensor"):
        inputs["ScaleTensor"] = g.input("ScaleTensor")
    return [g.grad_op("scale", inputs, {"Out": g.input_grad("X")},
                      {"scale": g.attr("scale", 1.0), "bias": 0.0, "bias_after_scale": True})]


MEAN_GRAD = standard("mean", ins=("X",), comment="X@GRAD = Out@GRAD / numel(X) in every element.")


@MEAN_GRAD.kernel()
def mean_grad(ctx, ins, attrs):
    x, g = ins
    n = max(x.size, 1)
    return (ctx.xp.broadcast_to(g.reshape(()) / n, x.shape).astype(x.dtype),)  # astype: our own copy


def _expand_back(ctx, x, g, attrs):
    """Out@GRAD broadcast back over the reduced dims of X; returns (array, count of reduced elements)."""
    axes = reduce_axes(attrs["dim"], x.ndim, attrs["reduce_all"], _fail)
    kept = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    n = math.prod(x.shape[a] for a in axes)
    return ctx.xp.broadcast_to(g.reshape(kept), x.shape), n


REDUCE_SUM_GRAD = standard("reduce_sum", ins=("X",),
                           comment="X@GRAD = Out@GRAD broadcast back over the reduced dims, in X's dtype.")


@REDUCE_SUM_GRAD.kernel()
def reduce_sum_grad(ctx, ins, attrs):
    x, g = ins
    e, _ = _expand_back(ctx, x, g, attrs)
    return (e.astype(x.dtype),)  # astype copies: the broadcast view is read-only


REDUCE_MEAN_GRAD = standard("reduce_mean", ins=("X",),
                            comment="X@GRAD = Out@GRAD / (number of reduced elements), broadcast back over "
                                    "the reduced dims.")


@REDUCE_MEAN_GRAD.kernel()
def reduce_mean_grad(ctx, ins, attrs):
    x, g = ins
    e, n = _expand_back(ctx, x, g, attrs)
    return ((e / max(n, 1)).astype(x.dtype),)


no_grad("less_than", "less_equal", "greater_than", "greater_equal", "equal", "not_equal")
