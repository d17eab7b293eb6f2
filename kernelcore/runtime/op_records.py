"""What a traced run records of each op: a compact tuple, which observers that take it (the Trace) turn into an
Event only when someone looks (events.op_run_event). Under RECORD_METAS a whole block's run derives its inputs'
(shape, dtype) from their writers (events.BlockRun, planned once per block by prepared.plan_derived_records) and
measures only the outputs; otherwise each record reads every value's (shape, dtype), keeps references, or keeps
the head alone."""
from __future__ import annotations

import operator
import time

from .events import META, RECORD_METAS, RECORD_VALUES, meta_of

_perf = time.perf_counter_ns
_SHAPE_DTYPE = operator.attrgetter("value.shape", "value.dtype")  # a Variable's (shape, dtype)
_VALUE = operator.attrgetter("value")  # a Variable's value, read in C


def measure(variables: tuple) -> tuple:
    """(shape, dtype, shape, dtype, ...) of the values a derived record measures (events.BlockRun)
    when there are several; `record_op` reads a single one inline."""
    out = []
    for var in variables:
        v = var.value
        try:
            shape, dtype = v.shape, v.dtype
        except AttributeError:  # a value that is not an array (a list, a number, nothing): that one alone
            shape, dtype = meta_of(v)
        out.append(shape)
        out.append(dtype)
    return tuple(out)


def record_op(take_record, seq, t0, op, scope_id, timestep, place_name, mode, block_run, measured, io_vars) -> int:
    """Hand the record of one op run (started at t0) to `take_record`; the next event number."""
    t1 = _perf()  # RunState.record_op_run does the same for a kernel's own steps
    if block_run is not None:  # outputs' (shape, dtype), and of the inputs nothing else tells
        if type(measured) is tuple:
            rec = (seq, t1, t0, op, scope_id, timestep, place_name, block_run) + measure(measured)
        else:
            v = measured.value
            try:
                rec = (seq, t1, t0, op, scope_id, timestep, place_name, block_run, v.shape, v.dtype)
            except AttributeError:  # a value that is not an array (a list, a number, nothing)
                rec = (seq, t1, t0, op, scope_id, timestep, place_name, block_run, *meta_of(v))
    elif mode is RECORD_METAS:
        try:  # (shape, dtype) of each value, read in C: no Python frame per value
            rec = (seq, t1, t0, op, scope_id, timestep, place_name, META, *map(_SHAPE_DTYPE, io_vars))
        except AttributeError:  # a value that is not an array (a list, a number, nothing)
            rec = (seq, t1, t0, op, scope_id, timestep, place_name, META, *[meta_of(v.value) for v in io_vars])
    elif mode is RECORD_VALUES:  # references: held, so never donated (runner.make_runner): they stay as they were
        rec = (seq, t1, t0, op, scope_id, timestep, place_name, *map(_VALUE, io_vars))
    else:
        rec = (seq, t1, t0, op, scope_id, timestep, place_name)
    take_record(rec)
    return seq + 1
