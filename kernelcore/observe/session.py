"""A suspended run: moves forward and backward, breakpoints, watchpoints, time travel, provenance.

`sess = kc.debug(program, feed=..., scope=...)` starts a run paused before its first op. The run is the
executor's own generator, suspended between ops (no threads), so a session lives happily in a Jupyter kernel
between cells and behind widget callbacks. Every event goes into the session's Trace; with the default
"references" policy each op's outputs are kept by reference (kernels never mutate a held value), so any earlier state is
rebuilt from the record without running a kernel again.

The session keeps every pause it has passed (a `Pause`: the trace index and the structured `Position`).
Its cursor is one of them: the latest (the present, where the generator waits) or an earlier one (the past,
rebuilt). Forward moves from the past replay the record and, once they reach the present, run on; backward
moves (`back`, `back_timestep`, `reverse_cont`) only move the cursor. A `RecordedRun` (trace + the state
before the first op) is the engine object every rebuilt view comes from; `TimeView` accepts one.
"""
from __future__ import annotations

import bisect
from typing import Any, Callable

from ..errors import KernelcoreError, OpRunError, ProgramError
from ..runtime.executor import ExecContext, Executor
from ..runtime.place import CPUPlace, to_host
from ..ir.program import Program
from ..runtime.scope import Scope, global_scope
from .trace import Trace
from .watch import Watch, WatchHit, make_watch
from .position import Pause, Position, block_run, frame_text, pause_at
from .program_names import check_known, program_names
from .breakpoints import Breakpoint
from .stops import stop_reason
from .provenance import DEFAULT_PROVENANCE_NODES, Origin
from .recorded_run import RecordedRun, TimeView, snapshot_chain
from .forks import Fork, edit_event, new_value, twin_scope

_sessions: list = []       # the sessions started in this process, latest last (weak: see active_session)
session_hooks: list[Callable] = []  # called with each new session (a front end adapter subscribes here)


def active_session():
    """The session started last in this process that is still referenced (None if none)."""
    while _sessions:
        s = _sessions[-1]()
        if s is not None:
            return s
        _sessions.pop()
    return None


class DebugSession:
    """A run suspended before an op, with a cursor over the pauses it has passed. See the module docstring."""

    def __init__(self, program: Program, feed: dict | None = None, fetch_list=None, scope: Scope | None = None,
                 place=None, *, training: bool = False, retain: str = "references", max_bytes: int | None = None,
                 executor: Executor | None = None, begin: int = 0, announce: bool = True):
        """announce: become the active session and tell the session hooks (front ends follow it); a fork's
        twin does not, so whoever followed the edited session stays with it."""
        import weakref
        self.program = program
        # what a fork's twin needs to start the same run again (kernelcore/observe/forks.py)
        self._start = {"feed": feed, "fetch_list": fetch_list, "training": training, "retain": retain,
                       "max_bytes": max_bytes}
        self.forks: list[Fork] = []
        self.scope = scope if scope is not None else global_scope()
        if isinstance(place, Executor):
            executor, place = place, None
        self.executor = executor if executor is not None else Executor(place if place is not None else CPUPlace())
        self.trace = Trace(retain=retain, max_bytes=max_bytes)
        self.breakpoints: list[Breakpoint] = []
        self.watches: list[Watch] = []
        self.hits: list[WatchHit] = []
        self.stop_marks: dict[int, str] = {}  # trace event index -> why a move stopped there (breakpoints, watches)
        self.listeners: list[Callable] = []  # called with the session after every move and breakpoint change
        self.stop_reason = "started"
        self.result: list | None = None
        self.error: KernelcoreError | None = None
        self._ctx: ExecContext | None = None
        self._pauses: list[Pause] = []
        self._cur = 0
        self._view_cache: TimeView | None = None
        self._next_id = 1
        self._moving = False        # a forward move is running (on the thread that drives the session)
        self._pause_asked = False   # set from another thread (request_pause): the move stops at its next op
        self._gen = self.executor.run_iter(program, feed, fetch_list, self.scope, training=training, begin=begin,
                                           pausing=True, observers=[self.trace])
        self._advance()
        # values that existed before the first op (feeds, parameters): the base of time travel
        self.record = RecordedRun(self.trace, snapshot_chain(self.scope), len(self.trace), program, self._pauses)
        self._cur = len(self._pauses) - 1
        if announce:
            _sessions.append(weakref.ref(self))
            for hook in list(session_hooks):
                hook(self)

    # -- where we are -----------------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        """The run has ended (the generator is done), whatever the cursor looks at."""
        return self._gen is None

    @property
    def at_present(self) -> bool:
        return self._cur == len(self._pauses) - 1

    @property
    def position(self) -> Position:
        return self._pauses[self._cur].position

    @property
    def pause_index(self) -> int:
        return self._cur

    @property
    def pauses(self) -> list[Pause]:
        return self._pauses

    @property
    def timestep(self) -> int | None:
        """The timestep of the innermost loop at the cursor."""
        return self.position.timestep

    @property
    def view(self) -> TimeView:
        """The state at the cursor, rebuilt from the record (at the present too; kept until the cursor moves)."""
        k = self._pauses[self._cur].index
        cached = self._view_cache
        if cached is None or cached.index != k or cached.record is not self.record:
            cached = self._view_cache = TimeView(self.record, k)
        return cached

    @property
    def op(self):
        """The prepared op about to run at the present (None when the run ended or the cursor is in the past)."""
        return self._ctx.op if self._ctx is not None and self.at_present else None

    @property
    def events(self):
        return self.trace.events

    def _scope_at(self):
        """The scope the cursor's innermost block runs in: live at the present, rebuilt in the past."""
        inner = self.position.innermost
        if self.at_present:
            if self._ctx is not None:
                return self._ctx.scope
            return self.scope
        view = self.view
        return (view.scope(inner.scope) if inner is not None else None) or view.root

    def value(self, name: str) -> Any:
        """`name`'s value as seen from the cursor's scope, copied to the host only now."""
        v = self._scope_at().find_var(name)
        if v is None:
            raise KernelcoreError(f"no variable {name!r} is visible from {self.position}")
        return to_host(v.value)

    def inputs(self) -> dict[str, Any]:
        """The inputs of the op at the cursor, by variable name."""
        inner = self.position.innermost
        if inner is None or inner.at_end:
            return {}
        if self.at_present and self._ctx is not None:
            names = self._ctx.op.in_names  # the prepared op, or a kernel's own step (the fused rnn's cells)
        else:
            op = self.program.block(inner.block).op(inner.op)
            names = op.input_arg_names
            if op.type != inner.op_type:  # a kernel's own step: the names its op_run recorded
                events = self.trace.events
                start = self._pauses[self._cur].index + 1
                ev = next((e for e in events[start:] if e.kind == "op_run" and e.op_type == inner.op_type
                           and (e.block, e.op) == (inner.block, inner.op)), None)
                names = [n for _, n, _, _ in ev.inputs] if ev is not None else []
        return {n: self.value(n) for n in dict.fromkeys(names)}

    def forest(self):
        from .scope_forest import ScopeForest
        if self.at_present:
            return ScopeForest(self.scope)
        return self.view.forest()

    def to_chrome(self) -> dict:
        """The session's trace in the Trace Event Format (Trace.to_chrome) with its breakpoint stops and every
        watchpoint hit as instant events."""
        marks = [(i, f"stop: {why}") for i, why in sorted(self.stop_marks.items())]
        marks += [(h.event, f"watch #{h.watch} {h.var}: {h.message}") for h in self.hits]
        return self.trace.to_chrome(marks)

    def __repr__(self) -> str:
        return f"<DebugSession at {self.position} ({self.stop_reason})>"

    # -- the live run --------------------------------------------------------------------------------------
    def _advance(self) -> bool:
        """Run to the next pause and record it. False when the run has ended (or failed)."""
        if self._gen is None:
            return False
        try:
            self._ctx = next(self._gen)
            self._pauses.append(pause_at(len(self.trace) - 1, self._ctx))
            return True
        except StopIteration as stop:
            self.result = stop.value
            self._end()
        except OpRunError as e:
            self.error = e
            self._end()
            self._cur = len(self._pauses) - 1
            self.stop_reason = f"error: {e}"
            raise
        return False

    def _end(self) -> None:
        self._gen, self._ctx = None, None
        self._pauses.append(Pause(len(self.trace) - 1, Position(())))

    def notify(self) -> DebugSession:
        """Tell whoever follows the session (the sidebar, the widgets) that its state changed; returns it."""
        if self.listeners:
            for f in list(self.listeners):
                f(self)
        return self

    # -- breakpoints and watches, checked at a pause ---------------------------------------------------
    def _hit(self, i: int) -> str | None:
        """Why pause i stops a move (a breakpoint or a watch), judged from the events that led to it."""
        if i <= 0 or not (self.breakpoints or self.watches):
            return None
        ps = self._pauses
        return stop_reason(self.trace, range(ps[i - 1].index + 1, ps[i].index + 1), ps[i].position.innermost,
                           self.breakpoints, self.watches, self.executor.place.xp, self.record.initial, self.hits)

    # -- moving forward ----------------------------------------------------------------------------------
    @property
    def moving(self) -> bool:
        """A forward move is running now (asked from another thread: a front end serving Pause)."""
        return self._moving

    def request_pause(self) -> bool:
        """Ask the move that is running to stop before its next op, with stop_reason "paused". Meant for another
        thread than the one running the move (only a flag is set; the move reads it between ops). True when a
        move was running to be asked; nothing is remembered for a later move otherwise."""
        if not self._moving:
            return False
        self._pause_asked = True
        return True

    def _forward(self, done: Callable[[Position], bool], reason: str) -> DebugSession:
        self._moving, self._pause_asked = True, False
        try:
            return self._forward_until(done, reason)
        finally:
            self._moving = self._pause_asked = False

    def _forward_until(self, done: Callable[[Position], bool], reason: str) -> DebugSession:
        while True:
            if self._cur + 1 < len(self._pauses):
                self._cur += 1  # replaying the record
            else:
                try:
                    more = self._advance()
                except OpRunError:
                    self.notify()
                    raise
                if not more and self._cur + 1 >= len(self._pauses):
                    self.stop_reason = "finished" if self.error is None else self.stop_reason
                    return self.notify()
                self._cur += 1
            pos = self._pauses[self._cur].position
            hit = self._hit(self._cur) if (self.breakpoints or self.watches) else None
            if hit:
                self.stop_marks[self._pauses[self._cur].index] = hit  # for the exported trace's instants
            if not pos.frames:  # the run ended
                self.stop_reason = (hit + " (then the run finished)") if hit else \
                    ("finished" if self.error is None else f"error: {self.error}")
                return self.notify()
            if hit:
                self.stop_reason = hit
                return self.notify()
            if done(pos):
                self.stop_reason = reason
                return self.notify()
            if self._pause_asked:
                self.stop_reason = "paused"
                return self.notify()

    def step(self) -> DebugSession:
        """Run one op; stop before the next one, inside sub-blocks too (and at a sub-block's end)."""
        return self._forward(lambda p: True, "step")

    def next(self) -> DebugSession:
        """Run one op, sub-blocks included; stop at the next op at this depth or above."""
        d = self.position.depth
        return self._forward(lambda p: p.depth <= d, "next")

    def finish(self) -> DebugSession:
        """Run to the end of this run of the current block, as a debugger's "finish" leaves only its frame: a
        loop's timestep stops at that timestep's end (its results still there), before the next timestep; a
        sub-block at its end. From a block's end (or from a step with no end of its own: a fused rnn op's
        cell), stop at the next pause outside it: the next timestep's first op, or the enclosing block."""
        frames = self.position.frames
        d = len(frames)
        if d == 0:
            return self._forward(lambda p: False, "finish")
        here = block_run(frames[-1])

        def done(p: Position) -> bool:
            if p.depth < d or block_run(p.frames[d - 1]) != here:
                return True  # this block's run is over: the next timestep, or back in the enclosing block
            return p.depth == d and p.frames[-1].at_end
        return self._forward(done, "finish")

    def step_timestep(self) -> DebugSession:
        """Run to the start of the next timestep of the innermost recurrent/while op (from a recurrent op's
        last timestep: to that timestep's end, where its results are live; from there, out of the loop);
        outside any loop, to the first timestep of the next one."""
        frames = self.position.frames
        loop = max((i for i, f in enumerate(frames) if f.timestep is not None), default=None)
        if loop is None:
            return self._forward(lambda p: any(f.timestep is not None for f in p.frames), "timestep")
        scope = frames[loop].scope
        last = self._is_last_timestep(frames, loop)

        def done(p: Position) -> bool:
            if p.depth <= loop:
                return True  # the loop ended: stop at the op after it
            if last and p.depth == loop + 1 and p.innermost.at_end:
                return True  # the last timestep's end: its results, live, before the loop is left
            return p.frames[loop].scope != scope
        return self._forward(done, "timestep")

    def _is_last_timestep(self, frames, loop: int) -> bool:
        """Whether frames[loop] is the last timestep of a recurrent op (known from its sequence's length)."""
        if loop == 0:
            return False
        host = frames[loop - 1]
        try:
            op = self.program.block(host.block).op(host.op)
        except KernelcoreError:
            return False
        if op.type != "recurrent" or not op.input("inputs"):
            return False
        if self.at_present:
            where = next((x for x in self.scope.walk() if x.id == host.scope), None)
        else:
            where = self.view.scope(host.scope)
        v = where.find_var(op.input("inputs")[0]) if where is not None else None
        shape = getattr(getattr(v, "value", None), "shape", None)
        if not shape:
            return False
        return frames[loop].timestep == (0 if op.attr("reverse", False) else int(shape[0]) - 1)

    def cont(self) -> DebugSession:
        """Run to the next breakpoint or watch hit, or the end."""
        return self._forward(lambda p: False, "continue")

    def run_to(self, block: int, op: int, timestep: int | None = None) -> DebugSession:
        """Run to the next pause before op #op of `block` (at `timestep` when given): "run to here"."""
        def done(p: Position) -> bool:
            f = p.innermost
            return f is not None and (f.block, f.op) == (block, op) and (timestep is None or f.timestep == timestep)
        return self._forward(done, f"run to block {block} op #{op}" + (f" t={timestep}" if timestep is not None
                                                                         else ""))

    def run_n(self, n: int) -> DebugSession:
        """`n` steps (stopping early at a breakpoint, a watch hit or the end)."""
        if n < 1:
            raise KernelcoreError(f"run_n needs n >= 1, got {n}")
        left = [n]

        def done(_p):
            left[0] -= 1
            return left[0] <= 0
        return self._forward(done, f"ran {n} steps")

    def run_to_end(self) -> list | None:
        """Finish the run ignoring breakpoints and watches; return what it fetched."""
        saved, savedw = self.breakpoints, self.watches
        self.breakpoints, self.watches = [], []
        try:
            self.cont()
        finally:
            self.breakpoints, self.watches = saved, savedw
        return self.result

    # -- moving backward (the record only: nothing runs) ---------------------------------------------------
    def _to(self, i: int, reason: str) -> DebugSession:
        self._cur = max(0, min(i, len(self._pauses) - 1))
        self.stop_reason = reason
        return self.notify()

    def back(self, steps: int = 1) -> DebugSession:
        """Move the cursor `steps` pauses back (one op each); `sess.view` is the state there."""
        if self._cur - steps < 0:
            return self._to(0, "start of the run")
        return self._to(self._cur - steps, "back")

    def back_timestep(self) -> DebugSession:
        """Move the cursor to the start of the previous timestep of the innermost loop (outside loops: to the
        start of the last timestep of the loop that ran last)."""
        ps = self._pauses
        frames = self.position.frames
        loop = max((i for i, f in enumerate(frames) if f.timestep is not None), default=None)
        if loop is None:  # outside loops: the last timestep of the loop that ran last
            j = next((j for j in range(self._cur - 1, -1, -1) if ps[j].position.timestep is not None), None)
            if j is None:
                return self._to(0, "start of the run")
            fr = ps[j].position.frames
            loop = max(i for i, f in enumerate(fr) if f.timestep is not None)
            target = fr[loop].scope
        else:  # skip the rest of this timestep; the pause before it is in the previous one (or before the loop)
            here = frames[loop].scope
            j = self._cur - 1
            while j >= 0 and ps[j].position.depth > loop and ps[j].position.frames[loop].scope == here:
                j -= 1
            if j < 0 or ps[j].position.depth <= loop:
                return self._to(max(j, 0), "back timestep (no earlier timestep: before the loop)")
            target = ps[j].position.frames[loop].scope
        while j > 0 and ps[j - 1].position.depth > loop and ps[j - 1].position.frames[loop].scope == target:
            j -= 1  # to that timestep's first pause
        return self._to(j, "back timestep")

    def reverse_cont(self) -> DebugSession:
        """Move the cursor back to the previous pause where a breakpoint or watch hits (the previous write of a
        watched variable, ...), or to the start of the run."""
        for j in range(self._cur - 1, 0, -1):
            hit = self._hit(j)
            if hit:
                return self._to(j, f"reverse: {hit}")
        return self._to(0, "start of the run (no earlier hit)")

    def goto_pause(self, i: int) -> DebugSession:
        """Move the cursor to pause `i` (one already passed)."""
        if not 0 <= i < len(self._pauses):
            raise KernelcoreError(f"the session has passed {len(self._pauses)} pauses; there is no pause {i}")
        return self._to(i, f"pause {i}")

    def goto_event(self, k: int) -> DebugSession:
        """Move the cursor to the first pause after trace event `k` (an op_run: right after that op ran)."""
        i = next((i for i, p in enumerate(self._pauses) if p.index >= k), None)
        if i is None:
            raise KernelcoreError(f"no pause follows event {k} yet")
        return self._to(i, f"after {self._event_text(k)} (event {k})")

    def _event_text(self, k: int) -> str:
        """Event k's op as a position is written: the frame of the pause before it when that pause was before
        this op (it knows a fused rnn step's pass), else the event's own fields."""
        ev = self.trace.events[k]
        if ev.kind != "op_run":
            return ev.kind
        j = bisect.bisect_left([p.index for p in self._pauses], k) - 1
        inner = self._pauses[j].position.innermost if j >= 0 else None
        if inner is not None and (inner.block, inner.op, inner.op_type, inner.timestep) == \
                (ev.block, ev.op, ev.op_type, ev.timestep):
            return str(inner)
        return frame_text(ev.block, ev.op, ev.op_type, ev.timestep)

    def present(self) -> DebugSession:
        """Move the cursor back to the present (where the run waits)."""
        return self._to(len(self._pauses) - 1, self.stop_reason)

    # -- breakpoints and watches -----------------------------------------------------------------------------
    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def break_on(self, op_type: str | None = None, *, block: int | None = None, op: int | None = None,
                 write: str | None = None, nan: bool = False) -> Breakpoint:
        """Stop before an op of a type, before op #op of a block, after a write to a variable,
        or after the first op that produces NaN/Inf. Asking for a breakpoint the session has gives that one back
        (enabled)."""
        if sum(x is not None for x in (op_type, write)) + (op is not None) + nan != 1:
            raise ValueError("give exactly one of op_type=, (block=, op=), write= or nan=True")
        if op_type is not None:
            check_known(op_type, self._known()[1], "op type")
        if write is not None:
            check_known(write, self._known()[0], "variable")
        bp = Breakpoint(self._new_id(), op_type, block if op is not None else None, op, write, nan)
        if op is not None and block is None:
            bp.block = 0
        if op is not None:
            self._check_op_exists(bp.block, op)
        for old in self.breakpoints:  # "Break here" twice is one breakpoint: the same one, enabled again
            if (old.op_type, old.block, old.op, old.write, old.nan) == (bp.op_type, bp.block, bp.op, bp.write, bp.nan):
                if not old.enabled:
                    old.enabled = True
                    self.notify()
                return old
        self.breakpoints.append(bp)
        self.notify()
        return bp

    def _check_op_exists(self, block: int, op: int) -> None:
        n = len(self.program.block(block).desc.ops)  # a ProgramError names a missing block
        if not 0 <= op < n:
            raise ProgramError(f"block {block} has {n} ops (#0 to #{n - 1}); there is no op #{op} to break before")

    def remove_breakpoint(self, bid: int) -> None:
        self.breakpoints = [b for b in self.breakpoints if b.id != bid]
        self.watches = [w for w in self.watches if w.id != bid]
        self.notify()

    def clear_breakpoints(self) -> None:
        self.breakpoints = []
        self.notify()

    def watch(self, var: str | None = None, cond: str = "nan", *, op_type: str | None = None,
              lo: float | None = None, hi: float | None = None, bound: float | None = None) -> Watch:
        """A watchpoint on `var` (or on every output of ops of `op_type`); see kernelcore/observe/watch.py."""
        if not self.trace.keep_values:
            raise KernelcoreError(f"watchpoints read the values ops write; this session's trace keeps none "
                                  f"(retain={self.trace.retain!r}): start it with retain='references'")
        w = make_watch(self._new_id(), var, cond, op_type, lo, hi, bound)
        if var is not None:
            check_known(var, self._known()[0], "variable")
        if op_type is not None:
            check_known(op_type, self._known()[1], "op type")
        self.watches.append(w)
        self.notify()
        return w

    # -- interventions --------------------------------------------------------------------------------------
    def set_value(self, name: str, value) -> Fork:
        """Replace `name`'s value where the run waits and go on from there: the run forks (see
        kernelcore/observe/forks.py). The edit is an event of the trace; the returned Fork holds the old and new
        values and, at a block 0 pause, `twin`: a session on the unedited branch, paused before the same op."""
        if not self.at_present or self._ctx is None:
            raise KernelcoreError("set_value edits the run where it waits: move the cursor to the present "
                                  "(sess.present()) of a run that has not finished")
        ctx = self._ctx
        var = ctx.scope.find_var(name)
        if var is None:
            check_known(name, self._known()[0], "variable")
            raise KernelcoreError(f"no variable {name!r} is visible from {self.position}")
        old = var.value
        new = new_value(name, old, value, self.executor.place.xp)
        inner = self.position.innermost
        twin = None
        if self.position.depth == 1 and not inner.at_end:
            twin = DebugSession(self.program, scope=twin_scope(ctx.scope), executor=self.executor, begin=inner.op,
                                announce=False, **self._start)
        var.value = new
        self.trace(edit_event(ctx, var.scope_id, name, new))
        k = len(self.trace) - 1
        self._pauses[self._cur] = Pause(k, self.position)  # the cursor's view shows the edit
        fork = Fork(name, k, self._cur, old, new, twin, self)
        self.forks.append(fork)
        self.stop_marks[k] = f"set {name!r}"
        self.stop_reason = f"set {name!r}" + (" (forked: fork.twin runs on without the edit)" if twin else "")
        self.notify()
        return fork

    # -- time travel and provenance ------------------------------------------------------------------------
    def goto(self, event_index: int) -> TimeView:
        """The scopes and values as they were right after event `event_index` (the cursor does not move)."""
        n = len(self.trace)
        if not -n <= event_index < n:
            raise IndexError(f"the session has {n} events; there is no event {event_index}")
        return TimeView(self.record, event_index % n)

    def provenance(self, name: str, depth: int = 3, max_nodes: int = DEFAULT_PROVENANCE_NODES) -> Origin:
        """Where `name`'s value at the cursor came from (see RecordedRun.provenance)."""
        inner = self.position.innermost
        scope = inner.scope if inner is not None else self.scope.id
        return self.record.provenance(name, scope, self._pauses[self._cur].index, depth, max_nodes)

    def _known(self) -> tuple[set[str], set[str]]:
        """(variable names, op types) a breakpoint, watch or provenance question may name: the program's, and
        what its scope held before the run (kept while the program's version does not change)."""
        version = getattr(self.program, "version", None)
        cached = self.__dict__.get("_known_cache")
        if cached is None or cached[0] != version:
            names, op_types = program_names(self.program)
            for _, _, values in self.record.initial:
                names.update(values)
            cached = self._known_cache = (version, names, op_types)
        return cached[1], cached[2]


def debug(*args, **kw) -> DebugSession:
    """Start a program paused before its first op: `kc.debug(program, feed=..., fetch_list=..., scope=...)`.
    See DebugSession. `kc.debug(exe, program, feed=...)` (as `exe.run(program, feed=...)`), `place=exe` or
    `executor=exe` run it on that Executor."""
    if args and isinstance(args[0], Executor):
        kw["executor"] = args[0]
        args = args[1:]
    return DebugSession(*args, **kw)
