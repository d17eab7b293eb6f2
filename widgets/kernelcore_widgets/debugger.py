"""Debugger: a DebugSession's graph, scope forest, RNN timesteps and trace, with step controls.

A composite widget: it owns a ProgramGraph, a ScopeForest, an RNNStepper (a program with a recurrent op) and
a TraceTimeline as child widgets (`graph`, `forest`, `stepper`, `timeline`), each with its own model and
messages, and adds `position`, `frames`, `stop_reason`, `finished`, `time_travel`, `breakpoints` and the
step commands. The view (labextension/src/views/Debugger.ts) draws the children's views from their models.
"""
from __future__ import annotations

import re
import weakref

import traitlets as t

import kernelcore as kc
from kernelcore.ir.node_ids import op_id

from ipywidgets import widget_serialization

from ._base import STATIC, KCWidget
from .contract.commands import BY_NAME, MOVE_NAMES
from .dispatch import run_command
from .pause_route import serve_pause_beside
from .program_graph import ProgramGraph
from .requests import brief
from .rnn_stepper import STEPPED, RNNStepper
from .scope_forest import ScopeForest
from .trace_timeline import TraceTimeline

_active: weakref.ref | None = None
COMMANDS = MOVE_NAMES  # the step controls: the moves of the command table (contract/commands.py)


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


class Debugger(KCWidget):
    """`Debugger(session)`: a kc.DebugSession (`kc.debug(program, feed=..., scope=...)`).

    A thin view over the session: every command is a session move (a message `{"type": <move>}` for each
    move of contract/commands.py, or Python `dbg.step()`, `dbg.next()`, ...), and the child views follow the
    session's cursor, whoever moved it (the sidebar, Python code): the widget listens to the session. In the
    past (after "back") the graph, forest and timesteps show the state rebuilt from the record; forward moves
    replay the record and then run on. The children answer their own messages: the graph's `select` and
    `debug` actions (Break here, Run to here, Break on write, Watch: graph_debug.py, on this widget's own
    session), the forest's `open`, the stepper's `goto` / `next` / `prev`, the timeline's `select` (which
    selects the event's op in the graph). `breakpoints` lists the session's breakpoints and watches."""

    _esm = STATIC / "Debugger.js"
    _css = STATIC / "Debugger.css"

    graph = t.Instance(ProgramGraph).tag(sync=True, ts="string", **widget_serialization)
    forest = t.Instance(ScopeForest).tag(sync=True, ts="string", **widget_serialization)
    stepper = t.Instance(RNNStepper, allow_none=True).tag(sync=True, ts="string | null", **widget_serialization)
    timeline = t.Instance(TraceTimeline).tag(sync=True, ts="string", **widget_serialization)
    position = t.Unicode("").tag(sync=True)       # for display only: str(session.position)
    frames = t.List().tag(sync=True, ts="Frame[]")  # the cursor as frames, outermost first
    stop_reason = t.Unicode("").tag(sync=True)
    finished = t.Bool(False).tag(sync=True)       # the run has ended
    busy = t.Bool(False).tag(sync=True)           # a move runs now: the view disables the moves and offers Pause
    time_travel = t.Int(-1).tag(sync=True)        # the pause shown when the cursor is in the past; -1: the present
    # the session's breakpoints and watches
    breakpoints = t.List().tag(sync=True, ts="Array<{ id: number; kind: string; text: string; enabled: boolean }>")

    def __init__(self, session, **kw):
        if not isinstance(session, kc.DebugSession):
            raise TypeError(f"Debugger takes a kc.DebugSession (kc.debug(program, ...)), got {type(session).__name__}")
        has_rnn = any(op.type in STEPPED for op in session.program.all_ops())
        graph = ProgramGraph(session.program, scope=session.scope, session=session)
        graph._debug_idle_text = ("this debugger's session: breakpoints added here show below (and in the "
                                  "sidebar when it drives the same session)")
        super().__init__(graph=graph, forest=ScopeForest(session.forest()), timeline=TraceTimeline(session.trace),
                         stepper=RNNStepper(session) if has_rnn else None, **kw)
        self.session = session
        me = weakref.ref(self)
        graph.details_scope = lambda node_id, me=me: details_scope(me().session, node_id)
        graph._say_debug()
        self.timeline.observe(lambda change, me=me: me()._on_event_selected(change), "selected_event")
        self.follow_moves(session, "refresh")
        serve_pause_beside(getattr(self, "comm", None))
        self.refresh()
        _set_active(self)

    def _repr_mimebundle_(self, **kw):
        _set_active(self)
        return super()._repr_mimebundle_(**kw)

    def close(self) -> None:
        """Close the child widgets with it (they exist only as its parts) and stop following the session."""
        for child in (self.graph, self.forest, self.stepper, self.timeline):
            if child is not None:
                child.close()
        super().close()

    def __repr__(self) -> str:
        return f"<Debugger at {self.position} ({self.stop_reason})>"

    # -- the views ------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Show where the session's cursor stands (the stepper follows the session itself)."""
        s = self.session
        self.time_travel = -1 if s.at_present else s.pause_index
        self.position = str(s.position)
        self.frames = s.position.to_json()
        self.forest.update_forest(s.forest())
        # the graph selects the cursor's op when the cursor moved; a breakpoint added or toggled leaves the
        # person's selection (and the note about what they just did there) alone
        cursor = (s.pause_index, s.stop_reason)
        moved = cursor != getattr(self, "_shown_cursor", None)
        self._shown_cursor = cursor
        self.graph.point_at(s._scope_at(), self._cursor_op() if moved else None)
        self.stop_reason = s.stop_reason
        self.finished = s.finished
        self.breakpoints = [{"id": b.id, "kind": b.kind, "text": str(b), "enabled": b.enabled}
                            for b in s.breakpoints] + [{"id": w.id, "kind": "watch", "text": str(w),
                                                        "enabled": w.enabled} for w in s.watches]
        self.timeline.update_events()

    def _cursor_op(self) -> str | None:
        """The op id the cursor is at (at a sub-block's end: the op that runs the block)."""
        for f in reversed(self.session.position.frames):
            if not f.at_end:
                return op_id(f.block, f.op)
        return None

    def _on_event_selected(self, change) -> None:
        ev = self.timeline.event(change["new"])
        if ev is not None and ev.get("op") is not None and ev.get("block") is not None:
            self.graph.select(op_id(ev["block"], ev["op"]))

    # -- commands -------------------------------------------------------------------------------------
    def _run(self, command: str) -> Stop:
        s = self.session
        self.busy = True  # synced at once: the view shows "running…" and Pause while the move runs
        try:
            run_command(s, command, run_errors_in_state=False)  # the session tells its listeners: we refresh
        except kc.KernelcoreError as e:  # the run failed: the session has ended and says why
            self.refresh()
            self.stop_reason = f"error: {e}"
        finally:
            self.busy = False
        return Stop(self.position, self.stop_reason, self.finished, list(self.frames))

    def command(self, name: str) -> Stop:
        """Run one command by name."""
        if name not in COMMANDS:
            raise ValueError(f"unknown debugger command {name!r}; expected one of {list(COMMANDS)}")
        return self._run(name)

    # -- messages -------------------------------------------------------------------------------------
    def pause(self) -> bool:
        """Ask the move that is running (from another thread: the view's Pause) to stop before its next op;
        False when none runs."""
        return self.session.request_pause()

    def _messages(self) -> dict:
        moves = {name: (lambda _c, name=name: self._run(name)) for name in COMMANDS}
        return {**moves, "pause": self._pause_message}

    def _pause_message(self, _content) -> None:
        """Served on the comm's subshell while a move runs (pause_route.py): it sets the session's flag and
        nothing else; the move, when it stops, updates the traits."""
        if not self.pause():
            self._send_error("pause", "no move is running: nothing to pause")

    def _unknown_message(self, content) -> None:
        self.stop_reason = f"unknown message {brief(content)}"


def details_scope(s, node_id: str):
    """The scope whose values the details of `node_id` show: the cursor's frame in that node's block, else
    the step scope the op (or, for a var, its block) last ran in, rebuilt; else the run's scope."""
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


def _move_method(name: str):
    def move(self) -> Stop:
        return self._run(name)
    move.__name__ = move.__qualname__ = name
    move.__doc__ = f"{BY_NAME[name].doc[:1].upper()}{BY_NAME[name].doc[1:]}."
    return move


for _name in MOVE_NAMES:  # dbg.step(), dbg.next(), ...: one method per move of the table
    setattr(Debugger, _name, _move_method(_name))
