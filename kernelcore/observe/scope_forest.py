"""The scope forest of a run (the hierarchy of scopes it made) as data.

`ScopeForest(scope)` snapshots the tree under `scope`: one node per scope with its id, its parent's id,
its origin (which op in which block made it, for which timestep; "recurrent step", "while iteration",
"conditional_block branch") and its variables with kind, dtype, shape and place. Values are held by
reference (kernels never mutate a held value, so a reference is the value as it was at the snapshot) and turned
into NumPy only when asked: `forest[id].value(name)`. `to_json()` is the shape-only form the widgets
read (no values); `str(forest)` is a readable tree.
"""
from __future__ import annotations

import itertools
from typing import Any, Iterable, Iterator, NamedTuple

import numpy as np

from ..runtime.place import place_of, to_host
from ..runtime.scope import Scope

SCHEMA = "kernelcore.scope_forest"
VERSION = 1


class VarInfo(NamedTuple):
    name: str
    kind: str                      # "tensor", "empty", "step_scopes", "tensor_list", "list" (empty), or a type name
    dtype: str | None = None       # tensors: NumPy dtype name
    shape: tuple | None = None     # tensors: the shape; lists: (length,)
    place: str | None = None       # tensors: "CPUPlace" / "GPUPlace(0)"
    scopes: tuple = ()             # step_scopes: the ids of the scopes listed

    def to_json(self) -> dict:
        d = {"name": self.name, "kind": self.kind}
        if self.dtype is not None:
            d["dtype"] = self.dtype
        if self.shape is not None:
            d["shape"] = [int(s) for s in self.shape]
        if self.place is not None:
            d["place"] = self.place
        if self.scopes:
            d["scopes"] = list(self.scopes)
        return d

    def describe(self) -> str:
        if self.kind == "tensor":
            return f"{self.dtype}[{', '.join(map(str, self.shape))}] on {self.place}"
        if self.kind == "step_scopes":
            ids = ", ".join(map(str, self.scopes[:8])) + (", ..." if len(self.scopes) > 8 else "")
            return f"step scopes [{ids}]" if self.scopes else "step scopes []"
        if self.kind == "tensor_list":
            return f"list of {self.shape[0]} {self.dtype + ' ' if self.dtype else ''}tensors"
        if self.kind == "empty":
            return "(no value)"
        if self.kind == "list" and self.shape == (0,):
            return "[] (empty list)"
        return self.kind


def _is_tensor(v) -> bool:
    return hasattr(v, "shape") and hasattr(v, "dtype")


def _info(name: str, value) -> VarInfo:
    if value is None:
        return VarInfo(name, "empty")
    if _is_tensor(value):
        return VarInfo(name, "tensor", str(value.dtype), tuple(int(s) for s in value.shape), str(place_of(value)))
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(s, Scope) for s in value):
            return VarInfo(name, "step_scopes", shape=(len(value),), scopes=tuple(s.id for s in value))
        if not value:
            return VarInfo(name, "list", shape=(0,))  # e.g. the step scopes of an inference run: none kept
        # a tensor array: its length, and its entries' dtype where they share one (holes, never written, skipped)
        dtypes = {str(v.dtype) for v in value if _is_tensor(v)}
        return VarInfo(name, "tensor_list", dtypes.pop() if len(dtypes) == 1 else None, shape=(len(value),))
    return VarInfo(name, type(value).__name__)


class ScopeNode:
    """One scope of the forest: id, parent id, depth, origin, kids' ids and variables."""

    __slots__ = ("id", "parent", "depth", "origin", "kids", "vars", "_values")

    def __init__(self, scope: Scope, parent: int | None, depth: int):
        self.id, self.parent, self.depth = scope.id, parent, depth
        self.origin = dict(scope.origin)
        self.kids: tuple[int, ...] = tuple(k.id for k in list(scope.kids))
        values = {v.name: v.value for v in scope.local_vars()}
        self._values = values
        self.vars: dict[str, VarInfo] = {n: _info(n, values[n]) for n in sorted(values)}

    @property
    def op(self) -> str | None:
        return self.origin.get("op")

    @property
    def timestep(self) -> int | None:
        return self.origin.get("timestep")

    @property
    def what(self) -> str | None:
        return self.origin.get("what")

    def value(self, name: str) -> Any:
        """The value `name` held at the snapshot, as NumPy (GPU arrays are copied to the host now);
        a list of tensors as a list; step scopes as the list of Scope objects."""
        if name not in self._values:
            raise KeyError(f"scope {self.id} holds no variable {name!r} (it has {sorted(self._values)})")
        v = self._values[name]
        if _is_tensor(v):
            return np.asarray(to_host(v))
        if isinstance(v, list) and v and not isinstance(v[0], Scope):
            return [np.asarray(to_host(x)) if _is_tensor(x) else x for x in v]
        return v

    def label(self) -> str:
        o = self.origin
        if not o:
            return f"scope {self.id}"
        what = o.get("what") or o.get("op") or "scope"
        t = f" t={o['timestep']}" if o.get("timestep") is not None else ""
        made = f" (block {o.get('block')}, op #{o.get('op_idx')} {o.get('op')})" if o.get("op") else ""
        return f"scope {self.id}: {what}{t}{made}"

    def to_json(self) -> dict:
        return {"id": self.id, "parent": self.parent, "depth": self.depth,
                "origin": {k: v for k, v in self.origin.items() if v is not None},
                "kids": list(self.kids), "vars": [v.to_json() for v in self.vars.values()]}

    def __repr__(self) -> str:
        return f"<ScopeNode {self.label()} vars={len(self.vars)} kids={len(self.kids)}>"


class ScopeForest:
    """The scope trees under one or more scopes, depth first, kids in creation order."""

    def __init__(self, scope: Scope | Iterable[Scope]):
        roots = [scope] if isinstance(scope, Scope) else list(scope)
        self.nodes: dict[int, ScopeNode] = {}
        self.roots: list[int] = []
        for r in roots:
            self.roots.append(r.id)
            stack = [(r, r.parent.id if r.parent is not None else None, 0)]
            while stack:  # iterative: a long training loop nests no deeper, but keeps many kids
                s, parent, depth = stack.pop()
                self.nodes[s.id] = ScopeNode(s, parent, depth)
                stack.extend((k, s.id, depth + 1) for k in reversed(list(s.kids)))

    # -- looking -------------------------------------------------------------------------------------
    def __getitem__(self, scope_id: int) -> ScopeNode:
        try:
            return self.nodes[scope_id]
        except KeyError:
            raise KeyError(f"scope {scope_id} is not in this forest") from None

    def __iter__(self) -> Iterator[ScopeNode]:
        return iter(self.nodes.values())

    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, scope_id: int) -> bool:
        return scope_id in self.nodes

    def kids(self, scope_id: int) -> list[ScopeNode]:
        return [self.nodes[k] for k in self[scope_id].kids if k in self.nodes]

    def find(self, *, op: str | None = None, timestep: int | None = None, what: str | None = None,
             parent: int | None = None) -> list[ScopeNode]:
        """The nodes whose origin matches every given field."""
        return [n for n in self if (op is None or n.op == op) and (timestep is None or n.timestep == timestep)
                and (what is None or n.what == what) and (parent is None or n.parent == parent)]

    # -- forms ---------------------------------------------------------------------------------------
    def to_json(self) -> dict:
        """Shapes and dtypes only: no values."""
        return {"schema": SCHEMA, "version": VERSION, "roots": list(self.roots),
                "scopes": [n.to_json() for n in self]}

    def __str__(self) -> str:
        lines: list[str] = []
        for node in self:
            pad = "  " * node.depth
            lines.append(pad + node.label())
            for v in node.vars.values():
                lines.append(f"{pad}  {v.name}: {v.describe()}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        counts = {}
        for n in self:
            k = n.what or ("root" if n.id in self.roots else "scope")
            counts[k] = counts.get(k, 0) + 1
        what = ", ".join(f"{k} {c}" for k, c in itertools.islice(counts.items(), 6))
        return f"<ScopeForest {len(self)} scopes ({what})>"
