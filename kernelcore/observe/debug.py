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
import collections
import difflib
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

from ..errors import KernelcoreError, OpRunError, ProgramError, UnknownNameError
from ..runtime.executor import ExecContext, Executor
from ..runtime.place import CPUPlace, to_host
from ..ir.program import Program
from ..ops.rnn import CellStep
from ..runtime.scope import Scope, global_scope
from .trace import Trace
from ..runtime.values import nonfinite
from .watch import Watch, WatchHit, check as _watch_check, make_watch

END_OF_BLOCK = "end of block"
# control-flow ops whose outputs their sub-block writes (the op's own op_run event comes after those writes)
_BLOCK_WRITERS = frozenset({"while", "conditional_block"})  # the op_type of the pause after a sub-block's last op


# what the fused rnn op's kernel binds and writes in each step scope (kernelcore/ops/rnn.py, RnnStep): names
# a debugger may be asked about though no block declares them
_RNN_STEP_NAMES = frozenset({"x_proj", "h_prev", "c_prev", "mask", "gates", "h", "c"})


def program_names(program: Program) -> tuple[set[str], set[str]]:
    """(variable names, op types) of `program`: every block's variables and op arguments, and for ops whose
    kernel runs its own steps (the fused rnn), the step's op type and the names it binds."""
    names: set[str] = set()
    op_types: set[str] = set()
    for block in program.desc.blocks:
        names.update(v.name for v in block.vars)
        for op in block.ops:
            op_types.add(op.type)
            for slots in (op.inputs, op.outputs):
                for slot in slots:
                    names.update(slot.arguments)
    if "rnn" in op_types:
        from ..ops.rnn import CELL_TYPES
        op_types.update(CELL_TYPES.values())
        names.update(_RNN_STEP_NAMES)
    return names, op_types


def check_known(name: str, known, what: str) -> None:
    """Raise UnknownNameError, with the closest names, when `name` is not among `known`."""
    if name in known:
        return
    close = difflib.get_close_matches(str(name), sorted(map(str, known)), n=3, cutoff=0.6)
    raise UnknownNameError(what, name, close)


class Frame(NamedTuple):  # a NamedTuple, not a frozen dataclass: one is made per level at every pause
    """One level of the block/op stack: the op about to run in a block (op_type END_OF_BLOCK: the block's
    last op has run; `op` is then the number of ops in the block)."""
    block: int
    op: int
    op_type: str
    timestep: int | None  # the timestep this block runs for (None outside loops)
    scope: int
    detail: str | None = None  # which pass of a kernel's own steps: the fused rnn's "layer 1 bwd"

    @property
    def at_end(self) -> bool:
        return self.op_type == END_OF_BLOCK

    def to_json(self) -> dict:
        return {"block": self.block, "op": self.op, "op_type": self.op_type, "timestep": self.timestep,
                "scope": self.scope, "end": self.at_end, "detail": self.detail}

    def __str__(self) -> str:
        return frame_text(self.block, self.op, self.op_type, self.timestep, self.detail)

    __repr__ = __str__  # a frame shown as a cell's value reads as the sidebar shows it

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(str(self))


class Position(NamedTuple):  # one is made at every pause
    frames: tuple[Frame, ...]  # outermost first; empty when the run has ended

    @property
    def depth(self) -> int:
        return len(self.frames)

    @property
    def innermost(self) -> Frame | None:
        return self.frames[-1] if self.frames else None

    @property
    def timestep(self) -> int | None:
        """The timestep of the innermost loop this position is in (None outside loops)."""
        return next((f.timestep for f in reversed(self.frames) if f.timestep is not None), None)

    @property
    def ended(self) -> bool:
        return not self.frames

    def to_json(self) -> list[dict]:
        return [f.to_json() for f in self.frames]

    def __str__(self) -> str:
        return " > ".join(map(str, self.frames)) if self.frames else "end of the run"

    __repr__ = __str__  # `sess.position` as a cell's value: the text the sidebar and widgets show

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(str(self))


def frame_text(block: int, op: int, op_type: str, timestep: int | None = None, detail: str | None = None) -> str:
    """The one way a place in a run is written (sidebar, widgets, reprs, stop reasons): block, op, the
    pass of a kernel's own steps, timestep ("block 0 op #3 lstm_cell layer 1 fwd t=0")."""
    t = f" t={timestep}" if timestep is not None else ""
    if op_type == END_OF_BLOCK:
        return f"block {block} end{t}"
    d = f" {detail}" if detail else ""
    return f"block {block} op #{op} {op_type}{d}{t}"


_tuple_new = tuple.__new__  # builds a NamedTuple from its fields without its Python-level __new__


def _position(ctx: ExecContext | None) -> Position:
    """Where the run is paused, from the paused context up to block 0 (made at every pause)."""
    frames = []
    while ctx is not None:
        op = ctx.op
        if op is None:
            n = len(ctx.program.desc.blocks[ctx.block].ops)
            frames.append(_tuple_new(Frame, (ctx.block, n, END_OF_BLOCK, ctx.timestep, ctx.scope.id, None)))
        else:
            detail = op.detail if type(op) is CellStep else None
            frames.append(_tuple_new(Frame, (ctx.block, op.idx, op.type, ctx.timestep, ctx.scope.id, detail)))
        ctx = ctx.parent
    frames.reverse()
    return _tuple_new(Position, (tuple(frames),))


def _block_run(frame: Frame) -> tuple:
    """What tells one run of a block from the next: a loop runs its block once per timestep, each in its own
    step scope (a while may reuse one scope: its timestep still differs)."""
    return frame.block, frame.scope, frame.timestep


class Pause(NamedTuple):
    """A place the run stopped: right after trace event `index`, at `position`."""
    index: int
    position: Position


@dataclass
class Breakpoint:
    id: int
    op_type: str | None = None
    block: int | None = None
    op: int | None = None
    write: str | None = None
    nan: bool = False
    enabled: bool = True

    @property
    def kind(self) -> str:
        return "nan" if self.nan else "write" if self.write is not None else "op_type" if self.op_type else "op"

    def to_json(self) -> dict:
        return {"id": self.id, "kind": self.kind, "op_type": self.op_type, "block": self.block, "op": self.op,
                "write": self.write, "enabled": self.enabled, "text": str(self)}

    def __str__(self) -> str:
        if self.nan:
            return f"#{self.id} first NaN/Inf"
        if self.write is not None:
            return f"#{self.id} write to {self.write!r}"
        if self.op_type is not None:
            return f"#{self.id} op type {self.op_type!r}"
        return f"#{self.id} block {self.block} op #{self.op}"


# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StepRecord:
    """One timestep of a loop op as recorded: its step scope and the events that open and close it."""
    t: int
    scope: int
    begin: int          # index of its step_begin event
    end: int | None     # index of its step_end event (None: not finished at the index asked about)
    order: int          # position in execution order (0 = the first that ran)


@dataclass(eq=False)
class Origin:
    """Where a value came from: the op (and timestep) that wrote it, and where its inputs came from.

    Origins form a DAG: an input two ops share is one Origin both list (compared by identity), so a provenance
    answer grows with the writes it names, not with the paths to them."""
    name: str
    kind: str                  # "op": an op wrote it; "bound": a loop op bound it in a step scope;
    #                            "initial": it was there before the run (fed or set); "unknown": not recorded
    event: int | None = None
    block: int | None = None
    op: int | None = None
    op_type: str | None = None
    timestep: int | None = None
    scope: int | None = None
    shape: list | None = None
    note: str = ""
    inputs: list = None  # [Origin]
    id: int = 0          # its index in the walk that found it (the root is 0)
    cut: str | None = None  # why its inputs were not followed: "depth" (past the depth asked) or "nodes"
    #                         (the node budget ran out); None: followed, or it has none
    limits: dict | None = None  # on the root: the depth and node budget the walk ran under

    def chain(self) -> list[Origin]:
        """This origin and every origin it reaches, each once, depth first (inputs in order)."""
        out, seen, todo = [], set(), [self]
        while todo:
            o = todo.pop()
            if id(o) in seen:
                continue
            seen.add(id(o))
            out.append(o)
            todo.extend(reversed(o.inputs or []))
        return out

    @property
    def truncated(self) -> bool:
        """Whether a budget cut the walk below this origin (the cut origins say where)."""
        return any(o.cut for o in self.chain())

    def node_json(self) -> dict:
        return {"id": self.id, "name": self.name, "kind": self.kind, "event": self.event, "block": self.block,
                "op": self.op, "op_type": self.op_type, "timestep": self.timestep, "scope": self.scope,
                "shape": self.shape, "note": self.note, "inputs": [i.id for i in self.inputs or []],
                "cut": self.cut}

    def to_json(self) -> dict:
        """The DAG below this origin: every origin once, inputs as ids, and whether (and where) it was cut."""
        nodes = self.chain()
        cut = [o.id for o in nodes if o.cut]
        return {"root": self.id, "nodes": [o.node_json() for o in nodes], "truncated": bool(cut), "cut": cut,
                "limits": self.limits}

    def __str__(self) -> str:
        t = f" t={self.timestep}" if self.timestep is not None else ""
        if self.kind == "op":
            return f"{self.name} <- {self.op_type} (block {self.block} op #{self.op}{t})"
        if self.kind == "bound":
            return f"{self.name} <- bound by {self.op_type} (block {self.block} op #{self.op}{t}): {self.note}"
        return f"{self.name} <- {self.kind}" + (f": {self.note}" if self.note else "")


DEFAULT_PROVENANCE_NODES = 500  # what one answer may name: enough for a sidebar, small enough to send


class _StepIndex:
    """The timesteps of every loop op, read from the trace once and extended as it grows.

    A run of a loop op is a list of steps [t, scope, begin, end]; a new run starts when a step_begin repeats a
    timestep of a run whose last step has ended (the op runs again, inside an outer loop)."""

    def __init__(self):
        self.read = 0  # events indexed so far
        self.runs: dict[tuple, list[list[list]]] = {}  # (block, op) -> runs, oldest first
        self.begins: dict[tuple, list[list[int]]] = {}  # (block, op) -> per run, its steps' begin indexes
        self.run_ts: dict[tuple, set] = {}  # (block, op) -> the timesteps of its latest run
        self.by_scope: dict[int, tuple[list, int]] = {}  # step scope -> (its run, its position there)

    def update(self, events) -> None:
        for i in range(self.read, len(events)):
            e = events[i]
            if e.kind == "step_begin":
                self._begin(i, e)
            elif e.kind == "step_end":
                self._end(i, e)
        self.read = len(events)

    def _begin(self, i, e) -> None:
        key = (e.block, e.op)
        runs = self.runs.setdefault(key, [])
        ts = self.run_ts.get(key)
        if not runs or (runs[-1][-1][3] is not None and e.timestep in ts):
            runs.append([])
            self.begins.setdefault(key, []).append([])
            ts = self.run_ts[key] = set()
        run = runs[-1]
        self.by_scope[e.scope] = (run, len(run))
        run.append([e.timestep, e.scope, i, None])
        self.begins[key][-1].append(i)
        ts.add(e.timestep)

    def _end(self, i, e) -> None:
        runs = self.runs.get((e.block, e.op))
        if runs and runs[-1][-1][1] == e.scope:
            runs[-1][-1][3] = i

    def steps(self, key, last: int) -> list[StepRecord]:
        """The steps of loop op `key` in its latest run begun at or before event `last`, as they stood then."""
        begins = self.begins.get(key, [])
        r = bisect.bisect_right([b[0] for b in begins], last) - 1
        if r < 0:
            return []
        n = bisect.bisect_right(begins[r], last)
        return [StepRecord(t, s, b, e if e is not None and e <= last else None, j)
                for j, (t, s, b, e) in enumerate(self.runs[key][r][:n])]

    def previous(self, scope: int, last: int) -> list | None:
        """The step before step scope `scope` in the same run, when it had ended by event `last`."""
        run, pos = self.by_scope.get(scope, (None, 0))
        if run is None or pos == 0:
            return None
        prev = run[pos - 1]
        return prev if prev[3] is not None and prev[3] <= last else None


class _ProvenanceWalk:
    """One provenance answer, walked breadth first so each write is found at its shortest distance from the
    value asked about, made once, and shared by every origin that reads it.

    A request is (name, scope, event index, note): the value of `name` seen from `scope` right after that event."""

    def __init__(self, rec: RecordedRun, upto: int, max_nodes: int):
        self.rec, self.events, self.max_nodes = rec, rec.events, max_nodes
        self.parent, self.names, self.origin, self.pushed = rec._scope_facts(upto)
        self.writes = rec._write_index(upto)
        self.nodes: dict[tuple, Origin] = {}

    def run(self, name: str, scope: int, k: int, depth: int) -> Origin:
        root, requests = self._locate(name, scope, k)
        queue = collections.deque([(root, requests, depth)])
        while queue:
            node, requests, left = queue.popleft()
            if requests and left <= 0:
                node.cut = "depth"
                continue
            for n, s, at, note in requests:
                child, more = self._find(n, s, at)
                if child is None:
                    node.cut = "nodes"
                    break
                node.inputs.append(child)
                if more is not None:  # made just now: its own inputs wait their turn
                    child.note = child.note or note
                    queue.append((child, more, left - 1))
        root.limits = {"depth": depth, "nodes": self.max_nodes}
        return root

    def _find(self, name, scope, k):
        """(the origin, its input requests) when made now; (the origin, None) when made before; (None, None)
        when it would be new and the node budget is spent."""
        key = self._key(name, scope, k)
        if key in self.nodes:
            return self.nodes[key], None
        if len(self.nodes) >= self.max_nodes:
            return None, None
        return self._locate(name, scope, k, key)

    def _key(self, name, scope, k) -> tuple:
        home = RecordedRun._resolve(name, scope, self.parent, self.names)
        i = self._last_write(name, home, k)
        return (name, i) if i is not None else (name, "before", home)

    def _last_write(self, name, home, k) -> int | None:
        """The index of the latest write of `name` into scope `home` at or before event k."""
        idxs = self.writes.get(name, ())
        events, parent, names = self.events, self.parent, self.names
        for j in range(bisect.bisect_right(idxs, k) - 1, -1, -1):
            i = idxs[j]
            e = events[i]
            if e.kind == "op_run":
                if RecordedRun._resolve(name, e.scope, parent, names) == home:
                    return i
            elif e.scope == home:
                return i
        return None

    def _locate(self, name, scope, k, key=None):
        key = key or self._key(name, scope, k)
        o, requests = self._make(name, key)
        o.id = len(self.nodes)
        self.nodes[key] = o
        return o, requests

    def _make(self, name, key):
        if key[1] == "before":
            home = key[2]
            if any(sid == home and name in values for sid, _, values in self.rec.initial):
                return Origin(name, "initial", scope=home, note="there before the run (fed or set in the scope)",
                              inputs=[]), []
            return Origin(name, "unknown", scope=home, note="no write of it is recorded", inputs=[]), []
        i = key[1]
        e = self.events[i]
        if e.kind == "op_run":
            shape = next((list(s) if s is not None else None for _, n, s, _ in e.outputs if n == name), None)
            o = Origin(name, "op", i, e.block, e.op, e.op_type, e.timestep, e.scope, shape, inputs=[])
            firsts = {}
            for slot, n, _, _ in e.inputs:
                firsts.setdefault(n, slot)
            return o, [(n, e.scope, i - 1, f"input {slot}") for n, slot in firsts.items()]
        return self._bound(name, e.scope, i)

    def _bound(self, name, step_scope, i):
        """A value a loop op bound in a step scope: x_t (a slice of a sequence) or a memory."""
        org = self.origin.get(step_scope, {})
        b, op_idx, t, op_type = org.get("block"), org.get("op_idx"), org.get("timestep"), org.get("op")
        o = Origin(name, "bound", i, b, op_idx, op_type, t, step_scope, inputs=[])
        op = None
        if self.rec.program is not None and b is not None and op_idx is not None:
            try:
                op = self.rec.program.block(b).op(op_idx)
            except KernelcoreError:
                op = None
        if op is not None and op.type == "rnn":
            return self._bound_fused(o, op, name, step_scope, i, org)
        if op is None or op.type != "recurrent":
            o.note = "bound by the loop op"
            return o, []
        outer = self.parent.get(step_scope)
        begin = self._begin_of(step_scope, i)
        ex_states, states = list(op.attr("ex_states", [])), list(op.attr("states", []))
        if name in op.input("inputs"):
            o.note = f"timestep {t} of the sequence {name!r}"
            return o, [(name, outer, begin, "")]
        if name not in ex_states:
            o.note = "bound by the loop op"
            return o, []
        j = ex_states.index(name)
        prev = self.rec._step_index().previous(step_scope, i)
        if prev is not None:
            o.note = f"memory: {states[j]!r} written at timestep {prev[0]}"
            return o, [(states[j], prev[1], prev[3], "")]
        inits = op.input("initial_states")
        src = inits[j] if j < len(inits) else None
        o.note = f"memory at the first timestep: the initial state {src!r}"
        return o, [(src, outer, begin, "")] if src is not None else []

    # the fused rnn op (ops/rnn.py): each (layer, direction) pass binds x_proj, and h_prev / c_prev from the
    # h / c its previous step wrote (the initial state PreState at the pass's first step)
    _FUSED_MEMORY = {"h_prev": ("h", 0), "c_prev": ("c", 1)}

    def _bound_fused(self, o, op, name, step_scope, i, org):
        outer = self.parent.get(step_scope)
        begin = self._begin_of(step_scope, i)
        if name in self._FUSED_MEMORY:
            src, k = self._FUSED_MEMORY[name]
            prev = self._previous_pass_step(step_scope, org, begin)
            if prev is not None:
                o.note = f"memory: {src!r} written at timestep {prev[0]}"
                return o, [(src, prev[1], prev[3], "")]
            inits = op.input("PreState")
            o.note = "memory at the pass's first timestep: the initial state" + \
                (f" {inits[k]!r}" if k < len(inits) else "")
            return o, [(inits[k], outer, begin, "")] if k < len(inits) else []
        if name == "x_proj":
            o.note = f"timestep {org.get('timestep')} of the input projection (Input @ W_ih + b)"
            return o, [(op.input("Input")[0], outer, begin, "")]
        o.note = "bound by the rnn op"
        return o, []

    def _previous_pass_step(self, step_scope, org, begin) -> list | None:
        """The latest step of the same rnn op and pass (layer, direction) that ended at or before `begin`:
        looked for from the step itself backwards (the one before it, unless it is its pass's first)."""
        steps = self.rec._step_index()
        runs = steps.runs.get((org.get("block"), org.get("op_idx")), [])
        run, pos = steps.by_scope.get(step_scope, (None, 0))
        r = next((j for j in range(len(runs) - 1, -1, -1) if runs[j] is run), None)
        if r is None:
            r, pos = len(runs) - 1, len(runs[-1]) if runs else 0
        what = org.get("what")
        while r >= 0:
            for step in reversed(runs[r][:pos]):
                end = step[3]
                if end is not None and end <= begin and self.origin.get(step[1], {}).get("what") == what:
                    return step
            r -= 1
            pos = len(runs[r]) if r >= 0 else 0
        return None

    def _begin_of(self, step_scope, i) -> int:
        """The index just before step scope `step_scope` was pushed (at or before event i)."""
        j = self.pushed.get(step_scope)
        return j - 1 if j is not None and j <= i else i


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
    def _step_index(self) -> _StepIndex:
        """The loop steps of the trace, indexed once and brought up to date with the events recorded since."""
        index = self.__dict__.get("_steps")
        if index is None:
            index = self._steps = _StepIndex()
        index.update(self.events)
        return index

    def timesteps(self, block: int, op: int, upto: int | None = None) -> list[StepRecord]:
        """The timesteps of loop op (block, op) in its latest run that began at or before event `upto`,
        in execution order."""
        index = self._step_index()
        last = len(self.events) - 1 if upto is None else upto
        return index.steps((block, op), last)

    def last_run_of(self, block: int, op: int, upto: int | None = None) -> int | None:
        """Index of the latest op_run event of op (block, op) at or before `upto`."""
        events = self.events
        last = len(events) - 1 if upto is None else upto
        return next((i for i in range(last, -1, -1) if events[i].kind == "op_run"
                     and (events[i].block, events[i].op) == (block, op)), None)

    # -- scopes as recorded -------------------------------------------------------------------------------
    def _scope_facts(self, upto: int):
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

    def _write_index(self, upto: int) -> dict[str, list[int]]:
        """name -> indexes (ascending) of the events up to `upto` that wrote it: op_run outputs (not a while's
        or conditional_block's, which only relist what their sub-block wrote) and loop bindings."""
        writes: dict[str, list[int]] = {}
        events = self.events
        for i in range(self.first_event, min(upto + 1, len(events))):
            e = events[i]
            if e.kind == "op_run" and e.op_type not in _BLOCK_WRITERS:
                for n in dict.fromkeys(n for _, n, _, _ in e.outputs):
                    writes.setdefault(n, []).append(i)
            elif e.kind == "var_create" and e.values:
                writes.setdefault(e.name, []).append(i)
        return writes

    @staticmethod
    def _resolve(name, scope, parent, names):
        """The scope up the chain from `scope` that holds `name` (`scope` itself when none does)."""
        s, hops = scope, 0
        while s is not None and hops <= len(parent):  # a parent cycle (a malformed trace) ends the walk
            if name in names.get(s, ()):
                return s
            s = parent.get(s)
            hops += 1
        return scope

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
        return _ProvenanceWalk(self, k, max_nodes).run(name, scope, k, depth)


def _snapshot_chain(scope: Scope) -> list[tuple[int, dict, dict]]:
    """(scope id, origin, {name: value}) for `scope` and its ancestors, outermost first."""
    chain = []
    s = scope
    while s is not None:
        chain.append((s.id, dict(s.origin), {v.name: v.value for v in s.local_vars()}))
        s = s.parent
    return list(reversed(chain))


# ---------------------------------------------------------------------------------------------------------
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
                 executor: Executor | None = None):
        import weakref
        self.program = program
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
        self._gen = self.executor.run_iter(program, feed, fetch_list, self.scope, training=training,
                                           pausing=True, observers=[self.trace])
        self._advance()
        # values that existed before the first op (feeds, parameters): the base of time travel
        self.record = RecordedRun(self.trace, _snapshot_chain(self.scope), len(self.trace), program, self._pauses)
        self._cur = len(self._pauses) - 1
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
            self._pauses.append(_tuple_new(Pause, (len(self.trace._items) - 1, _position(self._ctx))))
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

    def _notify(self) -> DebugSession:
        if self.listeners:
            for f in list(self.listeners):
                f(self)
        return self

    # -- breakpoints and watches, checked at a pause ---------------------------------------------------
    def _hit(self, i: int) -> str | None:
        """Why pause i stops a move (a breakpoint or a watch), judged from the events that led to it."""
        if i <= 0 or not (self.breakpoints or self.watches):
            return None
        live = [b for b in self.breakpoints if b.enabled]
        watches = [w for w in self.watches if w.enabled]
        # only write/NaN breakpoints and watches look at what ran; without them the records are left as
        # they are, to be turned into events when someone reads the trace
        by_events = watches or any(b.write is not None or b.nan for b in live)
        events = self.trace.events if by_events else ()
        for k in range(self._pauses[i - 1].index + 1, self._pauses[i].index + 1) if by_events else ():
            ev = events[k]
            if ev.kind != "op_run":
                continue
            for b in live:
                if b.write is not None and ev.op_type not in _BLOCK_WRITERS \
                        and any(name == b.write for _, name, _, _ in ev.outputs):
                    # (a while / conditional_block op only lists what its sub-block already wrote: the write
                    # stopped there, after the sub-block's op)
                    return f"breakpoint {b}: written by op {ev.op_type!r} (block {ev.block}, op #{ev.op})" + \
                        (f" at timestep {ev.timestep}" if ev.timestep is not None else "")
                if b.nan and _has_non_finite(ev, self):
                    return f"breakpoint {b}: {_non_finite_text(ev, self)}"
            if watches:
                hit = self._check_watches(k, ev, watches)
                if hit:
                    return hit
        inner = self._pauses[i].position.innermost
        if inner is not None and not inner.at_end:
            for b in live:
                if b.op_type is not None and inner.op_type == b.op_type:
                    return f"breakpoint {b}"
                if b.op is not None and (inner.block, inner.op) == (b.block, b.op):
                    return f"breakpoint {b}"
        return None

    def _check_watches(self, k, ev, watches) -> str | None:
        xp = self.executor.place.xp
        first = None
        for name, value in ev.values or ():
            for w in watches:
                if not w.matches(ev.op_type, name):
                    continue
                why = _watch_check(w, xp, value, lambda: self._previous_value(name, ev.scope, k))
                if why is None:
                    continue
                hit = WatchHit(w.id, k, ev.block, ev.op, ev.op_type, ev.timestep, name,
                               f"{w}: {name!r} written by op {ev.op_type!r} (block {ev.block}, op #{ev.op})"
                               + (f" at timestep {ev.timestep}" if ev.timestep is not None else "") + f" {why}")
                if not any(h.event == k and h.watch == w.id and h.var == name for h in w.hits):
                    w.hits.append(hit)
                    self.hits.append(hit)
                first = first or hit.message
        return first

    def _previous_value(self, name: str, scope: int, k: int):
        """The value `name` held before event k: its previous write (any scope: the previous timestep's
        too), else its value before the run."""
        events = self.trace.events
        for i in range(k - 1, -1, -1):
            e = events[i]
            if e.kind == "op_run" and e.values:
                for n, v in e.values:
                    if n == name:
                        return v
            elif e.kind == "var_create" and e.name == name and e.values:
                return e.values[0][1]
        for _, _, values in reversed(self.record.initial):
            if name in values:
                return values[name]
        return None

    # -- moving forward ----------------------------------------------------------------------------------
    def _forward(self, done: Callable[[Position], bool], reason: str) -> DebugSession:
        while True:
            if self._cur + 1 < len(self._pauses):
                self._cur += 1  # replaying the record
            else:
                try:
                    more = self._advance()
                except OpRunError:
                    self._notify()
                    raise
                if not more and self._cur + 1 >= len(self._pauses):
                    self.stop_reason = "finished" if self.error is None else self.stop_reason
                    return self._notify()
                self._cur += 1
            pos = self._pauses[self._cur].position
            hit = self._hit(self._cur) if (self.breakpoints or self.watches) else None
            if hit:
                self.stop_marks[self._pauses[self._cur].index] = hit  # for the exported trace's instants
            if not pos.frames:  # the run ended
                self.stop_reason = (hit + " (then the run finished)") if hit else \
                    ("finished" if self.error is None else f"error: {self.error}")
                return self._notify()
            if hit:
                self.stop_reason = hit
                return self._notify()
            if done(pos):
                self.stop_reason = reason
                return self._notify()

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
        here = _block_run(frames[-1])

        def done(p: Position) -> bool:
            if p.depth < d or _block_run(p.frames[d - 1]) != here:
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
        return self._notify()

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
                    self._notify()
                return old
        self.breakpoints.append(bp)
        self._notify()
        return bp

    def _check_op_exists(self, block: int, op: int) -> None:
        n = len(self.program.block(block).desc.ops)  # a ProgramError names a missing block
        if not 0 <= op < n:
            raise ProgramError(f"block {block} has {n} ops (#0 to #{n - 1}); there is no op #{op} to break before")

    def remove_breakpoint(self, bid: int) -> None:
        self.breakpoints = [b for b in self.breakpoints if b.id != bid]
        self.watches = [w for w in self.watches if w.id != bid]
        self._notify()

    def clear_breakpoints(self) -> None:
        self.breakpoints = []
        self._notify()

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
        self._notify()
        return w

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


def debug(*args, **kw) -> DebugSession:
    """Start a program paused before its first op: `kc.debug(program, feed=..., fetch_list=..., scope=...)`.
    See DebugSession. `kc.debug(exe, program, feed=...)` (as `exe.run(program, feed=...)`), `place=exe` or
    `executor=exe` run it on that Executor."""
    if args and isinstance(args[0], Executor):
        kw["executor"] = args[0]
        args = args[1:]
    return DebugSession(*args, **kw)
