"""The flight recorders the "Training health" panel can show: those bound to a name in the notebook's namespace
(`with kc.record(main, scope) as rec:` binds `rec` before the loop's first iteration, so a recording is found
while it runs), and those a bound kc.Model or FitResult holds as `.recorder` (`model.fit(..., record=True)`
sets `model.recorder` as it starts, so a fit is found while it runs too). The engine keeps no list of
recorders, and the panel needs none: a recorder nobody can name from the notebook is one the person cannot look
at from a cell either.

The most recent recorder is the one whose summaries grew last (the loop running now, or the one that ran
last); recorders never seen growing rank in the namespace's order, the last bound first.
"""
from __future__ import annotations

import itertools
import weakref

from kernelcore.api.model import FitResult, Model
from kernelcore.observe.recorder import Recorder

MAX_RECORDERS = 50  # listed in the panel's picker (the most recent ones)
MAX_LABEL = 120     # characters of a recorder's name as listed


class RecorderList:
    """Finds recorders in `namespace()` and remembers, per recorder, when its summaries last grew."""

    def __init__(self, namespace):
        self._namespace = namespace
        self._clock = itertools.count(1)
        # id(recorder) -> (weak reference, rows when last seen, the clock when they last changed)
        self._seen: dict[int, tuple] = {}

    def found(self) -> list[tuple[str, Recorder]]:
        """(name, recorder) of each recorder bound in the namespace, the most recent first, at most
        MAX_RECORDERS; a recorder bound to several names is listed under the first."""
        named: dict[int, tuple[str, Recorder]] = {}
        for name, rec in _bound(self._namespace()):
            if id(rec) not in named:
                named[id(rec)] = (name, rec)
        stamps = {key: self._stamp(rec) for key, (_name, rec) in named.items()}
        self._forget_gone(named)
        ranked = sorted(named, key=lambda key: -stamps[key])
        return [named[key] for key in ranked[:MAX_RECORDERS]]

    def any_bound(self) -> bool:
        """Whether a recorder is bound to a name in the namespace."""
        return next(_bound(self._namespace()), None) is not None

    def _stamp(self, rec: Recorder) -> int:
        rows = len(rec.summaries)
        seen = self._seen.get(id(rec))
        if seen is not None and seen[0]() is rec and seen[1] == rows:
            return seen[2]
        stamp = next(self._clock)
        self._seen[id(rec)] = (weakref.ref(rec), rows, stamp)
        return stamp

    def _forget_gone(self, named: dict) -> None:
        for key in [k for k in self._seen if k not in named]:
            del self._seen[key]

    def pick(self, wanted: str | None, found: list | None = None) -> tuple[str, Recorder] | None:
        """The recorder named `wanted` (its name as describe() sends it), else the most recent one; None when
        there is none. `found`: what found() just returned, if the caller has it."""
        found = self.found() if found is None else found
        for name, rec in found:
            if name[:MAX_LABEL] == wanted:
                return name, rec
        return found[0] if found else None


def describe(name: str, rec: Recorder) -> dict:
    """A picker entry: {name, label, iterations, stopped}."""
    hit = rec.hit
    label = name if len(name) <= MAX_LABEL else name[:MAX_LABEL - 1] + "\u2026"
    return {"name": name[:MAX_LABEL], "label": label, "iterations": int(rec.iterations),
            "stopped": hit is not None}


def _bound(namespace: dict):
    """(name, recorder) of each recorder the namespace's public names hold: itself, or as a kc.Model's or a
    FitResult's `.recorder` (named "model.recorder"), in the namespace's order."""
    for name, value in list(namespace.items()):
        if not isinstance(name, str) or name.startswith("_"):
            continue
        if isinstance(value, Recorder):
            yield name, value
        elif isinstance(value, (Model, FitResult)) and isinstance(value.recorder, Recorder):
            yield f"{name}.recorder", value.recorder
