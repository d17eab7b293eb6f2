"""What the training-health view draws, computed from a flight recorder's summary columns
(kernelcore/observe/summary_table.py): per op, a statistic over iterations and the iterations where it wrote
NaN/Inf; per parameter, its gradient's L2 norm over iterations; the loss curve.

Every series is bounded before it leaves the kernel: a run of 10^4 iterations becomes at most MAX_POINTS
points (each bucket of iterations keeps its lowest and its highest point, so a one-iteration spike survives),
and the iterations with NaN/Inf become at most MAX_POINTS // 2 ranges.
"""
from __future__ import annotations

import numpy as np

from kernelcore.ir.node_ids import op_id

MAX_POINTS = 500
# what a sparkline can show: a summary column, or a count of bad elements per output
STATS = ("l2", "max", "min", "mean", "nonfinite", "zero")
MAX_VARS_SHOWN = 8  # output names listed per op


def downsample(iterations, values, max_points: int = MAX_POINTS) -> list[list]:
    """[[iteration, value], ...] of the finite points, in iteration order, at most `max_points`: past that the
    points are cut into max_points // 2 buckets and each keeps its minimum and its maximum."""
    iterations, values = np.asarray(iterations), np.asarray(values, dtype=np.float64)
    keep = np.isfinite(values)
    iterations, values = iterations[keep], values[keep]
    n = len(values)
    if n > max_points:
        buckets = max_points // 2
        bucket = (np.arange(n) * buckets) // n
        by_value = np.lexsort((values, bucket))  # each bucket's points, lowest first
        starts = np.searchsorted(bucket, np.arange(buckets))
        ends = np.r_[starts[1:], n] - 1
        picks = np.unique(np.r_[by_value[starts], by_value[ends]])  # each bucket's min and max, in order
        iterations, values = iterations[picks], values[picks]
    return [[int(i), float(v)] for i, v in zip(iterations.tolist(), values.tolist())]


def bad_ranges(bad_iterations, n_iterations: int, max_ranges: int = MAX_POINTS // 2) -> list[list[int]]:
    """Sorted iterations as [[first, last], ...] runs of consecutive ones; when that is more than `max_ranges`,
    runs of buckets of iterations (each bucket holding a bad one), so the list stays bounded."""
    its = np.unique(np.asarray(bad_iterations, dtype=np.int64))
    if not len(its):
        return []
    width = 1
    while True:
        b = its // width
        starts = np.flatnonzero(np.r_[True, np.diff(b) > 1])
        if len(starts) <= max_ranges:
            ends = np.r_[starts[1:], len(b)] - 1
            return [[int(b[s] * width), int(min((b[e] + 1) * width - 1, max(n_iterations - 1, its[-1])))]
                    for s, e in zip(starts, ends)]
        width *= 2


def stat_column(cols: dict, stat: str) -> np.ndarray:
    """Per row (one output of one op in one iteration), the value of `stat`."""
    if stat == "nonfinite":
        return (cols["nan"] + cols["pos_inf"] + cols["neg_inf"]).astype(np.float64)
    return cols[stat].astype(np.float64)


def _reduce(stat: str, values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """One value per group of rows: the largest (the smallest for "min", the average for "mean") of its
    outputs' values, NaN ignored (a summary's min/max/mean are NaN when no element was finite)."""
    if not len(starts):
        return np.zeros(0)
    if stat == "min":
        return np.fmin.reduceat(values, starts)
    if stat == "mean":
        finite = np.isfinite(values)
        total = np.add.reduceat(np.where(finite, values, 0.0), starts)
        count = np.add.reduceat(finite.astype(np.int64), starts)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return np.fmax.reduceat(values, starts)


class OpSeries:
    """Per op (block, op) of a recording: its statistic per iteration, its bad iterations, the first of them
    and where it ranks. Made once per refresh; `rows(ids)` builds the bounded payload of the ops shown."""

    def __init__(self, cols: dict, sites: list, site_of_row: np.ndarray, stat: str):
        """`cols`: the recorder's summary columns; `sites` and `site_of_row`: its site table and each row's site
        (the table's rows()["site"]), so each row's op is found through the few sites, not by sorting rows."""
        self.stat = stat
        self.iterations = int(cols["iteration"].max()) + 1 if len(site_of_row) else 0
        site_keys = np.asarray([(b << 32) | o for b, o, *_ in sites], np.int64)
        keys, op_of_site = np.unique(site_keys, return_inverse=True)
        self.keys = keys
        first_site = np.full(len(keys), len(sites), np.int64)
        np.minimum.at(first_site, op_of_site, np.arange(len(sites)))
        self.op_types = [sites[k][2] for k in first_site]
        self._vars = _vars_by_op(sites)
        index = op_of_site.astype(np.uint16 if len(keys) < 2 ** 16 else np.int64)[site_of_row]
        its = cols["iteration"].astype(np.int64)
        # rows come in iteration order: a stable sort by op (a radix sort for up to 2^16 ops) groups them by op,
        # then iteration
        order = np.argsort(index, kind="stable")
        op_sorted, it_sorted = index[order], its[order]
        starts = np.flatnonzero(np.r_[True, (op_sorted[1:] != op_sorted[:-1]) | (it_sorted[1:] != it_sorted[:-1])]) \
            if len(order) else np.zeros(0, np.int64)
        self._op_of_group = op_sorted[starts].astype(np.int64)
        self._it_of_group = it_sorted[starts]
        self._value_of_group = _reduce(stat, stat_column(cols, stat)[order], starts)
        index = index.astype(np.int64)
        bad = (cols["nan"] + cols["pos_inf"] + cols["neg_inf"]) > 0
        self._bad_index, self._bad_its = index[bad], its[bad]
        self.first_bad = np.full(len(keys), -1, np.int64)
        if bad.any():
            first = np.full(len(keys), np.iinfo(np.int64).max)
            np.minimum.at(first, self._bad_index, self._bad_its)
            self.first_bad = np.where(first == np.iinfo(np.int64).max, -1, first)
        self._order_in_first_bad = self._first_bad_order(cols, index, its, bad)
        self.peak = np.zeros(len(keys))
        finite = np.isfinite(self._value_of_group)
        np.maximum.at(self.peak, self._op_of_group[finite], np.abs(self._value_of_group[finite]))

    def _first_bad_order(self, cols, index, its, bad) -> np.ndarray:
        """Per op, the position of its first bad write within its first bad iteration (ties of first_bad are
        broken by which op ran first)."""
        out = np.full(len(self.keys), np.iinfo(np.int64).max)
        rows = np.flatnonzero(bad & (its == self.first_bad[index]))
        np.minimum.at(out, index[rows], cols["order"][rows].astype(np.int64))
        return out

    def block_op(self, i: int) -> tuple[int, int]:
        k = int(self.keys[i])
        return k >> 32, k & 0xFFFFFFFF

    def ids(self) -> list[str]:
        return [op_id(*self.block_op(i)) for i in range(len(self.keys))]

    def ranked(self, sort: str, text: str = "") -> list[int]:
        """Op positions matching `text` (in the op id, type or an output's name, case-insensitive), the worst
        first ("worst": those that wrote NaN/Inf by first bad iteration and op order, then the largest peak of
        the statistic) or in program order ("program")."""
        text = text.strip().lower()
        ids = self.ids()
        picked = [i for i in range(len(self.keys)) if not text or text in ids[i].lower()
                  or text in str(self.op_types[i]).lower() or any(text in v.lower() for v in self._vars.get(
                      self.block_op(i), ()))]
        if sort == "program":
            return picked
        inf = np.iinfo(np.int64).max
        return sorted(picked, key=lambda i: (self.first_bad[i] < 0, self.first_bad[i] if self.first_bad[i] >= 0
                                             else inf, self._order_in_first_bad[i], -self.peak[i], i))

    def rows(self, positions: list[int], max_points: int = MAX_POINTS) -> list[dict]:
        """The payload of the ops at `positions`: each op's sparkline (at most `max_points` points) and its bad
        ranges."""
        out = []
        for i in positions:
            # groups are sorted by op, then iteration: each op's groups are one run
            mine = slice(*np.searchsorted(self._op_of_group, [i, i + 1]))
            bad_its = self._bad_its[self._bad_index == i]
            block, op = self.block_op(i)
            names = sorted(self._vars.get((block, op), ()))
            its, values = self._it_of_group[mine], self._value_of_group[mine]
            # an iteration where the op wrote NaN/Inf is drawn as a red band: its statistic over the finite
            # elements left (an l2 of 0 when none are) would draw as a healthy point there
            values = np.where(np.isin(its, bad_its), np.nan, values)
            finite = values[np.isfinite(values)]
            out.append({"id": op_id(block, op), "block": block, "op": op, "op_type": str(self.op_types[i]),
                        "vars": names[:MAX_VARS_SHOWN], "more_vars": max(len(names) - MAX_VARS_SHOWN, 0),
                        "first_bad": int(self.first_bad[i]) if self.first_bad[i] >= 0 else None,
                        "bad": bad_ranges(bad_its, self.iterations, max(max_points // 2, 1)),
                        "points": downsample(its, values, max_points),
                        "last": float(finite[-1]) if len(finite) else None,
                        "peak": float(self.peak[i]) if len(finite) else None})
        return out


    def at_iteration(self, iteration: int) -> dict[str, float]:
        """{op id: its statistic} in one iteration, NaN for an op that wrote NaN/Inf there: a graph overlay's
        figures (the overlay gives NaN a colour of its own)."""
        here = self._it_of_group == iteration
        out = {op_id(*self.block_op(int(i))): float(v) for i, v in zip(self._op_of_group[here],
                                                                         self._value_of_group[here])}
        for i in np.unique(self._bad_index[self._bad_its == iteration]):
            out[op_id(*self.block_op(int(i)))] = float("nan")
        return out


def _vars_by_op(sites: list) -> dict:
    out: dict = {}
    for block, op, _op_type, var, _t in sites:
        out.setdefault((block, op), set()).add(var)
    return out


def first_bad(cols: dict) -> dict:
    """Where the recording first wrote NaN/Inf: {iteration, order, block, op, op_type, var, id}, or {}. Rows
    are in iteration order and, within one, in the order the ops ran, so it is the first bad row."""
    bad = np.flatnonzero((cols["nan"] + cols["pos_inf"] + cols["neg_inf"]) > 0)
    if not len(bad):
        return {}
    r = int(bad[0])
    block, op = int(cols["block"][r]), int(cols["op"][r])
    return {"iteration": int(cols["iteration"][r]), "order": int(cols["order"][r]), "block": block, "op": op,
            "op_type": str(cols["op_type"][r]), "var": str(cols["var"][r]), "id": op_id(block, op)}


def last_write_series(cols: dict, sites: list, site_of_row: np.ndarray, names, column: str) -> dict[str, tuple]:
    """{name: (iterations, values, bad iterations)}: per iteration, `column` of the last write of each of
    `names` (a gradient summed from parts is written more than once; the last write is the whole). Rows are
    found by their site (summary_table.py: block, op, op type, variable, timestep), not by comparing names."""
    wanted = set(names)
    wanted_sites = [k for k, site in enumerate(sites) if site[3] in wanted]
    rows = np.flatnonzero(np.isin(site_of_row, wanted_sites))
    out: dict = {}
    if not len(rows):
        return out
    var = np.asarray([sites[k][3] for k in range(len(sites))], dtype=object)[site_of_row[rows]]
    its = cols["iteration"][rows].astype(np.int64)
    bad = (cols["nan"] + cols["pos_inf"] + cols["neg_inf"])[rows] > 0
    for name in sorted(set(var)):
        mine = var == name
        r_its, r_vals = its[mine], cols[column][rows][mine].astype(np.float64)
        last = np.flatnonzero(np.r_[r_its[1:] != r_its[:-1], True])  # rows are in running order
        out[name] = (r_its[last], r_vals[last], np.unique(r_its[bad[mine]]))
    return out


def loss_from_values(values) -> tuple:
    """(iterations, values, bad iterations) of a loss the loop fetched itself (a list it appends to)."""
    vals = np.asarray([float(np.asarray(v).reshape(-1)[0]) if np.size(v) else np.nan for v in list(values)],
                      dtype=np.float64)
    its = np.arange(len(vals))
    return its, vals, its[~np.isfinite(vals)]
