"""The flight recorder's health summary in C (health_summary.c): one pass over a float32 or float64 array for its
sign and NaN/Inf counts and the min, max, mean and L2 norm of its finite elements, written as ten doubles where
the recorder keeps them (kernelcore/observe/health_summary.py `NumberRows`); integer and boolean arrays go as
float64 copies. The NumPy summary there stays the reference: it takes what this does not (float16, CuPy arrays,
non-contiguous views).

ctypes leaves the GIL for the call, so a summary made on a thread of its own (the recorder's background=True)
runs beside the executor's Python.
"""
from __future__ import annotations

from array import array
from typing import Callable

import numpy as np

from ..runtime import cpu_parts
from . import _c, _ptr, enabled

data_address = _ptr  # an array's data address (the buffer protocol where it can)

ROW_BYTES = 10 * 8  # the ten doubles health_summary.c writes per array
# below this many elements one thread summarises the array (health_summary.c shares it out from two grains of
# pool.h's KC_GRAIN on), so the call skips asking how many threads it may use
_SHARED_FROM = 2 * 32768
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def available() -> bool:
    """Whether the C summary may run: the library loaded and fast paths on (kernelcore/runtime/fast_paths.py)."""
    return enabled(np)


def summary_writer(fallback: Callable) -> Callable:
    """write(value, rows, row) -> the value's NaN/Inf count (None: no numeric tensor): the C summary of a float32
    or float64 host array (integers and booleans as float64, strided views gathered first) written into `rows`
    at `row`, anything else given to `fallback(value, rows, row)`. Only where `available()`."""
    lib = _c()
    by_dtype = {_F32: lib.kc_health_summary_f32, _F64: lib.kc_health_summary_f64}
    ndarray, threads = np.ndarray, cpu_parts.op_threads

    def write(value, rows, row: int):
        if type(value) is ndarray:
            fn = by_dtype.get(value.dtype)
            if fn is None and value.dtype.kind in "biu":
                # integers and booleans as float64: rounding keeps every sign, zero and order, so the counts, min
                # and max are the reference's, and its sums are float64 dot products too
                value, fn = value.astype(_F64), by_dtype[_F64]
            if fn is not None:
                flags = value.flags
                if not (flags.c_contiguous and flags.aligned):
                    # the elements in memory order: a view where they are one block (an op's output laid out as
                    # its transposed input), else a copy, which costs less than the reference's five passes
                    value = value.ravel(order="K")
                    if not (value.flags.c_contiguous and value.flags.aligned):
                        value = value.copy()
                n = value.size
                return fn(_ptr(value), n, rows.address + ROW_BYTES * row, threads() if n >= _SHARED_FROM else 1)
        return fallback(value, rows, row)
    return write


def many_writer() -> Callable:
    """write_many(values, rows, first) -> their NaN/Inf count together: the C summaries of several arrays in one
    call (kc_health_summary_many), written into `rows` from row `first` on; None, with nothing written, unless
    every value is one `summary_writer` hands to C as it is (float32 or float64, contiguous, aligned). Only where
    `available()`."""
    many = _c().kc_health_summary_many
    kinds = {_F32: 0, _F64: 1}
    ndarray, threads = np.ndarray, cpu_parts.op_threads

    def write_many(values, rows, first: int):
        items, largest = [], 0
        for value in values:
            kind = kinds.get(value.dtype) if type(value) is ndarray else None
            if kind is None:
                return None
            flags = value.flags
            if not (flags.c_contiguous and flags.aligned):
                return None
            n = value.size
            items += (_ptr(value), n, kind)
            largest = n if n > largest else largest
        held = array("q", items)  # alive until the call returns
        return many(held.buffer_info()[0], len(values), rows.address + ROW_BYTES * first,
                    threads() if largest >= _SHARED_FROM else 1)
    return write_many


def many_call() -> Callable:
    """call(items, count, address): the C summaries of `count` arrays described in `items` (an array("q") of
    address, numel and kind, 0 float32 or 1 float64, per array) written as ten doubles each from `address` on, on
    the calling thread alone (the recorder's summary thread: the run has the other cores). Only where
    `available()`."""
    many = _c().kc_health_summary_many

    def call(items, count: int, address: int) -> int:
        return many(items.buffer_info()[0], count, address, 1)
    return call
