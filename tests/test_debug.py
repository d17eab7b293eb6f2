"""The suspended debug session: stepping, breakpoints, NaN hunting and time travel."""
import numpy as np
import pytest

import kernelcore as kc
from static_rnn_case import build_tanh_rnn

X = np.array([[1.0, -2.0, 3.0], [0.5, 0.0, -1.0]], np.float32)
Y = np.array([0.5, 2.0, -4.0], np.float32)  # a[0, 1] == 0: relu(a) / a is NaN there


def flat_program():
    p = kc.Program()
    b = p.global_block()
    b.create_var("x", [2, 3])
    b.create_var("y", [3])
    b.append_op("elementwise_add", {"X": ["x"], "Y": ["y"]}, {"Out": ["a"]})
    b.append_op("relu", {"X": ["a"]}, {"Out": ["r"]})
    b.append_op("elementwise_div", {"X": ["r"], "Y": ["a"]}, {"Out": ["q"]})  # 0/0 where a == 0
    b.append_op("tanh", {"X": ["q"]}, {"Out": ["t"]})
    return p


def start(**kw):
    return kc.debug(flat_program(), feed={"x": X, "y": Y}, fetch_list=["t"], scope=kc.Scope(), **kw)


def test_starts_paused_before_the_first_op_and_steps_one_op_at_a_time():
    s = start()
    assert str(s.position) == "block 0 op #0 elementwise_add"
    assert s.scope.find_var("a").value is None
    np.testing.assert_array_equal(s.inputs()["x"], X)
    s.step()
    assert s.position.innermost.op == 1
    np.testing.assert_allclose(s.value("a"), X + Y)
    s.next()
    assert s.position.innermost.op_type == "elementwise_div"
    s.step().step()
    assert s.finished and s.stop_reason == "finished"
    assert s.result[0].shape == (2, 3)


def test_breakpoints_on_op_type_index_and_write():
    s = start()
    s.break_on("tanh")
    s.cont()
    assert s.op.type == "tanh" and "op type 'tanh'" in s.stop_reason
    s = start()
    s.break_on(block=0, op=2)
    s.cont()
    assert s.op.idx == 2
    s = start()
    s.break_on(write="r")
    s.cont()
    # stops right after the op that wrote it, with the written value visible
    assert s.op.idx == 2 and "written by op 'relu'" in s.stop_reason
    np.testing.assert_allclose(s.value("r"), np.maximum(X + Y, 0))


def test_nan_breakpoint_names_the_op_and_its_inputs():
    s = start()
    s.break_on(nan=True)
    s.cont()
    assert "elementwise_div" in s.stop_reason and "'q'" in s.stop_reason and "X=r[2, 3]" in s.stop_reason
    assert s.op.type == "tanh"


def test_check_nan_inf_option_names_op_block_variable_and_inputs():
    with pytest.raises(kc.NonFiniteError) as e:
        kc.Executor().run(flat_program(), feed={"x": X, "y": Y}, scope=kc.Scope(), check_nan_inf=True)
    err = e.value
    assert (err.op_type, err.block_idx, err.op_idx, err.var_name) == ("elementwise_div", 0, 2, "q")
    assert [i[1] for i in err.inputs] == ["r", "a"] and "NaN" in str(err)


def test_errors_end_the_session_and_stay_inspectable():
    p = flat_program()
    s = kc.debug(p, feed={"x": X}, scope=kc.Scope())  # y missing
    with pytest.raises(kc.OpRunError):
        s.cont()
    assert s.finished and s.error is not None and "y" in s.stop_reason


def _state(root):
    """Scope tree and values, ids and creation details aside, for comparing runs."""
    out = []
    for sc in root.walk():
        vals = {}
        for v in sc.local_vars():
            val = v.value
            vals[v.name] = None if val is None else repr(np.asarray(kc.runtime.place.to_host(val)).tolist()) \
                if hasattr(val, "shape") else repr(val)
        out.append((sc.depth, sc.origin.get("op"), sc.origin.get("timestep"), vals))
    return out


def test_time_travel_matches_a_fresh_run_stopped_at_each_pause():
    full = start()
    full.run_to_end()
    fresh = start()
    while True:
        k = len(fresh.trace) - 1
        assert _state(full.goto(k).root) == _state(fresh.scope), f"at event {k}"
        if fresh.finished:
            break
        fresh.step()


def test_back_shows_the_state_before_the_last_ops():
    s = start()
    s.run_to_end()
    view = s.back(1)  # before the last op (tanh) ran
    assert view.value("t") is None
    np.testing.assert_allclose(view.value("r"), np.maximum(X + Y, 0))
    earlier = s.back(4)
    assert earlier.value("a") is None
    np.testing.assert_array_equal(earlier.value("x"), X)


def rnn_program(T=4, B=2, D=3, H=3):
    """The shared StaticRNN whose state is added as it is (h_t = tanh(x_t @ w + h_{t-1})), h0 zeros:
    (program, feed, out, h_new)."""
    case = build_tanh_rnn(T, B, D, H, recurrent=False)
    prog, out, h_new = case.program, case.out, case.h_new
    rng = np.random.default_rng(1)
    feed = {"x": rng.standard_normal((T, B, D)).astype(np.float32), "h0": np.zeros((B, H), np.float32)}
    return prog, feed, out, h_new


def start_rnn():
    prog, feed, out, h_new = rnn_program()
    scope = kc.Scope()
    scope.set("w", np.eye(3, dtype=np.float32))
    return kc.debug(prog, feed=feed, fetch_list=[out], scope=scope), feed, h_new


def test_step_enters_the_recurrent_op_and_step_timestep_moves_one_timestep():
    s, feed, _ = start_rnn()
    assert str(s.position) == "block 0 op #0 recurrent"
    s.step()
    assert s.position.depth == 2 and s.position.innermost.timestep == 0 and s.position.innermost.op == 0
    np.testing.assert_array_equal(s.value("x"), feed["x"][0])  # x_t bound in the step scope
    for t in (1, 2, 3):
        s.step_timestep()
        inner = s.position.innermost
        assert (inner.block, inner.op, inner.timestep) == (1, 0, t)
        np.testing.assert_array_equal(s.value("x"), feed["x"][t])
    s.step_timestep()  # the last timestep: stops at its end, where its results are live
    assert s.position.innermost.at_end and s.position.innermost.timestep == 3 and not s.finished
    s.step_timestep()  # no timestep left: stops after the loop, at the end of the run here
    assert s.finished


def test_next_steps_over_the_recurrent_op_and_finish_leaves_a_step_block():
    s, _, _ = start_rnn()
    s.next()
    assert s.finished  # the program's only op ran whole
    s, _, _ = start_rnn()
    s.step()
    s.finish()  # to the end of timestep 0's block
    assert s.position.innermost.at_end and s.timestep == 0
    s.finish()  # out of it: before timestep 1
    assert s.timestep == 1 and s.position.innermost.op == 0


def test_write_breakpoint_inside_a_timestep_names_the_timestep():
    s, _, h_new = start_rnn()
    s.break_on(write=h_new.name)
    s.cont()
    assert "at timestep 0" in s.stop_reason
    s.cont()
    assert "at timestep 1" in s.stop_reason


def test_time_travel_inside_an_rnn_matches_a_fresh_run_and_shows_bound_step_inputs():
    full, feed, _ = start_rnn()
    full.run_to_end()
    fresh, _, _ = start_rnn()
    while True:
        k = len(fresh.trace) - 1
        assert _state(full.goto(k).root) == _state(fresh.scope), f"at event {k}"
        if fresh.finished:
            break
        fresh.step()
    # a step scope seen through time travel holds that step's slice of x
    pushes = [e for e in full.events if e.kind == "scope_push"]
    first_op_in_t2 = next(i for i, e in enumerate(full.events) if e.kind == "op_run" and e.timestep == 2)
    view = full.goto(first_op_in_t2)
    np.testing.assert_array_equal(view.value("x", scope=pushes[2].scope), feed["x"][2])
