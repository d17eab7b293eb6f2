"""Hostile or careless requests on the Jupyter comms: "send to notebook" never replaces a name without the
person's confirmation and never binds a name code cannot reach; every request of the debug comm, the
program-parts comm and every widget message gets exactly one answer (an error for anything that fails),
never an exception into the kernel's comm machinery and never silence."""
from __future__ import annotations

import builtins

import numpy as np
import pytest

jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("anywidget")

import kernelcore as kc  # noqa: E402
import kernelcore_widgets as kw  # noqa: E402
from kernelcore.view import program_parts  # noqa: E402
from kernelcore_widgets import comm, program_comm  # noqa: E402
from test_debug_comm import VALIDATOR, Sidebar, part  # noqa: E402
from test_widgets import rnn, views  # noqa: E402,F401  - a stub view where the front end is not built

# names "send to notebook" must refuse whatever the namespace holds: keywords, soft keywords, NFKC look-alikes
# (Python reads the wide `ｋｃ` as `kc`), dunders (the kernel's own), and what is not an identifier
UNUSABLE = ["None", "class", "match", "case", "_", "\uff4b\uff43", "__builtins__", "__name__", "not a name", "1x",
            "", "x" * 101]
# names a user's notebook already gives a meaning: replaced only when confirmed
TAKEN = ["value", "kc", "h_t3", "print", "len"]


def nested(depth: int):
    obj: object = []
    for _ in range(depth):
        obj = [obj]
    return obj


@pytest.fixture
def sess():
    prog, scope, feed, last, hs, names = rnn()
    s = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
    s.break_on(write=names["h_new"])
    s.cont()
    return s, hs, names


def user_namespace():
    return {"value": "the box's default, taken", "kc": kc, "h_t3": 3, "h_t3_2": 32,
            "__builtins__": builtins, "model": object()}


def sidebar(s, ns):
    sb = Sidebar(lambda: s)
    sb.ch = comm.DebugChannel(sb.got.append, lambda: s, namespace=ns)
    return sb


# -- send to notebook: the debug comm ----------------------------------------------------------------------------
def test_tensor_send_never_binds_an_unusable_name(sess):
    s, _, names = sess
    ns = user_namespace()
    before = dict(ns)
    sb = sidebar(s, ns)
    for target in UNUSABLE:
        r = sb.ask("tensor_send", name=names["h_new"], target=target)
        assert not r["ok"] and r["result"] is None, target
    assert ns == before  # nothing bound, nothing replaced


def test_tensor_send_over_a_defined_name_proposes_a_free_one_and_binds_nothing(sess):
    s, _, names = sess
    ns = user_namespace()
    before = dict(ns)
    sb = sidebar(s, ns)
    for target in TAKEN:
        r = sb.ask("tensor_send", name=names["h_new"], target=target)
        assert not r["ok"] and "already defined" in r["error"], target
        taken = part(r["result"], "NameTaken")
        assert taken["taken"] == target and taken["proposed"] not in ns and not hasattr(builtins, taken["proposed"])
    assert ns == before and ns["kc"] is kc and ns["__builtins__"] is builtins
    r = sb.ask("tensor_send", name=names["h_new"], target="h_t3")
    assert r["result"]["proposed"] == "h_t3_3"  # h_t3_2 is taken too


def test_tensor_send_overwrites_only_when_confirmed_and_says_what_it_bound(sess):
    s, hs, names = sess
    ns = user_namespace()
    sb = sidebar(s, ns)
    r = sb.ask("tensor_send", name=names["h_new"], target="h_fresh")
    assert r["ok"] and part(r["result"], "TensorSent") == {"sent": "h_fresh", "what": "value",
                                                           "name": names["h_new"], "overwritten": False}
    np.testing.assert_allclose(ns["h_fresh"], hs[0], rtol=1e-5)
    r = sb.ask("tensor_send", name=names["h_new"], target="h_t3", overwrite=True)
    assert r["ok"] and r["result"]["sent"] == "h_t3" and r["result"]["overwritten"] is True
    np.testing.assert_allclose(ns["h_t3"], hs[0], rtol=1e-5)
    r = sb.ask("tensor_send", name=names["h_new"], target="class", overwrite=True)
    assert not r["ok"] and "keyword" in r["error"]  # confirmation does not make an unusable name usable
    r = sb.ask("tensor_send", name=names["h_new"], target="__builtins__", overwrite=True)
    assert not r["ok"] and ns["__builtins__"] is builtins


# -- send to notebook: the TensorViewer widget ---------------------------------------------------------------------
def test_the_viewer_never_replaces_a_name_without_confirmation():
    ns = user_namespace()
    before = dict(ns)
    v = kw.TensorViewer(np.arange(6.0).reshape(2, 3), name="h", namespace=ns)
    got = []
    v.send = got.append
    for target in UNUSABLE + TAKEN + [5, None, {"a": 1}, nested(3000)]:
        v.handle_message({"type": "send", "name": target, "what": "value"})
        assert "not sent" in v.status, target
    assert ns == before
    assert [m["type"] for m in got] == ["error"] * (len(UNUSABLE) + len(TAKEN) + 4)
    v.handle_message({"type": "send", "name": "h_t3"})  # the box's name is taken: a proposal, nothing bound
    assert v.name_taken == {"taken": "h_t3", "proposed": "h_t3_3", "what": "value"} and ns["h_t3"] == 3
    part(v.name_taken, "SentNameTaken")  # the trait's generated TypeScript type describes it
    v.handle_message({"type": "send", "name": "h_t3", "what": "slice", "overwrite": True})
    np.testing.assert_array_equal(ns["h_t3"], np.arange(6.0).reshape(2, 3))
    assert v.name_taken == {} and "replacing" in v.status
    v.handle_message({"type": "send", "name": "fresh"})
    assert "fresh" in ns and ns["value"] == before["value"]


# -- numbers and types checked before they are used --------------------------------------------------------------
def test_numbers_past_float_range_are_errors_in_widget_handlers(sess):
    s, _, names = sess
    g = kw.ProgramGraph(s.program, session=s)
    g.handle_message({"type": "debug", "action": "watch", "var": names["h_new"], "cond": "range", "lo": 10 ** 400})
    assert g.debug["ok"] is False and "'lo'" in g.debug["text"] and not s.watches
    v = kw.TensorViewer(np.zeros((2, 3)), name="z")
    for axes in ([float("inf"), 0], [float("nan"), 1], [10 ** 400, 0], [True, 0], [0], [0, 1, 1], "01"):
        v.handle_message({"type": "view", "axes": axes})
        assert "cannot show that" in v.status and v.axes == [0, 1], axes
    v.handle_message({"type": "view", "index": [float("inf"), 0]})
    assert "cannot show that" in v.status and v.index == [0, 0]


def test_a_watch_on_a_non_string_is_refused_and_later_states_stay_valid(sess):
    s, _, names = sess
    got = []
    ch = comm.DebugChannel(got.append, lambda: s)
    for n, var in enumerate([5, {}, [1], True, 1.5, "x" * 5000]):
        ch.handle({"type": "request", "id": n, "command": "watch_add", "args": {"var": var, "cond": "nan"}})
    ch.handle({"type": "request", "id": 99, "command": "watch_add",
               "args": {"var": names["h_new"], "cond": "range", "lo": 10 ** 400}})
    ch.handle({"type": "request", "id": 100, "command": "state"})
    replies = [m for m in got if m["type"] == "reply"]
    assert [r["ok"] for r in replies] == [False] * 7 + [True] and not s.watches
    for m in got:
        VALIDATOR.validate(m)


def test_malformed_requests_are_answered_exactly_once(sess):
    s, _, _ = sess
    got = []
    ch = comm.DebugChannel(got.append, lambda: s)
    deep = nested(5000)
    hostile = [
        {"type": "request", "id": 1, "command": deep},
        {"type": "request", "id": deep, "command": "state"},
        {"type": "request", "id": 10 ** 400, "command": "state"},
        {"type": "request", "id": 2, "command": "tensor", "args": {"name": deep}},
        {"type": "request", "id": 3, "command": "tensor", "args": {"name": "x", "axes": [float("inf"), 0]}},
        {"type": "request", "id": 4, "command": "break_add", "args": {"kind": "op_type", "op_type": {"a": deep}}},
        {"type": "request", "id": 5, "command": "provenance", "args": {"name": "x", "depth": 10 ** 400}},
        {"type": "request", "id": 6, "command": "run_to", "args": {"block": 0, "op": 10 ** 30}},
        {"type": "request", "id": 7, "command": "tensor_send", "args": {"name": "x", "target": deep}},
        deep,
    ]
    for msg in hostile:
        before = len(got)
        ch.handle(msg)
        new = got[before:]
        assert [m["type"] for m in new] == ["reply", "state"]
        for m in new:
            VALIDATOR.validate(m)
    assert [m.get("ok") for m in got if m["type"] == "reply"] == [False, True, True, False, False, False, False,
                                                                  False, False, False]


# -- the program-parts comm ---------------------------------------------------------------------------------------
class FakeComm:
    def __init__(self):
        self.sent, self.handler = [], None

    def on_msg(self, f):
        self.handler = f

    def send(self, m):
        self.sent.append(m)


def test_the_parts_comm_answers_every_request_once():
    prog = rnn()[0]
    pid = program_parts.register(prog)
    c = FakeComm()
    program_comm._open(c, {"content": {"data": {"id": pid}}})
    deep = nested(5000)
    hostile = [
        {"req": 1, "type": "contents", "block": 0, "groups": [{}]},
        {"req": 2, "type": "contents", "block": 0, "groups": [[None]], "loaded": [{"a": 1}]},
        {"req": 3, "type": "contents", "block": 10 ** 400, "groups": [None]},
        {"req": 4, "type": "contents", "block": 0, "groups": deep},
        {"req": 5, "type": "search", "query": deep},
        {"req": 6, "type": deep},
        {"req": deep, "type": "search", "query": "x"},
        deep,
        "not an object",
    ]
    for msg in hostile:
        before = len(c.sent)
        c.handler({"content": {"data": msg}})
        assert len(c.sent) == before + 1
    assert all(isinstance(m["req"], (int, type(None))) for m in c.sent)
    assert [m["ok"] for m in c.sent] == [False] * 6 + [True, False, False]
    assert all(isinstance(m["error"], str) for m in c.sent if not m["ok"])


# -- every widget's messages ---------------------------------------------------------------------------------------
def hostile_contents(kind: str) -> list:
    deep = nested(5000)
    fields = ["id", "seq", "t", "scope", "name", "axes", "index", "diff", "what", "overwrite", "action", "var",
              "cond", "lo", "hi", "block", "op", "groups", "loaded", "query", "req", "pane"]
    values = [deep, 10 ** 400, float("inf"), float("nan"), {"a": [1]}, [None], True, -1, "\x00" * 3000]
    out = [{"type": kind}]
    for v in values:
        out.append({"type": kind, **{f: v for f in fields}})
        out.append({"type": kind, "action": "watch", "var": v, "lo": v})
    return out


def widgets_on(s):
    forest = s.forest()
    return [kw.ProgramGraph(s.program, session=s), kw.ScopeForest(forest), kw.RNNStepper(s),
            kw.TraceTimeline(s.trace), kw.Debugger(s), kw.TensorViewer(np.ones((2, 3)), namespace={})]


def test_every_widget_message_is_answered_and_never_raises(sess):
    s, _, _ = sess
    for w in widgets_on(s):
        kinds = list(w._messages()) + ["no_such_message"]
        for kind in kinds:
            for content in hostile_contents(kind):
                w.handle_message(content)  # must not raise, whatever the content
        w.handle_message(nested(5000))


def test_a_failing_handler_sends_one_error_message_back(sess, monkeypatch):
    s, _, _ = sess
    w = kw.TraceTimeline(s.trace)
    got = []
    w.send = got.append

    def broken(_content):
        raise RecursionError("maximum recursion depth exceeded")
    monkeypatch.setattr(w, "_messages", lambda: {"select": broken})
    w.handle_message({"type": "select", "seq": 1})
    assert got == [{"type": "error", "request": "select", "error": "RecursionError: maximum recursion depth exceeded"}]


def test_a_malformed_open_or_select_is_answered_with_an_error_not_ignored(sess):
    s, _, _ = sess
    for w, content in ((kw.ScopeForest(s.forest()), {"type": "open", "scope": "3", "name": "x"}),
                       (kw.ScopeForest(s.forest()), {"type": "open", "scope": 0, "name": {"a": 1}}),
                       (kw.TraceTimeline(s.trace), {"type": "select", "seq": 10 ** 400}),
                       (kw.TraceTimeline(s.trace), {"type": "select", "seq": "1"})):
        got = []
        w.send = got.append
        w.handle_message(content)
        assert [m["type"] for m in got] == ["error"], content
