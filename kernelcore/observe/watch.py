"""Watchpoints: conditions checked on the values an op writes, during a debug session or over a record.

    w = sess.watch("h", "nan")                        # NaN or Inf written to h
    sess.watch("h", "overflow", bound=1e4)            # |x| above a bound
    sess.watch("h", "zero")                           # every element zero
    sess.watch("h", "range", lo=-1, hi=1)             # an element outside [lo, hi]
    sess.watch("h", "unchanged")                      # equal to the previous write of the same name
    sess.watch("w@GRAD", "grad_norm", hi=100, lo=1e-8)  # gradient explosion / vanishing (L2 norm)
    sess.watch("w", "update_ratio", hi=0.1)           # ||new - old|| / ||old|| of a weight above a bound
    sess.watch(op_type="tanh", cond="nan")            # on every output of every tanh op

A watch is checked on an op_run event's retained values (the session's "references" policy keeps them), so
it works the same live, replaying the record forward, and in reverse (`reverse_cont`). A hit stops the
session right after the op that wrote the value, like a write breakpoint; `sess.hits` lists them all.
The checks run outside kernels, on whatever array module the place uses (NumPy or CuPy), and copy one
number per check to the host.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import KernelcoreError
from ..runtime.values import nonfinite

CONDITIONS = ("nan", "overflow", "zero", "range", "unchanged", "grad_norm", "update_ratio")


@dataclass
class Watch:
    id: int
    cond: str
    var: str | None = None
    op_type: str | None = None
    lo: float | None = None
    hi: float | None = None
    enabled: bool = True
    hits: list = field(default_factory=list)  # [WatchHit]

    def matches(self, op_type: str, name: str) -> bool:
        if self.var is not None:
            return name == self.var
        if self.op_type != op_type:
            return False
        if self.cond == "grad_norm":
            return "@GRAD" in name
        return True

    def _what(self) -> str:
        c = self.cond

        def bounds() -> str:
            parts = ([f"> {self.hi:g}"] if self.hi is not None else []) + \
                ([f"< {self.lo:g}"] if self.lo is not None else [])
            return " or ".join(parts)
        if c == "nan":
            return "NaN/Inf"
        if c == "overflow":
            return f"|x| > {self.hi:g}"
        if c == "zero":
            return "all zero"
        if c == "range":
            return f"outside [{self.lo:g}, {self.hi:g}]"
        if c == "unchanged":
            return "unchanged since its previous write"
        if c == "grad_norm":
            return "gradient norm " + bounds()
        return "update ratio " + bounds()

    def __str__(self) -> str:
        on = f"{self.var!r}" if self.var is not None else f"outputs of {self.op_type!r} ops"
        return f"watch #{self.id} {self._what()} on {on}"

    def to_json(self) -> dict:
        return {"id": self.id, "cond": self.cond, "var": self.var, "op_type": self.op_type, "lo": self.lo,
                "hi": self.hi, "enabled": self.enabled, "text": str(self), "hits": len(self.hits)}


@dataclass(frozen=True)
class WatchHit:
    watch: int
    event: int       # index of the op_run event in the trace
    block: int
    op: int
    op_type: str
    timestep: int | None
    var: str
    message: str

    def to_json(self) -> dict:
        return {"watch": self.watch, "event": self.event, "block": self.block, "op": self.op,
                "op_type": self.op_type, "timestep": self.timestep, "var": self.var, "message": self.message}


def make_watch(wid: int, var: str | None, cond: str, op_type: str | None, lo, hi, bound) -> Watch:
    if cond not in CONDITIONS:
        raise KernelcoreError(f"unknown watch condition {cond!r}; expected one of {list(CONDITIONS)}")
    if (var is None) == (op_type is None):
        raise KernelcoreError("a watch needs exactly one of a variable name or op_type=")
    if bound is not None:
        hi = bound
    if cond == "overflow" and hi is None:
        raise KernelcoreError("an overflow watch needs bound= (the largest |x| allowed)")
    if cond == "range" and (lo is None or hi is None):
        raise KernelcoreError("a range watch needs lo= and hi=")
    if cond in ("grad_norm", "update_ratio") and lo is None and hi is None:
        raise KernelcoreError(f"a {cond} watch needs hi= (explosion) and/or lo= (vanishing)")
    return Watch(wid, cond, var, op_type, None if lo is None else float(lo), None if hi is None else float(hi))


def check(w: Watch, xp, value, previous) -> str | None:
    """Why `value` trips `w`, or None. `previous()` returns the value this name held before (or None)."""
    if getattr(value, "dtype", None) is None:
        return None
    c = w.cond
    if c == "nan":
        what = nonfinite(xp, value)
        return f"holds {what}" if what else None
    if c == "overflow":
        m = float(xp.abs(value).max()) if value.size else 0.0
        return f"max |x| = {m:.4g} > {w.hi:g}" if m > w.hi else None
    if c == "zero":
        return "is all zero" if value.size and not bool(xp.any(value)) else None
    if c == "range":
        if not value.size:
            return None
        lo, hi = float(value.min()), float(value.max())
        return f"values in [{lo:.4g}, {hi:.4g}] leave [{w.lo:g}, {w.hi:g}]" if lo < w.lo or hi > w.hi else None
    if c == "unchanged":
        old = previous()
        if old is None or getattr(old, "shape", None) != value.shape:
            return None
        return "equals its previous value" if bool(xp.array_equal(old, value)) else None
    if c == "grad_norm":
        return bounds_text(w, float(xp.sqrt((value.astype("float64") ** 2).sum())), "gradient norm", "explosion",
                           "vanishing")
    if c == "update_ratio":
        old = previous()
        if old is None or getattr(old, "shape", None) != value.shape:
            return None
        o = old.astype("float64")
        base = float(xp.sqrt((o ** 2).sum()))
        r = float(xp.sqrt(((value.astype("float64") - o) ** 2).sum())) / base if base > 0 else float("inf")
        return bounds_text(w, r, "update ratio", "too large", "too small")
    return None


def bounds_text(w: Watch, x: float, what: str, high: str, low: str) -> str | None:
    """Why `x` (a gradient norm, an update ratio) trips a watch with bounds hi= and/or lo=, or None: the text
    both a session's check and the recorder's (kernelcore/observe/summary_watch.py) give. A NaN passes hi."""
    if w.hi is not None and (x > w.hi or math.isnan(x)):
        return f"{what} {x:.4g} > {w.hi:g} ({high})"
    if w.lo is not None and x < w.lo:
        return f"{what} {x:.4g} < {w.lo:g} ({low})"
    return None
