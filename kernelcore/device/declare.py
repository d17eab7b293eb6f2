"""One device kernel, declared once: its CUDA source and a NumPy twin of the same semantics.

`DeviceKernel.on(xp)` gives the callable kernel for an array module: on CuPy, cupy.ElementwiseKernel /
ReductionKernel / RawKernel built from the declaration (compiled by CuPy on the first call, kept here per module);
on the strict stand-in the same classes, which check each call as CuPy would and run the twin. The twin is what
the tests without a GPU run, so it follows the CUDA body step by step (the same index arithmetic, the same order
of float32 operations), not merely the op's formula.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

ELEMENTWISE, REDUCTION, RAW = "elementwise", "reduction", "raw"

# a flat index a kernel computes in int (32 bits): arrays at least this large go to the reference
MAX_INT32_ELEMENTS = 2 ** 31 - 1


@dataclass(frozen=True)
class DeviceKernel:
    """`in_params`/`out_params`: CuPy's parameter lists (elementwise, reduction); `body`: the elementwise operation
    or the raw kernel's whole source (an `extern "C" __global__ void <name>(...)`); `reduction`: (map_expr,
    reduce_expr, post_map_expr, identity) of a reduction; `twin`: the NumPy function (see strict_cuda.py for what
    each kind's twin takes and returns)."""
    name: str
    kind: str
    twin: Callable
    body: str
    in_params: str = ""
    out_params: str = ""
    reduction: tuple = ()
    preamble: str = ""
    built: dict = field(default_factory=dict, compare=False, repr=False)

    def on(self, xp):
        k = self.built.get(xp.__name__)
        if k is None:
            k = self.built[xp.__name__] = self._build(xp)
        return k

    def _build(self, xp):
        if self.kind == ELEMENTWISE:
            k = xp.ElementwiseKernel(self.in_params, self.out_params, self.body, self.name, preamble=self.preamble)
        elif self.kind == REDUCTION:
            map_expr, reduce_expr, post_map_expr, identity = self.reduction
            k = xp.ReductionKernel(self.in_params, self.out_params, map_expr, reduce_expr, post_map_expr,
                                   identity, self.name, preamble=self.preamble)
        elif self.kind == RAW:
            k = xp.RawKernel(self.preamble + self.body, self.name)
        else:
            raise ValueError(f"device kernel {self.name!r}: unknown kind {self.kind!r}")
        if hasattr(type(k), "twin"):  # the strict stand-in: it runs the twin where CuPy runs the CUDA
            k.twin = self.twin
        return k


DECLARED: list[DeviceKernel] = []


def declare(name: str, kind: str, body: str, *, twin: Callable, **rest) -> DeviceKernel:
    """A DeviceKernel, listed in DECLARED (the tests read every kernel's source from there)."""
    k = DeviceKernel(name, kind, twin, body, **rest)
    DECLARED.append(k)
    return k


def on_device(xp, *arrays) -> bool:
    """Whether fused kernels take these arrays: device arrays (not NumPy's), float32, C-contiguous, and small
    enough for an int index."""
    if xp is np:
        return False
    for a in arrays:
        if a is None or isinstance(a, np.ndarray) or getattr(a, "dtype", None) != np.float32:
            return False
        if not a.flags.c_contiguous or a.size > MAX_INT32_ELEMENTS:
            return False
    return True


def f32(v) -> np.float32:
    """A kernel's float scalar argument (a NumPy scalar: a Python float has no C type)."""
    return np.float32(v)


def i32(v) -> np.int32:
    return np.int32(v)


def threads_for(n: int) -> int:
    """Threads per block of a row kernel: a warp multiple, no more than the row needs, at most 256."""
    return max(32, min(256, (n + 31) // 32 * 32))


def check_row_launch(grid, block, rows) -> None:
    """What a row kernel (a thread block per row, kernelcore/device/cuda_source.py's block sums) needs of its launch:
    a block per row, whole warps (the shuffles), at most 32 warps (the scratch)."""
    if grid != (int(rows),) or len(block) != 1 or block[0] % 32 or block[0] > 1024:
        raise ValueError(f"a row kernel runs a block per row ({rows}) of whole warps; launched grid {grid}, "
                         f"block {block}")


# threads per block of a kernel with a thread per element
FLAT_THREADS = 256


def flat_blocks(total: int) -> tuple:
    """The grid of a kernel with a thread per element: enough blocks of FLAT_THREADS for `total`."""
    return ((total + FLAT_THREADS - 1) // FLAT_THREADS,)


def check_flat_launch(grid, block, total) -> None:
    """What a kernel with a thread per element needs of its launch: one grid dimension, just enough blocks."""
    if (len(grid) != 1 or block != (FLAT_THREADS,) or grid[0] * block[0] < total
            or (grid[0] - 1) * block[0] >= total):
        raise ValueError(f"a thread per element: {total} elements launched as grid {grid}, block {block}")
