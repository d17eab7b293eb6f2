"""rnn_grad: the gradient of Paddle's fused rnn op, against central finite differences in float64 and against the
gradients Paddle's own rnn_grad computed for a 2-layer LSTM (make_rnn_models.py's train_lstm)."""
import json

import numpy as np
import pytest

import kernelcore as kc
from opcases.rnn import random_rnn
from test_backward_control_flow import backward, check_fd, weighted_loss
from test_paddle_rnn import rnn2, rnn3  # noqa: F401  - the session fixtures (Paddle 2.6.2 / 3.3.1 models)


def rnn_grad_program(mode, layers, bidirec, seq_len=None, T=4, B=2, I=3, H=2):
    x, pre, weights = random_rnn(mode, layers, bidirec, T=T, B=B, I=I, H=H, seed=5)
    prog = kc.Program()
    feed = {}
    with kc.program_guard(prog):
        g = prog.global_block()

        def var(name, v):
            g.create_var(name, list(v.shape), "float64")
            feed[name] = v.astype(np.float64)
            return name
        ins = {"Input": [var("x", x)], "PreState": [var(f"pre{i}", v) for i, v in enumerate(pre)],
               "WeightList": [var(f"w{i}", v) for i, v in enumerate(weights)]}
        if seq_len is not None:
            g.create_var("seq_len", [B], "int64", stop_gradient=True)
            feed["seq_len"] = np.array(seq_len, np.int64)
            ins["SequenceLength"] = ["seq_len"]
        states = ["h_n", "c_n"] if mode == "LSTM" else ["h_n"]
        g.append_op("rnn", ins, {"Out": ["out"], "State": states, "Reserve": ["reserve"],
                                 "DropoutState": ["dropout_state"]},
                    {"mode": mode, "num_layers": layers, "is_bidirec": bidirec, "hidden_size": H, "input_size": I})
        loss, lf = weighted_loss(g, [g.var("out")] + [g.var(s) for s in states])
    feed.update(lf)
    wrt = [n for n in feed if n == "x" or n.startswith(("pre", "w"))]
    return prog, loss, feed, wrt


@pytest.mark.parametrize("mode,layers,bidirec,seq_len", [
    ("LSTM", 2, False, [4, 2]),
    ("LSTM", 2, False, None),  # unmasked: each step's h is a view of Out's row
    ("LSTM", 1, True, None),
    ("GRU", 1, True, [3, 1]),
    ("GRU", 2, False, None),
    ("RNN_TANH", 2, True, [2, 4]),
    ("RNN_RELU", 1, False, [4, 3]),
])
def test_rnn_gradients_match_finite_differences(mode, layers, bidirec, seq_len):
    prog, loss, feed, wrt = rnn_grad_program(mode, layers, bidirec, seq_len)
    forward = backward(prog, loss)
    types = [op.type for op in prog.global_block().ops]
    assert "rnn_grad" in types
    grad_op = next(op for op in prog.global_block().ops if op.type == "rnn_grad")
    assert grad_op.input("Reserve") == ["reserve"] and grad_op.input("Out@GRAD") == ["out@GRAD"]
    assert grad_op.output("WeightList@GRAD") == [n + "@GRAD" for n in grad_op.input("WeightList")]
    check_fd(forward, prog, feed, loss, wrt, rtol=1e-5, atol=1e-7)


def test_rnn_grad_drops_the_step_scopes_and_needs_a_training_run():
    prog, loss, feed, wrt = rnn_grad_program("GRU", 2, True)
    backward(prog, loss)
    scope = kc.Scope()
    kc.Executor().run(prog, feed=feed, fetch_list=["w0@GRAD"], scope=scope, training=True)
    assert scope.find_var("reserve").value is None
    assert all(k.dropped for k in scope.kids)  # every step scope walked and dropped
    with pytest.raises(kc.OpRunError, match="training=True") as e:
        kc.Executor().run(prog, feed=feed, fetch_list=["w0@GRAD"], scope=kc.Scope(), training=False)
    assert e.value.op_type == "rnn_grad"


@pytest.mark.paddle
@pytest.mark.parametrize("threads", [None, 1])
@pytest.mark.parametrize("version", ["rnn3", "rnn2"])
def test_rnn_grad_matches_paddle_training_step(version, threads, request):
    """The 2-layer LSTM training program Paddle wrote (its rnn_grad, fill_any_like, sgd ops) runs here with
    Paddle's initial parameters and gives Paddle's loss, gradients and updated parameters: on the machine's
    threads, and on one (where the steps' products take kernelcore/native's packed GEMM)."""
    if threads is not None:
        from threadpoolctl import threadpool_limits
        with threadpool_limits(threads):
            return test_rnn_grad_matches_paddle_training_step(version, None, request)
    out = request.getfixturevalue(version)
    meta = json.loads((out / "train_lstm.json").read_text())
    ref = np.load(out / "train_lstm.npz")
    main = kc.load_program(out / "train_lstm.main.pb")
    assert "rnn_grad" in [op.type for op in main.global_block().ops]
    scope = kc.Scope()
    for p in meta["params"]:
        scope.var(p).value = ref[f"init/{p}"]
    lr_names = {n for op in main.global_block().ops if op.type == "sgd" for n in op.input("LearningRate")}
    assert len(lr_names) == 1
    scope.var(lr_names.pop()).value = np.array([meta["lr"]], np.float32)
    for v in main.global_block().vars:  # other persistables the startup program makes (none should matter)
        if v.persistable and scope.find_var(v.name) is None and v.name not in ("feed", "fetch"):
            scope.var(v.name)
    outs = kc.Executor().run(main, feed={"x": ref["x"]}, fetch_list=[meta["loss"]] + meta["grads"], scope=scope,
                             training=True)
    np.testing.assert_allclose(outs[0], ref["loss"], rtol=1e-5, atol=1e-7)
    for p, got in zip(meta["params"], outs[1:]):
        np.testing.assert_allclose(got, ref[f"grad/{p}"], rtol=1e-4, atol=1e-6, err_msg=p)
        np.testing.assert_allclose(scope.get(p), ref[f"after/{p}"], rtol=1e-5, atol=1e-6, err_msg=p)
