"""The summaries of a whole iteration at once: what the flight recorder's `background=True` makes at an
iteration's end, its C pass on the summary thread while the next iteration runs.

An iteration's op records (each holding its outputs by reference: kernels never mutate a value anything else
holds) are walked once in Python to name each output's row: where it was written (order, site) and which array
it is. Arrays new in the iteration that the C summary takes (float32 or float64; integers as float64 copies,
strided views gathered) are then summarised in ONE C call, which leaves the GIL for its whole pass over the
elements; a view holding every element of an array summarised before repeats that array's row; what C does not
take (float16, device arrays) goes through the recorder's single-value writer. Rows come out in the order the
per-op path writes them (tests/test_recorder.py holds the two equal).

A training loop runs the same ops every iteration, and their outputs are the same kinds of arrays: the walk
leaves a `RowPlan` of what each output was, and the next iteration that ran the same ops is named by checking
each output against it (`name_rows_by_plan`), which costs a third of the walk; any output that is not what the
plan says (another dtype or size, a view no longer whole, a repeat that is not) makes it walk again. Where the C
library runs, that check is one C call (`name_rows_by_plan_in_c`, kernelcore/native/row_plan.c) and this module's
`name_rows_by_plan` its reference."""
from __future__ import annotations

from array import array
from typing import Callable

import numpy as np

from ..native.row_plan import EMPTY, IN_C, OTHER, REPEAT, pack_plan
from .health_summary import NumberRows

_KINDS = {np.dtype(np.float32): 0, np.dtype(np.float64): 1}  # the C summary's element types
# an empty array's numbers (health_summary.summarize's): no element of any kind, min, max and mean undefined
_EMPTY = (0, 0, 0, 0, 0, 0, float("nan"), float("nan"), float("nan"), 0.0)


class IterationRows:
    """The rows of one iteration: order, site and numel per row, their numbers (NUMBERS, [rows, 10]) and, per
    row, the record and output position it came from (what a watch reads besides the numbers). Named by
    `name_rows`, their numbers complete once `fill` has run (the C call, on any thread)."""

    __slots__ = ("orders", "sites", "numels", "numbers", "plan", "_records", "_items", "_in_c", "_held",
                 "_repeats")

    def __init__(self, orders, sites, numels, numbers, plan, records, items, in_c, held, repeats):
        self.orders, self.sites, self.numels, self.numbers, self.plan = orders, sites, numels, numbers, plan
        self._records, self._items, self._in_c, self._held, self._repeats = records, items, in_c, held, repeats

    def source(self, row: int) -> tuple:
        """(the op record, the output's position among its outputs) of row `row`."""
        _, order, pos, _, _, _, _, _ = self.plan.rows[row]
        rec = self._records[order]
        return rec, pos - (len(rec) - len(rec[3].out_pairs))

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


def name_rows(records, sites_of: Callable, write_one: Callable, in_c_too: bool, ptr: Callable | None) \
        -> IterationRows:
    """The rows of `records`, named, with the numbers of what the C summary does not take written (through
    `write_one(value, rows, row)`: None for no numeric tensor, no row) and the rest left for `fill`; their plan
    for the next iteration. `sites_of(op, timestep)`: the table's sites of the op's outputs; `in_c_too`: whether
    the C summary may run; `ptr(array)`: an array's data address."""
    outputs = sum(len(rec[3].out_pairs) for rec in records)
    numbers = NumberRows(outputs)
    # per row: (what, order, position in the record, via base, dtype, C kind, size, the row it repeats)
    plan_rows: list[tuple] = []
    sites: list[int] = []
    # id of an array summarised in this iteration -> (it, its row): held, so that its id stays its own (a device
    # array's base may be made anew on each look, and an id is reused once its object is gone)
    known: dict[int, tuple] = {}
    repeats: list[tuple[int, int]] = []  # (row, the row it repeats)
    in_c: list[int] = []  # rows the one C call writes, in its items' order
    items = array("q")
    held = []  # copies made for the C call (integers as float64, strided views gathered), alive until it returns
    kinds = _KINDS if in_c_too else {}
    c_checkable = in_c_too  # whether the plan may be checked in C: the C summary on, every output a NumPy array
    for order, rec in enumerate(records):
        op = rec[3]
        n_out = len(op.out_pairs)
        if not n_out:
            continue
        out_sites = sites_of(op, rec[5])
        first = len(rec) - n_out
        for k in range(n_out):
            value = rec[first + k]
            c_checkable = c_checkable and type(value) is np.ndarray
            root = whole_array(value)
            key, row = id(root), len(plan_rows)
            seen = known.get(key)
            if seen is not None and seen[0] is root:
                repeats.append((row, seen[1]))
                what, size, source = REPEAT, value.size, seen[1]
            else:
                what = _summarize_other(root, row, numbers, kinds, items, in_c, held, write_one, ptr)
                if what is None:
                    continue  # no numeric tensor: no row
                known[key] = (root, row)
                size, source = value.size, -1
            dtype = getattr(root, "dtype", None)
            plan_rows.append((what, order, first + k, root is not value, dtype, kinds.get(dtype) if what == IN_C
                              else None, size, source))
            sites.append(out_sites[k])
    plan = RowPlan(records, plan_rows, sites, repeats, c_checkable)
    return IterationRows(plan.orders, plan.sites, plan.numels, numbers.array[:len(plan_rows)], plan, records, items,
                         in_c, held, repeats)


def _summarize_other(root, row: int, numbers, kinds, items, in_c, held, write_one, ptr):
    """One output new in the iteration: an item of the C call (converted or gathered first where it must be), or
    its numbers through write_one. What it was (IN_C, EMPTY, OTHER), or None for no numeric tensor."""
    if type(root) is np.ndarray and kinds and root.dtype.kind in "fbiu" and \
            (root.dtype.kind != "f" or root.dtype in kinds):
        if not root.size:
            numbers.array[row] = _EMPTY
            return EMPTY
        what, kind = IN_C, kinds.get(root.dtype)
        if kind is None:  # integers and booleans as float64, as health_summary's C writer
            root, kind, what = root.astype(np.float64), 1, OTHER
            held.append(root)
        flags = root.flags
        if not (flags.c_contiguous and flags.aligned):
            # the elements in memory order: a view where they are one block (an op's output laid out as its
            # transposed input), else a copy
            root, what = root.ravel(order="K"), OTHER
            if not (root.flags.c_contiguous and root.flags.aligned):
                root = root.copy()
            held.append(root)
        items.extend((ptr(root), root.size, kind))
        in_c.append(row)
        return what
    return None if write_one(root, numbers, row) is None else OTHER


class RowPlan:
    """What each output of an iteration was (see the module docstring), and the rows' orders, sites and sizes."""

    def __init__(self, records, rows: list[tuple], sites: list[int], repeats: list[tuple[int, int]],
                 c_checkable: bool):
        self.ops = tuple(rec[3] for rec in records)
        self.timesteps = tuple(rec[5] for rec in records)
        self.rows = rows
        self.orders = np.asarray([r[1] for r in rows], np.int32)
        self.sites = np.asarray(sites, np.int32)
        self.numels = np.asarray([r[6] for r in rows], np.int64)
        self.repeats = repeats  # (row, the row it repeats): the same in every iteration the plan fits
        # the rows as the C check reads them; None where it may not run (no C summary, or an output that was not
        # a NumPy array: a device run's)
        self.table = pack_plan(rows) if c_checkable else None

    def fits(self, records) -> bool:
        """Whether `records` ran the ops the plan's iteration ran, at the same timesteps."""
        return len(records) == len(self.ops) and tuple(rec[3] for rec in records) == self.ops and \
            tuple(rec[5] for rec in records) == self.timesteps


def name_rows_by_plan(records, plan: RowPlan, write_one: Callable, in_c_too: bool, ptr: Callable | None) \
        -> IterationRows | None:
    """name_rows for `records`, which plan.fits, each output checked against what the plan says it was; None
    where one is not (then walk them with name_rows)."""
    rows = plan.rows
    numbers = NumberRows(len(rows))
    roots: list = [None] * len(rows)
    repeats: list[tuple[int, int]] = []
    in_c: list[int] = []
    items = array("q")
    held: list = []
    kinds = _KINDS if in_c_too else {}
    ndarray = np.ndarray
    numels = plan.numels
    for row, (what, order, pos, via_base, dtype, kind, size, source) in enumerate(rows):
        value = records[order][pos]
        root = value
        if via_base:
            base = getattr(value, "base", None)
            if base is None or type(base) is not type(value) or base.size != value.size or \
                    base.dtype != value.dtype or 0 in value.strides:
                return None
            root = base
        roots[row] = root
        if what == IN_C:
            if type(root) is not ndarray or root.size != size or (root.dtype is not dtype and root.dtype != dtype):
                return None
            flags = root.flags
            if not (flags.c_contiguous and flags.aligned):
                return None
            items.extend((ptr(root), size, kind))
            in_c.append(row)
        elif what == REPEAT:
            if root is not roots[source] or value.size != size:
                return None
            repeats.append((row, source))
        elif what == EMPTY:
            if type(root) is not ndarray or root.size or root.dtype != dtype:
                return None
            numbers.array[row] = _EMPTY
        else:
            if _summarize_other(root, row, numbers, kinds, items, in_c, held, write_one, ptr) is None:
                return None
            if value.size != size:
                numels = _with_numel(numels, plan, row, value.size)
    return IterationRows(plan.orders, plan.sites, numels, numbers.array, plan, records, items, in_c, held, repeats)


def _with_numel(numels, plan: RowPlan, row: int, numel: int) -> np.ndarray:
    """`numels` with row `row`'s numel set: a copy of the plan's own the first time (the plan's stays as it was)."""
    numels = plan.numels.copy() if numels is plan.numels else numels
    numels[row] = numel
    return numels


def name_rows_by_plan_in_c(records, plan: RowPlan, check: Callable, write_one: Callable, ptr: Callable) \
        -> IterationRows | None:
    """name_rows_by_plan with the C summary on, its check made by `check` (kernelcore/native/row_plan.py's
    plan_checker) in one call; the OTHER rows (converted or gathered arrays, the single-value writer's) then here
    as the reference takes them. None where an output is not what the plan says (then the reference decides)."""
    rows = plan.rows
    numbers = NumberRows(len(rows))
    found = check(records, plan.table, numbers.address)
    if found is None:
        return None
    items, in_c, others = found
    numels, held = plan.numels, []
    for row in others:
        _, order, pos, via_base, _, _, size, _ = rows[row]
        value = records[order][pos]
        root = value.base if via_base else value  # (the check found the base whole)
        if _summarize_other(root, row, numbers, _KINDS, items, in_c, held, write_one, ptr) is None:
            return None
        if value.size != size:
            numels = _with_numel(numels, plan, row, value.size)
    return IterationRows(plan.orders, plan.sites, numels, numbers.array, plan, records, items, in_c, held,
                         plan.repeats)
