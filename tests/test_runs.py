"""What ran (per-op counts and time, ops that never ran) and the diff of two runs, on the engine and on the
graph widget's traits."""
from __future__ import annotations

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.observe.runs import diff_runs, what_ran
from test_contract import rnn_program
from test_control_flow import while_program
from test_widgets import views  # noqa: F401  - a stub view where the front end is not built


def test_what_ran_counts_loop_bodies_and_leaves_out_ops_that_never_ran():
    prog, scope, feed, out = rnn_program(T=4)
    with kc.trace() as tr:
        kc.Executor().run(prog, feed, [out], scope)
    ran = what_ran(tr)
    step_ops = len(prog.block(1).ops)
    assert all(ran[(1, i)].runs == 4 and len(ran[(1, i)].timesteps) == 4 for i in range(step_ops))
    assert ran[(0, 0)].runs == 1 and ran[(0, 0)].ns > 0
    x0 = np.ones((2, 3), np.float32)  # a while whose condition is false at once: its body never runs
    with kc.trace() as tr0:
        kc.Executor().run(while_program(0), feed={"x0": x0}, fetch_list=["x"], scope=kc.Scope())
    ran0 = what_ran(tr0)
    assert not any(b == 1 for b, _ in ran0) and (0, len(while_program(0).global_block().ops) - 1) in ran0


def test_diff_runs_names_the_ops_whose_outputs_differ_first_where_the_inputs_changed():
    prog, scope, feed, out = rnn_program(T=3)
    with kc.trace(retain="references") as a:
        kc.Executor().run(prog, feed, [out], scope)
    feed2 = {k: v.copy() for k, v in feed.items()}
    feed2["x"][2] += 1.0  # only the last timestep's input changes
    with kc.trace(retain="references") as b:
        kc.Executor().run(prog, feed2, [out], scope)
    diffs = diff_runs(a, b)
    assert diffs and all(d.timestep in (2, None) for d in diffs)  # t=0 and t=1 are equal in both runs
    assert diffs == sorted(diffs, key=lambda d: -d.max_abs)
    assert diff_runs(a, a) == []
    with kc.trace() as shapes_only:
        kc.Executor().run(prog, feed, [out], scope)
    with pytest.raises(kc.KernelcoreError, match="retain='references'"):
        diff_runs(a, shapes_only)


def test_the_graph_widget_carries_the_overlay():
    kw = pytest.importorskip("kernelcore_widgets")
    prog, scope, feed, out = rnn_program(T=3)
    with kc.trace(retain="references") as a:
        kc.Executor().run(prog, feed, [out], scope)
    feed["x"][1] *= 2
    with kc.trace(retain="references") as b:
        kc.Executor().run(prog, feed, [out], scope)
    g = kw.ProgramGraph(prog)
    g.show_run(b, compare=a)
    assert g.ran["o1:0"]["runs"] == 3 and g.ran["o0:0"]["runs"] == 1
    assert g.run_diff and all(k.startswith("o") for k in g.run_diff)
    assert set(g.run_diff) <= set(g.ran)
