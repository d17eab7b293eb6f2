"""Write breakpoints ("break on write" of a variable, from any graph): the engine stops right after the op
that wrote the variable, in the main block, in an RNN's step scopes and in a while loop's iterations, and
reverse-continue comes back to the earlier writes. Values are checked against NumPy. Adding or removing a
breakpoint tells the session's listeners (the sidebar hears of a breakpoint added from a graph widget)."""
import numpy as np

import kernelcore as kc
from test_control_flow import while_program as _while_program
from test_debug_moves import X, Y, start_flat, start_rnn


def while_program():
    """x = x0; while i < 3: x = 0.5 * x + 1 (the body writes x with assign, the while op lists x in Out)."""
    return _while_program(3)


def test_stops_right_after_the_writer_in_the_main_block():
    s = start_flat()
    s.break_on(write="q")  # q = relu(x + y) * (x + y), op #2
    s.cont()
    f = s.position.innermost
    assert (f.block, f.op, f.op_type) == (0, 3, "tanh")  # after op #2, before the next
    assert "written by op 'elementwise_mul' (block 0, op #2)" in s.stop_reason
    a = X + Y
    np.testing.assert_allclose(s.value("q"), np.maximum(a, 0) * a)
    s.cont()
    assert s.finished and s.stop_reason == "finished"


def test_stops_after_each_write_in_step_scopes_and_reverse_continue_returns():
    s, feed, hs, names = start_rnn()
    s.break_on(write=names["h_new"])
    for t in range(3):
        s.cont()
        f = s.position.innermost
        writer = int(s.stop_reason.split("op #")[1].split(")")[0])
        assert (f.block, f.op, f.timestep) == (1, writer + 1, t)  # right after the op that wrote it
        assert f"(block 1, op #{writer}) at timestep {t}" in s.stop_reason
        np.testing.assert_allclose(s.value(names["h_new"]), hs[t], rtol=1e-5)
    s.reverse_cont()
    assert s.timestep == 1 and "reverse" in s.stop_reason
    np.testing.assert_allclose(s.value(names["h_new"]), hs[1], rtol=1e-5)
    s.reverse_cont()
    assert s.timestep == 0
    s.cont()  # forward again: the record replays to the same stop
    assert s.timestep == 1 and not s.at_present


def test_in_a_while_loop_each_iteration_and_not_again_at_the_loop_op():
    s = kc.debug(while_program(), feed={"x0": np.ones((2, 3), np.float32)}, scope=kc.Scope())
    s.break_on(write="x")
    stops, x = [], np.ones((2, 3), np.float32)
    s.cont()
    assert s.position.innermost.op == 1 and "'scale' (block 0, op #0)" in s.stop_reason
    while True:
        s.cont()
        if s.finished:
            break
        f = s.position.innermost
        stops.append((f.block, f.timestep))
        x = 0.5 * x + 1
        np.testing.assert_allclose(s.value("x"), x)
        assert "'assign' (block 1, op #3)" in s.stop_reason
    assert stops == [(1, 0), (1, 1), (1, 2)]
    assert s.stop_reason == "finished"  # the while op's own record of x is not another write
    s.reverse_cont()
    assert s.position.innermost.timestep == 2 and "reverse" in s.stop_reason


def test_breakpoint_changes_tell_the_listeners():
    s = start_flat()
    heard = []
    s.listeners.append(lambda sess: heard.append(len(sess.breakpoints) + len(sess.watches)))
    bp = s.break_on(write="a")
    w = s.watch("a", "zero")
    s.remove_breakpoint(bp.id)
    s.remove_breakpoint(w.id)
    assert heard == [1, 2, 1, 0]
