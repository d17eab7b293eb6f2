"""A block replayed as a captured CUDA graph (kernelcore/runtime/captured_run.py), on the strict stand-in: when it
captures, when it goes op by op instead, and that a replay gives what op by op gives."""
from __future__ import annotations

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.runtime import captured_run, fast_paths
from kernelcore.runtime.place import StrictPlace
from kernelcore.testing import strict_cuda

L = kc.layers
STEPS = 5


def _training_program(optimizer="adam", dropout=False, label=False):
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        x = L.data("x", [-1, 6])
        h = L.fc(x, 8, act="relu")
        if dropout:
            h = L.dropout(h, 0.5)
        if label:
            y = L.data("label", [-1, 1], "int64")
            loss = L.mean(L.softmax_with_cross_entropy(L.fc(h, 3), y))
        else:
            loss = L.mean(L.fc(h, 1, act="sigmoid"))
        {"sgd": kc.optimizer.SGD(0.2), "momentum": kc.optimizer.Momentum(0.1, 0.9, use_nesterov=True),
         "adam": kc.optimizer.Adam(0.05)}[optimizer].minimize(loss, startup)
    return main, startup, loss


def _feeds(n=STEPS, batch=5, label=False):
    rng = np.random.default_rng(1)
    feeds = []
    for _ in range(n):
        f = {"x": rng.standard_normal((batch, 6)).astype(np.float32)}
        if label:
            f["label"] = rng.integers(0, 3, (batch, 1))
        feeds.append(f)
    return feeds


def _fresh(startup):
    exe = kc.Executor(StrictPlace())
    exe.seed(0)
    scope = kc.Scope()
    exe.run(startup, scope=scope)
    return exe, scope


def _params(main, scope):
    return {n: kc.runtime.place.to_host(scope.get(n)) for n in kc.formats.paddle_files.persistable_names(main)}


def _op_by_op(main, startup, loss, feeds, **run):
    """The same steps with the NaN check on: it reads each op's outputs, so nothing is captured."""
    exe, scope = _fresh(startup)
    losses = [exe.run(main, feed=f, fetch_list=[loss], scope=scope, training=True, check_nan_inf=True, **run)[0]
              for f in feeds]
    assert captured_run.state_of(exe.prepare(main), scope, True) is None
    return losses, _params(main, scope)


@pytest.fixture
def launches(monkeypatch):
    count = []
    real = strict_cuda.Graph.launch

    def counted(self, stream=None):
        count.append(1)
        return real(self, stream)
    monkeypatch.setattr(strict_cuda.Graph, "launch", counted)
    return count


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adam"])
def test_training_steps_replayed_equal_op_by_op(optimizer, launches):
    main, startup, loss = _training_program(optimizer)
    feeds = _feeds()
    exe, scope = _fresh(startup)
    states, losses = [], []
    for f in feeds:
        losses.append(exe.run(main, feed=f, fetch_list=[loss], scope=scope, training=True)[0])
        states.append(captured_run.state_of(exe.prepare(main), scope, True).state)
    # the first run warms up op by op, the second captures and launches, the rest replay
    assert states == [captured_run.UNTRIED] + [captured_run.CAPTURED] * (STEPS - 1)
    assert len(launches) == STEPS - 1
    want_losses, want_params = _op_by_op(main, startup, loss, feeds)
    np.testing.assert_array_equal(np.array(losses), np.array(want_losses))
    got = _params(main, scope)
    for n, v in want_params.items():
        np.testing.assert_array_equal(got[n], v, err_msg=n)


def test_a_replay_leaves_values_on_the_device_and_parameters_in_their_buffers():
    main, startup, loss = _training_program("sgd")
    exe, scope = _fresh(startup)
    feeds = _feeds()
    for f in feeds[:2]:
        exe.run(main, feed=f, fetch_list=[loss], scope=scope, training=True)
    buffers = {n: scope.get(n) for n in _params(main, scope)}
    for f in feeds[2:]:
        exe.run(main, feed=f, fetch_list=[loss], scope=scope, training=True)
        assert all(scope.get(n) is b for n, b in buffers.items()), "the state moved out of the graph's buffers"


def test_an_observed_or_paused_run_goes_op_by_op_and_the_replay_resumes_after(launches):
    main, startup, loss = _training_program("momentum")
    feeds = _feeds(6)
    exe, scope = _fresh(startup)
    losses = []
    for f in feeds[:3]:  # warm-up, capture, one replay
        losses.append(exe.run(main, feed=f, fetch_list=[loss], scope=scope, training=True)[0])
    assert len(launches) == 2
    seen = []
    token = kc.runtime.executor.add_observer(seen.append)
    try:
        losses.append(exe.run(main, feed=feeds[3], fetch_list=[loss], scope=scope, training=True)[0])
    finally:
        kc.runtime.executor.remove_observer(token)
    assert len(launches) == 2 and seen  # observed: op by op
    gen = exe.run_iter(main, feed=feeds[4], fetch_list=[loss], scope=scope, training=True, pausing=True)
    pauses = 0
    try:
        while True:
            next(gen)
            pauses += 1
    except StopIteration as stop:
        losses.append(stop.value[0])
    assert pauses == len(main.global_block().ops) and len(launches) == 2  # stepped op by op, no graph
    losses.append(exe.run(main, feed=feeds[5], fetch_list=[loss], scope=scope, training=True)[0])
    assert len(launches) == 3  # unobserved again: replayed from what the stepped run left
    want, _ = _op_by_op(main, startup, loss, feeds)
    np.testing.assert_array_equal(np.array(losses), np.array(want))


def test_random_draws_are_never_captured():
    main, startup, loss = _training_program(dropout=True)
    exe, scope = _fresh(startup)
    for f in _feeds(3):
        exe.run(main, feed=f, fetch_list=[loss], scope=scope, training=True)
    assert captured_run.captured_span(exe.prepare(main)) is None
    assert captured_run.state_of(exe.prepare(main), scope, True) is None


def test_a_capture_that_fails_part_way_restores_the_values_and_runs_op_by_op(launches):
    """softmax_with_cross_entropy reads its labels back to check them: a capture refuses that read."""
    main, startup, loss = _training_program("momentum", label=True)
    feeds = _feeds(4, label=True)
    exe, scope = _fresh(startup)
    losses = [exe.run(main, feed=f, fetch_list=[loss], scope=scope, training=True)[0] for f in feeds]
    assert captured_run.state_of(exe.prepare(main), scope, True).state == captured_run.REFUSED and not launches
    want_losses, want_params = _op_by_op(main, startup, loss, feeds)
    np.testing.assert_array_equal(np.array(losses), np.array(want_losses))
    got = _params(main, scope)
    for n, v in want_params.items():
        np.testing.assert_array_equal(got[n], v, err_msg=n)


def test_a_feed_of_another_shape_gets_a_graph_of_its_own(launches):
    """A graph's buffers have fixed shapes: an epoch's last, smaller batch is warmed up, captured and replayed
    apart, and the first shape's graph still serves its runs."""
    main, startup, loss = _training_program("sgd")
    feeds = _feeds(3) + _feeds(3, batch=7) + _feeds(2)
    exe, scope = _fresh(startup)
    losses = [exe.run(main, feed=f, fetch_list=[loss], scope=scope, training=True)[0] for f in feeds]
    assert len(launches) == 2 + 2 + 2  # 5: captured, replayed; 7: captured, replayed; 5 again: replayed twice
    want, _ = _op_by_op(main, startup, loss, feeds)
    np.testing.assert_array_equal(np.array(losses), np.array(want))


def test_past_the_graph_limit_new_shapes_run_op_by_op(launches):
    main, startup, loss = _training_program("sgd")
    batches = range(2, 3 + captured_run.MAX_GRAPHS)
    feeds = [f for b in batches for f in _feeds(2, batch=b)]
    exe, scope = _fresh(startup)
    losses = [exe.run(main, feed=f, fetch_list=[loss], scope=scope, training=True)[0] for f in feeds]
    assert len(launches) == captured_run.MAX_GRAPHS  # each graph launched when captured; the last shape none
    want, _ = _op_by_op(main, startup, loss, feeds)
    np.testing.assert_array_equal(np.array(losses), np.array(want))


@pytest.mark.parametrize("how", ["switched_off", "device_arrays_fetched"])
def test_nothing_is_captured_when_switched_off_or_fetching_device_arrays(how, launches):
    main, startup, loss = _training_program("sgd")
    exe, scope = _fresh(startup)
    for f in _feeds(3):
        if how == "switched_off":
            with fast_paths.switched_off():
                exe.run(main, feed=f, fetch_list=[loss], scope=scope, training=True)
        else:
            exe.run(main, feed=f, fetch_list=[loss], scope=scope, training=True, return_numpy=False)
    assert not launches


def test_the_span_leaves_feed_and_fetch_ops_outside_the_graph():
    main, startup, loss = _training_program("sgd")
    prepared = kc.Executor(StrictPlace()).prepare(main)
    assert captured_run.captured_span(prepared) == (0, len(main.global_block().ops))
    read, written = captured_run.read_and_written(prepared.ops)
    assert "x" in read and not set(read) & {n for n in written if n.endswith("@GRAD")}


def test_an_inference_model_captures_between_its_feed_and_fetch_ops(tmp_path, launches):
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        x = L.data("x", [-1, 6])
        out = L.fc(L.fc(x, 8, act="relu"), 4, act="softmax")
    exe = kc.Executor(kc.CPUPlace())
    exe.seed(0)
    scope = kc.Scope()
    exe.run(startup, scope=scope)
    kc.formats.paddle_files.save_inference_model(tmp_path / "m", main, scope, feed_names=["x"],
                                                 fetch_names=[out.name])
    feeds = [f["x"] for f in _feeds(4)]
    results = {}
    for place in (kc.CPUPlace(), StrictPlace()):
        prog, params, feed_names, fetch_names = kc.formats.paddle_files.load_inference_model(tmp_path / "m",
                                                                                            place=place)
        run = kc.Executor(place)
        results[place.kind] = [run.run(prog, feed={feed_names[0]: f}, scope=params)[0] for f in feeds]
        if place.kind == "gpu":
            prepared = run.prepare(prog)
            first, end = captured_run.captured_span(prepared)
            assert prepared.ops[first - 1].type == "feed" and prepared.ops[end].type == "fetch"
            assert captured_run.state_of(prepared, params, False).state == captured_run.CAPTURED
    assert len(launches) == len(feeds) - 1
    for got, want in zip(results["gpu"], results["cpu"]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adam"])
def test_an_op_by_op_training_step_reads_nothing_back_from_the_device(optimizer):
    """What makes a block capturable at all: its kernels (the fused ones included) never wait on the device; one
    copy to the device (the feed) and one back (the fetched loss) per step."""
    from kernelcore.testing import strict_xp
    main, startup, loss = _training_program(optimizer)
    exe, scope = _fresh(startup)
    strict_xp.reset_stats()
    exe.run(main, feed=_feeds(1)[0], fetch_list=[loss], scope=scope, training=True)
    assert strict_xp.stats == {"syncs": 0, "to_host": 1, "to_device": 1}


def test_every_op_whose_kernel_draws_random_numbers_is_kept_out_of_a_graph():
    """A kernel that calls ctx.rng draws again on every run; a replayed graph would repeat its numbers."""
    import inspect
    from types import SimpleNamespace
    from kernelcore.ir.registry import all_op_defs
    drawing = set()
    for op_type, opdef in all_op_defs().items():
        for kernel in opdef.kernels.values():
            try:
                source = inspect.getsource(kernel)
            except (OSError, TypeError):
                continue
            if ".rng(" in source:
                drawing.add(op_type)
    assert {"dropout", "uniform_random", "gaussian_random", "bernoulli", "multinomial"} <= drawing
    missed = [t for t in sorted(drawing)
              if not captured_run.draws_random(SimpleNamespace(type=t, attrs=all_op_defs()[t].attrs))]
    assert not missed, f"ops drawing random numbers a graph would capture: {missed}"


def test_training_and_inference_runs_replay_graphs_of_their_own(launches):
    """batch_norm normalises with the batch's statistics in training and the running ones in inference: a graph
    captured from training runs must not stand in for an inference run."""
    import sys
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from device_cases import _bn, build, f32
    from opcases import Case
    prog, feed, outs = build(Case("batch_norm", {"X": f32(4, 3, 5, 5), **_bn(3)}, None, {}))
    y = outs["Y"][0]

    def run(exe, scope, training, **kw):
        return exe.run(prog, feed=feed, fetch_list=[y], scope=scope, training=training, **kw)[0]
    exe, scope = kc.Executor(StrictPlace()), kc.Scope()
    got = [run(exe, scope, mode) for mode in (True, True, True, False, False, False)]
    want_exe, want_scope = kc.Executor(StrictPlace()), kc.Scope()
    want = [run(want_exe, want_scope, mode, check_nan_inf=True) for mode in (True, True, True, False, False, False)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    prepared = exe.prepare(prog)
    assert captured_run.state_of(prepared, scope, True).state == captured_run.CAPTURED
    assert captured_run.state_of(prepared, scope, False).state == captured_run.CAPTURED
    assert len(launches) == 4  # each graph launched when captured and replayed once


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_an_rnn_inference_block_is_captured_and_replays_what_the_cpu_computes(mode, launches):
    """The rnn op steps through its timesteps as a generator, without a sub-block: with no dropout, in a run that
    keeps no step scopes (its Reserve empty), a graph holds it like any op."""
    import sys
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from device_cases import GRU1, LSTM1, _lstm_attrs, build
    from opcases import Case
    inputs = LSTM1 if mode == "LSTM" else GRU1
    prog, feed, outs = build(Case("rnn", inputs, None, {**_lstm_attrs(inputs, 1, False, is_test=True),
                                                        "mode": mode}))
    fetch = [outs["Out"][0]] + outs["State"]
    exe, scope = kc.Executor(StrictPlace()), kc.Scope()
    got = [exe.run(prog, feed=feed, fetch_list=fetch, scope=scope) for _ in range(3)]
    assert captured_run.captured_span(exe.prepare(prog)) is not None
    assert captured_run.state_of(exe.prepare(prog), scope, False).state == captured_run.CAPTURED
    assert len(launches) == 2
    with fast_paths.switched_off():
        want = kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=fetch, scope=kc.Scope())
    for run in got:
        for g, w in zip(run, want):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


def test_an_rnn_with_dropout_is_never_captured():
    from types import SimpleNamespace
    assert captured_run.draws_random(SimpleNamespace(type="rnn", attrs={"dropout_prob": 0.3, "seed": 0}))
    assert not captured_run.draws_random(SimpleNamespace(type="rnn", attrs={"dropout_prob": 0.0, "seed": 0}))


def test_an_rnn_training_run_keeping_its_step_scopes_goes_op_by_op(launches):
    """A training run keeps every step scope for rnn_grad: a graph cannot hold them, and a capture tried anyway
    would leave the scopes it made behind in the scope tree."""
    import sys
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from device_cases import GRU1, _lstm_attrs, build
    from opcases import Case
    prog, feed, outs = build(Case("rnn", GRU1, None, {**_lstm_attrs(GRU1, 1, False), "mode": "GRU"}))
    exe, scope = kc.Executor(StrictPlace()), kc.Scope()
    kids = []
    for _ in range(3):
        exe.run(prog, feed=feed, fetch_list=[outs["Out"][0]], scope=scope, training=True)
        kids.append(len(scope.kids))
    assert not launches and captured_run.state_of(exe.prepare(prog), scope, True) is None
    assert kids[0] == kids[1] == kids[2]
