"""The executor: runs a block in a scope (seed 004's Net), one observed loop.

Shaped like JAX's eval_jaxpr: a block is *prepared* once (kernel chosen,
attributes parsed, slots resolved to names), then *bound* to a scope (names
resolved to Variables, cached while no scope on the chain gains or loses a
name), then run in one loop that reads inputs, calls the kernel and writes
outputs. Observers (the trace recorder, the debugger) receive events; with
none attached the loop does no per-event work.

The loop is a generator so that control-flow kernels can run sub-blocks with
`yield from ctx.run_block(...)` and a debugger can suspend a run between any
two ops, inside any timestep, without threads. A plain run never yields.
"""
from __future__ import annotations

import contextvars
import operator
import time
from sys import getrefcount
import weakref
from typing import Any, Callable, Iterator

import numpy as np

from . import cpu_parts, fast_paths
from ..ir import dtypes
from .host_memory import keep_freed_memory
from ..errors import (DtypeError, FeedError, KernelcoreError, NonFiniteError, OpRunError, PlaceError, ProgramError,
                      ShapeError)
from . import events
from .events import (META, RECORD_HEAD_ONLY, RECORD_METAS, RECORD_VALUES, BlockRun, Event, meta_of,
                     op_run_event)
from .place import CPUPlace, GPUPlace, to_host
from ..ir.program import Program, Variable as ProgramVariable, check_structure
from ..ir.proto import framework_pb2 as pb
from ..ir.registry import feed_fetch_col, get_op_def, has_op
from .scope import Scope, global_scope
from ..ir.support import check_supported
from ..text_safety import NAME_CHARS_SHOWN, quote_name
from .values import nonfinite

VT = pb.VarType
_perf = time.perf_counter_ns
_SHAPE_DTYPE = operator.attrgetter("value.shape", "value.dtype")  # a Variable's (shape, dtype)
_VALUE = operator.attrgetter("value")  # a Variable's value, read in C

# Observers that every run in this context reports to (kc.trace() adds one).
_active_observers: contextvars.ContextVar[tuple] = contextvars.ContextVar("kernelcore_observers", default=())


def add_observer(observer: Callable[[Event], None]) -> contextvars.Token:
    return _active_observers.set(_active_observers.get() + (observer,))


def remove_observer(token: contextvars.Token) -> None:
    _active_observers.reset(token)


# ---------------------------------------------------------------------------
class PreparedOp:
    """An op ready to run: kernel chosen, attributes parsed, slot names resolved."""

    __slots__ = ("type", "block", "idx", "opdef", "kernel", "kernel_name", "attrs", "ins", "outs",
                 "is_gen", "in_names", "out_names", "in_pairs", "out_pairs", "in_dtypes", "in_shapes", "fast",
                 "in_sources", "recorded")

    def __init__(self, program: Program, block_idx: int, idx: int, desc: pb.OpDesc, place):
        self.type, self.block, self.idx = desc.type, block_idx, idx
        where = f"op {desc.type!r} (block {block_idx}, op #{idx})"
        opdef = get_op_def(desc.type)
        self.opdef = opdef
        bound = opdef.bind_desc(desc, where)
        self.ins, self.outs, self.attrs = bound.ins, bound.outs, bound.attrs
        self.in_names = [n for _, names, _ in self.ins for n in names]
        self.out_names = [n for _, names, _ in self.outs for n in names]
        # (slot, name) of each input/output variable, in the order events list them
        self.in_pairs = tuple((slot, n) for slot, names, _ in self.ins for n in names)
        self.out_pairs = tuple((slot, n) for slot, names, _ in self.outs for n in names)
        dtype_name = _first_input_dtype(program, block_idx, self.in_names)
        kernel = opdef.find_kernel(place.kind, dtype_name)
        if kernel is None:
            have = sorted({p for p, _ in opdef.kernels})
            raise PlaceError(f"{where}: no kernel for {place} (dtype {dtype_name}); "
                             f"kernels exist for {have or 'no place'}{'. ' + opdef.no_kernel_reason if opdef.no_kernel_reason else ''}")
        self.kernel = fast_paths.choose(desc.type, place.kind, dtype_name, kernel)
        self.kernel_name = f"{kernel.__module__.rsplit('.', 1)[-1]}.{kernel.__name__}[{place.kind}]"
        self.is_gen = getattr(kernel, "_kc_generator", None)
        if self.is_gen is None:
            import inspect
            self.is_gen = inspect.isgeneratorfunction(kernel)
        self.fast, self.in_dtypes, self.in_shapes = None, (), ()
        make = opdef.specializers.get(place.kind)
        if (make is not None and not self.is_gen and len(self.out_names) == 1
                and all(not names or (len(names) == 1 and not dup) for _, names, dup in self.ins)):
            decls = [program.block(block_idx).find_var_recursive(n) for n in self.in_names]
            self.in_dtypes = tuple(_declared_dtype(v) for v in decls)
            self.in_shapes = tuple(None if v is None else v.shape for v in decls)
            self.fast = make(self, place.xp)  # None: the plain kernel runs this op


def _declared_dtype(v):
    if v is None or v.dtype is None:
        return None
    try:
        return np.dtype(dtypes.to_numpy(v.dtype))
    except TypeError:
        return None


def _first_input_dtype(program: Program, block_idx: int, names) -> str | None:
    if not names:
        return None
    v = program.block(block_idx).find_var_recursive(names[0])
    if v is None or v.dtype is None:
        return None
    return dtypes.type_name(v.dtype)


class PreparedBlock:
    __slots__ = ("program", "block_idx", "ops", "var_descs", "_bound", "feed_ops", "feed_decls", "layout",
                 "first_uses", "declared", "template", "read_at_start", "split_run", "__weakref__")

    def __init__(self, program: Program, block_idx: int, place):
        self.program, self.block_idx = program, block_idx
        block = program.block(block_idx)
        self.ops = [PreparedOp(program, block_idx, i, d, place) for i, d in enumerate(block.desc.ops)]
        # (name, persistable) of the vars this block declares, created in the scope that runs it
        self.var_descs = [(v.name, v.persistable) for v in block.desc.vars]
        self._bound = None  # (scope, versions of the scope chain, bound ops)
        # feed ops: fed name -> (feed-list variable, column); declared (dtype, shape) per fed name
        self.feed_ops = {op.outs[0][1][0]: (op.ins[0][1][0], op.attrs["col"]) for op in self.ops
                         if op.type == "feed"}
        self.feed_decls: dict[str, tuple | None] = {}
        self.declared = [n for n, _ in self.var_descs]
        # block 0 of a program whose runs split ops into parts on the CPU's cores (kernelcore/runtime/cpu_parts.py)
        self.split_run = block_idx == 0 and cpu_parts.wants_parts(
            get_op_def(t) for t in {op.type for b in program.desc.blocks for op in b.ops} if has_op(t))
        # The bound form of each op with names in place of Variables (binding swaps them in), and the
        # first use of each name in op order (an input seen first must exist; an output may be created).
        self.layout = []
        self.first_uses = []
        seen = set()
        for op in self.ops:
            for specs, is_output in ((op.ins, False), (op.outs, True)):
                for slot, names, _ in specs:
                    for n in names:
                        if n not in seen:
                            seen.add(n)
                            self.first_uses.append((n, op, slot, is_output))
            ins_spec = tuple(names if dup else (names[0] if names else None) for _, names, dup in op.ins)
            outs_spec = tuple(names if dup else (names[0] if names else None) for _, names, dup in op.outs)
            simple = all(type(n) is str for n in ins_spec)
            single = outs_spec[0] if len(outs_spec) == 1 and type(outs_spec[0]) is str else None
            self.layout.append((op, ins_spec, outs_spec, simple, tuple(op.in_names) + tuple(op.out_names), single))
        self.template = None  # (parent scope, its chain versions, outer name -> Variable, local names, set)
        self.read_at_start = _plan_derived_records(self.ops)


def _plan_derived_records(ops) -> tuple:
    """Decide, once per block, where a traced run finds each input's (shape, dtype) (events.BlockRun):
    from the op in the same block run that wrote it last (no control-flow op in between, which could
    have written it from a sub-block), from what the run read when it began (nothing before it in the
    block wrote it, and no control-flow op ran before it), or else measured when the op runs. Sets each
    op's `in_sources` and `recorded` (the input names measured, after its outputs) and returns the names
    read at the start of the run. Only outputs and the last kind are measured per op: in a chain, one
    value per op instead of three."""
    last_writer: dict[str, tuple] = {}   # name -> (op index, output position, control-flow ops up to it)
    at_start: dict[str, int] = {}
    control_flow = 0                     # control-flow ops seen so far
    for i, op in enumerate(ops):
        sources, recorded = [], []
        for name in op.in_names:
            w = last_writer.get(name)
            if w is not None and w[2] == control_flow:  # no control-flow op between writer and reader
                sources.append((events.FROM_WRITER, w[0], w[1]))
            elif w is None and control_flow == 0:
                sources.append((events.FROM_START, at_start.setdefault(name, len(at_start))))
            else:
                sources.append((events.FROM_RECORD, len(recorded)))
                recorded.append(name)
        op.in_sources, op.recorded = tuple(sources), tuple(recorded)
        if op.is_gen:
            control_flow += 1
        for j, name in enumerate(op.out_names):
            last_writer[name] = (i, j, control_flow)
    return tuple(at_start)


def _chain_versions(scope: Scope) -> tuple:
    out = []
    s = scope
    while s is not None:
        out.append(s._version)
        s = s.parent
    return tuple(out)


# ---------------------------------------------------------------------------
class RunState:
    """What one top-level run shares across its nested block runs."""

    __slots__ = ("executor", "program", "place", "xp", "training", "observers", "seq", "pausing",
                 "keep_values", "keep_shapes", "check_nan_inf", "place_name", "op_sinks", "record_mode",
                 "event_observers", "plain_sinks", "take_record", "take_plain")

    def __init__(self, executor, program, place, training, observers, pausing=False):
        self.executor, self.program, self.place = executor, program, place
        self.xp = place.xp
        self.place_name = str(place)
        self.training = training
        self.observers = observers
        self.seq = 0
        self.pausing = pausing
        if observers:
            self.keep_values = any(getattr(o, "keep_values", False) for o in observers)
            self.keep_shapes = any(getattr(o, "keep_shapes", True) for o in observers)
            # what each op record carries (events.py): the values, their (shape, dtype), or neither
            self.record_mode = (RECORD_VALUES if self.keep_values else RECORD_METAS if self.keep_shapes
                                else RECORD_HEAD_ONLY)
            # observers that take compact records (a Trace) hand out the callable that stores them
            self.op_sinks = tuple(o.op_recorder(self.record_mode) for o in observers if hasattr(o, "op_recorder"))
            self.event_observers = tuple(o for o in observers if not hasattr(o, "op_recorder"))
            self.plain_sinks = tuple(o.plain_recorder() if hasattr(o, "plain_recorder") else o for o in observers)
            # what the loop hands each op record to: with one Trace and nothing else, its list's append
            self.take_record = (self.op_sinks[0] if len(self.op_sinks) == 1 and not self.event_observers
                                else self._fan_out)
            self.take_plain = self.plain_sinks[0] if len(self.plain_sinks) == 1 else self.deliver_plain
        else:
            self.keep_values = self.keep_shapes = False
            self.record_mode = RECORD_HEAD_ONLY
            self.op_sinks = self.event_observers = self.plain_sinks = ()
            self.take_record = self._fan_out
            self.take_plain = self.deliver_plain
        self.check_nan_inf = False

    def emit_var_create(self, scope_id: int, block: int, name: str) -> None:
        self.deliver_plain(events.var_create(self.next_seq(), _perf(), scope_id, block, name))

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq - 1

    def record_op_run(self, op, scope_id: int, timestep: int | None, t0: int, values) -> None:
        """Report one op run (or a kernel's own piece of work) with `values` (its inputs' then its outputs'
        values) as the loop does, in the record form the observers want (events.RECORD_*)."""
        t1 = _perf()
        head = (self.seq, t1, t0, op, scope_id, timestep, self.place_name)
        mode = self.record_mode
        rec = (head + (META, *[meta_of(v) for v in values]) if mode is RECORD_METAS else
               head + tuple(values) if mode is RECORD_VALUES else head)
        self.seq += 1
        self.take_record(rec)

    def _fan_out(self, rec) -> None:
        for sink in self.op_sinks:
            sink(rec)
        if self.event_observers:
            ev = op_run_event(rec)
            for o in self.event_observers:
                o(ev)

    def deliver(self, ev: Event) -> None:
        for o in self.observers:
            o(ev)

    def deliver_plain(self, ev: Event) -> None:
        """An event with no values and no inputs/outputs (scope and step events, variable creations): an
        observer that keeps events as they come (a Trace) takes it through its list's own append."""
        for sink in self.plain_sinks:
            sink(ev)


class ExecContext:
    """What a kernel sees: the scope its block runs in, the place, the array module and
    the training flag (seed 002's Context), plus the op being run."""

    __slots__ = ("run", "scope", "place", "xp", "training", "block", "op", "timestep", "parent", "donated")

    def __init__(self, run: RunState, scope: Scope, block: int, timestep: int | None = None,
                 parent: ExecContext | None = None):
        self.run, self.scope, self.block = run, scope, block
        self.place, self.xp, self.training = run.place, run.xp, run.training
        self.op = None
        self.timestep = timestep
        self.parent = parent  # the context of the op that runs this block (None for block 0)
        # input slots whose arrays the running op may write its outputs into (see `_runner`); empty but while
        # an op with in-place pairs runs
        self.donated = _NOTHING_DONATED

    @property
    def program(self) -> Program:
        return self.run.program

    @property
    def executor(self) -> Executor:
        return self.run.executor

    def new_scope(self, message: str, timestep: int | None = None) -> Scope:
        """A kid of this context's scope, reported as a scope_push event."""
        op = self.op
        kid = self.scope.new_scope(origin={"op": op.type, "block": op.block, "op_idx": op.idx,
                                           "timestep": timestep, "what": message})
        run = self.run
        if run.observers:
            run.take_plain(events.scope_push(run.next_seq(), _perf(), kid.id, op.block, op.idx, op.type,
                                             self.scope.id, timestep, message))
        return kid

    def bind_var(self, scope: Scope, name: str, value) -> None:
        """Set `name` in a kid scope this op made (a step input, a carried state) and report it as a
        var_create event carrying the value, so traces and time travel see what the op bound."""
        scope.var(name).value = value
        run = self.run
        if run.observers:
            op = self.op
            if run.keep_values:
                run.deliver(events.var_create(run.next_seq(), _perf(), scope.id, op.block, name, op.idx, op.type,
                                              ((name, value),)))
            else:
                run.take_plain(events.var_create(run.next_seq(), _perf(), scope.id, op.block, name, op.idx,
                                                    op.type))

    def bind_vars(self, scope: Scope, names, values) -> None:
        """bind_var for several names at once (a timestep's inputs and carried states): one vars_create
        event when no values are retained, else a var_create per name carrying its value."""
        run = self.run
        if run.observers and run.keep_values:
            for name, value in zip(names, values):
                self.bind_var(scope, name, value)
            return
        for name, value in zip(names, values):
            scope.var(name).value = value
        if run.observers:
            op = self.op
            run.take_plain(events.vars_create(run.next_seq(), _perf(), scope.id, op.block, tuple(names), op.idx,
                                              op.type))

    def drop_scope(self, scope: Scope) -> None:
        run = self.run
        if run.observers:
            for s in reversed(list(scope.walk())):
                run.take_plain(events.scope_drop(run.next_seq(), _perf(), s.id, s.parent.id if s.parent else None))
        scope.drop()

    def step_event(self, kind: str, timestep: int, scope: Scope) -> None:
        run = self.run
        if run.observers:
            op = self.op
            run.take_plain(events.step(kind, run.next_seq(), _perf(), scope.id, op.block, op.idx, op.type, timestep))

    def inner_step(self, step, scope: Scope, timestep: int | None = None) -> ExecContext | None:
        """For a kernel that computes its timesteps itself (the fused rnn op, no sub-block): the context
        of one piece of work `step` (an object with a PreparedOp's type, block, idx, in_names, out_names,
        in_pairs, out_pairs and kernel_name) run in kid `scope`. The kernel yields it (`yield c` when c is
        not None) so a debugger pauses there, then reports the work with `step_ran`. None when no
        debugger pauses this run."""
        if not self.run.pausing:
            return None
        c = ExecContext(self.run, scope, self.block, timestep, self)
        c.op = step
        return c

    def step_ran(self, step, scope: Scope, timestep: int | None, t0: int, values) -> None:
        """Report `step` (see inner_step) as an op_run event; `values` are the values of
        step.in_pairs + step.out_pairs (references), `t0` a time.perf_counter_ns() from before the work."""
        run = self.run
        if not run.observers:
            return
        run.record_op_run(step, scope.id, timestep, t0, values)

    def run_block(self, block_idx: int, scope: Scope, timestep: int | None = None) -> Iterator:
        """Run a sub-block in `scope` through the same loop; use with `yield from`."""
        prepared = self.run.executor._prepare(self.run.program, block_idx)
        return _exec_block(self.run, prepared, scope, 0, None, timestep, self)

    def output_var(self, slot: str, i: int = 0):
        names = next(n for s, n, _ in self.op.outs if s == slot)
        return self.scope.find_var(names[i])

    def input_names(self, slot: str) -> tuple:
        return next(n for s, n, _ in self.op.ins if s == slot)

    def output_names(self, slot: str) -> tuple:
        return next(n for s, n, _ in self.op.outs if s == slot)

    def rng(self, seed: int):
        """A random generator for random-init kernels: seeded when seed != 0, else the executor's."""
        if seed:
            if self.place.kind == "gpu":
                return self.xp.random.RandomState(seed)
            return np.random.default_rng(seed)
        return self.run.executor._rng(self.place)


# ---------------------------------------------------------------------------
def _bind(run: RunState, prepared: PreparedBlock, scope: Scope, root_block: bool, need_io: bool = False):
    """Create the block's variables in `scope` and resolve every op's names to Variables. What a record
    reads is bound only for runs that record it: `level` 0 unobserved, 1 the derived records' measured
    Variables, 2 also every input and output (records holding values; a run from the middle of a block)."""
    cached = prepared._bound
    observed = bool(run.observers)
    level = 0 if not observed else 2 if (need_io or run.record_mode is RECORD_VALUES) else 1
    if (cached is not None and cached[0]() is scope and cached[1] == _chain_versions(scope)
            and cached[4] >= level):
        return cached[2], cached[3]
    names = _names_from_template(run, prepared, scope, observed) if not root_block else None
    if names is None:
        names = _resolve_names(run, prepared, scope, root_block, observed)
    bound = []
    for op, ins_spec, outs_spec, simple, io_names, single in prepared.layout:
        if simple:
            ins = tuple([names[n] for n in ins_spec])
        else:
            ins = tuple([names[n] if type(n) is str else
                         tuple([names[x] for x in n]) if n is not None else None for n in ins_spec])
        outs = tuple([names[n] if type(n) is str else
                      tuple([names[x] for x in n]) if n is not None else None for n in outs_spec])
        single_var = names[single] if single is not None else None
        # a run that records values keeps references to what ops read and wrote: nothing is donated there
        bound.append((op, None if op.is_gen else _runner(op, ins, outs, simple, single_var, level < 2), ins, outs,
                      tuple([names[n] for n in io_names]) if level == 2 else None,  # what records may carry
                      # what a traced run measures per op (events.BlockRun): a lone Variable (most ops: their
                      # one output, already at hand), or a tuple of them; unobserved runs need none
                      None if not observed else single_var if single_var is not None and not op.recorded
                      else _measured(tuple([names[n] for n in op.out_names + list(op.recorded)]))))
    at_start = tuple([names[n] for n in prepared.read_at_start])
    prepared._bound = (_forget_with(scope, prepared, "_bound"), _chain_versions(scope), bound, at_start, level)
    return bound, at_start


def _measured(variables: tuple):
    return variables[0] if len(variables) == 1 else variables


def _measure(variables: tuple) -> tuple:
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


def _runner(op: PreparedOp, in_vars: tuple, out_vars: tuple, simple: bool, single, donate: bool = False):
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
                _write(out_vars, kernel(ctx, [v.value for v in in_vars] if simple else
                                        [_read(e) for e in in_vars], attrs))
            finally:
                ctx.donated = _NOTHING_DONATED
        return run

    def run(ctx):
        ctx.op = op
        _write(out_vars, kernel(ctx, [v.value for v in in_vars] if simple else [_read(e) for e in in_vars],
                                attrs))
    return run


class _OneHolder:
    __slots__ = ("value",)


def _only_held_count() -> int:
    """What `getrefcount(variable.value)` reads for a value one Variable alone holds: measured the way
    `_runner` reads it rather than assumed, since interpreters count the call's own reference differently."""
    holder = _OneHolder()
    holder.value = object()
    return getrefcount(holder.value)


ONLY_HELD = _only_held_count()
_NOTHING_DONATED = frozenset()


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


def _write(out_vars: tuple, outs) -> None:
    for v, o in zip(out_vars, outs):
        if v is None or o is None:
            continue
        if type(v) is tuple:
            for vv, oo in zip(v, o):
                vv.value = oo
        else:
            v.value = o


def _forget_with(scope: Scope, prepared: PreparedBlock, slot: str) -> weakref.ref:
    """A weak reference to `scope` that, when the scope goes, clears the cache entry `slot` of `prepared`
    made for it (so a cached binding keeps neither the scope nor its variables' values alive)."""
    pref = weakref.ref(prepared)

    def gone(ref):
        p = pref()
        if p is not None:
            entry = getattr(p, slot)
            if entry is not None and entry[0] is ref:
                setattr(p, slot, None)
    return weakref.ref(scope, gone)


def _resolve_names(run, prepared, scope, root_block, observed) -> dict:
    """name -> Variable for every name the block's ops use: the block's declared variables are created
    in `scope` (persistable ones of block 0 found in any ancestor first), outputs nobody declared are
    created here too, and an input found nowhere is an error naming the op."""
    for name, persistable in prepared.var_descs:
        v = (scope.find_var(name) if (persistable and root_block) else scope._vars.get(name))
        if v is None:
            scope.var(name)
            if observed:
                run.emit_var_create(scope.id, prepared.block_idx, name)
    find = scope.find_var
    names = {}
    for name, op, slot, is_output in prepared.first_uses:
        v = find(name)
        if v is None:
            if not is_output:
                raise OpRunError(f"input {slot!r} names variable {name!r}, which neither the program "
                                 f"declares nor the scope holds", op_type=op.type, block_idx=op.block,
                                 op_idx=op.idx, var_name=name)
            v = scope.var(name)
            if observed:
                run.emit_var_create(scope.id, prepared.block_idx, name)
        names[name] = v
    if scope.parent is not None:
        # remember which names live outside this scope: the next kid of the same parent (the next
        # timestep's scope) then only creates its locals
        local = [n for n in names if n in scope._vars]
        outer = {n: v for n, v in names.items() if n not in scope._vars}
        prepared.template = (_forget_with(scope.parent, prepared, "template"), _chain_versions(scope.parent),
                             outer, local, frozenset(local))
    return names


def _names_from_template(run, prepared, scope, observed) -> dict | None:
    t = prepared.template
    if t is None or t[0]() is not scope.parent or t[1] != _chain_versions(scope.parent):
        return None
    _, _, outer, local, local_set = t
    have = scope._vars
    for n in have:
        if n not in local_set:
            return None  # something bound here shadows an outer name: resolve from scratch
    names = dict(outer)
    created = []
    for n in local:
        v = have.get(n)
        if v is None:
            v = scope.var(n)
            created.append(n)
        names[n] = v
    for n in prepared.declared:  # declared but unused by any op: still created, as the block declares it
        if n not in names and n not in have:
            scope.var(n)
            created.append(n)
    if observed and created:  # a step scope's locals: one event for the batch, not one per name
        run.take_plain(events.vars_create(run.next_seq(), _perf(), scope.id, prepared.block_idx, tuple(created)))
    return names


def _meta_of(val) -> tuple:
    """(shape, type name) for a value that is not an array (a list, a number, nothing)."""
    return (None, type(val).__name__ if val is not None else None)


def _read(entry):
    if entry is None:
        return None
    if type(entry) is tuple:
        return [v.value for v in entry]
    return entry.value


def _exec_block(run: RunState, prepared: PreparedBlock, scope: Scope, begin: int, end: int | None,
                timestep: int | None = None, parent: ExecContext | None = None) -> Iterator:
    """The one loop. A generator; yields only when a debugger asked to pause."""
    bound, at_start = _bind(run, prepared, scope, parent is None, need_io=bool(begin))
    ctx = ExecContext(run, scope, prepared.block_idx, timestep, parent)
    observers = run.observers
    pausing, check_nan_inf = run.pausing, run.check_nan_inf
    if observers:
        mode, scope_id, place_name, take_record = run.record_mode, scope.id, run.place_name, run.take_record
        block_run = None
        if mode is RECORD_METAS and not begin:  # the whole block runs: records derive what they can
            block_run = BlockRun(_measure(at_start))
    # The event counter lives in a local while plain ops run (they report nothing themselves) and goes
    # back to `run.seq` wherever anything else may count: a pause, a control-flow kernel, an error, the end.
    seq = run.seq
    for op, step, in_vars, out_vars, io_vars, measured in (bound[begin:end] if (begin or end is not None)
                                                            else bound):
        if pausing:
            ctx.op = op
            run.seq = seq
            yield ctx  # the debugger reads the position from ctx (op, block, timestep, parent chain)
            seq = run.seq
        if observers:
            t0 = _perf()
        try:
            if step is not None:
                step(ctx)
            else:  # a control-flow kernel: it runs its sub-blocks through this same loop
                ctx.op = op
                run.seq = seq
                _write(out_vars, (yield from op.kernel(ctx, [_read(e) for e in in_vars], op.attrs)))
                seq = run.seq
        except KernelcoreError as e:
            if step is not None:
                run.seq = seq
            if isinstance(e, OpRunError):
                raise
            raise _op_error(run, ctx, op, in_vars, e) from e
        except Exception as e:
            if step is not None:
                run.seq = seq
            raise _op_error(run, ctx, op, in_vars, e) from e
        if observers:
            # The hot path records a compact tuple; observers that take it (the Trace) turn it
            # into an Event only when someone looks (events.op_run_event).
            t1 = _perf()  # RunState.record_op_run does the same for a kernel's own steps; inlined: the hot path
            if block_run is not None:  # outputs' (shape, dtype), and of the inputs nothing else tells
                if type(measured) is tuple:
                    rec = (seq, t1, t0, op, scope_id, timestep, place_name, block_run) + _measure(measured)
                else:
                    v = measured.value
                    try:
                        rec = (seq, t1, t0, op, scope_id, timestep, place_name, block_run, v.shape, v.dtype)
                    except AttributeError:  # a value that is not an array (a list, a number, nothing)
                        rec = (seq, t1, t0, op, scope_id, timestep, place_name, block_run, *meta_of(v))
            elif mode is RECORD_METAS:
                try:  # (shape, dtype) of each value, read in C: no Python frame per value
                    rec = (seq, t1, t0, op, scope_id, timestep, place_name, META,
                           *map(_SHAPE_DTYPE, io_vars))
                except AttributeError:  # a value that is not an array (a list, a number, nothing)
                    rec = (seq, t1, t0, op, scope_id, timestep, place_name, META,
                           *[meta_of(v.value) for v in io_vars])
            elif mode is RECORD_VALUES:  # references: held, so never donated (`_runner`): they stay as they were
                rec = (seq, t1, t0, op, scope_id, timestep, place_name, *map(_VALUE, io_vars))
            else:
                rec = (seq, t1, t0, op, scope_id, timestep, place_name)
            seq += 1
            take_record(rec)
        if check_nan_inf:
            run.seq = seq
            _check_finite(run, ctx, op, in_vars, out_vars)
    run.seq = seq
    if pausing and parent is not None:
        ctx.op = None
        yield ctx  # the end of a sub-block: its scope (a timestep's results) is still there to look at
    return None


def _check_finite(run, ctx, op, in_vars, out_vars):
    xp = run.xp
    for (slot, names, dup), e in zip(op.outs, out_vars):
        if e is None:
            continue
        for v in (e if dup else (e,)):
            what = nonfinite(xp, v.value)
            if what is not None:
                raise _op_error(run, ctx, op, in_vars, None, var=v.name,
                                message=f"output {slot!r} (variable {v.name!r}) holds {what}; the inputs that "
                                        f"led to it are listed below", cls=NonFiniteError)


def _op_error(run, ctx, op, in_vars, exc, var=None, message=None, cls=OpRunError) -> OpRunError:
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


# ---------------------------------------------------------------------------
class Executor:
    """Runs programs on a place: `Executor(CPUPlace())` or `Executor(GPUPlace(0))`."""

    def __init__(self, place=None):
        self.place = place if place is not None else CPUPlace()
        if not isinstance(self.place, (CPUPlace, GPUPlace)):
            raise TypeError(f"Executor takes a CPUPlace or GPUPlace, got {place!r}")
        self.place.xp  # a GPU place without CuPy or a GPU fails here, not mid-run
        if self.place.kind == "cpu":
            keep_freed_memory()  # once per process: each op's temporaries reuse freed pages (host_memory.py)
        self._rngs: dict = {}

    def _rng(self, place):
        r = self._rngs.get(place.kind)
        if r is None:
            r = self._rngs[place.kind] = (np.random.default_rng() if place.kind == "cpu"
                                          else place.xp.random.RandomState())
        return r

    def seed(self, seed: int) -> None:
        """Seed the generator that random ops with seed=0 draw from."""
        self._rngs = {"cpu": np.random.default_rng(seed)}
        if self.place.kind == "gpu":
            self._rngs["gpu"] = self.place.xp.random.RandomState(seed)

    def _prepare(self, program: Program, block_idx: int) -> PreparedBlock:
        # The cache lives on the program (executor -> {block: (version, prepared)}, the executor held weakly):
        # the executor keeps no program alive, and a program that goes takes its prepared blocks with it.
        cache = program.__dict__.get("_kc_prepared")
        if cache is None:
            cache = program._kc_prepared = weakref.WeakKeyDictionary()
        mine = cache.get(self)
        if mine is None:
            mine = cache[self] = {}
        hit = mine.get(block_idx)
        # prepared again when fast paths were switched on or off since: the kernels chosen differ
        version = (program._version, fast_paths.enabled())
        if hit is not None and hit[0] == version:
            return hit[1]
        if block_idx == 0:  # block tree, limits, no blocks running each other in a cycle (once per version)
            check_structure(program.desc, "program", ProgramError)
            check_supported(program)  # every op kernelcore lacks, in one error, before the first is met
        prepared = PreparedBlock(program, block_idx, self.place)
        mine[block_idx] = (version, prepared)
        return prepared

    def prepare(self, program: Program, block: int = 0) -> PreparedBlock:
        """Prepare (and cache) a block now, so the first run pays nothing extra."""
        return self._prepare(program, block)

    # -- the public run ------------------------------------------------------
    def run(self, program: Program | None = None, feed: dict | None = None, fetch_list=None,
            scope: Scope | None = None, *, training: bool = False, begin: int = 0, end: int | None = None,
            return_numpy: bool = True, check_nan_inf: bool = False) -> list:
        """Run block 0 of `program` (ops [begin, end)) in `scope` and return the fetched values.

        `feed` maps variable names to arrays; `fetch_list` names variables (or Variables) to
        return, as NumPy arrays unless return_numpy=False. Programs written with feed/fetch ops
        (inference models) are fed and fetched through those ops.
        """
        gen = self.run_iter(program, feed, fetch_list, scope, training=training, begin=begin, end=end,
                            return_numpy=return_numpy, check_nan_inf=check_nan_inf)
        try:
            while True:
                next(gen)
        except StopIteration as stop:
            return stop.value

    def run_iter(self, program=None, feed=None, fetch_list=None, scope=None, *, training=False, begin=0,
                 end=None, return_numpy=True, check_nan_inf=False, pausing=False, observers=None):
        """`run` as a generator: with pausing=True it yields before each op (the debugger's hook)."""
        if program is None:
            from ..ir.program import default_main_program
            program = default_main_program()
        if not isinstance(program, Program):
            raise TypeError(f"run takes a Program, got {type(program).__name__}")
        scope = scope if scope is not None else global_scope()
        obs = _active_observers.get() + tuple(observers or ())
        run = RunState(self, program, self.place, training, obs, pausing)
        run.check_nan_inf = check_nan_inf
        if obs:
            run.deliver(events.run_begin(run.next_seq(), _perf(), scope.id, f"{program!r}"))
        # Whatever fails (preparing, binding, feeding, an op), an observed run ends with an `error` event
        # and a `run_end` event.
        try:
            prepared = self._prepare(program, 0)
            fetch_names = self._fetch_names(program, fetch_list)
            bound = _bind(run, prepared, scope, True)
            self._feed(program, prepared, scope, feed or {})
            # a paused run lets other code run between its ops: it keeps the BLAS's threads
            with cpu_parts.split_run(self.place.xp, prepared.split_run and not pausing):
                yield from _exec_block(run, prepared, scope, begin, end)
            del bound
            result = self._fetch(program, scope, fetch_names, fetch_list is None, return_numpy)
        except Exception as e:
            if obs and not getattr(e, "_kc_traced", False):
                where = (e.block_idx, e.op_idx, e.op_type, e.var_name, e.timestep) \
                    if isinstance(e, OpRunError) else (0, None, None, None, None)
                block, op, op_type, name, timestep = where
                run.deliver(events.error(run.next_seq(), _perf(), scope.id, block, op, op_type, name, str(e),
                                         timestep))
            raise
        finally:
            if obs:
                run.deliver(events.run_end(run.next_seq(), _perf(), scope.id))
        return result

    # -- feeding and fetching --------------------------------------------------
    def _feed(self, program: Program, prepared: PreparedBlock, scope: Scope, feed: dict) -> None:
        if not isinstance(feed, dict):
            raise TypeError(f"feed must be a dict of name -> array, got {type(feed).__name__}")
        wanted = prepared.feed_ops
        if wanted:
            unknown = [n for n in feed if n not in wanted]
            if unknown:
                raise ProgramError(f"feed names {unknown} are not inputs of this program; it is fed "
                                   f"{sorted(wanted)}")
            missing = [n for n in wanted if n not in feed]
            if missing:
                raise ProgramError(f"this program needs feeds {sorted(missing)} (its feed ops read them)")
            lists: dict[str, list] = {}
            for name, (holder, col) in wanted.items():
                lst = lists.setdefault(holder, [])
                lst.extend([None] * (col + 1 - len(lst)))
                lst[col] = self._to_place(prepared, name, feed[name])
            for holder, lst in lists.items():
                scope.var(holder).value = lst
            return
        for name, value in feed.items():
            if isinstance(name, ProgramVariable):
                name = name.name
            v = scope.find_var(name)
            if v is None or name not in prepared.feed_decls and program.global_block().find_var_recursive(name) is None:
                block = program.global_block()
                declared = sorted(d.name for d in block.desc.vars)
                names = ", ".join(quote_name(n, NAME_CHARS_SHOWN) for n in declared[:20])
                more = f", ... ({len(declared)} in all)" if len(declared) > 20 else ""
                raise ProgramError(f"cannot feed {quote_name(name, NAME_CHARS_SHOWN)}: block 0 declares no such "
                                   f"variable (it has {names}{more})")
            v.value = self._to_place(prepared, name, value)

    def _to_place(self, prepared: PreparedBlock, name: str, value):
        """The fed value as the declared dtype on this executor's place; shape checked."""
        decl = prepared.feed_decls.get(name, False)
        if decl is False:  # read the declaration once per prepared program
            v = prepared.program.global_block().find_var_recursive(name)
            try:
                decl = prepared.feed_decls[name] = (
                    (dtypes.to_numpy(v.dtype), tuple(v.shape or ())) if v is not None and v.dtype is not None
                    and v.type == VT.LOD_TENSOR else None)
            except DtypeError as e:
                raise FeedError(f"cannot feed {name!r}: the program declares it {v.dtype_name}; {e}") from None
        if hasattr(value, "__cuda_array_interface__") and self.place.kind == "cpu":
            raise PlaceError(f"feed {name!r} is a GPU array but the executor runs on {self.place}; "
                             f"copy it to the host first")
        arr = value
        if decl is not None:
            want, shape = decl
            if not hasattr(value, "dtype"):
                arr = _as_array(name, value, want)
            elif value.dtype != want:
                if np.can_cast(value.dtype, want, casting="same_kind"):
                    arr = value.astype(want)
                else:
                    raise ShapeError(f"feed {name!r}: expected dtype {want}, got {value.dtype}")
            if shape and arr.shape != shape and (
                    len(shape) != arr.ndim or any(d >= 0 and d != s for d, s in zip(shape, arr.shape))):
                raise ShapeError(f"feed {name!r}: expected shape {list(shape)} (-1 = any), got {list(arr.shape)}")
        elif not hasattr(value, "shape"):
            arr = _as_array(name, value, None)
        if getattr(getattr(arr, "dtype", None), "kind", None) in ("O", "U", "S", "V"):
            raise FeedError(f"cannot feed {name!r}: a {arr.dtype} array is no tensor (numbers or bools only)")
        if self.place.kind == "gpu":
            arr = self.place.xp.asarray(arr)
        return arr

    def _fetch_names(self, program: Program, fetch_list) -> list[str]:
        if fetch_list is None:
            cols = [(feed_fetch_col(op), op.inputs[0].arguments[0])
                    for op in program.global_block().desc.ops if op.type == "fetch"]
            return [n for _, n in sorted(cols)]
        if isinstance(fetch_list, (str, ProgramVariable)):
            fetch_list = [fetch_list]
        names = []
        for f in fetch_list:
            n = f.name if isinstance(f, ProgramVariable) else f
            if not isinstance(n, str):
                raise TypeError(f"fetch_list takes variable names or Variables, got {f!r:.60}")
            names.append(n)
        return names

    def _fetch(self, program, scope, names, via_fetch_ops, return_numpy) -> list:
        out = []
        for n in names:
            v = scope.find_var(n)
            if v is None:
                raise ProgramError(f"cannot fetch {n!r}: no such variable in the scope after the run")
            if v.value is None:
                raise ProgramError(f"cannot fetch {n!r}: it holds no value (no op wrote it and it was not fed)")
            val = v.value
            out.append(np.asarray(to_host(val)) if return_numpy and hasattr(val, "shape") else val)
        return out

    def run_block(self, program: Program, block: int, scope: Scope, begin: int = 0, end: int | None = None,
                  *, training: bool = False) -> None:
        """Run ops [begin, end) of any block in `scope` (seed 004's Run(scope, begin, end))."""
        run = RunState(self, program, self.place, training, _active_observers.get())
        gen = _exec_block(run, self._prepare(program, block), scope, begin, end)
        for _ in gen:
            pass


def _as_array(name: str, value, dtype):
    """A fed Python value (a number, a nested list) as an array; FeedError for what is no tensor (strings,
    ragged lists, dicts)."""
    if isinstance(value, (str, bytes, dict, set)) or value is None:
        raise FeedError(f"cannot feed {name!r}: a {type(value).__name__} is no tensor (give an array, a number "
                        f"or a nested list of numbers)")
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError, OverflowError) as e:
        raise FeedError(f"cannot feed {name!r}: {type(value).__name__} value is no tensor"
                        f"{' of ' + str(np.dtype(dtype)) if dtype is not None else ''} ({e})") from None
    if arr.dtype.kind in ("O", "U", "S", "V"):
        raise FeedError(f"cannot feed {name!r}: {type(value).__name__} value gives a {arr.dtype} array, no tensor "
                        f"(numbers or bools only)")
    return arr


def scope_value(scope: Scope, name: str) -> Any:
    """The value of `name` as NumPy (copied from the GPU when it lives there)."""
    return to_host(scope.get(name))
