"""An op that failed, or wrote NaN or Inf under check_nan_inf, as the OpRunError that names it, its inputs and where
it ran (and, in an observed run, the `error` event that reports it)."""
from __future__ import annotations

import time

from . import events
from ..errors import NonFiniteError, OpRunError
from .values import nonfinite

_perf = time.perf_counter_ns


def check_finite(run, ctx, op, in_vars, out_vars):
    """Raise NonFiniteError where an output the op wrote holds NaN or Inf."""
    xp = run.xp
    for (slot, names, dup), e in zip(op.outs, out_vars):
        if e is None:
            continue
        for v in (e if dup else (e,)):
            what = nonfinite(xp, v.value)
            if what is not None:
                raise op_error(run, ctx, op, in_vars, None, var=v.name,
                                message=f"output {slot!r} (variable {v.name!r}) holds {what}; the inputs that "
                                        f"led to it are listed below", cls=NonFiniteError)


def op_error(run, ctx, op, in_vars, exc, var=None, message=None, cls=OpRunError) -> OpRunError:
    """The error `cls` for op's failure (`exc`, or `message`), naming every input's variable, shape and dtype."""
    given = []
    missing = None
    for (slot, names, dup), e in zip(op.ins, in_vars):
        if e is None:
            continue
        for v in (e if dup else (e,)):
            val = v.value
            shape = getattr(val, "shape", None)
            if val is None and missing is None:
                missing = (slot, v.name)
            given.append((slot, v.name, tuple(shape) if shape is not None else None,
                          getattr(val, "dtype", type(val).__name__)))
    if message is not None:
        msg = message
    elif missing is not None and var is None:
        msg = (f"input {missing[0]!r} (variable {missing[1]!r}) has no value: feed it or run the op "
               f"that writes it first")
        var = missing[1]
    else:
        msg = f"{type(exc).__name__}: {exc}"
    err = cls(msg, op_type=op.type, block_idx=op.block, op_idx=op.idx, var_name=var,
                     inputs=tuple(given), timestep=ctx.timestep)
    if run.observers:
        run.deliver(events.error(run.next_seq(), _perf(), ctx.scope.id, op.block, op.idx, op.type, var, str(err),
                                 ctx.timestep))
        err._kc_traced = True
    return err
