"""Trace events: plain immutable records, one per thing the executor did.

Kinds, in the order a run produces them:
  run_begin / run_end    a top-level run of a block
  scope_push / scope_drop a scope made or dropped by an op (step scopes, branches)
  var_create             a variable created in a scope (with its value when an op bound it)
  vars_create            several variables created at once in a step scope (`names`): a control-flow
                         op's step block binding its locals, or the op binding a timestep's inputs and
                         states (`op` set; values not retained), one event instead of one per name
  op_run                 an op ran: inputs/outputs as (slot, name, shape, dtype), kernel, time
  step_begin / step_end  one timestep of a recurrent or while op
  error                  an op failed; `message` says why
"""
from __future__ import annotations

from typing import Any, NamedTuple

KINDS = ("run_begin", "run_end", "scope_push", "scope_drop", "var_create", "vars_create", "op_run",
         "step_begin", "step_end", "error")


class Event(NamedTuple):
    seq: int
    kind: str
    t_ns: int                    # time.perf_counter_ns() when recorded (op_run: when it ended)
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
    names: tuple = ()            # vars_create: the names created
    values: Any = None           # op_run: ((var name, value), ...) of its outputs when retained; never serialized

    def to_json(self) -> dict:
        d = {"seq": self.seq, "kind": self.kind, "t_ns": self.t_ns}
        for f in _OPTIONAL:
            v = getattr(self, f)
            if v is None or v == ():
                continue
            d[f] = [_io_json(x) for x in v] if f in _TUPLES else v
        return d


# -- one constructor per kind: the only way events are made. Some fire per timestep, so each builds the
# whole 18-field tuple itself (tuple.__new__), skipping the NamedTuple's Python-level __new__.
_new = tuple.__new__


def run_begin(seq: int, t: int, scope: int, message: str) -> Event:
    return _new(Event, (seq, "run_begin", t, scope, 0, None, None, None, None, (), (), None, None, None, None,
                        message, (), None))


def run_end(seq: int, t: int, scope: int) -> Event:
    return _new(Event, (seq, "run_end", t, scope, 0, None, None, None, None, (), (), None, None, None, None,
                        None, (), None))


def scope_push(seq: int, t: int, scope: int, block: int, op: int, op_type: str, parent_scope: int,
               timestep: int | None, message: str) -> Event:
    return _new(Event, (seq, "scope_push", t, scope, block, op, op_type, None, None, (), (), None, None,
                        parent_scope, timestep, message, (), None))


def scope_drop(seq: int, t: int, scope: int, parent_scope: int | None) -> Event:
    return _new(Event, (seq, "scope_drop", t, scope, None, None, None, None, None, (), (), None, None,
                        parent_scope, None, None, (), None))


def var_create(seq: int, t: int, scope: int, block: int, name: str, op: int | None = None,
               op_type: str | None = None, values=None) -> Event:
    """`values`: ((name, value),) when an op bound the variable and values are retained."""
    return _new(Event, (seq, "var_create", t, scope, block, op, op_type, name, None, (), (), None, None, None,
                        None, None, (), values))


def vars_create(seq: int, t: int, scope: int, block: int, names: tuple, op: int | None = None,
                op_type: str | None = None) -> Event:
    """Several variables made in a scope at once: a step block's locals, or (`op`, `op_type`: the op that
    bound them) a control-flow op's step inputs and carried states when no values are retained."""
    return _new(Event, (seq, "vars_create", t, scope, block, op, op_type, None, None, (), (), None, None, None,
                        None, None, names, None))


def step(kind: str, seq: int, t: int, scope: int, block: int, op: int, op_type: str, timestep: int) -> Event:
    """step_begin / step_end of one timestep of a control-flow op."""
    return _new(Event, (seq, kind, t, scope, block, op, op_type, None, None, (), (), None, None, None, timestep,
                        None, (), None))


def error(seq: int, t: int, scope: int | None, block: int | None, op: int | None, op_type: str | None,
          name: str | None, message: str, timestep: int | None) -> Event:
    return _new(Event, (seq, "error", t, scope, block, op, op_type, name, None, (), (), None, None, None,
                        timestep, message, (), None))


_OPTIONAL = [f for f in Event._fields if f not in ("seq", "kind", "t_ns", "values")]
_TUPLES = ("inputs", "outputs")


def _io_json(x) -> list:
    slot, name, shape, dtype = x
    return [slot, name, list(shape) if shape is not None else None, dtype]


_DTYPE_NAMES: dict = {}


def _dtype_name(dt) -> str | None:
    if dt is None or isinstance(dt, str):
        return dt
    n = _DTYPE_NAMES.get(dt)
    if n is None:  # str(np.dtype) costs microseconds; names are cached
        n = _DTYPE_NAMES[dt] = str(dt)
    return n


def _io(pairs, metas) -> tuple:
    return tuple((slot, name, tuple(shape) if shape is not None else None, _dtype_name(dt))
                 for (slot, name), (shape, dt) in zip(pairs, metas))


# The executor's compact op record, turned into an Event only when someone looks:
#   (seq, t_end, t_start, prepared op, scope id, timestep, place, *values)       raw: the values of
#       op.in_pairs + op.out_pairs, by reference (kernels never mutate, so they are as they were)
#   (seq, t_end, t_start, prepared op, scope id, timestep, place, META, *metas)   compacted: (shape, dtype)
#       for each, the values released (trace.py does this in batches under the "shapes" policy)
#   (seq, t_end, t_start, prepared op, scope id, timestep, place, BlockRun, *flat) derived: `flat` is
#       shape, dtype, shape, dtype, ... of the op's outputs, then of the inputs its block could not
#       know otherwise; the other inputs' metadata is recovered when the record is read (op.in_sources)
#   (seq, t_end, t_start, prepared op, scope id, timestep, place)                 no shapes kept
META = object()
RECORD_HEAD = 7
# What the executor puts in a record, by what its observers keep (the strongest wins)
RECORD_HEAD_ONLY, RECORD_METAS, RECORD_VALUES = "head", "metas", "values"
# Where a derived record finds an input's (shape, dtype) (PreparedOp.in_sources entries, by kind):
FROM_RECORD = 0   # (FROM_RECORD, i): in the record itself, the i-th after the outputs
FROM_WRITER = 1   # (FROM_WRITER, k, j): output j of op k of the same block run, which wrote it last
FROM_START = 2    # (FROM_START, c): the c-th of what the block run read before any op of it ran


class BlockRun:
    """One run of a block, shared by its ops' derived records. An input written earlier in the same run
    need not be measured again when the op runs: its (shape, dtype) is the writer's output, and a value
    no op of the run wrote before reading it is as it was when the run began (`at_start`).
    `outputs` fills in as the records are read, in order."""

    __slots__ = ("at_start", "outputs")

    def __init__(self, at_start: tuple):
        self.at_start = at_start  # (shape, dtype, shape, dtype, ...) of what the block reads first
        self.outputs: dict = {}


def meta_of(value) -> tuple:
    dt = getattr(value, "dtype", None)
    if dt is None:
        return _meta_of_other(value)
    return (value.shape, _dtype_name(dt))


def _meta_of_other(value) -> tuple:
    """(shape, dtype) of a value that is no array: a tensor array (a list) has its length as its shape and
    "list" as its dtype; a number or a string its type's name alone; nothing (None, None)."""
    if value is None:
        return (None, None)
    if isinstance(value, list):
        return ((len(value),), "list")
    return (None, type(value).__name__)


def compact(rec) -> tuple:
    if len(rec) == RECORD_HEAD or rec[RECORD_HEAD] is META or type(rec[RECORD_HEAD]) is BlockRun:
        return rec
    metas = []
    for v in rec[RECORD_HEAD:]:  # inlined meta_of, dtype names resolved only when read: this runs per op
        dt = getattr(v, "dtype", None)
        metas.append((v.shape, dt) if dt is not None else _meta_of_other(v))
    return rec[:RECORD_HEAD] + (META, *metas)


def _derived_metas(op, run: BlockRun, flat) -> tuple[list, list]:
    pairs = list(zip(flat[0::2], flat[1::2]))
    n_out = len(op.out_pairs)
    outs = pairs[:n_out]
    run.outputs[op.idx] = outs
    ins = []
    for src in op.in_sources:
        kind = src[0]
        if kind == FROM_RECORD:
            ins.append(pairs[n_out + src[1]])
        elif kind == FROM_WRITER:
            written = run.outputs.get(src[1])
            ins.append(written[src[2]] if written is not None else (None, None))
        else:
            c = 2 * src[1]
            ins.append((run.at_start[c], run.at_start[c + 1]))
    return ins, outs


def op_run_event(rec, keep_values: bool = False) -> Event:
    seq, t1, t0, op, scope_id, timestep, place = rec[:RECORD_HEAD]
    n_in = len(op.in_pairs)
    values = None
    if len(rec) == RECORD_HEAD:
        ins = outs = ()
    elif rec[RECORD_HEAD] is META:
        metas = rec[RECORD_HEAD + 1:]
        ins, outs = _io(op.in_pairs, metas[:n_in]), _io(op.out_pairs, metas[n_in:])
    elif type(rec[RECORD_HEAD]) is BlockRun:
        in_metas, out_metas = _derived_metas(op, rec[RECORD_HEAD], rec[RECORD_HEAD + 1:])
        ins, outs = _io(op.in_pairs, in_metas), _io(op.out_pairs, out_metas)
    else:
        vals = rec[RECORD_HEAD:]
        metas = [meta_of(v) for v in vals]
        ins, outs = _io(op.in_pairs, metas[:n_in]), _io(op.out_pairs, metas[n_in:])
        if keep_values:
            values = tuple((name, v) for (_, name), v in zip(op.out_pairs, vals[n_in:]))
    return _new(Event, (seq, "op_run", t1, scope_id, op.block, op.idx, op.type, None, t1 - t0, ins, outs,
                        op.kernel_name, place, None, timestep, None, (), values))
