"""The executor: runs, op ranges, caching, feeds/fetches and failures that leave the scope inspectable."""
import numpy as np
import pytest

import kernelcore as kc


def chain_program():
    prog = kc.Program()
    b = prog.global_block()
    b.create_var("x", [-1, 3])
    b.create_var("y", [3])
    b.append_op("elementwise_add", {"X": ["x"], "Y": ["y"]}, {"Out": ["a"]})
    b.append_op("elementwise_mul", {"X": ["a"], "Y": ["a"]}, {"Out": ["m"]})
    b.append_op("tanh", {"X": ["m"]}, {"Out": ["t"]})
    return prog


X = np.arange(6, dtype=np.float32).reshape(2, 3) / 10
Y = np.array([0.1, -0.2, 0.3], np.float32)


def reference():
    a = X + Y
    return a, a * a, np.tanh(a * a)


def test_run_returns_numpy_values_equal_to_numpy():
    exe = kc.Executor(kc.CPUPlace())
    a, m, t = exe.run(chain_program(), feed={"x": X, "y": Y}, fetch_list=["a", "m", "t"], scope=kc.Scope())
    for got, want in zip((a, m, t), reference()):
        assert isinstance(got, np.ndarray)
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_op_ranges_run_part_of_a_block():
    prog, scope, exe = chain_program(), kc.Scope(), kc.Executor()
    exe.run(prog, feed={"x": X, "y": Y}, scope=scope, end=1)
    assert scope.find_var("a").value is not None and scope.find_var("m").value is None
    exe.run_block(prog, 0, scope, begin=1, end=3)
    np.testing.assert_allclose(scope.get("t"), reference()[2], rtol=1e-6)


def test_a_prepared_program_is_reused_until_it_changes():
    prog, exe = chain_program(), kc.Executor()
    p1 = exe.prepare(prog)
    exe.run(prog, feed={"x": X, "y": Y}, scope=kc.Scope())
    assert exe.prepare(prog) is p1
    prog.global_block().append_op("relu", {"X": ["t"]}, {"Out": ["r"]})
    p2 = exe.prepare(prog)
    assert p2 is not p1 and [o.type for o in p2.ops][-1] == "relu"


def test_repeated_runs_in_one_scope_see_new_feeds():
    prog, scope, exe = chain_program(), kc.Scope(), kc.Executor()
    first = exe.run(prog, feed={"x": X, "y": Y}, fetch_list=["t"], scope=scope)[0]
    second = exe.run(prog, feed={"x": X * 2, "y": Y}, fetch_list=["t"], scope=scope)[0]
    np.testing.assert_allclose(second, np.tanh((X * 2 + Y) ** 2), rtol=1e-6)
    assert not np.allclose(first, second)


def test_a_failing_op_names_op_and_variable_and_leaves_the_scope_as_it_was():
    prog, scope = chain_program(), kc.Scope()
    # feed a y whose shape passes the declared [3]... then break it at run time through the scope
    exe = kc.Executor()
    exe.run(prog, feed={"x": X, "y": Y}, scope=scope)
    before = {n: scope.find_var(n).value for n in ("a", "m", "t")}
    scope.set("y", np.ones(4, np.float32))  # no longer broadcastable
    with pytest.raises(kc.OpRunError) as e:
        exe.run_block(prog, 0, scope)
    err = e.value
    assert (err.op_type, err.block_idx, err.op_idx) == ("elementwise_add", 0, 0)
    assert "elementwise_add" in str(err) and "block 0, op #0" in str(err) and "y[4] float32" in str(err)
    for n, v in before.items():
        assert scope.find_var(n).value is v  # nothing written by or after the failing op


def test_missing_value_is_reported_by_name():
    prog = chain_program()
    with pytest.raises(kc.OpRunError, match=r"input 'Y' \(variable 'y'\) has no value"):
        kc.Executor().run(prog, feed={"x": X}, scope=kc.Scope())


def test_feed_errors_are_clear():
    prog, exe = chain_program(), kc.Executor()
    with pytest.raises(kc.ProgramError, match="cannot feed 'z'"):
        exe.run(prog, feed={"x": X, "y": Y, "z": X}, scope=kc.Scope())
    with pytest.raises(kc.ShapeError, match=r"feed 'x': expected shape \[-1, 3\]"):
        exe.run(prog, feed={"x": np.ones((2, 4), np.float32), "y": Y}, scope=kc.Scope())
    with pytest.raises(kc.ProgramError, match="cannot fetch 'nope'"):
        exe.run(prog, feed={"x": X, "y": Y}, fetch_list=["nope"], scope=kc.Scope())


def test_feeds_are_converted_to_the_declared_dtype():
    out = kc.Executor().run(chain_program(), feed={"x": X.astype(np.float64).tolist(), "y": Y},
                            fetch_list=["a"], scope=kc.Scope())[0]
    assert out.dtype == np.float32


def test_unknown_op_in_a_loaded_program_is_a_clear_error():
    prog = chain_program()
    prog.desc.blocks[0].ops[1].type = "frobnicate"
    prog.touch()
    with pytest.raises(kc.UnknownOpError, match="frobnicate"):
        kc.Executor().run(prog, feed={"x": X, "y": Y}, scope=kc.Scope())


def test_feed_and_fetch_ops_are_honoured():
    prog = kc.Program()
    b = prog.global_block()
    b.create_var("feed", type=kc.ir.program.VT.FEED_MINIBATCH, dtype=None)
    b.create_var("fetch", type=kc.ir.program.VT.FETCH_LIST, dtype=None)
    b.create_var("x", [-1, 3])
    b.append_op("feed", {"X": ["feed"]}, {"Out": ["x"]}, {"col": 0})
    b.append_op("relu", {"X": ["x"]}, {"Out": ["r"]})
    b.append_op("exp", {"X": ["x"]}, {"Out": ["e"]})
    b.append_op("fetch", {"X": ["e"]}, {"Out": ["fetch"]}, {"col": 1})
    b.append_op("fetch", {"X": ["r"]}, {"Out": ["fetch"]}, {"col": 0})
    r, e = kc.Executor().run(prog, feed={"x": X - 0.3}, scope=kc.Scope())
    np.testing.assert_allclose(r, np.maximum(X - 0.3, 0))
    np.testing.assert_allclose(e, np.exp(X - 0.3), rtol=1e-6)
    with pytest.raises(kc.ProgramError, match="needs feeds"):
        kc.Executor().run(prog, feed={}, scope=kc.Scope())


def test_gpu_place_without_a_gpu_is_a_clear_error():
    if kc.gpu_available():
        pytest.skip("a GPU is present")
    with pytest.raises(kc.PlaceError):
        kc.Executor(kc.GPUPlace(0))
