"""The flight recorder of a training loop: a health summary of every op output (gradients included) of every
iteration, full values of the last few, and watch conditions judged on the summaries as they arrive.

    with kc.record(main, scope) as rec:          # every run of `main` in `scope` is one iteration
        for step in range(10_000):
            exe.run(main, feed=batch(step), fetch_list=[loss], scope=scope, training=True)
    rec.hit                     # the first watch hit (by default: the first NaN/Inf an op wrote), or None
    sess = rec.session          # a debug session paused right after that op, in that iteration
    rec.summaries.save("run.parquet")            # one row per op output per iteration (pandas, Polars, DuckDB)

(A kc.Model's loop: `model.fit(batches, record=True).recorder`, kernelcore/api/model.py.)

The first hit stops the loop: a run raises RecordingStopped, which leaves the `with` block (the loop with it) and
is swallowed there; by default the run after the one the hit happened in, at its end (see below), with
background=False the run it happened in, right after that op. `rec.session` runs that iteration again from the
state it started
from (the scope's values when its first op ran, and what that op read), paused right after the op the hit names,
with the usual moves and time travel; the rest of the iteration runs on from there. The last `keep_last`
finished iterations keep their values: `rec.run(i)` is iteration i as a RecordedRun (time travel, compare_runs).

The recorder is an executor observer (kernelcore/observe/trace.py shows the protocol): it asks for the values
ops write, so the executor hands each op record over holding them by reference, and nothing is copied. Where the
summaries are made: by default (background=True) a whole iteration's at its end, the C pass over its arrays on a
thread of its own while the next iteration runs (summary_worker.py): during the run the recorder only appends the
records to a list, and a hit stops the loop at the end of the iteration after the one it happened in (its
optimizer updates and the next iteration's have landed in the scope). With background=False as each op ends, on
the executor's thread, which costs the run more (bench/recorder.py) but stops it right after the op (what came
after it, the update included, has not run). Either way the rows, the hit and the paused session are the same.
"""
from __future__ import annotations

import collections

import numpy as np

from ..errors import KernelcoreError
from ..ir.node_ids import op_id
from ..ir.program import Program
from ..native.row_plan import plan_checker
from ..runtime.events import RECORD_HEAD, RECORD_VALUES
from ..runtime.executor import Executor, add_observer, remove_observer
from ..runtime.place import CPUPlace
from ..runtime.scope import Scope, global_scope
from .health_summary import Summary, iteration_writer, many_writer, summary_at, summary_writer
from .iteration_summaries import name_rows, name_rows_by_plan, name_rows_by_plan_in_c
from .program_names import check_known, program_names
from .summary_table import SummaryTable
from .summary_watch import EveryOutput, check, every_output
from .summary_worker import SummaryWorker
from .recorded_iteration import Iteration, RecorderHit
from .trace import Trace
from .watch import Watch, make_watch


# (prepared op, timestep) pairs whose output sites the recorder keeps at most: a loop's timesteps times its ops
_MAX_CACHED_SITES = 1 << 16


class RecordingStopped(KernelcoreError):
    """A watch hit stopped the recorded loop (raised out of the run it happened in; the recorder's `with` block
    swallows it)."""


class Recorder:
    """See the module docstring. Make one with kc.record(...)."""

    def __init__(self, program: Program | None = None, scope: Scope | None = None, *, keep_last: int = 2,
                 nan: bool = True, stop: bool = True, training: bool = True, executor: Executor | None = None,
                 background: bool = True):
        if not isinstance(keep_last, int) or keep_last < 0:
            raise KernelcoreError(f"keep_last is how many iterations keep their values (>= 0), got {keep_last!r}")
        self.program, self.scope = program, scope if scope is not None else global_scope()
        self.keep_last, self.stop, self.training = keep_last, stop, training
        self.executor = executor if executor is not None else Executor(CPUPlace())
        self.summaries = SummaryTable()
        self.watches: list[Watch] = []
        self.hits: list[RecorderHit] = []
        self.iterations = 0  # finished iterations
        self.kept: collections.deque[Iteration] = collections.deque(maxlen=keep_last or 1)
        self._current: Iteration | None = None
        self._stopped: Iteration | None = None
        self._last_summary: dict[str, Summary] = {}
        self._session = None
        self._token = None
        self._next_id = 1
        self._worker = SummaryWorker(self._fill) if background else None
        self._next_items: list | None = None  # background=True: the coming run's events and op records
        self._waiting: Iteration | None = None  # background=True: handed to the summary thread, not yet settled
        self._pending_stop: RecordingStopped | None = None  # a hit found while settling, not yet raised
        self._plan = None  # background=True: what the last iteration's outputs were (iteration_summaries.RowPlan)
        self._write = summary_writer()  # the C summary or the reference, chosen once for the recording
        self._write_many = many_writer()  # several outputs in one C call, or None
        self._many_call, self._address = iteration_writer()  # an iteration's arrays in one C call, or None
        self._plan_check = plan_checker() if self._many_call is not None else None  # the plan checked in C
        self._site_cache: dict[tuple, tuple] = {}  # (id of a prepared op, timestep) -> (the op, its sites)
        self._judge_every = False  # whether a watch needs every output's summary (not the NaN watch alone)
        self._keep_last_summary = False  # whether a watch compares a variable's summary with its last one
        if nan:
            self.watch(cond="nan")

    # -- what the executor asks of an observer --------------------------------------------------------------
    keep_values = True   # the records carry references to the values (RECORD_VALUES)
    keep_shapes = True

    def op_recorder(self, record_mode: str):
        """What takes each op record of the coming run: with background=True the run's own list's append (all a
        record costs the run), else the summaries made there and then."""
        if record_mode is not RECORD_VALUES:
            raise KernelcoreError("the flight recorder needs the op records' values")
        if self._worker is None:
            return self._take
        items = self._next_items = []
        return items.append

    def plain_recorder(self):
        return self if self._worker is None or self._next_items is None else self._next_items.append

    def __call__(self, ev) -> None:
        if ev.kind == "run_begin":
            self._begin(ev)
            return
        it = self._current
        if it is None:
            return
        if it.items is not None:
            it.items.append(ev)
        elif it.trace is not None:
            it.trace(ev)
        if ev.kind == "run_end":
            if self._worker is not None:
                self._hand_over(it)
            else:
                self._end(it)

    def _raise_worker_error(self) -> None:
        """Raise, on the executor's thread, what the summary thread's C pass raised."""
        error = self._worker.error
        if error is not None:
            self._current = None
            raise error

    # -- iterations --------------------------------------------------------------------------------------------
    def _begin(self, ev) -> None:
        self._raise_stop()  # a hit found by a drain() between runs: the loop stops before this run
        if self._stopped is not None or ev.scope != self.scope.id:
            self._current = None  # another scope's run (an evaluation, a startup program): not an iteration
            return
        items, self._next_items = self._next_items, None
        it = self._current = Iteration(self.iterations, ev.scope, self.keep_last > 0, items)
        if items is not None:
            items.append(ev)
            it.start = self._scope_values()
            it.first_event = 1
        elif it.trace is not None:
            it.trace(ev)
            it.first_event = 1

    def _scope_values(self) -> dict:
        """name -> value over the recorded scope and its parents (an inner scope's value wins)."""
        values = {}
        s = self.scope
        while s is not None:  # outermost last
            for v in s.local_vars():
                values.setdefault(v.name, v.value)
            s = s.parent
        return values

    def _end(self, it: Iteration) -> None:
        self._current = None
        if it.initial is None:
            return  # a run with no op (or refused before its first): nothing happened
        self.iterations += 1
        it.summaries = {}  # the arrays it held: released with the iteration
        if self.keep_last:
            self.kept.append(it)

    def _take(self, rec) -> None:
        it = self._current
        if it is None:
            return
        op = rec[3]
        n_in = len(op.in_pairs)
        if it.initial is None and not self._first_op(it, op, rec[RECORD_HEAD:RECORD_HEAD + n_in]):
            return
        if it.keep_record is not None:
            it.keep_record(rec)
        order = it.ops
        it.ops += 1
        values = rec[RECORD_HEAD + n_in:]
        if self._write_many is None or not self._all_at_once(it, order, rec, values):
            self._summarize_each(it, order, rec, values)

    # -- background=True: an iteration's C pass on the summary thread while the next one runs ------------------
    def _hand_over(self, it: Iteration) -> None:
        """At a run's end: count it and name its rows (iteration_summaries.name_rows: Python, so here, where the
        GIL is anyway: on the summary thread it would take it in turns with the executor's), settle the
        iteration before it (its C pass ran while this one did: at most one waits, so at most one more holds its
        values), raise what that one hit, then hand this one's C pass over."""
        self._current = None
        records = [x for x in it.items if type(x) is tuple]
        if not records or (self.program is not None and not self._is_program_op(records[0][3])):
            return  # a run with no op, or another program's: no iteration
        self.iterations += 1
        it.ops = len(records)
        in_c = self._many_call is not None
        plan = self._plan
        rows = None
        if plan is not None and plan.fits(records):
            if self._plan_check is not None and plan.table is not None:
                rows = name_rows_by_plan_in_c(records, plan, self._plan_check, self._write, self._address)
            if rows is None:
                rows = name_rows_by_plan(records, plan, self._write, in_c, self._address)
        if rows is None:
            rows = name_rows(records, self._sites, self._write, in_c, self._address)
        it.rows, self._plan = rows, rows.plan
        self._settle()
        self._raise_stop()
        self._waiting = it
        self._worker.put(it)

    def _fill(self, it: Iteration) -> None:
        """On the summary thread: the C pass over the iteration's arrays."""
        it.rows.fill(self._many_call)

    def _settle(self) -> None:
        """Wait for the C pass handed over last, then add its iteration's rows, judge its watches in the order its
        ops ran (a hit is kept for _raise_stop) and keep its trace."""
        it, self._waiting = self._waiting, None
        if self._worker is None:
            return
        self._worker.drain()
        self._raise_worker_error()
        if it is None:
            return
        rows, it.rows = it.rows, None
        self.summaries.add_rows(it.index, rows.orders, rows.sites, rows.numels, rows.numbers)
        try:
            self._judge_rows(it, rows)
        except RecordingStopped as stop:
            self._pending_stop = stop
        if self.keep_last:
            it.trace = Trace.of_items(it.items, retain="references")
            self.kept.append(it)
        elif it is not self._stopped:
            it.items = None  # (a stopped iteration keeps them: its replay starts from what they read)

    def _raise_stop(self) -> None:
        """Raise, on the executor's thread, the stop of a hit found when its iteration was settled."""
        stop, self._pending_stop = self._pending_stop, None
        if stop is not None:
            raise stop

    def _judge_rows(self, it: Iteration, rows) -> None:
        """The watches on an iteration's rows, in order; the first hit raises RecordingStopped (when stopping)."""
        watched, keep_last_summary = bool(self.watches), self._keep_last_summary
        if not (watched or keep_last_summary):
            return
        every = self._judge_every or keep_last_summary
        for r in (range(len(rows)) if every else np.flatnonzero(rows.nonfinite()).tolist()):
            rec, k = rows.source(r)
            op = rec[3]
            name = op.out_pairs[k][1]
            s = summary_at(int(rows.numels[r]), rows.numbers[r])
            if watched:
                self._check(it, int(rows.orders[r]), op, rec, len(op.in_pairs), name,
                            rec[len(rec) - len(op.out_pairs) + k], s, rec[5])
            if keep_last_summary:
                self._last_summary[name] = s

    def _summarize_each(self, it: Iteration, order: int, rec, values) -> None:
        """An op record's outputs one by one (each watch reads a Summary of each)."""
        op = rec[3]
        n_in = len(op.in_pairs)
        timestep = rec[5]
        watched, judge_every, keep_last_summary = bool(self.watches), self._judge_every, self._keep_last_summary
        table, known, index, write = self.summaries, it.summaries, it.index, self._write
        for site, (slot, name), value in zip(self._sites(op, timestep), op.out_pairs, values):
            # a view holding every element of its array (a reshape's or a transpose's output) is summarised as
            # that array, the same elements in another order: a row repeated where the array was summarised in
            # this iteration, else the array's own summary (contiguous, where a transposed view is not)
            root = value
            base = getattr(value, "base", None)
            if base is not None and type(base) is type(value) and base.size == value.size and \
                    base.dtype == value.dtype and 0 not in value.strides:
                root = base
            seen = known.get(id(root))
            bad = None
            if seen is not None and seen[0] is root:
                row, bad = table.repeat(seen[1], index, order, site)
            if bad is None:
                row, bad = table.add(index, order, site, root, write)
                if bad is None:
                    continue  # no numeric tensor
                known[id(root)] = (root, row)  # the value is held: its id stays its own for the iteration
            if not (keep_last_summary or (watched and (bad or judge_every))):
                continue  # the default NaN watch reads the NaN/Inf count alone
            s = table.summary(row)
            if watched:
                self._check(it, order, op, rec, n_in, name, value, s, timestep)
            if keep_last_summary:
                self._last_summary[name] = s

    def _all_at_once(self, it: Iteration, order: int, rec, values) -> bool:
        """Where only the NaN/Inf watch reads the summaries: an op's outputs in order, each run of arrays new in
        this iteration summarised in one C call (an optimizer's update writes several small ones, most ops one),
        an array summarised before repeated from its row. A C call and a Python frame per output cost more than
        the pass over a small array. False, with nothing done, where another watch reads them (the loop's care)."""
        if self._judge_every or self._keep_last_summary:
            return False
        op, timestep = rec[3], rec[5]
        known, table, index = it.summaries, self.summaries, it.index
        cached = self._site_cache.get((id(op), timestep))  # (_sites, written out: this runs per op)
        sites = cached[1] if cached is not None and cached[0] is op else self._sites(op, timestep)
        if len(values) == 1:  # most ops: no run to gather
            return self._one_output(it, order, rec, values[0], sites[0])
        run: list[int] = []  # positions of new arrays waiting for one C call
        in_run: set[int] = set()  # their arrays' ids
        roots = []
        for k, value in enumerate(values):
            root = value
            base = getattr(value, "base", None)
            if base is not None and type(base) is type(value) and base.size == value.size and \
                    base.dtype == value.dtype and 0 not in value.strides:
                root = base  # the same elements in another order: the array's own summary (see the loop)
            roots.append(root)
            seen = known.get(id(root))
            if seen is None and id(root) not in in_run:
                run.append(k)
                in_run.add(id(root))
                continue
            if run:
                self._write_run(it, order, rec, values, roots, sites, run)
                run, in_run = [], set()
                seen = known.get(id(root))
            row, bad = table.repeat(seen[1], index, order, sites[k]) if seen is not None and seen[0] is root \
                else (-1, None)
            if bad is None:  # its row has become part of a chunk: summarised anew
                run.append(k)
            elif bad and self.watches:
                self._check_row(it, order, rec, k, values[k], row)
        if run:
            self._write_run(it, order, rec, values, roots, sites, run)
        return True

    def _one_output(self, it: Iteration, order: int, rec, value, site: int) -> bool:
        """_all_at_once for an op with one output."""
        root = value
        base = getattr(value, "base", None)
        if base is not None and type(base) is type(value) and base.size == value.size and \
                base.dtype == value.dtype and 0 not in value.strides:
            root = base
        known, table = it.summaries, self.summaries
        seen = known.get(id(root))
        bad = None
        if seen is not None and seen[0] is root:
            row, bad = table.repeat(seen[1], it.index, order, site)
        if bad is None:  # new, or its row has become part of a chunk
            row, bad = table.add(it.index, order, site, root, self._write)
            if bad is None:
                return True  # no numeric tensor
            known[id(root)] = (root, row)  # the value is held: its id stays its own for the iteration
        if bad and self.watches:
            self._check_row(it, order, rec, 0, value, row)
        return True

    def _write_run(self, it: Iteration, order: int, rec, values, roots, sites, run: list[int]) -> None:
        """Rows of the arrays roots[k] for k in `run` (new in this iteration): one C call, or one call each where
        they are one, or where the C summary takes not all of them; the NaN/Inf watch judged on each."""
        table, known, index = self.summaries, it.summaries, it.index
        first, bad = -1, None  # one array alone goes through the single writer: no list of items to build
        if len(run) > 1:
            first, bad = table.add_many(index, order, [sites[k] for k in run], [roots[k] for k in run],
                                        self._write_many)
        if bad is not None:
            for row, k in enumerate(run, first):
                known[id(roots[k])] = (roots[k], row)  # the value is held: its id stays its own for the iteration
            if bad and self.watches:
                for row, k in enumerate(run, first):
                    self._check_row(it, order, rec, k, values[k], row)
            return
        for k in run:
            root = roots[k]
            row, bad = table.add(index, order, sites[k], root, self._write)
            if bad is None:
                continue  # no numeric tensor
            known[id(root)] = (root, row)
            if bad and self.watches:
                self._check_row(it, order, rec, k, values[k], row)

    def _check_row(self, it: Iteration, order: int, rec, k: int, value, row: int) -> None:
        """The watches on output k of an op record, where its row (just written) counts NaN or Inf."""
        s = self.summaries.summary(row)
        if s.nonfinite:
            op = rec[3]
            self._check(it, order, op, rec, len(op.in_pairs), op.out_pairs[k][1], value, s, rec[5])

    def _sites(self, op, timestep) -> tuple[int, ...]:
        """The table's site numbers of the op's outputs at this timestep (found once per op and timestep)."""
        key = (id(op), timestep)
        known = self._site_cache.get(key)
        if known is not None and known[0] is op:  # the op is held: its id stays its own
            return known[1]
        sites = tuple(self.summaries.site(op.block, op.idx, op.type, name, timestep) for _, name in op.out_pairs)
        if len(self._site_cache) >= _MAX_CACHED_SITES:  # ops of programs prepared again (or gone) are held here
            self._site_cache.clear()
        self._site_cache[key] = (op, sites)
        return sites

    def _first_op(self, it: Iteration, op, in_values) -> bool:
        """At a run's first op: is it the recorded program's? Then keep the state the iteration started from."""
        if self.program is not None and not self._is_program_op(op):
            self._current = None
            return False
        initial = self._scope_values()
        for (_, name), value in zip(op.in_pairs, in_values):  # what the first op read (it may write the same)
            initial[name] = value
        it.initial = initial
        return True

    def _is_program_op(self, op) -> bool:
        try:
            return self.program.block(op.block).op(op.idx).type == op.type
        except KernelcoreError:
            return False

    # -- watches -----------------------------------------------------------------------------------------------
    def watch(self, var: str | None = None, cond: str = "nan", *, op_type: str | None = None,
              lo: float | None = None, hi: float | None = None, bound: float | None = None) -> Watch:
        """A watch condition on `var`, on the outputs of `op_type` ops, or (neither) on every output; the seven
        conditions of sess.watch, judged on summaries (kernelcore/observe/summary_watch.py)."""
        wid = self._next_id
        self._next_id += 1
        if var is None and op_type is None:
            w = every_output(wid, cond, lo, hi, bound)
        else:
            w = make_watch(wid, var, cond, op_type, lo, hi, bound)
            if self.program is not None:  # a misspelt name would never hit: refuse it with the closest ones
                names, op_types = program_names(self.program)
                if var is not None:
                    check_known(var, names, "variable")
                if op_type is not None:
                    check_known(op_type, op_types, "op type")
        self.watches.append(w)
        # the default NaN/Inf watch on every output needs nothing of an output with no NaN/Inf: other watches
        # read a Summary of every output
        self._judge_every = not all(type(x) is EveryOutput and x.cond == "nan" for x in self.watches)
        self._keep_last_summary = any(x.cond == "unchanged" for x in self.watches)
        return w

    def _check(self, it, order, op, rec, n_in, name, value, s, timestep) -> None:
        for w in self.watches:
            if not w.enabled or not w.matches(op.type, name):
                continue
            old = None
            if w.cond == "update_ratio":
                old = next((v for (_, n), v in zip(op.in_pairs, rec[RECORD_HEAD:RECORD_HEAD + n_in]) if n == name),
                           None)
            why = check(w, s, self._last_summary.get(name), old, value)
            if why is None:
                continue
            t = f" at timestep {timestep}" if timestep is not None else ""
            hit = RecorderHit(w.id, it.index, order, op.block, op.idx, op.type, timestep, name,
                              f"iteration {it.index}: {w}: {name!r} written by op {op.type!r} (block {op.block}, "
                              f"op #{op.idx}){t} {why}")
            w.hits.append(hit)
            self.hits.append(hit)
            if self.stop:
                self._stopped = it
                if self._worker is None:  # the worker's stop is raised on the executor's thread
                    self._current = None
                raise RecordingStopped(hit.message)

    def drain(self) -> Recorder:
        """Wait until every iteration that has ended is summarised and judged (background=True makes an
        iteration's summaries while the next one runs; the recording's end waits for them too). A hit found
        here stops the loop at its next run."""
        self._settle()
        return self

    @property
    def hit(self) -> RecorderHit | None:
        """The first watch hit (the one that stopped the loop)."""
        return self.hits[0] if self.hits else None

    # -- after the loop ----------------------------------------------------------------------------------------
    @property
    def session(self):
        """A debug session paused right after the op of the first hit, in the iteration it happened in (made on
        first use: it runs that iteration again up to there)."""
        if self._session is None:
            if self._stopped is None or self.program is None:
                raise KernelcoreError("no watch stopped this recording" if self._stopped is None else
                                      "kc.record(program, ...) needs the program to replay the stopped iteration")
            from .replay import replay_to
            self._session = replay_to(self, self._stopped, self.hit)
        return self._session

    def run(self, iteration: int):
        """Iteration `iteration` as a RecordedRun, while it is among the last `keep_last` (time travel, provenance,
        compare_runs)."""
        from .recorded_run import RecordedRun
        it = next((i for i in self.kept if i.index == iteration), None)
        if it is None:
            kept = [i.index for i in self.kept]
            raise KernelcoreError(f"iteration {iteration} kept no values; the recorder keeps the last "
                                  f"{self.keep_last}: {kept}")
        return RecordedRun(it.trace, [(it.scope_id, {}, dict(it.initial))], it.first_event, self.program)

    def iteration_state(self, iteration: int) -> Iteration:
        """Iteration `iteration` as recorded (the values it started from), while it is kept or is the one a
        watch stopped: what replay_to needs to run it again."""
        if self._stopped is not None and self._stopped.index == iteration:
            return self._stopped
        it = next((i for i in self.kept if i.index == iteration), None)
        if it is None:
            raise KernelcoreError(f"iteration {iteration} kept no values; the recorder keeps the last "
                                  f"{self.keep_last}: {[i.index for i in self.kept]}")
        return it

    def numbers(self, iteration: int, metric: str = "l2") -> dict[str, float]:
        """{op id: the largest `metric` over its outputs} in one iteration: the per-node figures of an overlay."""
        cols = self.summaries.columns()
        if metric not in cols or metric in ("iteration", "order", "block", "op", "op_type", "var", "timestep"):
            raise KernelcoreError(f"unknown summary column {metric!r}")
        out: dict[str, float] = {}
        keep = cols["iteration"] == iteration
        for b, o, x in zip(cols["block"][keep], cols["op"][keep], cols[metric][keep]):
            key = op_id(int(b), int(o))
            out[key] = max(out.get(key, x), x)
        return {k: float(v) for k, v in out.items()}

    def overlay(self, graph, iteration: int, stat: str = "nan", **kw):
        """Colour `graph` (a ProgramGraph of the recorded program, or anything with its `overlay` method) by
        numbers(iteration, stat). A count of NaN or Inf elements splits the ops in two bands, none and some;
        other columns run along a gradient. Other keywords go to graph.overlay; returns the graph."""
        counts = stat in ("nan", "pos_inf", "neg_inf")
        style = {"label": f"{stat}{' count' if counts else ''}, iteration {iteration}",
                 "scale": [0.5] if counts else "gradient"}
        return graph.overlay(self.numbers(iteration, stat), **{**style, **kw})

    @property
    def bytes_per_row(self) -> int:
        return self.summaries.nbytes // max(len(self.summaries), 1)

    def __repr__(self) -> str:
        what = f"stopped: {self.hit.message}" if self._stopped is not None else "no hit"
        return (f"<Recorder {self.iterations} iterations, {len(self.summaries)} summaries "
                f"({self.summaries.nbytes} bytes); {what}>")

    # -- the with block ---------------------------------------------------------------------------------------
    def __enter__(self) -> Recorder:
        self._token = add_observer(self)
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        remove_observer(self._token)
        self._token = None
        if self._worker is not None:
            try:
                self._settle()  # the last iteration judged: a hit there is kept (the loop is over anyway)
            except BaseException:
                self._worker.error = None
                if exc is None:
                    raise
            finally:
                self._pending_stop = None
                self._worker.close()
        return self._stopped is not None and _stopped_by_recorder(exc)


def _stopped_by_recorder(exc) -> bool:
    """Whether `exc` is a RecordingStopped, or an error a control-flow op raised for one inside its sub-block
    (the executor wraps what leaves a kernel in an OpRunError whose cause it is)."""
    seen = 0
    while exc is not None and seen < 64:
        if isinstance(exc, RecordingStopped):
            return True
        exc, seen = exc.__cause__, seen + 1
    return False


def record(program: Program | None = None, scope: Scope | None = None, **kw) -> Recorder:
    """The flight recorder (see kernelcore/observe/recorder.py): `with kc.record(main, scope) as rec: ...`.
    Keywords: keep_last (iterations that keep full values, 2), nan (watch every output for NaN/Inf, True),
    stop (a hit stops the loop, True), training (the replay's training flag, True), executor (the replay's),
    background (an iteration's summaries made at its end, their C pass on a thread of their own while the next
    iteration runs, True; False: as each op ends, stopping the loop right after the op a hit names:
    kernelcore/observe/summary_worker.py)."""
    return Recorder(program, scope, **kw)
