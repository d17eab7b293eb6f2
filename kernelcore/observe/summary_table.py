"""The flight recorder's columns: one row per op output per iteration, its health summary beside where it was
written. Rows gather in NumPy chunks (a structured array each, no Python object per row once a chunk is full);
the places an output can be written (block, op, op type, variable, timestep) are kept once in a site table and
each row names its site by number.

`to_arrow()` gives an Apache Arrow table (pyarrow, the "record" extra: `pip install kernelcore[record]`), `save`
writes it as Parquet, which pandas, Polars and DuckDB read; `columns()` gives the same columns as NumPy arrays
without pyarrow.
"""
from __future__ import annotations

import numpy as np

from ..errors import KernelcoreError
from .health_summary import NUMBERS, NumberRows, summary_at

# 80 bytes a row: the iteration is kept once per iteration (rows arrive in iteration order), "positive" is what
# the other counts leave of numel, and mean and L2 norm (a health reading, not a checksum) are float32
ROW = np.dtype([("order", "<i4"), ("site", "<i4"), ("numel", "<i8"), ("negative", "<i8"), ("zero", "<i8"),
                ("nan", "<i8"), ("pos_inf", "<i8"), ("neg_inf", "<i8"), ("min", "<f8"), ("max", "<f8"),
                ("mean", "<f4"), ("l2", "<f4")])
COLUMNS = ("iteration", "order", "numel", "negative", "zero", "positive", "nan", "pos_inf", "neg_inf", "min",
           "max", "mean", "l2")
SITE_COLUMNS = ("block", "op", "op_type", "var", "timestep")
CHUNK_ROWS = 4096


class SummaryTable:
    """Rows come in through `add` (a writer from health_summary.summary_writer fills the row's numbers in place,
    with no Summary object made) or `append` (a Summary); they wait in a NumberRows buffer until CHUNK_ROWS of them
    become a chunk of ROW."""

    def __init__(self):
        self._chunks: list[np.ndarray] = []
        self._capacity = CHUNK_ROWS  # the buffer's rows, which a writer (C included) must never pass
        self._numbers = NumberRows(self._capacity)
        self._pending: list[tuple] = []  # (order, site, numel) of each row in self._numbers
        self._flushed = 0  # rows in the chunks
        self._site_ids: dict[tuple, int] = {}
        self._iterations: list[tuple[int, int]] = []  # (iteration, its first row), in order
        self._iteration: int | None = None  # the last row's
        self.sites: list[tuple] = []  # (block, op, op_type, var, timestep), by site number

    def site(self, block: int, op: int, op_type: str, var: str, timestep: int | None) -> int:
        key = (block, op, op_type, var, timestep)
        sid = self._site_ids.get(key)
        if sid is None:
            sid = self._site_ids[key] = len(self.sites)
            self.sites.append(key)
        return sid

    def add(self, iteration: int, order: int, site: int, value, write) -> tuple[int, int | None]:
        """A row of `value`'s numbers, which `write(value, numbers, row)` leaves in place: (the row's number, the
        value's NaN/Inf count), the count None (and no row) where the value is no numeric tensor."""
        pending = self._pending  # (the steps of _make_room and _added, written out: this runs per op output)
        if len(pending) >= self._capacity:
            self._flush()
            pending = self._pending
        bad = write(value, self._numbers, len(pending))
        if bad is None:
            return -1, None
        if self._iteration != iteration:
            self._new_iteration(iteration)
        pending.append((order, site, value.size))
        return self._flushed + len(pending) - 1, bad

    def add_many(self, iteration: int, order: int, sites, values, write_many) -> tuple[int, int | None]:
        """Rows of several values at once, which `write_many(values, numbers, first row)` fills in place: (the
        first row's number, their NaN/Inf count together), or (-1, None) with no row added where it took none."""
        count = len(values)
        if count > self._capacity:
            return -1, None
        if len(self._pending) + count > self._capacity:
            self._flush()
        pending = self._pending
        at = len(pending)
        bad = write_many(values, self._numbers, at)
        if bad is None:
            return -1, None
        if self._iteration != iteration:
            self._new_iteration(iteration)
        pending += [(order, site, value.size) for site, value in zip(sites, values)]
        return self._flushed + at, bad

    def add_rows(self, iteration: int, orders, sites, numels, numbers) -> int:
        """A whole iteration's rows at once (iteration_summaries.IterationRows' columns): they become a chunk of
        their own, after the rows added before them. Returns the first one's number."""
        self._flush()
        first = len(self)
        count = len(orders)
        if not count:
            return first
        if self._iteration != iteration:
            self._new_iteration(iteration)
        chunk = np.empty(count, ROW)
        chunk["order"], chunk["site"], chunk["numel"] = orders, sites, numels
        _fill_numbers(chunk, numbers)
        self._chunks.append(chunk)
        self._flushed += count
        return first

    def _make_room(self) -> None:
        """A full buffer becomes a chunk before the next row is written (not after one is: the recorder reads a
        row's Summary right after adding it)."""
        if len(self._pending) >= self._capacity:
            self._flush()

    def _new_iteration(self, iteration: int) -> None:
        self._iterations.append((iteration, len(self)))
        self._iteration = iteration

    def _added(self, iteration: int, order: int, site: int, numel: int) -> int:
        if self._iteration != iteration:
            self._new_iteration(iteration)
        self._pending.append((order, site, numel))
        return self._flushed + len(self._pending) - 1

    def repeat(self, row: int, iteration: int, order: int, site: int) -> tuple[int, int | None]:
        """A row with the numbers of row `row` (the same elements written again, under another name or shape):
        like `add`, or (-1, None) where that row has left the buffer for a chunk already."""
        self._make_room()
        at = row - self._flushed
        if at < 0:
            return -1, None
        here = len(self._pending)
        numbers = self._numbers.array
        numbers[here] = numbers[at]
        bad = int(numbers[at, 3] + numbers[at, 4] + numbers[at, 5])
        return self._added(iteration, order, site, self._pending[at][2]), bad

    def append(self, iteration: int, order: int, site: int, s: tuple) -> None:
        """One row from a health_summary.Summary (numel, negative, zero, positive, nan, pos_inf, neg_inf, min,
        max, mean, l2)."""
        self._make_room()
        self._numbers.array[len(self._pending)] = s[1:]
        self._added(iteration, order, site, s[0])

    def summary(self, row: int):
        """Row `row`'s health_summary.Summary, while it waits in the buffer (the recorder asks right after adding
        it); None once it has become part of a chunk."""
        at = row - self._flushed
        if at < 0:
            return None
        return summary_at(self._pending[at][2], self._numbers.array[at])

    def _flush(self) -> None:
        count = len(self._pending)
        if not count:
            return
        numbers = self._numbers.array[:count]
        meta = np.array(self._pending, dtype=np.int64).reshape(count, 3)
        chunk = np.empty(count, ROW)
        chunk["order"], chunk["site"], chunk["numel"] = meta[:, 0], meta[:, 1], meta[:, 2]
        _fill_numbers(chunk, numbers)
        self._chunks.append(chunk)
        self._flushed += count
        self._pending = []

    def __len__(self) -> int:
        return self._flushed + len(self._pending)

    @property
    def nbytes(self) -> int:
        """What the rows hold in memory (full chunks, and the pending rows at the row size they will take)."""
        return sum(c.nbytes for c in self._chunks) + len(self._pending) * ROW.itemsize

    def rows(self) -> np.ndarray:
        """Every row as one structured array."""
        self._flush()
        return np.concatenate(self._chunks) if self._chunks else np.zeros(0, ROW)

    def _summary_columns(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        starts = [first for _, first in self._iterations] + [len(rows)]
        out = {"iteration": np.repeat(np.asarray([i for i, _ in self._iterations], np.int32), np.diff(starts))}
        for name in COLUMNS[1:]:
            if name == "positive":
                out[name] = rows["numel"] - rows["negative"] - rows["zero"] - rows["nan"] - rows["pos_inf"] - \
                    rows["neg_inf"]
            else:
                out[name] = rows[name]
        return out

    def columns(self) -> dict[str, np.ndarray]:
        """{column: NumPy array}: the summary columns and the site's columns (timestep -1 outside loops)."""
        rows = self.rows()
        out = self._summary_columns(rows)
        sites = rows["site"]
        for i, name in enumerate(SITE_COLUMNS):
            values = [s[i] for s in self.sites]
            if name == "timestep":
                values = [-1 if v is None else v for v in values]
            out[name] = np.asarray(values, dtype=object if name in ("op_type", "var") else np.int32)[sites] \
                if self.sites else np.zeros(0, np.int32)
        return out

    def to_arrow(self):
        """The rows as a pyarrow Table; op type and variable as dictionary columns (each name stored once)."""
        pa = _pyarrow()
        rows = self.rows()
        sites = pa.array(rows["site"])
        cols = {name: pa.array(values) for name, values in self._summary_columns(rows).items()}
        for i, name in enumerate(SITE_COLUMNS):
            values = [s[i] for s in self.sites]
            if name in ("op_type", "var"):
                cols[name] = pa.DictionaryArray.from_arrays(sites, pa.array(values, pa.string()))
            else:
                cols[name] = pa.array(values, pa.int32()).take(sites)
        return pa.table(cols)

    def save(self, path) -> None:
        """Write the rows as a Parquet file."""
        table = self.to_arrow()  # refuses clearly without pyarrow
        import pyarrow.parquet as pq
        pq.write_table(table, str(path))


def _fill_numbers(chunk: np.ndarray, numbers: np.ndarray) -> None:
    """A chunk's summary columns from a writer's [rows, 10] numbers. A mean or L2 norm past float32's range is kept
    as Inf, without NumPy's overflow warning: an exploding run's rows would print one into the user's cell at
    every chunk, and Inf is the reading they need."""
    with np.errstate(over="ignore"):
        for i, name in enumerate(NUMBERS):
            if name != "positive":  # what the other counts leave of numel
                chunk[name] = numbers[:, i]


def _pyarrow():
    try:
        import pyarrow
    except ImportError:
        raise KernelcoreError("the recorder's Arrow and Parquet output needs pyarrow: pip install "
                              "'kernelcore[record]' (columns() gives the same columns as NumPy arrays)") from None
    return pyarrow
