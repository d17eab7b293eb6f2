"""ScopeForest: the scope tree of a run, with variables and value previews on demand."""
from __future__ import annotations

import traitlets as t

import kernelcore as kc

from ._base import STATIC, KCWidget
from .requests import int_arg, str_arg
from .schema import value_preview


def as_forest(source) -> kc.ScopeForest:
    """A kc.ScopeForest from a Scope, a ScopeForest, or anything with a .forest() (a DebugSession, a TimeView)."""
    if isinstance(source, kc.ScopeForest):
        return source
    if isinstance(source, kc.Scope):
        return kc.ScopeForest(source)
    forest = getattr(source, "forest", None)
    if callable(forest):
        return forest()
    raise TypeError(f"ScopeForest takes a kc.Scope, a kc.ScopeForest, a DebugSession or a TimeView, "
                    f"got {type(source).__name__}")


class ScopeForest(KCWidget):
    """`ScopeForest(scope_or_forest)`: the browser asks for a variable's value with
    `{"type": "open", "scope": id, "name": var}`; Python puts its ValuePreview in `opened["<id>:<name>"]`
    (a GPU value is copied to the host only then)."""

    _esm = STATIC / "ScopeForest.js"
    _css = STATIC / "ScopeForest.css"

    forest = t.Dict().tag(sync=True, ts="ScopeForestJSON")
    opened = t.Dict().tag(sync=True)

    def update_forest(self, scope_or_forest) -> None:
        """Show a new snapshot (the Debugger calls this after each step); open values are previewed again."""
        self._forest = as_forest(scope_or_forest)
        self.forest = self._forest.to_json()
        opened = {}
        for key in self.opened:
            sid, _, name = key.partition(":")
            if sid.lstrip("-").isdigit() and int(sid) in self._forest:
                opened[key] = self._preview(int(sid), name)
        self.opened = opened

    def open_var(self, scope: int, name: str) -> dict:
        key = f"{scope}:{name}"
        self.opened = {**self.opened, key: self._preview(scope, name)}
        return self.opened[key]

    def _preview(self, scope: int, name: str) -> dict:
        try:
            node = self._forest[scope]
        except KeyError as e:
            return {"error": str(e.args[0])}
        if name not in node.vars:
            return {"error": f"scope {scope} holds no variable {name!r}"}
        info = node.vars[name]
        if info.kind != "tensor":
            return {"error": f"{name!r} holds no tensor ({info.describe()})"}
        return value_preview(node.value(name), place=info.place)

    def _forest_open(self, content) -> None:
        self.open_var(int_arg(content, "scope"), str_arg(content, "name"))  # a malformed one: an error back

    def __init__(self, scope_or_forest, **kw):
        super().__init__(**kw)
        self.update_forest(scope_or_forest)

    update = update_forest

    def _messages(self) -> dict:
        return {"open": self._forest_open}
