"""Why a debug session's move stops at a pause: the breakpoints and watches judged on the events that led to it.

A move runs (or replays) from one pause to the next; the op_run events between them are what a write or NaN
breakpoint and a watch look at, and the op the new pause waits before is what an op or op-type breakpoint
looks at."""
from __future__ import annotations

from .breakpoints import has_non_finite, non_finite_text
from .position import BLOCK_WRITERS
from .watch import WatchHit, check as check_watch


def stop_reason(trace, between, inner, breakpoints, watches, xp, initial, hits: list) -> str | None:
    """Why a move stops after the events at indexes `between`, before the op of frame `inner`: a breakpoint's
    or watch's message, or None. Watch hits not seen before are added to `hits` and to their watch."""
    live = [b for b in breakpoints if b.enabled]
    watches = [w for w in watches if w.enabled]
    # only write/NaN breakpoints and watches look at what ran; without them the records are left as they are,
    # to be turned into events when someone reads the trace
    if watches or any(b.write is not None or b.nan for b in live):
        events = trace.events
        for k in between:
            ev = events[k]
            if ev.kind != "op_run":
                continue
            why = _breakpoint_on_write(ev, live, xp) or (
                _watches_on_write(events, k, ev, watches, xp, initial, hits) if watches else None)
            if why:
                return why
    if inner is not None and not inner.at_end:
        for b in live:
            if b.op_type is not None and inner.op_type == b.op_type:
                return f"breakpoint {b}"
            if b.op is not None and (inner.block, inner.op) == (b.block, b.op):
                return f"breakpoint {b}"
    return None


def _breakpoint_on_write(ev, live, xp) -> str | None:
    for b in live:
        if b.write is not None and ev.op_type not in BLOCK_WRITERS \
                and any(name == b.write for _, name, _, _ in ev.outputs):
            # (a while / conditional_block op only lists what its sub-block already wrote: the write stopped
            # there, after the sub-block's op)
            return f"breakpoint {b}: written by op {ev.op_type!r} (block {ev.block}, op #{ev.op})" + \
                (f" at timestep {ev.timestep}" if ev.timestep is not None else "")
        if b.nan and has_non_finite(ev, xp):
            return f"breakpoint {b}: {non_finite_text(ev, xp)}"
    return None


def _watches_on_write(events, k, ev, watches, xp, initial, hits) -> str | None:
    first = None
    for name, value in ev.values or ():
        for w in watches:
            if not w.matches(ev.op_type, name):
                continue
            why = check_watch(w, xp, value, lambda: previous_value(events, initial, name, k))
            if why is None:
                continue
            hit = WatchHit(w.id, k, ev.block, ev.op, ev.op_type, ev.timestep, name,
                           f"{w}: {name!r} written by op {ev.op_type!r} (block {ev.block}, op #{ev.op})"
                           + (f" at timestep {ev.timestep}" if ev.timestep is not None else "") + f" {why}")
            if not any(h.event == k and h.watch == w.id and h.var == name for h in w.hits):
                w.hits.append(hit)
                hits.append(hit)
            first = first or hit.message
    return first


def previous_value(events, initial, name: str, k: int):
    """The value `name` held before event k: its previous write (any scope: the previous timestep's too), else
    its value before the run (`initial`: a RecordedRun's)."""
    for i in range(k - 1, -1, -1):
        e = events[i]
        if e.kind == "op_run" and e.values:
            for n, v in e.values:
                if n == name:
                    return v
        elif e.kind == "var_create" and e.name == name and e.values:
            return e.values[0][1]
    for _, _, values in reversed(initial):
        if name in values:
            return values[name]
    return None
