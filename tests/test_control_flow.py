"""Control flow: recurrent, while, conditional_block, IfElse, against NumPy loops and Paddle 2.6.2.

References are NumPy loops written from the ops' descriptions, and Paddle's own
outputs for the programs Paddle wrote (tests/paddle_oracle/NOTES.md).
"""
import gc
import json
import os
import pathlib
import subprocess
import tracemalloc

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.runtime.executor import add_observer, remove_observer
from kernelcore.ops import control_flow
from kernelcore.ir.registry import has_op
from static_rnn_case import build_tanh_rnn, tanh_rnn_states

REPO = pathlib.Path(__file__).resolve().parent.parent
ORACLE = REPO / "tests" / "paddle_oracle"


# ---------------------------------------------------------------------------------------------------------
# helpers
def rnn_program(T, B, H, reverse=False):
    """The shared StaticRNN, element by element: h_t = tanh(x_t * w + h_{t-1} * u), out_t = h_t, w and u fed."""
    case = build_tanh_rnn(T, B, H, H, reverse=reverse, elementwise=True, params=False)
    return case.program, case.out, case.rnn


def rnn_feed(T, B, H, seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((T, B, H)).astype(np.float32),
            "h0": rng.standard_normal((B, H)).astype(np.float32),
            "w": rng.standard_normal(H).astype(np.float32),
            "u": rng.standard_normal(H).astype(np.float32)}


def rnn_numpy(feed, reverse=False):
    x = feed["x"].astype(np.float64)
    states = tanh_rnn_states(x, feed["h0"].astype(np.float64), feed["w"], feed["u"], reverse=reverse,
                             elementwise=True)
    return np.stack([states[t] for t in range(len(x))])


class ScopeCounter:
    """An observer counting live kid scopes (scope_push minus scope_drop) and their maximum."""

    def __init__(self):
        self.live = self.max_live = self.pushed = 0

    def __call__(self, ev):
        if ev.kind == "scope_push":
            self.live += 1
            self.pushed += 1
            self.max_live = max(self.max_live, self.live)
        elif ev.kind == "scope_drop":
            self.live -= 1


def observed(fn, observer):
    token = add_observer(observer)
    try:
        return fn()
    finally:
        remove_observer(token)


# ---------------------------------------------------------------------------------------------------------
# recurrent
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_recurrent_matches_numpy_loop(reverse):
    T, B, H = 7, 3, 4
    prog, out, _ = rnn_program(T, B, H, reverse)
    feed = rnn_feed(T, B, H)
    got, = kc.Executor().run(prog, feed=feed, fetch_list=[out], scope=kc.Scope())
    assert got.shape == (T, B, H) and got.dtype == np.float32
    np.testing.assert_allclose(got, rnn_numpy(feed, reverse), rtol=1e-6, atol=1e-6)


def test_recurrent_training_gives_the_same_outputs():
    T, B, H = 5, 2, 3
    prog, out, _ = rnn_program(T, B, H)
    feed = rnn_feed(T, B, H, seed=3)
    a, = kc.Executor().run(prog, feed=feed, fetch_list=[out], scope=kc.Scope())
    b, = kc.Executor().run(prog, feed=feed, fetch_list=[out], scope=kc.Scope(), training=True)
    np.testing.assert_array_equal(a, b)


def test_static_rnn_program_layout():
    """The op StaticRNN writes has Paddle's slots and attributes (NOTES.md's recurrent layout)."""
    prog, out, rnn = rnn_program(4, 2, 3)
    op = rnn.op
    assert op.type == "recurrent" and op.block.idx == 0
    assert op.input("inputs") == ["x"] and op.input("initial_states") == ["h0"]
    assert op.input("parameters") == ["w", "u"]
    assert op.output("outputs") == [out.name]
    step = prog.block(op.attr("sub_block"))
    assert step.parent_idx == 0
    assert step.var("x").shape == (2, 3)                     # one step of x, under x's own name
    assert step.var(out.name).shape == (2, 3) and out.shape == (4, 2, 3)
    (ex,), (st,) = op.attr("ex_states"), op.attr("states")
    assert step.has_var(ex) and step.has_var(st) and op.attr("has_states") is True
    assert prog.global_block().var(op.output("step_scopes")[0]).type == kc.ir.program.VT.STEP_SCOPES


def test_recurrent_two_memories_two_outputs_and_batch_ref_memory():
    """c_t = c_{t-1} + x_t; h_t = relu(h_{t-1} * 0.5 + c_t) with h booted from memory(shape, batch_ref)."""
    T, B, H = 6, 2, 3
    prog = kc.Program()
    with kc.program_guard(prog):
        blk = prog.global_block()
        x = blk.create_var("x", [T, B, H])
        c0 = blk.create_var("c0", [B, H])
        half = blk.create_var("half", [H])
        rnn = kc.layers.StaticRNN()
        with rnn.step():
            x_t = rnn.step_input(x)
            c = rnn.memory(init=c0)
            h = rnn.memory(shape=[-1, H], batch_ref=x_t, init_value=0.25)
            c_new = kc.op.elementwise_add(c, x_t)
            h_new = kc.op.relu(kc.op.elementwise_add(kc.op.elementwise_mul(h, half), c_new))
            rnn.update_memory(c, c_new)
            rnn.update_memory(h, h_new)
            rnn.output(c_new, h_new)
        cs, hs = rnn()
    rng = np.random.default_rng(5)
    feed = {"x": rng.standard_normal((T, B, H)).astype(np.float32),
            "c0": rng.standard_normal((B, H)).astype(np.float32), "half": np.full(H, 0.5, np.float32)}
    got_c, got_h = kc.Executor().run(prog, feed=feed, fetch_list=[cs, hs], scope=kc.Scope())
    c, h = feed["c0"].astype(np.float64), np.full((B, H), 0.25)
    want_c, want_h = [], []
    for t in range(T):
        c = c + feed["x"][t]
        h = np.maximum(h * 0.5 + c, 0)
        want_c.append(c)
        want_h.append(h)
    np.testing.assert_allclose(got_c, np.stack(want_c), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got_h, np.stack(want_h), rtol=1e-6, atol=1e-6)


def test_nested_static_rnns_keep_a_two_level_scope_tree_when_training():
    """An RNN over the rows of each step of an outer RNN: h_{i,t} = tanh(h_{i,t-1} * w + x[i, t]), h_{i,-1} = 0."""
    T1, T2, B, H = 3, 4, 2, 3
    prog = kc.Program()
    with kc.program_guard(prog):
        g = prog.global_block()
        x, w = g.create_var("x", [T1, T2, B, H]), g.create_var("w", [H])
        outer = kc.layers.StaticRNN(name="outer")
        with outer.step():
            xs = outer.step_input(x)
            inner = kc.layers.StaticRNN(name="inner")
            with inner.step():
                xt = inner.step_input(xs)
                h = inner.memory(shape=[-1, H], batch_ref=xt, init_value=0.0)
                h_new = kc.op.tanh(kc.op.elementwise_add(kc.op.elementwise_mul(h, w), xt))
                inner.update_memory(h, h_new)
                inner.step_output(h_new)
            outer.step_output(inner())
        out = outer()
    rng = np.random.default_rng(6)
    feed = {"x": rng.standard_normal((T1, T2, B, H)).astype(np.float32), "w": rng.standard_normal(H).astype(np.float32)}
    want = np.zeros((T1, T2, B, H))
    for i in range(T1):
        h = np.zeros((B, H))
        for t in range(T2):
            h = np.tanh(h * feed["w"] + feed["x"][i, t])
            want[i, t] = h
    scope = kc.Scope()
    got, = kc.Executor().run(prog, feed=feed, fetch_list=[out], scope=scope, training=True)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert [s.origin["timestep"] for s in scope.kids] == list(range(T1))
    assert all([k.origin["timestep"] for k in s.kids] == list(range(T2)) for s in scope.kids)
    got, = kc.Executor().run(prog, feed=feed, fetch_list=[out], scope=scope)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert scope.kids == []


def test_recurrent_with_rnn_memory_helper_like_old_static_rnn_programs():
    """Old StaticRNN programs copy states and outputs with rnn_memory_helper; built here with the block API."""
    T, B, H = 4, 2, 3
    prog = kc.Program()
    g = prog.global_block()
    g.create_var("x", [T, B, H])
    g.create_var("h0", [B, H])
    g.create_var("w", [H])
    step = prog.create_block(0)
    step.create_var("x", [B, H])
    step.create_var("pre_h", [B, H])
    step.append_op("elementwise_mul", {"X": ["pre_h"], "Y": ["w"]}, {"Out": ["hw"]})
    step.append_op("elementwise_add", {"X": ["hw"], "Y": ["x"]}, {"Out": ["s"]})
    step.append_op("sigmoid", {"X": ["s"]}, {"Out": ["h"]})
    step.append_op("rnn_memory_helper", {"X": ["h"]}, {"Out": ["h_state"]}, {"dtype": 5})
    step.append_op("rnn_memory_helper", {"X": ["h"]}, {"Out": ["h_out"]}, {"dtype": 5})
    prog.rollback()
    g.create_var("h_out", [T, B, H])
    g.create_var("scopes", type=kc.ir.program.VT.STEP_SCOPES)
    g.append_op("recurrent", {"inputs": ["x"], "initial_states": ["h0"], "parameters": ["w"]},
                {"outputs": ["h_out"], "step_scopes": ["scopes"]},
                {"sub_block": step, "has_states": True, "ex_states": ["pre_h"], "states": ["h_state"]})
    feed = rnn_feed(T, B, H, seed=9)
    got, = kc.Executor().run(prog, feed={k: feed[k] for k in ("x", "h0", "w")}, fetch_list=["h_out"],
                             scope=kc.Scope())
    h, want = feed["h0"].astype(np.float64), []
    for t in range(T):
        h = 1 / (1 + np.exp(-(h * feed["w"] + feed["x"][t])))
        want.append(h)
    np.testing.assert_allclose(got, np.stack(want), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_training_keeps_one_step_scope_per_timestep(reverse):
    T, B, H = 5, 2, 3
    prog, out, rnn = rnn_program(T, B, H, reverse)
    feed = rnn_feed(T, B, H, seed=1)
    scope = kc.Scope()
    got, = kc.Executor().run(prog, feed=feed, fetch_list=[out], scope=scope, training=True)
    op = rnn.op
    kept = scope.find_var(op.output("step_scopes")[0]).value
    assert len(kept) == T and scope.kids == kept
    order = list(range(T - 1, -1, -1)) if reverse else list(range(T))
    assert [s.origin["timestep"] for s in kept] == order
    step = prog.block(op.attr("sub_block"))
    declared = {v.name for v in step.vars}
    (ex,), (st,) = op.attr("ex_states"), op.attr("states")
    prev = None
    for s in kept:
        t = s.origin["timestep"]
        assert s.parent is scope and s.origin["op"] == "recurrent" and s.origin["op_idx"] == 0
        assert set(s.local_var_names()) == declared          # the step block's variables, each in the step scope
        np.testing.assert_array_equal(s.get("x"), feed["x"][t])  # x[t] under x's own name
        np.testing.assert_array_equal(s.get(out.name), got[t])
        np.testing.assert_array_equal(s.get(ex), feed["h0"] if prev is None else prev.get(st))
        assert "w" not in s.local_var_names()                 # parameters stay in the parent scope
        prev = s


def test_training_twice_drops_the_previous_runs_step_scopes():
    T, B, H = 3, 1, 2
    prog, out, _ = rnn_program(T, B, H)
    feed, scope, exe = rnn_feed(T, B, H), kc.Scope(), kc.Executor()
    exe.run(prog, feed=feed, fetch_list=[out], scope=scope, training=True)
    first = list(scope.kids)
    exe.run(prog, feed=feed, fetch_list=[out], scope=scope, training=True)
    assert len(scope.kids) == T and all(s.dropped for s in first)
    exe.run(prog, feed=feed, fetch_list=[out], scope=scope)  # inference after training: none left
    assert scope.kids == []


def test_inference_drops_step_scopes_and_holds_at_most_two():
    T, B, H = 50, 2, 3
    prog, out, rnn = rnn_program(T, B, H)
    feed, scope = rnn_feed(T, B, H), kc.Scope()
    counter = ScopeCounter()
    observed(lambda: kc.Executor().run(prog, feed=feed, fetch_list=[out], scope=scope), counter)
    assert counter.pushed == T and counter.live == 0 and counter.max_live <= 2
    assert scope.kids == [] and scope.find_var(rnn.op.output("step_scopes")[0]).value == []


def test_is_train_false_drops_step_scopes_even_when_training():
    prog, out, rnn = rnn_program(4, 1, 2)
    rnn.op.set_attr("is_train", False)
    scope = kc.Scope()
    kc.Executor().run(prog, feed=rnn_feed(4, 1, 2), fetch_list=[out], scope=scope, training=True)
    assert scope.kids == []


def _rnn_excess_peak(T, warm=1000):
    """Peak traced memory of an inference run of T steps beyond its output array. A first run of `warm`
    steps inside the traced window fills the prepared-block caches and Python's free lists, so the
    measured run sees only what it keeps alive itself."""
    B, H = 1, 2
    prog, out, _ = rnn_program(-1, B, H)  # any length
    scope, exe = kc.Scope(), kc.Executor()
    gc.collect()
    tracemalloc.start()
    try:
        exe.run(prog, feed=rnn_feed(warm, B, H), fetch_list=[out], scope=scope)
        feed = rnn_feed(T, B, H)
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        got, = exe.run(prog, feed=feed, fetch_list=[out], scope=scope)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.shape[0] == T
    return peak - base - got.nbytes


def test_inference_memory_stays_flat_over_10000_steps():
    small = _rnn_excess_peak(100)
    large = _rnn_excess_peak(10_000)
    # one step scope kept per step would be > 10 MB here; allow 64 KiB of noise (free lists, caches)
    assert large <= small + 64 * 1024, (small, large)


def test_trace_of_a_3_step_rnn_has_scope_push_and_step_events_in_order():
    prog, out, _ = rnn_program(3, 2, 2)
    with kc.trace() as tr:
        kc.Executor().run(prog, feed=rnn_feed(3, 2, 2), fetch_list=[out], scope=kc.Scope())
    evs = [e for e in tr.events if e.kind in ("scope_push", "step_begin", "step_end", "scope_drop")]
    pushes = [e for e in evs if e.kind == "scope_push"]
    assert [e.timestep for e in pushes] == [0, 1, 2]
    assert all(e.message == "recurrent step" and e.op_type == "recurrent" for e in pushes)
    seq = [(e.kind, e.timestep) for e in evs if e.kind != "scope_drop"]
    assert seq == [(k, t) for t in range(3) for k in ("scope_push", "step_begin", "step_end")]
    for t, push in enumerate(pushes):
        begin = next(e for e in tr.events if e.kind == "step_begin" and e.timestep == t)
        end = next(e for e in tr.events if e.kind == "step_end" and e.timestep == t)
        assert push.seq < begin.seq < end.seq and begin.scope == end.scope == push.scope
        ops = [e for e in tr.events if e.kind == "op_run" and begin.seq < e.seq < end.seq]
        assert ops and all(e.scope == push.scope and e.timestep == t and e.block == 1 for e in ops)
    assert sorted(e.scope for e in evs if e.kind == "scope_drop") == sorted(e.scope for e in pushes)


def test_recurrent_errors_name_the_timestep():
    prog, out, _ = rnn_program(4, 2, 3)
    feed = rnn_feed(4, 2, 3)
    scope = kc.Scope()
    scope.set("w", np.ones(5, np.float32))  # cannot broadcast against [2, 3]
    del feed["w"]
    with pytest.raises(kc.OpRunError) as e:
        kc.Executor().run(prog, feed=feed, fetch_list=[out], scope=scope)
    assert e.value.timestep == 0 and e.value.op_type == "elementwise_mul" and e.value.block_idx == 1


def test_recurrent_failure_leaves_scopes_for_the_next_run_to_drop():
    prog, out, rnn = rnn_program(4, 2, 3)
    feed, scope, exe = rnn_feed(4, 2, 3), kc.Scope(), kc.Executor()
    scope.set("w", np.ones(5, np.float32))  # cannot broadcast against [2, 3]
    with pytest.raises(kc.OpRunError):
        exe.run(prog, feed={k: v for k, v in feed.items() if k != "w"}, fetch_list=[out], scope=scope)
    left = list(scope.kids)
    assert len(left) == 1 and left[0].origin["timestep"] == 0  # the failing step, as it was
    exe.run(prog, feed=feed, fetch_list=[out], scope=scope)
    assert scope.kids == [] and left[0].dropped


def test_recurrent_rejects_sequences_of_different_lengths():
    T, B, H = 3, 1, 2
    prog = kc.Program()
    with kc.program_guard(prog):
        g = prog.global_block()
        x, y = g.create_var("x", [-1, B, H]), g.create_var("y", [-1, B, H])
        rnn = kc.layers.StaticRNN()
        with rnn.step():
            rnn.step_output(kc.op.elementwise_add(rnn.step_input(x), rnn.step_input(y)))
        out = rnn()
    feed = {"x": np.zeros((T, B, H), np.float32), "y": np.zeros((T + 1, B, H), np.float32)}
    with pytest.raises(kc.OpRunError, match="different lengths"):
        kc.Executor().run(prog, feed=feed, fetch_list=[out], scope=kc.Scope())


def test_static_rnn_misuse_is_reported():
    prog = kc.Program()
    with kc.program_guard(prog):
        g = prog.global_block()
        x, h0 = g.create_var("x", [3, 1, 2]), g.create_var("h0", [1, 2])
        rnn = kc.layers.StaticRNN()
        with pytest.raises(kc.ProgramError, match="inside"):
            rnn.step_input(x)
        with pytest.raises(kc.ProgramError, match="never updated"):
            with rnn.step():
                rnn.memory(init=h0)
                rnn.step_output(kc.op.relu(rnn.step_input(x)))
        with pytest.raises(kc.ProgramError, match="after its"):
            kc.layers.StaticRNN()()


# ---------------------------------------------------------------------------------------------------------
# while (ops from the math/tensor families: fill_constant, less_than, increment, assign)
def while_program(n_iter, body_scale=0.5):
    """i = 0; while i < n: x = x * s + 1; i += 1 (loop vars written back with assign, as Paddle does)."""
    prog = kc.Program()
    g = prog.global_block()
    g.create_var("x0", [2, 3])
    g.append_op("scale", {"X": ["x0"]}, {"Out": ["x"]}, {"scale": 1.0})
    g.append_op("fill_constant", outputs={"Out": ["i"]}, attrs={"shape": [1], "dtype": 3, "value": 0.0})
    g.append_op("fill_constant", outputs={"Out": ["n"]}, attrs={"shape": [1], "dtype": 3, "value": float(n_iter)})
    g.append_op("less_than", {"X": ["i"], "Y": ["n"]}, {"Out": ["cond"]})
    g.create_var("steps", type=kc.ir.program.VT.STEP_SCOPES)
    body = prog.create_block(0)
    body.append_op("scale", {"X": ["x"]}, {"Out": ["x_new"]}, {"scale": body_scale, "bias": 1.0})
    body.append_op("increment", {"X": ["i"]}, {"Out": ["i"]}, {"step": 1.0})
    body.append_op("less_than", {"X": ["i"], "Y": ["n"]}, {"Out": ["c_new"]})
    body.append_op("assign", {"X": ["x_new"]}, {"Out": ["x"]})
    body.append_op("assign", {"X": ["c_new"]}, {"Out": ["cond"]})
    prog.rollback()
    g.append_op("while", {"X": ["x", "i", "n"], "Condition": ["cond"]},
                {"Out": ["x", "i", "cond"], "StepScopes": ["steps"]}, {"sub_block": body})
    return prog


def need_ops(*types):
    missing = [t for t in types if not has_op(t)]
    if missing:
        pytest.skip(f"waiting on kernels for {missing}")


WHILE_OPS = ("scale", "fill_constant", "less_than", "increment", "assign")


def test_while_matches_numpy_loop():
    need_ops(*WHILE_OPS)
    x0 = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    x, i = kc.Executor().run(while_program(7), feed={"x0": x0}, fetch_list=["x", "i"], scope=kc.Scope())
    want = x0.astype(np.float64)
    for _ in range(7):
        want = want * 0.5 + 1
    np.testing.assert_allclose(x, want, rtol=1e-6)
    assert i.tolist() == [7]


def test_while_training_keeps_iteration_scopes_with_the_loop_vars_they_began_with():
    need_ops(*WHILE_OPS)
    x0 = np.arange(6, dtype=np.float32).reshape(2, 3)
    scope = kc.Scope()
    kc.Executor().run(while_program(4), feed={"x0": x0}, fetch_list=["x"], scope=scope, training=True)
    kept = scope.find_var("steps").value
    assert len(kept) == 4 and scope.kids == kept
    x = x0.astype(np.float64)
    for k, s in enumerate(kept):
        assert s.origin["timestep"] == k and s.origin["op"] == "while" and s.parent is scope
        np.testing.assert_allclose(s.get("x"), x)      # x as iteration k found it
        assert s.get("i").tolist() == [k]
        np.testing.assert_allclose(s.get("x_new"), x * 0.5 + 1)
        x = x * 0.5 + 1


def test_while_inference_drops_each_iteration_scope():
    need_ops(*WHILE_OPS)
    scope, counter = kc.Scope(), ScopeCounter()
    observed(lambda: kc.Executor().run(while_program(20), feed={"x0": np.ones((2, 3), np.float32)},
                                       fetch_list=["x"], scope=scope), counter)
    assert counter.pushed == 20 and counter.max_live == 1 and scope.kids == []


def test_while_that_never_runs():
    need_ops(*WHILE_OPS)
    x0 = np.ones((2, 3), np.float32)
    x, i = kc.Executor().run(while_program(0), feed={"x0": x0}, fetch_list=["x", "i"], scope=kc.Scope())
    np.testing.assert_array_equal(x, x0)
    assert i.tolist() == [0]


def test_while_iteration_cap_stops_an_endless_loop():
    need_ops(*WHILE_OPS)
    prog = while_program(1000)
    old = control_flow.set_max_while_iterations(25)
    try:
        with pytest.raises(kc.OpRunError, match="ran 25 iterations") as e:
            kc.Executor().run(prog, feed={"x0": np.ones((2, 3), np.float32)}, fetch_list=["x"], scope=kc.Scope())
        assert e.value.op_type == "while" and "'cond'" in str(e.value)
    finally:
        control_flow.set_max_while_iterations(old)
    assert control_flow.max_while_iterations() == old


def test_while_step_events_per_iteration():
    need_ops(*WHILE_OPS)
    with kc.trace() as tr:
        kc.Executor().run(while_program(3), feed={"x0": np.ones((2, 3), np.float32)}, fetch_list=["x"],
                          scope=kc.Scope())
    seq = [(e.kind, e.timestep) for e in tr.events if e.kind in ("scope_push", "step_begin", "step_end")]
    assert seq == [(k, t) for t in range(3) for k in ("scope_push", "step_begin", "step_end")]


# ---------------------------------------------------------------------------------------------------------
# conditional_block, scalar condition
def branch_program(is_scalar=True):
    """out = x * 2 if the branch runs (out is written by the block itself; it keeps x otherwise)."""
    prog = kc.Program()
    g = prog.global_block()
    g.create_var("x", [-1, 3])
    g.create_var("c", [1], "bool")
    g.append_op("assign", {"X": ["x"]}, {"Out": ["out"]})
    g.create_var("two", [1])
    g.create_var("sc", type=kc.ir.program.VT.STEP_SCOPES)
    blk = prog.create_block(0)
    blk.append_op("elementwise_mul", {"X": ["x"], "Y": ["two"]}, {"Out": ["y"]})
    blk.append_op("assign", {"X": ["y"]}, {"Out": ["out"]})
    prog.rollback()
    g.append_op("conditional_block", {"Cond": ["c"], "Input": ["x", "two"]}, {"Out": ["out"], "Scope": ["sc"]},
                {"sub_block": blk, "is_scalar_condition": is_scalar})
    return prog


@pytest.mark.parametrize("flag", [True, False])
def test_conditional_block_scalar_condition(flag):
    need_ops("assign")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    feed = {"x": x, "c": np.array([flag]), "two": np.array([2.0], np.float32)}
    scope = kc.Scope()
    out, = kc.Executor().run(branch_program(), feed=feed, fetch_list=["out"], scope=scope)
    np.testing.assert_array_equal(out, x * 2 if flag else x)
    assert scope.kids == []  # inference: the branch scope is dropped


def test_conditional_block_keeps_its_scope_when_training():
    need_ops("assign")
    feed = {"x": np.ones((2, 3), np.float32), "c": np.array([True]), "two": np.array([2.0], np.float32)}
    scope = kc.Scope()
    kc.Executor().run(branch_program(), feed=feed, fetch_list=["out"], scope=scope, training=True)
    (s,) = scope.find_var("sc").value
    assert scope.kids == [s] and s.origin["op"] == "conditional_block" and s.origin["timestep"] is None
    np.testing.assert_array_equal(s.get("y"), np.full((2, 3), 2.0))
    assert "out" not in s.local_var_names()  # the block wrote the outer variable


def test_conditional_block_not_scalar_runs_iff_every_input_is_non_empty():
    need_ops("assign")
    prog = branch_program(is_scalar=False)
    two = np.array([2.0], np.float32)
    out, = kc.Executor().run(prog, feed={"x": np.ones((2, 3), np.float32), "c": np.array([False]), "two": two},
                             fetch_list=["out"], scope=kc.Scope())
    np.testing.assert_array_equal(out, np.full((2, 3), 2.0))  # Cond is ignored: Input is non-empty
    out, = kc.Executor().run(prog, feed={"x": np.ones((0, 3), np.float32), "c": np.array([True]), "two": two},
                             fetch_list=["out"], scope=kc.Scope())
    assert out.shape == (0, 3)


def test_conditional_block_scalar_condition_must_be_one_element():
    need_ops("assign")
    feed = {"x": np.ones((2, 3), np.float32), "c": np.array([True, False]), "two": np.array([2.0], np.float32)}
    prog = branch_program()
    prog.global_block().var("c").set_shape([2], "bool")
    with pytest.raises(kc.OpRunError, match="exactly one element"):
        kc.Executor().run(prog, feed=feed, fetch_list=["out"], scope=kc.Scope())


# ---------------------------------------------------------------------------------------------------------
# IfElse: per-instance split, two conditional_blocks, merge
def ifelse_program():
    prog = kc.Program()
    with kc.program_guard(prog):
        g = prog.global_block()
        x = g.create_var("x", [-1, 3])
        y = g.create_var("y", [3])
        cond = g.create_var("cond", [-1, 1], "bool")
        ie = kc.layers.IfElse(cond)
        with ie.true_block():
            xt = ie.input(x)
            ie.output(kc.op.relu(kc.op.elementwise_add(xt, y)), kc.op.exp(xt))
        with ie.false_block():
            xf = ie.input(x)
            ie.output(kc.op.tanh(kc.op.elementwise_mul(xf, y)), kc.op.sigmoid(xf))
        outs = ie()
    return prog, outs, ie


def ifelse_numpy(x, y, mask):
    m = mask.reshape(-1)
    a = np.empty_like(x)
    b = np.empty_like(x)
    a[m], b[m] = np.maximum(x[m] + y, 0), np.exp(x[m])
    a[~m], b[~m] = np.tanh(x[~m] * y), 1 / (1 + np.exp(-x[~m]))
    return a, b


@pytest.mark.parametrize("mask", [[1, 0, 0, 1, 1, 0], [1] * 6, [0] * 6], ids=["mixed", "all-true", "all-false"])
def test_ifelse_equals_numpy_split_and_merge(mask):
    need_ops("assign")
    prog, outs, _ = ifelse_program()
    rng = np.random.default_rng(4)
    x = rng.standard_normal((6, 3)).astype(np.float32)
    y = rng.standard_normal(3).astype(np.float32)
    m = np.array(mask, bool).reshape(6, 1)
    scope = kc.Scope()
    a, b = kc.Executor().run(prog, feed={"x": x, "y": y, "cond": m}, fetch_list=outs, scope=scope)
    wa, wb = ifelse_numpy(x, y, m)
    np.testing.assert_allclose(a, wa, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(b, wb, rtol=1e-6, atol=1e-6)
    assert scope.kids == []


def test_ifelse_program_layout():
    need_ops("assign")
    prog, outs, ie = ifelse_program()
    types = [op.type for op in prog.global_block().ops]
    assert types == ["split_lod_tensor", "conditional_block", "conditional_block", "merge_lod_tensor",
                     "merge_lod_tensor"]
    for op in ie.ops:
        assert op.input("Cond") == ["cond"] and op.attr("is_scalar_condition") is False
        assert "y" in op.input("Input") and len(op.output("Out")) == 2


def test_ifelse_branches_run_in_their_own_scopes_and_are_kept_when_training():
    need_ops("assign")
    prog, outs, ie = ifelse_program()
    x = np.arange(12, dtype=np.float32).reshape(4, 3) - 5
    m = np.array([[True], [False], [True], [False]])
    scope = kc.Scope()
    kc.Executor().run(prog, feed={"x": x, "y": np.ones(3, np.float32), "cond": m}, fetch_list=outs, scope=scope,
                      training=True)
    assert len(scope.kids) == 2
    true_scope, false_scope = scope.kids
    assert true_scope.origin["op_idx"] == 1 and false_scope.origin["op_idx"] == 2
    assert true_scope is not false_scope and all(s.parent is scope for s in scope.kids)
    relu_out = next(n for n in true_scope.local_var_names() if n.startswith("relu"))
    np.testing.assert_array_equal(true_scope.get(relu_out), np.maximum(x[[0, 2]] + 1, 0))


# ---------------------------------------------------------------------------------------------------------
# Paddle 2.6.2's programs (tests/paddle_oracle): while, cond (conditional_block + select_input), a cond nested
# in a while, recurrent forward and reverse
@pytest.fixture(scope="session")
def paddle_p2(tmp_path_factory):
    """Paddle 2.6.2's control-flow programs and outputs, generated now into a tmp dir."""
    py2 = REPO / ".venv-paddle2" / "bin" / "python"
    if not py2.exists():
        pytest.skip("no .venv-paddle2: run `bash tests/paddle_oracle/setup_env.sh .venv-paddle2 2.6.2` to get "
                    "Paddle 2.6.2, the oracle for control flow")
    out = tmp_path_factory.mktemp("paddle_oracle")
    env = dict(os.environ, GLOG_minloglevel="1")
    tried = []
    if (REPO / ".venv-paddle" / "bin" / "python").exists():
        r = subprocess.run(["bash", str(ORACLE / "run_all.sh"), str(out)], capture_output=True, text=True,
                           env=env, timeout=600)
        tried.append(("run_all.sh", r))
        if r.returncode == 0:
            return out / "p2"
    # run_all.sh also needs the 3.3.1 venv; the control-flow cases need only 2.6.2
    r = subprocess.run([str(py2), str(ORACLE / "make_control_flow.py"), str(out / "p2")], capture_output=True,
                       text=True, env=env, timeout=600)
    tried.append(("make_control_flow.py", r))
    if r.returncode != 0:
        pytest.fail("Paddle 2.6.2 could not write the oracle programs:\n" +
                    "\n".join(f"{name}: rc {x.returncode}\n{x.stderr[-2000:]}" for name, x in tried))
    return out / "p2"


def load_case(p2, case):
    meta = json.loads((p2 / f"{case}.json").read_text())
    prog = kc.Program.from_bytes((p2 / f"{case}.pb").read_bytes(), source=f"{case}.pb")
    need_ops(*sorted({op.type for op in prog.all_ops()}))
    runs = [np.load(p2 / name) for name in meta["runs"]]
    return meta, prog, runs


def run_case(meta, prog, npz, training):
    scope = kc.Scope()
    for k in npz.files:
        if k.startswith("persist/"):
            scope.set(k[len("persist/"):], npz[k])
    feed = {n: npz[n] for n in meta["feed_names"]}
    outs = kc.Executor().run(prog, feed=feed, fetch_list=meta["fetch_names"], scope=scope, training=training)
    for i, got in enumerate(outs):
        want = npz[f"fetch_{i}"]
        assert got.shape == want.shape and got.dtype == want.dtype, (meta["fetch_names"][i], got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=meta["fetch_names"][i])
    return scope


CASES = ["while_loop", "cond", "while_cond", "recurrent", "recurrent_reverse"]


@pytest.mark.paddle
@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("case", CASES)
def test_paddle_program_gives_paddles_outputs(paddle_p2, case, training):
    meta, prog, runs = load_case(paddle_p2, case)
    for npz in runs:  # cond: run 0 takes the true branch, run 1 the false one
        scope = run_case(meta, prog, npz, training)
        if not training:
            assert scope.kids == []


@pytest.mark.paddle
def test_paddle_recurrent_keeps_its_step_scopes_when_training(paddle_p2):
    meta, prog, (npz,) = load_case(paddle_p2, "recurrent")
    scope = run_case(meta, prog, npz, training=True)
    kept = scope.find_var("rnn_step_scopes").value
    assert [s.origin["timestep"] for s in kept] == [0, 1, 2, 3, 4]
    for t, s in enumerate(kept):
        np.testing.assert_array_equal(s.get("x"), npz["x"][t])
        np.testing.assert_allclose(s.get("assign_1.tmp_0"), npz["fetch_0"][t], rtol=1e-5, atol=1e-6)


@pytest.mark.paddle
def test_paddle_while_cond_nests_branch_scopes_in_iteration_scopes(paddle_p2):
    meta, prog, (npz,) = load_case(paddle_p2, "while_cond")
    scope = run_case(meta, prog, npz, training=True)
    iterations = scope.kids
    assert [s.origin["what"] for s in iterations] == ["while iteration"] * 6
    for k, s in enumerate(iterations):
        (branch,) = s.kids  # one branch ran per iteration: x*2 while i < 3, x-1 after
        assert branch.origin["op"] == "conditional_block" and branch.origin["block"] == 1
        assert branch.origin["op_idx"] == (1 if k < 3 else 3)


# ---------------------------------------------------------------------------------------------------------
# the same programs on a GPU (tier 2): CuPy kernels against the NumPy run
needs_gpu = pytest.mark.skipif(not kc.gpu_available(), reason="needs CuPy and an NVIDIA GPU")


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_recurrent_on_gpu_matches_numpy(reverse, training):
    T, B, H = 6, 3, 4
    prog, out, _ = rnn_program(T, B, H, reverse)
    feed, scope = rnn_feed(T, B, H), kc.Scope()
    got, = kc.Executor(kc.GPUPlace(0)).run(prog, feed=feed, fetch_list=[out], scope=scope, training=training)
    np.testing.assert_allclose(got, rnn_numpy(feed, reverse), rtol=1e-5, atol=1e-6)
    assert len(scope.kids) == (T if training else 0)
    if training:
        assert str(kc.ScopeForest(scope)[scope.kids[0].id].vars["x"].place) == "GPUPlace(0)"


@pytest.mark.gpu
@needs_gpu
def test_ifelse_on_gpu_matches_numpy():
    need_ops("assign")
    prog, outs, _ = ifelse_program()
    rng = np.random.default_rng(8)
    x = rng.standard_normal((7, 3)).astype(np.float32)
    y = rng.standard_normal(3).astype(np.float32)
    m = (rng.random((7, 1)) > 0.5)
    a, b = kc.Executor(kc.GPUPlace(0)).run(prog, feed={"x": x, "y": y, "cond": m}, fetch_list=outs, scope=kc.Scope())
    wa, wb = ifelse_numpy(x, y, m)
    np.testing.assert_allclose(a, wa, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b, wb, rtol=1e-5, atol=1e-6)
