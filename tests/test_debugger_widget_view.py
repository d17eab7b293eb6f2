"""The Debugger widget as a thin view over the engine's session: what it shows of the cursor, the timestep and
the live values agrees with the session after finish, back and step moves. Handlers are driven as the comm
would (handle_message)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("anywidget")

import kernelcore as kc  # noqa: E402
import kernelcore_widgets as kw  # noqa: E402
from test_widgets import B, D, T, by_role, rnn, sample_of, views  # noqa: E402,F401  (views: the stub fixture)


def debugger():
    prog, scope, feed, last, hs, names = rnn()
    sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
    return kw.Debugger(sess), sess, feed, hs, names


def test_finish_then_back_shows_the_cursor_timestep():
    d, sess, feed, hs, names = debugger()
    d.step()
    d.step_timestep()
    assert d.stepper.timestep == 1
    while sess.position.depth > 1:
        d.finish()  # to the end of this timestep, then out of it; after the last one, out of the loop
    d.back()  # the end of the last timestep, rebuilt
    assert d.stepper.timestep == T - 1 == sess.timestep and d.stepper.mode == "replay"
    assert by_role(d.stepper.step_scope)["h_new"]["preview"]["sample"] == sample_of(hs[T - 1])


def test_status_does_not_read_finished_twice():
    d, *_ = debugger()
    d.cont()
    assert d.finished and d.stop_reason == "finished" and d.position == "end of the run"
    assert d.frames == []


def test_back_from_the_last_op_lands_after_the_ops_that_ran():
    d, sess, feed, hs, names = debugger()
    d.next()  # the recurrent op ran whole: before reduce_sum
    d.back()
    assert [f["op_type"] for f in d.frames] == ["recurrent", "end of block"] and d.frames[-1]["timestep"] == T - 1
    d.cont()
    d.back()  # from the end of the run: before reduce_sum, which has not run there
    assert d.frames[-1]["op_type"] == "reduce_sum" and sess.view.value(names["output"]) is not None
    last = sess.program.global_block().op(1).output("Out")[0]
    assert sess.view.value(last) is None


def test_live_only_on_the_live_timestep():
    d, sess, feed, hs, names = debugger()
    d.step()
    d.step_timestep()
    d.step_timestep()
    assert d.stepper.mode == "live" and d.stepper.timestep == 2
    d.stepper.handle_message({"type": "prev"})  # the panel shows t=1 as it ended: rebuilt
    assert d.stepper.timestep == 1 and d.stepper.mode == "replay"
    d.back()  # the cursor in the past: t=1's end, rebuilt
    assert d.stepper.timestep == 1 and d.stepper.mode == "replay" and d.time_travel >= 0


def test_the_last_timestep_result_is_shown_live():
    d, sess, feed, hs, names = debugger()
    d.stepper.handle_message({"type": "goto", "t": T - 1})
    while not d.frames[-1]["end"]:
        d.next()
    assert d.stepper.mode == "live" and d.stepper.timestep == T - 1 and not d.finished
    assert by_role(d.stepper.step_scope)["h_new"]["preview"]["sample"] == sample_of(hs[T - 1])


def test_after_a_run_a_step_block_input_shows_the_step_value():
    d, sess, feed, hs, names = debugger()
    d.cont()
    assert d.finished
    d.graph.select("o1:0")  # matmul_v2(X=x_t, Y=w) in the step block
    x = d.graph.details["inputs"]["X"][0]
    assert x["name"] == "x" and x["value"]["shape"] == [B, D]  # x_t of the last timestep, not x [T, B, D]
    assert x["value"]["sample"] == sample_of(feed["x"][T - 1])
    d.graph.select("v0:x")
    assert d.graph.details["value"]["shape"] == [T, B, D]


def test_step_t_from_the_last_timestep_shows_its_result_live_then_leaves():
    d, sess, feed, hs, names = debugger()
    d.stepper.handle_message({"type": "goto", "t": T - 1})
    d.handle_message({"type": "step_timestep"})
    assert d.frames[-1]["end"] and d.stepper.mode == "live" and d.stepper.timestep == T - 1
    assert by_role(d.stepper.step_scope)["h_new"]["preview"]["sample"] == sample_of(hs[T - 1])
    d.handle_message({"type": "step_timestep"})
    assert [f["op_type"] for f in d.frames] == ["reduce_sum"]
    assert d.stepper.mode == "replay" and d.stepper.timestep == T - 1
