"""softmax and log_softmax along the last axis, and their gradients, on a GPU: one kernel with a thread block per
row (the row's max, the sum of its exps, the outputs) where CuPy ran a max, a subtraction, an exp, a sum and a
division as five launches. Other axes go to the reference (kernelcore/ops/activation.py, ops/math_extra.py,
grad/activation.py)."""
from __future__ import annotations

import numpy as np

from ..runtime.fast_paths import fast_kernel
from .cuda_source import BLOCK_REDUCE
from .declare import RAW, check_row_launch, declare, i32, on_device, threads_for


def _softmax_twin(grid, block, x, y, rows, cols, take_log):
    check_row_launch(grid, block, rows)
    x2 = x.reshape(int(rows), int(cols))
    m = np.fmax.reduce(x2, axis=1, keepdims=True)  # fmaxf: a NaN is skipped here and spreads through the sum
    e = np.exp(x2 - m)
    s = e.sum(axis=1, keepdims=True)
    y.reshape(int(rows), int(cols))[...] = (x2 - m) - np.log(s) if take_log else e / s


SOFTMAX_ROWS = declare("kc_softmax_rows", RAW, r"""
extern "C" __global__ void kc_softmax_rows(const float* x, float* y, int rows, int cols, int take_log) {
    __shared__ float scratch[32];
    int row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + (long long)row * cols;
    float* yr = y + (long long)row * cols;
    float m = __int_as_float(0xff800000);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
    m = kc_block_max(m, scratch);
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += expf(xr[j] - m);
    s = kc_block_sum(s, scratch);
    if (take_log) {
        float ls = logf(s);
        for (int j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = (xr[j] - m) - ls;
    } else {
        for (int j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = expf(xr[j] - m) / s;
    }
}
""", preamble=BLOCK_REDUCE, twin=_softmax_twin)


def _softmax_grad_twin(grid, block, out, g, dx, rows, cols):
    check_row_launch(grid, block, rows)
    o2, g2 = out.reshape(int(rows), int(cols)), g.reshape(int(rows), int(cols))
    s = (g2 * o2).sum(axis=1, keepdims=True)
    dx.reshape(int(rows), int(cols))[...] = (g2 - s) * o2


SOFTMAX_GRAD_ROWS = declare("kc_softmax_grad_rows", RAW, r"""
extern "C" __global__ void kc_softmax_grad_rows(const float* out, const float* g, float* dx, int rows, int cols) {
    __shared__ float scratch[32];
    int row = blockIdx.x;
    if (row >= rows) return;
    long long base = (long long)row * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += g[base + j] * out[base + j];
    s = kc_block_sum(s, scratch);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) dx[base + j] = (g[base + j] - s) * out[base + j];
}
""", preamble=BLOCK_REDUCE, twin=_softmax_grad_twin)


def _log_softmax_grad_twin(grid, block, out, g, dx, rows, cols):
    check_row_launch(grid, block, rows)
    o2, g2 = out.reshape(int(rows), int(cols)), g.reshape(int(rows), int(cols))
    dx.reshape(int(rows), int(cols))[...] = g2 - np.exp(o2) * g2.sum(axis=1, keepdims=True)


LOG_SOFTMAX_GRAD_ROWS = declare("kc_log_softmax_grad_rows", RAW, r"""
extern "C" __global__ void kc_log_softmax_grad_rows(const float* out, const float* g, float* dx, int rows, int cols) {
    __shared__ float scratch[32];
    int row = blockIdx.x;
    if (row >= rows) return;
    long long base = (long long)row * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += g[base + j];
    s = kc_block_sum(s, scratch);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) dx[base + j] = g[base + j] - expf(out[base + j]) * s;
}
""", preamble=BLOCK_REDUCE, twin=_log_softmax_grad_twin)


def _last_axis(x, attrs) -> bool:
    return x.ndim >= 1 and x.size > 0 and attrs["axis"] in (-1, x.ndim - 1)


def _softmax_call(ctx, x, log: bool):
    xp = ctx.xp
    y = xp.empty(x.shape, dtype=x.dtype)
    cols = x.shape[-1]
    rows = x.size // cols
    SOFTMAX_ROWS.on(xp)((rows,), (threads_for(cols),), (x, y, i32(rows), i32(cols), i32(log)))
    return (y,)


@fast_kernel("softmax", lambda xp, ins, attrs: _last_axis(ins[0], attrs) and on_device(xp, ins[0]), place="gpu")
def softmax(ctx, ins, attrs):
    return _softmax_call(ctx, ins[0], False)


@fast_kernel("log_softmax", lambda xp, ins, attrs: _last_axis(ins[0], attrs) and on_device(xp, ins[0]),
             place="gpu")
def log_softmax(ctx, ins, attrs):
    return _softmax_call(ctx, ins[0], True)


def _grad_gate(xp, ins, attrs) -> bool:
    return _last_axis(ins[0], attrs) and on_device(xp, *ins) and ins[0].shape == ins[1].shape


def _grad_rows(ctx, kernel, out, g):
    xp = ctx.xp
    dx = xp.empty(out.shape, dtype=out.dtype)
    cols = out.shape[-1]
    rows = out.size // cols
    kernel.on(xp)((rows,), (threads_for(cols),), (out, g, dx, i32(rows), i32(cols)))
    return (dx,)


@fast_kernel("softmax_grad", _grad_gate, place="gpu")
def softmax_grad(ctx, ins, attrs):
    return _grad_rows(ctx, SOFTMAX_GRAD_ROWS, *ins)


@fast_kernel("log_softmax_grad", _grad_gate, place="gpu")
def log_softmax_grad(ctx, ins, attrs):
    return _grad_rows(ctx, LOG_SOFTMAX_GRAD_ROWS, *ins)
