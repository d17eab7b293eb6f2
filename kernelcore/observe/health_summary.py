"""A tensor's health in a few numbers: how many elements are negative, zero, positive, NaN, +Inf and -Inf, and the
min, max, mean and L2 norm of its finite elements. What the flight recorder keeps of every op output.

`summarize` is the reference, over NumPy or a device's array module. A value with no NaN/Inf (the usual case) costs it min, max, a
sum, a dot product and at most two counts: the counts of zeros and negatives are skipped wherever min and max
already decide them (a ReLU's output, a positive variance). Only a value holding NaN or Inf takes the slower path
that classifies every element.

What the recorder calls is `summary_writer()`, chosen once per recording: where fast paths are on, the C summary
of kernelcore/native/health.py for host arrays (one pass; float32 and float64, integers as float64) and the two
kernels of health_device.py for device arrays, the reference for the rest; with fast paths off the reference for
all. Each writes ten numbers per value into a `NumberRows` buffer, from which the summary table makes its rows and
`summary_at` a Summary.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..native import health as native_health
from ..runtime import fast_paths
from ..runtime.place import place_of
from ..runtime.values import health
from . import health_device


class Summary(NamedTuple):
    numel: int
    negative: int
    zero: int
    positive: int
    nan: int
    pos_inf: int
    neg_inf: int
    min: float    # of the finite elements (NaN when there are none)
    max: float
    mean: float
    l2: float

    @property
    def nonfinite(self) -> int:
        return self.nan + self.pos_inf + self.neg_inf


# the ten numbers a writer leaves per value: a Summary's fields after numel
NUMBERS = Summary._fields[1:]
_NAN = float("nan")


def array_module(value):
    """NumPy for a host array, its device's array module for a device array (CuPy, or the strict stand-in that
    runs the GPU path without a GPU), None for what is no numeric tensor."""
    if isinstance(value, np.ndarray):
        return np if value.dtype.kind in "biuf" else None
    if getattr(getattr(value, "dtype", None), "kind", "") in "biuf" and hasattr(value, "shape"):
        place = place_of(value)
        return None if place.kind == "cpu" else place.xp
    return None


def summarize(value) -> Summary | None:
    """The value's Summary, or None when it is no numeric tensor (a list, a string tensor, complex numbers)."""
    xp = array_module(value)
    if xp is None:
        return None
    n = int(value.size)
    if n == 0:
        return Summary(0, 0, 0, 0, 0, 0, 0, _NAN, _NAN, _NAN, 0.0)
    if value.dtype.kind == "b":
        value = value.view(np.uint8) if xp is np else value.astype(np.uint8)
    lo, hi = float(value.min()), float(value.max())
    # a sum or sum of squares past float64's range is kept as Inf, as the C summary keeps it, without NumPy's
    # overflow warning: an exploding run would print one into the user's cell at every such output
    with np.errstate(over="ignore"):
        if math.isfinite(lo) and math.isfinite(hi):  # NaN anywhere makes min and max NaN
            return _finite(xp, value, n, lo, hi)
        return _with_nonfinite(xp, value, n)


def _finite(xp, value, n: int, lo: float, hi: float) -> Summary:
    flat = value.reshape(-1)
    big = max(-lo, hi)
    if flat.dtype.kind != "f" or flat.dtype.itemsize < 4 or big * big * n > _SAFE_SQUARES[flat.dtype.itemsize]:
        flat = flat.astype(np.float64)  # integers, float16, and values whose sum of squares would overflow
    total = float(xp.dot(flat, _ones(xp, flat.dtype, n)))  # a BLAS dot: twice as fast as sum()'s pairwise adds
    sq = float(xp.dot(flat, flat))
    negative, zero, positive = _signs(xp, value, n, lo, hi)
    return Summary(n, negative, zero, positive, 0, 0, 0, lo, hi, total / n, math.sqrt(sq))


# the largest n * max|x|^2 a float32 / float64 dot product sums without overflow (with room for rounding)
_SAFE_SQUARES = {4: 1e37, 8: 1e307}


_ONES: dict = {}  # (array module, dtype) -> the longest vector of ones asked for so far


def _ones(xp, dtype, n: int):
    ones = _ONES.get((xp, dtype))
    if ones is None or len(ones) < n:
        ones = _ONES[(xp, dtype)] = xp.ones(n, dtype)
    return ones[:n]


def _signs(xp, value, n: int, lo: float, hi: float) -> tuple[int, int, int]:
    """(negative, zero, positive) of a finite value, counting only what min and max leave open. (Counting a
    comparison's booleans is several times faster than count_nonzero of the floats themselves.)"""
    if lo > 0:
        return 0, 0, n
    if hi < 0:
        return n, 0, 0
    zero = int(xp.count_nonzero(value == 0))
    if lo >= 0:
        return 0, zero, n - zero
    if hi <= 0:
        return n - zero, zero, 0
    negative = int(xp.count_nonzero(value < 0))
    return negative, zero, n - zero - negative


def _with_nonfinite(xp, value, n: int) -> Summary:
    c = health(xp, value)
    finite = value[xp.isfinite(value)].astype(np.float64)
    if finite.size:
        lo, hi, mean, l2 = float(finite.min()), float(finite.max()), float(finite.mean()), float(
            xp.sqrt(finite @ finite))
    else:
        lo = hi = mean = _NAN
        l2 = 0.0
    return Summary(n, c["negative"], c["zero"], c["positive"], c["nan"], c["pos_inf"], c["neg_inf"], lo, hi, mean,
                   l2)


class NumberRows:
    """A float64 [rows, 10] buffer of summaries' numbers (NUMBERS), which a writer fills at a row."""

    def __init__(self, rows: int):
        self.array = np.zeros((rows, len(NUMBERS)), np.float64)
        self.address = self.array.ctypes.data


def write_reference(value, rows: NumberRows, row: int) -> int | None:
    """`summarize(value)`'s numbers written into `rows` at `row`; its NaN/Inf count (None: no numeric tensor)."""
    s = summarize(value)
    if s is None:
        return None
    rows.array[row] = s[1:]
    return s.nonfinite


def write_on_device_or_reference(value, rows: NumberRows, row: int) -> int | None:
    """A device array's numbers from the two kernels of kernelcore/observe/health_device.py where they take it, else
    `write_reference`."""
    if not isinstance(value, np.ndarray) and array_module(value) is not None and health_device.takes(value):
        return health_device.write(place_of(value).xp, value, rows, row)
    return write_reference(value, rows, row)


def summary_writer():
    """write(value, rows, row) -> NaN/Inf count or None, chosen once per recording: with fast paths off
    (kernelcore/runtime/fast_paths.py) `write_reference` alone; else the C summary for host arrays where the library
    is loaded (kernelcore/native/health.py), the device kernels for device arrays, the reference for the rest."""
    if not fast_paths.enabled():
        return write_reference
    if native_health.available():
        return native_health.summary_writer(write_on_device_or_reference)
    return write_on_device_or_reference


def many_writer():
    """write_many(values, rows, first) -> their NaN/Inf count, or None where it takes none of them (then each
    goes through `summary_writer`'s write): the C summaries of an op's outputs in one call
    (kernelcore/native/health.py), or None where the C summary may not run."""
    return native_health.many_writer() if native_health.available() else None


def iteration_writer():
    """(call(items, count, address), address_of(array)): the C summaries of many arrays in one call on the calling
    thread alone, and an array's data address, for an iteration's outputs at once (iteration_summaries.py); (None,
    None) where the C summary may not run."""
    if not native_health.available():
        return None, None
    return native_health.many_call(), native_health.data_address


def summary_at(numel: int, numbers) -> Summary:
    """The Summary of a value of `numel` elements from the ten numbers a writer left (NUMBERS)."""
    negative, zero, positive, nan, pos_inf, neg_inf, lo, hi, mean, l2 = numbers.tolist()
    return Summary(numel, int(negative), int(zero), int(positive), int(nan), int(pos_inf), int(neg_inf), lo, hi,
                   mean, l2)
