"""Pause: a move that runs long is asked, from another thread, to stop at its next op
(DebugSession.request_pause); nothing is remembered when no move runs."""
import threading

import numpy as np
import pytest

from test_debug_moves import start_rnn


def pause_from_another_thread_after(sess, ops: int) -> list:
    """Have another thread ask `sess` to pause once the move has run `ops` pauses further; returns the
    answers request_pause gave (the flag is set before the move goes on: no timing involved)."""
    advance, answers, seen = sess._advance, [], [0]

    def advance_then_maybe_ask():
        more = advance()
        seen[0] += 1
        if seen[0] == ops:
            asker = threading.Thread(target=lambda: answers.append(sess.request_pause()))
            asker.start()
            asker.join()
        return more
    sess._advance = advance_then_maybe_ask
    return answers


def test_continue_stops_at_the_next_op_once_another_thread_asks():
    sess, feed, hs, names = start_rnn()
    answers = pause_from_another_thread_after(sess, 3)
    sess.cont()
    assert answers == [True]
    assert sess.stop_reason == "paused"
    assert not sess.finished and not sess.moving
    assert len(sess.pauses) == 4  # the start and the three pauses the move passed: it stopped at the third
    del sess._advance  # the class's own again
    sess.cont()  # the request was for that move only: the next runs to the end
    assert sess.finished and sess.stop_reason == "finished"
    np.testing.assert_allclose(sess.result[0], sum(hs[t] for t in range(len(hs))), rtol=1e-5)


def test_a_pause_asked_while_no_move_runs_is_refused_and_forgotten():
    sess, *_ = start_rnn()
    assert not sess.moving
    assert sess.request_pause() is False
    sess.cont()
    assert sess.finished and sess.stop_reason == "finished"


def test_a_pause_asked_while_replaying_the_record_stops_the_replay():
    sess, *_ = start_rnn()
    sess.run_n(6)
    sess.goto_pause(0)
    sess.break_on(op_type="reduce_sum")  # a breakpoint makes the move judge each pause it replays (_hit)
    judge, judged = sess._hit, [0]

    def judge_then_ask(i):
        judged[0] += 1
        if judged[0] == 2:
            asker = threading.Thread(target=sess.request_pause)
            asker.start()
            asker.join()
        return judge(i)
    sess._hit = judge_then_ask
    sess.cont()
    assert sess.stop_reason == "paused"
    assert sess.pause_index == 2 and not sess.at_present  # still in the record: the replay stopped there


# -- the sidebar's comm and the Debugger widget: Pause served while a move runs ------------------------------
def _blocking_move(sess):
    """Make the session's next move wait, after its second pause, until `go` is set; `running` is set then."""
    running, go = threading.Event(), threading.Event()
    advance, seen = sess._advance, [0]

    def advance_and_wait():
        more = advance()
        seen[0] += 1
        if seen[0] == 2:
            running.set()
            assert go.wait(30), "the test never let the move go on"
        return more
    sess._advance = advance_and_wait
    return running, go


def test_the_sidebar_comm_answers_a_pause_during_a_move_and_every_request_exactly_once():
    pytest.importorskip("anywidget")
    from kernelcore_widgets import comm
    sess, *_ = start_rnn()
    got: list[dict] = []
    ch = comm.DebugChannel(got.append, lambda: sess)
    running, go = _blocking_move(sess)
    move = threading.Thread(target=ch.handle, args=({"type": "request", "id": 1, "command": "cont", "args": {}},))
    move.start()
    assert running.wait(30)
    ch.handle({"type": "request", "id": 2, "command": "pause", "args": {}})  # as the comm's subshell would
    assert [(m["type"], m.get("id"), m.get("ok")) for m in got] == [("reply", 2, True)]  # at once, alone
    go.set()
    move.join(30)
    replies = [m for m in got if m["type"] == "reply"]
    assert sorted(m["id"] for m in replies) == [1, 2]
    assert got[-1]["type"] == "state" and got[-1]["state"]["session"]["stop_reason"] == "paused"
    assert not got[-1]["state"]["session"]["finished"]
    ch.handle({"type": "request", "id": 3, "command": "pause", "args": {}})  # nothing runs now
    assert got[-1] == {"type": "reply", "id": 3, "command": "pause", "ok": False,
                       "error": "no move is running: nothing to pause", "result": None}


def test_pause_requests_are_routed_to_the_subshell_they_came_from_and_the_rest_to_the_main_shell():
    from kernelcore_widgets.kernel_targets import pin_to_main_shell
    from kernelcore_widgets.pause_route import serve_pause_beside

    class FakeComm:
        def _reply_subshell_for(self, data, default):
            return "the-subshell-last-sent-on"
    c = FakeComm()
    pin_to_main_shell(c)
    serve_pause_beside(c)
    assert c._reply_subshell_for({"type": "request", "command": "cont"}, "sidebar-subshell") is None
    assert c._reply_subshell_for({"type": "request", "command": "pause"}, "sidebar-subshell") == "sidebar-subshell"
    widget_pause = {"method": "custom", "content": {"type": "pause"}}
    assert c._reply_subshell_for(widget_pause, "widget-subshell") == "widget-subshell"
    assert c._reply_subshell_for({"method": "custom", "content": {"type": "cont"}}, "widget-subshell") is None
