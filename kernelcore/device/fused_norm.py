"""Batch and layer normalisation on a GPU in a few fused kernels, as fast variants of kernelcore/ops/norm.py's
batch_norm and layer_norm and kernelcore/grad/norm.py's batch_norm_grad and layer_norm_grad. The reference runs
each array expression as its own CuPy launch (25 for a training batch_norm, counted by bench/device_launches.py);
these run each full-size pass once: a per-element kernel reads its channel's statistics by index (c = (i / inner)
% channels, `inner` the elements after the channel axis, so channels first and channels last share it), the
channel sums are reductions over every other axis, and layer_norm is one kernel with a thread block per row."""
from __future__ import annotations

import math

import numpy as np

from ..ops.norm import batch_norm_grad_factors, channel_axis, uses_global_stats
from ..runtime.fast_paths import fast_kernel
from .cuda_source import BLOCK_REDUCE
from .declare import ELEMENTWISE, RAW, REDUCTION, check_row_launch, declare, f32, i32, on_device, threads_for

EMPTY_VAR = "@EMPTY@"  # Paddle's kEmptyVarName: a grad op's output slot naming only it is not wanted


def wanted(ctx, slot: str) -> bool:
    return any(n != EMPTY_VAR for n in ctx.output_names(slot))


def _channel_of(i, inner: int, channels: int):
    """The twin's form of the kernels' `(i / inner) % channels`, over flat indices `i`."""
    return (i // inner) % channels


def _per_element(x_shape, values, inner, channels):
    """values[c] for each element of an array of `x_shape`, by the kernels' index arithmetic."""
    i = np.arange(math.prod(x_shape)).reshape(x_shape)
    return values[_channel_of(i, int(inner), int(channels))]


def _affine_twin(x, mean, var, scale, bias, eps, inner, channels):
    k = scale / np.sqrt(var + eps)
    return ((x - _per_element(x.shape, mean, inner, channels)) * _per_element(x.shape, k, inner, channels)
            + _per_element(x.shape, bias, inner, channels))


BN_AFFINE = declare(
    "kc_batch_norm_affine", ELEMENTWISE,
    "int c = (i / inner) % channels; y = (x - mean[c]) * (scale[c] / sqrt(var[c] + eps)) + bias[c];",
    in_params="T x, raw T mean, raw T var, raw T scale, raw T bias, T eps, int32 inner, int32 channels",
    out_params="T y", twin=_affine_twin)

BN_KEEP_STATS = declare(
    "kc_batch_norm_keep_stats", ELEMENTWISE, "mean_out = mean; var_out = var; saved_mean = 0; saved_inv = 0;",
    in_params="T mean, T var", out_params="T mean_out, T var_out, T saved_mean, T saved_inv",
    twin=lambda mean, var: (mean, var, np.zeros_like(mean), np.zeros_like(var)))


def _channel_mean_twin(x, axis, keepdims):
    s = x.sum(axis=axis, keepdims=keepdims)
    return s / np.float32(x.size // s.size)  # the kernel's (T)(_in_ind.size() / _out_ind.size())


CHANNEL_MEAN = declare(
    "kc_channel_mean", REDUCTION, "", in_params="T x", out_params="T m",
    reduction=("x", "a + b", "m = a / (T)(_in_ind.size() / _out_ind.size())", "0"), twin=_channel_mean_twin)


def _channel_mean_square_twin(d, axis, keepdims):
    return _channel_mean_twin(d * d, axis, keepdims)


CHANNEL_MEAN_SQUARE = declare(
    "kc_channel_mean_square", REDUCTION, "", in_params="T d", out_params="T v",
    reduction=("d * d", "a + b", "v = a / (T)(_in_ind.size() / _out_ind.size())", "0"),
    twin=_channel_mean_square_twin)

CHANNEL_SUM = declare(
    "kc_channel_sum", REDUCTION, "", in_params="T x", out_params="T s", reduction=("x", "a + b", "s = a", "0"),
    twin=lambda x, axis, keepdims: x.sum(axis=axis, keepdims=keepdims))

CHANNEL_DOT = declare(
    "kc_channel_dot", REDUCTION, "", in_params="T u, T v", out_params="T s",
    reduction=("u * v", "a + b", "s = a", "0"),
    twin=lambda a, b, axis, keepdims: (a * b).sum(axis=axis, keepdims=keepdims))

CENTRE = declare(
    "kc_centre", ELEMENTWISE, "int c = (i / inner) % channels; d = x - mean[c];",
    in_params="T x, raw T mean, int32 inner, int32 channels", out_params="T d",
    twin=lambda x, mean, inner, channels: x - _per_element(x.shape, mean, inner, channels))


def _normalise_twin(d, var, scale, bias, eps, inner, channels):
    k = (np.float32(1) / np.sqrt(var + eps)) * scale
    return d * _per_element(d.shape, k, inner, channels) + _per_element(d.shape, bias, inner, channels)


BN_NORMALISE = declare(
    "kc_batch_norm_normalise", ELEMENTWISE,
    "int c = (i / inner) % channels; y = d * (((T)1 / sqrt(var[c] + eps)) * scale[c]) + bias[c];",
    in_params="T d, raw T var, raw T scale, raw T bias, T eps, int32 inner, int32 channels", out_params="T y",
    twin=_normalise_twin)


def _running_twin(mean, var, bmean, bvar, mom_t, mom, use_t, eps):
    m = mom_t.reshape(-1)[0] if use_t else mom
    one = np.float32(1)
    return mean * m + bmean * (one - m), var * m + bvar * (one - m), one / np.sqrt(bvar + eps)


BN_RUNNING = declare(
    "kc_batch_norm_running", ELEMENTWISE,
    "T m = use_t ? mom_t[0] : mom; mean_out = mean * m + bmean * ((T)1 - m); "
    "var_out = var * m + bvar * ((T)1 - m); saved_inv = (T)1 / sqrt(bvar + eps);",
    in_params="T mean, T var, T bmean, T bvar, raw T mom_t, T mom, int32 use_t, T eps",
    out_params="T mean_out, T var_out, T saved_inv", twin=_running_twin)


def _grad_dx_twin(g, xc, inv, scale, dot, dbias, count, inner, channels, batch):
    at = lambda v: _per_element(g.shape, v, inner, channels)  # noqa: E731
    iv = at(inv)
    k = at(scale) * iv
    if not batch:
        return g * k
    ds = iv * at(dot)
    return ((g - xc * ((iv * ds) / count)) - at(dbias) / count) * k


BN_GRAD_DX = declare(
    "kc_batch_norm_grad_dx", ELEMENTWISE,
    "int c = (i / inner) % channels; T iv = inv[c]; T k = scale[c] * iv; "
    "dx = batch ? ((g - xc * ((iv * (iv * dot[c])) / count)) - dbias[c] / count) * k : g * k;",
    in_params="T g, T xc, raw T inv, raw T scale, raw T dot, raw T dbias, T count, int32 inner, int32 channels, "
              "int32 batch",
    out_params="T dx", twin=_grad_dx_twin)


def _layout(x, attrs) -> tuple[int, int, int, tuple]:
    """(channel axis, channels, elements after the channel axis, the other axes)."""
    axis = channel_axis(x.ndim, attrs["data_layout"])
    return axis, x.shape[axis], math.prod(x.shape[axis + 1:]), tuple(a for a in range(x.ndim) if a != axis)


def _batch_norm_gate(xp, ins, attrs):
    """X of 2 to 5 dims with one float32 statistic per channel on the device; anything else goes to the
    reference, which says what is wrong."""
    x, scale, bias, mean, var, mom_t = ins
    if not on_device(xp, x, scale, bias, mean, var) or not 2 <= x.ndim <= 5 or not x.size:
        return False
    c = x.shape[channel_axis(x.ndim, attrs["data_layout"])]
    return all(v.shape == (c,) for v in (scale, bias, mean, var)) and (mom_t is None or on_device(xp, mom_t))


@fast_kernel("batch_norm", _batch_norm_gate, place="gpu")
def batch_norm(ctx, ins, attrs):
    """Inference: Y in one kernel and the unchanged statistics in one more. Training: the channel means, X less
    them, their mean squares, Y, and the running statistics: five launches."""
    x, scale, bias, mean, var, mom_t = ins
    xp, eps = ctx.xp, f32(attrs["epsilon"])
    axis, c, inner, others = _layout(x, attrs)
    reserve = xp.zeros((0,), dtype=x.dtype)
    if uses_global_stats(ctx, attrs):
        y = BN_AFFINE.on(xp)(x, mean, var, scale, bias, eps, i32(inner), i32(c))
        return (y, *BN_KEEP_STATS.on(xp)(mean, var), reserve)
    bmean = CHANNEL_MEAN.on(xp)(x, axis=others)
    d = CENTRE.on(xp)(x, bmean, i32(inner), i32(c))
    bvar = CHANNEL_MEAN_SQUARE.on(xp)(d, axis=others)
    y = BN_NORMALISE.on(xp)(d, bvar, scale, bias, eps, i32(inner), i32(c))
    use_t = mom_t is not None
    mean_out, var_out, saved_inv = BN_RUNNING.on(xp)(mean, var, bmean, bvar, mom_t if use_t else mean,
                                                     f32(attrs["momentum"]), i32(use_t), eps)
    return y, mean_out, var_out, bmean, saved_inv, reserve


def _batch_norm_grad_gate(xp, ins, attrs):
    x, scale, _bias, saved_mean, saved_inv, mean, var, _reserve, g = ins
    if not on_device(xp, x, scale, saved_mean, saved_inv, mean, var, g) or not 2 <= x.ndim <= 5 or not x.size:
        return False
    c = x.shape[channel_axis(x.ndim, attrs["data_layout"])]
    return g.shape == x.shape and all(v.shape == (c,) for v in (scale, saved_mean, saved_inv, mean, var))


@fast_kernel("batch_norm_grad", _batch_norm_grad_gate, place="gpu")
def batch_norm_grad(ctx, ins, attrs):
    """X less its mean, the two channel sums, X@GRAD in one kernel (the closed form of kernelcore/grad/norm.py),
    and Scale@GRAD."""
    x, g = ins[0], ins[8]
    xp = ctx.xp
    axis, c, inner, others = _layout(x, attrs)
    global_stats = uses_global_stats(ctx, attrs)
    m, inv, sc = batch_norm_grad_factors(xp, ins, attrs, global_stats, np.float32)
    xc = CENTRE.on(xp)(x, m, i32(inner), i32(c))
    dbias = CHANNEL_SUM.on(xp)(g, axis=others)
    dot = CHANNEL_DOT.on(xp)(g, xc, axis=others)
    dx = None
    if wanted(ctx, "X@GRAD"):
        count = f32(x.size // c)
        dx = BN_GRAD_DX.on(xp)(g, xc, inv, sc, dot, dbias, count, i32(inner), i32(c), i32(not global_stats))
    return (dx, inv * dot if wanted(ctx, "Scale@GRAD") else None, dbias if wanted(ctx, "Bias@GRAD") else None)


# -- layer_norm: one block per row ------------------------------------------------------------------------------
def _layer_norm_twin(grid, block, x, scale, bias, y, mean_out, var_out, rows, cols, eps, has_scale, has_bias):
    check_row_launch(grid, block, rows)
    x2 = x.reshape(int(rows), int(cols))
    mean = x2.sum(axis=1, keepdims=True) / np.float32(cols)
    d = x2 - mean
    var = (d * d).sum(axis=1, keepdims=True) / np.float32(cols)
    v = d * (np.float32(1) / np.sqrt(var + eps))
    if has_scale:
        v = v * scale.reshape(1, -1)
    if has_bias:
        v = v + bias.reshape(1, -1)
    y.reshape(int(rows), int(cols))[...] = v
    mean_out[...] = mean.reshape(-1)
    var_out[...] = var.reshape(-1)


LAYER_NORM_ROWS = declare("kc_layer_norm_rows", RAW, r"""
extern "C" __global__ void kc_layer_norm_rows(const float* x, const float* scale, const float* bias, float* y,
                                              float* mean_out, float* var_out, int rows, int cols, float eps,
                                              int has_scale, int has_bias) {
    __shared__ float scratch[32];
    int row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + (long long)row * cols;
    float* yr = y + (long long)row * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += xr[j];
    float mean = kc_block_sum(s, scratch) / (float)cols;
    float q = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) { float d = xr[j] - mean; q += d * d; }
    float var = kc_block_sum(q, scratch) / (float)cols;
    float inv = 1.0f / sqrtf(var + eps);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float v = (xr[j] - mean) * inv;
        if (has_scale) v = v * scale[j];
        if (has_bias) v = v + bias[j];
        yr[j] = v;
    }
    if (threadIdx.x == 0) { mean_out[row] = mean; var_out[row] = var; }
}
""", preamble=BLOCK_REDUCE, twin=_layer_norm_twin)


def _layer_norm_gate(xp, ins, attrs):
    x, scale, bias = ins
    if not 1 <= attrs["begin_norm_axis"] < x.ndim or not x.size:
        return False
    right = math.prod(x.shape[attrs["begin_norm_axis"]:])
    present = [t for t in (scale, bias) if t is not None]
    return on_device(xp, x, *present) and all(t.size == right for t in present)


@fast_kernel("layer_norm", _layer_norm_gate, place="gpu")
def layer_norm(ctx, ins, attrs):
    x, scale, bias = ins
    xp = ctx.xp
    right = math.prod(x.shape[attrs["begin_norm_axis"]:])
    rows = x.size // right
    y = xp.empty(x.shape, dtype=x.dtype)
    mean, var = xp.empty((rows,), dtype=x.dtype), xp.empty((rows,), dtype=x.dtype)
    LAYER_NORM_ROWS.on(xp)((rows,), (threads_for(right),), (
        x, x if scale is None else scale, x if bias is None else bias, y, mean, var, i32(rows), i32(right),
        f32(attrs["epsilon"]), i32(scale is not None), i32(bias is not None)))
    return y, mean, var


# -- layer_norm_grad: one block per row for X@GRAD (and xhat), then column sums for Scale@GRAD and Bias@GRAD --------
def _layer_norm_grad_twin(grid, block, x, g, scale, mean, var, dx, xhat, rows, cols, eps, has_scale):
    check_row_launch(grid, block, rows)
    rows, cols = int(rows), int(cols)
    x2, g2 = x.reshape(rows, cols), g.reshape(rows, cols)
    inv = np.float32(1) / np.sqrt(var.reshape(rows, 1) + eps)
    xh = (x2 - mean.reshape(rows, 1)) * inv
    dy = g2 * scale.reshape(1, cols) if has_scale else g2
    mean_dy = dy.sum(axis=1, keepdims=True) / np.float32(cols)
    mean_dyxh = (dy * xh).sum(axis=1, keepdims=True) / np.float32(cols)
    xhat.reshape(rows, cols)[...] = xh
    dx.reshape(rows, cols)[...] = inv * ((dy - mean_dy) - xh * mean_dyxh)


LAYER_NORM_GRAD_ROWS = declare("kc_layer_norm_grad_rows", RAW, r"""
extern "C" __global__ void kc_layer_norm_grad_rows(const float* x, const float* g, const float* scale,
                                                   const float* mean, const float* var, float* dx, float* xhat,
                                                   int rows, int cols, float eps, int has_scale) {
    __shared__ float scratch[32];
    int row = blockIdx.x;
    if (row >= rows) return;
    long long base = (long long)row * cols;
    float m = mean[row], inv = 1.0f / sqrtf(var[row] + eps);
    float s1 = 0.0f, s2 = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float xh = (x[base + j] - m) * inv;
        float dy = has_scale ? g[base + j] * scale[j] : g[base + j];
        s1 += dy;
        s2 += dy * xh;
        xhat[base + j] = xh;
    }
    s1 = kc_block_sum(s1, scratch) / (float)cols;
    s2 = kc_block_sum(s2, scratch) / (float)cols;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float dy = has_scale ? g[base + j] * scale[j] : g[base + j];
        dx[base + j] = inv * ((dy - s1) - xhat[base + j] * s2);
    }
}
""", preamble=BLOCK_REDUCE, twin=_layer_norm_grad_twin)


def _layer_norm_grad_gate(xp, ins, attrs):
    x, scale, bias, mean, var, g = ins
    if mean is None or var is None or not 1 <= attrs["begin_norm_axis"] < x.ndim or not x.size:
        return False
    right = math.prod(x.shape[attrs["begin_norm_axis"]:])
    present = [t for t in (scale, bias) if t is not None]
    return (on_device(xp, x, g, mean, var, *present) and g.shape == x.shape and mean.size == var.size == x.size // right
            and all(t.size == right for t in present))


@fast_kernel("layer_norm_grad", _layer_norm_grad_gate, place="gpu")
def layer_norm_grad(ctx, ins, attrs):
    x, scale, bias, mean, var, g = ins
    xp = ctx.xp
    right = math.prod(x.shape[attrs["begin_norm_axis"]:])
    rows = x.size // right
    dx, xhat = xp.empty(x.shape, dtype=x.dtype), xp.empty(x.shape, dtype=x.dtype)
    LAYER_NORM_GRAD_ROWS.on(xp)((rows,), (threads_for(right),), (
        x, g, x if scale is None else scale, mean, var, dx, xhat, i32(rows), i32(right), f32(attrs["epsilon"]),
        i32(scale is not None)))
    g2, xhat2 = g.reshape(rows, right), xhat.reshape(rows, right)
    dscale = dbias = None
    if scale is not None and wanted(ctx, "Scale@GRAD"):
        dscale = CHANNEL_DOT.on(xp)(g2, xhat2, axis=0).reshape(scale.shape)
    if bias is not None and wanted(ctx, "Bias@GRAD"):
        dbias = CHANNEL_SUM.on(xp)(g2, axis=0).reshape(bias.shape)
    return (dx if wanted(ctx, "X@GRAD") else None), dscale, dbias
