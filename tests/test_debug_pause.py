"""Pause: a move that runs long is asked, from another thread, to stop at its next op
(DebugSession.request_pause); nothing is remembered when no move runs."""
import threading

import numpy as np

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
