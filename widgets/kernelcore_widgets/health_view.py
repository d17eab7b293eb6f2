"""HealthView: a training loop's health from its flight recorder (kc.record), as it runs or after it stopped.

    with kc.record(main, scope) as rec:
        view = HealthView(rec, loss="mean_0.tmp_0")   # or loss=a list the loop appends fetched losses to
        display(view)
        with view.follow():                           # redraws as iterations end, a few times a second at most
            for step in range(10_000):
                exe.run(main, feed=..., fetch_list=[loss], scope=scope, training=True)
    view.selected            # {"block", "op", "iteration"} the person clicked
    view.debugger()          # a Debugger paused right after that op, in that iteration

On top the loss curve; under it each parameter's gradient L2 norm over iterations; then a table of ops, the
worst first (those that wrote NaN/Inf, by first bad iteration, then the largest statistic), each with a
sparkline of the chosen statistic over iterations, its NaN/Inf iterations marked in red and its first bad
iteration named. Clicking a sparkline at an iteration selects (op, iteration) and opens a Debugger there, shown
below the table (`debugger_widget`). Everything sent is bounded: health_series.py downsamples each series to
MAX_POINTS points and the table shows PAGE_SIZE ops a page (health_payload.py, which builds the sidebar
panel's state too).
"""
from __future__ import annotations

import contextlib
import time

import numpy as np
import traitlets as t
from ipywidgets import widget_serialization

from kernelcore.errors import KernelcoreError
from kernelcore.observe.debug import active_session
from kernelcore.observe.recorder import Recorder, RecorderHit
from kernelcore.runtime.executor import add_observer, remove_observer

from . import health_series as hs
from .health_payload import SORTS, View, health_payload
from ._base import STATIC, KCWidget
from .debugger import Debugger
from .requests import RequestError, choice_arg, int_arg, str_arg

MIN_REDRAW_S = 0.3     # follow(): at most this often
REDRAW_SHARE = 0.1     # follow(): and so that redrawing takes at most this share of the loop's time


class HealthView(KCWidget):
    """See the module docstring. Messages: `{"type": "query", "stat", "sort", "filter", "page"}` (any of
    them), `{"type": "select", "block", "op", "iteration"}` (opens the Debugger), `{"type": "refresh"}`."""

    _esm = STATIC / "HealthView.js"
    _css = STATIC / "HealthView.css"

    stat = t.Unicode("l2").tag(sync=True)
    sort = t.Unicode("worst").tag(sync=True)
    filter = t.Unicode("").tag(sync=True)
    page = t.Int(0).tag(sync=True)
    # {iterations, ops, matching, pages, page_size, first_bad: {iteration, order, block, op, op_type, var, id}
    # or {}, stats: [...], hit: the recorder's hit message or ""}
    overview = t.Dict().tag(sync=True, ts="HealthOverview | Record<string, never>")
    ops = t.List().tag(sync=True, ts="HealthOpRow[]")
    loss = t.Dict().tag(sync=True, ts="HealthCurve | Record<string, never>")
    grads = t.List().tag(sync=True, ts="HealthCurve[]")
    selected = t.Dict().tag(sync=True, ts="{ block: number; op: number; iteration: number } | Record<string, never>")
    debugger_widget = t.Instance(Debugger, allow_none=True).tag(sync=True, ts="string | null", **widget_serialization)
    status = t.Unicode("").tag(sync=True)

    def __init__(self, recorder: Recorder, loss=None, *, stat: str = "l2", **kw):
        if not isinstance(recorder, Recorder):
            raise TypeError(f"HealthView takes a flight recorder (kc.record(...)), got {type(recorder).__name__}")
        if stat not in hs.STATS:
            raise KernelcoreError(f"stat is one of {list(hs.STATS)}, got {stat!r}")
        if loss is not None and not isinstance(loss, (str, list)):
            raise TypeError("loss is a variable's name (its recorded value) or a list the loop appends losses to")
        super().__init__(**kw)
        self.recorder, self._loss_source = recorder, loss
        self.stat = stat
        self._rows_seen = -1
        self._last_redraw = 0.0
        self._refresh_s = 0.0
        self.refresh()

    # -- what is shown --------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Recompute everything shown from the recorder (its summaries so far): health_payload.py, which the
        sidebar panel's state is built by too."""
        t0 = time.monotonic()
        self._rows_seen = len(self.recorder.summaries)
        got = health_payload(self.recorder, View(self.stat, self.sort, self.filter, self.page), self._loss_source)
        self.page = got["page"]
        self.overview, self.ops, self.loss, self.grads = got["overview"], got["ops"], got["loss"], got["grads"]
        if not self.status or self.status.startswith("recorded"):
            self.status = got["status"]
        self._refresh_s = time.monotonic() - t0

    # -- following a running loop ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def follow(self):
        """Redraw as the recorded loop's iterations end (at most every MIN_REDRAW_S seconds, and less often
        when a redraw takes more than REDRAW_SHARE of the time between two), and once more when the block
        ends, however it ends (a watch's stop included, which goes on to the recorder). Open it inside the
        recorder's `with` block, so the recorder hears each run's end first."""
        token = add_observer(RunEnds(self._maybe_redraw))
        try:
            yield self
        finally:
            remove_observer(token)
            self.refresh()

    def _maybe_redraw(self) -> None:
        now = time.monotonic()
        wait = max(MIN_REDRAW_S, self._refresh_s / REDRAW_SHARE)  # a long recording redraws less often
        if now - self._last_redraw < wait or len(self.recorder.summaries) == self._rows_seen:
            return
        self.refresh()
        self._last_redraw = time.monotonic()

    # -- the debugger at a chosen op and iteration ----------------------------------------------------------
    def select(self, block: int, op: int, iteration: int) -> Debugger:
        """Select op (block, op) at `iteration` and show a Debugger paused right after it there."""
        chosen = {"block": int(block), "op": int(op), "iteration": int(iteration)}
        dbg = Debugger(session_at(self.recorder, **chosen))  # first: a choice that fails leaves the view as it was
        self._color_graph(dbg.graph, int(iteration))
        self.selected = chosen
        old, self.debugger_widget = self.debugger_widget, dbg
        if old is not None:
            old.close()
        self.status = f"debugger: {dbg.session.stop_reason}"
        return dbg

    def _color_graph(self, graph, iteration: int) -> None:
        """Colour the debugger's graph by the statistic shown, in that iteration (NaN/Inf writers in the
        overlay's NaN colour)."""
        table = self.recorder.summaries
        series = hs.OpSeries(table.columns(), list(table.sites), table.rows()["site"], self.stat)
        values = series.at_iteration(iteration)
        if values:
            graph.overlay(values, scale="log" if self.stat in ("l2", "nonfinite") else "gradient",
                          label=f"{self.stat} in iteration {iteration}")

    def debugger(self) -> Debugger:
        """A Debugger paused right after the selected op ran in the selected iteration (the recorder's own
        session for its hit; for another kept iteration, that iteration run again from its starting state)."""
        if not self.selected:
            raise KernelcoreError("nothing selected: click an op's sparkline at an iteration (or call select)")
        return Debugger(session_at(self.recorder, **self.selected))

    def close(self) -> None:
        """Close the Debugger it opened with it (the Debugger exists only as its part)."""
        if self.debugger_widget is not None:
            self.debugger_widget.close()
        super().close()

    # -- messages -------------------------------------------------------------------------------------------
    _failed_words = {"query": "cannot show that", "select": "cannot open the debugger there",
                     "refresh": "cannot refresh"}

    def _on_query(self, content) -> None:
        stat = choice_arg(content, "stat", hs.STATS, default=self.stat)
        sort = choice_arg(content, "sort", SORTS, default=self.sort)
        text = str_arg(content, "filter", default=self.filter, max_len=200, empty_ok=True)
        page = int_arg(content, "page", lo=0, hi=10 ** 6, default=self.page)
        self.stat, self.sort, self.filter, self.page = stat, sort, text, page
        self.refresh()

    def _on_select(self, content) -> None:
        block = int_arg(content, "block", lo=0, hi=10 ** 6)
        op = int_arg(content, "op", lo=0, hi=10 ** 9)
        iteration = int_arg(content, "iteration", lo=0, hi=10 ** 12)
        self.select(block, op, iteration)

    def _messages(self) -> dict:
        return {"query": self._on_query, "select": self._on_select, "refresh": lambda _c: self.refresh()}


class RunEnds:
    """An executor observer that calls `on_end` when a run ends, and asks for nothing per op. (It takes op
    records, and drops them, so the executor does not make an event object of each op record for it, as it
    does for an observer that takes only events: runtime/executor.py RunState.)"""

    keep_values = False
    keep_shapes = False

    def __init__(self, on_end):
        self.on_end = on_end

    def op_recorder(self, _record_mode):
        return _drop

    def plain_recorder(self):
        return self

    def __call__(self, ev) -> None:
        if getattr(ev, "kind", None) == "run_end":
            self.on_end()


def _drop(_record) -> None:
    pass


def session_at(recorder: Recorder, block: int, op: int, iteration: int):
    """A DebugSession paused right after op (block, op) first ran in `iteration` (for the recorder's hit: its
    own session, while it is the one the debugger sidebar follows; else a kept iteration run again from its
    starting state, which the sidebar then follows, as it follows every new session)."""
    hit = recorder.hit
    if hit is not None and (hit.iteration, hit.block, hit.op) == (iteration, block, op):
        sess = recorder.session
        if active_session() is sess:
            return sess
    cols = recorder.summaries.columns()
    rows = np.flatnonzero((cols["iteration"] == iteration) & (cols["block"] == block) & (cols["op"] == op))
    if not len(rows):
        raise RequestError(f"op {block}/{op} wrote nothing recorded in iteration {iteration}")
    it = recorder.iteration_state(iteration)
    if recorder.program is None:
        raise KernelcoreError("kc.record(program, ...) needs the program to run an iteration again")
    r = int(rows[0])
    t_step = int(cols["timestep"][r])
    where = RecorderHit(0, iteration, int(cols["order"][r]), block, op, str(cols["op_type"][r]),
                        None if t_step < 0 else t_step, str(cols["var"][r]),
                        f"iteration {iteration}: op {cols['op_type'][r]!r} (block {block}, op #{op}), "
                        f"chosen in the health view")
    from kernelcore.observe.replay import replay_to
    return replay_to(recorder, it, where)
