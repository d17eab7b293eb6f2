"""Batch and layer normalisation's C kernels as fast variants of their reference kernels (kernelcore/ops/norm.py
and kernelcore/grad/norm.py): a channel or a row at a time while it is in cache, each channel's sums one
thread's whole, so the thread count changes no bit."""
from __future__ import annotations

import math

from .. import native
from ..ops.norm import (batch_norm_grad_factors, batch_stats_outputs, channel_axis, f32_vector, global_scale,
                        global_stats_outputs, stats_dtype, uses_global_stats)
from ..runtime.fast_paths import fast_kernel

# Paddle's kEmptyVarName, as kernelcore/transforms/grad_rules.py's EMPTY_VAR names it (transforms stands above this
# floor): a grad op's output slot naming only it is not wanted
EMPTY_VAR = "@EMPTY@"


def wanted(ctx, slot: str) -> bool:
    """Whether the running grad op names a variable for output `slot`."""
    return any(n != EMPTY_VAR for n in ctx.output_names(slot))


def _channels_first(x, attrs) -> bool:
    return 2 < x.ndim <= 5 and channel_axis(x.ndim, attrs["data_layout"]) == 1


def _batch_norm_gate(xp, ins, attrs):
    """Channels-first X of 3 to 5 dims with one statistic per channel (anything else goes to the reference,
    which says what is wrong) in float32 host arrays."""
    x, scale, bias, mean, var, _ = ins
    return _channels_first(x, attrs) and all(v.shape == (x.shape[1],) for v in (scale, bias, mean, var)) \
        and native.ready(xp, x)


@fast_kernel("batch_norm", _batch_norm_gate)
def batch_norm(ctx, ins, attrs):
    """kernelcore/native/batch_norm.c: Y in one pass under the running statistics; the batch's statistics and Y in
    two passes over each channel otherwise."""
    x, scale, bias, mean, var, mom_t = ins
    xp, eps = ctx.xp, attrs["epsilon"]
    if uses_global_stats(ctx, attrs):
        k = global_scale(xp, scale, var, eps, stats_dtype(x.dtype))
        y = native.batch_norm_affine(x, *(f32_vector(v) for v in (mean, k, bias)))
        return (y, *global_stats_outputs(xp, x, mean, var))
    y, bmean, bvar, inv = native.batch_norm_train(x, f32_vector(scale), f32_vector(bias), eps)
    return batch_stats_outputs(xp, x, y, mean, var, mom_t, bmean, bvar, inv, attrs)


@fast_kernel("batch_norm_grad",
             lambda xp, ins, attrs: _channels_first(ins[0], attrs) and native.ready(xp, ins[0], ins[8]))
def batch_norm_grad(ctx, ins, attrs):
    x, scale, g = ins[0], ins[1], ins[8]
    global_stats = uses_global_stats(ctx, attrs)
    m, inv, sc = batch_norm_grad_factors(ctx.xp, ins, attrs, global_stats, stats_dtype(x.dtype))
    dx, dscale, dbias = native.batch_norm_grad(x, g, *(f32_vector(v) for v in (m, inv, sc)),
                                               wanted(ctx, "X@GRAD"), not global_stats)
    return (dx, dscale.astype(scale.dtype) if wanted(ctx, "Scale@GRAD") else None,
            dbias.astype(scale.dtype) if wanted(ctx, "Bias@GRAD") else None)


def _rows(x, attrs) -> tuple[int, int]:
    axis = attrs["begin_norm_axis"]
    return math.prod(x.shape[:axis]), math.prod(x.shape[axis:])


def _layer_norm_gate(xp, ins, attrs):
    """A valid begin_norm_axis and Scale and Bias of one row's length (else the reference says what is wrong), in
    float32 host arrays."""
    x, scale, bias = ins
    if not 1 <= attrs["begin_norm_axis"] < x.ndim or not x.size:
        return False
    present = [t for t in (scale, bias) if t is not None]
    return all(t.size == _rows(x, attrs)[1] for t in present) and native.ready(xp, x, *present)


@fast_kernel("layer_norm", _layer_norm_gate)
def layer_norm(ctx, ins, attrs):
    x, scale, bias = ins
    y, mean, var = native.layer_norm(x.reshape(-1, _rows(x, attrs)[1]), scale, bias, attrs["epsilon"])
    return y.reshape(x.shape), mean, var


def _layer_norm_grad_gate(xp, ins, attrs):
    x, scale, _bias, mean, var, g = ins
    if mean is None or var is None or not x.size:
        return False
    left, right = _rows(x, attrs)
    return mean.size == var.size == left and g.size == x.size and (scale is None or scale.size == right) \
        and native.ready(xp, x, g, mean, var, *(t for t in (scale,) if t is not None))


@fast_kernel("layer_norm_grad", _layer_norm_grad_gate)
def layer_norm_grad(ctx, ins, attrs):
    """kernelcore/native/layer_norm.c: a row at a time, then the column sums."""
    x, scale, bias, mean, var, g = ins
    left, right = _rows(x, attrs)
    dx, dscale, dbias = native.layer_norm_grad(
        x.reshape(left, right), scale, mean, var, g.reshape(left, right), attrs["epsilon"], wanted(ctx, "X@GRAD"),
        scale is not None and wanted(ctx, "Scale@GRAD"), bias is not None and wanted(ctx, "Bias@GRAD"))
    return (None if dx is None else dx.reshape(x.shape),
            None if dscale is None else dscale.reshape(scale.shape),
            None if dbias is None else dbias.reshape(bias.shape).astype(bias.dtype, copy=False))
