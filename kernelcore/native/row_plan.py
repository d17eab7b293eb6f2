"""The flight recorder's plan check in C (row_plan.c): an iteration's outputs checked against what the last
iteration's were, in one call, where kernelcore/observe/iteration_summaries.py's `name_rows_by_plan` (the
reference, which runs wherever this does not) takes about a microsecond per output.

row_plan.c reads the records and their arrays in place, through CPython's object header and NumPy's array struct.
Before the first call `plan_checker` checks both layouts from Python, reading only words inside objects whose
size it knows: the interpreter's type sizes (a free-threaded or trace-refs build has another header), then each
field row_plan.c reads of arrays Python made, against what Python says of them; only then a probe of the C check
itself, which must name a whole array, a transposed view of one, a repeat and an empty array as Python does,
leave a strided view to Python, and refuse a wrong size, a strided array, a view no longer whole and a repeat that is a copy.
Anything that differs leaves the Python check in place.

C compares dtypes by their object (NumPy's shared one for each native type); an array whose dtype is equal but
another object (unpickled, with metadata) is refused, and the Python check names it: slower, never wrong.
"""
from __future__ import annotations

import ctypes
import sys
import sysconfig
import threading
from array import array
from typing import Callable

import numpy as np

from . import _c, enabled

# what a plan row says its output was (kernelcore/observe/iteration_summaries.py's walk decides): an array the C
# summary takes as it is, a repeat of an earlier row, an empty array, or anything else (converted or gathered for
# the C summary, or the recorder's single-value writer's)
IN_C, REPEAT, EMPTY, OTHER = range(4)
# a row of a packed plan (row_plan.c's PLAN_COLUMNS): what, order, position, via base, kind, size, source, dtype
PLAN_COLUMNS = 8

# where row_plan.c's np_array reads NumPy's array fields (PyArrayObject_fields, after the 16-byte object header)
ARRAY_FIELDS = {"data": 16, "nd": 24, "dimensions": 32, "strides": 40, "base": 48, "descr": 56, "flags": 64}

_checked: bool | None = None  # whether the layouts are row_plan.c's (None: not looked at yet)


def pack_plan(rows: list[tuple]) -> np.ndarray:
    """A plan's rows (what, order, position, via base, dtype, kind, size, the row it repeats) as row_plan.c reads
    them: the dtype by its address (the plan holds it, so the address stays its own)."""
    table = np.zeros((len(rows), PLAN_COLUMNS), np.int64)
    for r, (what, order, pos, via_base, dtype, kind, size, source) in enumerate(rows):
        table[r] = (what, order, pos, via_base, kind or 0, size, source, id(dtype) if dtype is not None else 0)
    return table


def _interpreter_fits() -> bool:
    """Whether this interpreter lays out objects as row_plan.c reads them: CPython with the GIL, 64-bit, the plain
    object header (no trace-refs fields), a tuple's items after its header (and its hash, where it caches one)."""
    return (sys.implementation.name == "cpython" and ctypes.sizeof(ctypes.c_void_p) == 8
            and not sysconfig.get_config_var("Py_GIL_DISABLED")
            and object.__basicsize__ == 16 and tuple.__basicsize__ in (24, 32) and tuple.__itemsize__ == 8
            and list.__basicsize__ == 40 and np.ndarray.__basicsize__ >= 72)


def _numpy_fits() -> bool:
    """Whether NumPy's arrays hold, where row_plan.c reads them, what Python says of them: data, nd, dimensions,
    strides, base, dtype and flags at their PyArrayObject_fields offsets (words inside the array object, which is
    at least 72 bytes: _interpreter_fits), then the dimensions and strides those point at."""
    word, integer = ctypes.c_void_p.from_address, ctypes.c_int.from_address
    f = ARRAY_FIELDS
    whole = np.zeros((2, 3), np.float32)
    view = whole.T
    for a in (whole, view):
        at = id(a)
        if (word(at + f["data"]).value != a.__array_interface__["data"][0] or integer(at + f["nd"]).value != a.ndim
                or word(at + f["base"]).value != (id(a.base) if a.base is not None else None)
                or word(at + f["descr"]).value != id(a.dtype) or integer(at + f["flags"]).value != a.flags.num):
            return False
        dims, strides = word(at + f["dimensions"]).value, word(at + f["strides"]).value
        if dims is None or strides is None:
            return False
        if [ctypes.c_ssize_t.from_address(dims + 8 * k).value for k in range(a.ndim)] != list(a.shape) or \
                [ctypes.c_ssize_t.from_address(strides + 8 * k).value for k in range(a.ndim)] != list(a.strides):
            return False
    return True


_handle_lock = threading.Lock()
_kept_function = None


def _function():
    """kc_plan_check through a handle that keeps the GIL for the call (it reads Python objects): the loaded
    library's own, made once."""
    global _kept_function
    with _handle_lock:
        if _kept_function is None:
            lib = _c()
            fn = ctypes.PyDLL(lib._name).kc_plan_check  # (the same library: dlopen hands back its handle)
            fn.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64] + \
                [ctypes.c_void_p] * 7
            fn.restype = ctypes.c_int64
            _kept_function = fn
        return _kept_function


def plan_checker() -> Callable | None:
    """check(records, table, numbers_address) -> (items, in_c, others) or None: the IN_C rows' C summary items
    (an array("q") of address, numel and kind each) and their rows, and the rows Python must take, of `records`
    checked against a packed plan (`pack_plan`); EMPTY rows' numbers written into the rows at numbers_address.
    None where an output is not what the plan says. plan_checker() is None where the C library is off or the
    layouts are not row_plan.c's."""
    global _checked
    if not enabled(np):
        return None
    if _checked is None:
        _checked = _interpreter_fits() and _numpy_fits() and _probe(_make_check(_function()))
    return _make_check(_function()) if _checked else None


def _make_check(fn) -> Callable:
    tuple_type, tuple_items_at, ndarray_type = id(tuple), tuple.__basicsize__, id(np.ndarray)

    def check(records, table: np.ndarray, numbers_address: int):
        if type(records) is not list or table.dtype != np.int64 or table.shape[1:] != (PLAN_COLUMNS,) or \
                not table.flags.c_contiguous:
            return None  # (what row_plan.c reads them as)
        rows = len(table)
        scratch = np.empty(3 * rows + 2, np.int64)  # each row's array, the IN_C rows, the others, the counts
        items = array("q", bytes(24 * rows))
        base = scratch.ctypes.data
        status = fn(id(records), table.ctypes.data, rows, tuple_type, tuple_items_at, ndarray_type, base,
                    items.buffer_info()[0], base + 8 * rows, base + 16 * rows, numbers_address, base + 24 * rows)
        if status:
            return None
        n_in_c, n_other = scratch[-2:].tolist()
        del items[3 * n_in_c:]
        return items, scratch[rows:rows + n_in_c].tolist(), scratch[2 * rows:2 * rows + n_other].tolist()
    return check


def _probe(check: Callable) -> bool:
    """C's reading of arrays Python made, against what Python says of them."""
    f32 = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    f64 = np.arange(12, dtype=np.float64).reshape(3, 4)
    seen_whole = f64.T  # a view of every element of f64
    empty = np.zeros((0, 5), np.float32)
    halves = f64[:, ::2]  # not whole: an OTHER row (gathered by Python)
    records = [("head", f32), (seen_whole, empty), (f64[:], halves)]
    rows = [(IN_C, 0, 1, False, f32.dtype, 0, 6, -1), (IN_C, 1, 0, True, f64.dtype, 1, 12, -1),
            (EMPTY, 1, 1, False, empty.dtype, None, 0, -1), (REPEAT, 2, 0, True, f64.dtype, None, 12, 1),
            (OTHER, 2, 1, False, f64.dtype, None, 6, -1)]
    numbers = np.full((len(rows), 10), 7.0)
    copy = [("head", f32), (f64.copy(), empty)]  # row 1's array is another one now
    refused = (  # (records, the one plan row they must not fit)
        (records, (IN_C, 0, 1, False, f32.dtype, 0, 5, -1)),    # another size
        (records, (IN_C, 2, 1, False, f64.dtype, 1, 6, -1)),    # a strided view
        (records, (IN_C, 2, 1, True, f64.dtype, 1, 6, -1)),     # a view no longer whole
        (copy, (IN_C, 1, 0, False, f64.dtype, 1, 12, -1)))      # (fits: the REPEAT row below checks the copy)
    try:
        found = check(records, pack_plan(rows), numbers.ctypes.data)
        wrong = [check(r, pack_plan([row]), np.zeros((1, 10)).ctypes.data) for r, row in refused[:3]]
        repeat_of_copy = check(copy + [(f64[:],)], pack_plan([refused[3][1], (REPEAT, 2, 0, True, f64.dtype, None,
                                                                              12, 0)]), numbers.ctypes.data)
    except (OSError, ctypes.ArgumentError):
        return False
    if found is None or any(w is not None for w in wrong) or repeat_of_copy is not None:
        return False
    items, in_c, others = found
    empty_row = numbers[2]
    return (list(items) == [f32.ctypes.data, 6, 0, f64.ctypes.data, 12, 1] and in_c == [0, 1] and others == [4]
            and empty_row[:6].tolist() == [0.0] * 6 and bool(np.isnan(empty_row[6:9]).all()) and empty_row[9] == 0
            and (numbers[[0, 1, 3, 4]] == 7.0).all())
