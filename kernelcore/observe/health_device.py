"""The flight recorder's health summary of a device array in two kernel launches and one read back to the host,
where the reference (health_summary.summarize over CuPy) launches a reduction per number and reads each back:
min, max, two dot products, the sign counts, six waits for the device per op output.

`kc_health_partials_f32` / `_f64`: a grid-stride pass, each thread classifying its elements (NaN, +Inf, -Inf,
negative, zero, positive) and keeping the finite ones' min, max, sum and sum of squares in double, the threads of a
block then folded in shared memory into the block's ten numbers. `kc_health_merge`: one thread folds the blocks'
numbers into the summary's ten (health_summary.NUMBERS: min, max and mean NaN where no element is finite). Each
kernel's twin (kernelcore/device/declare.py) follows its body for the strict stand-in, which checks the launches
and arguments as CuPy would: the CUDA itself runs only on a GPU.
"""
from __future__ import annotations

import numpy as np

from ..device.declare import MAX_INT32_ELEMENTS, RAW, DeviceKernel

THREADS = 256  # per block: a power of two, for the fold in shared memory
MAX_BLOCKS = 1024  # a grid-stride loop past this many blocks; the merge reads every block's numbers
_INF, _NAN = "__longlong_as_double(0x7ff0000000000000LL)", "__longlong_as_double(0x7ff8000000000000LL)"

_PARTIALS = r"""
extern "C" __global__ void KERNEL_NAME(const ELEM_T* x, long long n, double* part) {
    __shared__ double s[10][256];
    const int t = threadIdx.x;
    double c[6] = {0, 0, 0, 0, 0, 0};  /* negative, zero, positive, NaN, +Inf, -Inf */
    double lo = INF, hi = -INF, sum = 0, sq = 0;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + t; i < n; i += step) {
        const double v = (double)x[i];
        if (v != v) {
            c[3] += 1;
        } else if (v == INF) {
            c[4] += 1;
        } else if (v == -INF) {
            c[5] += 1;
        } else {
            c[v < 0 ? 0 : v == 0 ? 1 : 2] += 1;
            lo = fmin(lo, v);
            hi = fmax(hi, v);
            sum += v;
            sq += v * v;
        }
    }
    for (int k = 0; k < 6; k++) s[k][t] = c[k];
    s[6][t] = lo;
    s[7][t] = hi;
    s[8][t] = sum;
    s[9][t] = sq;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (t < half) {
            for (int k = 0; k < 6; k++) s[k][t] += s[k][t + half];
            s[6][t] = fmin(s[6][t], s[6][t + half]);
            s[7][t] = fmax(s[7][t], s[7][t + half]);
            s[8][t] += s[8][t + half];
            s[9][t] += s[9][t + half];
        }
        __syncthreads();
    }
    if (t == 0)
        for (int k = 0; k < 10; k++) part[blockIdx.x * 10 + k] = s[k][0];
}
"""

_MERGE = r"""
extern "C" __global__ void kc_health_merge(const double* part, int blocks, long long n, double* out) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    double c[6] = {0, 0, 0, 0, 0, 0};
    double lo = INF, hi = -INF, sum = 0, sq = 0;
    for (int b = 0; b < blocks; b++) {
        const double* p = part + b * 10;
        for (int k = 0; k < 6; k++) c[k] += p[k];
        lo = fmin(lo, p[6]);
        hi = fmax(hi, p[7]);
        sum += p[8];
        sq += p[9];
    }
    const double finite = (double)n - c[3] - c[4] - c[5];
    for (int k = 0; k < 6; k++) out[k] = c[k];
    out[6] = finite > 0 ? lo : NAN_;
    out[7] = finite > 0 ? hi : NAN_;
    out[8] = finite > 0 ? sum / finite : NAN_;
    out[9] = sqrt(sq);
}
"""


def _blocks_of(n: int, grid: int, block: int) -> np.ndarray:
    """The block each element index goes to in a grid-stride loop of `grid` blocks of `block` threads."""
    return (np.arange(n) // block) % grid


def _partials_twin(grid, block, x, n, part):
    n, (g,), (b,) = int(n), grid, block
    if b != THREADS or not 1 <= g <= MAX_BLOCKS or part.size != 10 * g:
        raise ValueError(f"health partials: grid {grid}, block {block} for {part.size // 10} blocks' numbers")
    v = x.reshape(-1)[:n].astype(np.float64)
    where = _blocks_of(n, g, b)
    nan, pinf, ninf = np.isnan(v), v == np.inf, v == -np.inf
    fin = ~(nan | pinf | ninf)
    p = part.reshape(g, 10)
    for k, mask in enumerate((fin & (v < 0), fin & (v == 0), fin & (v > 0), nan, pinf, ninf)):
        p[:, k] = np.bincount(where, weights=mask, minlength=g)
    f = np.where(fin, v, 0.0)
    p[:, 8] = np.bincount(where, weights=f, minlength=g)
    p[:, 9] = np.bincount(where, weights=f * f, minlength=g)
    p[:, 6], p[:, 7] = np.inf, -np.inf
    np.minimum.at(p[:, 6], where[fin], v[fin])
    np.maximum.at(p[:, 7], where[fin], v[fin])


def _merge_twin(grid, block, part, blocks, n, out):
    if grid != (1,) or block != (1,):
        raise ValueError(f"health merge runs one thread, launched grid {grid}, block {block}")
    p = part.reshape(-1, 10)[:int(blocks)]
    c = p[:, :6].sum(axis=0)
    finite = int(n) - c[3] - c[4] - c[5]
    out[:6] = c
    nan = np.nan
    out[6:] = (p[:, 6].min(initial=np.inf) if finite > 0 else nan, p[:, 7].max(initial=-np.inf) if finite > 0 else nan,
               p[:, 8].sum() / finite if finite > 0 else nan, np.sqrt(p[:, 9].sum()))


def _source(body: str, **names) -> str:
    for key, value in {"INF": _INF, "NAN_": _NAN, **names}.items():  # whole placeholders, none inside another
        body = body.replace(key, value)
    return body


# DeviceKernels of their own, not declare()'s: DECLARED lists the ops' fused kernels, each run by an op case
PARTIALS = {np.dtype(np.float32): DeviceKernel("kc_health_partials_f32", RAW, _partials_twin, _source(
                _PARTIALS, KERNEL_NAME="kc_health_partials_f32", ELEM_T="float")),
            np.dtype(np.float64): DeviceKernel("kc_health_partials_f64", RAW, _partials_twin, _source(
                _PARTIALS, KERNEL_NAME="kc_health_partials_f64", ELEM_T="double"))}
MERGE = DeviceKernel("kc_health_merge", RAW, _merge_twin, _source(_MERGE))


def takes(value) -> bool:
    """Whether the kernels take this device value: float32 or float64, C-contiguous, an int32's worth of
    elements (what a block index times the block reaches)."""
    return value.dtype in PARTIALS and value.flags.c_contiguous and value.size <= MAX_INT32_ELEMENTS


def write(xp, value, rows, row: int) -> int:
    """The value's ten numbers (health_summary.NUMBERS) written into `rows` at `row`; its NaN/Inf count."""
    n = int(value.size)
    grid = max(1, min(-(-n // THREADS), MAX_BLOCKS))
    part = xp.empty(10 * grid, dtype=np.float64)
    out = xp.empty(10, dtype=np.float64)
    PARTIALS[value.dtype].on(xp)((grid,), (THREADS,), (value, np.int64(n), part))
    MERGE.on(xp)((1,), (1,), (part, np.int32(grid), np.int64(n), out))
    numbers = out.get()
    rows.array[row] = numbers
    return int(numbers[3] + numbers[4] + numbers[5])
