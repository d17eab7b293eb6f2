"""Tensor arrays (Paddle's LoDTensorArray; kernelcore/ops/tensor_array.py): values against NumPy, written
inside a while loop, their gradients against finite differences (outside loops: while_grad carries no array
gradients between iterations yet), the same
programs on the strict GPU stand-in, bad indices refused in bounded memory, and a loop's arrays seen step by
step in the debugger's scope forest."""
import sys
from pathlib import Path

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.errors import OpRunError
from kernelcore.runtime.place import StrictPlace, to_host

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_backward_control_flow import backward, check_fd, weighted_loss  # noqa: E402

VT = kc.ir.program.VT
rng = np.random.default_rng(330)


def _index(block, name, value):
    block.create_var(name, [1], "int64", stop_gradient=True)
    block.append_op("fill_constant", {}, {"Out": [name]}, {"shape": [1], "dtype": 3, "value": float(value)})


def straight_program():
    """arr = [x, tanh(x) * y]; a = arr[1]; joined = concat(arr, axis=0), stacked = stack(arr, axis=1)."""
    prog = kc.Program()
    g = prog.global_block()
    g.create_var("x", [2, 3], "float64")
    g.create_var("y", [2, 3], "float64")
    g.create_var("arr", [2, 3], "float64", type=VT.LOD_TENSOR_ARRAY)
    g.create_var("arr2", [2, 3], "float64", type=VT.LOD_TENSOR_ARRAY)
    _index(g, "i0", 0)
    _index(g, "i1", 1)
    g.append_op("tanh", {"X": ["x"]}, {"Out": ["tx"]})
    g.append_op("elementwise_mul", {"X": ["tx"], "Y": ["y"]}, {"Out": ["txy"]})
    g.append_op("write_to_array", {"X": ["x"], "I": ["i0"]}, {"Out": ["arr"]})
    g.append_op("write_to_array", {"X": ["txy"], "I": ["i1"]}, {"Out": ["arr"]})
    g.append_op("read_from_array", {"X": ["arr"], "I": ["i1"]}, {"Out": ["a"]})
    g.append_op("lod_array_length", {"X": ["arr"]}, {"Out": ["n"]})
    g.append_op("tensor_array_to_tensor", {"X": ["arr"]}, {"Out": ["joined"], "OutIndex": ["sizes"]},
                {"axis": 0})
    g.append_op("assign", {"X": ["arr"]}, {"Out": ["arr2"]})
    g.append_op("tensor_array_to_tensor", {"X": ["arr2"]}, {"Out": ["stacked"], "OutIndex": ["sizes2"]},
                {"axis": 1, "use_stack": True})
    # the joined sizes depend on the array's length, which shape inference cannot know: the loss needs them
    g.var("joined").set_shape([4, 3])
    g.var("stacked").set_shape([2, 2, 3])
    feed = {"x": rng.standard_normal((2, 3)), "y": rng.standard_normal((2, 3))}
    return prog, feed


def test_array_ops_give_numpys_values():
    prog, feed = straight_program()
    scope = kc.Scope()
    a, n, joined, sizes, stacked = kc.Executor().run(prog, feed=feed, scope=scope,
                                                     fetch_list=["a", "n", "joined", "sizes", "stacked"])
    x, y = feed["x"], feed["y"]
    second = np.tanh(x) * y
    np.testing.assert_array_equal(a, second)
    assert n.dtype == np.int64 and n.tolist() == [2]
    np.testing.assert_array_equal(joined, np.concatenate([x, second], axis=0))
    assert sizes.dtype == np.int32 and sizes.tolist() == [2, 2]
    np.testing.assert_array_equal(stacked, np.stack([x, second], axis=1))
    arr = scope.get("arr")
    assert isinstance(arr, list) and len(arr) == 2


def test_array_gradients_match_finite_differences():
    prog, feed = straight_program()
    with kc.program_guard(prog):
        loss, wfeed = weighted_loss(prog.global_block(), [prog.global_block().var(n)
                                                          for n in ("a", "joined", "stacked")])
    feed.update(wfeed)
    forward = backward(prog, loss)
    types = [op.type for op in prog.global_block().ops]
    assert "tensor_array_to_tensor_grad" in types and types.count("read_from_array") >= 2
    check_fd(forward, prog, feed, loss.name, ["x", "y"])


def test_array_programs_on_the_strict_device_match_the_cpu():
    prog, feed = straight_program()
    with kc.program_guard(prog):
        loss, wfeed = weighted_loss(prog.global_block(), [prog.global_block().var("joined")])
    feed.update(wfeed)
    backward(prog, loss)
    fetch = ["a", "n", "joined", "sizes", "stacked", "x@GRAD", "y@GRAD"]
    want = kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=fetch, training=True)
    scope = kc.Scope()
    got = kc.Executor(StrictPlace()).run(prog, feed=feed, fetch_list=fetch, scope=scope, training=True)
    for name, g, w in zip(fetch, got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, err_msg=name)
    assert all(not isinstance(t, np.ndarray) for t in scope.get("arr")), "array entries left on the host"


def loop_program(n_iter=4):
    """h = h0; while i < n: h = tanh(h * w + x); arr[i] = h; i += 1. Then out = stack(arr) and last = arr[n-1]."""
    prog = kc.Program()
    g = prog.global_block()
    g.create_var("x", [2, 3], "float64")
    g.create_parameter("w", [3], "float64")
    g.create_var("h0", [2, 3], "float64")
    g.create_var("arr", [2, 3], "float64", type=VT.LOD_TENSOR_ARRAY)
    for name, dtype in (("i", "int64"), ("n", "int64"), ("cond", "bool"), ("last_i", "int64")):
        g.create_var(name, [1], dtype, stop_gradient=True)
    g.create_var("ss", type=VT.STEP_SCOPES)
    g.append_op("fill_constant", {}, {"Out": ["i"]}, {"shape": [1], "dtype": 3, "value": 0.0})
    g.append_op("fill_constant", {}, {"Out": ["n"]}, {"shape": [1], "dtype": 3, "value": float(n_iter)})
    g.append_op("scale", {"X": ["h0"]}, {"Out": ["h"]}, {"scale": 1.0})
    g.append_op("less_than", {"X": ["i"], "Y": ["n"]}, {"Out": ["cond"]})
    body = prog.create_block(0)
    body.append_op("elementwise_mul", {"X": ["h"], "Y": ["w"]}, {"Out": ["t1"]})
    body.append_op("elementwise_add", {"X": ["t1"], "Y": ["x"]}, {"Out": ["t2"]})
    body.append_op("tanh", {"X": ["t2"]}, {"Out": ["t3"]})
    body.append_op("write_to_array", {"X": ["t3"], "I": ["i"]}, {"Out": ["arr"]})
    body.append_op("increment", {"X": ["i"]}, {"Out": ["i"]}, {"step": 1.0})
    body.append_op("less_than", {"X": ["i"], "Y": ["n"]}, {"Out": ["c2"]})
    body.append_op("assign", {"X": ["t3"]}, {"Out": ["h"]})
    body.append_op("assign", {"X": ["c2"]}, {"Out": ["cond"]})
    prog.rollback()
    g.append_op("while", {"X": ["w", "i", "h", "x", "n", "arr"], "Condition": ["cond"]},
                {"Out": ["i", "h", "cond", "arr"], "StepScopes": ["ss"]}, {"sub_block": body})
    g.append_op("tensor_array_to_tensor", {"X": ["arr"]}, {"Out": ["out"], "OutIndex": ["out_index"]},
                {"axis": 0, "use_stack": True})
    g.append_op("fill_constant", {}, {"Out": ["last_i"]}, {"shape": [1], "dtype": 3, "value": float(n_iter - 1)})
    g.append_op("read_from_array", {"X": ["arr"], "I": ["last_i"]}, {"Out": ["last"]})
    g.var("out").set_shape([n_iter, 2, 3])
    feed = {"x": rng.standard_normal((2, 3)), "h0": rng.standard_normal((2, 3)), "w": rng.standard_normal(3)}
    return prog, feed


def _numpy_loop(feed, n_iter=4):
    h, steps = feed["h0"], []
    for _ in range(n_iter):
        h = np.tanh(h * feed["w"] + feed["x"])
        steps.append(h)
    return np.stack(steps)


def test_a_while_loop_fills_an_array_step_by_step():
    prog, feed = loop_program()
    out, last = kc.Executor().run(prog, feed=feed, fetch_list=["out", "last"])
    want = _numpy_loop(feed)
    np.testing.assert_allclose(out, want, rtol=1e-12)
    np.testing.assert_allclose(last, want[-1], rtol=1e-12)


@pytest.mark.parametrize("index, message", [(-1, "outside"), (2 ** 40, "outside")])
def test_a_bad_index_is_refused_before_any_list_grows(index, message):
    prog = kc.Program()
    g = prog.global_block()
    g.create_var("x", [2], "float32")
    g.create_var("arr", [2], "float32", type=VT.LOD_TENSOR_ARRAY)
    g.create_var("i", [1], "int64")
    g.append_op("write_to_array", {"X": ["x"], "I": ["i"]}, {"Out": ["arr"]})
    with pytest.raises(OpRunError, match=message):
        kc.Executor().run(prog, feed={"x": np.ones(2, np.float32), "i": np.array([index])})


def test_reading_past_the_end_or_a_hole_says_so():
    prog = kc.Program()
    g = prog.global_block()
    g.create_var("x", [2], "float32")
    g.create_var("arr", [2], "float32", type=VT.LOD_TENSOR_ARRAY)
    g.create_var("i", [1], "int64")
    g.create_var("j", [1], "int64")
    g.append_op("write_to_array", {"X": ["x"], "I": ["i"]}, {"Out": ["arr"]})
    g.append_op("read_from_array", {"X": ["arr"], "I": ["j"]}, {"Out": ["y"]})
    run = lambda j: kc.Executor().run(prog, feed={"x": np.ones(2, np.float32), "i": np.array([2]),  # noqa: E731
                                                  "j": np.array([j])}, fetch_list=["y"],
                                        scope=kc.Scope())
    np.testing.assert_array_equal(run(2)[0], np.ones(2, np.float32))
    with pytest.raises(OpRunError, match="never written"):
        run(1)
    with pytest.raises(OpRunError, match="past the tensor array's end: it holds 3 entries"):
        run(3)


def test_the_debugger_steps_the_loop_with_the_array_visible():
    """Timestep by timestep through the while: before iteration t the array holds the t states written so far
    (the forest lists it as a list of t tensors), each the NumPy loop's; stepping back shows the shorter array."""
    prog, feed = loop_program()
    want = _numpy_loop(feed)
    session = kc.debug(prog, feed=feed, fetch_list=["out"], scope=kc.Scope())
    seen = []
    for _ in range(10):
        session.step_timestep()
        if session.position.ended or session.timestep is None:
            break
        t = session.timestep
        arr = session.value("arr") if t else None
        entries = [] if arr is None else arr
        assert len(entries) == t, (t, len(entries))
        for k, e in enumerate(entries):
            np.testing.assert_allclose(to_host(e), want[k], rtol=1e-12)
        info = next(node.vars["arr"] for node in session.forest() if "arr" in node.vars)
        assert (info.kind, info.shape) == (("tensor_list", (t,)) if t else ("empty", None)), info
        if t:
            assert info.dtype == "float64" and info.describe() == f"list of {t} float64 tensors"
        seen.append(t)
    assert seen == [0, 1, 2, 3]
    while session.timestep != 2:  # back into the past: the record kept the array as it was then
        session.back()
    assert len(session.value("arr")) in (2, 3)  # t=2's start, or its end after the write
    session.back_timestep()
    assert session.timestep == 1 and len(session.value("arr")) == 1


def test_each_run_starts_its_arrays_empty():
    """A second, shorter run in the same scope holds its own entries only, as Paddle's executor gives each run
    fresh arrays: the loop of 4 steps leaves 4 entries, the loop of 2 after it in that scope gives 2."""
    scope = kc.Scope()
    long_prog, feed = loop_program(4)
    kc.Executor().run(long_prog, feed=feed, fetch_list=["out"], scope=scope)
    assert len(scope.find_var("arr").value) == 4
    short_prog, _ = loop_program(2)
    out, = kc.Executor().run(short_prog, feed=feed, fetch_list=["out"], scope=scope)
    assert len(scope.find_var("arr").value) == 2
    np.testing.assert_allclose(out, _numpy_loop(feed, 2), rtol=1e-12)


def test_the_tensor_panel_shows_an_array_as_its_entries_and_the_trace_records_its_length():
    """The sidebar's tensor panel draws a tensor array as its entries stacked (axis 0 picks the entry), at
    each timestep the entries written so far; sending it binds that stack. The trace's op records give the
    array's length as its shape."""
    pytest.importorskip("anywidget")
    from kernelcore_widgets.tensor_panel import tensor_json, tensor_send
    prog, feed = loop_program()
    want = _numpy_loop(feed)
    session = kc.debug(prog, feed=feed, fetch_list=["out"], scope=kc.Scope())
    for _ in range(3):
        session.step_timestep()
    t = session.timestep
    assert t == 2
    view = tensor_json(session, "arr", axes=[1, 2], index=[1, 0, 0])
    assert view["exists"] and view["shape"] == [t, 2, 3] and view["dtype"] == "float64"
    assert view["status"].startswith(f"a tensor array of {t} entries, each float64 [2, 3]; axis 0 picks")
    np.testing.assert_allclose(np.asarray(view["slice"]["data"], dtype=float), want[1], rtol=1e-6)
    namespace = {}
    tensor_send(session, namespace, "arr", None, None, None, False, "arr_now", "value", False)
    np.testing.assert_allclose(namespace["arr_now"], want[:t], rtol=1e-12)
    writes = [e for e in session.trace.events if e.kind == "op_run" and e.op_type == "write_to_array"]
    assert [list(e.outputs[0][2]) for e in writes[:t]] == [[1], [2]]
    assert all(e.outputs[0][3] == "list" for e in writes[:t])


def test_an_array_the_panel_cannot_stack_says_why():
    from kernelcore_widgets.tensor_panel import array_as_tensor  # noqa: E402
    assert array_as_tensor([])[1] == "an empty tensor array"
    assert "no value at entries [1]" in array_as_tensor([np.ones(2), None])[1]
    value, why = array_as_tensor([np.ones(2), np.ones(3)])
    assert value is None and "different shapes" in why
