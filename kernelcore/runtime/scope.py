"""Scopes own runtime values (seeds 000 and 002).

A Scope maps names to Variables. Only a scope creates a variable (`var`);
`find_var` walks up through the parents; `new_scope` makes a kid; dropping a
scope drops its variables and its kids. A kid holds its parent, so a parent
lives as long as any kid does. Mutations take the scope's lock, so scopes may
be shared between threads; reads are single dict lookups and need none.
"""
from __future__ import annotations

import itertools
import threading
from types import MappingProxyType
from typing import Any, Iterator, Mapping

from ..errors import ScopeError
from .place import place_of

_ids = itertools.count(1)
_TOKEN = object()  # only Scope may construct a Variable


class Variable:
    """One typed value at a time: a tensor (NumPy/CuPy array), int, float, bool,
    str, a list of scopes, a list of tensors, ...

    `value` is None until something is stored: allocation is lazy.
    """

    __slots__ = ("value", "name", "scope_id", "__weakref__")

    def __init__(self, token, name: str, scope_id: int):
        if token is not _TOKEN:
            raise ScopeError("variables are created by a scope: use scope.var(name)")
        self.value = None
        self.name = name
        self.scope_id = scope_id

    def get(self) -> Any:
        if self.value is None:
            raise ScopeError(f"variable {self.name!r} holds no value yet")
        return self.value

    def get_mutable(self, kind: type) -> Any:
        """The value as `kind`, creating an empty one if none is held yet."""
        if self.value is None:
            self.value = kind()
        elif not isinstance(self.value, kind):
            raise ScopeError(f"variable {self.name!r} holds {type(self.value).__name__}, "
                             f"not {kind.__name__}")
        return self.value

    def set(self, value: Any) -> None:
        self.value = value

    def is_type(self, kind) -> bool:
        if kind == "tensor":
            return hasattr(self.value, "shape") and hasattr(self.value, "dtype")
        return isinstance(self.value, kind)

    @property
    def is_initialized(self) -> bool:
        return self.value is not None

    @property
    def place(self):
        return place_of(self.value)

    def __repr__(self) -> str:
        v = self.value
        if v is None:
            what = "empty"
        elif hasattr(v, "shape") and hasattr(v, "dtype"):
            what = f"{v.dtype}[{', '.join(map(str, v.shape))}] on {place_of(v)}"
        else:
            what = type(v).__name__
        return f"<Variable {self.name!r} {what}>"


class Scope:
    """A name->Variable map with a parent; the runtime's stack frame."""

    def __init__(self, parent: Scope | None = None, *, origin: dict | None = None):
        self.id = next(_ids)
        self.parent = parent
        self.kids: list[Scope] = []
        self.origin = origin or {}  # who made it: {"op": ..., "block": ..., "timestep": ...}
        self._vars: dict[str, Variable] = {}
        self._lock = threading.Lock()
        self._dropped = False
        # bumped whenever the set of local names changes: a lookup cached with it is still right while it holds
        # (a plain attribute: every run of a prepared block reads it for each scope on the chain)
        self.version = 0

    # -- variables --------------------------------------------------------
    def var(self, name: str) -> Variable:
        """The local variable `name`, created if this scope does not hold it yet."""
        v = self._vars.get(name)
        if v is not None:
            return v
        if not isinstance(name, str) or not name:
            raise ScopeError(f"a variable name must be a non-empty string, got {name!r}")
        with self._lock:
            self._check_alive()
            v = self._vars.get(name)
            if v is None:
                v = self._vars[name] = Variable(_TOKEN, name, self.id)
                self.version += 1
        return v

    def find_var(self, name: str) -> Variable | None:
        """The variable `name` here or in the nearest ancestor holding it; None if absent."""
        s = self
        while s is not None:
            v = s._vars.get(name)
            if v is not None:
                return v
            s = s.parent
        return None

    def local_var(self, name: str) -> Variable | None:
        """The variable `name` if this scope itself holds it (its parents are not asked); None otherwise."""
        return self._vars.get(name)

    def holds(self, name: str) -> bool:
        """Whether this scope itself holds `name`."""
        return name in self._vars

    @property
    def local_table(self) -> Mapping[str, Variable]:
        """This scope's own name -> Variable table, read-only (a live view: names created later show)."""
        return MappingProxyType(self._vars)

    def find_scope_of(self, name: str) -> Scope | None:
        s = self
        while s is not None:
            if name in s._vars:
                return s
            s = s.parent
        return None

    def get(self, name: str) -> Any:
        """The value of `name`, found through the parents; ScopeError when absent or empty."""
        v = self.find_var(name)
        if v is None:
            raise ScopeError(f"no variable {name!r} in scope {self.id} or its parents")
        return v.get()

    def set(self, name: str, value: Any) -> Variable:
        """Store `value` in the local variable `name` (creating it)."""
        v = self.var(name)
        v.value = value
        return v

    def erase(self, names) -> None:
        with self._lock:
            for n in names:
                self._vars.pop(n, None)
            self.version += 1

    def local_var_names(self) -> list[str]:
        return list(self._vars)

    def local_vars(self) -> Iterator[Variable]:
        return iter(list(self._vars.values()))

    def __contains__(self, name: str) -> bool:
        return self.find_var(name) is not None

    # -- kids -------------------------------------------------------------
    def new_scope(self, origin: dict | None = None) -> Scope:
        kid = Scope(self, origin=origin)
        with self._lock:
            self._check_alive()
            self.kids.append(kid)
        return kid

    def drop_kids(self) -> None:
        for kid in list(self.kids):
            kid.drop()

    def drop(self) -> None:
        """Drop this scope: its variables, its kids, and its place in the parent."""
        for kid in list(self.kids):
            kid.drop()
        with self._lock:
            self._vars.clear()
            self._dropped = True
            self.version += 1
        parent = self.parent
        if parent is not None:
            with parent._lock:
                try:
                    parent.kids.remove(self)
                except ValueError:
                    pass

    @property
    def dropped(self) -> bool:
        return self._dropped

    def _check_alive(self) -> None:
        if self._dropped:
            raise ScopeError(f"scope {self.id} was dropped")

    def walk(self) -> Iterator[Scope]:
        """This scope and its descendants, depth first, kids in creation order."""
        yield self
        for kid in list(self.kids):
            yield from kid.walk()

    @property
    def depth(self) -> int:
        d, s = 0, self.parent
        while s is not None:
            d, s = d + 1, s.parent
        return d

    def __repr__(self) -> str:
        return f"<Scope {self.id} vars={len(self._vars)} kids={len(self.kids)}>"


_global_scope = Scope()


def global_scope() -> Scope:
    """The default scope that executors and models use when given none."""
    return _global_scope
