"""A suspended run: step, next, finish, step-timestep, continue, breakpoints, time travel.

`sess = kc.debug(program, feed=..., scope=...)` starts a run paused before its
first op. The run is the executor's own generator, suspended between ops (no
threads), so a session lives happily in a Jupyter kernel between cells and
behind widget callbacks. Every event goes into the session's Trace; with the
default "references" policy each op's outputs are kept by reference (kernels
never mutate), so `goto(k)` rebuilds the scopes and values as they were at
event k without running a kernel again.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import KernelcoreError, OpRunError
from .executor import ExecContext, Executor
from .place import CPUPlace, to_host
from .program import Program
from .scope import Scope, global_scope
from .trace import Trace
from .values import nonfinite


@dataclass(frozen=True)
class Frame:
    """One level of the block/op stack: the op about to run (or running) in a block."""
    block: int
    op: int
    op_type: str
    timestep: int | None  # the timestep this block runs for (None outside loops)
    scope: int

    def __str__(self) -> str:
        t = f" t={self.timestep}" if self.timestep is not None else ""
        return f"block {self.block} op #{self.op} {self.op_type}{t}"


@dataclass(frozen=True)
class Position:
    frames: tuple[Frame, ...]  # outermost first; empty when the run has finished

    @property
    def depth(self) -> int:
        return len(self.frames)

    @property
    def innermost(self) -> Frame | None:
        return self.frames[-1] if self.frames else None

    def __str__(self) -> str:
        return " > ".join(map(str, self.frames)) if self.frames else "finished"


def _position(ctx: ExecContext | None) -> Position:
    frames = []
    while ctx is not None:
        op = ctx.op
        frames.append(Frame(ctx.block, op.idx, op.type, ctx.timestep, ctx.scope.id))
        ctx = ctx.parent
    return Position(tuple(reversed(frames)))


@dataclass
class Breakpoint:
    id: int
    op_type: str | None = None
    block: int | None = None
    op: int | None = None
    write: str | None = None
    nan: bool = False
    enabled: bool = True

    def __str__(self) -> str:
        if self.nan:
            return f"#{self.id} first NaN/Inf"
        if self.write is not None:
            return f"#{self.id} write to {self.write!r}"
        if self.op_type is not None:
            return f"#{self.id} op type {self.op_type!r}"
        return f"#{self.id} block {self.block} op #{self.op}"


class DebugSession:
    """A run suspended before an op. See the module docstring."""

    def __init__(self, program: Program, feed: dict | None = None, fetch_list=None, scope: Scope | None = None,
                 place=None, *, training: bool = False, retain: str = "references", max_bytes: int | None = None):
        self.program = program
        self.scope = scope if scope is not None else global_scope()
        self.executor = Executor(place if place is not None else CPUPlace())
        self.trace = Trace(retain=retain, max_bytes=max_bytes)
        self.breakpoints: list[Breakpoint] = []
        self.stop_reason = "started"
        self.result: list | None = None
        self.error: KernelcoreError | None = None
        self._ctx: ExecContext | None = None
        self._seen = 0  # events already checked for write/NaN breakpoints
        self._gen = self.executor.run_iter(program, feed, fetch_list, self.scope, training=training,
                                           pausing=True, observers=[self.trace])
        self._advance()
        # values that existed before the first op (feeds, parameters): the base of time travel
        self._initial = _snapshot_chain(self.scope)
        self._initial_events = len(self.trace)

    # -- where we are ---------------------------------------------------------
    @property
    def finished(self) -> bool:
        return self._gen is None

    @property
    def position(self) -> Position:
        return _position(self._ctx)

    @property
    def op(self):
        """The prepared op about to run (None when finished)."""
        return self._ctx.op if self._ctx is not None else None

    @property
    def events(self):
        return self.trace.events

    def value(self, name: str) -> Any:
        """`name`'s value as seen from the paused op's scope, copied to the host only now."""
        s = self._ctx.scope if self._ctx is not None else self.scope
        v = s.find_var(name)
        if v is None:
            raise KernelcoreError(f"no variable {name!r} is visible from {self.position}")
        return to_host(v.value)

    def inputs(self) -> dict[str, Any]:
        """The paused op's inputs, by variable name."""
        if self._ctx is None:
            return {}
        return {n: self.value(n) for n in self._ctx.op.in_names}

    def forest(self):
        from .scope_forest import ScopeForest
        return ScopeForest(self.scope)

    def __repr__(self) -> str:
        return f"<DebugSession at {self.position} ({self.stop_reason})>"

    # -- moving -----------------------------------------------------------------
    def _advance(self) -> bool:
        """Run to the next pause. False when the run has ended (or failed)."""
        if self._gen is None:
            return False
        try:
            self._ctx = next(self._gen)
            return True
        except StopIteration as stop:
            self.result = stop.value
            self._end("finished")
        except OpRunError as e:
            self.error = e
            self._end(f"error: {e}")
            raise
        return False

    def _end(self, reason: str) -> None:
        self._gen, self._ctx = None, None
        self.stop_reason = reason

    def _run_until(self, done, reason: str) -> DebugSession:
        while self._advance():
            hit = self._check_breakpoints()
            if hit:
                self.stop_reason = hit
                return self
            if done(self.position):
                self.stop_reason = reason
                return self
        hit = self._check_breakpoints()  # a write or NaN by the last op
        if hit and self.error is None:
            self.stop_reason = hit + " (then the run finished)"
        return self

    def step(self) -> DebugSession:
        """Run one op; stop before the next one, inside sub-blocks too."""
        return self._run_until(lambda p: True, "step")

    def next(self) -> DebugSession:
        """Run one op, sub-blocks included; stop at the next op at this depth or above."""
        d = self.position.depth
        return self._run_until(lambda p: p.depth <= d, "next")

    def finish(self) -> DebugSession:
        """Run to the end of the current sub-block; stop at the next op of the enclosing block."""
        d = self.position.depth
        return self._run_until(lambda p: p.depth < d, "finish")

    def step_timestep(self) -> DebugSession:
        """Run to the start of the next timestep of the innermost recurrent/while op
        (or, outside any loop, to the first timestep of the next one)."""
        frames = self.position.frames
        loop = max((i for i, f in enumerate(frames) if f.timestep is not None), default=None)
        if loop is None:
            return self._run_until(lambda p: any(f.timestep is not None for f in p.frames), "timestep")
        t, scope = frames[loop].timestep, frames[loop].scope

        def done(p: Position) -> bool:
            if p.depth <= loop:
                return True  # the loop ended: stop at the op after it
            f = p.frames[loop]
            return f.scope != scope or f.timestep != t  # a new step scope: a bidirectional rnn runs t twice
        return self._run_until(done, "timestep")

    def cont(self) -> DebugSession:
        """Run to the next breakpoint or the end."""
        return self._run_until(lambda p: False, "continue")

    def run_to_end(self) -> list | None:
        """Finish the run ignoring breakpoints; return what it fetched."""
        saved = self.breakpoints
        self.breakpoints = []
        try:
            self.cont()
        finally:
            self.breakpoints = saved
        return self.result

    # -- breakpoints --------------------------------------------------------------
    def break_on(self, op_type: str | None = None, *, block: int | None = None, op: int | None = None,
                 write: str | None = None, nan: bool = False) -> Breakpoint:
        """Stop before an op of a type, before op #op of a block, after a write to a variable,
        or after the first op that produces NaN/Inf."""
        if sum(x is not None for x in (op_type, write)) + (op is not None) + nan != 1:
            raise ValueError("give exactly one of op_type=, (block=, op=), write= or nan=True")
        bp = Breakpoint(len(self.breakpoints) + 1, op_type, block if op is not None else None, op, write, nan)
        if op is not None and block is None:
            bp.block = 0
        self.breakpoints.append(bp)
        return bp

    def clear_breakpoints(self) -> None:
        self.breakpoints = []

    def _check_breakpoints(self) -> str | None:
        new = self.trace.events[self._seen:]
        self._seen = len(self.trace)
        live = [b for b in self.breakpoints if b.enabled]
        for ev in new:
            if ev.kind != "op_run":
                continue
            for b in live:
                if b.write is not None and any(name == b.write for _, name, _, _ in ev.outputs):
                    return f"breakpoint {b}: written by op {ev.op_type!r} (block {ev.block}, op #{ev.op})" + \
                        (f" at timestep {ev.timestep}" if ev.timestep is not None else "")
                if b.nan and _has_non_finite(ev, self):
                    return f"breakpoint {b}: {_non_finite_text(ev, self)}"
        op = self.op
        if op is not None:
            for b in live:
                if b.op_type is not None and op.type == b.op_type:
                    return f"breakpoint {b}"
                if b.op is not None and (op.block, op.idx) == (b.block, b.op):
                    return f"breakpoint {b}"
        return None

    # -- time travel ----------------------------------------------------------------
    def goto(self, event_index: int) -> TimeView:
        """The scopes and values as they were right after event `event_index`."""
        n = len(self.trace)
        if not -n <= event_index < n:
            raise IndexError(f"the session has {n} events; there is no event {event_index}")
        return TimeView(self, event_index % n)

    def back(self, steps: int = 1, view: TimeView | None = None) -> TimeView:
        """The state `steps` ops before the current position (or before `view`)."""
        events = self.trace.events
        k = view.index if view is not None else len(events) - 1
        op_runs = [i for i, e in enumerate(events[:k + 1]) if e.kind == "op_run"]
        if len(op_runs) < steps:
            return TimeView(self, self._initial_events - 1)
        return TimeView(self, op_runs[-steps] - 1)


def _has_non_finite(ev, sess) -> bool:
    xp = sess.executor.place.xp
    return any(nonfinite(xp, value) for _, value in ev.values or ())


def _non_finite_text(ev, sess) -> str:
    xp = sess.executor.place.xp
    bad = [name for name, v in ev.values or () if nonfinite(xp, v)]
    where = f"op {ev.op_type!r} (block {ev.block}, op #{ev.op})"
    if ev.timestep is not None:
        where += f" at timestep {ev.timestep}"
    ins = ", ".join(f"{slot}={name}{list(shape) if shape is not None else ''}" for slot, name, shape, _ in ev.inputs)
    return f"{where} wrote NaN/Inf to {', '.join(map(repr, bad))}; its inputs: {ins}"


def _snapshot_chain(scope: Scope) -> list[tuple[int, dict, dict]]:
    """(scope id, origin, {name: value}) for `scope` and its ancestors, outermost first."""
    chain = []
    s = scope
    while s is not None:
        chain.append((s.id, dict(s.origin), {v.name: v.value for v in s.local_vars()}))
        s = s.parent
    return list(reversed(chain))


class TimeView:
    """The scope tree and values right after one event, rebuilt from the trace."""

    def __init__(self, sess: DebugSession, index: int):
        self.session, self.index = sess, index
        self.unrecorded: set[tuple[int, str]] = set()  # (scope id, name) whose value was not kept
        self.root = self._rebuild(sess, index)

    @property
    def event(self):
        return self.session.trace.events[self.index] if self.index >= 0 else None

    def _rebuild(self, sess: DebugSession, k: int) -> Scope:
        scopes: dict[int, Scope] = {}
        parent = None
        for sid, origin, values in sess._initial:
            s = Scope(parent, origin=origin)
            if parent is not None:
                parent.kids.append(s)
            s.id = sid
            for name, value in values.items():
                s.var(name).value = value
            scopes[sid] = parent = s
        run_scope = parent
        for ev in sess.trace.events[sess._initial_events:k + 1]:
            kind = ev.kind
            if kind == "scope_push":
                kid = scopes[ev.parent_scope].new_scope(origin={
                    "op": ev.op_type, "block": ev.block, "op_idx": ev.op, "timestep": ev.timestep,
                    "what": ev.message})
                kid.id = ev.scope
                scopes[ev.scope] = kid
            elif kind == "scope_drop":
                s = scopes.pop(ev.scope, None)
                if s is not None and not s.dropped:
                    s.drop()
            elif kind == "var_create":
                if ev.scope in scopes:
                    v = scopes[ev.scope].var(ev.name)
                    for _, value in ev.values or ():  # a value an op bound (a step's x_t, its memory)
                        v.value = value
            elif kind == "vars_create":
                if ev.scope in scopes:
                    s = scopes[ev.scope]
                    for name in ev.names:
                        s.var(name)
            elif kind == "op_run":
                here = scopes.get(ev.scope)
                if here is None:
                    continue
                if ev.values is None:
                    for _, name, _, _ in ev.outputs:
                        self.unrecorded.add((ev.scope, name))
                    continue
                for name, value in ev.values:
                    v = here.find_var(name) or here.var(name)
                    v.value = value
        return run_scope

    def forest(self):
        from .scope_forest import ScopeForest
        return ScopeForest(self.root)

    def value(self, name: str, scope: int | None = None) -> Any:
        """`name` as seen from scope id `scope` (default: the run's scope) at this event."""
        s = self.root
        if scope is not None:
            s = next((x for x in self.root.walk() if x.id == scope), None)
            if s is None:
                raise KernelcoreError(f"scope {scope} did not exist at event {self.index}")
        v = s.find_var(name)
        if v is None:
            raise KernelcoreError(f"no variable {name!r} was visible from scope {s.id} at event {self.index}")
        return to_host(v.value)

    def __repr__(self) -> str:
        ev = self.event
        what = f"{ev.kind} {ev.op_type or ev.name or ''}".strip() if ev is not None else "start"
        return f"<TimeView at event {self.index}: {what}>"


def debug(program: Program, feed: dict | None = None, fetch_list=None, scope: Scope | None = None, place=None,
          **kw) -> DebugSession:
    """Start `program` paused before its first op. See DebugSession."""
    return DebugSession(program, feed, fetch_list, scope, place, **kw)
