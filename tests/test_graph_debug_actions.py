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
    from kernelcore_widgets.graph_debug import is_debug_message as _is_debug_message

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


# -- the Debugger widget's graph: the same actions, on the Debugger's own session ---------------------------------
def test_the_debugger_widgets_graph_breaks_on_its_own_session_and_both_lists_update():
    from kernelcore_widgets import Debugger
    prog, scope, feed, last, hs, names = rnn()
    mine = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
    d = Debugger(mine)
    assert d.graph.debug["live"] and "this debugger's session" in d.graph.debug["text"] and d.breakpoints == []
    # a later session is the kernel's live one; the Debugger still drives its own
    prog2, scope2, feed2, last2, *_ = rnn()
    later = kc.debug(prog2, feed=feed2, fetch_list=[last2], scope=scope2)
    assert kc.active_session() is later
    got = []
    ch = comm.DebugChannel(got.append, lambda: mine)  # the sidebar bound to the Debugger's session
    ch.push()
    n = len(got)
    d.graph.handle_message({"type": "select", "id": "o1:2"})
    d.graph.handle_message({"type": "debug", "action": "break_op", "block": 1, "op": 2})
    assert d.graph.debug["ok"] and "added breakpoint #1 block 1 op #2" in d.graph.debug["text"], d.graph.debug
    assert [(b.block, b.op) for b in mine.breakpoints] == [(1, 2)] and later.breakpoints == []
    assert [b["text"] for b in d.breakpoints] == ["#1 block 1 op #2"]  # the widget's list
    assert len(got) == n + 1 and [b["text"] for b in got[-1]["state"]["session"]["breakpoints"]] == \
        ["#1 block 1 op #2"]  # the sidebar's list
    d.handle_message({"type": "cont"})
    assert d.frames[-1]["block"] == 1 and d.frames[-1]["op"] == 2 and "breakpoint" in d.stop_reason
    d.graph.handle_message({"type": "debug", "action": "watch", "var": names["h_new"], "cond": "nan"})
    assert d.graph.debug["ok"] and [b["kind"] for b in d.breakpoints] == ["op", "watch"]
    d.graph.handle_message({"type": "debug", "action": "run_to", "block": 1, "op": 4})
    assert d.frames[-1]["op"] == 4 and d.graph.debug["ok"] and "ran to" in d.graph.debug["text"]
    d.graph.handle_message({"type": "debug", "action": "break_op", "block": 1, "op": "x"})
    assert not d.graph.debug["ok"] and "'op' must be an integer" in d.graph.debug["text"]
    assert d.graph.debug["live"]  # a refused action leaves the actions on


def test_the_debugger_and_its_children_run_what_moves_the_session_on_the_main_shell(monkeypatch):
    """Every message of the Debugger (its moves) and of its children (the graph's debug actions, the
    stepper's goto / prev) may move the session: each widget's comm runs them on the main shell."""
    from kernelcore_widgets import Debugger, _base
    pinned = []
    monkeypatch.setattr(_base, "pin_to_main_shell", lambda c, when=None: pinned.append((c, when)))
    prog, scope, feed, last, *_ = rnn()
    d = Debugger(kc.debug(prog, feed=feed, fetch_list=[last], scope=scope))
    everything = {c for c, when in pinned if when is None}
    assert {d.comm, d.graph.comm, d.stepper.comm, d.forest.comm, d.timeline.comm} <= everything


# -- a session on another program: a clone is accepted, other ops are refused saying where -----------------------
def test_a_session_on_a_clone_of_the_program_is_accepted():
    prog, scope, feed, last, hs, names = rnn()
    copy = prog.clone()
    # a copy that differs in an attribute only (where it was written, as Paddle records) has the same ops
    op = copy.desc.blocks[1].ops[3]
    assert op.type == "tanh"
    op.attrs.add(name="op_callstack", type=5, strings=["elsewhere.py:1"])  # 5: STRINGS
    assert copy.to_bytes() != prog.to_bytes()
    sess = kc.debug(copy, feed=feed, fetch_list=[last], scope=scope)
    g = _graph(prog, lambda: sess)
    assert g.debug["live"] and "a copy of this program with the same ops" in g.debug["text"], g.debug
    g.handle_message({"type": "debug", "action": "break_op", "block": 1, "op": 3})
    assert g.debug["ok"] and sess.breakpoints[-1].op == 3
    sess.cont()
    assert (sess.position.innermost.block, sess.position.innermost.op) == (1, 3)


def test_a_session_whose_ops_differ_is_refused_saying_where():
    from kernelcore_widgets.graph_debug import program_mismatch
    prog, scope, feed, last, hs, names = rnn()
    sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
    other = prog.clone()
    other.desc.blocks[1].ops[3].type = "sigmoid"
    assert program_mismatch(prog, other) == "block 1 op #3 is 'sigmoid' there, 'tanh' here"
    g = _graph(other, lambda: sess)
    assert not g.debug["live"]
    assert "runs another program than this graph shows (block 1 op #3 is 'tanh' there, 'sigmoid' here)" \
        in g.debug["text"] and "ProgramGraph(sess.program)" in g.debug["text"], g.debug
    g.handle_message({"type": "debug", "action": "break_op", "block": 1, "op": 3})
    assert not g.debug["ok"] and g.debug["text"].startswith("not done: the live debug session runs another")
    assert sess.breakpoints == []
    longer = prog.clone()
    longer.desc.blocks[0].ops.add().CopyFrom(prog.desc.blocks[0].ops[0])
    assert "block 0 has an op #" in program_mismatch(prog, longer)
    assert "block 0 ends before op #" in program_mismatch(longer, prog)
    renamed = prog.clone()
    renamed.desc.blocks[1].ops[3].outputs[0].arguments[0] = "elsewhere"
    assert program_mismatch(prog, renamed) == "block 1 op #3 ('tanh') reads or writes other variables there"
    assert "block(s)" in program_mismatch(prog, kc.Program())
