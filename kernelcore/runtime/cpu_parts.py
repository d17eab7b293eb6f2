"""Independent parts of one op on the CPU's cores at once, each with a single-threaded BLAS.

A CNN's convolutions at the batch sizes people debug with are small GEMMs (ResNet-18 at batch 8, 3x64x64: 64 to
512 rows, 32 to 2,048 columns), and OpenBLAS's own threads gain little on them, while the im2col copy beside
each GEMM runs on one core anyway. Independent parts of the same op (the images of a batch, or the output channels
where the filter outweighs the columns; Input@GRAD beside Filter@GRAD; the blocks of an optimizer's update) each on
its own core with a one-thread BLAS gain more: bench/cnn_train.py and docs/benchmarks.md have the figures.

Parts and BLAS threads do not mix: after a multi-threaded GEMM, OpenBLAS's worker spins on a core for a while
(~0.1 s), and parts running then share that core with it (ResNet-18 inference ran 1.6x slower with its classifier's
GEMM on two BLAS threads between runs). So the choice is made per run (`split_run`, entered by Executor.run): a
program with an op that runs in parts (OpDef.runs_in_parts: the convolutions; the fused RNN, whose per-step
products run in C on the run's threads) and none that needs the BLAS's own threads (OpDef.needs_blas_threads: the
fused RNN without the C kernels, whose many small per-step products then gain from OpenBLAS's spinning threads
and would lose to the hand-off of parts) runs with the BLAS held at one thread, and its ops split
into as many parts as the BLAS's thread limit allowed when the run began (so `threadpoolctl.threadpool_limits(1)`
or OPENBLAS_NUM_THREADS=1 keeps a run on one core); their matrix products split too (`matmul`). Other runs, and
runs a debugger pauses, are left as they were: one part per op, the BLAS's own threads. With fast paths switched
off (kernelcore/runtime/fast_paths.py) no run splits and no op runs in parts.

Every part sums the same terms for its share of the output as the whole op would (the parts split the batch, the
output channels or the elements, never a sum). The last bits may differ from the whole op's, as they already
differ between OpenBLAS's one- and two-thread runs of the same GEMM: its kernels depend on the matrices' sizes.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from typing import Callable, Iterator, Sequence, TypeVar

import numpy as np

from . import fast_paths

T = TypeVar("T")

# below this much work an op runs whole. Work is counted in multiply-adds of a GEMM-bound convolution, which
# one core here makes ~65 of per ns, so this is ~0.35 ms of one core; ops of other kinds scale their count to
# match (a depthwise convolution's multiply-add, an optimizer's element). Handing a part to the pool's thread and
# back costs 40-70 us on a 2-core VM, so shorter ops ran slower split: MobileNetV2's 1x1 convolutions (0.02-0.2
# ms whole) 1.3-5x slower, its inference 1.2x slower in all.
MIN_SPLIT_WORK = 24_000_000

# how many parts ops may run in: the BLAS's thread limit inside a split run, 1 elsewhere (a new thread, such as a
# part's, starts with 1 too)
_parts_allowed: ContextVar[int] = ContextVar("kernelcore_cpu_parts", default=1)
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


def split_run_parts() -> int | None:
    """How many parts a split run would allow now (the BLAS's thread limit), None with no BLAS to hold."""
    blas = _numpy_blas()
    return None if blas is None else max(1, blas.num_threads)


def wants_parts(op_defs) -> bool:
    """Whether a program of these op definitions should run split (`split_run`)."""
    defs = list(op_defs)
    return any(d.runs_in_parts for d in defs) and not any(d.needs_blas_threads for d in defs)


@contextmanager
def split_run(xp, wanted: bool) -> Iterator[None]:
    """Around one run: with `wanted`, on NumPy, where the BLAS may use more than one thread and no split run is
    under way, the BLAS is held at one thread and ops may split into that many parts; the limit comes back in
    `finally`. Otherwise nothing changes."""
    blas = _numpy_blas() if (wanted and xp is np and _parts_allowed.get() == 1 and fast_paths.enabled()) else None
    limit = blas.num_threads if blas is not None else 1
    if limit < 2:
        yield
        return
    token = _parts_allowed.set(limit)
    blas.set_num_threads(1)
    try:
        yield
    finally:
        blas.set_num_threads(limit)
        _parts_allowed.reset(token)


def cpu_parts(xp, work: int) -> int:
    """How many parts an op of this much work (MIN_SPLIT_WORK's units) on `xp` should run in: inside a split run
    on NumPy, the BLAS's thread limit when the run began; 1 for small ops, elsewhere, or while another op is
    split."""
    if xp is not np or work < MIN_SPLIT_WORK or _split_lock.locked() or not fast_paths.enabled():
        return 1
    return _parts_allowed.get()


def op_threads() -> int:
    """How many threads an op's own multi-threaded kernel (kernelcore/native) may use now: one while an op runs
    in parts (its part or another's), inside a split run the threads the run allows, else the BLAS's thread
    limit (threadpoolctl, OMP_NUM_THREADS, OPENBLAS_NUM_THREADS), so that every limit a user sets on the BLAS
    holds for these kernels too."""
    if _split_lock.locked():
        return 1
    allowed = _parts_allowed.get()
    if allowed > 1:
        return allowed
    blas = _numpy_blas()
    return max(1, blas.num_threads) if blas is not None else 1


def run_parts(calls: Sequence[Callable[[], T]]) -> list[T]:
    """The calls' results, in order: inside a split run the first on this thread and the others on the pool, all
    at once (the BLAS at one thread); in turn elsewhere, or when another op holds the split (a part's own op,
    another thread's)."""
    if len(calls) == 1 or _parts_allowed.get() < 2 or not _split_lock.acquire(blocking=False):
        return [c() for c in calls]
    try:
        futures = [_workers(len(calls) - 1).submit(c) for c in calls[1:]]
        try:
            first = calls[0]()
        finally:
            wait(futures)  # every part ends before the op does, even when the first raised
        return [first, *(f.result() for f in futures)]
    finally:
        _split_lock.release()


def run_parts_into(xp, shape, dtype, axis: int, parts: Sequence[tuple[slice, Callable]]):
    """A new array of `shape` whose slices along `axis` are the parts' results, each part writing its own
    (slice, call) pair's result into place on its own thread: no concatenation after the parts end, which would
    be one more pass over the output on one core."""
    out = xp.empty(shape, dtype=dtype)
    lead = (slice(None),) * (axis % len(shape))

    def place(where, call):
        out[lead + (where,)] = call()
    run_parts([partial(place, where, call) for where, call in parts])
    return out


def by_images_in_parts(xp, body, arrays, out_shape, work_per_image):
    """body(*arrays) for a batch whose images are independent (arrays split along their first axis, the result
    of `out_shape` too), in parts by images where the work (`work_per_image`, each image's: all its channels)
    outlasts the hand-off; each part gives the same elements the whole batch would."""
    n = arrays[0].shape[0]
    parts = cpu_parts(xp, n * work_per_image) if n > 1 else 1
    if parts < 2:
        return body(*arrays)
    return run_parts_into(xp, out_shape, arrays[-1].dtype, 0,
                          [(s, partial(body, *(a[s] for a in arrays))) for s in chunks(n, parts)])


def matmul(xp, a, b):
    """`xp.matmul(a, b)`, in parts inside a split run: by a's rows or b's columns, whichever are more (each part
    reads all of the other operand), the parts' products side by side. The matrix products of a split run's
    programs (a CNN's classifier, its gradients) so use the cores the BLAS is held off."""
    if a.ndim < 2 or b.ndim < 2:
        return xp.matmul(a, b)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = 1
    for d in np.broadcast_shapes(a.shape[:-2], b.shape[:-2]):
        batch *= d
    parts = cpu_parts(xp, batch * m * k * n)
    if parts < 2 or max(m, n) < 2:
        return xp.matmul(a, b)
    shape, dtype = (*np.broadcast_shapes(a.shape[:-2], b.shape[:-2]), m, n), xp.result_type(a, b)
    if m >= n:
        by_rows = [(s, partial(xp.matmul, a[..., s, :], b)) for s in chunks(m, parts)]
        return run_parts_into(xp, shape, dtype, -2, by_rows)
    by_columns = [(s, partial(xp.matmul, a, b[..., s])) for s in chunks(n, parts)]
    return run_parts_into(xp, shape, dtype, -1, by_columns)


def _forget_pool() -> None:
    """In a forked child: the parent's pool threads do not exist there, so parts handed to them would never run."""
    global _pool, _pool_size, _split_lock
    _pool, _pool_size, _split_lock = None, 0, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


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
