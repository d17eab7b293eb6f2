"""Provenance: where a value came from, as a DAG of `Origin`s (the op and timestep that wrote it, and where
its inputs came from), walked over a `RecordedRun` within a depth and a node budget."""
from __future__ import annotations

import bisect
import collections
from dataclasses import dataclass

from ..errors import KernelcoreError
from .forks import EDIT_OP_TYPE


@dataclass(eq=False)
class Origin:
    """Where a value came from: the op (and timestep) that wrote it, and where its inputs came from.

    Origins form a DAG: an input two ops share is one Origin both list (compared by identity), so a provenance
    answer grows with the writes it names, not with the paths to them."""
    name: str
    kind: str                  # "op": an op wrote it; "bound": a loop op bound it in a step scope;
    #                            "initial": it was there before the run (fed or set); "unknown": not recorded;
    #                            "set": replaced at a pause (DebugSession.set_value)
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


def resolve_home(name, scope, parent, names):
    """The scope up the chain from `scope` that holds `name` (`scope` itself when none does)."""
    s, hops = scope, 0
    while s is not None and hops <= len(parent):  # a parent cycle (a malformed trace) ends the walk
        if name in names.get(s, ()):
            return s
        s = parent.get(s)
        hops += 1
    return scope


class ProvenanceWalk:
    """One provenance answer, walked breadth first so each write is found at its shortest distance from the
    value asked about, made once, and shared by every origin that reads it.

    A request is (name, scope, event index, note): the value of `name` seen from `scope` right after that event."""

    def __init__(self, rec, upto: int, max_nodes: int):
        self.rec, self.events, self.max_nodes = rec, rec.events, max_nodes
        self.parent, self.names, self.origin, self.pushed = rec.scope_facts(upto)
        self.writes = rec.write_index(upto)
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
        home = resolve_home(name, scope, self.parent, self.names)
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
                if resolve_home(name, e.scope, parent, names) == home:
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
        if e.op_type == EDIT_OP_TYPE:
            return Origin(name, "set", i, scope=e.scope, note="set by set_value at a pause", inputs=[]), []
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
        prev = self.rec.step_index().previous(step_scope, i)
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
        steps = self.rec.step_index()
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
