"""What a recorded run did to the static program, and how two runs differ: the data of the graph's "what ran"
overlay (ops executed with counts and time, ops that never ran greyed) and of its run diff.

    ran = what_ran(trace)                 # {(block, op): OpRuns(runs, ns, timesteps)}
    d = diff_runs(trace_a, trace_b)       # [OpDiff(...)] for ops whose outputs differ, largest first

Both read only the trace (op_run events); `diff_runs` needs traces that kept values (retain="references" or
"copies": a debug session's trace does).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import KernelcoreError
from ..runtime.place import to_host


@dataclass
class OpRuns:
    runs: int = 0
    ns: int = 0
    timesteps: set = field(default_factory=set)

    def to_json(self) -> dict:
        return {"runs": self.runs, "ns": self.ns, "timesteps": len(self.timesteps)}


def what_ran(trace) -> dict[tuple[int, int], OpRuns]:
    """Per op of the program (block, op index): how often it ran, its total kernel time and in how many
    distinct timesteps. Ops absent from the result never ran (a branch not taken, a loop that never entered,
    ops after an error). A fused rnn's per-step cells count under the rnn op's own (block, op)."""
    out: dict[tuple[int, int], OpRuns] = {}
    for e in trace.events:
        if e.kind != "op_run" or e.block is None or e.op is None:
            continue
        r = out.setdefault((e.block, e.op), OpRuns())
        r.runs += 1
        r.ns += e.dur_ns or 0
        if e.timestep is not None:
            r.timesteps.add(e.timestep)
    return out


@dataclass
class OpDiff:
    block: int
    op: int
    op_type: str
    timestep: int | None
    var: str
    max_abs: float          # max |a - b| over the output (inf when shapes differ or only one run wrote it)
    max_rel: float          # max_abs / max(|a|)

    def to_json(self) -> dict:
        return {"block": self.block, "op": self.op, "op_type": self.op_type, "timestep": self.timestep,
                "var": self.var, "max_abs": self.max_abs, "max_rel": self.max_rel}


def _writes(trace) -> dict:
    """(block, op, timestep, k-th run at that key, var) -> value, from a trace that kept values."""
    if getattr(trace, "retain", None) not in ("references", "copies"):
        raise KernelcoreError(f"diff_runs compares the values ops wrote; this trace kept "
                              f"{getattr(trace, 'retain', None)!r}: record with kc.trace(retain='references') "
                              f"(a debug session's trace does)")
    seen: dict = {}
    out = {}
    for e in trace.events:
        if e.kind != "op_run" or e.values is None:
            continue
        key = (e.block, e.op, e.timestep)
        k = seen[key] = seen.get(key, -1) + 1
        for name, value in e.values:
            out[(e.block, e.op, e.op_type, e.timestep, k, name)] = value
    return out


def diff_runs(a, b, atol: float = 0.0) -> list[OpDiff]:
    """The op outputs that differ between two runs of one program, matched by (block, op, timestep, run
    count, variable): largest absolute difference first. An output only one run wrote counts as differing."""
    wa, wb = _writes(a), _writes(b)
    out = []
    for key in sorted(set(wa) | set(wb), key=lambda k: (k[0], k[1], -1 if k[3] is None else k[3], k[4], k[5])):
        block, op, op_type, timestep, _, name = key
        va, vb = wa.get(key), wb.get(key)
        if va is None or vb is None:
            out.append(OpDiff(block, op, op_type, timestep, name, float("inf"), float("inf")))
            continue
        ha, hb = np.asarray(to_host(va)), np.asarray(to_host(vb))
        if ha.shape != hb.shape:
            out.append(OpDiff(block, op, op_type, timestep, name, float("inf"), float("inf")))
            continue
        if ha.dtype.kind not in "biufc" or hb.dtype.kind not in "biufc":
            continue
        d = np.abs(ha.astype(np.float64) - hb.astype(np.float64))
        same_nan = np.isnan(ha) & np.isnan(hb) if ha.dtype.kind in "fc" else False
        d = np.where(same_nan, 0.0, d) if ha.dtype.kind in "fc" else d
        m = float(np.nanmax(d, initial=0.0)) if d.size else 0.0
        if np.isnan(d).any():
            m = float("inf")
        if m > atol:
            scale = float(np.max(np.abs(ha[np.isfinite(ha)]), initial=0.0)) if ha.dtype.kind in "fc" else \
                float(np.max(np.abs(ha), initial=0))
            out.append(OpDiff(block, op, op_type, timestep, name, m, m / scale if scale else float("inf")))
    out.sort(key=lambda d: -d.max_abs)
    return out
