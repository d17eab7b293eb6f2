"""Debugger: a DebugSession's graph, scope forest, RNN timesteps and trace, with step controls.

One widget model carries the traits of all four views (docs/frontend-contract.md, "Debugger is one model"):
the Debugger is a ProgramGraph, a ScopeForest, an RNNStepper and a TraceTimeline at once (their *State
mixins), plus `position`, `stop_reason`, `finished` and the step commands.
"""
from __future__ import annotations

import weakref

import traitlets as t

import kernelcore as kc
from kernelcore.display import op_id

from ._base import STATIC, KCWidget
from .program_graph import GraphState
from .rnn_stepper import STEPPED, StepperState
from .scope_forest import ForestState
from .trace_timeline import TimelineState

_active: weakref.ref | None = None
COMMANDS = ("step", "next", "finish", "step_timestep", "cont", "back")


def active_debugger() -> Debugger:
    """The Debugger created or displayed last: JupyterLab's kernelcore sidebar runs
    `active_debugger().step()` (`.next()`, `.cont()`) in the notebook's kernel."""
    d = _active() if _active is not None else None
    if d is None:
        raise LookupError("no kernelcore Debugger in this kernel yet: show one with "
                          "`Debugger(kc.debug(program, feed=..., scope=...))`")
    return d


def _set_active(d: Debugger) -> None:
    global _active
    _active = weakref.ref(d)


class Stop:
    """Where a command left the session; its repr is what the sidebar shows."""

    __slots__ = ("position", "stop_reason", "finished")

    def __init__(self, position: str, stop_reason: str, finished: bool):
        self.position, self.stop_reason, self.finished = position, stop_reason, finished

    def __repr__(self) -> str:
        return f"{self.position} ({self.stop_reason})"


class Debugger(GraphState, ForestState, StepperState, TimelineState, KCWidget):
    """`Debugger(session)`: a kc.DebugSession (`kc.debug(program, feed=..., scope=...)`).

    Commands, from the buttons (messages `{"type": "step" | "next" | "finish" | "step_timestep" | "cont" |
    "back"}`), the sidebar, or Python (`dbg.step()`): each moves the session and refreshes the views.
    "back" travels back one op through the trace without running anything; "step" from the past steps
    forward through the record, and any other command returns to the present and runs the session.
    The views' own messages work here too: `select` (with "id": the graph; with "seq": the timeline),
    `open` (the forest), `goto` and `prev` (the timesteps; the RNN panel's "next" is the button "Step t")."""

    _esm = STATIC / "Debugger.js"
    _css = STATIC / "Debugger.css"

    position = t.Unicode("").tag(sync=True)
    stop_reason = t.Unicode("").tag(sync=True)
    finished = t.Bool(False).tag(sync=True)
    time_travel = t.Int(-1).tag(sync=True)  # the event shown when looking at the past; -1: the present

    def __init__(self, session, **kw):
        if not isinstance(session, kc.DebugSession):
            raise TypeError(f"Debugger takes a kc.DebugSession (kc.debug(program, ...)), got {type(session).__name__}")
        super().__init__(**kw)
        self.session = session
        self._view: kc.TimeView | None = None
        self._init_graph(session.program, scope=session.scope)
        self.update_forest(session.forest())
        self.update_events(session.trace)
        self._has_rnn = any(op.type in STEPPED for op in session.program.all_ops())
        if self._has_rnn:
            self._init_stepper(session)
        self.observe(self._on_event_selected, "selected_event")
        self.refresh()
        _set_active(self)

    def _repr_mimebundle_(self, **kw):
        _set_active(self)
        return super()._repr_mimebundle_(**kw)

    def __repr__(self) -> str:
        return f"<Debugger at {self.position} ({self.stop_reason})>"

    # -- the views ------------------------------------------------------------------------------------
    @staticmethod
    def _scope_by_id(root, scope_id):
        return next((s for s in root.walk() if s.id == scope_id), None) if root is not None else None

    def refresh(self) -> None:
        """Show where the session (or the time-travel view) stands."""
        self._refresh_session_views()
        if self._has_rnn:
            self.refresh_steps()

    def _refresh_session_views(self) -> None:
        s = self.session
        if self._view is not None:
            v = self._view
            self.time_travel = v.index
            events = s.trace.events
            nxt = next((events[i] for i in range(v.index + 1, len(events)) if events[i].kind == "op_run"), None)
            if nxt is not None:  # shown as a live pause is: before the op that ran next
                t_ = f" t={nxt.timestep}" if nxt.timestep is not None else ""
                self.position = (f"before block {nxt.block} op #{nxt.op} {nxt.op_type}{t_} "
                                 f"(time travel: event {v.index})")
                self.point_at(self._scope_by_id(v.root, nxt.scope) or v.root, op_id(nxt.block, nxt.op))
            else:
                self.position = f"after the last op (time travel: event {v.index})"
                self.point_at(v.root)
            self.update_forest(v.forest())
        else:
            self.time_travel = -1
            self.position = str(s.position)
            self.update_forest(s.forest())
            inner = s.position.innermost
            here = (self._scope_by_id(s.scope, inner.scope) if inner is not None else None) or s.scope
            self.point_at(here, op_id(inner.block, inner.op) if inner is not None else None)
        self.stop_reason = s.stop_reason
        self.finished = s.finished
        self.update_events()

    def _on_event_selected(self, change) -> None:
        ev = self.event(change["new"])
        if ev is not None and ev.get("op") is not None and ev.get("block") is not None:
            self.select(op_id(ev["block"], ev["op"]))

    # -- commands -------------------------------------------------------------------------------------
    def _run(self, command: str) -> Stop:
        s = self.session
        error = None
        try:
            if command == "back":
                self._view = s.back(1, view=self._view)
            elif self._view is not None and command == "step":
                self._view = self._forward(self._view)
            else:
                self._view = None
                if not s.finished:
                    getattr(s, command)()
        except kc.KernelcoreError as e:  # the run failed: the session has ended and says why
            self._view, error = None, f"error: {e}"
        self.refresh()
        if error is not None:
            self.stop_reason = error
        return Stop(self.position, self.stop_reason, self.finished)

    def _forward(self, view: kc.TimeView) -> kc.TimeView | None:
        """The view one op later than `view`, or None (the present) past the last recorded op."""
        events = self.session.trace.events
        nxt = next((i for i in range(view.index + 1, len(events)) if events[i].kind == "op_run"), None)
        later = nxt is not None and any(e.kind == "op_run" for e in events[nxt + 1:])
        return self.session.goto(nxt) if later else None

    def step(self) -> Stop:
        return self._run("step")

    def next(self) -> Stop:
        return self._run("next")

    def finish(self) -> Stop:
        return self._run("finish")

    def step_timestep(self) -> Stop:
        return self._run("step_timestep")

    def cont(self) -> Stop:
        return self._run("cont")

    def back(self) -> Stop:
        return self._run("back")

    def command(self, name: str) -> Stop:
        """Run one command by name."""
        if name not in COMMANDS:
            raise ValueError(f"unknown debugger command {name!r}; expected one of {list(COMMANDS)}")
        return self._run(name)

    # -- messages -------------------------------------------------------------------------------------
    def _messages(self) -> dict:
        table = {name: (lambda _c, name=name: self._run(name)) for name in COMMANDS}
        table["select"] = lambda c: (self._timeline_select(c) if "seq" in c else self._graph_select(c))
        table["open"] = self._forest_open
        if self._has_rnn:  # a goto may run the session forward: the other views follow, the timestep stays
            table["goto"] = lambda c: (self._stepper_goto(c), self._refresh_session_views())
            table["prev"] = self._stepper_prev
        return table

    def _unknown_message(self, content) -> None:
        self.stop_reason = f"unknown message {str(content)[:80]}"
