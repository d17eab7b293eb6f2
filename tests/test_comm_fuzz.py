"""Property-based fuzz over the Jupyter comms: arbitrary JSON-ish requests (nested objects and lists, integers
past any range, floats with inf and nan, any unicode) to the debug comm, the program-parts comm and the
TensorViewer widget. Each request gets exactly one reply; every message the debug comm sends validates against
debug_protocol.schema.json and is strict JSON; the user's namespace changes only by a successful send, and a
name that was there changes only when the request confirmed it (`overwrite: true`)."""
from __future__ import annotations

import builtins
import json

import numpy as np
import pytest

jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("anywidget")
hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import kernelcore as kc  # noqa: E402
import kernelcore_widgets as kw  # noqa: E402
from kernelcore.view import program_parts  # noqa: E402
from kernelcore_widgets import comm, program_comm  # noqa: E402
from test_debug_comm import VALIDATOR  # noqa: E402
from test_widgets import rnn, views  # noqa: E402,F401  - a stub view where the front end is not built

FUZZ = settings(max_examples=120, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])

scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=10 ** 300, max_value=10 ** 400)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20))
json_ish = st.recursive(scalars, lambda kids: st.lists(kids, max_size=4)
                        | st.dictionaries(st.text(max_size=8), kids, max_size=4), max_leaves=12)

NAMES = ["value", "kc", "h_t3", "print", "__builtins__", "None", "class", "match", "\uff4b\uff43", "fresh",
         "fresh_2", "x", "not a name", ""]
ARG_KEYS = ["block", "op", "timestep", "n", "pause", "event", "kind", "op_type", "var", "id", "enabled", "cond",
            "lo", "hi", "name", "depth", "scope", "axes", "index", "diff", "target", "what", "overwrite"]
COMMANDS = [c for c in comm.load_schema()["$defs"]["Command"]["enum"] if c not in ("cont", "run_n", "present")]

arg_values = (json_ish | st.sampled_from(NAMES) | st.sampled_from(["x", "h0", "w", "slice", "nan", "range"])
              | st.lists(st.integers(-2, 4), max_size=4))
args = st.dictionaries(st.sampled_from(ARG_KEYS), arg_values, max_size=8)
requests = st.one_of(
    st.fixed_dictionaries({"type": st.just("request"), "id": st.integers(-5, 10 ** 6) | json_ish,
                           "command": st.sampled_from(COMMANDS) | json_ish, "args": args | json_ish}),
    st.fixed_dictionaries({"type": st.just("request"), "id": st.integers(0, 100),
                           "command": st.just("tensor_send"),
                           "args": st.fixed_dictionaries({"name": st.sampled_from(["x", "h0", "w"]),
                                                          "target": st.sampled_from(NAMES) | st.text(max_size=12)},
                                                         optional={"overwrite": json_ish, "what": json_ish,
                                                                   "axes": json_ish, "index": json_ish})}),
    json_ish,
)


def namespace():
    return {"value": "mine", "kc": kc, "h_t3": 3, "__builtins__": builtins, "x": np.zeros(2)}


def same_binding(a, b) -> bool:
    return a is b


@pytest.fixture(scope="module")
def session():
    prog, scope, feed, last, hs, names = rnn()
    sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
    sess.break_on(write=names["h_new"])
    sess.cont()
    return sess


def check_namespace(ns: dict, before: dict, msg, reply: dict) -> None:
    """Only a successful send changes `ns`: it binds its target, and replaces a defined one only when the
    request confirmed it."""
    changed = {k for k in set(ns) | set(before) if k not in ns or k not in before or not same_binding(ns[k], before[k])}
    if not changed:
        return
    assert reply["ok"] and reply["command"] == "tensor_send", (msg, changed)
    target = msg["args"]["target"]
    assert changed == {target}
    if target in before:
        assert msg["args"].get("overwrite") is True and reply["result"]["overwritten"] is True


@FUZZ
@given(msgs=st.lists(requests, min_size=1, max_size=4))
def test_the_debug_comm_answers_every_request_once_with_valid_messages(session, msgs):
    ns = namespace()
    got: list = []
    ch = comm.DebugChannel(got.append, lambda: session, namespace=ns)
    for msg in msgs:
        before, start = dict(ns), len(got)
        ch.handle(msg)
        new = got[start:]
        # a Pause is answered alone (it may come while a move runs on another thread: that move sends the state)
        alone = isinstance(msg, dict) and msg.get("type") == "request" and msg.get("command") == "pause"
        assert [m["type"] for m in new] == (["reply"] if alone else ["reply", "state"])
        for m in new:
            json.dumps(m, allow_nan=False)  # strict JSON: what the browser can parse
            VALIDATOR.validate(m)
        check_namespace(ns, before, msg, new[0])
    ch.close()


@FUZZ
@given(msg=st.one_of(
    json_ish,
    st.fixed_dictionaries({"req": json_ish, "type": st.sampled_from(["contents", "search"]) | json_ish},
                          optional={"block": st.integers(-2, 3) | json_ish, "groups": json_ish,
                                    "loaded": json_ish, "query": json_ish})))
def test_the_parts_comm_answers_every_request_once(msg):
    pid = program_parts.register(PROGRAM)
    sent: list = []

    class Comm:
        def on_msg(self, f):
            self.f = f

        def send(self, m):
            sent.append(m)
    c = Comm()
    program_comm._open(c, {"content": {"data": {"id": pid}}})
    c.f({"content": {"data": msg}})
    assert len(sent) == 1
    r = sent[0]
    json.dumps(r, allow_nan=False)
    assert set(r) == {"req", "ok", "error", "result"} and isinstance(r["ok"], bool)
    assert r["req"] is None or isinstance(r["req"], int) and not isinstance(r["req"], bool)
    assert (r["error"] is None) == r["ok"] and (isinstance(r["error"], str) or r["ok"])


PROGRAM = rnn()[0]


@FUZZ
@given(contents=st.lists(st.one_of(
    json_ish,
    st.fixed_dictionaries({"type": st.sampled_from(["view", "send", "other"]) | json_ish},
                          optional={"name": st.sampled_from(NAMES) | json_ish, "what": json_ish,
                                    "overwrite": json_ish, "axes": json_ish | st.lists(st.integers(-1, 3), max_size=3),
                                    "index": json_ish | st.lists(st.integers(-1, 3), max_size=3),
                                    "diff": json_ish})), min_size=1, max_size=4))
def test_the_tensor_viewer_answers_every_message_and_guards_the_namespace(contents):
    ns = namespace()
    v = kw.TensorViewer(np.arange(6.0).reshape(2, 3), name="h", previous=np.zeros((2, 3)), namespace=ns)
    errors: list = []
    v.send = errors.append
    for content in contents:
        before, start = dict(ns), len(errors)
        v.handle_message(content)  # never raises
        assert len(errors) - start <= 1
        changed = {k for k in set(ns) | set(before) if k not in ns or k not in before or ns[k] is not before[k]}
        if changed:
            assert content.get("type") == "send" and errors[start:] == [] and changed == {content["name"]}
            assert content["name"] not in before or content.get("overwrite") is True
