"""Finish ends the current block's run (a loop's timestep at its end, not the whole loop), and positions say
where they are: the fused rnn op's layer and direction, a readable repr, a jump's stop reason naming the op."""
import numpy as np

import kernelcore as kc
from test_debug_moves import start_rnn
from test_debug_write_break import while_program
from test_paddle_rnn import rnn_program as fused_rnn_program


def test_finish_in_a_static_rnn_timestep_stops_at_its_end_not_after_the_loop():
    s, feed, hs, names = start_rnn()
    s.step()  # t=0, first op of the step block
    assert s.timestep == 0
    s.finish()
    inner = s.position.innermost
    assert inner.at_end and inner.timestep == 0 and s.position.depth == 2 and not s.finished
    np.testing.assert_allclose(s.value(names["h_new"]), hs[0], rtol=1e-5)  # the timestep's result, live
    s.finish()  # from the block's end: out of that timestep, before the next one
    inner = s.position.innermost
    assert (inner.block, inner.op, inner.timestep) == (1, 0, 1)
    while s.timestep is not None:  # finish once per timestep: two stops each, then the enclosing block
        s.finish()
    assert s.position.depth == 1 and s.stop_reason in ("finish", "finished")


def test_finish_in_a_while_iteration_stops_at_that_iteration_end():
    s = kc.debug(while_program(), feed={"x0": np.ones((2, 3), np.float32)}, scope=kc.Scope())
    while s.timestep is None:
        s.step()
    first = s.timestep
    depth = s.position.depth
    s.finish()
    assert s.position.depth == depth and s.position.innermost.at_end and s.timestep == first
    s.finish()
    assert s.position.depth == depth and s.timestep == first + 1 and not s.position.innermost.at_end


def test_finish_in_a_fused_rnn_cell_stops_before_the_next_timestep():
    prog, feed, _, fetch = fused_rnn_program("GRU", 2, True)
    s = kc.debug(prog, feed=feed, fetch_list=fetch, scope=kc.Scope())
    s.step()
    assert s.position.innermost.op_type == "gru_cell" and s.timestep == 0
    s.finish()  # a cell is the whole of its timestep: the next one, same pass
    assert s.position.innermost.op_type == "gru_cell" and s.timestep == 1
    assert s.position.innermost.detail == "layer 0 fwd"


def test_the_fused_rnn_frames_name_layer_and_direction():
    prog, feed, _, fetch = fused_rnn_program("LSTM", 2, False, T=2)
    s = kc.debug(prog, feed=feed, fetch_list=fetch, scope=kc.Scope())
    s.break_on("lstm_cell")
    seen = []
    while not s.finished:
        s.cont()
        if not s.finished:
            seen.append(str(s.position.innermost))
    assert seen == ["block 0 op #0 lstm_cell layer 0 fwd t=0", "block 0 op #0 lstm_cell layer 0 fwd t=1",
                    "block 0 op #0 lstm_cell layer 1 fwd t=0", "block 0 op #0 lstm_cell layer 1 fwd t=1"]
    prog, feed, _, fetch = fused_rnn_program("GRU", 1, True, T=2)
    s = kc.debug(prog, feed=feed, fetch_list=fetch, scope=kc.Scope())
    s.break_on("gru_cell")
    s.cont().cont().cont()
    assert s.position.innermost.detail == "layer 0 bwd" and s.timestep == 1  # backward: t runs T-1 .. 0
    assert s.position.to_json()[-1]["detail"] == "layer 0 bwd"


def test_position_and_frame_repr_read_as_the_text():
    s, *_ = start_rnn()
    s.step()
    text = str(s.position)
    assert text == "block 0 op #0 recurrent > block 1 op #0 " + s.position.innermost.op_type + " t=0"
    assert repr(s.position) == text and repr(s.position.innermost) == str(s.position.innermost)
    assert "Frame(" not in repr(s.position)
    printed = []

    class Printer:
        def text(self, t):
            printed.append(t)
    s.position._repr_pretty_(Printer(), False)
    assert printed == [text]
    s.run_to_end()
    assert repr(s.position) == "end of the run"


def test_a_jump_to_an_event_names_the_op_that_ran():
    s, feed, hs, names = start_rnn()
    s.break_on(write=names["h_new"])
    s.cont().cont()
    writer = next(i for i, e in enumerate(s.events) if e.kind == "op_run" and e.timestep == 1
                  and any(n == names["h_new"] for _, n, _, _ in e.outputs))
    ev = s.events[writer]
    s.goto_event(writer)
    assert s.stop_reason == f"after block {ev.block} op #{ev.op} {ev.op_type} t=1 (event {writer})"
