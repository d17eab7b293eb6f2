"""Trace events: plain immutable records, one per thing the executor did.

Kinds, in the order a run produces them:
  run_begin / run_end    a top-level run of a block
  scope_push / scope_drop a scope made or dropped by an op (step scopes, branches)
  var_create             a variable created in a scope
  op_run                 an op ran: inputs/outputs as (slot, name, shape, dtype), kernel, time
  step_begin / step_end  one timestep of a recurrent or while op
  error                  an op failed; `message` says why
"""
from __future__ import annotations

from typing import Any, NamedTuple

KINDS = ("run_begin", "run_end", "scope_push", "scope_drop", "var_create", "op_run",
         "step_begin", "step_end", "error")


class Event(NamedTuple):
    seq: int
    kind: str
    t_ns: int                    # time.perf_counter_ns() when it happened (op_run: when it started)
    scope: int | None = None     # id of the scope it happened in
    block: int | None = None
    op: int | None = None        # op index in the block
    op_type: str | None = None
    name: str | None = None      # variable name (var_create) or None
    dur_ns: int | None = None    # op_run: wall time of the kernel
    inputs: tuple = ()           # ((slot, var name, shape, dtype), ...)
    outputs: tuple = ()
    kernel: str | None = None    # op_run: the kernel chosen, "module.function[place]"
    place: str | None = None
    parent_scope: int | None = None  # scope_push: the parent
    timestep: int | None = None  # step_*: the timestep; scope_push: the timestep it is for
    message: str | None = None   # error text; scope_push: what made it ("recurrent step", ...)
    values: Any = None           # op_run: retained output values (policy); never serialized

    def to_json(self) -> dict:
        d = {"seq": self.seq, "kind": self.kind, "t_ns": self.t_ns}
        for f in _OPTIONAL:
            v = getattr(self, f)
            if v is None or v == ():
                continue
            d[f] = [_io_json(x) for x in v] if f in _TUPLES else v
        return d

    @classmethod
    def from_json(cls, d: dict) -> Event:
        kw = {k: d[k] for k in cls._fields if k in d and k != "values"}
        for f in ("inputs", "outputs"):
            if f in kw:
                kw[f] = tuple((s, n, tuple(sh) if sh is not None else None, dt) for s, n, sh, dt in kw[f])
        return cls(**kw)


_OPTIONAL = [f for f in Event._fields if f not in ("seq", "kind", "t_ns", "values")]
_TUPLES = ("inputs", "outputs")


def _io_json(x) -> list:
    slot, name, shape, dtype = x
    return [slot, name, list(shape) if shape is not None else None, dtype]
