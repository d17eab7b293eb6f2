"""The RNN stepper (and the Debugger's RNN panel) over Paddle's fused `rnn` op, Python tier: traits and message
handlers driven as the comm would, values checked against a NumPy-loop reference."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("anywidget")

import kernelcore as kc  # noqa: E402
import kernelcore_widgets as kw  # noqa: E402
from opcases.rnn import reference_rnn  # noqa: E402
from test_paddle_rnn import rnn_program  # noqa: E402
from test_widgets import by_role, sample_of, views  # noqa: E402,F401  - views: the autouse stub fixture

T = 5


def lstm_hs(x, pre, weights, layer_weights=slice(0, 4)):
    """h_t of a one-layer LSTM for every t (the NumPy loop on prefixes)."""
    w = weights[layer_weights]
    return [reference_rnn(x[:t + 1], [pre[0], pre[1]], w, "LSTM", 1, False, 3)[0][t].astype(np.float32)
            for t in range(x.shape[0])]


def test_rnn_stepper_steps_a_fused_lstm_live_and_travels_back():
    prog, feed, (x, pre, weights), fetch = rnn_program("LSTM", 1, T=T)
    hs = lstm_hs(x, pre, weights)
    sess = kc.debug(prog, feed=feed, fetch_list=fetch, scope=kc.Scope())
    st = kw.RNNStepper(sess)
    assert st.rnn_op == "o0:0" and st.mode == "live" and st.num_steps == T and st.timestep == -1
    st.handle_message({"type": "next"})
    assert st.timestep == 0 == sess.position.innermost.timestep
    r = by_role(st.step_scope)
    x_proj0 = x[0] @ weights[0].T + weights[2] + weights[3]
    assert r["x_t"]["name"] == "x_proj"
    np.testing.assert_allclose(r["x_t"]["preview"]["sample"], sample_of(x_proj0), rtol=1e-5, atol=1e-6)
    assert {v["name"] for v in st.step_scope["vars"] if "h_prev" in v["roles"]} == {"h_prev", "c_prev"}
    assert r["h_prev"]["preview"]["sample"] == sample_of(pre[0][0])
    assert r["h_new"]["preview"] is None  # paused before the step's cell runs
    for t in (1, 2):
        st.next()
        assert st.timestep == t == sess.position.innermost.timestep
        np.testing.assert_allclose(by_role(st.step_scope)["h_prev"]["preview"]["sample"], sample_of(hs[t - 1]),
                                   rtol=1e-4, atol=1e-5)
    where = str(sess.position)
    st.prev()  # time travel: the step scope of t=1 was dropped (inference), it is rebuilt from the trace
    assert st.timestep == 1 and str(sess.position) == where
    h = next(v for v in st.step_scope["vars"] if v["name"] == "h")
    np.testing.assert_allclose(h["preview"]["sample"], sample_of(hs[1]), rtol=1e-4, atol=1e-5)
    assert "output" in h["roles"] and "h_new" in h["roles"]
    assert st.memory_flow[:4] == [{"t": 0, "from": "pre0", "to": "h_prev", "from_t": None},
                                  {"t": 0, "from": "pre1", "to": "c_prev", "from_t": None},
                                  {"t": 1, "from": "h", "to": "h_prev", "from_t": 0},
                                  {"t": 1, "from": "c", "to": "c_prev", "from_t": 0}]
    st.goto(4)
    assert st.timestep == 4 == sess.position.innermost.timestep
    sess.run_to_end()
    st.refresh()
    assert st.mode == "replay" and st.timestep == 4


def test_rnn_stepper_replays_the_last_pass_of_a_bidirectional_gru():
    prog, feed, _, fetch = rnn_program("GRU", 1, True, T=T)
    sess = kc.debug(prog, feed=feed, fetch_list=fetch, scope=kc.Scope())
    sess.run_to_end()
    st = kw.RNNStepper(sess)
    # the backward pass ran last: it is the one shown, in its own order (T-1 down to 0)
    assert st.mode == "replay" and st.num_steps == T and st.timestep == T - 1
    assert "layer 0, backward" in st.status
    st.next()
    assert st.timestep == T - 2
    assert [v["name"] for v in st.step_scope["vars"] if v["role"] == "h_prev"] == ["h_prev"]  # GRU: no c
    st.goto(0)
    st.next()
    assert st.timestep == 0 and "last" in st.status


def test_rnn_stepper_replay_of_a_trace_of_a_fused_rnn():
    prog, feed, (x, pre, weights), fetch = rnn_program("LSTM", 1, T=T)
    hs = lstm_hs(x, pre, weights)
    with kc.trace(retain="references") as tr:
        kc.Executor().run(prog, feed=feed, fetch_list=fetch, scope=kc.Scope())
    st = kw.RNNStepper(tr, program=prog)
    st.goto(3)
    r = by_role(st.step_scope)
    np.testing.assert_allclose(r["h_new"]["preview"]["sample"], sample_of(hs[3]), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(r["h_prev"]["preview"]["sample"], sample_of(hs[2]), rtol=1e-4, atol=1e-5)
    bare = kw.RNNStepper(tr)  # no program: the first op with timesteps in the trace, no roles
    assert bare.rnn_op == "o0:0" and bare.num_steps == T


def test_debugger_shows_the_rnn_panel_for_a_fused_rnn():
    prog, feed, _, fetch = rnn_program("LSTM", 2, T=T)
    sess = kc.debug(prog, feed=feed, fetch_list=fetch, scope=kc.Scope())
    d = kw.Debugger(sess)
    assert d.stepper.num_steps == T
    d.step_timestep()
    assert d.stepper.timestep == 0 and "lstm_cell" in d.position
    # the position names the pass ("lstm_cell layer 0 fwd"): the status says it once
    assert d.stepper.status.count("layer 0") == 1 and "layer 0 fwd" in d.stepper.status
