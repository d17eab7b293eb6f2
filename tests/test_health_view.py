"""The training-health view: its payload (bounded series that keep spikes, the first bad iteration, the worst
ops first), its requests (hostile ones answered with an error) and the Debugger it opens at an op and iteration."""
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import kernelcore as kc
from kernelcore.observe.recorder import record
from kernelcore_widgets import HealthView, health_series as hs

from test_recorder import _copy_scope, _first_nonfinite, _mlp, _train
from test_widgets import views  # noqa: F401  - a stub view where the front end is not built


@pytest.fixture(autouse=True)
def health_view_stub(tmp_path, monkeypatch):
    """As test_widgets.views does for the other widgets: a stub ESM where HealthView's is not built."""
    if not HealthView._asset_paths["_esm"].is_file():
        stub = tmp_path / "stub.js"
        stub.write_text("export default { render() {} };\n")
        monkeypatch.setitem(HealthView._asset_paths, "_esm", stub)


@pytest.fixture(scope="module")
def blown_up():
    """A loop whose learning rate is raised at iteration RAISE_AT: the recorder stops at its first NaN/Inf."""
    main, scope, loss, feed = _mlp()
    oracle = {}

    def first_bad(it, tr):
        bad = _first_nonfinite(tr)
        if bad:
            oracle["it"], oracle["event"], oracle["var"] = it, *bad
        return bad is not None
    _train(main, _copy_scope(scope), loss, feed, 60, first_bad)
    with record(main, scope, keep_last=3) as rec:
        _train(main, scope, loss, feed, 60)
    return rec, loss, oracle


def _sent(view):
    out = []
    view.send = lambda msg, *a, **k: out.append(msg)
    return out


# -- the series ---------------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.integers(501, 20_000), st.integers(0, 10 ** 6), st.floats(-1e30, 1e30, allow_nan=False))
def test_downsampling_bounds_the_points_and_keeps_every_bucket_s_extremes(n, seed, spike):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(n)
    at = int(rng.integers(n))
    values[at] = spike
    pts = hs.downsample(np.arange(n), values)
    assert len(pts) <= hs.MAX_POINTS
    its = [p[0] for p in pts]
    assert its == sorted(its)
    got = dict(map(tuple, pts))
    assert values.max() in got.values() and values.min() in got.values()
    if spike in (values.max(), values.min()):
        assert got.get(at) == spike  # the one-iteration spike is drawn at its own iteration


def test_short_series_are_sent_whole_without_the_non_finite_points():
    pts = hs.downsample([0, 1, 2, 3], [1.0, np.nan, np.inf, 2.0])
    assert pts == [[0, 1.0], [3, 2.0]]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 9_999), max_size=3_000))
def test_bad_ranges_cover_every_bad_iteration_and_stay_bounded(bad):
    ranges = hs.bad_ranges(bad, 10_000)
    assert len(ranges) <= hs.MAX_POINTS // 2
    assert all(any(a <= b <= z for a, z in ranges) for b in bad)
    if len(set(bad)) <= hs.MAX_POINTS // 2:  # few enough: exactly the runs of bad iterations
        assert sum(z - a + 1 for a, z in ranges) == len(set(bad))


# -- the view's payload ----------------------------------------------------------------------------------------
def test_the_first_bad_iteration_and_op_are_where_numpy_finds_the_first_non_finite(blown_up):
    rec, loss, oracle = blown_up
    view = HealthView(rec, loss=loss.name)
    fb = view.overview["first_bad"]
    assert (fb["iteration"], fb["block"], fb["op"], fb["var"]) == (oracle["it"], oracle["event"].block,
                                                                    oracle["event"].op, oracle["var"])
    top = view.ops[0]  # worst first: the op that went bad first
    assert (top["block"], top["op"], top["first_bad"]) == (fb["block"], fb["op"], oracle["it"])
    assert [oracle["it"], oracle["it"]] in top["bad"]
    assert oracle["it"] not in [p[0] for p in top["points"]]  # a bad iteration is a red band, not a point
    assert all(r["first_bad"] is None or r["first_bad"] >= oracle["it"] for r in view.ops)
    assert view.overview["iterations"] == oracle["it"] + 1
    assert "first NaN/Inf: iteration %d" % oracle["it"] in view.status


def test_the_loss_curve_and_gradient_norms_match_the_recorded_values(blown_up):
    rec, loss, oracle = blown_up
    fetched = []
    main, scope, loss2, feed = _mlp()
    exe = kc.Executor()
    for _ in range(4):
        fetched.append(exe.run(main, feed=feed, fetch_list=[loss2], scope=scope, training=True)[0])
    view = HealthView(rec, loss=fetched)
    assert [p[1] for p in view.loss["points"]] == pytest.approx([float(np.asarray(v).reshape(-1)[0]) for v in fetched])
    cols = rec.summaries.columns()
    params = {v.name for v in rec.program.global_block().vars if v.is_parameter}
    assert {g["name"] for g in view.grads} == params
    g = view.grads[0]
    rows = np.flatnonzero((cols["var"] == g["name"] + "@GRAD") & (cols["iteration"] == 0))
    assert g["points"][0] == [0, pytest.approx(float(cols["l2"][rows[-1]]))]


def test_filter_sort_and_pages_bound_the_table(blown_up):
    rec, _, _ = blown_up
    view = HealthView(rec)
    every = view.overview["ops"]
    view.handle_message({"type": "query", "filter": "grad", "sort": "program"})
    assert view.ops and all("grad" in r["op_type"] or any("grad" in v.lower() for v in r["vars"]) for r in view.ops)
    assert view.overview["matching"] < every
    assert [(r["block"], r["op"]) for r in view.ops] == sorted((r["block"], r["op"]) for r in view.ops)
    view.handle_message({"type": "query", "filter": "", "page": 10 ** 6})
    assert view.page == view.overview["pages"] - 1 and len(view.ops) <= view.overview["page_size"]


def test_a_long_run_is_sent_bounded(blown_up):
    rec, _, _ = blown_up
    view = HealthView(rec)
    payload = json.dumps({"ops": view.ops, "loss": view.loss, "grads": view.grads, "overview": view.overview})
    assert all(len(r["points"]) <= hs.MAX_POINTS for r in view.ops)
    assert len(payload) < 200_000


def test_a_recorder_with_ten_thousand_iterations_is_downsampled_per_op():
    main, scope, loss, feed = _mlp()
    with record(main, scope, keep_last=0) as rec:
        exe = kc.Executor()
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
    table = rec.summaries
    rows = table.rows()
    n = 10_000  # iterations made from the recorded one: the table's own append, as the recorder calls it
    cols = rec.summaries.columns()
    for it in range(1, n):
        for r in range(len(rows)):
            s = (int(cols["numel"][r]), 0, 0, 0, 0, 0, 0, 0.0, 1.0, 0.5, float(it == 1234) * 1e6 + 1.0)
            table.append(it, int(rows["order"][r]), int(rows["site"][r]), s)
    view = HealthView(rec, stat="l2")
    assert view.overview["iterations"] == n
    for r in view.ops:
        assert len(r["points"]) <= hs.MAX_POINTS
        assert [1234, 1e6 + 1.0] in r["points"]  # the spike survives the downsampling


# -- requests ------------------------------------------------------------------------------------------------
HOSTILE = [
    {"type": "query", "stat": "__class__"},
    {"type": "query", "page": 10 ** 400},
    {"type": "query", "page": -1},
    {"type": "query", "filter": "x" * 10_000},
    {"type": "query", "filter": [[[[]]]]},
    {"type": "select", "block": 0, "op": 0},
    {"type": "select", "block": "0", "op": 0, "iteration": 0},
    {"type": "select", "block": 0, "op": 10 ** 30, "iteration": 0},
    {"type": "select", "block": 0, "op": 0, "iteration": float("inf")},
    {"type": "select", "block": 0, "op": 9999, "iteration": 0},
    {"type": "select", "block": 0, "op": 0, "iteration": 0},  # an iteration whose values were not kept
    {"type": "nope"},
    ["not", "a", "dict"],
]


@pytest.mark.parametrize("msg", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_requests_are_answered_once_with_an_error_and_change_nothing(blown_up, msg):
    rec, _, _ = blown_up
    view = HealthView(rec)
    before = (view.stat, view.page, view.filter, view.ops, view.debugger_widget, view.selected)
    sent = _sent(view)
    view.handle_message(msg)
    assert len(sent) == 1 and sent[0]["type"] == "error" and len(sent[0]["error"]) <= 2_000
    assert (view.stat, view.page, view.filter, view.ops, view.debugger_widget, view.selected) == before


def test_bad_arguments_are_refused_when_made():
    main, scope, loss, feed = _mlp()
    rec = record(main, scope)
    with pytest.raises(TypeError):
        HealthView(object())
    with pytest.raises(kc.KernelcoreError):
        HealthView(rec, stat="median")
    with pytest.raises(TypeError):
        HealthView(rec, loss=3)


# -- the debugger at an op and iteration ------------------------------------------------------------------------
def test_selecting_the_first_bad_op_opens_the_recorder_s_session_there(blown_up):
    rec, _, oracle = blown_up
    view = HealthView(rec)
    fb = view.overview["first_bad"]
    view.handle_message({"type": "select", "block": fb["block"], "op": fb["op"], "iteration": fb["iteration"]})
    dbg = view.debugger_widget
    assert dbg is not None and dbg.session is rec.session
    last = next(e for e in reversed(dbg.session.trace.events) if e.kind == "op_run")
    assert (last.block, last.op) == (oracle["event"].block, oracle["event"].op)
    assert view.selected == {"block": fb["block"], "op": fb["op"], "iteration": fb["iteration"]}
    spec = dbg.graph.overlay_spec  # the graph coloured by the statistic in that iteration, the bad op as NaN
    assert spec["label"] == f"l2 in iteration {fb['iteration']}"
    assert spec["values"][fb["id"]] == "NaN"
    cols = rec.summaries.columns()
    mean_rows = (cols["op_type"] == "mean") & (cols["iteration"] == 0)
    assert hs.OpSeries(cols, rec.summaries.sites, rec.summaries.rows()["site"], "l2").at_iteration(0)[
        "o0:%d" % cols["op"][mean_rows][0]] == pytest.approx(float(cols["l2"][mean_rows][0]))


def test_selecting_an_op_in_a_kept_iteration_replays_that_iteration_up_to_it(blown_up):
    rec, _, oracle = blown_up
    kept = [i.index for i in rec.kept]
    view = HealthView(rec)
    row = next(r for r in view.ops if r["op_type"] == "mul" and r["block"] == 0)
    dbg = view.select(row["block"], row["op"], kept[0])
    sess = dbg.session
    last = next(e for e in reversed(sess.trace.events) if e.kind == "op_run")
    assert (last.block, last.op) == (row["block"], row["op"])
    assert "not deterministic" not in sess.stop_reason
    # the value there is what that iteration wrote: the recorder's summary of it
    cols = rec.summaries.columns()
    r = np.flatnonzero((cols["iteration"] == kept[0]) & (cols["block"] == row["block"]) & (cols["op"] == row["op"]))[0]
    assert float(np.linalg.norm(sess.value(str(cols["var"][r])))) == pytest.approx(float(cols["l2"][r]), rel=1e-5)
    first = view.debugger_widget
    view.select(row["block"], row["op"], kept[-1])
    assert view.debugger_widget is not first and first.comm is None  # the one it replaced is closed
    second = view.debugger_widget
    view.close()
    assert second.comm is None


def test_debugger_without_a_selection_says_what_to_do(blown_up):
    rec, _, _ = blown_up
    with pytest.raises(kc.KernelcoreError, match="nothing selected"):
        HealthView(rec).debugger()


# -- following a running loop ---------------------------------------------------------------------------------
def test_follow_redraws_as_iterations_end_and_once_more_at_the_stop(monkeypatch):
    from kernelcore_widgets import health_view
    monkeypatch.setattr(health_view, "MIN_REDRAW_S", 0.0)
    monkeypatch.setattr(health_view, "REDRAW_SHARE", float("inf"))
    main, scope, loss, feed = _mlp()
    seen = []
    with record(main, scope) as rec:
        view = HealthView(rec)
        view.observe(lambda ch: seen.append(ch["new"]["iterations"]), "overview")
        with view.follow():
            _train(main, scope, loss, feed, 60)
    assert seen == sorted(seen) and len(seen) >= rec.hit.iteration
    assert view.overview["first_bad"]["iteration"] == rec.hit.iteration


def test_a_slow_redraw_waits_longer_so_following_stays_a_small_share_of_the_loop(monkeypatch, blown_up):
    from kernelcore_widgets import health_view
    rec, _, _ = blown_up
    view = HealthView(rec)
    clock = [1000.0]
    monkeypatch.setattr(health_view.time, "monotonic", lambda: clock[0])
    redraws = []
    monkeypatch.setattr(view, "refresh", lambda: redraws.append(clock[0]))
    view._rows_seen, view._last_redraw, view._refresh_s = -1, 1000.0, 0.5  # a redraw took 0.5 s
    for t in (1000.2, 1002.0, 1004.9):  # within 0.5 / REDRAW_SHARE = 5 s: no redraw
        clock[0] = t
        view._maybe_redraw()
    assert redraws == []
    clock[0] = 1005.1
    view._maybe_redraw()
    assert redraws == [1005.1]
    view._refresh_s, clock[0] = 0.0, 1005.1 + health_view.MIN_REDRAW_S / 2  # a fast redraw: the floor holds
    view._maybe_redraw()
    assert redraws == [1005.1]


def test_following_asks_the_executor_for_no_per_op_events():
    """An observer that takes only events gets an event object made for every op record; the view's run-end
    listener takes the records and drops them, so following costs the loop one call per op, not an event."""
    from kernelcore_widgets.health_view import RunEnds
    main, scope, loss, feed = _mlp()
    kinds = []

    class Spy(RunEnds):
        def __call__(self, ev):
            kinds.append(ev.kind)
            super().__call__(ev)
    ends = Spy(lambda: kinds.append("END"))
    from kernelcore.runtime.executor import add_observer, remove_observer
    with record(main, scope):
        token = add_observer(ends)
        try:
            kc.Executor().run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
        finally:
            remove_observer(token)
    assert "op_run" not in kinds and kinds.count("END") == 1


def test_whoever_follows_the_replayed_session_hears_the_recorder_s_reason_last(blown_up):
    """The sidebar follows a new session from its first step; the replay's steps said "step", so the replay
    tells its followers the reason it stopped for once it set it."""
    from kernelcore.observe.debug import session_hooks
    from kernelcore_widgets.health_view import session_at
    rec, _, _ = blown_up
    kept = rec.kept[-1].index
    heard = []

    def follow(sess):
        sess.listeners.append(lambda s: heard.append(s.stop_reason))
    session_hooks.append(follow)
    try:
        cols = rec.summaries.columns()
        r = np.flatnonzero(cols["iteration"] == kept)[3]
        sess = session_at(rec, int(cols["block"][r]), int(cols["op"][r]), kept)
    finally:
        session_hooks.remove(follow)
    assert heard and heard[-1] == sess.stop_reason and heard[-1].startswith("recorder: iteration")


@pytest.mark.parametrize("stat", hs.STATS)
def test_each_op_s_points_are_its_outputs_statistic_per_iteration_as_numpy_reduces_them(blown_up, stat):
    rec, _, _ = blown_up
    view = HealthView(rec, stat=stat)
    view.handle_message({"type": "query", "sort": "program"})
    cols = rec.summaries.columns()
    values = hs.stat_column(cols, stat)
    bad = (cols["nan"] + cols["pos_inf"] + cols["neg_inf"]) > 0
    pick = {"min": np.nanmin, "mean": np.nanmean}.get(stat, np.nanmax)
    for row in view.ops:
        want = []
        for it in range(view.overview["iterations"]):
            mine = (cols["block"] == row["block"]) & (cols["op"] == row["op"]) & (cols["iteration"] == it)
            # a sparkline draws finite points: an L2 norm or mean past float32's range is kept as Inf in its row
            # (the run is about to blow up: which iteration does varies with BLAS's sums), and is not drawn
            got = float(pick(values[mine])) if mine.any() and np.isfinite(values[mine]).any() else np.nan
            if not bad[mine].any() and np.isfinite(got):
                want.append([it, pytest.approx(got, rel=1e-6, abs=1e-30)])
        assert row["points"] == want, (row["id"], stat)
