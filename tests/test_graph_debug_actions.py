"""Breakpoints from a ProgramGraph widget in a notebook: its "Break here" / "Run to here" / "Break on write" /
"Watch" buttons send a `debug` message that Python answers on the kernel's live debug session (the one the
sidebar drives), and the sidebar's comm hears of the new breakpoint. Without a live session (or with one that
runs another program) the widget says so and its actions are off."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("anywidget")

import kernelcore as kc  # noqa: E402
from kernelcore_widgets import ProgramGraph, comm  # noqa: E402
from test_widgets import rnn  # noqa: E402


def _graph(prog, session_fn):
    g = ProgramGraph(prog)
    g._session_fn = session_fn  # as active_session() would answer in a kernel
    g._say_debug()
    return g


def test_no_live_session_turns_the_actions_off_and_says_so():
    prog, *_ = rnn()
    g = _graph(prog, lambda: None)
    assert g.debug["live"] is False and "no live debug session" in g.debug["text"]
    g.handle_message({"type": "debug", "action": "break_op", "block": 1, "op": 2})
    assert g.debug["ok"] is False and g.debug["text"].startswith("not done: no live debug session")


def test_a_session_of_another_program_is_not_driven():
    prog, scope, feed, last, hs, names = rnn()
    other = kc.Program()
    other.global_block().create_var("z", [1])
    sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
    g = _graph(other, lambda: sess)
    assert not g.debug["live"] and "another program" in g.debug["text"]


def test_break_here_from_the_widget_reaches_the_sidebar_and_stops_the_run_there():
    prog, scope, feed, last, hs, names = rnn()
    sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
    got = []
    ch = comm.DebugChannel(got.append, lambda: sess)
    ch.push()  # the sidebar is connected (its listener is on the session)
    g = _graph(prog, lambda: sess)
    assert g.debug["live"] and "live debug session" in g.debug["text"]
    n = len(got)
    g.handle_message({"type": "debug", "action": "break_op", "block": 1, "op": 2})
    assert g.debug["ok"] and "block 1 op #2" in g.debug["text"]
    assert len(got) == n + 1  # the session-changed path: the sidebar got a state with the breakpoint
    bps = got[-1]["state"]["session"]["breakpoints"]
    assert [(b["kind"], b["block"], b["op"]) for b in bps] == [("op", 1, 2)]
    ch.handle({"type": "request", "id": 1, "command": "cont", "args": {}})  # continue from the sidebar
    f = sess.position.innermost
    assert (f.block, f.op, f.timestep) == (1, 2, 0) and "breakpoint" in sess.stop_reason


def test_break_on_write_and_watch_from_a_variable_and_run_to_here():
    prog, scope, feed, last, hs, names = rnn()
    sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
    g = _graph(prog, lambda: sess)
    g.handle_message({"type": "debug", "action": "run_to", "block": 1, "op": 1})
    assert (sess.position.innermost.block, sess.position.innermost.op) == (1, 1)
    assert g.debug["ok"] and "ran to" in g.debug["text"]
    g.handle_message({"type": "debug", "action": "break_write", "var": names["h_new"]})
    assert g.debug["ok"] and sess.breakpoints[-1].write == names["h_new"]
    sess.cont()
    assert f"write to '{names['h_new']}'" in sess.stop_reason and sess.timestep == 0
    np.testing.assert_allclose(sess.value(names["h_new"]), hs[0], rtol=1e-5)
    g.handle_message({"type": "debug", "action": "watch", "var": names["h_new"], "cond": "range", "lo": -0.5,
                      "hi": 0.5})
    assert g.debug["ok"] and sess.watches[-1].cond == "range"
    g.handle_message({"type": "debug", "action": "watch", "var": names["h_new"], "cond": "range"})
    assert not g.debug["ok"] and "lo= and hi=" in g.debug["text"]
    g.handle_message({"type": "debug", "action": "break_write", "var": ""})
    assert not g.debug["ok"] and "'var'" in g.debug["text"]
    g.handle_message({"type": "debug", "action": "explode"})
    assert not g.debug["ok"] and "unknown debug action" in g.debug["text"]


def test_a_session_started_after_the_widget_turns_the_actions_on():
    prog, scope, feed, last, hs, names = rnn()
    g = ProgramGraph(prog)  # the real lookup: the session started last in this process
    before = kc.active_session()
    sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
    assert kc.active_session() is sess and before is not sess
    assert g.debug["live"] and "live debug session" in g.debug["text"]
    g.close()


def test_debug_actions_run_on_the_main_shell_and_selection_stays_where_it_was():
    """A ProgramGraph's debug messages drive the session: the kernel must run them on its main shell (with the
    cells and the sidebar's comm), while a click that only selects a node may stay on the widgets' subshell."""
    from kernelcore_widgets.program_graph import _is_debug_message

    class FakeComm:
        def _reply_subshell_for(self, data, default):
            return "the-widgets-subshell"

    c = FakeComm()
    comm.pin_to_main_shell(c, _is_debug_message)
    debug = {"method": "custom", "content": {"type": "debug", "action": "break_op", "block": 1, "op": 2}}
    select = {"method": "custom", "content": {"type": "select", "id": "o1:2"}}
    assert c._reply_subshell_for(debug, "x") is None
    assert c._reply_subshell_for(select, "x") == "the-widgets-subshell"
    assert c._reply_subshell_for({"method": "update", "state": {}}, "x") == "the-widgets-subshell"
    comm.pin_to_main_shell(object())  # a comm without subshell routing: nothing to do
