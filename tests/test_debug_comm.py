"""The `kernelcore.debugger` comm protocol (kernelcore_widgets/comm.py) driven as the sidebar drives it, every
message checked against debug_protocol.schema.json, and the schema's names against the generated TypeScript."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("anywidget")

import kernelcore as kc  # noqa: E402
from kernelcore.observe.debug import session_hooks  # noqa: E402
from kernelcore_widgets import comm  # noqa: E402
from test_widgets import T, rnn  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = comm.load_schema()
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def valid(msg, kind):
    sub = jsonschema.Draft202012Validator({"$ref": f"#/$defs/{kind}", "$defs": SCHEMA["$defs"]})
    errors = list(sub.iter_errors(msg)) + list(VALIDATOR.iter_errors(msg))
    assert not errors, [e.message for e in errors][:3]
    return msg


class Sidebar:
    """A fake browser end: sends schema-checked requests, keeps the schema-checked answers."""

    def __init__(self, session_fn=None):
        self.got: list[dict] = []
        self.ch = comm.DebugChannel(self.got.append, session_fn)
        self.n = 0

    def ask(self, command, **args):
        self.n += 1
        req = valid({"type": "request", "id": self.n, "command": command, "args": args}, "Request")
        before = len(self.got)
        self.ch.handle(req)
        new = self.got[before:]
        reply = valid(new[0], "Reply")
        assert reply["id"] == self.n and reply["command"] == command
        for m in new[1:]:
            valid(m, "StateMessage")
        self.state = new[-1]["state"]["session"]
        return reply


@pytest.fixture
def session():
    prog, scope, feed, last, hs, names = rnn()
    sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
    return sess, feed, hs, names


def test_no_session_is_a_clear_state():
    sb = Sidebar(lambda: None)
    r = sb.ask("state")
    assert r["ok"] and sb.state is None
    r = sb.ask("step")
    assert not r["ok"] and "kc.debug" in r["error"]


def test_drive_a_session_through_the_comm(session):
    sess, feed, hs, names = session
    sb = Sidebar(lambda: sess)
    sb.ask("state")
    assert sb.state["position"][0]["op_type"] == "recurrent" and sb.state["at_present"]
    r = sb.ask("break_add", kind="write", var=names["h_new"])
    assert r["ok"] and r["result"]["kind"] == "write"
    bid = r["result"]["id"]
    sb.ask("cont")
    assert "timestep 0" in sb.state["stop_reason"] and sb.state["timestep"] == 0
    # Variables: the step scope first, with h_new previewed
    top = sb.state["variables"][0]
    assert top["visible"] and top["scope"] == sb.state["position"][-1]["scope"]
    h = next(v for v in top["vars"] if v["name"] == names["h_new"])
    assert h["preview"]["shape"] == [2, 4]
    # Callstack: innermost first
    assert [f["block"] for f in sb.state["callstack"]] == [1, 0]
    sb.ask("cont")
    assert "timestep 1" in sb.state["stop_reason"]
    sb.ask("back")
    assert not sb.state["at_present"]
    sb.ask("reverse_cont")
    assert "timestep 0" in sb.state["stop_reason"]
    sb.ask("break_enable", id=bid, enabled=False)
    assert sb.state["breakpoints"][0]["enabled"] is False
    sb.ask("break_remove", id=bid)
    assert sb.state["breakpoints"] == []
    r = sb.ask("watch_add", var=names["h_new"], cond="range", lo=-0.5, hi=0.5)
    assert r["ok"] and r["result"]["cond"] == "range"
    sb.ask("present")
    sb.ask("cont")
    assert sb.state["hits"] and sb.state["hits"][0]["var"] == names["h_new"]
    r = sb.ask("provenance", name=names["h_prev"], depth=6)
    assert r["ok"] and r["result"]["nodes"][0]["kind"] in ("bound", "op")
    sb.ask("run_to", block=1, op=2, timestep=T - 1)
    sb.ask("goto_pause", pause=0)
    assert sb.state["pause"] == 0
    sb.ask("run_n", n=3)
    assert sb.state["pause"] == 3
    r = sb.ask("goto_pause", pause=10_000)
    assert not r["ok"] and "no pause" in r["error"]
    bad = {"type": "request", "id": 99, "command": "run_to", "args": {"block": "x", "op": 1}}  # not schema-valid
    sb.ch.handle(bad)
    assert not sb.got[-2]["ok"] and "integer" in sb.got[-2]["error"]


def test_moves_from_python_are_pushed(session):
    sess, *_ = session
    sb = Sidebar(lambda: sess)
    sb.ask("state")
    n = len(sb.got)
    sess.step()  # a cell moves the session: the sidebar hears of it
    assert len(sb.got) == n + 1 and sb.got[-1]["type"] == "state"
    valid(sb.got[-1], "StateMessage")
    assert sb.got[-1]["state"]["session"]["position"][-1]["block"] == 1


def test_the_active_session_is_the_latest_and_new_sessions_are_announced(session):
    sess, *_ = session
    assert kc.active_session() is sess
    sb = Sidebar()
    sb.ask("state")
    assert sb.state["id"] == id(sess)
    prog, scope, feed, last, hs, names = rnn()
    got = []
    session_hooks.append(got.append)
    try:
        other = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
    finally:
        session_hooks.remove(got.append)
    assert got == [other]
    sb.ask("state")
    assert sb.state["id"] == id(other)


def test_malformed_requests_get_an_error_reply():
    got = []
    ch = comm.DebugChannel(got.append, lambda: None)
    ch.handle({"type": "bogus"})
    ch.handle("not a dict")
    for m in got:
        assert m["type"] in ("reply", "state")
        VALIDATOR.validate(m)
    assert [m["ok"] for m in got if m["type"] == "reply"] == [False, False]


def test_the_generated_typescript_names_every_schema_definition_and_command():
    ts = (ROOT / "labextension" / "src" / "protocol.generated.ts").read_text()
    for name in SCHEMA["$defs"]:
        assert re.search(rf"export (interface|type|type \{{[^}}]*) {name}\b", ts), name
    commands = SCHEMA["$defs"]["Command"]["enum"]
    assert re.findall(r'"([a-z_]+)"', ts.split("export const COMMANDS")[1].split("]")[0]) == commands


def test_comm_target_registration_outside_a_kernel_is_a_no_op():
    assert comm.register() in (False, True)
    assert np is not None


FIXTURE = ROOT / "labextension" / "test" / "debug-messages.json"


def _scenario_messages():
    prog, scope, feed, last, hs, names = rnn()
    sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
    sb = Sidebar(lambda: sess)
    sb.ask("state")
    sb.ask("break_add", kind="write", var=names["h_new"])
    sb.ask("watch_add", var=names["h_new"], cond="range", lo=-0.9, hi=0.9)
    sb.ask("cont")
    sb.ask("provenance", name=names["h_prev"], depth=3)
    sb.ask("step_timestep")
    sb.ask("provenance", name=names["h_prev"], depth=3)
    sb.ask("tensor", name="x")  # the tensor panel: x_t of this timestep, seen from the cursor
    return sb.got


def test_the_front_end_fixture_is_real_and_valid():
    """labextension/test/debug-messages.json (what the vitest sidebar tests replay) is made by this scenario:
    KC_UPDATE_FIXTURES=1 rewrites it. Here it must exist and hold schema-valid messages of every kind."""
    import json
    import os
    if os.environ.get("KC_UPDATE_FIXTURES"):
        FIXTURE.write_text(json.dumps(_scenario_messages(), indent=1, allow_nan=False) + "\n")
    msgs = json.loads(FIXTURE.read_text())
    for m in msgs:
        VALIDATOR.validate(m)
    assert {m["type"] for m in msgs} == {"reply", "state"}
    assert any(m["type"] == "reply" and m["command"] == "provenance" and m["result"] for m in msgs)
    assert any(m["type"] == "reply" and m["command"] == "tensor" and m["result"]["exists"] for m in msgs)
    fresh = _scenario_messages()
    assert [(m["type"], m.get("command")) for m in fresh] == [(m["type"], m.get("command")) for m in msgs]


# -- the sidebar's tensor panel: a variable's value at the cursor over the comm ------------------------------
def part(obj, kind):
    """`obj` checked against one definition of the schema (a reply's result)."""
    sub = jsonschema.Draft202012Validator({"$ref": f"#/$defs/{kind}", "$defs": SCHEMA["$defs"]})
    errors = list(sub.iter_errors(obj))
    assert not errors, [e.message for e in errors][:3]
    return obj


def test_tensor_panel_follows_the_cursor_and_says_when_the_variable_is_missing(session):
    sess, feed, hs, names = session
    ns = {}
    got = []
    ch = comm.DebugChannel(got.append, lambda: sess, namespace=ns)
    sb = Sidebar(lambda: sess)
    sb.ch = ch
    sb.got = got
    h = names["h_new"]
    r = sb.ask("tensor", name=h)  # before the run: no scope holds h_new yet
    assert r["ok"] and r["result"]["exists"] is False and "does not exist at" in r["result"]["status"]
    part(r["result"], "TensorView")
    sb.ask("break_add", kind="write", var=h)
    sb.ask("cont")  # after tanh wrote h_new at t=0
    r = sb.ask("tensor", name=h)
    v = part(r["result"], "TensorView")
    assert v["exists"] and v["shape"] == [2, 4] and v["scope"] == sb.state["position"][-1]["scope"]
    np.testing.assert_allclose(np.array(v["slice"]["data"], np.float32), hs[0], rtol=1e-5)
    assert v["health"]["total"] == 8 and v["has_previous"] is False
    sb.ask("cont")  # t=1: the same request shows the new value, and a diff against t=0's write
    v = sb.ask("tensor", name=h, diff=True)["result"]
    assert v["has_previous"] and v["diff"] and v["position_text"].endswith("t=1")
    np.testing.assert_allclose(np.array(v["slice"]["data"]), hs[1] - hs[0], rtol=1e-4, atol=1e-6)
    v = sb.ask("tensor", name=h, axes=[1, 0], index=[0, 0])["result"]  # transposed
    np.testing.assert_allclose(np.array(v["slice"]["data"], np.float32), hs[1].T, rtol=1e-5)
    sb.ask("back")  # the past: the value rebuilt from the record
    sb.ask("reverse_cont")
    v = sb.ask("tensor", name=h)["result"]
    np.testing.assert_allclose(np.array(v["slice"]["data"], np.float32), hs[0], rtol=1e-5)
    # inside the step scope, "x" is the step's slice x_t (the name the op sees)
    x = sb.ask("tensor", name="x")["result"]
    assert x["shape"] == [2, 3]
    np.testing.assert_array_equal(np.array(x["slice"]["data"], np.float32), feed["x"][0])
    # before the run, the whole sequence: the slider's index picks the slice
    sb.ask("goto_pause", pause=0)
    x = sb.ask("tensor", name="x", axes=[1, 2], index=[2, 0, 0])["result"]
    np.testing.assert_array_equal(np.array(x["slice"]["data"], np.float32), feed["x"][2])
    r = sb.ask("tensor", name="x", axes=[1, 1])
    assert r["ok"] and r["result"]["axes"] != [1, 1]  # not two different axes: the default view instead
    r = sb.ask("tensor", name="")
    assert not r["ok"] and "name" in r["error"]
    # send to notebook: the value, or the shown slice
    sb.ask("tensor_send", name="x", target="x_2", what="slice", axes=[1, 2], index=[2, 0, 0])
    np.testing.assert_array_equal(ns["x_2"], feed["x"][2])
    sb.ask("reverse_cont")  # back to h_new's write at t=0 (the write breakpoint)
    sb.ask("cont")
    r = sb.ask("tensor_send", name=h, target="h_t0")
    assert r["ok"] and part(r["result"], "TensorSent")["sent"] == "h_t0"
    np.testing.assert_allclose(ns["h_t0"], hs[0], rtol=1e-5)
    r = sb.ask("tensor_send", name=h, target="not a name")
    assert not r["ok"] and "not a Python name" in r["error"]
    r = sb.ask("tensor_send", name="no_such_var", target="y")
    assert not r["ok"] and "no tensor 'no_such_var'" in r["error"]


def test_the_comm_runs_every_request_on_the_main_shell():
    """ipykernel 7 routes a comm's messages to the subshell that last sent on it (`_reply_subshell_for`); the
    debugger's comm sends from other handlers too (a breakpoint added from a graph widget), so it pins its
    requests to the main shell, where the cells drive the same session."""
    class FakeComm:
        def __init__(self):
            self.sent, self.handlers = [], {}
            self._reply_subshell_id = "a-widget-subshell"

        def _reply_subshell_for(self, data, default):
            return self._reply_subshell_id

        def send(self, m):
            self.sent.append(m)

        def on_msg(self, f):
            self.handlers["msg"] = f

        def on_close(self, f):
            self.handlers["close"] = f

    c = FakeComm()
    comm._open(c, {})
    try:
        assert c._reply_subshell_for({"type": "request"}, "the-comms-subshell") is None
        assert c.sent and c.sent[-1]["type"] == "state"
        c.handlers["msg"]({"content": {"data": {"type": "request", "id": 1, "command": "state", "args": {}}}})
        assert c.sent[-2]["type"] == "reply" and c.sent[-2]["ok"]
    finally:
        c.handlers["close"]({})


def test_a_name_the_program_lacks_is_an_error_reply_with_close_matches(session):
    sess, feed, hs, names = session
    sb = Sidebar(lambda: sess)
    sb.ask("state")
    near = names["h_new"] + "x"
    for command, args in (("break_add", {"kind": "write", "var": near}), ("watch_add", {"var": near, "cond": "nan"}),
                          ("provenance", {"name": near, "depth": 6}),
                          ("break_add", {"kind": "op_type", "op_type": "tanhh"})):
        r = sb.ask(command, **args)
        assert not r["ok"] and "the program has no" in r["error"] and "did you mean" in r["error"], (command, r)
    assert sb.state["breakpoints"] == [] and sb.state["watches"] == []


def test_a_past_timesteps_step_scope_shows_its_values_as_the_cursors_does(session):
    """The sidebar's Variables list every scope; a step scope the cursor's op does not see (an earlier
    timestep's, rebuilt from the trace in the past) shows its values' dtype, shape and statistics too, not
    a bare "tensor"."""
    sess, feed, hs, names = session
    sb = Sidebar(lambda: sess)
    while sb.ask("step_timestep") and sb.state["timestep"] != 2:
        pass
    sb.ask("back")  # the past (t=1's end): rebuilt from the record; t=0's step scope is not on the cursor's chain
    assert not sb.state["at_present"]
    t0 = next(sc for sc in sb.state["variables"] if "t=0" in sc["label"])
    assert not t0["visible"]
    h_new = next(v for v in t0["vars"] if v["name"] == names["h_new"])
    assert h_new["preview"] is not None
    assert h_new["preview"]["shape"] == list(hs[0].shape)
    assert h_new["preview"]["mean"] == pytest.approx(float(hs[0].mean()), rel=1e-5)
