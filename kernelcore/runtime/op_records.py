"""What a traced run records of each op: a compact tuple, which observers that take it (the Trace) turn into an
Event only when someone looks (events.op_run_event). Under RECORD_METAS a whole block's run derives its inputs'
(shape, dtype) from their writers (events.BlockRun, planned once per block by prepared.plan_derived_records) and
measures only the outputs; otherwise each record reads every value's (shape, dtype), keeps references, or keeps
the head alone. The loop (executor._exec_block) builds the common records inline: a call per op is a tenth of a traced
op's cost."""
from __future__ import annotations

import operator

from .events import META, meta_of

SHAPE_DTYPE = operator.attrgetter("value.shape", "value.dtype")  # a Variable's (shape, dtype)
VALUE = operator.attrgetter("value")  # a Variable's value, read in C


def measure(variables: tuple) -> tuple:
    """(shape, dtype, shape, dtype, ...) of the values a derived record measures (events.BlockRun)
    when there are several; the loop reads a single one inline."""
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


def metas_record(seq, t1, t0, op, scope_id, timestep, place_name, io_vars) -> tuple:
    """The RECORD_METAS record of an op run outside a whole block's derived records (a run from the middle of a
    block): every value's (shape, dtype)."""
    try:  # read in C: no Python frame per value
        return (seq, t1, t0, op, scope_id, timestep, place_name, META, *map(SHAPE_DTYPE, io_vars))
    except AttributeError:  # a value that is not an array (a list, a number, nothing)
        return (seq, t1, t0, op, scope_id, timestep, place_name, META, *[meta_of(v.value) for v in io_vars])
