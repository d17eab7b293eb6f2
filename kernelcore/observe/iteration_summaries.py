"""The summaries of a whole iteration at once: what the flight recorder's `background=True` makes on its thread
while the next iteration runs.

An iteration's op records (each holding its outputs by reference: kernels never mutate a value anything else
holds) are walked once in Python to name each output's row: where it was written (order, site) and which array
it is. Arrays new in the iteration that the C summary takes as they are (float32 or float64, contiguous,
aligned) are then summarised in ONE C call, which leaves the GIL for its whole pass over the elements; a view
holding every element of an array summarised before repeats that array's row; what C does not take (float16,
integers, device arrays, views that are not the whole array) goes through the recorder's single-value writer.
Rows come out in the order the per-op path writes them (tests/test_recorder.py holds the two equal)."""
from __future__ import annotations

from array import array
from typing import Callable

import numpy as np

from .health_summary import NumberRows

_KINDS = {np.dtype(np.float32): 0, np.dtype(np.float64): 1}  # the C summary's element types
# an empty array's numbers (health_summary.summarize's): no element of any kind, min, max and mean undefined
_EMPTY = (0, 0, 0, 0, 0, 0, float("nan"), float("nan"), float("nan"), 0.0)


class IterationRows:
    """The rows of one iteration: order, site and numel per row, their numbers (NUMBERS, [rows, 10]) and, per
    row, the record and output position it came from (what a watch reads besides the numbers). Named by
    `name_rows`, their numbers complete once `fill` has run (the C call, on any thread)."""

    __slots__ = ("orders", "sites", "numels", "numbers", "sources", "_items", "_in_c", "_held", "_repeats")

    def __init__(self, orders, sites, numels, numbers, sources, items, in_c, held, repeats):
        self.orders, self.sites, self.numels, self.numbers, self.sources = orders, sites, numels, numbers, sources
        self._items, self._in_c, self._held, self._repeats = items, in_c, held, repeats

    def __len__(self) -> int:
        return len(self.orders)

    def fill(self, many: Callable | None) -> IterationRows:
        """The numbers of the arrays the C summary takes (one call, which leaves the GIL for its whole pass), then
        the repeated rows'."""
        out = self.numbers
        if self._in_c:
            c_rows = NumberRows(len(self._in_c))
            many(self._items, len(self._in_c), c_rows.address)
            out[self._in_c] = c_rows.array
        self._items = self._held = None
        for row, source in self._repeats:  # in order: a repeat of a repeat reads a row already filled
            out[row] = out[source]
        return self

    def nonfinite(self) -> np.ndarray:
        """Each row's NaN and Inf count."""
        return self.numbers[:, 3] + self.numbers[:, 4] + self.numbers[:, 5]


def whole_array(value):
    """The array a view holding every element of it (a reshape's or a transpose's output) shows in another order,
    else the value itself: a summary is the same for both, and the array is contiguous where a transposed view
    is not."""
    base = getattr(value, "base", None)
    if base is not None and type(base) is type(value) and base.size == value.size and base.dtype == value.dtype \
            and 0 not in value.strides:
        return base
    return value


def summarize_records(records, sites_of: Callable, write_one: Callable, many: Callable | None,
                      ptr: Callable | None) -> IterationRows:
    """The rows of `records` (an iteration's op records, in the order they ran), numbers and all: `name_rows`
    then `fill`. `many(items, count, address)`: the C summaries of `count` arrays described in `items` (address,
    numel, kind per array) written from `address` on, or None where the C summary may not run."""
    return name_rows(records, sites_of, write_one, many is not None, ptr).fill(many)


def name_rows(records, sites_of: Callable, write_one: Callable, in_c_too: bool, ptr: Callable | None) \
        -> IterationRows:
    """The rows of `records`, named, with the numbers of what the C summary does not take written (through
    `write_one(value, rows, row)`: None for no numeric tensor, no row) and the rest left for `fill`.
    `sites_of(op, timestep)`: the table's sites of the op's outputs; `in_c_too`: whether the C summary may run;
    `ptr(array)`: an array's data address."""
    outputs = sum(len(rec[3].out_pairs) for rec in records)
    numbers = NumberRows(outputs)
    orders: list[int] = []
    sites: list[int] = []
    numels: list[int] = []
    sources: list[tuple] = []
    # id of an array summarised in this iteration -> (it, its row): held, so that its id stays its own (a device
    # array's base may be made anew on each look, and an id is reused once its object is gone)
    known: dict[int, tuple] = {}
    repeats: list[tuple[int, int]] = []  # (row, the row it repeats)
    in_c: list[int] = []  # rows the one C call writes, in its items' order
    items = array("q")
    held = []  # copies made for the C call (integers as float64, strided views gathered), alive until it returns
    ndarray, kinds, empty = np.ndarray, _KINDS if in_c_too else {}, _EMPTY
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    for order, rec in enumerate(records):
        op = rec[3]
        n_out = len(op.out_pairs)
        if not n_out:
            continue
        out_sites = sites_of(op, rec[5])
        first = len(rec) - n_out
        for k in range(n_out):
            value = rec[first + k]
            root = value  # (whole_array, written out: this runs per output)
            base = getattr(value, "base", None)
            if base is not None and type(base) is type(value) and base.size == value.size and \
                    base.dtype == value.dtype and 0 not in value.strides:
                root = base
            key, row = id(root), len(orders)
            seen = known.get(key)
            if seen is not None and seen[0] is root:
                repeats.append((row, seen[1]))
                size = value.size
            elif type(root) is ndarray and kinds and root.dtype.kind in "fbiu" and \
                    (root.dtype.kind != "f" or root.dtype in kinds):
                known[key] = (root, row)
                size = value.size
                if not size:
                    numbers.array[row] = empty
                else:
                    dtype = root.dtype
                    kind = 0 if dtype is f32 else 1 if dtype is f64 else kinds.get(dtype)  # (is: no hashing)
                    if kind is None:  # integers and booleans as float64, as health_summary's C writer
                        root, kind = root.astype(np.float64), 1
                        held.append(root)
                    flags = root.flags
                    if not (flags.c_contiguous and flags.aligned):
                        # the elements in memory order: a view where they are one block (an op's output laid
                        # out as its transposed input), else a copy
                        root = root.ravel(order="K")
                        if not (root.flags.c_contiguous and root.flags.aligned):
                            root = root.copy()
                        held.append(root)
                    items.extend((ptr(root), size, kind))
                    in_c.append(row)
            elif write_one(root, numbers, row) is None:
                continue  # no numeric tensor: no row
            else:
                known[key] = (root, row)
                size = value.size
            orders.append(order)
            sites.append(out_sites[k])
            numels.append(size)
            sources.append((rec, k))
    return IterationRows(np.asarray(orders, np.int32), np.asarray(sites, np.int32), np.asarray(numels, np.int64),
                         numbers.array[:len(orders)], sources, items, in_c, held, repeats)
