"""Gradients through control flow: recurrent (StaticRNN, simple_rnn, lstm), conditional_block (IfElse, cond),
while.

* Central finite differences in float64 for every input, initial state and parameter: the analytic gradients
  come from one training run of the program append_backward wrote (recurrent_grad / conditional_block_grad and
  their grad sub-blocks); the numeric ones from two inference runs of the forward program per element.
* Scopes: the forward run keeps one step scope per timestep, the gradient op frees them, newest
  first; after the backward run no kid scope is left, and the trace shows the backward timesteps in reverse.
* Paddle 2.6.2: the backward programs Paddle's own append_backward writes run here and give Paddle's numbers;
  on Paddle's forward programs kernelcore writes Paddle's grad ops (cond and while_loop: op for op; recurrent:
  the same recurrent_grad op and grad block, plus the state's path that Paddle leaves out).
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.transforms.backward import GRAD_RULES, NoGradientError
from kernelcore.runtime.executor import add_observer, remove_observer
from static_rnn_case import build_tanh_rnn

L = kc.layers
REPO = Path(__file__).resolve().parent.parent
ORACLE = REPO / "tests" / "paddle_oracle"
rng = np.random.default_rng(20261123)


# ---------------------------------------------------------------------------------------------------------
# the finite-difference harness
def weighted_loss(block, outs):
    """loss = sum_k sum(out_k * w_k) with fixed random weights (fed), so every element's gradient differs."""
    parts, feed = [], {}
    for k, out in enumerate(outs):
        w = block.create_var(f"lw_{k}", out.shape, "float64", stop_gradient=True)
        feed[w.name] = rng.uniform(0.5, 1.5, out.shape)
        m = kc.op.elementwise_mul(out, w)
        parts.append(kc.op.reduce_sum(m, reduce_all=True, dim=[]))
    loss = parts[0] if len(parts) == 1 else kc.op.sum(parts)
    return loss, feed


def params_of(startup, main, seed=3):
    """Run the startup program; return its parameter values (float64) as feeds."""
    scope = kc.Scope()
    exe = kc.Executor()
    exe.seed(seed)
    exe.run(startup, scope=scope)
    return {v.name: np.array(scope.get(v.name)) for v in main.global_block().vars if v.is_parameter}


def run(prog, feed, fetch, training):
    return kc.Executor().run(prog, feed=feed, fetch_list=fetch, scope=kc.Scope(), training=training)


def numeric_grad(forward, feed, loss, name, eps=1e-6):
    x = feed[name]
    g = np.zeros(x.shape)
    for idx in np.ndindex(*x.shape):
        vals = []
        for sign in (1, -1):
            xp = x.copy()
            xp[idx] += sign * eps
            out, = run(forward, {**feed, name: xp}, [loss], False)
            vals.append(float(out))
        g[idx] = (vals[0] - vals[1]) / (2 * eps)
    return g


def check_fd(forward, prog, feed, loss, wrt, rtol=1e-6, atol=1e-8):
    """Analytic gradients (one training run of `prog`) against finite differences of `forward`."""
    got = run(prog, feed, [n + "@GRAD" for n in wrt], True)
    for n, g in zip(wrt, got):
        x = feed[n]
        assert g.shape == x.shape and g.dtype == x.dtype, (n, g.dtype, g.shape, x.shape)
        want = numeric_grad(forward, feed, loss, n)
        assert np.abs(want).max() > 1e-6, f"{n}: the loss does not depend on it; a useless check"
        np.testing.assert_allclose(g, want, rtol=rtol, atol=atol, err_msg=f"{n}@GRAD")


def backward(prog, loss):
    forward = prog.clone()
    kc.append_backward(prog.global_block().var(loss.name))
    return forward


# ---------------------------------------------------------------------------------------------------------
# StaticRNN, a tanh cell with parameters
T, B, D, H = 4, 2, 3, 3


def tanh_rnn(reverse=False):
    """h_t = tanh(x_t W + h_{t-1} U + b), h_{-1} = h0; loss = weighted sum of all h_t."""
    case = build_tanh_rnn(T, B, D, H, reverse=reverse, bias=True, dtype="float64")
    prog = case.program
    with kc.program_guard(prog):
        loss, feed = weighted_loss(prog.global_block(), [case.out])
    feed.update(x=rng.standard_normal((T, B, D)), h0=rng.standard_normal((B, H)), w=rng.standard_normal((D, H)) * 0.6,
                u=rng.standard_normal((H, H)) * 0.6, b=rng.standard_normal(H) * 0.3)
    return prog, loss, feed, case.rnn


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_static_rnn_gradients_match_finite_differences(reverse):
    prog, loss, feed, _ = tanh_rnn(reverse)
    forward = backward(prog, loss)
    check_fd(forward, prog, feed, loss.name, ["x", "h0", "w", "u", "b"])


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_static_rnn_gradients_match_a_numpy_bptt(reverse):
    """The same gradients from backpropagation through time written in NumPy (an independent reference)."""
    prog, loss, feed, _ = tanh_rnn(reverse)
    backward(prog, loss)
    got = run(prog, feed, ["x@GRAD", "h0@GRAD", "w@GRAD", "u@GRAD", "b@GRAD"], True)
    x, h0, w, u, b, lw = (feed[k] for k in ("x", "h0", "w", "u", "b", "lw_0"))
    order = list(range(T - 1, -1, -1)) if reverse else list(range(T))
    hs, prev = {}, {}
    h = h0
    for t in order:
        prev[t] = h
        h = hs[t] = np.tanh(x[t] @ w + h @ u + b)
    gx, gw, gu, gb = np.zeros_like(x), np.zeros_like(w), np.zeros_like(u), np.zeros_like(b)
    carry = np.zeros_like(h0)
    for t in reversed(order):
        dpre = (lw[t] + carry) * (1 - hs[t] ** 2)
        gx[t], gw, gu, gb = dpre @ w.T, gw + x[t].T @ dpre, gu + prev[t].T @ dpre, gb + dpre.sum(0)
        carry = dpre @ u.T
    for g, want in zip(got, (gx, carry, gw, gu, gb)):
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-14)


def test_recurrent_grad_program_layout():
    """Paddle's layout: recurrent_grad with every forward slot, outputs@GRAD, step_scopes (twice), the wanted
    input gradients and the forward attributes; its sub_block a new block (parent: block 0, forward_block_idx:
    the step block) declaring the step's gradients with one step's shapes."""
    prog, loss, _, rnn = tanh_rnn()
    pairs = kc.append_backward(prog.global_block().var(loss.name))
    assert [(p.name, g.name) for p, g in pairs] == [("w", "w@GRAD"), ("u", "u@GRAD"), ("b", "b@GRAD")]
    op = rnn.op
    (rg,) = [o for o in prog.global_block().ops if o.type == "recurrent_grad"]
    out, ss = op.output("outputs"), op.output("step_scopes")
    assert rg.inputs == {"inputs": ["x"], "initial_states": ["h0"], "parameters": ["w", "u", "b"], "outputs": out,
                         "outputs@GRAD": [out[0] + "@GRAD"], "step_scopes": ss, "step_scopes@GRAD": ss}
    assert rg.outputs == {"inputs@GRAD": ["x@GRAD"], "initial_states@GRAD": ["h0@GRAD"],
                          "parameters@GRAD": ["w@GRAD", "u@GRAD", "b@GRAD"]}
    for a in ("ex_states", "states", "has_states", "reverse", "is_train"):
        assert rg.attr(a) == op.attr(a), a
    assert rg.attr("op_role") == 1 and set(rg.attr("op_role_var")) == {"w", "w@GRAD", "u", "u@GRAD", "b", "b@GRAD"}
    step, gb = prog.block(op.attr("sub_block")), prog.block(rg.attr("sub_block"))
    assert gb.idx == prog.num_blocks - 1 and gb.parent_idx == 0 and gb.forward_block_idx == step.idx
    assert gb.var("x@GRAD").shape == (B, D) and prog.global_block().var("x@GRAD").shape == (T, B, D)
    assert gb.var("w@GRAD").shape == (D, H)
    (ex,), (st,) = op.attr("ex_states"), op.attr("states")
    assert gb.has_var(ex + "@GRAD")
    reads = {n for o in gb.ops for n in o.input_arg_names}
    assert {out[0] + "@GRAD", st + "@GRAD"} <= reads  # both the output's and the state's gradient flow in
    assert all(o.attr("op_role") == 1 for o in gb.ops)


def test_only_wanted_gradients_are_written():
    """h0 and x stop_gradient: only the parameters' gradients, positions of the others left out."""
    prog, loss, feed, _ = tanh_rnn()
    g = prog.global_block()
    g.var("x").set_stop_gradient(True)
    g.var("h0").set_stop_gradient(True)
    forward = backward(prog, loss)
    (rg,) = [o for o in g.ops if o.type == "recurrent_grad"]
    assert rg.outputs == {"parameters@GRAD": ["w@GRAD", "u@GRAD", "b@GRAD"]}
    assert not g.has_var("x@GRAD") and not g.has_var("h0@GRAD")
    check_fd(forward, prog, feed, loss.name, ["u"])


# ---------------------------------------------------------------------------------------------------------
# LSTM (kc.layers.lstm): split gates, sigmoid/tanh, two memories, projections outside the loop
@pytest.mark.parametrize("given_states", [True, False], ids=["h0_c0", "zero_boot"])
def test_lstm_gradients_match_finite_differences(given_states):
    Tl, Bl, Dl, Hl = 4, 2, 3, 2
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        g = main.global_block()
        x = L.data("x", [Tl, Bl, Dl], "float64", stop_gradient=False)
        h0 = L.data("h0", [Bl, Hl], "float64", stop_gradient=False) if given_states else None
        c0 = L.data("c0", [Bl, Hl], "float64", stop_gradient=False) if given_states else None
        seq = L.lstm(x, Hl, h0=h0, c0=c0, name="lstm")
        last = L.sequence_last(seq)
        loss, feed = weighted_loss(g, [seq, last])
    feed.update(params_of(startup, main))
    feed["x"] = rng.standard_normal((Tl, Bl, Dl))
    wrt = ["x", "lstm.w_0", "lstm.w_1", "lstm.b_0"]
    feed["lstm.b_0"] = rng.standard_normal(4 * Hl) * 0.3  # zeros at init: move off them
    if given_states:
        feed.update(h0=rng.standard_normal((Bl, Hl)), c0=rng.standard_normal((Bl, Hl)))
        wrt += ["h0", "c0"]
    forward = backward(main, loss)
    check_fd(forward, main, feed, loss.name, wrt)


def test_simple_rnn_layer_gradients_match_finite_differences():
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        x = L.data("x", [3, 2, 4], "float64", stop_gradient=False)
        seq = L.simple_rnn(x, 3, name="srnn")
        loss, feed = weighted_loss(main.global_block(), [L.sequence_last(seq)])
    feed.update(params_of(startup, main))
    feed["x"] = rng.standard_normal((3, 2, 4))
    feed["srnn.b_0"] = rng.standard_normal(3) * 0.3
    forward = backward(main, loss)
    check_fd(forward, main, feed, loss.name, ["x", "srnn.w_0", "srnn.w_1", "srnn.b_0"])


# ---------------------------------------------------------------------------------------------------------
# programs written with the block API, as Paddle and old StaticRNN programs are
def paddle_style_rnn():
    """states = [h, c] themselves (no copies), each read again inside the step: h by the output's
    rnn_memory_helper, c by the sigmoid; c is also the second output (its gradient at t: the output's plus the
    carried one). h@GRAD and c@GRAD get the given gradient and the step's own contributions, summed."""
    prog = kc.Program()
    g = prog.global_block()
    for name, shape in (("x", [T, B, H]), ("h0", [B, H]), ("c0", [B, H]), ("w", [H])):
        g.create_var(name, shape, "float64")
    step = prog.create_block(0)
    for name in ("x", "pre_h", "pre_c"):
        step.create_var(name, [B, H], "float64")
    step.append_op("elementwise_mul", {"X": ["pre_h"], "Y": ["w"]}, {"Out": ["hw"]})
    step.append_op("elementwise_add", {"X": ["hw"], "Y": ["x"]}, {"Out": ["s"]})
    step.append_op("elementwise_add", {"X": ["s"], "Y": ["pre_c"]}, {"Out": ["c"]})
    step.append_op("sigmoid", {"X": ["c"]}, {"Out": ["h"]})
    step.append_op("rnn_memory_helper", {"X": ["h"]}, {"Out": ["h_out"]}, {"dtype": 6})
    prog.rollback()
    g.create_var("h_out", [T, B, H], "float64")
    g.create_var("c", [T, B, H], "float64")
    g.create_var("scopes", type=kc.ir.program.VT.STEP_SCOPES)
    g.append_op("recurrent", {"inputs": ["x"], "initial_states": ["h0", "c0"], "parameters": ["w"]},
                {"outputs": ["h_out", "c"], "step_scopes": ["scopes"]},
                {"sub_block": step, "has_states": True, "ex_states": ["pre_h", "pre_c"], "states": ["h", "c"]})
    with kc.program_guard(prog):
        loss, feed = weighted_loss(g, [g.var("h_out"), g.var("c")])
    feed.update(x=rng.standard_normal((T, B, H)), h0=rng.standard_normal((B, H)), c0=rng.standard_normal((B, H)),
                w=rng.standard_normal(H))
    return prog, loss, feed


def test_block_api_rnn_with_states_read_inside_the_step():
    prog, loss, feed = paddle_style_rnn()
    forward = backward(prog, loss)
    gb = prog.block(prog.global_block().ops[-1].attr("sub_block"))
    sums = [o for o in gb.ops if o.type == "sum" and o.output("Out") in (["h@GRAD"], ["c@GRAD"])]
    assert sums and all(o.input("X")[0] in ("h@GRAD", "c@GRAD") for o in sums)  # the given gradient, plus ...
    assert "rnn_memory_helper_grad" in [o.type for o in gb.ops]
    check_fd(forward, prog, feed, loss.name, ["x", "h0", "c0", "w"])


def test_nested_static_rnn_gradients_match_finite_differences():
    """An RNN over the rows of each step of an outer RNN, with a parameter used at both levels: the inner
    recurrent_grad sits in the outer grad block, its grad block a kid of that one."""
    T1, T2, Bn, Hn = 3, 2, 2, 2
    prog = kc.Program()
    with kc.program_guard(prog):
        g = prog.global_block()
        x = g.create_var("x", [T1, T2, Bn, Hn], "float64")
        w = g.create_parameter("w", [Hn], "float64")
        hh0 = g.create_var("hh0", [Bn, Hn], "float64")
        outer = L.StaticRNN(name="outer")
        with outer.step():
            xs = outer.step_input(x)
            hh = outer.memory(init=hh0)
            inner = L.StaticRNN(name="inner")
            with inner.step():
                xt = inner.step_input(xs)
                h = inner.memory(init=hh)
                h_new = kc.op.tanh(kc.op.elementwise_add(kc.op.elementwise_mul(h, w), xt))
                inner.update_memory(h, h_new)
                inner.step_output(h_new)
            seq = inner()
            outer.update_memory(hh, kc.op.reduce_mean(seq, dim=[0]))
            outer.step_output(seq)
        out = outer()
        loss, feed = weighted_loss(g, [out])
    feed.update(x=rng.standard_normal((T1, T2, Bn, Hn)), w=rng.standard_normal(Hn), hh0=rng.standard_normal((Bn, Hn)))
    forward = backward(prog, loss)
    grads = [o for b in prog.blocks for o in b.ops if o.type == "recurrent_grad"]
    assert len(grads) == 2
    outer_gb = prog.block(grads[0].attr("sub_block"))
    assert grads[1].block.idx == outer_gb.idx and prog.block(grads[1].attr("sub_block")).parent_idx == outer_gb.idx
    check_fd(forward, prog, feed, loss.name, ["x", "w", "hh0"])
    counter = ScopeCounter()
    token = add_observer(counter)
    try:
        scope = kc.Scope()
        kc.Executor().run(prog, feed=feed, fetch_list=["w@GRAD"], scope=scope, training=True)
    finally:
        remove_observer(token)
    assert counter.pushed == T1 + T1 * T2 and counter.live == 0 and scope.kids == []


# ---------------------------------------------------------------------------------------------------------
# scopes and trace events of the backward run
class ScopeCounter:
    def __init__(self):
        self.live = self.max_live = self.pushed = self.dropped = 0

    def __call__(self, ev):
        if ev.kind == "scope_push":
            self.live += 1
            self.pushed += 1
            self.max_live = max(self.max_live, self.live)
        elif ev.kind == "scope_drop":
            self.live -= 1
            self.dropped += 1


def test_backward_drops_every_step_scope():
    prog, loss, feed, rnn = tanh_rnn()
    backward(prog, loss)
    counter = ScopeCounter()
    token = add_observer(counter)
    scope = kc.Scope()
    try:
        kc.Executor().run(prog, feed=feed, fetch_list=["w@GRAD"], scope=scope, training=True)
        assert counter.pushed == T and counter.max_live == T  # all kept until the backward op
        assert counter.live == 0 and counter.dropped == T
        assert scope.kids == []
        assert scope.find_var(rnn.op.output("step_scopes")[0]).value == []
        # a second training step in the same scope works the same way
        a, = kc.Executor().run(prog, feed=feed, fetch_list=["w@GRAD"], scope=scope, training=True)
    finally:
        remove_observer(token)
    assert counter.live == 0 and scope.kids == []
    b, = run(prog, feed, ["w@GRAD"], True)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_trace_shows_backward_timesteps_newest_first(reverse):
    prog, loss, feed, rnn = tanh_rnn(reverse)
    backward(prog, loss)
    with kc.trace() as tr:
        kc.Executor().run(prog, feed=feed, fetch_list=["w@GRAD"], scope=kc.Scope(), training=True)
    fwd_order = list(range(T - 1, -1, -1)) if reverse else list(range(T))
    begins = [e for e in tr.events if e.kind == "step_begin"]
    assert [e.timestep for e in begins if e.op_type == "recurrent"] == fwd_order
    assert [e.timestep for e in begins if e.op_type == "recurrent_grad"] == fwd_order[::-1]
    pushes = {e.timestep: e.scope for e in tr.events if e.kind == "scope_push"}
    for e in (e for e in begins if e.op_type == "recurrent_grad"):
        assert e.scope == pushes[e.timestep]  # the backward step runs in the forward step's scope
        end = next(x for x in tr.events if x.kind == "step_end" and x.op_type == "recurrent_grad"
                   and x.timestep == e.timestep)
        drop = next(x for x in tr.events if x.kind == "scope_drop" and x.scope == e.scope)
        ops = [x for x in tr.events if x.kind == "op_run" and e.seq < x.seq < end.seq]
        assert ops and all(x.scope == e.scope and x.timestep == e.timestep for x in ops)
        assert all(x.block == prog.block(rnn.op.attr("sub_block")).idx + 1 for x in ops)  # the grad block
        assert end.seq < drop.seq  # dropped once its backward step is done ...
        later = [x for x in begins if x.op_type == "recurrent_grad" and x.seq > e.seq]
        assert all(drop.seq < x.seq for x in later)  # ... before the next (older) one begins


def test_backward_after_an_inference_forward_is_an_error():
    """The step scopes are kept only when training: a backward run without them says so."""
    prog, loss, feed, _ = tanh_rnn()
    backward(prog, loss)
    with pytest.raises(kc.OpRunError, match="training=True") as e:
        run(prog, feed, ["w@GRAD"], False)
    assert e.value.op_type == "recurrent_grad"


def test_a_recurrent_op_that_keeps_no_scopes_cannot_be_differentiated():
    prog, loss, _, rnn = tanh_rnn()
    rnn.op.set_attr("is_train", False)
    before = str(prog)
    with pytest.raises(kc.ProgramError, match="is_train=false"):
        kc.append_backward(prog.global_block().var(loss.name))
    assert str(prog) == before


def test_a_failed_backward_leaves_the_program_as_it_was(monkeypatch):
    prog, loss, _, _ = tanh_rnn()
    before, nblocks = str(prog), prog.num_blocks
    monkeypatch.delitem(GRAD_RULES, "tanh")
    with pytest.raises(NoGradientError, match=r"op 'tanh' \(block 1, op #4\)"):
        kc.append_backward(prog.global_block().var(loss.name))
    assert str(prog) == before and prog.num_blocks == nblocks


# ---------------------------------------------------------------------------------------------------------
# while: loop variables written back under their own names, iteration scopes holding their starting values
def while_program(n_iter=3):
    """h = h0; while i < n: h = tanh(h * w + x); i += 1 (Paddle's while_loop layout); loss = weighted sum(h)."""
    prog = kc.Program()
    g = prog.global_block()
    g.create_var("x", [2, 3], "float64")
    g.create_parameter("w", [3], "float64")
    g.create_var("h0", [2, 3], "float64")
    for name, dtype in (("i", "int64"), ("n", "int64"), ("cond", "bool")):
        g.create_var(name, [1], dtype, stop_gradient=True)
    g.create_var("ss", type=kc.ir.program.VT.STEP_SCOPES)
    g.append_op("fill_constant", {}, {"Out": ["i"]}, {"shape": [1], "dtype": 3, "value": 0.0})
    g.append_op("fill_constant", {}, {"Out": ["n"]}, {"shape": [1], "dtype": 3, "value": float(n_iter)})
    g.append_op("scale", {"X": ["h0"]}, {"Out": ["h"]}, {"scale": 1.0})  # a copy: the loop writes h back
    g.append_op("less_than", {"X": ["i"], "Y": ["n"]}, {"Out": ["cond"]})
    body = prog.create_block(0)
    body.append_op("elementwise_mul", {"X": ["h"], "Y": ["w"]}, {"Out": ["t1"]})
    body.append_op("elementwise_add", {"X": ["t1"], "Y": ["x"]}, {"Out": ["t2"]})
    body.append_op("tanh", {"X": ["t2"]}, {"Out": ["t3"]})
    body.append_op("increment", {"X": ["i"]}, {"Out": ["i"]}, {"step": 1.0})
    body.append_op("less_than", {"X": ["i"], "Y": ["n"]}, {"Out": ["c2"]})
    body.append_op("assign", {"X": ["t3"]}, {"Out": ["h"]})
    body.append_op("assign", {"X": ["c2"]}, {"Out": ["cond"]})
    prog.rollback()
    g.append_op("while", {"X": ["w", "i", "h", "x", "n"], "Condition": ["cond"]},
                {"Out": ["i", "h", "cond"], "StepScopes": ["ss"]}, {"sub_block": body})
    with kc.program_guard(prog):
        loss, feed = weighted_loss(g, [g.var("h")])
    feed.update(x=rng.standard_normal((2, 3)), h0=rng.standard_normal((2, 3)), w=rng.standard_normal(3))
    return prog, loss, feed


def test_while_gradients_match_finite_differences():
    prog, loss, feed = while_program()
    forward = backward(prog, loss)
    (wg,) = [o for o in prog.global_block().ops if o.type == "while_grad"]
    assert wg.input("Out@GRAD") == ["h@GRAD"] and wg.attr("original_output_grad") == ["h@GRAD"]
    assert wg.output("X@GRAD") == ["w@GRAD", "@EMPTY@", "h@GRAD", "x@GRAD", "@EMPTY@"]  # h's: in place
    gb = prog.block(wg.attr("sub_block"))
    assert gb.parent_idx == 0 and gb.forward_block_idx == 1
    check_fd(forward, prog, feed, loss.name, ["x", "h0", "w"])


def test_while_backward_drops_each_iteration_scope_last_first():
    prog, loss, feed = while_program()
    backward(prog, loss)
    scope = kc.Scope()
    with kc.trace() as tr:
        kc.Executor().run(prog, feed=feed, fetch_list=["w@GRAD"], scope=scope, training=True)
    begins = [e for e in tr.events if e.kind == "step_begin"]
    assert [e.timestep for e in begins if e.op_type == "while"] == [0, 1, 2]
    assert [e.timestep for e in begins if e.op_type == "while_grad"] == [2, 1, 0]
    pushed = [e.scope for e in tr.events if e.kind == "scope_push"]
    dropped = [e.scope for e in tr.events if e.kind == "scope_drop"]
    assert dropped == pushed[::-1] and scope.kids == []


def test_while_that_never_runs_passes_the_gradient_through():
    prog, loss, feed = while_program(n_iter=0)
    backward(prog, loss)
    gh, gw, gx = run(prog, feed, ["h0@GRAD", "w@GRAD", "x@GRAD"], True)
    np.testing.assert_array_equal(gh, feed["lw_0"])  # h = h0: loss = sum(h0 * lw)
    np.testing.assert_array_equal(gw, np.zeros(3))
    np.testing.assert_array_equal(gx, np.zeros((2, 3)))


def test_while_backward_after_an_inference_forward_is_an_error():
    prog, loss, feed = while_program()
    backward(prog, loss)
    with pytest.raises(kc.OpRunError, match="training=True") as e:
        run(prog, feed, ["w@GRAD"], False)
    assert e.value.op_type == "while_grad"


# ---------------------------------------------------------------------------------------------------------
# conditional_block: IfElse (per-row branches) and cond (a scalar predicate + select_input)
def ifelse_program():
    prog = kc.Program()
    with kc.program_guard(prog):
        g = prog.global_block()
        x = g.create_var("x", [6, 3], "float64")
        w = g.create_parameter("w", [3, 2], "float64")
        v = g.create_parameter("v", [3, 2], "float64")
        cond = g.create_var("cond", [6, 1], "bool", stop_gradient=True)
        ie = L.IfElse(cond)
        with ie.true_block():
            xt = ie.input(x)
            ie.output(kc.op.tanh(kc.op.matmul_v2(xt, w)))
        with ie.false_block():
            xf = ie.input(x)
            ie.output(kc.op.sigmoid(kc.op.matmul_v2(kc.op.exp(xf), v)))
        out, = ie()
        loss, feed = weighted_loss(g, [out])
    feed.update(x=rng.standard_normal((6, 3)) * 0.7, w=rng.standard_normal((3, 2)), v=rng.standard_normal((3, 2)))
    return prog, loss, feed


@pytest.mark.parametrize("mask", [[1, 0, 0, 1, 1, 0], [1] * 6, [0] * 6], ids=["mixed", "all_true", "all_false"])
def test_ifelse_gradients_match_finite_differences(mask):
    prog, loss, feed = ifelse_program()
    feed["cond"] = np.array(mask, bool).reshape(6, 1)
    forward = backward(prog, loss)
    types = [o.type for o in prog.global_block().ops]
    assert types.count("conditional_block_grad") == 2 and "merge_lod_tensor" in types[5:]
    assert "split_lod_tensor" in types[5:]
    used = ["x"] + (["w"] if any(mask) else []) + (["v"] if not all(mask) else [])
    check_fd(forward, prog, feed, loss.name, used)
    unused = {"w", "v"} - set(used)  # the branch that did not run: zeros
    for n in unused:
        g, = run(prog, feed, [n + "@GRAD"], True)
        np.testing.assert_array_equal(g, np.zeros_like(feed[n]))
    scope = kc.Scope()
    kc.Executor().run(prog, feed=feed, fetch_list=["x@GRAD"], scope=scope, training=True)
    assert scope.kids == []  # each branch scope dropped by its gradient op


def cond_program():
    """Paddle's cond layout (tests/paddle_oracle/NOTES.md): a = (exp(x)*2 + y) if 0 < mean(p) else x*y."""
    prog = kc.Program()
    g = prog.global_block()
    for name in ("x", "y"):
        g.create_var(name, [3, 4], "float64")
    g.create_var("p", [1], "float64", stop_gradient=True)
    g.create_var("zero", [], "float64", stop_gradient=True)
    g.append_op("fill_constant", {}, {"Out": ["zero"]}, {"shape": [], "dtype": 6, "value": 0.0})
    g.append_op("reduce_mean", {"X": ["p"]}, {"Out": ["mp"]}, {"reduce_all": True, "dim": []})
    g.append_op("less_than", {"X": ["zero"], "Y": ["mp"]}, {"Out": ["pred"]})
    for name in ("a_true", "a_false"):
        g.create_var(name, [3, 4], "float64")
    for name in ("s_true", "s_false"):
        g.create_var(name, type=kc.ir.program.VT.STEP_SCOPES)
    tb = prog.create_block(0)
    tb.append_op("exp", {"X": ["x"]}, {"Out": ["e"]})
    tb.append_op("scale", {"X": ["e"]}, {"Out": ["e2"]}, {"scale": 2.0})
    tb.append_op("elementwise_add", {"X": ["e2"], "Y": ["y"]}, {"Out": ["t"]})
    tb.append_op("assign", {"X": ["t"]}, {"Out": ["a_true"]})
    prog.rollback()
    g.append_op("conditional_block", {"Cond": ["pred"], "Input": ["y", "x"]}, {"Out": ["a_true"], "Scope": ["s_true"]},
                {"sub_block": tb, "is_scalar_condition": True})
    g.append_op("logical_not", {"X": ["pred"]}, {"Out": ["not_pred"]})
    fb = prog.create_block(0)
    fb.append_op("elementwise_mul", {"X": ["x"], "Y": ["y"]}, {"Out": ["m"]})
    fb.append_op("assign", {"X": ["m"]}, {"Out": ["a_false"]})
    prog.rollback()
    g.append_op("conditional_block", {"Cond": ["not_pred"], "Input": ["y", "x"]},
                {"Out": ["a_false"], "Scope": ["s_false"]}, {"sub_block": fb, "is_scalar_condition": True})
    g.append_op("cast", {"X": ["pred"]}, {"Out": ["mask"]}, {"in_dtype": 0, "out_dtype": 2})
    g.append_op("select_input", {"X": ["a_false", "a_true"], "Mask": ["mask"]}, {"Out": ["a"]})
    with kc.program_guard(prog):
        loss, feed = weighted_loss(g, [g.var("a")])
    feed.update(x=rng.standard_normal((3, 4)), y=rng.standard_normal((3, 4)))
    return prog, loss, feed


@pytest.mark.parametrize("p", [0.5, -0.5], ids=["true_branch", "false_branch"])
def test_cond_gradients_match_finite_differences(p):
    prog, loss, feed = cond_program()
    feed["p"] = np.array([p])
    forward = backward(prog, loss)
    types = [o.type for o in prog.global_block().ops]
    assert types[-5:] == ["select_output", "conditional_block_grad", "conditional_block_grad", "sum", "sum"]
    check_fd(forward, prog, feed, loss.name, ["x", "y"])


def test_branch_output_read_again_inside_the_branch():
    """o1 = tanh(x) is a branch output that the branch reads again (o2 = o1 * y): o1's gradient is the one
    from outside (Out@GRAD) plus the branch's own, summed under a fresh name inside the grad block, since the
    outer o1@GRAD must stay as it is."""
    prog = kc.Program()
    g = prog.global_block()
    for name in ("x", "y", "o1", "o2"):
        g.create_var(name, [2, 3], "float64")
    g.create_var("pred", [], "bool", stop_gradient=True)
    g.create_var("s", type=kc.ir.program.VT.STEP_SCOPES)
    br = prog.create_block(0)
    br.append_op("tanh", {"X": ["x"]}, {"Out": ["t"]})
    br.append_op("assign", {"X": ["t"]}, {"Out": ["o1"]})
    br.append_op("elementwise_mul", {"X": ["o1"], "Y": ["y"]}, {"Out": ["m"]})
    br.append_op("assign", {"X": ["m"]}, {"Out": ["o2"]})
    prog.rollback()
    g.append_op("conditional_block", {"Cond": ["pred"], "Input": ["x", "y"]}, {"Out": ["o1", "o2"], "Scope": ["s"]},
                {"sub_block": br, "is_scalar_condition": True})
    with kc.program_guard(prog):
        loss, feed = weighted_loss(g, [g.var("o1"), g.var("o2")])
    feed.update(x=rng.standard_normal((2, 3)), y=rng.standard_normal((2, 3)), pred=np.array(True))
    forward = backward(prog, loss)
    gb = prog.block(g.ops[-1].attr("sub_block"))
    (total,) = [o for o in gb.ops if o.type == "sum"]
    assert total.input("X")[0] == "o1@GRAD" and total.output("Out") != ["o1@GRAD"]
    assert not gb.has_var("o1@GRAD")  # read from outside, never shadowed inside
    check_fd(forward, prog, feed, loss.name, ["x", "y"])


# ---------------------------------------------------------------------------------------------------------
# Paddle 2.6.2 (tests/paddle_oracle/make_control_flow_grad.py)
@pytest.fixture(scope="module")
def p2grad(tmp_path_factory):
    py2 = REPO / ".venv-paddle2" / "bin" / "python"
    if not py2.exists():
        pytest.skip("no .venv-paddle2: run `bash tests/paddle_oracle/setup_env.sh .venv-paddle2 2.6.2`")
    out = tmp_path_factory.mktemp("paddle_grad")
    r = subprocess.run([str(py2), str(ORACLE / "make_control_flow_grad.py"), str(out)], capture_output=True,
                       text=True, env=dict(os.environ, GLOG_minloglevel="2"), timeout=600)
    if r.returncode != 0:
        pytest.fail(f"Paddle 2.6.2 failed:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
    return out


def _load(p2grad, case):
    meta = json.loads((p2grad / f"{case}.json").read_text())
    runs = [np.load(p2grad / f) for f in meta["runs"]]
    return meta, runs


def _scope_with_params(npz):
    scope = kc.Scope()
    for k in npz.files:
        if k.startswith("persist/"):
            scope.set(k[len("persist/"):], npz[k])
    return scope


GRAD_CASES = ["recurrent_grad", "recurrent_grad_reverse", "cond_grad", "while_grad"]


@pytest.mark.paddle
@pytest.mark.parametrize("case", GRAD_CASES)
def test_paddles_backward_program_runs_here(p2grad, case):
    """Paddle's recurrent_grad / conditional_block_grad / select_output ops and grad blocks, run here: Paddle's
    loss and gradients (for recurrent, Paddle's own — not the true ones; see the next test)."""
    meta, runs = _load(p2grad, case)
    prog = kc.Program.from_bytes((p2grad / f"{case}.pb").read_bytes())
    for npz in runs:
        scope = _scope_with_params(npz)
        got = kc.Executor().run(prog, feed={n: npz[n] for n in meta["feed_names"]}, fetch_list=meta["fetch_names"],
                                scope=scope, training=True)
        for i, (n, g) in enumerate(zip(meta["fetch_names"], got)):
            want = npz[f"fetch_{i}"]
            assert g.shape == want.shape and g.dtype == want.dtype, n
            np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-7, err_msg=f"{case}: {n}")
        assert scope.kids == []


def _signature(op, skip=("op_callstack", "op_namescope", "op_device", "with_quant_attr", "op_role_var",
                         "use_mkldnn", "mkldnn_data_type", "sub_block")):
    return (op.type, {k: v for k, v in op.inputs.items() if v}, {k: v for k, v in op.outputs.items() if v},
            {k: v for k, v in op.attrs.items() if k not in skip})


@pytest.mark.paddle
@pytest.mark.parametrize("case", ["cond_grad", "while_grad"])
def test_own_backward_of_paddles_program_is_paddles(p2grad, case):
    """cond (conditional_block_grad x2, select_output) and while_loop (while_grad): op for op, block for block
    what Paddle's append_backward writes; and the same gradients."""
    meta, runs = _load(p2grad, case)
    ours = kc.Program.from_bytes((p2grad / f"{case}.fwd.pb").read_bytes())
    theirs = kc.Program.from_bytes((p2grad / f"{case}.pb").read_bytes())
    kc.append_backward(ours.global_block().var(meta["fetch_names"][0]))
    assert ours.num_blocks == theirs.num_blocks
    for a, b in zip(ours.blocks, theirs.blocks):
        assert (a.parent_idx, a.forward_block_idx) == (b.parent_idx, b.forward_block_idx)
        assert len(a.ops) == len(b.ops)
        for x, y in zip(a.ops, b.ops):
            sx, sy = _signature(x), _signature(y)
            assert sx[:3] == sy[:3]
            assert {k: v for k, v in sx[3].items() if k in sy[3]} == {k: v for k, v in sy[3].items() if k in sx[3]}
            if x.has_attr("sub_block"):
                assert x.attr("sub_block") == y.attr("sub_block")
    for npz in runs:
        feed = {n: npz[n] for n in meta["feed_names"]}
        got = kc.Executor().run(ours, feed=feed, fetch_list=meta["fetch_names"], scope=_scope_with_params(npz),
                                training=True)
        for i, (n, g) in enumerate(zip(meta["fetch_names"], got)):
            np.testing.assert_allclose(g, npz[f"fetch_{i}"], rtol=1e-5, atol=1e-7, err_msg=f"{case}: {n}")


@pytest.mark.paddle
@pytest.mark.parametrize("case", ["recurrent_grad", "recurrent_grad_reverse"])
def test_own_backward_of_paddles_recurrent(p2grad, case):
    """The same recurrent_grad op and grad block as Paddle's, plus the state's path Paddle leaves out; the
    gradients are the true ones (float64 finite differences of a NumPy forward), which Paddle's are not."""
    meta, (npz,) = _load(p2grad, case)
    ours = kc.Program.from_bytes((p2grad / f"{case}.fwd.pb").read_bytes())
    theirs = kc.Program.from_bytes((p2grad / f"{case}.pb").read_bytes())
    kc.append_backward(ours.global_block().var(meta["fetch_names"][0]))
    (rg,) = [o for o in ours.global_block().ops if o.type == "recurrent_grad"]
    (pg,) = [o for o in theirs.global_block().ops if o.type == "recurrent_grad"]
    assert _signature(rg) == _signature(pg)
    assert rg.attr("sub_block") == pg.attr("sub_block")
    a, b = ours.block(rg.attr("sub_block")), theirs.block(pg.attr("sub_block"))
    assert (a.parent_idx, a.forward_block_idx) == (b.parent_idx, b.forward_block_idx)
    theirs_ops = [_signature(o)[:3] for o in b.ops if o.type != "sum"]
    ours_ops = [_signature(o)[:3] for o in a.ops if o.type != "sum"]
    assert [s for s in ours_ops if s not in theirs_ops] == [
        ("assign", {"X": ["assign_0.tmp_0@GRAD"]}, {"Out": ["tanh_0.tmp_0@GRAD@RENAME@block1@1"]})]
    got = kc.Executor().run(ours, feed={n: npz[n] for n in meta["feed_names"]}, fetch_list=meta["fetch_names"][1:],
                            scope=_scope_with_params(npz), training=True)
    x, h0, wt = (npz[k].astype(np.float64) for k in ("x", "h0", "wt"))
    w, u = npz["persist/rnn_w"].astype(np.float64), npz["persist/rnn_u"].astype(np.float64)
    reverse = case.endswith("reverse")

    def f(x, h0, w, u):
        h, out = h0, np.zeros(wt.shape)
        for t in (range(len(x) - 1, -1, -1) if reverse else range(len(x))):
            h = out[t] = np.tanh(x[t] @ w + h @ u)
        return float(np.mean(out * wt))

    def fd(i, args):
        a = args[i]
        g = np.zeros(a.shape)
        for idx in np.ndindex(*a.shape):
            hi, lo = [v.copy() for v in args], [v.copy() for v in args]
            hi[i][idx] += 1e-6
            lo[i][idx] -= 1e-6
            g[idx] = (f(*hi) - f(*lo)) / 2e-6
        return g

    args = [x, h0, w, u]
    for i, (n, g) in enumerate(zip(meta["fetch_names"][1:], got)):
        want = fd(i, args)
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-6, err_msg=n)
        assert np.abs(npz[f"fetch_{i + 1}"] - want).max() > 1e-3, f"Paddle's {n} is right after all?"
