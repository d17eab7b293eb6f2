"""The seven watch conditions (kernelcore/observe/watch.py) judged from a health summary as the flight recorder
makes it, instead of from the value: what a training loop can afford on every op of every iteration.

Two conditions need more than a summary: "update_ratio" reads the value the same op took in under the same name
(an optimizer's Param beside its ParamOut) and is skipped where there is none; "unchanged" compares the summary
with the previous summary of the same variable (equal summaries of different values pass unseen).
"""
from __future__ import annotations

import math

import numpy as np

from ..runtime.place import to_host
from .health_summary import Summary
from .watch import Watch, bounds_text, make_watch


class EveryOutput(Watch):
    """A watch on every output of every op (the recorder's default NaN/Inf watch)."""

    def matches(self, op_type: str, name: str) -> bool:
        return self.cond != "grad_norm" or "@GRAD" in name

    def __str__(self) -> str:
        return f"watch #{self.id} {self._what()} on every output"


def every_output(wid: int, cond: str, lo, hi, bound) -> EveryOutput:
    w = make_watch(wid, "*", cond, None, lo, hi, bound)
    return EveryOutput(w.id, w.cond, None, None, w.lo, w.hi)


def _nonfinite_text(s: Summary) -> str:
    parts = [f"{n} {what}" for n, what in ((s.nan, "NaN"), (s.pos_inf, "+Inf"), (s.neg_inf, "-Inf")) if n]
    return "holds " + ", ".join(parts) + f" of {s.numel} elements"


def check(w, s: Summary, previous: Summary | None, old_value=None, value=None) -> str | None:
    """Why summary `s` (of `value`) trips watch `w`, or None. `previous`: the same variable's previous summary;
    `old_value`: the value the op read under the output's name (for "update_ratio")."""
    c = w.cond
    if c == "nan":
        return _nonfinite_text(s) if s.nonfinite else None
    if c == "overflow":
        if s.pos_inf or s.neg_inf:
            return _nonfinite_text(s)
        m = max(abs(s.min), abs(s.max)) if s.numel > s.nan else 0.0
        return f"max |x| = {m:.4g} > {w.hi:g}" if m > w.hi else None
    if c == "zero":
        return "is all zero" if s.numel and s.zero == s.numel else None
    if c == "range":
        if s.nonfinite:
            return _nonfinite_text(s)
        if s.numel and (s.min < w.lo or s.max > w.hi):
            return f"values in [{s.min:.4g}, {s.max:.4g}] leave [{w.lo:g}, {w.hi:g}]"
        return None
    if c == "unchanged":
        return "has the same summary as its previous write" if previous is not None and _same(s, previous) else None
    if c == "grad_norm":
        return bounds_text(w, s.l2, "gradient norm", "explosion", "vanishing")
    if c == "update_ratio":
        return None if old_value is None or value is None else _update_ratio(w, old_value, value)
    return None


def _same(a: Summary, b: Summary) -> bool:
    return all(x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y)) for x, y in zip(a, b))


def _update_ratio(w, old, new) -> str | None:
    old, new = np.asarray(to_host(old), np.float64), np.asarray(to_host(new), np.float64)
    if old.shape != new.shape:
        return None
    base = float(np.linalg.norm(old))
    ratio = float(np.linalg.norm(new - old)) / base if base > 0 else math.inf
    return bounds_text(w, ratio, "update ratio", "too large", "too small")


__all__ = ["EveryOutput", "check", "every_output"]
