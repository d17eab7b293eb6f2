"""The executor: runs a block in a scope, one observed loop.

Shaped like JAX's eval_jaxpr: a block is *prepared* once (kernel chosen,
attributes parsed, slots resolved to names), then *bound* to a scope (names
resolved to Variables, cached while no scope on the chain gains or loses a
name), then run in one loop that reads inputs, calls the kernel and writes
outputs. Observers (the trace recorder, the debugger) receive events; with
none attached the loop does no per-event work.

The loop is a generator so that control-flow kernels can run sub-blocks with
`yield from ctx.run_block(...)` and a debugger can suspend a run between any
two ops, inside any timestep, without threads. A plain run never yields.

The rooms around the loop: prepared.py (a block made ready, the fast kernels chosen), binding.py (names to
Variables), runner.py (each op's closure, donation), op_records.py (a traced run's compact records, derived
where they can be), op_errors.py (what a failed op raises).
"""
from __future__ import annotations

import contextvars
import time
from contextlib import nullcontext
import weakref
from typing import Any, Callable, Iterator

import numpy as np

from . import captured_run, cpu_parts, fast_paths
from .binding import bind
from ..ir import dtypes
from .host_memory import keep_freed_memory
from ..errors import DtypeError, FeedError, KernelcoreError, OpRunError, PlaceError, ProgramError, ShapeError
from . import events
from .events import (META, RECORD_HEAD_ONLY, RECORD_METAS, RECORD_VALUES, BlockRun, Event, meta_of,
                     op_run_event)
from .place import CPUPlace, GPUPlace, to_host
from .op_errors import check_finite, op_error
from .op_records import VALUE, measure, metas_record
from .prepared import PreparedBlock
from .runner import NOTHING_DONATED, read_entry, write_outputs
from ..ir.program import Program, Variable as ProgramVariable
from ..ir.structure import check_structure
from ..ir.proto import framework_pb2 as pb
from ..ir.registry import feed_fetch_col
from .scope import Scope, global_scope
from ..ir.support import check_supported
from ..text_safety import NAME_CHARS_SHOWN, quote_name

VT = pb.VarType
_perf = time.perf_counter_ns
_WHOLE = nullcontext()  # a run that does not split: no context manager made per run

# Observers that every run in this context reports to (kc.trace() adds one).
_active_observers: contextvars.ContextVar[tuple] = contextvars.ContextVar("kernelcore_observers", default=())


def add_observer(observer: Callable[[Event], None]) -> contextvars.Token:
    return _active_observers.set(_active_observers.get() + (observer,))


def remove_observer(token: contextvars.Token) -> None:
    _active_observers.reset(token)


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
    the training flag, plus the op being run."""

    __slots__ = ("run", "scope", "place", "xp", "training", "block", "op", "timestep", "parent", "donated")

    def __init__(self, run: RunState, scope: Scope, block: int, timestep: int | None = None,
                 parent: ExecContext | None = None):
        self.run, self.scope, self.block = run, scope, block
        self.place, self.xp, self.training = run.place, run.xp, run.training
        self.op = None
        self.timestep = timestep
        self.parent = parent  # the context of the op that runs this block (None for block 0)
        # input slots whose arrays the running op may write its outputs into (see runner.make_runner); empty but while
        # an op with in-place pairs runs
        self.donated = NOTHING_DONATED

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


def _empty_arrays(prepared, scope) -> None:
    """A whole run starts its tensor arrays empty (a run of ops from `begin` > 0 continues the earlier state)."""
    for name in prepared.fresh_arrays:
        var = scope.local_var(name)
        if var is not None and isinstance(var.value, list):
            var.value = None


def _exec_block(run: RunState, prepared: PreparedBlock, scope: Scope, begin: int, end: int | None,
                timestep: int | None = None, parent: ExecContext | None = None) -> Iterator:
    """The one loop. A generator; yields only when a debugger asked to pause."""
    bound, at_start = bind(run, prepared, scope, parent is None, need_io=bool(begin))
    ctx = ExecContext(run, scope, prepared.block_idx, timestep, parent)
    observers = run.observers
    pausing, check_nan_inf = run.pausing, run.check_nan_inf
    if observers:
        mode, scope_id, place_name, take_record = run.record_mode, scope.id, run.place_name, run.take_record
        block_run = None
        if mode is RECORD_METAS and not begin:  # the whole block runs: records derive what they can
            block_run = BlockRun(measure(at_start))
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
                write_outputs(out_vars, (yield from op.kernel(ctx, [read_entry(e) for e in in_vars], op.attrs)))
                seq = run.seq
        except KernelcoreError as e:
            if step is not None:
                run.seq = seq
            if isinstance(e, OpRunError):
                raise
            raise op_error(run, ctx, op, in_vars, e) from e
        except Exception as e:
            if step is not None:
                run.seq = seq
            raise op_error(run, ctx, op, in_vars, e) from e
        if observers:
            # The op's compact record (op_records.py says what each mode keeps), built here rather than in a
            # function: a call per op is a tenth of a traced op's cost
            t1 = _perf()
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
                rec = metas_record(seq, t1, t0, op, scope_id, timestep, place_name, io_vars)
            elif mode is RECORD_VALUES:  # references: held, so never donated (runner.py): they stay as they were
                rec = (seq, t1, t0, op, scope_id, timestep, place_name, *map(VALUE, io_vars))
            else:
                rec = (seq, t1, t0, op, scope_id, timestep, place_name)
            seq += 1
            take_record(rec)
        if check_nan_inf:
            run.seq = seq
            check_finite(run, ctx, op, in_vars, out_vars)
    run.seq = seq
    if pausing and parent is not None:
        ctx.op = None
        yield ctx  # the end of a sub-block: its scope (a timestep's results) is still there to look at
    return None


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
        fast = fast_paths.enabled()
        if hit is not None and hit[0] == program.version and hit[1] is fast:
            return hit[2]
        if block_idx == 0:  # block tree, limits, no blocks running each other in a cycle (once per version)
            check_structure(program.desc, "program", ProgramError)
            check_supported(program)  # every op kernelcore lacks, in one error, before the first is met
        prepared = PreparedBlock(program, block_idx, self.place)
        mine[block_idx] = (program.version, fast, prepared)
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
            bound = bind(run, prepared, scope, True)
            if begin == 0 and prepared.fresh_arrays:
                _empty_arrays(prepared, scope)
            self._feed(program, prepared, scope, feed or {})
            # a paused run lets other code run between its ops: it keeps the BLAS's threads
            with (cpu_parts.split_run(self.place.xp, True) if prepared.split_run and not pausing else _WHOLE):
                if not (self.place.kind == "gpu" and captured_run.ran(
                        run, prepared, scope, not begin and end is None and return_numpy,
                        lambda b, e: _exec_block(run, prepared, scope, b, e))):
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
        """Run ops [begin, end) of any block in `scope`."""
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

