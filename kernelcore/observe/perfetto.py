"""A trace in the Trace Event Format (what Perfetto's UI and chrome://tracing open), made worth opening.

- one track (thread) per block, named for the block and the op that runs it; ops are complete ("X") slices on
  their block's track, and a control-flow op's timesteps are slices nested inside its own slice (a fused rnn's
  per-step cells nested inside those), so every track's slices nest strictly;
- flow arrows from the op that wrote a variable to each op that read it (the writer is found through the scope
  chain, so a step scope reading an outer variable points at the outer writer);
- instant events for errors and for marks a caller passes (breakpoint stops, watchpoint hits);
- a counter track of the bytes of live tensors: each op's outputs counted (shape x itemsize) while their scope
  lives, replaced when the variable is written again, released when the scope is dropped;
- scope pushes/drops and variable creations as instants on a track of their own.

Times are microseconds from the first event (the format's unit), kept at nanosecond precision.
"""
from __future__ import annotations

import math
from typing import Iterable

import numpy as np

PID = 1
SCOPES_TID = 0
MAX_FLOWS = 200_000  # a huge trace keeps its slices; arrows past this many are left out (counted in metadata)


def _itemsize(dtype) -> int:
    try:
        return np.dtype(dtype).itemsize
    except TypeError:
        return 0


def _nbytes(shape, dtype) -> int:
    if shape is None or dtype is None or any(d < 0 for d in shape):
        return 0
    return math.prod(shape) * _itemsize(dtype)


class _WriterLookup:
    """The op that last wrote a variable, seen from a scope: the nearest scope up the chain holding a write.

    Each answer is remembered for every scope the walk passed, tagged with how many scopes had written that name
    then; a write in a scope new to the name changes the count, so an answer is reused only while no nearer
    writer can have appeared. A read then walks only the scopes no earlier read of the name has walked. Short
    chains (most runs) are walked plainly: remembering costs more than it saves there."""

    def __init__(self, parent: dict, writer: dict):
        self.parent, self.writer = parent, writer
        self.scopes_writing: dict[str, int] = {}  # name -> how many scopes have written it
        self.seen: dict[tuple[int, str], tuple[int, int | None]] = {}  # (scope, name) -> (count, writer scope)

    def wrote(self, scope: int, name: str, anchor: tuple) -> None:
        if (scope, name) not in self.writer:
            self.scopes_writing[name] = self.scopes_writing.get(name, 0) + 1
        self.writer[(scope, name)] = anchor

    SHORT_WALK = 16  # scopes a plain walk tries before the remembered walk takes over (nested loops only)

    def __call__(self, scope: int, name: str):
        if not self.scopes_writing.get(name):
            return None
        writer, parent = self.writer, self.parent
        s = scope
        for _ in range(self.SHORT_WALK):
            if s is None:
                return None
            w = writer.get((s, name))
            if w is not None:
                return w
            s = parent.get(s)
        return self._remembered_walk(scope, name) if s is not None else None

    def _remembered_walk(self, scope: int, name: str):
        count = self.scopes_writing[name]
        writer, seen, parent = self.writer, self.seen, self.parent
        walked = []
        s, found = scope, None
        while s is not None:
            if (s, name) in writer:
                found = s
                break
            known = seen.get((s, name))
            if known is not None and known[0] == count:
                found = known[1]
                break
            walked.append(s)
            if len(walked) > len(parent):  # a scope is its own ancestor: a malformed trace file
                break
            s = parent.get(s)
        for w in walked:
            seen[(w, name)] = (count, found)
        return writer[(found, name)] if found is not None else None


def to_trace_events(events: list, marks: Iterable[tuple[int, str]] = (), program_name: str = "kernelcore run") -> dict:
    """The Trace Event Format JSON of `events` (kernelcore.runtime.events.Event, in order). `marks`: (event index,
    label) pairs shown as instant events right after that event (breakpoint stops, watchpoint hits)."""
    if not events:
        return {"traceEvents": [], "displayTimeUnit": "ns"}
    t0 = min(e.t_ns - (e.dur_ns or 0) for e in events)

    def us(t_ns: float) -> float:
        return round((t_ns - t0) / 1e3, 3)  # whole nanoseconds: nesting survives the float round trip

    out: list[dict] = [{"name": "process_name", "ph": "M", "pid": PID, "args": {"name": program_name}},
                       {"name": "thread_name", "ph": "M", "pid": PID, "tid": SCOPES_TID,
                        "args": {"name": "scopes and variables"}}]
    tracks: dict[int, str] = {}  # block -> track name

    def tid(block: int | None, why: str = "") -> int:
        b = 0 if block is None else block
        if b not in tracks:
            tracks[b] = f"block {b}" + (f" ({why})" if why else "")
            out.append({"name": "thread_name", "ph": "M", "pid": PID, "tid": b + 1, "args": {"name": tracks[b]}})
            out.append({"name": "thread_sort_index", "ph": "M", "pid": PID, "tid": b + 1, "args": {"sort_index": b}})
        return b + 1

    parent: dict[int, int | None] = {}       # scope -> parent scope
    writer: dict[tuple[int, str], tuple] = {}  # (scope, var) -> (flow anchor ts, tid) of the op that wrote it last
    live: dict[int, dict[str, int]] = {}     # scope -> var -> bytes
    live_total = 0
    flows = dropped_flows = 0
    open_steps: dict[tuple, tuple] = {}      # (scope, block, op, timestep) -> (begin ns, step_begin event)
    by_index = {}
    for k, label in marks:
        by_index.setdefault(k, []).append(label)

    find_writer = _WriterLookup(parent, writer)

    def counter(t_ns: int) -> None:
        out.append({"name": "live tensor bytes", "ph": "C", "pid": PID, "ts": us(t_ns),
                    "args": {"bytes": live_total}})

    for i, e in enumerate(events):
        k = e.kind
        if k == "op_run":
            start, end = e.t_ns - (e.dur_ns or 0), e.t_ns
            track = tid(e.block)
            args = {"seq": e.seq, "op": e.op, "scope": e.scope, "kernel": e.kernel, "place": e.place}
            if e.timestep is not None:
                args["timestep"] = e.timestep
            args["inputs"] = [f"{slot}={name}{list(sh) if sh is not None else ''}" for slot, name, sh, _ in e.inputs]
            args["outputs"] = [f"{slot}={name}{list(sh) if sh is not None else ''}" for slot, name, sh, _ in e.outputs]
            out.append({"name": e.op_type, "cat": "op", "ph": "X", "pid": PID, "tid": track, "ts": us(start),
                        "dur": round((end - start) / 1e3, 3), "args": args})
            # arrows: from each input's writer to this op (bound to the enclosing slices at both ends)
            for _, name, _, _ in e.inputs:
                w = find_writer(e.scope, name)
                if w is None:
                    continue
                if flows >= MAX_FLOWS:
                    dropped_flows += 1
                    continue
                flows += 1
                w_ts, w_tid = w
                out.append({"name": name, "cat": "dataflow", "ph": "s", "id": flows, "pid": PID, "tid": w_tid,
                            "ts": w_ts})
                out.append({"name": name, "cat": "dataflow", "ph": "f", "bp": "e", "id": flows, "pid": PID,
                            "tid": track, "ts": us(start + (end - start) / 2)})
            anchor = us(start + (end - start) / 2)  # the middle of the writer's slice binds its arrows to it
            changed = False
            for _, name, shape, dtype in e.outputs:
                find_writer.wrote(e.scope, name, (anchor, track))
                nb = _nbytes(shape, dtype)
                vars_ = live.setdefault(e.scope, {})
                live_total += nb - vars_.get(name, 0)
                vars_[name] = nb
                changed = True
            if changed:
                counter(end)
        elif k == "step_begin":
            open_steps[(e.scope, e.block, e.op, e.timestep)] = (e.t_ns, e)
        elif k == "step_end":
            begun = open_steps.pop((e.scope, e.block, e.op, e.timestep), None)
            if begun is not None:
                b_ns, b = begun
                out.append({"name": f"{e.op_type} t={e.timestep}", "cat": "timestep", "ph": "X", "pid": PID,
                            "tid": tid(e.block), "ts": us(b_ns), "dur": round((e.t_ns - b_ns) / 1e3, 3),
                            "args": {"seq": b.seq, "timestep": e.timestep, "scope": e.scope, "op": e.op}})
        elif k == "scope_push":
            parent[e.scope] = e.parent_scope
            out.append({"name": f"push scope {e.scope}", "cat": "scope", "ph": "i", "s": "t", "pid": PID,
                        "tid": SCOPES_TID, "ts": us(e.t_ns),
                        "args": {"seq": e.seq, "parent": e.parent_scope, "what": e.message, "timestep": e.timestep}})
        elif k == "scope_drop":
            gone = live.pop(e.scope, {})
            if gone:
                live_total -= sum(gone.values())
                counter(e.t_ns)
            out.append({"name": f"drop scope {e.scope}", "cat": "scope", "ph": "i", "s": "t", "pid": PID,
                        "tid": SCOPES_TID, "ts": us(e.t_ns), "args": {"seq": e.seq}})
        elif k in ("var_create", "vars_create"):
            names = [e.name] if k == "var_create" else list(e.names)
            out.append({"name": f"create {', '.join(names)}"[:200], "cat": "variable", "ph": "i", "s": "t",
                        "pid": PID, "tid": SCOPES_TID, "ts": us(e.t_ns), "args": {"seq": e.seq, "scope": e.scope}})
        elif k == "error":
            out.append({"name": "error", "cat": "error", "ph": "i", "s": "p", "pid": PID, "tid": tid(e.block),
                        "ts": us(e.t_ns), "args": {"seq": e.seq, "message": e.message, "op": e.op_type,
                                                    "timestep": e.timestep}})
        elif k in ("run_begin", "run_end"):
            out.append({"name": k, "cat": "run", "ph": "i", "s": "g", "pid": PID, "tid": SCOPES_TID,
                        "ts": us(e.t_ns), "args": {"seq": e.seq}})
        for label in by_index.get(i, ()):
            out.append({"name": label, "cat": "mark", "ph": "i", "s": "p", "pid": PID, "tid": tid(e.block),
                        "ts": us(e.t_ns), "args": {"seq": e.seq}})
    meta = {"flows": flows}
    if dropped_flows:
        meta["flows_left_out"] = dropped_flows
    return {"traceEvents": out, "displayTimeUnit": "ns", "otherData": meta}
