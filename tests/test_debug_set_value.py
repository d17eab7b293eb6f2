"""Interventions at a pause (DebugSession.set_value, kernelcore/observe/forks.py): the edit is an event of the
trace, time travel shows the value before and after it, and the run forks: the edited session and an unedited
twin. Which ops an edit may change is found from the program's own data flow, never from a run."""
import numpy as np
import pytest

import kernelcore as kc
from kernelcore.errors import KernelcoreError, ShapeError, UnknownNameError

from bert_style import build_encoder, encoder_feed


def _session(pause_at: int):
    program, out, shapes = build_encoder()
    feed = encoder_feed(shapes)
    scope = kc.Scope()
    for name, value in feed.items():
        scope.set(name, value)
    sess = kc.debug(program, fetch_list=[out.name], scope=scope)
    sess.run_to(0, pause_at)
    return program, out, feed, sess


def _downstream(program, first_op: int, name: str) -> set:
    """The ops from `first_op` on that read `name`, or read what such an op wrote, in program order."""
    tainted, ops = {name}, set()
    for op in program.global_block().ops[first_op:]:
        if tainted & set(op.input_arg_names):
            ops.add((0, op.idx))
            tainted |= set(op.output_arg_names)
    return ops


def _layer_norm_input(program) -> tuple[int, str]:
    op = next(op for op in program.global_block().ops if op.type == "layer_norm")
    return op.idx, op.input("X")[0]


def _query_projection(program) -> tuple[int, str]:
    """The op after layer 0's query projection, and that projection: the key and value projections that follow
    do not read it."""
    op = program.global_block().ops[0]
    assert op.type == "matmul_v2" and op.input("Y") == ["l0.wq"]
    return 1, op.output("Out")[0]


def test_zeroing_a_value_changes_exactly_the_ops_downstream_of_it():
    program, _, _ = build_encoder()
    k, name = _query_projection(program)
    program, out, feed, sess = _session(k)
    fork = sess.set_value(name, np.zeros_like(sess.value(name)))
    sess.cont()
    fork.twin.cont()
    cmp = fork.compare()  # rtol 0, atol 0: any change at all
    changed = {(d.block, d.op) for d in cmp.diffs if d.diverged}
    want = _downstream(program, k, name)
    assert len(want) < len(program.global_block().ops) - k  # some ops after the edit do not depend on it
    assert changed == want
    # the twin is the run without the edit: its result is a plain run's
    plain, = kc.Executor().run(program, feed=feed, fetch_list=[out.name], scope=kc.Scope())
    np.testing.assert_array_equal(fork.twin.result[0], plain)
    assert not np.array_equal(sess.result[0], plain)


def test_the_trace_records_the_edit_and_time_travel_shows_both_values():
    program, _, _ = build_encoder()
    k, name = _layer_norm_input(program)
    _, _, _, sess = _session(k)
    old = sess.value(name)
    fork = sess.set_value(name, np.full_like(old, 2.0))
    ev = sess.trace.events[fork.event]
    assert (ev.kind, ev.op_type, ev.name) == ("var_create", "set_value", name)
    np.testing.assert_array_equal(sess.goto(fork.event - 1).value(name), old)
    np.testing.assert_array_equal(sess.goto(fork.event).value(name), 2.0)
    np.testing.assert_array_equal(sess.value(name), 2.0)  # the cursor's own view shows the edit
    origin = sess.provenance(name)
    assert origin.kind == "set" and origin.event == fork.event
    sess.step()
    sess.back()
    np.testing.assert_array_equal(sess.view.value(name), 2.0)
    # the twin waits before the same op, with the old value
    assert fork.twin.position.innermost.op == k
    np.testing.assert_array_equal(fork.twin.value(name), old)


def test_bad_edits_are_refused_clearly():
    program, _, _ = build_encoder()
    k, name = _layer_norm_input(program)
    _, _, _, sess = _session(k)
    with pytest.raises(ShapeError, match="shape"):
        sess.set_value(name, np.zeros(3))
    with pytest.raises(UnknownNameError):
        sess.set_value("no_such_variable_anywhere", 0)
    sess.back()
    with pytest.raises(KernelcoreError, match="present"):
        sess.set_value(name, np.zeros_like(sess.value(name)))
    sess.present()
    sess.run_to_end()
    with pytest.raises(KernelcoreError, match="present"):
        sess.set_value(name, 0)
