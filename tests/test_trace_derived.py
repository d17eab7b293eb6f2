"""A "shapes" trace measures only an op's outputs (and the inputs nothing else tells) and recovers the
other inputs' (shape, dtype) when the trace is read (events.BlockRun). What it recovers must be exactly
what measuring every value gives: each program here runs under both and the events must agree."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.runtime.events import RECORD_HEAD, BlockRun

sys.path.insert(0, str(Path(__file__).parent))
from test_control_flow import rnn_feed, rnn_program, while_program  # noqa: E402
from test_paddle_rnn import rnn_program as fused_rnn_program  # noqa: E402

L = kc.layers


def _seen(tr):
    """What the op records say (creation events differ by design: without values, a timestep's bound
    variables are one vars_create)."""
    return [(e.block, e.op, e.op_type, e.timestep, e.inputs, e.outputs) for e in tr.events if e.kind == "op_run"]


def _agree(run):
    """Run `run()` under a measuring trace and a deriving one; return the deriving trace."""
    run()  # the first run creates variables: both traced runs then see the same scope
    with kc.trace("references") as measured:
        run()
    with kc.trace("shapes") as derived:
        run()
    n_derived = sum(1 for it in derived._items
                    if type(it) is tuple and len(it) > RECORD_HEAD and type(it[RECORD_HEAD]) is BlockRun)
    assert n_derived > 0, "the shapes trace did not use derived records"
    assert _seen(derived) == _seen(measured)
    return derived


def test_a_name_rewritten_with_another_shape_is_read_from_its_latest_writer():
    prog = kc.Program()
    b = prog.global_block()
    b.create_var("x0", [2, 3])
    b.append_op("scale", {"X": ["x0"]}, {"Out": ["x"]}, {"scale": 1.0})         # x0 as the run began
    b.append_op("scale", {"X": ["x"]}, {"Out": ["y"]}, {"scale": 2.0})          # x from its writer: [2, 3]
    b.append_op("reshape2", {"X": ["y"]}, {"Out": ["x"], "XShape": ["xs"]}, {"shape": [3, 2]})
    b.append_op("scale", {"X": ["x"]}, {"Out": ["z"]}, {"scale": 1.0})          # the new x: [3, 2]
    b.append_op("cast", {"X": ["z"]}, {"Out": ["z64"]}, {"in_dtype": 5, "out_dtype": 6})
    b.append_op("elementwise_add", {"X": ["z64"], "Y": ["z64"]}, {"Out": ["w"]})
    feed = {"x0": np.ones((2, 3), np.float32)}
    tr = _agree(lambda: kc.Executor().run(prog, feed=feed, scope=kc.Scope()))
    ops = tr.filter("op_run")
    assert ops[1].inputs[0][2] == (2, 3) and ops[3].inputs[0][2] == (3, 2)
    assert ops[5].inputs == (("X", "z64", (3, 2), "float64"), ("Y", "z64", (3, 2), "float64"))


@pytest.mark.parametrize("training", [False, True])
def test_recurrent_step_blocks(training):
    prog, out, _ = rnn_program(4, 2, 3)
    feed = rnn_feed(4, 2, 3)
    _agree(lambda: kc.Executor().run(prog, feed=feed, fetch_list=[out], scope=kc.Scope(), training=training))


def test_while_iterations_read_what_the_previous_iteration_wrote():
    prog = while_program(3)
    feed = {"x0": np.ones((2, 3), np.float32)}
    tr = _agree(lambda: kc.Executor().run(prog, feed=feed, scope=kc.Scope(), training=True))
    assert len([e for e in tr.filter("op_run") if e.op_type == "increment"]) == 3


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_paddles_fused_rnn_op(mode):
    prog, feed, _, fetch = fused_rnn_program(mode=mode, T=4)
    _agree(lambda: kc.Executor().run(prog, feed=feed, fetch_list=fetch, scope=kc.Scope(), training=True))


def test_a_training_step_with_backward_and_in_place_updates():
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        x = L.data("x", [-1, 4])
        h = L.fc(L.fc(x, 5, act="relu"), 3)
        kc.optimizer.Adam(learning_rate=0.01).minimize(L.mean(h), startup)
    scope = kc.Scope()
    exe = kc.Executor()
    exe.run(startup, scope=scope)
    feed = {"x": np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)}
    tr = _agree(lambda: exe.run(main, feed=feed, scope=scope, training=True))
    adam = [e for e in tr.filter("op_run") if e.op_type == "adam"]
    assert adam and all(e.inputs[0][2] is not None for e in adam)


def test_a_debugger_run_from_the_middle_measures_every_input():
    """A run that starts past op 0 cannot derive from ops that did not run in it: it measures."""
    prog = kc.Program()
    b = prog.global_block()
    b.create_var("x", [2])
    b.append_op("scale", {"X": ["x"]}, {"Out": ["y"]}, {"scale": 2.0})
    b.append_op("scale", {"X": ["y"]}, {"Out": ["z"]}, {"scale": 2.0})
    scope = kc.Scope()
    exe = kc.Executor()
    exe.run(prog, feed={"x": np.ones(2, np.float32)}, scope=scope)
    with kc.trace("shapes") as tr:
        exe.run_block(prog, 0, scope, begin=1)
    (ev,) = tr.filter("op_run")
    assert ev.inputs == (("X", "y", (2,), "float32"),)


def test_a_sub_block_write_the_control_flow_op_does_not_list_is_measured():
    """A while body may write an outer variable its op does not name as an output; a read after the
    loop must see that write, not the last writer in the outer block."""
    prog = kc.Program()
    g = prog.global_block()
    g.create_var("x0", [2, 3])
    g.append_op("scale", {"X": ["x0"]}, {"Out": ["t"]}, {"scale": 1.0})
    g.append_op("fill_constant", outputs={"Out": ["i"]}, attrs={"shape": [1], "dtype": 3, "value": 0.0})
    g.append_op("fill_constant", outputs={"Out": ["n"]}, attrs={"shape": [1], "dtype": 3, "value": 2.0})
    g.append_op("less_than", {"X": ["i"], "Y": ["n"]}, {"Out": ["cond"]})
    g.create_var("steps", type=kc.ir.program.VT.STEP_SCOPES)
    body = prog.create_block(0)
    body.append_op("reshape2", {"X": ["x0"]}, {"Out": ["t"], "XShape": ["ts"]}, {"shape": [3, 2]})
    body.append_op("increment", {"X": ["i"]}, {"Out": ["i"]}, {"step": 1.0})
    body.append_op("less_than", {"X": ["i"], "Y": ["n"]}, {"Out": ["cond"]})
    prog.rollback()
    g.append_op("while", {"X": ["x0", "i", "n"], "Condition": ["cond"]},
                {"Out": ["i", "cond"], "StepScopes": ["steps"]}, {"sub_block": body})
    g.append_op("scale", {"X": ["t"]}, {"Out": ["z"]}, {"scale": 1.0})
    feed = {"x0": np.ones((2, 3), np.float32)}
    tr = _agree(lambda: kc.Executor().run(prog, feed=feed, scope=kc.Scope()))
    assert tr.filter("op_run")[-1].inputs == (("X", "t", (3, 2), "float32"),)


@pytest.mark.parametrize("retain", ["none", "shapes", "references"])
def test_events_are_numbered_in_order_through_sub_blocks_pauses_and_errors(retain):
    """Plain ops count events in a local; whatever else reports (control-flow kernels, pauses, errors)
    must see the same count: the seqs of a run are 0, 1, 2, ... with no gap and no repeat."""
    prog, out, _ = rnn_program(3, 2, 3)
    fused, fused_feed, _, fused_fetch = fused_rnn_program(T=3)
    runs = [lambda: kc.Executor().run(prog, feed=rnn_feed(3, 2, 3), fetch_list=[out], scope=kc.Scope(),
                                      training=True),
            lambda: kc.Executor().run(while_program(3), feed={"x0": np.ones((2, 3), np.float32)},
                                      scope=kc.Scope(), training=True),
            lambda: kc.Executor().run(fused, feed=fused_feed, fetch_list=fused_fetch, scope=kc.Scope())]
    for run in runs:
        with kc.trace(retain) as tr:
            run()
        assert [e.seq for e in tr.events] == list(range(len(tr.events)))
    session = kc.debug(prog, rnn_feed(3, 2, 3), [out], kc.Scope())
    while not session.finished:
        session.step()
    assert [e.seq for e in session.trace.events] == list(range(len(session.trace.events)))
    bad = kc.Program()
    b = bad.global_block()
    b.create_var("x", [2])
    b.append_op("scale", {"X": ["x"]}, {"Out": ["y"]}, {"scale": 2.0})
    b.create_var("missing_value", [2])
    b.append_op("relu", {"X": ["missing_value"]}, {"Out": ["z"]})  # declared, never given a value
    with kc.trace(retain) as tr:
        with pytest.raises(kc.OpRunError):
            kc.Executor().run(bad, feed={"x": np.ones(2, np.float32)}, scope=kc.Scope())
    assert [e.kind for e in tr.events][-2:] == ["error", "run_end"]
    assert [e.seq for e in tr.events] == list(range(len(tr.events)))


def test_a_program_read_with_its_feed_list_agrees(tmp_path):
    """A loaded inference model reads its `feed` list (not an array) before any op writes it: the derived
    record of the run's start measures that one value apart, and every array beside it as it is."""
    prog = kc.Program()
    b = prog.global_block()
    b.create_var("x", [2, 3])
    b.create_parameter("w", [3, 4])
    b.append_op("matmul_v2", {"X": ["x"], "Y": ["w"]}, {"Out": ["y"]})
    b.append_op("relu", {"X": ["y"]}, {"Out": ["z"]})
    scope = kc.Scope()
    scope.var("w").set(np.arange(12, dtype=np.float32).reshape(3, 4) / 10 - 0.5)
    kc.save_inference_model(tmp_path / "m", prog, scope, feed_names=["x"], fetch_names=["z"])
    loaded, params, feeds, fetches = kc.load_inference_model(tmp_path / "m")
    assert any(op.type == "feed" for op in loaded.global_block().ops)
    feed = {feeds[0]: np.ones((2, 3), np.float32)}
    exe = kc.Executor()
    tr = _agree(lambda: exe.run(loaded, feed=feed, scope=params))
    ops = tr.filter("op_run")
    matmul = next(e for e in ops if e.op_type == "matmul_v2")
    assert [(slot, shape, dtype) for slot, _, shape, dtype in matmul.inputs] == \
        [("X", (2, 3), "float32"), ("Y", (3, 4), "float32")]
