"""Independent parts of one op on the CPU's cores at once, each with a single-threaded BLAS.

A CNN's convolutions at the batch sizes people debug with are small GEMMs (ResNet-18 at batch 8, 3x64x64: 64 to
512 rows, 32 to 2,048 columns), and OpenBLAS's own threads gain little on them, while the im2col copy beside
each GEMM runs on one core anyway. Independent parts of the same op (the images of a batch; Input@GRAD beside
Filter@GRAD) each on its own core with a one-thread BLAS gain more: bench/cnn_train.py and docs/benchmarks.md
have the figures.

How many parts: the BLAS's thread limit at the time of the call (threadpoolctl's view of the BLAS NumPy loaded),
so `threadpoolctl.threadpool_limits(1)` or OPENBLAS_NUM_THREADS=1 keeps an op on one core, as it keeps NumPy's
GEMMs. On other array modules (CuPy, the strict stand-in) there is one part. The BLAS is held at one thread while
the parts run and given its limit back in `finally`; one op splits at a time (a part that would split again, or
another thread's op meanwhile, runs its parts one after another).

Every part sums the same terms for its share of the output as the whole op would (the parts split the batch or
the output, never a sum). The last bits may differ from the whole op's, as they already differ between OpenBLAS's
one- and two-thread runs of the same GEMM: its kernels depend on the matrices' sizes.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable, Sequence, TypeVar

import numpy as np

T = TypeVar("T")

# below this many multiply-adds an op runs whole: a part's hand-off costs tens of microseconds
MIN_SPLIT_MACS = 2_000_000

_split_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_blas = None  # threadpoolctl's controller of NumPy's BLAS; False when there is none to control


def _numpy_blas():
    """threadpoolctl's controller for the BLAS NumPy loaded: the one under NumPy's directory, else the only BLAS
    loaded; None when it cannot tell (then nothing splits: the parts' GEMMs could not be held to one thread)."""
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        np.ones((2, 2)) @ np.ones((2, 2))  # NumPy loads its BLAS lazily on some builds
        found = ThreadpoolController().select(user_api="blas").lib_controllers
        # numpy/ and numpy.libs/ (where NumPy's wheels bundle their OpenBLAS) side by side
        root = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy")
        own = [c for c in found if str(c.filepath).startswith(root)]
        picked = own or (found if len(found) == 1 else [])
        _blas = picked[0] if picked else False
    return _blas or None


def cpu_parts(xp, macs: int) -> int:
    """How many parts an op of `macs` multiply-adds on `xp` should run in: the BLAS's thread limit on NumPy, 1 on
    other array modules, for small ops, or while another op is split."""
    if xp is not np or macs < MIN_SPLIT_MACS or _split_lock.locked():
        return 1
    blas = _numpy_blas()
    return max(1, blas.num_threads) if blas is not None else 1


def run_parts(calls: Sequence[Callable[[], T]]) -> list[T]:
    """The calls' results, in order: the first on this thread, the others on the pool, all at once with the BLAS
    at one thread. Sequential when another op holds the split (a part's own op, or another thread's)."""
    if len(calls) == 1 or not _split_lock.acquire(blocking=False):
        return [c() for c in calls]
    blas = _numpy_blas()
    limit = blas.num_threads
    try:
        blas.set_num_threads(1)
        futures = [_workers(len(calls) - 1).submit(c) for c in calls[1:]]
        try:
            first = calls[0]()
        finally:
            wait(futures)  # every part ends before the BLAS gets its threads back, even when the first raised
        return [first, *(f.result() for f in futures)]
    finally:
        blas.set_num_threads(limit)
        _split_lock.release()


def _workers(n: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    if _pool is None or _pool_size < n:
        if _pool is not None:
            _pool.shutdown(wait=True)
        _pool, _pool_size = ThreadPoolExecutor(max_workers=n, thread_name_prefix="kernelcore-part"), n
    return _pool


def chunks(total: int, parts: int) -> list[slice]:
    """`total` split into `parts` contiguous slices as even as can be (none empty)."""
    parts = max(1, min(parts, total))
    step, extra = divmod(total, parts)
    out, start = [], 0
    for i in range(parts):
        stop = start + step + (1 if i < extra else 0)
        out.append(slice(start, stop))
        start = stop
    return out
