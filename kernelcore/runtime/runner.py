"""The closure the run loop calls for one op (`make_runner`), bound to its Variables, and donation: where an op
may write its output into its input's array because nothing else holds that array."""
from __future__ import annotations

from sys import getrefcount

from .prepared import PreparedOp


def make_runner(op: PreparedOp, in_vars: tuple, out_vars: tuple, simple: bool, single, donate: bool = False):
    """The closure the loop calls for one op, bound to its Variables: reads the inputs, calls the
    kernel (or the op's specialised form), writes the outputs. Kept as few steps as possible: this
    is the cost of an op beyond its arithmetic.

    Donation (`donate`, for runs that do not record values): where the op declares an in-place pair
    (ParamOut over Param), the program names one Variable for both, and that Variable is the only holder
    of the input's array (its reference count, as NumPy's own temporary elision reads it), the kernel is
    told it may write the output into that array (`ctx.donated`): the old value is overwritten anyway,
    and no one else can see it change. A value the user, a trace or a view still holds is never donated."""
    fast = op.fast
    if fast is not None:
        (out,) = [v for e in out_vars if e is not None for v in (e if type(e) is tuple else (e,))]
        present = [e for e in in_vars if e is not None]
        if len(present) == 1:
            (a,) = present

            def run(ctx):
                out.value = fast(a.value)
        elif len(present) == 2:
            a, b = present

            def run(ctx):
                out.value = fast(a.value, b.value)
        else:
            def run(ctx):
                out.value = fast(*[v.value for v in present])
        return run
    kernel, attrs = op.kernel, op.attrs
    donors = _donors(op, in_vars, out_vars) if donate else ()
    if simple and single is not None and not donors:
        def run(ctx):
            ctx.op = op
            o = kernel(ctx, [v.value for v in in_vars], attrs)[0]
            if o is not None:
                single.value = o
        return run

    if donors:
        def run(ctx):
            ctx.op = op
            ctx.donated = frozenset([slot for slot, v in donors if getrefcount(v.value) == ONLY_HELD])
            try:
                write_outputs(out_vars, kernel(ctx, [v.value for v in in_vars] if simple else
                                        [read_entry(e) for e in in_vars], attrs))
            finally:
                ctx.donated = NOTHING_DONATED
        return run

    def run(ctx):
        ctx.op = op
        write_outputs(out_vars, kernel(ctx, [v.value for v in in_vars] if simple else [read_entry(e) for e in in_vars],
                                attrs))
    return run


class _OneHolder:
    __slots__ = ("value",)


def _only_held_count() -> int:
    """What `getrefcount(variable.value)` reads for a value one Variable alone holds: measured the way
    `make_runner` reads it rather than assumed, since interpreters count the call's own reference differently."""
    holder = _OneHolder()
    holder.value = object()
    return getrefcount(holder.value)


ONLY_HELD = _only_held_count()
NOTHING_DONATED = frozenset()


def _donors(op: PreparedOp, in_vars: tuple, out_vars: tuple) -> tuple:
    """(input slot, Variable) of each in-place pair of the op whose output Variable is its input's own."""
    inplace = op.opdef.inplace
    if not inplace:
        return ()
    in_at = {sl.name: i for i, sl in enumerate(op.opdef.inputs)}
    out_at = {sl.name: i for i, sl in enumerate(op.opdef.outputs)}
    found = []
    for out_slot, in_slot in inplace.items():
        v = in_vars[in_at[in_slot]]
        if v is not None and type(v) is not tuple and v is out_vars[out_at[out_slot]]:
            found.append((in_slot, v))
    return tuple(found)


def write_outputs(out_vars: tuple, outs) -> None:
    for v, o in zip(out_vars, outs):
        if v is None or o is None:
            continue
        if type(v) is tuple:
            for vv, oo in zip(v, o):
                vv.value = oo
        else:
            v.value = o



def read_entry(entry):
    """The value of a bound input: a Variable's, a duplicable slot's list of them, or None for an absent slot."""
    if entry is None:
        return None
    if type(entry) is tuple:
        return [v.value for v in entry]
    return entry.value
