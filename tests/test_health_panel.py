"""The "Training health" panel's kernel side (kernelcore_widgets.health_comm): the recorder it shows, its empty
state, the bounds on what it sends, hostile requests and names, the debug session a click opens, and the pushes
while a recorded loop runs."""
import json
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import kernelcore as kc
from kernelcore.observe.debug import active_session
from kernelcore.observe.recorder import record
from kernelcore_widgets import health_comm as hc
from kernelcore_widgets import health_follow as hf
from kernelcore_widgets.health_payload import guess_loss

from fake_comm import FakeComm
from test_recorder import _mlp, _train


@pytest.fixture(scope="module")
def blown_up():
    """A loop whose learning rate is raised part way: the recorder stops at its first NaN/Inf."""
    main, scope, loss, feed = _mlp()
    with record(main, scope, keep_last=3) as rec:
        _train(main, scope, loss, feed, 60)
    return rec, loss


def _healthy(iterations=5):
    main, scope, loss, feed = _mlp()
    exe = kc.Executor()
    with record(main, scope, keep_last=1) as rec:
        for _ in range(iterations):
            exe.run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
    return rec


def _channel(ns):
    sent = []
    return hc.HealthChannel(sent.append, namespace=lambda: ns), sent


class _Cell:
    """What IPython's pre_run_cell hands its callbacks (ExecutionInfo), as far as the panel reads it."""

    def __init__(self, raw_cell):
        self.raw_cell = raw_cell


def _ask(ch, sent, **msg):
    before = len(sent)
    ch.handle({"req": 7, **msg})
    assert len(sent) == before + 1  # exactly one answer
    return sent[-1]


def test_with_no_recorder_the_panel_says_how_to_start_recording():
    ch, sent = _channel({"x": 1, "main": kc.Program()})
    got = _ask(ch, sent, type="state")
    assert got["ok"] and got["req"] == 7
    state = got["result"]
    assert state["recorder"] is None and state["payload"] is None and state["recorders"] == []
    assert "with kc.record(main, scope) as rec:" in state["hint"]
    assert state["hint"] == hc.EMPTY_HINT  # whole: names are clipped, the panel's own words are not


def test_the_most_recent_recorder_is_shown_unless_one_is_picked(blown_up):
    rec, _ = blown_up
    later = _healthy(2)
    ns = {"old": rec, "new": later}
    ch, sent = _channel(ns)
    first = _ask(ch, sent, type="state")["result"]
    assert [r["name"] for r in first["recorders"]] == ["new", "old"]  # the last bound first, nothing grew yet
    assert first["recorder"] == "new"
    picked = _ask(ch, sent, type="state", recorder="old")["result"]
    assert picked["recorder"] == "old" and picked["payload"]["overview"]["first_bad"]
    ch.push()
    assert sent[-1]["req"] is None and sent[-1]["result"]["recorder"] == "old"  # pushes keep the choice


def test_a_recorder_that_grows_becomes_the_most_recent():
    a, b = _healthy(2), _healthy(2)
    ns = {"b": b, "a": a}
    ch, sent = _channel(ns)
    assert _ask(ch, sent, type="state")["result"]["recorder"] == "a"  # nothing grew while listed: the last bound
    main, scope, loss, feed = _mlp()
    exe = kc.Executor()
    with record(main, scope, keep_last=0) as c:
        ns["c"] = c
        got = _ask(ch, sent, type="state")["result"]
        assert got["recorder"] == "c" and got["hint"].startswith("recording")
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
    ns["d"] = _healthy(1)
    assert _ask(ch, sent, type="state")["result"]["recorder"] == "d"  # first seen now: the newest
    with c:
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
    assert _ask(ch, sent, type="state")["result"]["recorder"] == "c"  # it grew since: the loop that ran last


def test_the_loss_curve_is_the_variable_whose_gradient_the_backward_seeds(blown_up):
    rec, loss = blown_up
    assert guess_loss(rec.program) == loss.name
    ch, sent = _channel({"rec": rec})
    payload = _ask(ch, sent, type="state")["result"]["payload"]
    assert payload["loss"]["name"] == loss.name and payload["loss"]["points"]
    assert payload["grads"] and payload["ops"][0]["first_bad"] == payload["overview"]["first_bad"]["iteration"]


@pytest.mark.parametrize("points", [16, 40, 500])
def test_every_series_holds_at_most_the_points_asked_for(points):
    rec = _healthy(600)
    ch, sent = _channel({"rec": rec})
    got = _ask(ch, sent, type="state", points=points)
    payload = got["result"]["payload"]
    series = [r["points"] for r in payload["ops"]] + [c["points"] for c in payload["grads"]] + \
        [payload["loss"]["points"]]
    assert max(len(s) for s in series) <= points
    assert max(len(s) for s in series) > points // 2  # downsampled, not dropped
    assert len(payload["ops"]) <= payload["overview"]["page_size"]
    assert len(json.dumps(got)) < hc.MAX_MESSAGE_BYTES


@settings(max_examples=80, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids, max_size=4),
                    max_leaves=12))
def test_any_request_is_answered_exactly_once(msg):
    ch, sent = _channel({})
    ch.handle(msg)
    assert len(sent) == 1 and set(sent[0]) == {"req", "ok", "error", "result"}
    json.dumps(sent[0], allow_nan=False)


@pytest.mark.parametrize("bad", [{"points": 10 ** 9}, {"points": "many"}, {"page": -1}, {"stat": "<img>"},
                                 {"sort": ["worst"]}, {"filter": "x" * 10_000}, {"recorder": {"a": 1}}])
def test_a_malformed_view_is_refused_and_leaves_the_view_as_it_was(blown_up, bad):
    rec, _ = blown_up
    ch, sent = _channel({"rec": rec})
    _ask(ch, sent, type="state", stat="max", points=40)
    got = _ask(ch, sent, type="state", **bad)
    assert not got["ok"] and got["error"] and got["result"] is None
    assert (ch.view.stat, ch.points) == ("max", 40)


def test_hostile_names_are_sent_as_plain_bounded_text():
    main, scope, loss, feed = _mlp()
    hostile = "<img src=x onerror=alert(1)>\x1b[31m" + "A" * 5_000
    block = main.global_block()
    op = next(o for o in block.ops if o.type == "tanh")
    src = op.output("Out")[0]
    block.create_var(name=hostile, shape=list(block.var(src).shape), dtype=block.var(src).dtype)
    block.append_op("scale", inputs={"X": [src]}, outputs={"Out": [hostile]}, attrs={"scale": 1.0})
    with record(main, scope, keep_last=0) as rec:
        kc.Executor().run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
    ns = {"rec": rec}
    ch, sent = _channel(ns)
    got = _ask(ch, sent, type="state", filter="scale", sort="program")["result"]
    names = [v for r in got["payload"]["ops"] for v in r["vars"]]
    clipped = [v for v in names if v.startswith("<img")]
    assert clipped and all(len(v) <= hc.MAX_TEXT for v in clipped)
    assert clipped[0].startswith("<img src=x onerror=alert(1)>\x1b[31m")  # text as it is; the panel sets textContent


def test_selecting_an_op_and_iteration_moves_the_debugger_sidebar_there(blown_up):
    rec, _ = blown_up
    ch, sent = _channel({"rec": rec})
    fb = _ask(ch, sent, type="state")["result"]["payload"]["overview"]["first_bad"]
    assert rec.session is not None  # the hit's own session, made before ...
    later = kc.debug(rec.program, feed={}, scope=kc.Scope())  # ... a session started later, which the sidebar
    assert active_session() is later                           # follows now
    got = _ask(ch, sent, type="select", block=fb["block"], op=fb["op"], iteration=fb["iteration"])
    assert got["ok"], got["error"]
    sess = active_session()
    assert sess is ch.session  # the newest session, kept alive by the channel
    inner = sess.position.frames[-1]
    assert (inner.block, inner.op) == (fb["block"], fb["op"] + 1)  # paused right after the chosen op
    assert "iteration %d" % fb["iteration"] in sess.stop_reason
    earlier = _ask(ch, sent, type="select", block=0, op=fb["op"] - 1, iteration=fb["iteration"] - 1)
    assert earlier["ok"] and active_session() is ch.session is not sess
    assert ch.session.position.frames[-1].op == fb["op"] and "iteration %d" % (fb["iteration"] - 1) in \
        ch.session.stop_reason


def test_selecting_where_nothing_was_recorded_is_an_error_reply(blown_up):
    rec, _ = blown_up
    ch, sent = _channel({"rec": rec})
    got = _ask(ch, sent, type="select", block=0, op=0, iteration=10 ** 6)
    assert not got["ok"] and "wrote nothing recorded" in got["error"]
    got = _ask(ch, sent, type="select", recorder="gone", block=0, op=0, iteration=0)
    assert not got["ok"] and "gone" in got["error"]


def _loop_cell_starts(monkeypatch, connected: bool):
    """A recorded loop's cell starting with the follower, a panel connected or not: (its MLP, the panel's
    channel, what was sent on it, the notebook's namespace, the follower); every run end pushes, however long
    building the state took."""
    monkeypatch.setattr(hf, "MIN_PUSH_S", 0.0)
    monkeypatch.setattr(hf, "PUSH_SHARE", 1e9)
    mlp = _mlp()  # (its startup run comes before the cell)
    ns = {}
    ch, sent = _channel(ns)
    _connect(monkeypatch, *([ch] if connected else []))
    follower = hf.Follower()
    follower.cell_starts(_Cell("with kc.record(main, scope) as rec: ..."))
    return mlp, ch, sent, ns, follower


@pytest.mark.parametrize("background", [False, True])
def test_a_recorded_loop_pushes_its_state_as_it_runs(monkeypatch, background):
    (main, scope, loss, feed), ch, sent, ns, follower = _loop_cell_starts(monkeypatch, connected=True)
    exe = kc.Executor()
    with record(main, scope, keep_last=0, background=background) as rec:
        ns["rec"] = rec
        for _ in range(4):
            exe.run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
    during = [m["result"]["payload"]["overview"]["iterations"] for m in sent if m["result"]["payload"]]
    follower.cell_ended()
    if background:  # the summary thread's rows join the table at a later run's end, after this push
        assert len(during) == 4 and during == sorted(during) and during[-1] >= 2
    else:
        assert during == [1, 2, 3, 4]  # one push as each iteration ended
    assert sent[-1]["req"] is None and sent[-1]["result"]["payload"]["overview"]["iterations"] == 4
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
    assert len(sent) == 5  # the cell ended: its observer is gone


def test_a_model_s_recorded_fit_is_shown_while_it_runs_and_after(monkeypatch):
    # model.fit(record=True) binds no recorder itself: the panel finds it as model.recorder from the fit's start
    from kernelcore_widgets.health_recorders import RecorderList
    from test_model_fit import _batches, _model
    monkeypatch.setattr(hf, "MIN_PUSH_S", 0.0)
    monkeypatch.setattr(hf, "PUSH_SHARE", 1e9)
    model, loss = _model()
    ns = {"model": model}
    ch, sent = _channel(ns)
    _connect(monkeypatch, ch)
    assert RecorderList(lambda: ns).found() == []  # (no fit recorded yet)
    follower = hf.Follower()
    follower.cell_starts(_Cell("result = model.fit(batches, fetch=[loss], record=True)"))
    seen = []

    def batches():
        for step, batch in enumerate(_batches()):
            if step == 3:
                seen.append(RecorderList(lambda: ns).found())
            yield batch
    ns["result"] = model.fit(batches(), fetch=[loss], record=True)
    follower.cell_ended()
    (during,) = seen
    assert [name for name, _ in during] == ["model.recorder"] and during[0][1] is model.recorder
    pushed = [m["result"]["payload"]["overview"]["iterations"] for m in sent if m["result"]["payload"]]
    assert len(pushed) >= 3 and pushed == sorted(pushed) and pushed[-1] == model.recorder.iterations == 6
    after = RecorderList(lambda: ns).found()  # the fit's result holds the same recorder: listed once
    assert [(name, rec) for name, rec in after] == [("model.recorder", ns["result"].recorder)]
    assert RecorderList(lambda: {"result": ns["result"]}).found()[0][0] == "result.recorder"


def _connect(monkeypatch, *chs) -> None:
    """The panels connected: `chs` alone."""
    connected = hf.Channels()
    for ch in chs:
        connected.add(ch)
    monkeypatch.setattr(hf, "channels", connected)


@pytest.mark.parametrize("panel", [True, False])  # a panel may connect while the cell runs: observed either way
@pytest.mark.parametrize("source, bound, observed", [
    ("for _ in range(9):\n    exe.run(main)", False, False),   # an unrecorded loop pays nothing
    ("with kc.record(main, scope) as rec:\n    train()", False, True),
    ("with rec:\n    train()", True, True),                     # a recorder bound by an earlier cell
])
def test_only_the_cells_that_may_record_are_observed(monkeypatch, source, bound, observed, panel):
    from kernelcore_widgets.health_recorders import RecorderList
    ns = {"rec": _healthy(1)} if bound else {}
    ch, _sent = _channel(ns)
    _connect(monkeypatch, *([ch] if panel else []))
    follower = hf.Follower(lambda: RecorderList(lambda: ns).any_bound())
    follower.cell_starts(_Cell(source))
    assert follower.observing == observed
    follower.cell_ended()


def test_a_cell_on_another_thread_keeps_its_own_observer(monkeypatch):
    # a subshell's console runs cells on a thread of its own, beside the notebook's cell
    _connect(monkeypatch)
    follower = hf.Follower()
    follower.cell_starts(_Cell("with kc.record(main, scope) as rec: ..."))
    seen = {}

    def other_cell():
        seen["before"] = follower.observing
        follower.cell_starts(_Cell("with kc.record(main, scope) as rec2: ..."))
        seen["during"] = follower.observing
        follower.cell_ended()
        seen["after"] = follower.observing
    t = threading.Thread(target=other_cell)
    t.start()
    t.join()
    assert seen == {"before": False, "during": True, "after": False} and follower.observing
    follower.cell_ended()
    assert not follower.observing


def test_a_panel_connected_while_a_recorded_loop_runs_is_pushed_its_state_from_the_next_run_s_end(monkeypatch):
    # after "Run All" the panel's comm opens (on a kernel subshell) while the loop's cell already runs
    (main, scope, loss, feed), ch, sent, ns, follower = _loop_cell_starts(monkeypatch, connected=False)
    exe = kc.Executor()
    with record(main, scope, keep_last=0, background=False) as rec:
        ns["rec"] = rec
        for step in range(4):
            if step == 2:
                connecting = threading.Thread(target=hf.channels.add, args=(ch,))  # as a subshell's thread does
                connecting.start()
                connecting.join()
            exe.run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
    follower.cell_ended()
    during = [m["result"]["payload"]["overview"]["iterations"] for m in sent[:-1]]
    assert during == [3, 4]  # pushed as the runs after it connected ended
    assert sent[-1]["result"]["payload"]["overview"]["iterations"] == 4


def test_the_connected_channels_are_read_safely_while_another_thread_connects_and_leaves():
    connected = hf.Channels()
    kept = [object.__new__(type("Ch", (), {})) for _ in range(64)]
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            for c in kept:
                connected.add(c)
            for c in kept:
                connected.discard(c)
    t = threading.Thread(target=churn)
    t.start()
    try:
        for _ in range(2000):
            assert len(connected.snapshot()) <= len(kept)
    finally:
        stop.set()
        t.join()


FIXTURE = __import__("pathlib").Path(__file__).resolve().parents[1] / "labextension" / "test" / "health-messages.json"
HOSTILE = "<img src=x onerror=alert(1)>\x1b[2J"


def _scenario_messages(blown):
    """What the panel's vitest tests replay: an empty kernel's state, then two recorders (one named with markup
    and a terminal escape, the one shown: it stopped at a NaN), and a select's reply."""
    ns = {}
    ch, sent = _channel(ns)
    ch.handle({"req": 1, "type": "state", "points": 40})
    ns["healthy"] = _healthy(3)
    ns[HOSTILE] = blown
    ch.handle({"req": 2, "type": "state", "recorder": HOSTILE})
    fb = sent[-1]["result"]["payload"]["overview"]["first_bad"]
    ch.handle({"req": 3, "type": "select", "block": fb["block"], "op": fb["op"], "iteration": fb["iteration"]})
    return sent


def _same_shape(a, b) -> bool:
    """The same keys and value types all the way down (a list's first entries compared; an empty list matches
    any list: how many NaN ranges a curve has is the recording's business)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_shape(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return not a or not b or _same_shape(a[0], b[0])
    return type(a) is type(b)


def test_the_front_end_fixture_is_real(blown_up):
    """labextension/test/health-messages.json is made by this scenario (KC_UPDATE_FIXTURES=1 rewrites it):
    the stored messages have the shape the kernel sends now."""
    import os
    fresh = _scenario_messages(blown_up[0])
    if os.environ.get("KC_UPDATE_FIXTURES"):
        FIXTURE.write_text(json.dumps(fresh, indent=1, allow_nan=False) + "\n")
    stored = json.loads(FIXTURE.read_text())
    fresh = json.loads(json.dumps(fresh))
    assert len(stored) == len(fresh) and all(_same_shape(a, b) for a, b in zip(stored, fresh))
    assert stored[1]["result"]["recorder"] == HOSTILE and stored[0]["result"]["payload"] is None


def test_opening_the_comm_greets_without_reading_a_recorder_then_answers_on_request(monkeypatch):
    """The opening may run beside a recorded loop (on a subshell): it must not read the recorder's table, and
    the loop's pushes come only after the greeting."""
    read = []
    monkeypatch.setattr(hc, "health_payload", lambda *a, **k: read.append(a) or {})
    _connect(monkeypatch)
    comm = FakeComm()
    sent_before_connected = []
    comm.send = lambda msg: (comm.sent.append(msg), sent_before_connected.append(not hf.channels.snapshot()))
    hc._open(comm, {"content": {"data": {}}})
    try:
        assert comm.sent == [hc.HELLO] and not read and sent_before_connected == [True]
        assert len(hf.channels.snapshot()) == 1
        comm.handlers["msg"]({"content": {"data": {"req": 5, "type": "state"}}})
        assert len(comm.sent) == 2 and comm.sent[1]["req"] == 5 and comm.sent[1]["ok"]
        comm.handlers["msg"]({"content": "not a dict"})
        assert len(comm.sent) == 3 and not comm.sent[2]["ok"]
    finally:
        comm.handlers["close"]({})
    assert not [c for c, _ch in hc._open_comms if c is comm]
