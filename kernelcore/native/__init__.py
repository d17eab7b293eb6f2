"""kernelcore's CPU kernels in C: the passes NumPy makes one full-size temporary at a time (batch norm and its
gradient), fused into one or two passes a channel at a time and shared over the cores with OpenMP.

hatch_build.py compiles kernelcore/native/*.c into libkernelcore_cpu.so at install time (`./dev build`, `pip
install`); this module loads it with ctypes. Kernels ask `ready(xp, *arrays)` and fall back to their NumPy code
(which the GPU runs too, and which stays the reference the tests compare with) when it says no: no library (no
compiler at install time, another platform), KERNELCORE_NATIVE=off, a device array, another dtype or a
non-contiguous array.

Threads: each call passes its own count, `threads()`: the BLAS's thread limit, which is what
`threadpoolctl.threadpool_limits`, OMP_NUM_THREADS and a split run (kernelcore/cpu_parts.py) already decide for
an op; one inside an op's part and in a forked child (GNU OpenMP's threads do not survive a fork). libgomp's
threads spin for a while after each call before they sleep: GOMP_SPINCOUNT is set while the library loads (unless
the environment sets it), so that they spin ~SPIN_COUNT iterations, long enough for the next op's call and short
enough not to hold a core the next op's parts or GEMM threads need.
"""
from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path

import numpy as np

ENV = "KERNELCORE_NATIVE"
LIBRARY = Path(__file__).with_name("libkernelcore_cpu.so")
ABI = 1  # kc_native.h's KC_NATIVE_ABI
SPIN_COUNT = "30000"

_lock = threading.Lock()
_lib: ctypes.CDLL | None = None
_state: str | None = None  # None: not loaded yet
_forked = False

_P = ctypes.c_void_p
_I64 = ctypes.c_int64
_INT = ctypes.c_int
_F32 = ctypes.c_float
_SIGNATURES = {
    "kc_bn_affine_f32": [_P, _P, _P, _P, _P, _I64, _I64, _I64, _INT],
    "kc_bn_train_f32": [_P, _P, _P, _P, _P, _P, _P, _I64, _I64, _I64, _F32, _INT],
    "kc_bn_grad_f32": [_P, _P, _P, _P, _P, _P, _P, _P, _I64, _I64, _I64, _INT, _INT],
}


def _load() -> None:
    global _lib, _state
    with _lock:
        if _state is not None:
            return
        if os.environ.get(ENV, "").strip().lower() in ("off", "0", "no", "false"):
            _state = f"off ({ENV}=off): NumPy kernels"
            return
        if not LIBRARY.exists():
            _state = "not built (no C compiler when kernelcore was installed; see hatch_build.py): NumPy kernels"
            return
        had_spin = "GOMP_SPINCOUNT" in os.environ
        if not had_spin:
            os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT  # read once, when libgomp starts
        try:
            lib = ctypes.CDLL(str(LIBRARY))
            lib.kc_native_abi.restype = _INT
            abi = lib.kc_native_abi()
            if abi != ABI:
                _state = (f"not used: {LIBRARY.name} has ABI {abi}, this kernelcore wants {ABI} (rebuild: "
                          "./dev build or pip install again): NumPy kernels")
                return
            for name, args in _SIGNATURES.items():
                fn = getattr(lib, name)
                fn.argtypes, fn.restype = args, None
            lib.kc_native_openmp.restype = _INT
            omp = lib.kc_native_openmp()
        except (OSError, AttributeError) as e:
            _state = f"not loaded ({e}): NumPy kernels"
            return
        finally:
            if not had_spin:
                os.environ.pop("GOMP_SPINCOUNT", None)
        _lib = lib
        _state = f"{LIBRARY.name}" + (f" (OpenMP {omp})" if omp else " (no OpenMP: one thread)")


def library() -> ctypes.CDLL | None:
    if _state is None:
        _load()
    return _lib


def native_state() -> str:
    """What `kernelcore env` prints: the library in use, or why the NumPy kernels run."""
    library()
    return _state or ""


def ready(xp, *arrays) -> bool:
    """Whether the C kernels can take these arrays: host NumPy, float32, C-contiguous, and a library loaded."""
    if xp is not np or library() is None:
        return False
    return all(a.dtype == np.float32 and a.flags.c_contiguous for a in arrays)


def threads() -> int:
    """OpenMP threads for the next call (see the module docstring)."""
    if _forked:
        return 1
    from .. import cpu_parts
    return cpu_parts.op_threads()


def _after_fork_in_child() -> None:
    global _forked
    _forked = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _ptr(a) -> int:
    return a.ctypes.data


def batch_norm_affine(x, mean, k, bias):
    """(x - mean) * k + bias per channel of a channels-first float32 batch; mean, k, bias: float32 [C]."""
    n, c = x.shape[:2]
    y = np.empty_like(x)
    (_lib or library()).kc_bn_affine_f32(_ptr(x), _ptr(y), _ptr(mean), _ptr(k), _ptr(bias), n, c, x.size // max(1, n * c),
                          threads())
    return y


def batch_norm_train(x, scale, bias, eps: float):
    """(y, mean, biased variance, 1 / sqrt(var + eps)) of batch statistics over a channels-first float32 batch."""
    n, c = x.shape[:2]
    y = np.empty_like(x)
    mean, var, inv = (np.empty(c, np.float32) for _ in range(3))
    (_lib or library()).kc_bn_train_f32(_ptr(x), _ptr(y), _ptr(scale), _ptr(bias), _ptr(mean), _ptr(var), _ptr(inv), n, c,
                         x.size // max(1, n * c), eps, threads())
    return y, mean, var, inv


def batch_norm_grad(x, g, mean, inv, scale, want_dx: bool, batch_stats: bool):
    """(X@GRAD or None, Scale@GRAD, Bias@GRAD) of batch_norm over a channels-first float32 batch."""
    n, c = x.shape[:2]
    dx = np.empty_like(x) if want_dx else None
    dscale, dbias = np.empty(c, np.float32), np.empty(c, np.float32)
    (_lib or library()).kc_bn_grad_f32(_ptr(x), _ptr(g), _ptr(mean), _ptr(inv), _ptr(scale), None if dx is None else _ptr(dx),
                        _ptr(dscale), _ptr(dbias), n, c, x.size // max(1, n * c), int(batch_stats), threads())
    return dx, dscale, dbias
