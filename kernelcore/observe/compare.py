"""Two runs of one program side by side: per op output, how far run b's value is from run a's.

    cmp = kc.compare_runs(trace_a, trace_b, rtol=1e-3)   # CPU vs GPU, float32 vs float16, two inputs, ...
    cmp.first_divergence        # the first output, in a's execution order, beyond the tolerance (None: none)
    cmp.worst(10)               # the ten largest relative L2 errors
    cmp.numbers("rel_l2")       # {op id: number}: the per-node figures a graph overlay takes
    cmp.overlay(graph)          # the same, coloured on a ProgramGraph of the program
    cmp                         # a table (text; HTML in a notebook)

A value is matched by its variable name, the timestep it was written at and how many times that name had been
written at that timestep before (the k-th write): op indexes are not used, so a program and its pruned or edited
form still line up wherever they write the same names. Values are compared on the host in float64, so a
float16 run is measured against a float32 one. Both traces must have kept values (retain="references" or
"copies"; a debug session's trace does).
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass

import numpy as np

from ..errors import KernelcoreError
from ..ir.node_ids import op_id, var_id
from ..runtime.place import to_host

METRICS = ("max_abs", "rel_l2", "cosine")


@dataclass
class ValueDiff:
    """One op output in both runs: where run a wrote it, and the three measures of b against a."""
    var: str
    block: int
    op: int
    op_type: str
    timestep: int | None
    write: int            # the k-th write of `var` at this timestep (0: the first)
    order: int            # position in run a's execution order
    max_abs: float        # max |b - a| (inf: shapes differ, one side lacks the value, or NaN/Inf on one side)
    rel_l2: float         # ||b - a|| / ||a|| (||b - a|| when a is all zero)
    cosine: float         # <a, b> / (||a|| ||b||); 1 when both are all zero
    note: str = ""        # why a measure is inf: "shape", "only in a", "only in b", "NaN/Inf in b", ...
    diverged: bool = False

    @property
    def op_id(self) -> str:
        return op_id(self.block, self.op)

    @property
    def var_id(self) -> str:
        return var_id(self.block, self.var)

    def where(self) -> str:
        t = f" t={self.timestep}" if self.timestep is not None else ""
        k = f" (write {self.write + 1})" if self.write else ""
        return f"block {self.block} op #{self.op} {self.op_type}{t} -> {self.var}{k}"

    def to_json(self) -> dict:
        return {"var": self.var, "block": self.block, "op": self.op, "op_type": self.op_type,
                "timestep": self.timestep, "write": self.write, "order": self.order,
                "max_abs": _json_number(self.max_abs), "rel_l2": _json_number(self.rel_l2),
                "cosine": _json_number(self.cosine), "note": self.note, "diverged": self.diverged}


def _json_number(x: float):
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf" if x < 0 else "nan")


class RunComparison:
    """The outcome of compare_runs: every matched output in run a's execution order, and views of it."""

    def __init__(self, diffs: list[ValueDiff], rtol: float, atol: float):
        self.diffs, self.rtol, self.atol = diffs, rtol, atol

    @property
    def first_divergence(self) -> ValueDiff | None:
        """The first output, in run a's execution order, beyond the tolerance."""
        return next((d for d in self.diffs if d.diverged), None)

    @property
    def diverged(self) -> list[ValueDiff]:
        return [d for d in self.diffs if d.diverged]

    def worst(self, n: int | None = None, metric: str = "rel_l2") -> list[ValueDiff]:
        """The outputs, worst first by `metric` (cosine: lowest first)."""
        _check_metric(metric)
        sign = 1.0 if metric == "cosine" else -1.0
        ranked = sorted(self.diffs, key=lambda d: (sign * _sortable(getattr(d, metric)), d.order))
        return ranked if n is None else ranked[:n]

    def numbers(self, metric: str = "rel_l2", per: str = "op") -> dict[str, float]:
        """{op id: the worst `metric` over the op's outputs and runs} (per="op"), or {var id: ...} (per="var"):
        the plain numbers a graph overlay colours its nodes by."""
        _check_metric(metric)
        if per not in ("op", "var"):
            raise KernelcoreError(f"numbers(per=...) is 'op' or 'var', got {per!r}")
        worse = min if metric == "cosine" else max
        out: dict[str, float] = {}
        for d in self.diffs:
            key = d.op_id if per == "op" else d.var_id
            x = getattr(d, metric)
            out[key] = worse(out[key], x, key=_sortable) if key in out else x
        return out

    def overlay(self, graph, metric: str = "rel_l2", per: str = "op", **kw):
        """Colour `graph` (a ProgramGraph of run a's program, or anything with its `overlay` method) by
        numbers(metric, per): the comparison on the graph. Errors span decades, so the scale is "log"; a
        cosine is worse the lower it is, so its scale is linear and a folded group shows its members'
        minimum. Other keywords go to graph.overlay; returns the graph."""
        low_is_bad = metric == "cosine"
        style = {"label": f"{metric} of b vs a", "scale": "gradient" if low_is_bad else "log",
                 "aggregate": "min" if low_is_bad else "max"}
        return graph.overlay(self.numbers(metric, per), on=per + "s", **{**style, **kw})

    def to_json(self, limit: int | None = None) -> dict:
        first = self.first_divergence
        rows = self.worst(limit)
        return {"rtol": self.rtol, "atol": self.atol, "compared": len(self.diffs),
                "diverged": len(self.diverged), "first_divergence": first.to_json() if first else None,
                "worst": [d.to_json() for d in rows]}

    def _summary(self) -> str:
        first = self.first_divergence
        head = f"{len(self.diffs)} outputs compared, {len(self.diverged)} beyond rtol={self.rtol:g} atol={self.atol:g}"
        return head + (f"; first divergence: {first.where()}" if first else "; no divergence")

    def table(self, n: int = 20) -> str:
        """The worst `n` outputs as a text table."""
        lines = [self._summary(), f"{'where':60} {'max_abs':>10} {'rel_l2':>10} {'cosine':>10}  note"]
        for d in self.worst(n):
            mark = "*" if d.diverged else " "
            lines.append(f"{mark}{d.where()[:59]:59} {d.max_abs:10.3g} {d.rel_l2:10.3g} {d.cosine:10.5g}  {d.note}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.table()

    def _repr_html_(self, n: int = 20) -> str:
        rows = "".join(
            f"<tr{_DIVERGED_STYLE if d.diverged else ''}><td>{html.escape(d.where())}</td>"
            f"<td>{d.max_abs:.3g}</td><td>{d.rel_l2:.3g}</td><td>{d.cosine:.5g}</td><td>{html.escape(d.note)}</td></tr>"
            for d in self.worst(n))
        return (f"<p>{html.escape(self._summary())}</p><table><thead><tr><th>where</th><th>max abs</th>"
                f"<th>rel L2</th><th>cosine</th><th>note</th></tr></thead><tbody>{rows}</tbody></table>")


_DIVERGED_STYLE = ' style="color:#b00"'


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise KernelcoreError(f"unknown metric {metric!r}; expected one of {list(METRICS)}")


def _sortable(x: float) -> float:
    return math.inf if math.isnan(x) else x


def _trace_of(run, side: str):
    trace = getattr(run, "trace", run)  # a DebugSession or a RecordedRun holds its trace
    if not hasattr(trace, "events") or not hasattr(trace, "retain"):
        raise KernelcoreError(f"compare_runs takes two traces (or debug sessions); run {side} is a "
                              f"{type(run).__name__}")
    if trace.retain not in ("references", "copies"):
        raise KernelcoreError(f"compare_runs compares the values ops wrote; run {side}'s trace kept "
                              f"{trace.retain!r}: record it with kc.trace(retain='references') (a debug session's "
                              f"trace does)")
    return trace


def writes(trace) -> dict[tuple, tuple]:
    """(var, timestep, k) -> (event, value) for every value an op wrote, in execution order."""
    seen: dict[tuple, int] = {}
    out: dict[tuple, tuple] = {}
    for e in trace.events:
        if e.kind != "op_run" or e.values is None or e.op_type in ("while", "conditional_block"):
            continue  # a while / conditional_block only relists what its sub-block wrote
        for name, value in e.values:
            k = seen[(name, e.timestep)] = seen.get((name, e.timestep), -1) + 1
            out[(name, e.timestep, k)] = (e, value)
    return out


def measure(a, b) -> tuple[float, float, float, str]:
    """(max_abs, rel_l2, cosine, note) of host value b against host value a."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return math.inf, math.inf, math.nan, f"shape {list(a.shape)} vs {list(b.shape)}"
    if a.dtype.kind not in "biufc" or b.dtype.kind not in "biufc":
        return 0.0, 0.0, 1.0, "not numeric: not compared"
    fa, fb = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    bad_a, bad_b = ~np.isfinite(fa), ~np.isfinite(fb)
    if bad_a.any() or bad_b.any():
        same = np.array_equal(bad_a, bad_b) and np.array_equal(fa[bad_a], fb[bad_b], equal_nan=True)
        if not same:
            side = "a and b" if bad_a.any() and bad_b.any() else "b" if bad_b.any() else "a"
            return math.inf, math.inf, math.nan, f"NaN/Inf in {side}"
        fa, fb = fa[~bad_a], fb[~bad_b]  # the same NaN/Inf at the same places: compare the rest
    diff = fb - fa
    max_abs = float(np.abs(diff).max()) if diff.size else 0.0
    na, nb, nd = (float(np.linalg.norm(v)) for v in (fa, fb, diff))
    rel = nd / na if na > 0 else nd
    cosine = float(fa @ fb) / (na * nb) if na > 0 and nb > 0 else (1.0 if na == nb else 0.0)
    return max_abs, rel, cosine, ""


def compare_runs(a, b, rtol: float = 1e-3, atol: float = 0.0) -> RunComparison:
    """Compare every op output run b wrote with run a's (see the module docstring). An output diverges where its
    relative L2 error exceeds `rtol` and its max abs error exceeds `atol`, where shapes differ, where only one
    run wrote it, or where NaN/Inf stand in one run and not the other."""
    if not (rtol >= 0 and atol >= 0):
        raise KernelcoreError(f"compare_runs needs rtol >= 0 and atol >= 0, got {rtol!r} and {atol!r}")
    wa, wb = writes(_trace_of(a, "a")), writes(_trace_of(b, "b"))
    diffs = []
    for order, (key, (ev, va)) in enumerate(wa.items()):
        name, timestep, k = key
        if key in wb:
            m = measure(to_host(va), to_host(wb[key][1]))
        else:
            m = (math.inf, math.inf, math.nan, "only in a")
        d = ValueDiff(name, ev.block, ev.op, ev.op_type, timestep, k, order, *m)
        d.diverged = math.isinf(d.max_abs) or (d.rel_l2 > rtol and d.max_abs > atol)
        diffs.append(d)
    for key in wb.keys() - wa.keys():
        ev = wb[key][0]
        diffs.append(ValueDiff(key[0], ev.block, ev.op, ev.op_type, key[1], key[2], len(diffs), math.inf, math.inf,
                               math.nan, "only in b", True))
    return RunComparison(diffs, rtol, atol)
