"""Interventions: a value replaced at a pause, and the run forked there.

`fork = sess.set_value(name, array)` replaces `name`'s value where the session waits and records the edit in its
trace (a var_create event of op type "set_value" holding the new value, so time travel before it shows the old
value and after it the new). The session goes on with the edit; `fork.twin` is a second session started from the
same state without the edit, paused before the same op, for the branch not taken. `fork.compare()` sets the two
branches side by side (kc.compare_runs over what each ran after the fork).

The twin starts the program again at the paused op, which the executor can do in block 0 only: at a pause
inside a sub-block (a loop's timestep) the edit is made and recorded, and `fork.twin` is None.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import KernelcoreError, ShapeError
from ..runtime import events
from .trace import Trace

EDIT_OP_TYPE = "set_value"  # the op_type of the var_create event that records an edit


@dataclass(eq=False)
class Fork:
    name: str
    event: int          # index of the edit's event in the edited session's trace
    pause: int          # the pause the edit was made at
    old: Any
    new: Any
    twin: Any = None    # a DebugSession on the unedited branch (None: the pause was inside a sub-block)
    edited: Any = None  # the session that went on with the edit

    def branches(self) -> tuple[Trace, Trace]:
        """(the unedited branch's trace, the edited branch's events after the edit, as a trace)."""
        if self.twin is None:
            raise KernelcoreError(f"the edit of {self.name!r} was made inside a sub-block: there is no unedited "
                                  f"twin to compare with (forks start again from a block 0 op)")
        after = self.edited.trace.events[self.event + 1:]
        return self.twin.trace, Trace(after, retain=self.edited.trace.retain)

    def compare(self, rtol: float = 0.0, atol: float = 0.0):
        """kc.compare_runs(unedited branch, edited branch) over what each has run since the fork."""
        from .compare import compare_runs
        return compare_runs(*self.branches(), rtol=rtol, atol=atol)

    def __repr__(self) -> str:
        twin = "with an unedited twin" if self.twin is not None else "no twin"
        return f"<Fork {self.name!r} set at pause {self.pause} (event {self.event}), {twin}>"


def new_value(name: str, old, value, xp):
    """`value` as the edited variable will hold it: on the place's array module, in the old value's dtype, and of
    its shape (an edit that changed the shape would fail the ops after it, far from the cause)."""
    arr = np.asarray(value)
    dtype, shape = getattr(old, "dtype", None), getattr(old, "shape", None)
    if shape is not None and tuple(arr.shape) != tuple(shape):
        raise ShapeError(f"set_value({name!r}): the variable holds shape {list(shape)}, the new value has "
                         f"{list(arr.shape)}")
    if dtype is not None:
        arr = arr.astype(dtype, copy=False)
    return xp.asarray(arr)


def edit_event(ctx, scope_id: int, name: str, value):
    """The trace event of an edit, numbered in the run's own sequence."""
    return events.var_create(ctx.run.next_seq(), time.perf_counter_ns(), scope_id, ctx.block, name,
                             op_type=EDIT_OP_TYPE, values=((name, value),))


def twin_scope(scope):
    """A scope holding what `scope` and its ancestors hold (references: kernels never mutate a held value)."""
    from ..runtime.scope import Scope
    chain = []
    s = scope
    while s is not None:
        chain.append(s)
        s = s.parent
    out = Scope()
    for s in reversed(chain):  # outermost first, so an inner value wins
        for v in s.local_vars():
            out.var(v.name).value = v.value
    return out
