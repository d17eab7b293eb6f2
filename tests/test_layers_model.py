"""Layers that create parameters, dropout in training and inference runs, the optimizers' programs, and
the Model API (build, initialise, save/load parameters, run).

References are NumPy computations from the parameter values the startup program produced, or the
formulas the layers document (Xavier's limit, dropout's scaling); never outputs of kernelcore itself.
"""
import math

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.errors import LoadError, ProgramError

L = kc.layers


def _programs():
    return kc.Program(), kc.Program()


def _startup_ops(startup):
    return {op.output("Out")[0]: op for op in startup.global_block().ops}


# -- parameters: names, declarations, startup initialisers ---------------------------------------------
def test_fc_creates_paddle_named_parameters_and_startup_initialisers():
    main, startup = _programs()
    with kc.program_guard(main, startup):
        x = L.data("x", [-1, 20])
        h = L.fc(x, 30, act="relu")
        y = L.fc(h, 5, act="softmax", bias_attr=False)
    g = main.global_block()
    params = sorted(v.name for v in g.vars if v.is_parameter)
    assert params == ["fc_0.b_0", "fc_0.w_0", "fc_1.w_0"]
    for n in params:
        assert g.var(n).persistable and not g.var(n).stop_gradient
    assert g.var("fc_0.w_0").shape == (20, 30) and g.var("fc_0.b_0").shape == (30,)
    assert g.var("fc_1.w_0").shape == (30, 5)
    assert [op.type for op in g.ops] == ["mul", "elementwise_add", "relu", "mul", "softmax"]
    assert y.shape == (-1, 5)
    ops = _startup_ops(startup)
    assert sorted(ops) == params
    w0 = ops["fc_0.w_0"]
    assert w0.type == "uniform_random"
    limit = math.sqrt(6 / (20 + 30))  # Xavier/Glorot uniform
    assert w0.attr("min") == pytest.approx(-limit) and w0.attr("max") == pytest.approx(limit)
    assert list(w0.attr("shape")) == [20, 30]
    assert ops["fc_0.b_0"].type == "fill_constant" and ops["fc_0.b_0"].attr("value") == 0.0
    for n in params:
        assert startup.global_block().var(n).persistable


def test_layer_names_count_per_program_and_param_attr_names_share():
    main, startup = _programs()
    with kc.program_guard(main, startup):
        x = L.data("x", [-1, 4])
        a = L.fc(x, 4, param_attr=L.ParamAttr(name="shared_w"), bias_attr=False)
        b = L.fc(a, 4, param_attr="shared_w", bias_attr=False)  # same name: the same parameter
        e = L.embedding(L.data("ids", [-1, 3], "int64"), size=[50, 8])
        L.fc(x, 2, name="head", param_attr=L.NormalInitializer(0.0, 0.02, seed=3))
    params = sorted(v.name for v in main.global_block().vars if v.is_parameter)
    assert params == ["embedding_0.w_0", "head.b_0", "head.w_0", "shared_w"]
    assert b.shape == (-1, 4) and e.shape == (-1, 3, 8)
    ops = _startup_ops(startup)
    assert ops["head.w_0"].type == "gaussian_random" and ops["head.w_0"].attr("std") == pytest.approx(0.02)
    with kc.program_guard(main, startup), pytest.raises(ProgramError, match="shared_w"):
        L.fc(L.data("z", [-1, 7]), 4, param_attr="shared_w")  # [7, 4] against the existing [4, 4]


def test_startup_program_initialises_with_the_documented_statistics():
    main, startup = _programs()
    with kc.program_guard(main, startup):
        x = L.data("x", [-1, 300])
        L.fc(x, 500)
        L.fc(x, 400, name="normal", param_attr=L.XavierInitializer(uniform=False))
        L.fc(x, 200, name="uni", param_attr=L.UniformInitializer(-0.5, 0.25))
        L.fc(x, 10, name="const", param_attr=L.ConstantInitializer(0.75), bias_attr=L.ConstantInitializer(-2.0))
    scope = kc.Scope()
    exe = kc.Executor(kc.CPUPlace())
    exe.seed(11)
    exe.run(startup, scope=scope)
    w = scope.get("fc_0.w_0")
    limit = math.sqrt(6 / 800)
    assert w.shape == (300, 500) and w.dtype == np.float32
    assert w.min() >= -limit and w.max() < limit
    assert abs(w.mean()) < 0.01 * limit
    assert w.std() == pytest.approx(limit / math.sqrt(3), rel=0.01)  # uniform's std
    np.testing.assert_array_equal(scope.get("fc_0.b_0"), np.zeros(500, np.float32))
    wn = scope.get("normal.w_0")
    assert wn.std() == pytest.approx(math.sqrt(2 / 700), rel=0.02) and abs(wn.mean()) < 0.003
    wu = scope.get("uni.w_0")
    assert wu.min() >= -0.5 and wu.max() < 0.25 and wu.mean() == pytest.approx(-0.125, abs=0.005)
    np.testing.assert_array_equal(scope.get("const.w_0"), np.full((300, 10), 0.75, np.float32))
    np.testing.assert_array_equal(scope.get("const.b_0"), np.full(10, -2.0, np.float32))
    # seeded executor: the same values again
    scope2 = kc.Scope()
    exe2 = kc.Executor(kc.CPUPlace())
    exe2.seed(11)
    exe2.run(startup, scope=scope2)
    np.testing.assert_array_equal(scope2.get("fc_0.w_0"), w)


def test_fc_embedding_losses_accuracy_match_numpy():
    main, startup = _programs()
    rng = np.random.default_rng(0)
    with kc.program_guard(main, startup):
        x = L.data("x", [-1, 2, 3])
        ids = L.data("ids", [-1], "int64")
        lab = L.data("label", [-1, 1], "int64")
        h = L.fc(x, 4, num_flatten_dims=1, act="tanh")
        logits = L.fc(h, 5)
        prob = kc.op.softmax(logits)
        ce = L.cross_entropy(prob, lab)
        swce, sm = L.softmax_with_cross_entropy(logits, lab, return_softmax=True)
        m = L.mean(swce)
        acc = L.accuracy(logits, lab, k=2)
        emb = L.embedding(ids, [7, 3], padding_idx=-1)
    scope = kc.Scope()
    exe = kc.Executor(kc.CPUPlace())
    exe.run(startup, scope=scope)
    xv = rng.standard_normal((6, 2, 3)).astype(np.float32)
    lv = rng.integers(0, 5, (6, 1)).astype(np.int64)
    iv = np.array([0, 6, 3, 6], np.int64)
    got = exe.run(main, feed={"x": xv, "label": lv, "ids": iv}, fetch_list=[logits, ce, swce, sm, m, acc, emb],
                  scope=scope)
    P = {n: scope.get(n).astype(np.float64) for n in ("fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0",
                                                       "embedding_0.w_0")}
    hh = np.tanh(xv.reshape(6, 6) @ P["fc_0.w_0"] + P["fc_0.b_0"])
    lg = hh @ P["fc_1.w_0"] + P["fc_1.b_0"]
    p = np.exp(lg - lg.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    loss = -np.log(p[np.arange(6), lv[:, 0]])[:, None]
    top2 = np.argsort(-lg, 1)[:, :2]
    np.testing.assert_allclose(got[0], lg, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], loss, rtol=1e-5)
    np.testing.assert_allclose(got[2], loss, rtol=1e-5)
    np.testing.assert_allclose(got[3], p, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got[4], loss.mean(), rtol=1e-5)
    assert float(got[5]) == pytest.approx(np.mean([lv[i, 0] in top2[i] for i in range(6)]))
    want_emb = P["embedding_0.w_0"][iv]
    want_emb[iv == 6] = 0  # padding_idx=-1 is row 6: zeros
    np.testing.assert_allclose(got[6], want_emb, rtol=1e-6)


# -- dropout: training runs versus inference runs ---------------------------------------------------------
def _dropout_prog(p, impl="downgrade_in_infer", is_test=None, seed=None):
    main, startup = _programs()
    with kc.program_guard(main, startup):
        x = L.data("x", [-1, 1000])
        out = L.dropout(x, p, is_test=is_test, seed=seed, dropout_implementation=impl)
    mask = main.global_block().ops[-1].output("Mask")[0]
    return main, out, mask


@pytest.mark.parametrize("impl", ["downgrade_in_infer", "upscale_in_train"])
def test_dropout_drops_only_in_training_runs(impl):
    p = 0.3
    main, out, mask = _dropout_prog(p, impl)
    assert main.global_block().ops[-1].attr("is_test") is False
    x = np.random.default_rng(1).uniform(1, 2, (20, 1000)).astype(np.float32)  # no zeros of its own
    exe = kc.Executor(kc.CPUPlace())
    exe.seed(5)
    scope = kc.Scope()
    y, m = exe.run(main, feed={"x": x}, fetch_list=[out, mask], scope=scope, training=True)
    assert m.dtype == np.uint8 and m.shape == x.shape and set(np.unique(m)) <= {0, 1}
    dropped = 1 - m.mean()
    assert abs(dropped - p) < 4 * math.sqrt(p * (1 - p) / m.size)  # 4 sigma of a binomial
    scale = 1 / (1 - p) if impl == "upscale_in_train" else 1.0
    np.testing.assert_allclose(y, x * m * np.float32(scale), rtol=1e-6)
    # inference run: deterministic scaling, nothing dropped
    y_test, = exe.run(main, feed={"x": x}, fetch_list=[out], scope=kc.Scope(), training=False)
    want = x if impl == "upscale_in_train" else x * np.float32(1 - p)
    np.testing.assert_allclose(y_test, want, rtol=1e-6)


def test_dropout_is_test_true_never_drops_and_fixed_seed_repeats():
    main, out, _ = _dropout_prog(0.5, is_test=True)
    x = np.ones((4, 1000), np.float32)
    y, = kc.Executor(kc.CPUPlace()).run(main, feed={"x": x}, fetch_list=[out], scope=kc.Scope(), training=True)
    np.testing.assert_array_equal(y, x * 0.5)
    main, out, mask = _dropout_prog(0.5, seed=123)
    exe = kc.Executor(kc.CPUPlace())
    a, = exe.run(main, feed={"x": x}, fetch_list=[mask], scope=kc.Scope(), training=True)
    b, = exe.run(main, feed={"x": x}, fetch_list=[mask], scope=kc.Scope(), training=True)
    np.testing.assert_array_equal(a, b)
    main2, out2, mask2 = _dropout_prog(0.5)  # no seed: the executor's generator moves on
    c, = exe.run(main2, feed={"x": x}, fetch_list=[mask2], scope=kc.Scope(), training=True)
    d, = exe.run(main2, feed={"x": x}, fetch_list=[mask2], scope=kc.Scope(), training=True)
    assert (c != d).any()


def test_dropout_prob_one_zeroes_everything_in_training():
    main, out, mask = _dropout_prog(1.0, "upscale_in_train")
    x = np.ones((2, 1000), np.float32)
    y, m = kc.Executor(kc.CPUPlace()).run(main, feed={"x": x}, fetch_list=[out, mask], scope=kc.Scope(),
                                          training=True)
    assert not y.any() and not m.any() and np.isfinite(y).all()


# -- recurrent layers: forward against NumPy ---------------------------------------------------------------
def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


@pytest.mark.parametrize("kind", ["simple_rnn", "lstm"])
def test_recurrent_layers_forward_matches_numpy(kind):
    T, B, D, H = 5, 3, 4, 6
    main, startup = _programs()
    with kc.program_guard(main, startup):
        x = L.data("x", [T, -1, D])
        seq = getattr(L, kind)(x, H)
        last = L.sequence_last(seq)
    assert seq.shape == (T, -1, H) and last.shape == (-1, H)
    scope = kc.Scope()
    exe = kc.Executor(kc.CPUPlace())
    exe.run(startup, scope=scope)
    xv = np.random.default_rng(2).standard_normal((T, B, D)).astype(np.float32)
    out, lst = exe.run(main, feed={"x": xv}, fetch_list=[seq, last], scope=scope)
    W, U, b = (scope.get(f"{kind}_0.{n}").astype(np.float64) for n in ("w_0", "w_1", "b_0"))
    h = np.zeros((B, H))
    c = np.zeros((B, H))
    want = []
    for t in range(T):
        g = xv[t] @ W + h @ U + b
        if kind == "simple_rnn":
            h = np.tanh(g)
        else:
            i, f, cand, o = np.split(g, 4, axis=1)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(cand)
            h = _sigmoid(o) * np.tanh(c)
        want.append(h)
    np.testing.assert_allclose(out, np.stack(want), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lst, want[-1], rtol=1e-5, atol=1e-6)
    assert U.shape == (H, 4 * H if kind == "lstm" else H)


# -- optimizers: the programs they write and the updates they make -----------------------------------------
def _quadratic_program(opt):
    """loss-free: a parameter w and a fed gradient g; apply_gradients adds the update op."""
    main, startup = _programs()
    with kc.program_guard(main, startup):
        w = L.create_parameter([3, 2], attr=L.ParamAttr("w", L.ConstantInitializer(1.0)))
        g = L.data("w@GRAD", [3, 2])
        opt.apply_gradients([(w, g)], main, startup)
    return main, startup


def _run_steps(main, startup, grads):
    scope = kc.Scope()
    exe = kc.Executor(kc.CPUPlace())
    exe.run(startup, scope=scope)
    seen = []
    for gv in grads:
        exe.run(main, feed={"w@GRAD": gv}, fetch_list=[], scope=scope, training=True)
        seen.append(scope.get("w").copy())
    return scope, seen


GRADS = [np.random.default_rng(s).standard_normal((3, 2)).astype(np.float32) for s in range(4)]


def test_sgd_program_and_updates():
    main, startup = _quadratic_program(kc.optimizer.SGD(learning_rate=0.1))
    op = main.global_block().ops[-1]
    assert op.type == "sgd" and op.input("Param") == ["w"] and op.output("ParamOut") == ["w"]
    assert op.input("LearningRate") == ["learning_rate_0"] and op.attr("op_role") == 2
    assert op.attr("op_role_var") == ["w", "w@GRAD"]
    lr = main.global_block().var("learning_rate_0")
    assert lr.persistable and lr.shape == ()
    lr_init = _startup_ops(startup)["learning_rate_0"]
    assert lr_init.type == "fill_constant" and lr_init.attr("value") == pytest.approx(0.1)
    _, seen = _run_steps(main, startup, GRADS)
    w = np.ones((3, 2))
    for gv, got in zip(GRADS, seen):
        w = w - 0.1 * gv
        np.testing.assert_allclose(got, w, rtol=1e-6)


def test_momentum_program_and_updates():
    main, startup = _quadratic_program(kc.optimizer.Momentum(learning_rate=0.05, momentum=0.8))
    op = main.global_block().ops[-1]
    assert op.type == "momentum" and op.input("Velocity") == ["w_velocity_0"] == op.output("VelocityOut")
    assert op.attr("mu") == pytest.approx(0.8)
    assert _startup_ops(startup)["w_velocity_0"].attr("value") == 0.0
    scope, seen = _run_steps(main, startup, GRADS)
    w, v = np.ones((3, 2)), np.zeros((3, 2))
    for gv, got in zip(GRADS, seen):
        v = 0.8 * v + gv
        w = w - 0.05 * v
        np.testing.assert_allclose(got, w, rtol=1e-5)
    np.testing.assert_allclose(scope.get("w_velocity_0"), v, rtol=1e-5)


def test_adam_program_and_updates():
    b1, b2, eps, lr = 0.8, 0.9, 1e-7, 0.01
    main, startup = _quadratic_program(kc.optimizer.Adam(learning_rate=lr, beta1=b1, beta2=b2, epsilon=eps))
    op = main.global_block().ops[-1]
    assert op.type == "adam"
    names = {s: op.input(s)[0] for s in ("Moment1", "Moment2", "Beta1Pow", "Beta2Pow")}
    assert names == {"Moment1": "w_moment1_0", "Moment2": "w_moment2_0", "Beta1Pow": "w_beta1_pow_acc_0",
                     "Beta2Pow": "w_beta2_pow_acc_0"}
    init = _startup_ops(startup)
    assert init["w_beta1_pow_acc_0"].attr("value") == pytest.approx(b1)
    assert list(init["w_beta1_pow_acc_0"].attr("shape")) == [1]
    scope, seen = _run_steps(main, startup, GRADS)
    w, m, v = np.ones((3, 2)), np.zeros((3, 2)), np.zeros((3, 2))
    for t, (gv, got) in enumerate(zip(GRADS, seen), 1):
        # textbook Adam (Kingma & Ba, algorithm 1): Paddle's folded form is the same update
        m = b1 * m + (1 - b1) * gv
        v = b2 * v + (1 - b2) * gv * gv
        m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
        w = w - lr * m_hat / (np.sqrt(v_hat) + eps)
        np.testing.assert_allclose(got, w, rtol=1e-5)
    np.testing.assert_allclose(scope.get("w_beta1_pow_acc_0"), [b1 ** 5], rtol=1e-6)


def test_optimizer_arguments_are_checked():
    with pytest.raises(ValueError):
        kc.optimizer.SGD(learning_rate=-1)
    with pytest.raises(ValueError):
        kc.optimizer.Adam(beta1=1.0)
    with pytest.raises(ProgramError, match="no parameter has a gradient"):
        kc.optimizer.SGD(0.1).apply_gradients([], kc.Program(), kc.Program())


# -- the Model API ------------------------------------------------------------------------------------------
def _model(scope=None):
    model = kc.Model(scope=scope or kc.Scope())
    hidden = model.fc_layer(input="img", size=16, activation="sigmoid", input_dim=12)
    prob = model.fc_layer(input=hidden, size=4, activation="softmax")
    loss = model.cross_entropy(input=prob, label="label")
    return model, prob, model.mean(loss)


def test_model_builds_ordinary_programs_and_initialises():
    model, prob, avg = _model()
    assert isinstance(model.network, kc.Program) and isinstance(model.init_network, kc.Program)
    assert model.all_params == ["fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"]
    assert model.var("img").shape == (-1, 12) and model.var("label").dtype_name == "int64"
    assert [op.type for op in model.network.global_block().ops] == [
        "mul", "elementwise_add", "sigmoid", "mul", "elementwise_add", "softmax", "cross_entropy", "mean"]
    model.initialize_parameters()
    for n in model.all_params:
        assert model.scope.get(n).shape == model.var(n).shape
    with pytest.raises(ProgramError, match="model.data"):
        model.fc_layer(input="unknown_input", size=3)
    with pytest.raises(ProgramError, match="backward"):
        model.sgd(0.1)


def test_model_save_load_parameters_round_trip(tmp_path):
    model, prob, avg = _model()
    model.initialize_parameters()
    rng = np.random.default_rng(4)
    img = rng.random((5, 12)).astype(np.float32)
    lab = rng.integers(0, 4, (5, 1)).astype(np.int64)
    model.fill("img", img)
    model.fill("label", lab)
    p1, l1 = model.run(fetch=[prob, avg])
    path = tmp_path / "model.pdiparams"
    model.save_parameters(path)
    # the file is Paddle's combined stream of the parameters, in sorted name order
    assert kc.load_params(path, sorted(model.all_params)).keys() == set(model.all_params)

    other, prob2, avg2 = _model()
    other.initialize_parameters()
    assert not np.array_equal(other.scope.get("fc_0.w_0"), model.scope.get("fc_0.w_0"))
    other.load_parameters(path)
    for n in model.all_params:
        np.testing.assert_array_equal(other.scope.get(n), model.scope.get(n))
    other.fill("img", img)
    other.fill("label", lab)
    p2, l2 = other.run(fetch=[prob2.name, avg2.name])
    np.testing.assert_array_equal(p1, p2)
    np.testing.assert_array_equal(l1, l2)

    bigger = kc.Model(scope=kc.Scope())
    bigger.fc_layer(input="img", size=17, input_dim=12)  # fc_0.w_0 is [12, 17] here
    bigger.fc_layer(input=bigger.var("fc_0.tmp_1"), size=4, activation="softmax")
    with pytest.raises(LoadError):
        bigger.load_parameters(path)


def test_update_kernels_leave_their_inputs_alone():
    """Programs name Param and ParamOut alike, but the kernels return new arrays: the arrays they were
    given (which a trace or a debugger may still hold) keep their values."""
    import copy
    from opcases import run
    from opcases.optimizer import CASES
    for case in CASES:
        before = copy.deepcopy(case.inputs)
        run(case)
        for slot, v in case.inputs.items():
            np.testing.assert_array_equal(v, before[slot], err_msg=f"{case}: input {slot} changed")
    x = np.ones((3, 1000), np.float32)
    main, out, _ = _dropout_prog(0.5)
    y, = kc.Executor(kc.CPUPlace()).run(main, feed={"x": x}, fetch_list=[out], scope=kc.Scope(), training=True)
    assert (x == 1).all() and (y == 0).any()


def test_sequence_last_passes_gradient_to_the_last_step_only():
    main, startup = _programs()
    with kc.program_guard(main, startup):
        seq = L.create_parameter([4, 2, 3], attr=L.ParamAttr("seq", L.UniformInitializer(-1, 1, seed=1)))
        loss = L.mean(L.sequence_last(seq))
        (p, g), = kc.append_backward(loss)
    scope = kc.Scope()
    exe = kc.Executor(kc.CPUPlace())
    exe.run(startup, scope=scope)
    lv, gv = exe.run(main, fetch_list=[loss, g], scope=scope, training=True)
    np.testing.assert_allclose(lv, scope.get("seq")[-1].mean(), rtol=1e-6)
    want = np.zeros((4, 2, 3), np.float32)
    want[-1] = 1 / 6
    np.testing.assert_allclose(gv, want, rtol=1e-6)
