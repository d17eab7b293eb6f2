"""TraceTimeline: the events of a run, filterable, with op times."""
from __future__ import annotations

import traitlets as t

import kernelcore as kc
from kernelcore.view.display import TRACE_EVENT_LIMIT

from ._base import STATIC, KCWidget
from .requests import int_arg


class TraceTimeline(KCWidget):
    """`TraceTimeline(trace)` (a kc.Trace, a DebugSession's, or a saved trace file's path).

    `events` is the trace JSON's events (the first 20,000; `truncated` says how many more there were);
    the browser sets `filter` ({kind, op_type, scope}) and `selected_event` (a seq, -1 for none), and sends
    `{"type": "select", "seq": n}`."""

    _esm = STATIC / "TraceTimeline.js"
    _css = STATIC / "TraceTimeline.css"

    events = t.List().tag(sync=True, ts="TraceEvent[]")
    filter = t.Dict().tag(sync=True, ts="{ kind?: string; op_type?: string; scope?: number | null }")
    selected_event = t.Int(-1).tag(sync=True)
    truncated = t.Int(0).tag(sync=True)

    def update_events(self, trace=None) -> None:
        """Show the trace again (the Debugger calls this after each step: a session's trace grows)."""
        if trace is not None:
            if isinstance(trace, kc.DebugSession):
                trace = trace.trace
            elif not isinstance(trace, kc.Trace):
                trace = kc.Trace.load(trace)
            self._trace = trace
        data = self._trace.to_json(limit=TRACE_EVENT_LIMIT)
        self.events = data["events"]
        self.truncated = data.get("truncated", 0)

    @property
    def trace(self) -> kc.Trace:
        return self._trace

    def filtered(self) -> list[dict]:
        """The events the filter lets through (what the view lists)."""
        f = self.filter or {}
        kind, op_type, scope = f.get("kind"), f.get("op_type"), f.get("scope")
        return [e for e in self.events
                if (not kind or e["kind"] == kind) and (not op_type or e.get("op_type") == op_type)
                and (scope is None or scope == "" or e.get("scope") == scope)]

    def event(self, seq: int) -> dict | None:
        return next((e for e in self.events if e["seq"] == seq), None)

    def _timeline_select(self, content) -> None:
        self.selected_event = int_arg(content, "seq", lo=-1)  # a malformed one: an error back

    def __init__(self, trace, **kw):
        super().__init__(**kw)
        self.update_events(trace)

    update = update_events

    def _messages(self) -> dict:
        return {"select": self._timeline_select}
