"""Gradients of the normalisations (kernelcore/ops/norm.py): batch_norm, group_norm, instance_norm and layer_norm,
by their closed forms. Slots follow Paddle's grad ops where Paddle's maker reads the forward input; group_norm_grad
reads X (Paddle's reads Y), which the closed form needs anyway; layer_norm_grad's are those Paddle 2.6.2's backward
writes.
"""
from __future__ import annotations

import math

from ..ir.registry import In, Out, get_op_def, register_op
from ..ops.math import leading_sums
from ..ops.norm import batch_norm_grad_factors, layer_norm_rows, row_means, uses_global_stats
from ..transforms.backward import rule, standard, wanted


# ---------------------------------------------------------------------------
# normalisation
# ---------------------------------------------------------------------------
def _norm_backward(xhat, inv, dxhat, axes):
    """X@GRAD of xhat = (x - mean) * inv with mean/var over `axes`: inv * (dxhat - mean(dxhat) - xhat *
    mean(dxhat * xhat))."""
    return inv * (dxhat - dxhat.mean(axis=axes, keepdims=True) - xhat * (dxhat * xhat).mean(axis=axes, keepdims=True))


def _bn_grad_infer(ic):
    for slot in ("X", "Scale", "Bias"):
        ic.set_output(f"{slot}@GRAD", ic.shape(slot), ic.dtype(slot))


def _bn_grad_op():
    fwd = get_op_def("batch_norm")
    return register_op(
        "batch_norm_grad",
        "The gradient of batch_norm, with Paddle's slots (its maker passes MeanOut/VarianceOut, which are the "
        "Mean/Variance variables, not Mean/Variance). Batch statistics: X@GRAD = Scale * inv / N * (N * Y@GRAD - "
        "Bias@GRAD - xhat * Scale@GRAD) with inv = SavedVariance, xhat = (X - SavedMean) * inv; global statistics: "
        "X@GRAD = Y@GRAD * Scale / sqrt(VarianceOut + epsilon). Scale@GRAD = sum(Y@GRAD * xhat), Bias@GRAD = "
        "sum(Y@GRAD) over all axes but the channel axis.",
        inputs=[In("X", "forward input"), In("Scale", "forward input"), In("Bias", "forward input"),
                In("SavedMean", "forward output: the batch mean"),
                In("SavedVariance", "forward output: the batch's 1 / sqrt(var + epsilon)"),
                In("MeanOut", "forward output: the running mean (read with global statistics)", dispensable=True),
                In("VarianceOut", "forward output: the running variance (read with global statistics)",
                   dispensable=True),
                In("ReserveSpace", "cuDNN scratch space (ignored)", dispensable=True),
                In("Y@GRAD", "the gradient of the loss with respect to Y")],
        outputs=[Out(f"{s}@GRAD", f"the gradient of the loss with respect to {s}, {s}'s shape", dispensable=True)
                 for s in ("X", "Scale", "Bias")],
        attrs=list(fwd.attrs.values()), infer_shape=_bn_grad_infer)


BN_GRAD = _bn_grad_op()


@rule("batch_norm")
def batch_norm_grad_rule(g):
    inputs = {"X": g.input("X"), "Scale": g.input("Scale"), "Bias": g.input("Bias"),
              "SavedMean": g.output("SavedMean"), "SavedVariance": g.output("SavedVariance"),
              "MeanOut": g.output("MeanOut"), "VarianceOut": g.output("VarianceOut"),
              "Y@GRAD": g.output_grad("Y")}
    if g.output("ReserveSpace"):
        inputs["ReserveSpace"] = g.output("ReserveSpace")
    outputs = {f"{s}@GRAD": g.input_grad(s) for s in ("X", "Scale", "Bias")}
    return [g.grad_op("batch_norm_grad", inputs, outputs, copy_attrs=True)]


@BN_GRAD.kernel()
def batch_norm_grad(ctx, ins, attrs):
    """With xc = X - mean and k = Scale * inv: Bias@GRAD = sum(g), Scale@GRAD = inv * sum(g * xc); batch
    statistics: X@GRAD = k * (g - Bias@GRAD / N - xc * inv^2 * sum(g * xc) / N), in four passes over one fresh
    array (xhat and the closed form's means are per-channel factors here, never full-size temporaries).
    float16 input is worked in float32 (as Paddle's MPType): its sums over a batch overflow float16."""
    from ..ops.norm import channel_axis, channel_dot, channel_sum, per_channel, stats_dtype
    xp = ctx.xp
    x_in, scale, _bias, saved_mean, saved_inv, mean, var, _reserve, g = ins
    ct = stats_dtype(x_in.dtype)
    x, g = x_in.astype(ct, copy=False), g.astype(ct, copy=False)
    axis = channel_axis(x.ndim, attrs["data_layout"])
    global_stats = uses_global_stats(ctx, attrs)
    m, inv, sc = batch_norm_grad_factors(xp, ins, attrs, global_stats, ct)
    xc = x - per_channel(xp, m, x.shape, axis)  # ours
    dbias = channel_sum(xp, g, axis)
    dscale = inv * channel_dot(xp, g, xc, axis)
    dx = None
    if wanted(ctx, "X@GRAD"):
        k = sc * inv
        if global_stats:
            dx = g * per_channel(xp, k, x.shape, axis)
        else:
            count = ct(x.size // x.shape[axis])
            xc *= per_channel(xp, inv * dscale / count, x.shape, axis)   # xhat * mean(g * xhat)
            dx = xp.subtract(g, xc, out=xc)
            dx -= per_channel(xp, dbias / count, x.shape, axis)
            dx *= per_channel(xp, k, x.shape, axis)
        dx = dx.astype(x_in.dtype, copy=False)
    return (dx, dscale.astype(scale.dtype) if wanted(ctx, "Scale@GRAD") else None,
            dbias.astype(scale.dtype) if wanted(ctx, "Bias@GRAD") else None)


GROUP_NORM_GRAD = standard("group_norm", ins=("X", "Scale", "Bias"), outs=("Mean", "Variance"), out_grads=("Y",),
                           in_grads=("X", "Scale", "Bias"),
                           comment="The gradient of group_norm (closed form over each (sample, group)).")


@GROUP_NORM_GRAD.kernel()
def group_norm_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, scale, bias, mean, var, g = ins
    last = attrs["data_layout"] in ("NHWC", "NDHWC", "NLC")
    xc, gc = (xp.moveaxis(x, -1, 1), xp.moveaxis(g, -1, 1)) if last else (x, g)
    n, c = xc.shape[:2]
    grp = attrs["groups"]
    inv = 1.0 / xp.sqrt(var + var.dtype.type(attrs["epsilon"]))
    xg = xc.reshape(n, grp, -1)
    xhat = (xg - mean[:, :, None]) * inv[:, :, None]
    cshape = (1, c) + (1,) * (xc.ndim - 2)
    dy = gc if scale is None else gc * scale.reshape(cshape)
    dx = _norm_backward(xhat, inv[:, :, None], dy.reshape(n, grp, -1), (2,)).reshape(xc.shape)
    red = tuple(a for a in range(xc.ndim) if a != 1)
    xhat_full = xhat.reshape(xc.shape)
    dscale = (gc * xhat_full).sum(axis=red) if scale is not None else None
    dbias = gc.sum(axis=red) if bias is not None else None
    if last:
        dx = xp.ascontiguousarray(xp.moveaxis(dx, 1, -1))
    return dx, dscale, dbias


INSTANCE_NORM_GRAD = standard("instance_norm", ins=("X", "Scale", "Bias"), outs=("SavedMean", "SavedVariance"),
                              out_grads=("Y",), in_grads=("X", "Scale", "Bias"),
                              comment="The gradient of instance_norm (closed form over each (sample, channel)).")


@INSTANCE_NORM_GRAD.kernel()
def instance_norm_grad(ctx, ins, attrs):
    x, scale, bias, saved_mean, saved_inv, g = ins
    n, c = x.shape[:2]
    xf = x.reshape(n, c, -1)
    inv = saved_inv.reshape(n, c, 1).astype(x.dtype)
    xhat = (xf - saved_mean.reshape(n, c, 1).astype(x.dtype)) * inv
    gf = g.reshape(n, c, -1)
    dy = gf if scale is None else gf * scale.reshape(1, c, 1)
    dx = _norm_backward(xhat, inv, dy, (2,)).reshape(x.shape)
    dscale = (gf * xhat).sum(axis=(0, 2)) if scale is not None else None
    dbias = gf.sum(axis=(0, 2)) if bias is not None else None
    return dx, dscale, dbias


# -- layer_norm ----------------------------------------------------------------------------------------
LAYER_NORM_GRAD = standard(
    "layer_norm", ins=("X", "Scale", "Bias"), outs=("Mean", "Variance"), out_grads=("Y",),
    in_grads=("X", "Scale", "Bias"),
    comment="With xhat = (X - Mean) * r, r = 1/sqrt(Variance + epsilon), rows as the forward op flattens them and "
            "dy = Y@GRAD * Scale: X@GRAD = r * (dy - mean(dy) - xhat * mean(dy * xhat)) per row; Scale@GRAD = "
            "sum over rows of Y@GRAD * xhat; Bias@GRAD = sum over rows of Y@GRAD.")


@LAYER_NORM_GRAD.kernel()
def layer_norm_grad(ctx, ins, attrs):
    x, scale, bias, mean, var, g = ins
    xp = ctx.xp
    axis = attrs["begin_norm_axis"]
    left, right = math.prod(x.shape[:axis]), math.prod(x.shape[axis:])
    x2 = x.reshape(left, right)
    if mean is None or var is None:  # recompute what the forward op would have saved
        _, m, v, inv = layer_norm_rows(xp, x, axis, attrs["epsilon"])
    else:
        m, v = mean.reshape(left, 1), var.reshape(left, 1)
        inv = 1 / xp.sqrt(v + x.dtype.type(attrs["epsilon"]))
    g2 = g.reshape(left, right)
    xhat = (x2 - m) * inv
    dx = dscale = dbias = None
    if wanted(ctx, "X@GRAD"):
        dy = g2 * scale.reshape(1, right) if scale is not None else g2
        dx = inv * (dy - row_means(xp, dy) - xhat * row_means(xp, dy * xhat))
        dx = dx.reshape(x.shape).astype(x.dtype, copy=False)
    if scale is not None and wanted(ctx, "Scale@GRAD"):
        dscale = leading_sums(xp, g2 * xhat, 1).reshape(scale.shape).astype(scale.dtype, copy=False)
    if bias is not None and wanted(ctx, "Bias@GRAD"):
        dbias = leading_sums(xp, g2, 1).reshape(bias.shape).astype(bias.dtype, copy=False)
    return dx, dscale, dbias
