"""The sidebar's tensor panel edits over the kernelcore.debugger comm (`tensor_set`): zero, a cell, a notebook
variable, each through sess.set_value (the run forks, the trace records it), schema-checked both ways, and
refused with an error reply in the past, after the end, or for a request that does not fit."""
import numpy as np
import pytest

import kernelcore as kc
from kernelcore.observe.forks import EDIT_OP_TYPE
from kernelcore_widgets import comm

from test_debug_comm import Sidebar, part
from test_recorder import _mlp


@pytest.fixture
def sidebar():
    main, scope, loss, feed = _mlp()
    sess = kc.debug(main, feed=feed, fetch_list=[loss], scope=scope)
    ns = {}
    sb = Sidebar(lambda: sess)
    sb.got = []
    sb.ch = comm.DebugChannel(sb.got.append, lambda: sess, namespace=ns)
    return sb, sess, ns, main.global_block().ops[0].input("Y")[0]


def _edits(sess):
    return [e for e in sess.trace.events if e.kind == "var_create" and e.op_type == EDIT_OP_TYPE]


def test_zero_a_cell_and_a_notebook_variable_fork_the_run(sidebar):
    sb, sess, ns, w = sidebar
    old = np.array(sess.value(w))
    r = sb.ask("tensor_set", name=w, edit="zero")
    assert r["ok"], r
    res = part(r["result"], "TensorSet")
    assert res["set"] == w and res["forked"] and not np.any(sess.value(w))
    assert sess.trace.events[res["event"]] is _edits(sess)[0]
    np.testing.assert_array_equal(sess.forks[0].twin.value(w), old)
    r = sb.ask("tensor_set", name=w, edit="cell", index=[3, 4], value="-inf")
    assert r["ok"] and sess.value(w)[3, 4] == -np.inf and np.count_nonzero(sess.value(w)) == 1
    ns["ones"] = np.ones(old.shape, "float32")
    r = sb.ask("tensor_set", name=w, edit="replace", source="ones")
    assert r["ok"] and np.all(sess.value(w) == 1) and len(_edits(sess)) == 3
    v = sb.ask("tensor", name=w)["result"]  # the panel's next read shows the edit
    assert v["health"]["positive"] == old.size


@pytest.mark.parametrize("args, words", [
    ({"edit": "cell", "index": [0], "value": "1"}, "not a cell"),
    ({"edit": "cell", "index": [0, 0], "value": "one"}, "not a number"),
    ({"edit": "cell", "index": [0, 0]}, "number"),
    ({"edit": "replace", "source": "missing"}, "not defined"),
    ({"edit": "replace", "source": "wrong"}, "shape"),
    ({"edit": "drop"}, "edit"),
    ({"edit": "zero", "name": "no_such_var"}, "no_such_var"),
])
def test_edits_that_do_not_fit_get_an_error_reply_and_edit_nothing(sidebar, args, words):
    sb, sess, ns, w = sidebar
    ns["wrong"] = np.ones((2, 2))
    old = np.array(sess.value(w))
    r = sb.ask("tensor_set", **{"name": w, **args}) if args.get("edit") in ("zero", "cell", "replace") else None
    if r is None:  # a choice outside the table: refused before the handler (a schema-invalid request)
        sb.ch.handle({"type": "request", "id": 99, "command": "tensor_set", "args": {"name": w, **args}})
        r = sb.got[-2]
    assert not r["ok"] and words in r["error"], r
    assert not _edits(sess)
    np.testing.assert_array_equal(sess.value(w), old)


def test_an_edit_in_the_past_or_after_the_end_is_refused(sidebar):
    sb, sess, ns, w = sidebar
    sb.ask("step")
    sb.ask("back")
    r = sb.ask("tensor_set", name=w, edit="zero")
    assert not r["ok"] and "present" in r["error"]
    sb.ask("present")
    sb.ask("cont")
    assert sess.finished
    r = sb.ask("tensor_set", name=w, edit="zero")
    assert not r["ok"] and not _edits(sess)


def test_after_an_edit_the_front_end_stays_with_the_edited_session_not_its_twin():
    """A channel that follows the active session (as in a kernel): the fork's twin, made inside the edit, is
    not announced, so the state after the reply is still the edited session's."""
    from kernelcore.observe.debug import active_session
    main, scope, loss, feed = _mlp()
    got = []
    ch = comm.DebugChannel(got.append)
    sess = kc.debug(main, feed=feed, fetch_list=[loss], scope=scope)
    w = main.global_block().ops[0].input("Y")[0]
    ch.handle({"type": "request", "id": 1, "command": "tensor_set", "args": {"name": w, "edit": "zero"}})
    reply, state = got[-2], got[-1]
    assert reply["ok"] and sess.forks[0].twin is not None
    assert state["state"]["session"]["id"] == id(sess) and active_session() is sess
