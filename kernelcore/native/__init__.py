"""kernelcore's CPU kernels in C. Some ops NumPy makes one full-size temporary at a time: batch and layer norm,
softmax along the last axis, exact gelu, 2-D max pooling (each with its gradient), and relu's and relu6's
gradients; relu and relu6 themselves it makes on one core. For depthwise convolution and its gradients NumPy has
no op and goes through copies, and the im2col columns of the other convolutions it copies from a padded input
along rows of a few elements. Here each takes one or two passes over the data, a row or an image's channel at a
time while it is in cache, shared over the cores. An RNN's per-step products with its recurrent weight go through
a GEMM for few rows whose weight is packed once per pass, where OpenBLAS packs it again every step; an LSTM's step
is that GEMM with the gates' activations, c and h made on each block of its result while it is in cache, in one
call, and its backward one pass and that GEMM. A one-group 2-D convolution's forward is that GEMM too, its im2col
columns written straight into the GEMM's panels (a 1x1 one's read where they lie) and its sums straight into the
NCHW output, where the NumPy path multiplies the columns in parts with one-thread OpenBLAS calls and copies the
product into NCHW.

build.py compiles kernelcore/native/*.c at install time (hatch_build.py: `./dev build`, `pip install`) into a
library per x86-64 level (baseline, AVX2, AVX-512; one library elsewhere); this module loads the highest level the
CPU runs with ctypes, and refuses a library built from other sources than those beside it (an editable install
after a .c or .h changed: `python -m kernelcore.native` rebuilds). The fast variants (`<family>.py` beside this
file, kernelcore/runtime/fast_paths.py) ask `ready(xp, *arrays)` (the RNNs' GEMM `gemm_ready`) and fall back to the
reference kernels' NumPy code (kernelcore/ops, kernelcore/grad: the GPU runs it too, and the tests compare with
it) when it says no: no library (no compiler at install time, another platform, a stale
build), KERNELCORE_NATIVE=off, a device array, another dtype or a non-contiguous array. Both ask `enabled` first:
the one switch of every C path.

Threads: each call passes its own count, `threads()`: the BLAS's thread limit, which is what
`threadpoolctl.threadpool_limits`, OMP_NUM_THREADS and a split run (kernelcore/runtime/cpu_parts.py) already decide for
an op, and one inside an op's part. The library shares its loops over its own few POSIX threads (pool.c says why
not OpenMP), which spin at most 2 ms after a loop, yielding their core to any other thread, then sleep.
"""
from __future__ import annotations

import ctypes
import math
import os
import threading
import warnings
from pathlib import Path

import numpy as np

from ..runtime import cpu_parts, fast_paths
from . import build

ENV = fast_paths.ENV
LIBRARY = build.library_path(Path(__file__).parent, None)  # the baseline build, which holds the level probe
# x86-64 levels by number (kc_native_cpu_level) and name (build.X86_LEVELS, KERNELCORE_NATIVE=<name>)
LEVELS = {1: "x86-64", 2: "x86-64-v2", 3: "x86-64-v3", 4: "x86-64-v4"}

_lock = threading.Lock()
_lib: ctypes.CDLL | None = None
_state: str | None = None  # None: not loaded yet

_P = ctypes.c_void_p
_I64 = ctypes.c_int64
_INT = ctypes.c_int
_F32 = ctypes.c_float
_STR = ctypes.c_char_p
# (restype, argtypes) of every function kc_native.h declares (tests/test_native_bindings.py compares the two)
SIGNATURES = {
    "kc_native_sources": (_STR, []),
    "kc_native_level": (_STR, []),
    "kc_native_cpu_level": (_INT, []),
    "kc_bn_affine_f32": (None, [_P, _P, _P, _P, _P, _I64, _I64, _I64, _INT]),
    "kc_bn_train_f32": (None, [_P, _P, _P, _P, _P, _P, _P, _I64, _I64, _I64, _F32, _INT]),
    "kc_bn_grad_f32": (None, [_P, _P, _P, _P, _P, _P, _P, _P, _I64, _I64, _I64, _INT, _INT]),
    "kc_depthwise_conv2d_f32": (None, [_P, _P, _P, _I64, _I64, _P, _INT]),
    "kc_depthwise_conv2d_grad_f32": (None, [_P, _P, _P, _P, _P, _P, _I64, _I64, _P, _INT]),
    "kc_max_pool2d_f32": (None, [_P, _P, _I64, _P, _INT]),
    "kc_max_pool2d_grad_f32": (None, [_P, _P, _P, _P, _I64, _P, _INT]),
    "kc_masked_grad_f32": (None, [_P, _P, _P, _I64, _F32, _F32, _INT, _INT]),
    "kc_clip_f32": (None, [_P, _P, _I64, _F32, _F32, _INT, _INT]),
    "kc_add_rows_f32": (None, [_P, _P, _P, _I64, _I64, _I64, _INT]),
    "kc_softmax_f32": (None, [_P, _P, _I64, _I64, _INT]),
    "kc_softmax_grad_f32": (None, [_P, _P, _P, _I64, _I64, _INT]),
    "kc_layer_norm_f32": (None, [_P, _P, _P, _P, _P, _P, _I64, _I64, _F32, _INT]),
    "kc_layer_norm_grad_f32": (None, [_P, _P, _P, _P, _P, _P, _P, _P, _I64, _I64, _F32, _INT]),
    "kc_gelu_f32": (None, [_P, _P, _I64, _INT]),
    "kc_gelu_grad_f32": (None, [_P, _P, _P, _I64, _INT]),
    "kc_im2col_f32": (None, [_P, _P, _I64, _I64, _P, _INT]),
    "kc_col2im_f32": (None, [_P, _P, _I64, _I64, _P, _INT]),
    "kc_hard_swish_f32": (None, [_P, _P, _I64, _F32, _F32, _F32, _INT]),
    "kc_hard_swish_grad_f32": (None, [_P, _P, _P, _I64, _F32, _F32, _F32, _INT]),
    "kc_conv2d_f32": (None, [_P, _P, _P, _P, _I64, _I64, _I64, _P, _INT]),
    "kc_pack_columns_f32": (None, [_P, _I64, _I64, _P, _I64, _I64]),
    "kc_gemm_packed_f32": (None, [_P, _I64, _I64, _P, _P, _I64, _P, _I64, _I64, _I64, _INT]),
    "kc_lstm_step_f32": (None, [_P, _I64, _I64, _P, _P, _P, _P, _P, _P, _I64, _I64, _I64, _INT]),
    "kc_lstm_step_grad_f32": (None, [_P, _P, _P, _P, _P, _P, _P, _P, _P, _I64, _I64, _INT]),
    "kc_lstm_sequence_f32": (None, [_P, _P, _P, _P, _P, _P, _P, _I64, _INT, _I64, _I64, _INT]),
    "kc_health_summary_f32": (_I64, [_P, _I64, _P, _INT]),
    "kc_health_summary_f64": (_I64, [_P, _I64, _P, _INT]),
    "kc_health_summary_many": (_I64, [_P, _I64, _P, _INT]),
    # (reads Python objects: only through row_plan.plan_checker, which keeps the GIL for it; this handle leaves it)
    "kc_plan_check": (_I64, [_P, _P, _I64, _P, _I64, _P, _P, _P, _P, _P, _P, _P]),
}
KERNELS = ("batch and layer norm, convolutions (im2col into a packed GEMM), depthwise convolution, max pooling, "
           "softmax, gelu, relu and relu6 and their gradients, large adds, RNN step products and LSTM steps (float32)")


def switch() -> str:
    """KERNELCORE_NATIVE, lower-cased: "off" (or 0, no, false) for the NumPy kernels, an x86-64 level name
    (x86-64, x86-64-v3, x86-64-v4) for the highest library built at or below it, else (unset, "on") the highest
    this CPU runs."""
    value = os.environ.get(ENV, "").strip().lower()
    return "off" if value in fast_paths.OFF_VALUES else value


def _bind(lib: ctypes.CDLL) -> None:
    for name, (restype, argtypes) in SIGNATURES.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = argtypes, restype


def _pick_level(probe: ctypes.CDLL, directory: Path, wanted: str) -> tuple[Path, str]:
    """(library, its level) to load from `directory`: the highest level built there that the CPU runs
    (kc_native_cpu_level), capped at `wanted` where that names a level."""
    cpu = probe.kc_native_cpu_level()
    cap = next((n for n, name in LEVELS.items() if name == wanted), max(LEVELS))
    baseline = build.library_path(directory, None)
    for number in sorted(LEVELS, reverse=True):
        path = build.library_path(directory, LEVELS[number])
        if number <= min(cpu, cap) and path != baseline and path.exists():
            return path, LEVELS[number]
    return baseline, probe.kc_native_level().decode()  # x86-64, or "custom" (KERNELCORE_CFLAGS)


def built_from_other_sources(lib: ctypes.CDLL, directory: Path) -> str | None:
    """Why `lib` does not match the sources in `directory` (an editable install after a .c or .h changed), None
    when it does or no sources are there to compare (an install that left them out)."""
    here = build.source_digest(directory)
    built = lib.kc_native_sources().decode()
    if here is None or built == here:
        return None
    return (f"{Path(lib._name).name} was built from other sources than those beside it (a .c or .h changed "
            f"since; sources {here[:12]}, library {built[:12] or 'unrecorded'}): rebuild with `python -m "
            "kernelcore.native` (or ./dev build)")


def open_library(directory: Path, wanted: str = "") -> tuple[ctypes.CDLL | None, str, str | None]:
    """(the library to use or None, what native_state says, why a library there is stale or None) for the
    libraries built in `directory`, at the highest level the CPU runs (capped by `wanted`: see `switch`)."""
    probe_path = build.library_path(directory, None)
    if not probe_path.exists():
        return None, "not built (no C compiler when kernelcore was installed; see hatch_build.py): NumPy kernels", None
    try:
        probe = ctypes.CDLL(str(probe_path))
        _bind(probe)
        path, level = _pick_level(probe, directory, wanted)
        lib = probe if path == probe_path else ctypes.CDLL(str(path))
        _bind(lib)
    except (OSError, AttributeError) as e:
        return None, f"not loaded ({e}): NumPy kernels", None
    stale = built_from_other_sources(lib, directory)
    if stale is not None:
        return None, f"not used: {stale}: NumPy kernels", stale
    return lib, f"{path.name} ({level}): {KERNELS} in C", None


def _load() -> None:
    global _lib, _state
    with _lock:
        if _state is not None:
            return
        wanted = switch()
        if wanted == "off":
            _state = f"off ({ENV}=off): NumPy kernels"
            return
        lib, state, stale = open_library(LIBRARY.parent, wanted)
        if stale is not None:
            # silent NumPy kernels would look like a slowdown of unknown cause
            warnings.warn(f"kernelcore: {stale}; running the NumPy kernels until then", RuntimeWarning,
                          stacklevel=4)
        _lib, _state = lib, state


def library() -> ctypes.CDLL | None:
    if _state is None:
        _load()
    return _lib


def native_state() -> str:
    """What `kernelcore env` prints: the library in use, or why the NumPy kernels run."""
    library()
    return _state or ""


def enabled(xp) -> bool:
    """Whether the C kernels may run on `xp`'s arrays at all: NumPy's, with a library loaded (not switched off,
    built, of these sources) and fast paths not switched off (kernelcore/runtime/fast_paths.py). Every C path's
    gate (`ready`, `gemm_ready`) asks this first."""
    return xp is np and fast_paths.enabled() and library() is not None


def ready(xp, *arrays) -> bool:
    """Whether the C kernels can take these arrays: host NumPy arrays (a NumPy scalar, which has flags and a
    dtype too, has no buffer to pass), float32, C-contiguous, aligned (a buffer viewed from an odd byte offset is
    not: C may assume every float* is), and a library loaded."""
    if not enabled(xp):
        return False
    return all(isinstance(a, np.ndarray) and a.dtype == np.float32 and a.flags.c_contiguous and a.flags.aligned
               for a in arrays)


def threads() -> int:
    """Threads for the next call (see the module docstring)."""
    return cpu_parts.op_threads()


def _c() -> ctypes.CDLL:
    """The loaded library, for the wrappers below (which callers reach only after `ready` said yes)."""
    return _lib or library()


_c_char_at, _address_of = ctypes.c_char.from_buffer, ctypes.addressof


def _ptr(a) -> int:
    """a's data address. Through the buffer protocol where a is writable and contiguous (264 ns here), else
    NumPy's ctypes attribute (830 ns, which builds an object per call): an LSTM step passes seven arrays."""
    try:
        return _address_of(_c_char_at(a))
    except (TypeError, ValueError, BufferError):  # read-only, not contiguous, or empty
        return a.ctypes.data


def _ptr_or_none(a):
    return None if a is None else _ptr(a)


def batch_norm_affine(x, mean, k, bias):
    """(x - mean) * k + bias per channel of a channels-first float32 batch; mean, k, bias: float32 [C]."""
    n, c = x.shape[:2]
    y = np.empty_like(x)
    _c().kc_bn_affine_f32(_ptr(x), _ptr(y), _ptr(mean), _ptr(k), _ptr(bias), n, c, x.size // max(1, n * c),
                          threads())
    return y


def batch_norm_train(x, scale, bias, eps: float):
    """(y, mean, biased variance, 1 / sqrt(var + eps)) of batch statistics over a channels-first float32 batch."""
    n, c = x.shape[:2]
    y = np.empty_like(x)
    mean, var, inv = (np.empty(c, np.float32) for _ in range(3))
    _c().kc_bn_train_f32(_ptr(x), _ptr(y), _ptr(scale), _ptr(bias), _ptr(mean), _ptr(var), _ptr(inv), n, c,
                         x.size // max(1, n * c), eps, threads())
    return y, mean, var, inv


def batch_norm_grad(x, g, mean, inv, scale, want_dx: bool, batch_stats: bool):
    """(X@GRAD or None, Scale@GRAD, Bias@GRAD) of batch_norm over a channels-first float32 batch."""
    n, c = x.shape[:2]
    dx = np.empty_like(x) if want_dx else None
    dscale, dbias = np.empty(c, np.float32), np.empty(c, np.float32)
    _c().kc_bn_grad_f32(_ptr(x), _ptr(g), _ptr(mean), _ptr(inv), _ptr(scale), _ptr_or_none(dx),
                        _ptr(dscale), _ptr(dbias), n, c, x.size // max(1, n * c), int(batch_stats), threads())
    return dx, dscale, dbias


# the filter's gradient sums each channel's taps on the C stack: larger filters take the NumPy path
DEPTHWISE_MAX_TAPS = 1024


def depthwise_ready(xp, x, w, groups: int) -> bool:
    """Whether the C depthwise kernels take this 2-D convolution: one filter per channel (no multiplier)."""
    return (x.ndim == 4 and groups == x.shape[1] == w.shape[0] and w.shape[1] == 1 and groups > 1
            and w.shape[2] * w.shape[3] <= DEPTHWISE_MAX_TAPS and ready(xp, x, w))


def _geometry(in_hw, out_hw, k_hw, strides, pads_before, dils):
    return np.array([*in_hw, *out_hw, *k_hw, *strides, *pads_before, *dils], dtype=np.int64)


def im2col(x, ks, strides, pads_before, dils, out_hw):
    """The im2col columns of a float32 [N, C, H, W] batch, [C * kh * kw, N * oh * ow] (rows (c, ky, kx), columns
    (n, oy, ox)), from the unpadded input: the padding (top, left in pads_before) is written as zeros."""
    n, c = x.shape[:2]
    cols = np.empty((c * ks[0] * ks[1], n * out_hw[0] * out_hw[1]), np.float32)
    dims = _geometry(x.shape[2:], out_hw, ks, strides, pads_before, dils)  # held until the call returns
    _c().kc_im2col_f32(_ptr(x), _ptr(cols), n, c, _ptr(dims), threads())
    return cols


def col2im(cols, n: int, c: int, out_hw, ks, strides, pads_before, dils, cols_hw):
    """The adjoint of im2col: columns [C * kh * kw, N * oh * ow] (rows (c, ky, kx), columns (n, oy, ox); oh, ow =
    cols_hw) added into a fresh float32 [N, C, *out_hw] batch at each tap's window (terms outside it dropped)."""
    x = np.empty((n, c, *out_hw), dtype=np.float32)
    dims = _geometry(out_hw, cols_hw, ks, strides, pads_before, dils)  # held until the call returns
    _c().kc_col2im_f32(_ptr(cols), _ptr(x), n, c, _ptr(dims), threads())
    return x


def conv2d_ready(xp, x, w, groups: int) -> bool:
    """Whether the C convolution (conv_gemm.c) takes this one: 2-D, one group, a filter over x's channels (it
    reads O x C x kh x kw of it), float32 host arrays."""
    return x.ndim == 4 and w.ndim == 4 and groups == 1 and w.shape[1] == x.shape[1] and ready(xp, x, w)


PANEL = 32  # gemm_rows.h's panel width


def conv2d(x, w, strides, pads_before, dils, out_hw):
    """A one-group 2-D convolution's output, [N, O, *out_hw], of a float32 [N, C, H, W] batch and [O, C, kh, kw]
    filter, from the unpadded input (pads_before: top, left)."""
    n, c = x.shape[:2]
    m, kh, kw = w.shape[0], w.shape[2], w.shape[3]
    cols = n * out_hw[0] * out_hw[1]
    scratch = np.empty(-(-cols // PANEL) * PANEL * c * kh * kw, np.float32)
    out = np.empty((n, m, *out_hw), dtype=np.float32)
    dims = _geometry(x.shape[2:], out_hw, w.shape[2:], strides, pads_before, dils)
    _c().kc_conv2d_f32(_ptr(x), _ptr(w), _ptr(scratch), _ptr(out), n, c, m, _ptr(dims), threads())
    return out


def depthwise_conv2d(x, w, strides, pads_before, dils, out_hw):
    """A depthwise convolution's output, [N, C, *out_hw], from the unpadded input (pads_before: top, left)."""
    n, c = x.shape[:2]
    out = np.empty((n, c, *out_hw), dtype=np.float32)
    dims = _geometry(x.shape[2:], out_hw, w.shape[2:], strides, pads_before, dils)
    _c().kc_depthwise_conv2d_f32(_ptr(x), _ptr(w), _ptr(out), n, c, _ptr(dims), threads())
    return out


def depthwise_conv2d_grads(x, w, g, strides, pads_before, dils, want_dx: bool, want_dw: bool):
    """(Input@GRAD or None, Filter@GRAD or None) of a depthwise convolution; g is Output@GRAD."""
    n, c = x.shape[:2]
    g = np.ascontiguousarray(g, dtype=np.float32)
    dx = np.empty_like(x) if want_dx else None
    dw = np.empty(w.shape, dtype=np.float32) if want_dw else None
    dims = _geometry(x.shape[2:], g.shape[2:], w.shape[2:], strides, pads_before, dils)
    # at stride 1 and dilation 1 Input@GRAD is the forward of g with the filter flipped (each channel's taps
    # reversed): a gather, which the C kernel makes with the forward's fast 3x3 rows
    flipped = np.ascontiguousarray(w.reshape(c, -1)[:, ::-1]) if want_dx else None
    _c().kc_depthwise_conv2d_grad_f32(
        _ptr(x), _ptr(w), _ptr_or_none(flipped), _ptr(g), _ptr_or_none(dx), _ptr_or_none(dw), n, c, _ptr(dims),
        threads())
    return dx, dw


def max_pool2d(x, ksize, strides, pads_before, out_hw):
    """2-D max pooling of a float32 NCHW batch with regular windows (pads_before: top, left; positions outside the
    image never win)."""
    n, c = x.shape[:2]
    y = np.empty((n, c, *out_hw), dtype=np.float32)
    dims = np.array([*x.shape[2:], *out_hw, *ksize, *strides, *pads_before], dtype=np.int64)
    _c().kc_max_pool2d_f32(_ptr(x), _ptr(y), n * c, _ptr(dims), threads())
    return y


def max_pool2d_grad(x, out, g, ksize, strides, pads_before):
    """X@GRAD of max_pool2d: each output's gradient at the first input of its window equal to its max."""
    n, c = x.shape[:2]
    dx = np.empty_like(x)
    dims = np.array([*x.shape[2:], *out.shape[2:], *ksize, *strides, *pads_before], dtype=np.int64)
    _c().kc_max_pool2d_grad_f32(_ptr(x), _ptr(out), _ptr(g), _ptr(dx), n * c, _ptr(dims), threads())
    return dx


# below this many elements NumPy's add (one core, no hand-off) is as fast
ADD_MIN_ELEMENTS = 1 << 16
# rows shorter than this cost add_rows.c two divisions and a loop's setup each: NumPy's add is faster there
ADD_MIN_ROW = 32


def add_rows_plan(x_shape, y_shape):
    """(outer, mid, inner) when y, broadcast to x (NumPy's trailing alignment), repeats along one run of x's dims
    and x is the output's shape: x as [outer, mid, inner], y as [outer, inner] (mid = 1: equal shapes); else
    None."""
    n = len(x_shape)
    if len(y_shape) > n:
        return None
    y = (1,) * (n - len(y_shape)) + tuple(y_shape)
    a = 0
    while a < n and y[a] == x_shape[a]:
        a += 1
    if a == n:
        return 1, 1, math.prod(x_shape)
    b = n
    while b > a and y[b - 1] == x_shape[b - 1]:
        b -= 1
    if any(d != 1 for d in y[a:b]):
        return None
    return math.prod(x_shape[:a]), math.prod(x_shape[a:b]), math.prod(x_shape[b:])


def add_plan(xp, x, y):
    """add_rows_plan's (outer, mid, inner) where add_rows takes x + y: large float32 ready arrays, y repeating
    along a run of x's dims in rows of ADD_MIN_ROW elements or more; else None."""
    if x.size < ADD_MIN_ELEMENTS or not ready(xp, x, y):
        return None
    plan = add_rows_plan(x.shape, y.shape)
    return plan if plan is not None and plan[2] >= ADD_MIN_ROW else None


def add_rows(x, y, plan):
    """x + y (add_rows.c) for add_plan's x, y and plan: a new array of x's shape, NumPy's values bit for bit
    (where both operands are NaN, either one's payload)."""
    outer, mid, inner = plan
    out = np.empty_like(x)
    _c().kc_add_rows_f32(_ptr(x), _ptr(y), _ptr(out), outer, mid, inner, threads())
    return out


def clip(x, lo: float, hi: float, lo_on_ties: bool = False):
    """min(max(x, lo), hi) in one pass, NaN kept: relu (hi = inf, lo_on_ties: -0 gives +0, as NumPy's maximum),
    relu6 and brelu (an x equal to lo kept, as NumPy's clip)."""
    out = np.empty_like(x)
    _c().kc_clip_f32(_ptr(x), _ptr(out), x.size, lo, hi, int(lo_on_ties), threads())
    return out


def hard_swish(x, offset: float, threshold: float, scale: float):
    """x * min(max(x + offset, 0), threshold) / scale in one pass, NumPy's bits."""
    out = np.empty_like(x)
    _c().kc_hard_swish_f32(_ptr(x), _ptr(out), x.size, offset, threshold, scale, threads())
    return out


def hard_swish_grad(x, g, offset: float, threshold: float, scale: float):
    """hard_swish's X@GRAD, g times its derivative at x, in one pass, NumPy's bits."""
    dx = np.empty_like(g)
    _c().kc_hard_swish_grad_f32(_ptr(x), _ptr(g), _ptr(dx), g.size, offset, threshold, scale, threads())
    return dx


def masked_grad(out, g, lo: float, hi: float | None):
    """g * (lo < out < hi) (hi None: no upper bound) in one pass: relu's and relu6's gradients."""
    dx = np.empty_like(g)
    _c().kc_masked_grad_f32(_ptr(out), _ptr(g), _ptr(dx), g.size, lo, 0.0 if hi is None else hi,
                                           int(hi is not None), threads())
    return dx


def softmax_rows(x):
    """softmax along the last axis of a float32 array (at least one element per row)."""
    out = np.empty_like(x)
    cols = x.shape[-1]
    _c().kc_softmax_f32(_ptr(x), _ptr(out), x.size // cols, cols, threads())
    return out


def softmax_rows_grad(out, g):
    """X@GRAD of softmax along the last axis: out * (g - sum(g * out)) per row."""
    dx = np.empty_like(g)
    cols = out.shape[-1]
    _c().kc_softmax_grad_f32(_ptr(out), _ptr(g), _ptr(dx), out.size // cols, cols, threads())
    return dx


def layer_norm(x2, scale, bias, eps: float):
    """(y [rows, cols], mean [rows], variance [rows]) of layer_norm over a float32 [rows, cols] matrix; scale and
    bias: float32 [cols] or None."""
    rows, cols = x2.shape
    y = np.empty_like(x2)
    mean, var = np.empty(rows, np.float32), np.empty(rows, np.float32)
    _c().kc_layer_norm_f32(_ptr(x2), _ptr_or_none(scale), _ptr_or_none(bias), _ptr(y), _ptr(mean),
                                          _ptr(var), rows, cols, eps, threads())
    return y, mean, var


def layer_norm_grad(x2, scale, mean, var, g2, eps: float, want_dx: bool, want_dscale: bool, want_dbias: bool):
    """(X@GRAD [rows, cols] or None, Scale@GRAD [cols] or None, Bias@GRAD [cols] or None) of layer_norm."""
    rows, cols = x2.shape
    dx = np.empty_like(x2) if want_dx else None
    dscale = np.empty(cols, np.float32) if want_dscale else None
    dbias = np.empty(cols, np.float32) if want_dbias else None
    _c().kc_layer_norm_grad_f32(
        _ptr(x2), _ptr_or_none(scale), _ptr(mean), _ptr(var), _ptr(g2), _ptr_or_none(dx), _ptr_or_none(dscale),
        _ptr_or_none(dbias), rows, cols, eps, threads())
    return dx, dscale, dbias


def gelu(x):
    """Exact gelu, x * Phi(x), of a float32 array."""
    out = np.empty_like(x)
    _c().kc_gelu_f32(_ptr(x), _ptr(out), x.size, threads())
    return out


def gelu_grad(x, g):
    """g * (Phi(x) + x phi(x)): exact gelu's X@GRAD."""
    dx = np.empty_like(x)
    _c().kc_gelu_grad_f32(_ptr(x), _ptr(g), _ptr(dx), x.size, threads())
    return dx


def gemm_ready(xp, *arrays) -> bool:
    """Whether gemm_packed (and PackedColumns) take these 2-D arrays: host NumPy, float32, any positive strides
    (a transposed view too), a library loaded."""
    if not enabled(xp):
        return False
    return all(a.dtype == np.float32 and a.ndim == 2 and all(s > 0 and s % 4 == 0 for s in a.strides)
               for a in arrays)


def _element_strides(a):
    return a.strides[0] // 4, a.strides[1] // 4


class PackedColumns:
    """A float32 matrix B [k, n] packed for `gemm_packed` (gemm_packed.c's panels of 32 columns): made once, for
    products with many small left operands (an RNN's steps times its recurrent weight). `matrix` is B itself,
    for products the packed form cannot take. With `groups` (an LSTM's 4 gates: lstm_step) each group's n / groups
    columns start a panel of their own; `gemm_packed` takes it only where that is the plain layout (`plain`)."""

    __slots__ = ("packed", "k", "n", "groups", "matrix", "address")

    def __init__(self, b, groups: int = 1):
        self.matrix = b
        self.k, self.n = b.shape
        if groups < 1 or self.n % groups:
            raise ValueError(f"{self.n} columns do not split into {groups} groups")
        self.groups = groups
        width = self.n // groups
        group_size = ((width + 31) // 32) * 32 * self.k
        self.packed = np.empty(groups * group_size, np.float32)
        self.address = _ptr(self.packed)
        rs, cs = _element_strides(b)
        start = _ptr(b)
        for g in range(groups):
            _c().kc_pack_columns_f32(start + 4 * g * width * cs, rs, cs, self.address + 4 * g * group_size, self.k,
                                     width)

    @property
    def plain(self) -> bool:
        """Whether the panels are those of one group (gemm_packed's layout)."""
        return self.groups == 1 or (self.n // self.groups) % 32 == 0


def gemm_packed(a, b: PackedColumns, add=None):
    """add + a [m, k] @ B for a float32 `a` (gemm_ready) and B packed by PackedColumns (`plain`), `add` None, a
    float32 C-contiguous [m, n] array or a float32 [n] row added to every row (a bias): a new C-ordered [m, n]
    array."""
    m = a.shape[0]
    c = np.empty((m, b.n), np.float32)
    ld_add = 0 if add is None or add.ndim == 1 else b.n
    _c().kc_gemm_packed_f32(_ptr(a), *_element_strides(a), b.address, _ptr_or_none(add), ld_add, _ptr(c), m, b.k,
                            b.n, threads())
    return c


def lstm_step(h_prev, w: PackedColumns, x_proj, c_prev, h_out=None):
    """One LSTM step (lstm_step.c): gates = activations of (h_prev @ W_hh^T + x_proj), i, f, g, o; c = f c_prev
    + i g; h = o tanh(c). h_prev float32 [B, hidden] (gemm_ready), w = PackedColumns(W_hh^T, groups=4), x_proj
    [B, 4 hidden] and c_prev [B, hidden] float32 C-contiguous (ready), h_out a C-contiguous float32 [B, hidden]
    array to write h into, or None. Returns (gates, h, c): gates and c new, h h_out where given."""
    rows, hidden = c_prev.shape
    gates = np.empty((rows, 4 * hidden), np.float32)
    c = np.empty_like(c_prev)
    # the kernel writes h block by block while later blocks still read h_prev: never into h_prev's own memory
    direct = h_out is not None and not np.may_share_memory(h_out, h_prev)
    h = h_out if direct else np.empty_like(c_prev)
    _c().kc_lstm_step_f32(_ptr(h_prev), *_element_strides(h_prev), w.address, _ptr(x_proj), _ptr(c_prev),
                          _ptr(gates), _ptr(c), _ptr(h), rows, w.k, hidden, threads())
    if h_out is not None and not direct:
        h_out[...] = h
        h = h_out
    return gates, h, c


def lstm_sequence(x_proj, h0, c0, w: PackedColumns, out, reverse: bool):
    """A whole pass of an LSTM's steps (lstm_step.c kc_lstm_sequence_f32: lstm_step's operations, step after
    step, without the activated gates): x_proj [T, B, 4 hidden] every step's input projection, h0 and c0
    [B, hidden] the state before the first step, w = PackedColumns(W_hh^T, groups=4), out [T, B, hidden] written
    with each step's h (t = T - 1 first with reverse). All float32 C-contiguous (ready), T >= 1, out sharing no
    memory with the others. Returns the last step's c, new."""
    steps, rows, hidden = out.shape
    if not (ready(np, x_proj, h0, c0, out) and x_proj.shape == (steps, rows, 4 * hidden) and
            h0.shape == c0.shape == (rows, hidden) and w.groups == 4 and (w.k, w.n) == (hidden, 4 * hidden)):
        raise ValueError(f"lstm_sequence: x_proj {x_proj.shape}, h0 {h0.shape}, c0 {c0.shape}, out {out.shape} "
                         f"({out.dtype}) and a weight of {w.k} x {w.n} in {w.groups} groups do not make a pass")
    c_last, c_spare = np.empty_like(c0), np.empty_like(c0)
    _c().kc_lstm_sequence_f32(_ptr(x_proj), _ptr(h0), _ptr(c0), w.address, _ptr(out), _ptr(c_last), _ptr(c_spare),
                              steps, int(reverse), rows, hidden, threads())
    return c_last


def lstm_step_grad(gates, c, c_prev, dh, dc, w_back: PackedColumns, d_pre):
    """An LSTM step's backward (lstm_step.c): the gradient of its gates' pre-activations written into d_pre
    [B, 4 hidden] from its activated gates, c, c_prev and the gradients dh, dc of its h and c (all float32
    C-contiguous, ready), and dh_prev = d_pre @ W_hh for w_back = PackedColumns(W_hh) (`plain`). Returns new
    (dh_prev, dc_prev)."""
    rows, hidden = c.shape
    dc_prev = np.empty_like(c)
    dh_prev = np.empty((rows, w_back.n), np.float32)
    _c().kc_lstm_step_grad_f32(_ptr(gates), _ptr(c), _ptr(c_prev), _ptr(dh), _ptr(dc), _ptr(d_pre), _ptr(dc_prev),
                               w_back.address, _ptr(dh_prev), rows, hidden, threads())
    return dh_prev, dc_prev
