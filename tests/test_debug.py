"""The suspended debug session: stepping, breakpoints, NaN hunting and time travel."""
import numpy as np
import pytest

import kernelcore as kc

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
            vals[v.name] = None if val is None else repr(np.asarray(kc.place.to_host(val)).tolist()) \
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
