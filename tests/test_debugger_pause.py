"""The Debugger widget while a move runs: `busy` (the view disables the moves and offers Pause), and its
Pause message, served beside the move, stops it at the next op."""
import threading

import pytest

from test_debug_moves import start_rnn
from test_debug_pause import _blocking_move


def test_the_debugger_widget_is_busy_during_a_move_and_its_pause_stops_it():
    pytest.importorskip("anywidget")
    import kernelcore_widgets as kw
    sess, *_ = start_rnn()
    d = kw.Debugger(sess)
    busy_seen = []
    d.observe(lambda ch: busy_seen.append(ch["new"]), "busy")
    running, go = _blocking_move(sess)
    move = threading.Thread(target=d.handle_message, args=({"type": "cont"},))
    move.start()
    assert running.wait(30)
    assert d.busy
    d.handle_message({"type": "pause"})
    go.set()
    move.join(30)
    assert busy_seen == [True, False]
    assert d.stop_reason == "paused" and not d.finished


def test_a_breakpoint_added_keeps_the_graphs_selection_and_a_move_selects_the_cursors_op():
    pytest.importorskip("anywidget")
    import kernelcore_widgets as kw
    sess, *_ = start_rnn()
    d = kw.Debugger(sess)
    d.graph.select("o1:2")
    d.graph.handle_message({"type": "debug", "action": "break_op", "block": 1, "op": 2})
    assert [b["text"] for b in d.breakpoints] and d.graph.selected == "o1:2"
    assert d.graph.debug["text"].startswith("added breakpoint")
    d.step()
    assert d.graph.selected == d._cursor_op()
