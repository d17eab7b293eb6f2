"""A run as recorded (`RecordedRun`: its trace and the state before its first op) and the state right after
any of its events, rebuilt from it without running a kernel (`TimeView`)."""
from __future__ import annotations

from typing import Any

from ..errors import KernelcoreError
from ..runtime.place import to_host
from ..ir.program import Program
from ..runtime.scope import Scope
from .trace import Trace
from .position import BLOCK_WRITERS, Pause
from .program_names import check_known, program_names
from .loop_steps import StepIndex, StepRecord
from .provenance import DEFAULT_PROVENANCE_NODES, Origin, ProvenanceWalk


class RecordedRun:
    """A run as recorded: its trace, the scopes and values before its first recorded event, and (for a
    session) the pauses it passed. Every rebuilt state (`TimeView`) is made from one of these."""

    def __init__(self, trace: Trace, initial: list, first_event: int, program: Program | None = None,
                 pauses: list[Pause] | None = None):
        self.trace = trace
        self.initial = initial  # [(scope id, origin, {name: value})], outermost first
        self.first_event = first_event
        self.program = program
        self.pauses = pauses if pauses is not None else []

    @classmethod
    def from_trace(cls, trace: Trace, program: Program | None = None, near: int | None = None) -> RecordedRun:
        """The run of a bare Trace: the one holding event `near` (default: the first run). Values from before
        the run (feeds, parameters) are unknown to a trace: only what ops wrote or loops bound is there."""
        events = trace.events
        if near is None:
            begin = next((i for i, e in enumerate(events) if e.kind == "run_begin"), None)
        else:
            begin = next((i for i in range(min(near, len(events) - 1), -1, -1) if events[i].kind == "run_begin"),
                         None)
        if begin is None:
            raise KernelcoreError("the trace holds no run_begin event: it records no run to rebuild")
        return cls(trace, [(events[begin].scope, {}, {})], begin + 1, program)

    @property
    def events(self):
        return self.trace.events

    def view(self, index: int) -> TimeView:
        return TimeView(self, index)

    # -- loops ------------------------------------------------------------------------------------------
    def step_index(self) -> StepIndex:
        """The loop steps of the trace, indexed once and brought up to date with the events recorded since."""
        index = self.__dict__.get("_steps")
        if index is None:
            index = self._steps = StepIndex()
        index.update(self.events)
        return index

    def timesteps(self, block: int, op: int, upto: int | None = None) -> list[StepRecord]:
        """The timesteps of loop op (block, op) in its latest run that began at or before event `upto`,
        in execution order."""
        index = self.step_index()
        last = len(self.events) - 1 if upto is None else upto
        return index.steps((block, op), last)

    def last_run_of(self, block: int, op: int, upto: int | None = None) -> int | None:
        """Index of the latest op_run event of op (block, op) at or before `upto`."""
        events = self.events
        last = len(events) - 1 if upto is None else upto
        return next((i for i in range(last, -1, -1) if events[i].kind == "op_run"
                     and (events[i].block, events[i].op) == (block, op)), None)

    # -- scopes as recorded -------------------------------------------------------------------------------
    def scope_facts(self, upto: int):
        """(parent of each scope, names created in each scope, origin of each scope, index of each scope's
        push) up to event `upto`."""
        parent: dict[int, int | None] = {}
        names: dict[int, set] = {}
        origin: dict[int, dict] = {}
        pushed: dict[int, int] = {}
        prev = None
        for sid, org, values in self.initial:
            parent[sid], names[sid], origin[sid] = prev, set(values), dict(org)
            prev = sid
        events = self.events
        for i in range(self.first_event, min(upto + 1, len(events))):
            e = events[i]
            if e.kind == "scope_push":
                parent[e.scope], names[e.scope], pushed[e.scope] = e.parent_scope, set(), i
                origin[e.scope] = {"op": e.op_type, "block": e.block, "op_idx": e.op, "timestep": e.timestep,
                                   "what": e.message}
            elif e.kind == "var_create" and e.scope in names:
                names[e.scope].add(e.name)
        return parent, names, origin, pushed

    def write_index(self, upto: int) -> dict[str, list[int]]:
        """name -> indexes (ascending) of the events up to `upto` that wrote it: op_run outputs (not a while's
        or conditional_block's, which only relist what their sub-block wrote) and loop bindings."""
        writes: dict[str, list[int]] = {}
        events = self.events
        for i in range(self.first_event, min(upto + 1, len(events))):
            e = events[i]
            if e.kind == "op_run" and e.op_type not in BLOCK_WRITERS:
                for n in dict.fromkeys(n for _, n, _, _ in e.outputs):
                    writes.setdefault(n, []).append(i)
            elif e.kind == "var_create" and e.values:
                writes.setdefault(e.name, []).append(i)
        return writes

    def names(self) -> set[str]:
        """Every variable name the run can speak of: the program's (all blocks, and what loop kernels bind in
        their step scopes), those there before the run, and those its events name."""
        known = set(program_names(self.program)[0]) if self.program is not None else set()
        for _, _, values in self.initial:
            known.update(values)
        if self.program is None:
            for e in self.events:
                known.update(n for _, n, _, _ in e.inputs)
                known.update(n for _, n, _, _ in e.outputs)
                known.update(e.names)
                if e.name is not None:
                    known.add(e.name)
        return known

    # -- provenance --------------------------------------------------------------------------------------
    def provenance(self, name: str, scope: int | None = None, index: int | None = None,
                   depth: int = 3, max_nodes: int = DEFAULT_PROVENANCE_NODES) -> Origin:
        """Where the value of `name`, seen from scope `scope` right after event `index`, came from: the op and
        timestep that wrote it and, for each of that op's inputs, the same (to `depth` ops), across step
        scopes and RNN memories (a memory read at timestep t comes from the state written at t-1).

        The answer is a DAG of at most `max_nodes` origins (each write once, shared by all its readers); an
        origin whose inputs a budget left unfollowed says so in `cut`, and the root's `truncated` is then true.
        A name the run does not know raises UnknownNameError."""
        check_known(name, self.names(), "variable")
        if depth < 0 or max_nodes < 1:
            raise KernelcoreError(f"provenance needs depth >= 0 and max_nodes >= 1, got {depth} and {max_nodes}")
        events = self.events
        k = len(events) - 1 if index is None else index
        if scope is None:
            scope = self.initial[-1][0]
        return ProvenanceWalk(self, k, max_nodes).run(name, scope, k, depth)


def snapshot_chain(scope: Scope) -> list[tuple[int, dict, dict]]:
    """(scope id, origin, {name: value}) for `scope` and its ancestors, outermost first."""
    chain = []
    s = scope
    while s is not None:
        chain.append((s.id, dict(s.origin), {v.name: v.value for v in s.local_vars()}))
        s = s.parent
    return list(reversed(chain))



class TimeView:
    """The scope tree and values right after one event, rebuilt from a RecordedRun (or a session's)."""

    def __init__(self, record, index: int):
        record = getattr(record, "record", record)
        if not isinstance(record, RecordedRun):
            raise TypeError(f"TimeView takes a kc.RecordedRun or a DebugSession, got {type(record).__name__}")
        self.record, self.index = record, index
        self.unrecorded: set[tuple[int, str]] = set()  # (scope id, name) whose value was not kept
        self.root = self._rebuild(record, index)

    @property
    def event(self):
        return self.record.trace.events[self.index] if self.index >= 0 else None

    def _rebuild(self, rec: RecordedRun, k: int) -> Scope:
        scopes: dict[int, Scope] = {}
        parent = None
        for sid, origin, values in rec.initial:
            s = Scope(parent, origin=origin)
            if parent is not None:
                parent.kids.append(s)
            s.id = sid
            for name, value in values.items():
                s.var(name).value = value
            scopes[sid] = parent = s
        run_scope = parent
        for ev in rec.trace.events[rec.first_event:k + 1]:
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

    def scope(self, scope_id: int) -> Scope | None:
        return next((x for x in self.root.walk() if x.id == scope_id), None)

    def forest(self):
        from .scope_forest import ScopeForest
        return ScopeForest(self.root)

    def value(self, name: str, scope: int | None = None) -> Any:
        """`name` as seen from scope id `scope` (default: the run's scope) at this event."""
        s = self.root
        if scope is not None:
            s = self.scope(scope)
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
