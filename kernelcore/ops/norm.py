"""Normalisation with Paddle's slots and attributes: batch_norm, group_norm, instance_norm and layer_norm.

batch_norm follows Paddle's CPU kernel:
  * statistics mode: global (Mean/Variance are used) when use_global_stats, or in inference mode unless
    trainable_statistics. Inference mode, as for dropout: the `is_test` attribute, or a run that is not a training
    run (`Executor.run(..., training=False)`, the default);
  * batch statistics: mean and the *biased* variance over every axis but the channel axis; then
    MeanOut = Mean * momentum + batch_mean * (1 - momentum), VarianceOut likewise with the biased variance
    (Paddle does not apply Bessel's correction), SavedMean = batch_mean, SavedVariance = 1 / sqrt(batch_var +
    epsilon) (an inverse standard deviation, not a variance);
  * global statistics: MeanOut/VarianceOut are Mean/Variance unchanged, SavedMean/SavedVariance are zeros.
Paddle writes MeanOut/VarianceOut to the same variables as Mean/Variance; kernels here return new arrays.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, Check, In, Out, register_op
from ._spatial import attr_or
from ._infer import prod
from .math import SUM_BY_PRODUCT_DTYPES, leading_sums, row_sums

LAYOUTS = ("NCHW", "NHWC", "NCDHW", "NDHWC", "NC", "NCL", "NLC", "AnyLayout")


def channel_axis(ndim, layout):
    return ndim - 1 if layout in ("NHWC", "NDHWC", "NLC") and ndim > 2 else 1


def per_channel(xp, v, shape, axis):
    """Per-channel values `v` shaped to broadcast against an array of `shape` with channels at `axis`. Channels
    first on the host, they come repeated over the spatial positions, [1, C, H, W]: broadcast as [1, C, 1, 1],
    NumPy's loops run along rows of H * W elements (4 on MobileNetV2's last maps) and took 1.3-2.3x longer ([8,
    960, 2, 2]: 23 vs 10 us; [8, 96, 32, 32]: 333 vs 256) than along the C * H * W of the repeated block, which
    costs 1/N of the array to make."""
    ndim = len(shape)
    if axis == 1 and ndim > 2 and xp is np:  # a device broadcasts as cheaply: the repeat would be one more launch
        spatial = 1
        for d in shape[2:]:
            spatial *= d
        return xp.repeat(v, spatial).reshape((1,) + tuple(shape[1:]))
    out = [1] * ndim
    out[axis] = -1
    return v.reshape(out)


def stats_dtype(dtype):
    """The dtype statistics are computed in: float32 for float16 inputs, else the input's."""
    return np.float32 if dtype == np.float16 else dtype.type


def f32_vector(v):
    """A per-channel vector as the C kernels take it: float32, contiguous (usually `v` itself)."""
    return np.ascontiguousarray(v, dtype=np.float32)


def channel_sum(xp, a, axis):
    """sum(a) over every axis but the channel axis, by ops/math.py's sums as products with ones: NumPy's own
    reduction over axes (0, 2, 3) of a channels-first batch walks short rows one at a time (97 us on [8, 960, 2, 2],
    62 on [8, 144, 16, 16]), the products take 8 and 21."""
    if a.ndim >= 2 and axis == a.ndim - 1:  # channels last, or [N, C]
        return leading_sums(xp, a, a.ndim - 1)
    if a.ndim > 2 and axis == 1:
        return leading_sums(xp, row_sums(xp, a.reshape(a.shape[0], a.shape[1], -1))[..., 0], 1)
    return a.sum(axis=tuple(i for i in range(a.ndim) if i != axis))


# a channels-first batch's per-(sample, channel) rows shorter than this are summed by einsum: a batched matrix
# product of rows this short is mostly per-product overhead ([8, 960, 2, 2]: 56 us, einsum 28; [8, 384, 4, 4]:
# 43 and 14), while for longer rows it is the faster of the two ([8, 144, 16, 16]: 25 us, einsum 29)
SHORT_CHANNEL_ROWS = 128


def channel_dot(xp, a, b, axis):
    """sum(a * b) over every axis but the channel axis without an a * b temporary: for channels-first batches one
    batched matrix product per (sample, channel) row pair (3x faster than multiply + sum on [8, 64, 32, 32]), or
    einsum where those rows are short."""
    if axis == 1 and a.ndim > 2:
        n, c = a.shape[:2]
        a3, b3 = a.reshape(n, c, -1), b.reshape(n, c, -1)
        if a3.shape[2] < SHORT_CHANNEL_ROWS:
            return xp.einsum("ncx,ncx->c", a3, b3)
        return (a3[:, :, None, :] @ b3[:, :, :, None]).reshape(n, c).sum(axis=0)
    if axis == a.ndim - 1 and a.ndim >= 2:
        c = a.shape[axis]
        return xp.einsum("rc,rc->c", a.reshape(-1, c), b.reshape(-1, c))
    return (a * b).sum(axis=tuple(i for i in range(a.ndim) if i != axis))


# ---------------------------------------------------------------------------
# batch_norm
# ---------------------------------------------------------------------------
BATCH_NORM = register_op(
    "batch_norm",
    "Y = (X - mean) / sqrt(var + epsilon) * Scale + Bias per channel, with the batch's statistics (training) or "
    "the running Mean/Variance (inference, use_global_stats). Training also updates the running statistics: "
    "MeanOut = Mean * momentum + batch_mean * (1 - momentum), VarianceOut likewise with the biased batch "
    "variance; SavedMean is the batch mean and SavedVariance 1 / sqrt(batch_var + epsilon).",
    inputs=[In("X", "(2-D to 5-D) [N, C, ...] (channels last with data_layout NHWC/NDHWC)"),
            In("Scale", "(1-D, C) gamma"), In("Bias", "(1-D, C) beta"),
            In("Mean", "(1-D, C) the running mean"), In("Variance", "(1-D, C) the running variance"),
            In("MomentumTensor", "(one float) overrides `momentum`", dispensable=True)],
    outputs=[Out("Y", "X's shape and dtype"),
             Out("MeanOut", "(C) the updated running mean (Paddle: the same variable as Mean)"),
             Out("VarianceOut", "(C) the updated running variance (Paddle: the same variable as Variance)"),
             Out("SavedMean", "(C) the batch mean (zeros with global statistics)", intermediate=True),
             Out("SavedVariance", "(C) the batch's 1 / sqrt(var + epsilon) (zeros with global statistics)",
                 intermediate=True),
             Out("ReserveSpace", "cuDNN scratch space (written empty)", dispensable=True, intermediate=True)],
    attrs=[Attr("momentum", A.FLOAT, "the running statistics' decay", 0.9),
           Attr("epsilon", A.FLOAT, "added to the variance", 1e-5,
                checks=(Check("in [0, 0.001]", lambda v: 0.0 <= v <= 0.0010001),)),
           Attr("data_layout", A.STRING, "'NCHW' (channels at axis 1) or 'NHWC' (channels last)", "NCHW",
                checks=(Check(f"one of {list(LAYOUTS)}", lambda v: v in LAYOUTS),)),
           Attr("is_test", A.BOOLEAN, "inference mode: normalise with Mean/Variance, update nothing", False),
           Attr("use_global_stats", A.BOOLEAN, "normalise with Mean/Variance even while training", False),
           Attr("trainable_statistics", A.BOOLEAN, "use batch statistics even when is_test", False),
           Attr("fuse_with_relu", A.BOOLEAN, "oneDNN fusion hint (ignored)", False, extra=True)])


def _bn_infer(ic):
    x = ic.shape("X")
    if not 2 <= len(x) <= 5:
        ic.fail(f"X must be 2-D to 5-D, got shape {list(x)}")
    c = x[channel_axis(len(x), attr_or(ic, "data_layout", "NCHW"))]
    for slot in ("Scale", "Bias", "Mean", "Variance"):
        s = ic.shape(slot)
        if len(s) != 1 or (c >= 0 and s[0] >= 0 and s[0] != c):
            ic.fail(f"{slot} must be 1-D with X's {c} channels, got shape {list(s)}")
    ic.set_output("Y", x, ic.dtype("X"))
    for slot, src in (("MeanOut", "Mean"), ("VarianceOut", "Variance"), ("SavedMean", "Mean"),
                      ("SavedVariance", "Variance")):
        ic.set_output(slot, (c,), ic.dtype(src))
    ic.set_output("ReserveSpace", (0,), ic.dtype("X"))


BATCH_NORM.infer_shape = _bn_infer


def batch_norm_channel_axis(x, scale, bias, mean, var, data_layout: str) -> int:
    """The channel axis of X, after checking X's rank and that each statistic holds one value per channel."""
    if not 2 <= x.ndim <= 5:
        raise ValueError(f"X must be 2-D to 5-D, got shape {list(x.shape)}")
    axis = channel_axis(x.ndim, data_layout)
    c = x.shape[axis]
    for name, v in (("Scale", scale), ("Bias", bias), ("Mean", mean), ("Variance", var)):
        if v.shape != (c,):
            raise ValueError(f"{name} must have shape [{c}] (X's channels), got {list(v.shape)}")
    return axis


def uses_global_stats(ctx, attrs) -> bool:
    """Whether batch_norm normalises with the running statistics (inference) rather than the batch's."""
    inference = attrs["is_test"] or not ctx.training
    return attrs["use_global_stats"] or (inference and not attrs["trainable_statistics"])


def global_scale(xp, scale, var, eps: float, ct):
    """Scale / sqrt(Variance + epsilon), in the compute dtype `ct` (float32 statistics read as they are: on a GPU
    each copy is a kernel launch)."""
    return scale.astype(ct, copy=False) / xp.sqrt(var.astype(ct, copy=False) + ct(eps))


def global_stats_outputs(xp, x, mean, var) -> tuple:
    """batch_norm's outputs beside Y under the running statistics: the statistics unchanged, no batch ones."""
    return mean.copy(), var.copy(), xp.zeros_like(mean), xp.zeros_like(var), xp.zeros((0,), dtype=x.dtype)


def batch_stats_outputs(xp, x, y, mean, var, mom_t, bmean, bvar, inv, attrs) -> tuple:
    """batch_norm's outputs from the batch's statistics: the running ones moved towards them by `momentum`."""
    if mom_t is not None:
        m = mom_t.reshape(-1)[:1].astype(mean.dtype)  # stays on the device: no host sync
    else:
        m = mean.dtype.type(attrs["momentum"])
    one = mean.dtype.type(1)
    mean_out = mean * m + bmean.astype(mean.dtype) * (one - m)
    var_out = var * m + bvar.astype(var.dtype) * (one - m)
    return (y.astype(x.dtype, copy=False), mean_out, var_out, bmean.astype(mean.dtype), inv.astype(var.dtype),
            xp.zeros((0,), dtype=x.dtype))


def batch_norm_grad_factors(xp, ins, attrs, global_stats: bool, ct) -> tuple:
    """(mean, inv, Scale) batch_norm_grad works with, in the compute dtype `ct`: the running statistics' under
    global statistics, else those the forward op saved."""
    _x, scale, _bias, saved_mean, saved_inv, mean, var, _reserve, _g = ins
    if global_stats:
        m, inv = mean, 1.0 / xp.sqrt(var + var.dtype.type(attrs["epsilon"]))
    else:
        m, inv = saved_mean, saved_inv
    return m.astype(ct), inv.astype(ct), scale.astype(ct)


@BATCH_NORM.kernel()
def batch_norm(ctx, ins, attrs):
    x, scale, bias, mean, var, mom_t = ins
    xp = ctx.xp
    axis = batch_norm_channel_axis(x, scale, bias, mean, var, attrs["data_layout"])
    c = x.shape[axis]
    eps = attrs["epsilon"]
    ct = stats_dtype(x.dtype)
    if uses_global_stats(ctx, attrs):
        # (X - Mean) first, as Paddle does: folding Mean into the offset (X * k + (Bias - Mean * k)) cancels
        # badly where X is close to Mean, i.e. everywhere once the running statistics fit the data
        k = global_scale(xp, scale, var, eps, ct)
        y = x - per_channel(xp, mean.astype(x.dtype, copy=False), x.shape, axis)
        y *= per_channel(xp, k.astype(x.dtype, copy=False), x.shape, axis)  # `y` is a fresh array of ours
        y += per_channel(xp, bias.astype(x.dtype, copy=False), x.shape, axis)
        return (y, *global_stats_outputs(xp, x, mean, var))
    xc = x.astype(ct, copy=False)  # a float32 input is read as it is, not copied
    bmean = channel_sum(xp, xc, axis) / ct(x.size // c)
    centred = xc - per_channel(xp, bmean, x.shape, axis)
    bvar = channel_dot(xp, centred, centred, axis) / ct(x.size // c)  # no squared temporary: 1.2x the op
    inv = 1.0 / xp.sqrt(bvar + ct(eps))
    y = centred  # ours: scaled and shifted in place
    y *= per_channel(xp, inv * scale.astype(ct, copy=False), x.shape, axis)
    y += per_channel(xp, bias.astype(ct, copy=False), x.shape, axis)
    return batch_stats_outputs(xp, x, y, mean, var, mom_t, bmean, bvar, inv, attrs)


# ---------------------------------------------------------------------------
# group_norm, instance_norm
# ---------------------------------------------------------------------------
GROUP_NORM = register_op(
    "group_norm",
    "Split the channels into `groups` groups; normalise each (sample, group) over its channels and spatial "
    "positions: Y = (X - mean) / sqrt(var + epsilon) * Scale[c] + Bias[c], var biased. Mean and Variance "
    "[N, groups] hold the statistics.",
    inputs=[In("X", "[N, C, ...] (channels last with data_layout NHWC)"),
            In("Scale", "(C) per-channel gain", dispensable=True),
            In("Bias", "(C) per-channel offset", dispensable=True)],
    outputs=[Out("Y", "X's shape and dtype"), Out("Mean", "[N, groups]", intermediate=True),
             Out("Variance", "[N, groups], biased", intermediate=True)],
    attrs=[Attr("epsilon", A.FLOAT, "added to the variance", 1e-5),
           Attr("groups", A.INT, "the number of channel groups; must divide C", checks=(Check("> 0",
                                                                                            lambda v: v > 0),)),
           Attr("data_layout", A.STRING, "'NCHW' or 'NHWC'", "NCHW")])


def _gn_infer(ic):
    x = ic.shape("X")
    g = ic.attr("groups")
    last = attr_or(ic, "data_layout", "NCHW") in ("NHWC", "NDHWC", "NLC")
    c = x[-1] if last else x[1]
    if len(x) < 2:
        ic.fail(f"X must be at least 2-D, got shape {list(x)}")
    if c >= 0 and g and c % g:
        ic.fail(f"X's {c} channels must divide by groups={g}")
    ic.set_output("Y", x, ic.dtype("X"))
    ic.set_output("Mean", (x[0], g), ic.dtype("X"))
    ic.set_output("Variance", (x[0], g), ic.dtype("X"))


GROUP_NORM.infer_shape = _gn_infer


def _affine(xp, y, scale, bias, axis):
    if scale is not None:
        y = y * per_channel(xp, scale.astype(y.dtype), y.shape, axis)
    if bias is not None:
        y = y + per_channel(xp, bias.astype(y.dtype), y.shape, axis)
    return y


@GROUP_NORM.kernel()
def group_norm(ctx, ins, attrs):
    x, scale, bias = ins
    xp = ctx.xp
    g = attrs["groups"]
    last = attrs["data_layout"] in ("NHWC", "NDHWC", "NLC")
    xc = xp.moveaxis(x, -1, 1) if last else x
    n, c = xc.shape[:2]
    if c % g:
        raise ValueError(f"X's {c} channels must divide by groups={g}")
    ct = stats_dtype(x.dtype)
    xg = xc.astype(ct).reshape(n, g, -1)
    mean = xg.mean(axis=2)
    centred = xg - mean[:, :, None]
    var = (centred * centred).mean(axis=2)
    y = (centred / xp.sqrt(var + ct(attrs["epsilon"]))[:, :, None]).reshape(xc.shape)
    y = _affine(xp, y, scale, bias, 1)
    if last:
        y = xp.ascontiguousarray(xp.moveaxis(y, 1, -1))
    return y.astype(x.dtype, copy=False), mean.astype(x.dtype), var.astype(x.dtype)


INSTANCE_NORM = register_op(
    "instance_norm",
    "Normalise each (sample, channel) over its spatial positions: Y = (X - mean) / sqrt(var + epsilon) * "
    "Scale[c] + Bias[c], var biased. SavedMean and SavedVariance [N * C] hold the mean and 1 / sqrt(var + "
    "epsilon).",
    inputs=[In("X", "[N, C, spatial...]"), In("Scale", "(C) per-channel gain", dispensable=True),
            In("Bias", "(C) per-channel offset", dispensable=True)],
    outputs=[Out("Y", "X's shape and dtype"),
             Out("SavedMean", "[N * C] the means", dispensable=True, intermediate=True),
             Out("SavedVariance", "[N * C] 1 / sqrt(var + epsilon)", dispensable=True, intermediate=True)],
    attrs=[Attr("epsilon", A.FLOAT, "added to the variance", 1e-5)])


def _in_infer(ic):
    x = ic.shape("X")
    if len(x) < 3:
        ic.fail(f"X must be at least 3-D ([N, C, spatial...]), got shape {list(x)}")
    ic.set_output("Y", x, ic.dtype("X"))
    nc = x[0] * x[1] if x[0] >= 0 and x[1] >= 0 else -1
    ic.set_output("SavedMean", (nc,), ic.dtype("X"))
    ic.set_output("SavedVariance", (nc,), ic.dtype("X"))


INSTANCE_NORM.infer_shape = _in_infer


@INSTANCE_NORM.kernel()
def instance_norm(ctx, ins, attrs):
    x, scale, bias = ins
    xp = ctx.xp
    if x.ndim < 3:
        raise ValueError(f"X must be at least 3-D ([N, C, spatial...]), got shape {list(x.shape)}")
    ct = stats_dtype(x.dtype)
    n, c = x.shape[:2]
    xf = x.astype(ct).reshape(n, c, -1)
    mean = xf.mean(axis=2)
    centred = xf - mean[:, :, None]
    inv = 1.0 / xp.sqrt((centred * centred).mean(axis=2) + ct(attrs["epsilon"]))
    y = _affine(xp, (centred * inv[:, :, None]).reshape(x.shape), scale, bias, 1)
    return y.astype(x.dtype, copy=False), mean.reshape(-1).astype(x.dtype), inv.reshape(-1).astype(x.dtype)


# ---------------------------------------------------------------------------
# layer_norm: X flattened to a matrix at begin_norm_axis ([left, right]: left = the product of the leading dims,
# right = the rest), each row normalised; Mean and Variance hold one value per row ([left]), Scale and Bias one
# per column ([right]), as Paddle's kernel does
# ---------------------------------------------------------------------------
LAYER_NORM = register_op(
    "layer_norm",
    "Y = (X - mean) / sqrt(variance + epsilon) * Scale + Bias, where mean and variance (biased) are taken "
    "over the dims from begin_norm_axis on, for each index of the dims before it. Scale and Bias (optional) "
    "hold one value per normalised element (length = the product of X's dims from begin_norm_axis).",
    inputs=[In("X", "the input tensor"),
            In("Scale", "(1-D, length right) the per-element gain; none: 1", dispensable=True),
            In("Bias", "(1-D, length right) the per-element offset; none: 0", dispensable=True)],
    outputs=[Out("Y", "the normalised tensor, X's shape and dtype"),
             Out("Mean", "(1-D, length left) the mean of each normalised row", intermediate=True),
             Out("Variance", "(1-D, length left) the biased variance of each row", intermediate=True)],
    attrs=[Attr("epsilon", A.FLOAT, "added to the variance before the square root", 1e-5,
                # Paddle's bound is the float32 0.001f, which the stored float32 attribute may equal exactly
                checks=(Check("in [0, 0.001]", lambda v: 0.0 <= v <= 0.0010000000474974513),)),
           Attr("begin_norm_axis", A.INT, "the first dim normalised over; 1 <= begin_norm_axis < rank", 1)])


def _ln_split(shape, axis: int, fail):
    if not 1 <= axis < len(shape):
        fail(f"begin_norm_axis {axis} is out of range for X of shape {list(shape)}; expected "
             f"1 <= begin_norm_axis < {len(shape)}")
    return prod(shape[:axis]), prod(shape[axis:])


def _ln_infer(ic):
    x = ic.shape("X")
    left, right = _ln_split(x, ic.attr("begin_norm_axis"), ic.fail)
    for slot in ("Scale", "Bias"):
        if ic.has_input(slot):
            s = ic.shape(slot)
            if len(s) != 1 or (right >= 0 and s[0] >= 0 and s[0] != right):
                ic.fail(f"{slot} has shape {list(s)} but X {list(x)} normalises {right} elements from "
                        f"begin_norm_axis {ic.attr('begin_norm_axis')}; expected [{right}]")
    ic.set_output("Y", x, ic.dtype("X"))
    for slot in ("Mean", "Variance"):
        if ic.output_names(slot):
            ic.set_output(slot, (left,), ic.dtype("X"))


LAYER_NORM.infer_shape = _ln_infer


def layer_norm_rows(xp, x, axis: int, eps: float):
    """(x as [left, right], mean [left, 1], variance [left, 1], 1/sqrt(variance + eps) [left, 1])."""
    left, right = math.prod(x.shape[:axis]), math.prod(x.shape[axis:])
    x2 = x.reshape(left, right)
    mean = row_means(xp, x2)
    d = x2 - mean
    var = row_means(xp, d * d)
    inv = 1 / xp.sqrt(var + x.dtype.type(eps))
    return x2, mean, var, inv


def row_means(xp, a2):
    """The mean of each row of a matrix, [rows, 1] (float16 through NumPy's wider accumulator)."""
    return row_sums(xp, a2) / a2.shape[1] if a2.dtype in SUM_BY_PRODUCT_DTYPES else a2.mean(axis=1, keepdims=True)


@LAYER_NORM.kernel()
def layer_norm(ctx, ins, attrs):
    x, scale, bias = ins
    axis = attrs["begin_norm_axis"]
    if not 1 <= axis < x.ndim:
        raise ValueError(f"begin_norm_axis {axis} is out of range for X of shape {list(x.shape)}")
    right = math.prod(x.shape[axis:])
    for slot, t in (("Scale", scale), ("Bias", bias)):
        if t is not None and t.size != right:
            raise ValueError(f"{slot} has {t.size} elements but X {list(x.shape)} normalises {right} per row")
    x2, mean, var, inv = layer_norm_rows(ctx.xp, x, axis, attrs["epsilon"])
    y = (x2 - mean) * inv
    if scale is not None:
        y = y * scale.reshape(1, right)
    if bias is not None:
        y = y + bias.reshape(1, right)
    return y.reshape(x.shape).astype(x.dtype, copy=False), mean.reshape(-1), var.reshape(-1)
