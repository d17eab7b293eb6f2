"""The activations' C kernels as fast variants of their reference kernels (kernelcore/ops/activation.py,
pointwise.py and their gradients in kernelcore/grad): each one pass over the data, shared
over the cores, with the reference's bits (tests/test_native.py compares them)."""
from __future__ import annotations

import math

from .. import native
from ..runtime.fast_paths import fast_kernel


def _one_float32_array(xp, ins, attrs):
    """Gate of relu in kernelcore/native/clip.c (and of hard_swish): a float32 host array with elements."""
    return ins[0].size > 0 and native.ready(xp, ins[0])


def _clip_bounds(lo: str | None, hi: str):
    """Gate of relu6 and brelu: as relu's, and neither bound (the attributes named) NaN, which NumPy's clip spreads
    to every element."""
    def gate(xp, ins, attrs):
        low, high = 0.0 if lo is None else attrs[lo], attrs[hi]
        return low == low and high == high and ins[0].size > 0 and native.ready(xp, ins[0])
    return gate


@fast_kernel("relu", _one_float32_array)
def relu(ctx, ins, attrs):
    return (native.clip(ins[0], 0.0, math.inf, lo_on_ties=True),)


@fast_kernel("relu6", _clip_bounds(None, "threshold"))
def relu6(ctx, ins, attrs):
    return (native.clip(ins[0], 0.0, attrs["threshold"]),)


@fast_kernel("brelu", _clip_bounds("t_min", "t_max"))
def brelu(ctx, ins, attrs):
    return (native.clip(ins[0], attrs["t_min"], attrs["t_max"]),)


def _same_shape_pair(xp, ins, attrs):
    """Gate of a gradient reading (X or Out, Out@GRAD) of one shape, as kernelcore/native's masked and
    elementwise gradients do."""
    t, g = ins
    return t.shape == g.shape and native.ready(xp, t, g)


@fast_kernel("relu_grad", _same_shape_pair)
def relu_grad(ctx, ins, attrs):
    out, g = ins
    return (native.masked_grad(out, g, 0.0, None),)  # kernelcore/native/activation_grad.c


@fast_kernel("relu6_grad", _same_shape_pair)
def relu6_grad(ctx, ins, attrs):
    out, g = ins
    return (native.masked_grad(out, g, 0.0, attrs["threshold"]),)


@fast_kernel("hard_swish", _one_float32_array)
def hard_swish(ctx, ins, attrs):
    return (native.hard_swish(ins[0], attrs["offset"], attrs["threshold"], attrs["scale"]),)


@fast_kernel("hard_swish_grad", lambda xp, ins, attrs: ins[0].size > 0 and _same_shape_pair(xp, ins, attrs))
def hard_swish_grad(ctx, ins, attrs):
    x, g = ins
    return (native.hard_swish_grad(x, g, attrs["offset"], attrs["threshold"], attrs["scale"]),)


def _exact_gelu(xp, ins, attrs):
    return not attrs["approximate"] and ins[0].size > 0 and native.ready(xp, ins[0])


@fast_kernel("gelu", _exact_gelu)
def gelu(ctx, ins, attrs):
    return (native.gelu(ins[0]),)  # kernelcore/native/gelu.c: the reference's operations in one pass


@fast_kernel("gelu_grad", lambda xp, ins, attrs: _exact_gelu(xp, ins, attrs) and _same_shape_pair(xp, ins, attrs))
def gelu_grad(ctx, ins, attrs):
    x, g = ins
    return (native.gelu_grad(x, g),)


def _softmax_rows(xp, ins, attrs):
    """Softmax along the last axis of a float32 host array (kernelcore/native/softmax.c: a row at a time, in
    cache)."""
    x = ins[0]
    return x.ndim > 0 and attrs["axis"] in (-1, x.ndim - 1) and x.shape[-1] > 0 and x.size > 0 \
        and native.ready(xp, x)


@fast_kernel("softmax", _softmax_rows)
def softmax(ctx, ins, attrs):
    return (native.softmax_rows(ins[0]),)


@fast_kernel("softmax_grad", lambda xp, ins, attrs: _softmax_rows(xp, ins, attrs) and
             _same_shape_pair(xp, ins, attrs))
def softmax_grad(ctx, ins, attrs):
    out, g = ins
    return (native.softmax_rows_grad(out, g),)
