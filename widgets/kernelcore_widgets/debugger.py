"""Debugger: a DebugSession's graph, scope forest, RNN timesteps and trace, with step controls.

One widget model carries the traits of all four views (docs/frontend-contract.md, "Debugger is one model"):
the Debugger is a ProgramGraph, a ScopeForest, an RNNStepper and a TraceTimeline at once (their *State
mixins), plus `position`, `stop_reason`, `finished` and the step commands.
"""
from __future__ import annotations

import re
import weakref

import traitlets as t

import kernelcore as kc
from kernelcore.ir.node_ids import op_id

from ._base import STATIC, KCWidget
from .contract.commands import BY_NAME, MOVE_NAMES
from .dispatch import run_command
from .graph_debug import DebugActionsState
from .program_graph import GraphState
from .requests import brief
from .rnn_stepper import STEPPED, StepperState
from .scope_forest import ForestState
from .trace_timeline import TimelineState

_active: weakref.ref | None = None
COMMANDS = MOVE_NAMES  # the step controls: the moves of the command table (contract/commands.py)


def _moves_session(data) -> bool:
    """An ipywidgets custom message that moves the session (a step command, a timestep goto / prev)."""
    content = data.get("content") if isinstance(data, dict) else None
    return isinstance(content, dict) and content.get("type") in (*COMMANDS, "goto", "prev")


def active_debugger() -> Debugger:
    """The Debugger created or displayed last (for Python callers; the sidebar talks to the session through
    the `kernelcore.debugger` comm, see kernelcore_widgets.comm)."""
    d = _active() if _active is not None else None
    if d is None:
        raise LookupError("no kernelcore Debugger in this kernel yet: show one with "
                          "`Debugger(kc.debug(program, feed=..., scope=...))`")
    return d


def _set_active(d: Debugger) -> None:
    global _active
    _active = weakref.ref(d)


class Stop:
    """Where a command left the session; its repr is what a caller shows."""

    __slots__ = ("position", "stop_reason", "finished", "frames")

    def __init__(self, position: str, stop_reason: str, finished: bool, frames: list | None = None):
        self.position, self.stop_reason, self.finished = position, stop_reason, finished
        self.frames = frames or []

    def __repr__(self) -> str:
        return f"{self.position} ({self.stop_reason})"


class Debugger(GraphState, DebugActionsState, ForestState, StepperState, TimelineState, KCWidget):
    """`Debugger(session)`: a kc.DebugSession (`kc.debug(program, feed=..., scope=...)`).

    A thin view over the session: every command is a session move (a message `{"type": <move>}` for each
    move of contract/commands.py, or Python `dbg.step()`, `dbg.next()`, ...), and the views follow the session's cursor, whoever moved it (the sidebar, Python code):
    the widget listens to the session. In the past (after "back") the graph, forest and timesteps show the
    state rebuilt from the record; forward moves replay the record and then run on.
    The views' own messages work here too: `select` (with "id": the graph; with "seq": the timeline),
    `open` (the forest), `goto` and `prev` (the timesteps; the RNN panel's "next" is the button "Step t"),
    and the graph's `debug` actions (Break here, Run to here, Break on write, Watch: graph_debug.py), which act
    on this widget's own session; `breakpoints` lists the session's breakpoints and watches."""

    _esm = STATIC / "Debugger.js"
    _css = STATIC / "Debugger.css"

    position = t.Unicode("").tag(sync=True)       # for display only: str(session.position)
    frames = t.List().tag(sync=True, ts="Frame[]")  # the cursor as frames, outermost first
    stop_reason = t.Unicode("").tag(sync=True)
    finished = t.Bool(False).tag(sync=True)       # the run has ended
    time_travel = t.Int(-1).tag(sync=True)        # the pause shown when the cursor is in the past; -1: the present
    # the session's breakpoints and watches
    breakpoints = t.List().tag(sync=True, ts="Array<{ id: number; kind: string; text: string; enabled: boolean }>")

    def __init__(self, session, **kw):
        if not isinstance(session, kc.DebugSession):
            raise TypeError(f"Debugger takes a kc.DebugSession (kc.debug(program, ...)), got {type(session).__name__}")
        super().__init__(**kw)
        self.session = session
        self._init_graph(session.program, scope=session.scope)
        self.update_forest(session.forest())
        self.update_events(session.trace)
        self._has_rnn = any(op.type in STEPPED for op in session.program.all_ops())
        if self._has_rnn:
            self._init_stepper(session)
        self.observe(self._on_event_selected, "selected_event")
        me = weakref.ref(self)

        def follow(_sess, me=me):
            d = me()
            if d is not None:
                d.refresh()
        self._follow = follow
        session.listeners.append(follow)
        self._debug_idle_text = ("this debugger's session: breakpoints added here show below (and in the sidebar "
                                 "when it drives the same session)")
        # the step commands (and the timesteps' goto / prev) move the session too: the main shell runs them
        self._init_debug_actions(lambda: self.session, drives=_moves_session)
        self.refresh()
        _set_active(self)

    def _repr_mimebundle_(self, **kw):
        _set_active(self)
        return super()._repr_mimebundle_(**kw)

    def __repr__(self) -> str:
        return f"<Debugger at {self.position} ({self.stop_reason})>"

    # -- the views ------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Show where the session's cursor stands."""
        self._refresh_session_views()
        if self._has_rnn:
            self.refresh_steps()

    def _cursor_op(self) -> str | None:
        """The op id the cursor is at (at a sub-block's end: the op that runs the block)."""
        frames = self.session.position.frames
        for f in reversed(frames):
            if not f.at_end:
                return op_id(f.block, f.op)
        return None

    def _refresh_session_views(self) -> None:
        s = self.session
        self.time_travel = -1 if s.at_present else s.pause_index
        self.position = str(s.position)
        self.frames = s.position.to_json()
        self.update_forest(s.forest())
        node = self._cursor_op()
        self.point_at(s._scope_at(), node)
        self.stop_reason = s.stop_reason
        self.finished = s.finished
        self.breakpoints = [{"id": b.id, "kind": b.kind, "text": str(b), "enabled": b.enabled}
                            for b in s.breakpoints] + [{"id": w.id, "kind": "watch", "text": str(w),
                                                        "enabled": w.enabled} for w in s.watches]
        self.update_events()

    def _details_scope(self, node_id: str):
        """The scope whose values the details of `node_id` show: the cursor's frame in that node's block, else
        the step scope the op (or, for a var, its block) last ran in, rebuilt; else the run's scope."""
        s = self.session
        m = re.match(r"[ov](\d+):(.*)\Z", node_id or "")
        if m is None:
            return s._scope_at()
        block = int(m.group(1))
        frames = s.position.frames
        here = next((f for f in reversed(frames) if f.block == block), None)
        if here is not None:
            return s._scope_at() if here is frames[-1] else (
                next((x for x in s.scope.walk() if x.id == here.scope), None) if s.at_present
                else s.view.scope(here.scope)) or s._scope_at()
        if block == 0:
            return s._scope_at()
        rec, upto = s.record, s.pauses[s.pause_index].index
        if node_id.startswith("o"):
            k = rec.last_run_of(block, int(m.group(2)), upto)
        else:
            k = next((i for i in range(upto, -1, -1) if rec.events[i].kind == "op_run"
                      and rec.events[i].block == block), None)
        if k is None:
            return s._scope_at()
        return rec.view(k).scope(rec.events[k].scope) or s._scope_at()

    def _refresh_details(self) -> None:
        if getattr(self, "session", None) is not None and self.selected:
            self._scope = self._details_scope(self.selected)
        super()._refresh_details()

    def _on_event_selected(self, change) -> None:
        ev = self.event(change["new"])
        if ev is not None and ev.get("op") is not None and ev.get("block") is not None:
            self.select(op_id(ev["block"], ev["op"]))

    # -- commands -------------------------------------------------------------------------------------
    def _run(self, command: str) -> Stop:
        s = self.session
        try:
            run_command(s, command, run_errors_in_state=False)  # the session tells its listeners: we refresh
        except kc.KernelcoreError as e:  # the run failed: the session has ended and says why
            self.refresh()
            self.stop_reason = f"error: {e}"
        return Stop(self.position, self.stop_reason, self.finished, list(self.frames))

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
        table["contents"] = table["search"] = self._graph_parts  # a big program's groups, fetched as opened
        table["debug"] = self._debug_action
        if self._has_rnn:  # a goto may run the session forward: the other views follow
            table["goto"] = self._stepper_goto
            table["prev"] = self._stepper_prev
        return table

    def _unknown_message(self, content) -> None:
        self.stop_reason = f"unknown message {brief(content)}"


def _move_method(name: str):
    def move(self) -> Stop:
        return self._run(name)
    move.__name__ = move.__qualname__ = name
    move.__doc__ = f"{BY_NAME[name].doc[:1].upper()}{BY_NAME[name].doc[1:]}."
    return move


for _name in MOVE_NAMES:  # dbg.step(), dbg.next(), ...: one method per move of the table
    setattr(Debugger, _name, _move_method(_name))
