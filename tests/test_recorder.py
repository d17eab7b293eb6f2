"""The flight recorder (kernelcore/observe/recorder.py): health summaries of every op output and gradient per
iteration, watches judged on them, the stop that becomes a paused debug session, the columns and their Parquet
file. Expected places come from plain traced runs of the same loop scanned with NumPy, never from the recorder."""
import math
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import kernelcore as kc
from kernelcore.errors import KernelcoreError, UnknownNameError
from kernelcore.native import health as native_health
from kernelcore.observe import health_summary, summary_table
from kernelcore.observe.health_summary import summarize
from kernelcore.observe.recorder import RecordingStopped, record
from kernelcore.runtime.executor import add_observer, remove_observer

L = kc.layers
RAISE_AT, HIGH_LR = 5, 50.0


def _mlp():
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        x, y = L.data("x", [-1, 8]), L.data("y", [-1, 1])
        err = kc.op.elementwise_sub(L.fc(L.fc(x, 16, act="tanh"), 1), y)
        loss = L.mean(kc.op.elementwise_mul(err, err))
        kc.optimizer.SGD(learning_rate=0.05).minimize(loss)
    scope = kc.Scope()
    kc.Executor().run(startup, scope=scope)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 8)).astype("float32")
    return main, scope, loss, {"x": x, "y": x.sum(1, keepdims=True).astype("float32")}


def _copy_scope(scope):
    out = kc.Scope()
    for v in scope.local_vars():
        out.set(v.name, np.array(v.value, copy=True))
    return out


def _train(main, scope, loss, feed, iterations, observe=None):
    exe = kc.Executor()
    for it in range(iterations):
        if it == RAISE_AT:
            scope.set("learning_rate_0", np.array(HIGH_LR, "float32"))
        if observe is None:
            exe.run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
        else:
            with kc.trace(retain="references") as tr:
                exe.run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
            if observe(it, tr):
                return it
    return None


def _first_nonfinite(tr):
    for e in tr.events:
        if e.kind == "op_run":
            for name, v in e.values:
                if np.asarray(v).dtype.kind == "f" and not np.isfinite(v).all():
                    return e, name
    return None


@pytest.mark.parametrize("background", [False, True])
def test_a_raised_learning_rate_stops_at_the_first_non_finite_op_of_the_right_iteration(background):
    main, scope, loss, feed = _mlp()
    oracle_scope = _copy_scope(scope)
    found = {}

    def first_bad(it, tr):
        bad = _first_nonfinite(tr)
        if bad:
            found["it"], found["event"], found["var"] = it, *bad
        return bad is not None
    assert _train(main, oracle_scope, loss, feed, 60, first_bad) is not None
    assert found["it"] > RAISE_AT  # the blow-up takes a few iterations after the raise

    with record(main, scope, background=background) as rec:
        _train(main, scope, loss, feed, 60)
    hit = rec.hit
    assert (hit.iteration, hit.block, hit.op, hit.var) == (found["it"], found["event"].block, found["event"].op,
                                                           found["var"])
    # the loop stopped inside that iteration; with background=True once the one after it had run (its summaries
    # are made while the next iteration runs, and judged at that one's end)
    assert rec.iterations == found["it"] + (2 if background else 0)

    sess = rec.session
    assert sess.stop_reason.startswith("recorder:") and "not deterministic" not in sess.stop_reason
    last = next(e for e in reversed(sess.trace.events) if e.kind == "op_run")
    assert (last.block, last.op) == (hit.block, hit.op)
    assert not np.isfinite(sess.value(hit.var)).all()
    before = sess.goto(sess.pauses[sess.pause_index - 1].index)  # time travel: just before that op ran
    inputs = [n for _, n, _, _ in last.inputs]
    assert all(np.isfinite(before.value(n)).all() for n in inputs if n != hit.var)
    sess.cont()  # the rest of the iteration runs on from the pause
    assert sess.finished


@pytest.mark.parametrize("background", [False, True])
def test_summaries_match_numpy_for_every_output_and_gradient_of_kept_iterations(monkeypatch, background):
    monkeypatch.setattr(summary_table, "CHUNK_ROWS", 7)  # rows of both iterations cross chunk boundaries
    main, scope, loss, feed = _mlp()
    with record(main, scope, keep_last=2, nan=False, background=background) as rec:
        kc.Executor().run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
        kc.Executor().run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
    cols = rec.summaries.columns()
    assert any("@GRAD" in v for v in cols["var"])
    for it in (0, 1):
        run = rec.run(it)
        ops = [e for e in run.events if e.kind == "op_run"]
        rows = np.flatnonzero(cols["iteration"] == it)
        assert len(rows) == sum(len(e.values) for e in ops)
        values = [(order, name, v) for order, e in enumerate(ops) for name, v in e.values]
        for r, (order, name, v) in zip(rows, values):
            a = np.asarray(v, np.float64).ravel()
            assert (cols["order"][r], cols["var"][r]) == (order, name)
            assert cols["numel"][r] == a.size
            assert (cols["negative"][r], cols["zero"][r], cols["positive"][r]) == \
                ((a < 0).sum(), (a == 0).sum(), (a > 0).sum())
            assert cols["min"][r] == a.min() and cols["max"][r] == a.max()
            assert cols["mean"][r] == pytest.approx(a.mean(), rel=1e-5, abs=1e-6)
            assert cols["l2"][r] == pytest.approx(np.linalg.norm(a), rel=1e-5)


finite_or_not = st.sampled_from([0.0, -0.0, 1.5, -2.0, 3e38, -3e38, 1e-40, np.nan, np.inf, -np.inf])


@settings(max_examples=60, deadline=None)
@given(st.lists(finite_or_not, min_size=0, max_size=40), st.sampled_from(["float16", "float32", "float64"]))
def test_summary_of_any_float_array_counts_like_numpy(xs, dtype):
    with np.errstate(over="ignore"):
        a = np.array(xs, dtype=dtype)
    s = summarize(a)
    f = a.astype(np.float64)
    assert s.numel == a.size and s.nan == np.isnan(f).sum()
    assert (s.pos_inf, s.neg_inf) == (np.isposinf(f).sum(), np.isneginf(f).sum())
    fin = f[np.isfinite(f)]
    assert (s.negative, s.zero, s.positive) == ((fin < 0).sum(), (fin == 0).sum(), (fin > 0).sum())
    if fin.size:
        assert s.min == fin.min() and s.max == fin.max()
        assert s.l2 == pytest.approx(math.sqrt((fin ** 2).sum()), rel=1e-6)
    else:
        assert math.isnan(s.min) and s.l2 == 0.0


def test_integer_and_bool_outputs_are_summarised_and_other_values_skipped():
    s = summarize(np.array([[-3, 0, 4]], dtype=np.int64))
    assert (s.negative, s.zero, s.positive, s.min, s.max, s.l2) == (1, 1, 1, -3.0, 4.0, 5.0)
    assert summarize(np.array([True, False, True])).positive == 2
    assert summarize([1, 2]) is None and summarize(np.array(["a"])) is None


@pytest.mark.parametrize("chunk_rows", [summary_table.CHUNK_ROWS, 3])
def test_a_gradient_norm_watch_stops_where_numpy_finds_the_norm_first_above_the_bound(monkeypatch, chunk_rows):
    monkeypatch.setattr(summary_table, "CHUNK_ROWS", chunk_rows)  # 3: a watch reads rows beside chunk boundaries
    main, scope, loss, feed = _mlp()
    oracle_scope = _copy_scope(scope)
    grad = "fc_0.w_0@GRAD"
    norms = []

    def norm_of(it, tr):
        norms.append(next(np.linalg.norm(np.asarray(v, np.float64)) for e in tr.events if e.kind == "op_run"
                          for name, v in e.values if name == grad))
        return False
    _train(main, oracle_scope, loss, feed, RAISE_AT + 3, norm_of)
    # the bound sits far between the norms before the jump and the first after it, so rounding cannot move it
    jump = next(j for j in range(1, len(norms)) if norms[j] > 10 * max(norms[:j]))
    bound = math.sqrt(max(norms[:jump]) * norms[jump])
    with record(main, scope, nan=False) as rec:
        rec.watch(grad, "grad_norm", hi=bound)
        _train(main, scope, loss, feed, 60)
    assert rec.hit is not None and (rec.hit.iteration, rec.hit.var) == (jump, grad)
    assert "explosion" in rec.hit.message


def test_other_scopes_runs_are_no_iterations_and_only_the_last_k_keep_values():
    main, scope, loss, feed = _mlp()
    other = _copy_scope(scope)
    exe = kc.Executor()
    with record(main, scope, keep_last=1) as rec:
        for _ in range(3):
            exe.run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
            exe.run(main, feed=feed, fetch_list=[loss], scope=other, training=True)
    assert rec.iterations == 3 and set(rec.summaries.columns()["iteration"]) == {0, 1, 2}
    assert [i.index for i in rec.kept] == [2]
    with pytest.raises(KernelcoreError, match="iteration 0 kept no values"):
        rec.run(0)
    with pytest.raises(KernelcoreError, match="no watch stopped"):
        rec.session
    ops = len(main.global_block().ops)
    assert rec.summaries.nbytes / (rec.iterations * ops) <= 256  # the budget per op per iteration
    numbers = rec.numbers(2, "l2")
    assert set(numbers) == {kc.ir.node_ids.op_id(0, i) for i in range(ops) if main.global_block().ops[i].output_arg_names}


def test_summaries_save_as_parquet_with_the_same_columns(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    main, scope, loss, feed = _mlp()
    with record(main, scope, nan=False) as rec:
        kc.Executor().run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
    rec.summaries.save(tmp_path / "run.parquet")
    table = pq.read_table(tmp_path / "run.parquet")
    cols = rec.summaries.columns()
    assert set(table.column_names) == set(cols)
    for name, want in cols.items():
        got = table.column(name).to_pylist()
        if name == "timestep":  # null in Arrow outside loops, -1 in the NumPy columns
            got = [-1 if t is None else t for t in got]
        assert got == list(want), name


def test_without_pyarrow_the_columns_stay_and_arrow_output_is_refused_clearly(monkeypatch):
    main, scope, loss, feed = _mlp()
    with record(main, scope, nan=False) as rec:
        kc.Executor().run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(KernelcoreError, match=r"kernelcore\[record\]"):
        rec.summaries.save("never.parquet")
    assert len(rec.summaries.columns()["l2"]) == len(rec.summaries)


def test_bad_arguments_are_refused():
    with pytest.raises(KernelcoreError, match="keep_last"):
        record(keep_last=-1)
    with pytest.raises(KernelcoreError, match="unknown watch condition"):
        record().watch("x", "explodes")
    main, scope, loss, feed = _mlp()
    with pytest.raises(UnknownNameError, match="fc_0.w_0@GRAD"):
        record(main, scope).watch("fc_0.w0@GRAD", "grad_norm", hi=1.0)  # misspelt: it would never hit
    with pytest.raises(UnknownNameError):
        record(main, scope).watch(op_type="tahn", cond="nan")
    for background in (False, True):
        main, scope, loss, feed = _mlp()
        rec = record(main, scope, background=background)
        rec.watch(cond="range", lo=-0.1, hi=0.1)
        token = add_observer(rec)  # observed outside the recorder's own with block: the stop reaches the caller
        try:
            exe = kc.Executor()
            if background:  # judged at the next run's end
                exe.run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
            with pytest.raises(RecordingStopped, match="leave"):
                exe.run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
        finally:
            remove_observer(token)


def _rnn():
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        x = L.data("x", [6, 4, 3])
        h = L.simple_rnn(x, 5, act="relu")
        loss = L.mean(L.fc(L.sequence_last(h), 1))
        kc.optimizer.SGD(learning_rate=0.01).minimize(loss)
    scope = kc.Scope()
    kc.Executor().run(startup, scope=scope)
    rng = np.random.default_rng(1)
    x = np.abs(rng.standard_normal((6, 4, 3))).astype("float32") * np.arange(1, 7, dtype="float32")[:, None, None]
    return main, scope, loss, {"x": x}


@pytest.mark.parametrize("background", [False, True])
def test_a_hit_inside_a_loop_pauses_at_that_timestep(background):
    main, scope, loss, feed = _rnn()
    step_add = next(op for op in main.block(1).ops if op.type == "elementwise_add")
    name = step_add.output("Out")[0]
    with kc.trace(retain="references") as tr:
        kc.Executor().run(main, feed=feed, fetch_list=[loss], scope=_copy_scope(scope), training=True)
    writes = [(e, v) for e in tr.events if e.kind == "op_run" for n, v in e.values if n == name]
    bound = float(np.median([np.abs(v).max() for _, v in writes]))  # about half the timesteps pass it
    want = next(e for e, v in writes if np.abs(v).max() > bound)
    with record(main, scope, nan=False, background=background) as rec:
        rec.watch(name, "overflow", bound=bound)
        kc.Executor().run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
    hit = rec.hit
    assert (hit.block, hit.op, hit.timestep) == (1, step_add.idx, want.timestep) and want.timestep > 0
    # stopped there; with background=True the iteration had run to its end, and all its rows are kept
    last = max(e.timestep for e, _ in writes) if background else want.timestep
    assert set(rec.summaries.columns()["timestep"]) == {-1, *range(last + 1)}
    sess = rec.session
    assert "not deterministic" not in sess.stop_reason
    assert sess.position.timestep == want.timestep
    np.testing.assert_array_equal(sess.value(name), next(v for e, v in writes if e is want))
    fork = sess.set_value(name, np.zeros_like(sess.value(name)))  # inside a timestep: edited, no twin
    assert fork.twin is None
    with pytest.raises(KernelcoreError, match="sub-block"):
        fork.compare()


def test_a_program_with_feed_ops_is_replayed_with_that_iteration_s_feeds(tmp_path):
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        out = L.fc(L.fc(L.data("x", [-1, 4]), 6, act="tanh"), 2)
    scope = kc.Scope()
    kc.Executor().run(startup, scope=scope)
    kc.save_inference_model(tmp_path / "m", main, scope, feed_names=["x"], fetch_names=[out.name])
    prog, scope, feeds, fetches = kc.load_inference_model(tmp_path / "m")
    assert any(op.type == "feed" for op in prog.global_block().ops)
    batches = [np.full((3, 4), i, "float32") for i in range(4)]
    batches[2][1, 2] = np.nan  # the bad batch
    exe = kc.Executor()
    with record(prog, scope) as rec:
        for b in batches:
            exe.run(prog, feed={"x": b}, scope=scope)
    assert rec.hit.iteration == 2
    sess = rec.session
    assert "not deterministic" not in sess.stop_reason
    np.testing.assert_array_equal(sess.value("x"), batches[2])  # that iteration's batch, not the last one fed


def test_a_failure_on_the_summary_thread_reaches_the_loop(monkeypatch):
    from kernelcore.observe import iteration_summaries

    def broken(*args):
        raise ValueError("summary failed")
    monkeypatch.setattr(iteration_summaries.IterationRows, "fill", broken)  # the C pass, on the summary thread
    main, scope, loss, feed = _mlp()
    with pytest.raises(ValueError, match="summary failed"):  # the next iteration's end raises it
        with record(main, scope, background=True):
            for _ in range(2):
                kc.Executor().run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
    with pytest.raises(ValueError, match="summary failed"):  # the last iteration's: the recording's end
        with record(main, scope, background=True):
            kc.Executor().run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)


def test_two_kept_iterations_compare_from_the_first_op_that_reads_an_updated_parameter():
    main, scope, loss, feed = _mlp()
    with record(main, scope, keep_last=2) as rec:
        for _ in range(2):
            kc.Executor().run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
    cmp = kc.compare_runs(rec.run(0), rec.run(1), rtol=0.0)
    params = {n for op in main.global_block().ops if op.type == "sgd" for n in op.input("Param")}
    first_reader = next(op for op in main.global_block().ops if params & set(op.input_arg_names))
    assert (cmp.first_divergence.block, cmp.first_divergence.op) == (0, first_reader.idx)
    assert all(d.max_abs == 0.0 for d in cmp.diffs if d.order < cmp.first_divergence.order)


@pytest.mark.skipif(not native_health.available(), reason="the C kernels are not built here")
@pytest.mark.parametrize("background", [False, True])
def test_transposed_views_and_integer_outputs_take_the_c_summary_and_match_numpy(monkeypatch, background):
    fallbacks = []

    def counted(value, rows, row):
        fallbacks.append(value)
        return health_summary.write_reference(value, rows, row)
    main = kc.Program()
    with kc.program_guard(main, kc.Program()):
        x = L.data("x", [4, 6])
        t = kc.op.transpose2(x, axis=[1, 0])  # a view of the feed, which no op wrote: not contiguous
        kc.op.reshape2(t, shape=[24])
        kc.op.cast(x, in_dtype=5, out_dtype=3)  # int64
        kc.op.scale(x, scale=2.0)
        kc.op.scale(t, scale=3.0)  # an output laid out as its transposed input: one block, not C-ordered
        kc.op.slice(x, axes=[1], starts=[1], ends=[4])  # a view with gaps between its rows
    scope = kc.Scope()
    feed = {"x": np.arange(24, dtype="float32").reshape(4, 6) - 5}
    with record(main, scope, keep_last=1, background=background) as rec:
        monkeypatch.setattr(rec, "_write", native_health.summary_writer(counted))
        kc.Executor().run(main, feed=feed, scope=scope)
    assert fallbacks == []
    cols = rec.summaries.columns()
    values = [v for e in rec.run(0).events if e.kind == "op_run" for _, v in e.values]
    assert len(values) == len(cols["numel"])
    for r, v in enumerate(values):
        a = np.asarray(v, np.float64).ravel()
        assert (cols["numel"][r], cols["negative"][r], cols["zero"][r], cols["positive"][r]) == \
            (a.size, (a < 0).sum(), (a == 0).sum(), (a > 0).sum())
        if a.size:
            assert (cols["min"][r], cols["max"][r]) == (a.min(), a.max())
            assert cols["l2"][r] == pytest.approx(np.linalg.norm(a), rel=1e-6)


def test_the_row_buffer_keeps_the_size_it_was_made_with(monkeypatch):
    table = summary_table.SummaryTable()
    monkeypatch.setattr(summary_table, "CHUNK_ROWS", 10_000)  # a later change must not let a writer pass its end
    write = health_summary.summary_writer()
    value = np.arange(5, dtype=np.float32)
    for i in range(2 * 4096 + 3):
        table.add(0, i, 0, value, write)
    rows = table.rows()
    assert len(rows) == 2 * 4096 + 3 and len(table._chunks) == 3
    assert (rows["max"] == 4).all() and (rows["zero"] == 1).all()


@pytest.mark.parametrize("background", [False, True])
def test_a_nan_among_an_optimizer_s_several_outputs_stops_at_that_output(background):
    # Adam writes five outputs per parameter, summarised in one call; a NaN learning rate spoils ParamOut alone
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        x, y = L.data("x", [-1, 8]), L.data("y", [-1, 1])
        err = kc.op.elementwise_sub(L.fc(L.fc(x, 16, act="tanh"), 1), y)
        loss = L.mean(kc.op.elementwise_mul(err, err))
        kc.optimizer.Adam(learning_rate=0.01).minimize(loss)
    scope = kc.Scope()
    kc.Executor().run(startup, scope=scope)
    x = np.random.default_rng(0).standard_normal((32, 8)).astype("float32")
    feed = {"x": x, "y": x.sum(1, keepdims=True).astype("float32")}
    lr = next(v.name for v in scope.local_vars() if v.name.startswith("learning_rate"))

    def run(s, observe):
        exe = kc.Executor()
        for it in range(4):
            if it == 2:
                s.set(lr, np.array(np.nan, "float32"))
            with kc.trace(retain="references") as tr:
                exe.run(main, feed=feed, fetch_list=[loss], scope=s, training=True)
            if observe(it, tr):
                return
    expected = []

    def first_nonfinite(it, tr):
        for e in tr.events:
            if e.kind == "op_run":
                for name, v in e.values:
                    if np.asarray(v).dtype.kind == "f" and not np.isfinite(v).all():
                        expected.append((it, e.op_type, e.op, name))
                        return True
        return False
    run(_copy_scope(scope), first_nonfinite)
    assert expected and expected[0][1] == "adam" and "Moment" not in expected[0][3]
    with record(main, scope, background=background) as rec:
        run(scope, lambda it, tr: False)
    hit = rec.hit
    assert (hit.iteration, hit.op_type, hit.op, hit.var) == expected[0]


@pytest.mark.parametrize("background", [False, True])
def test_a_run_on_the_gpu_path_is_summarised_and_stopped_like_a_host_run(background):
    # the strict stand-in runs the GPU code path without a GPU: its arrays are device arrays to the recorder
    from kernelcore.runtime.place import StrictPlace, to_host
    main, host_scope, loss, feed = _mlp()
    exe = kc.Executor(StrictPlace())
    lr = "learning_rate_0"

    def on_device():
        s = kc.Scope()
        for v in host_scope.local_vars():
            s.set(v.name, StrictPlace().xp.asarray(np.array(v.value, copy=True)))
        return s
    scope = on_device()

    def run(s, observe):
        for it in range(3):
            if it == 1:
                s.set(lr, StrictPlace().xp.asarray(np.array(np.nan, "float32")))
            with kc.trace(retain="references") as tr:
                exe.run(main, feed=feed, fetch_list=[loss], scope=s, training=True)
            if observe(it, tr):
                return
    expected, firsts = [], []

    def scan(it, tr):
        ops = [e for e in tr.events if e.kind == "op_run"]
        firsts.append([(e.op, name, np.asarray(to_host(v), np.float64)) for e in ops for name, v in e.values])
        for e in ops:
            for name, v in e.values:
                if not np.isfinite(np.asarray(to_host(v), np.float64)).all():
                    expected.append((it, e.op, name))
                    return True
        return False
    run(on_device(), scan)
    with record(main, scope, executor=exe, background=background) as rec:
        run(scope, lambda it, tr: False)
    assert expected[0][0] == 1 and rec.hit is not None
    assert (rec.hit.iteration, rec.hit.op, rec.hit.var) == expected[0]
    cols = rec.summaries.columns()
    rows = np.flatnonzero(cols["iteration"] == 0)
    assert len(rows) == len(firsts[0])
    for r, (op, name, a) in zip(rows, firsts[0]):
        assert (cols["op"][r], cols["var"][r], cols["numel"][r]) == (op, name, a.size)
        assert (cols["negative"][r], cols["zero"][r]) == ((a < 0).sum(), (a == 0).sum())
        assert cols["min"][r] == a.min() and cols["max"][r] == a.max()
        assert cols["l2"][r] == pytest.approx(np.linalg.norm(a), rel=1e-5)


@pytest.mark.skipif(not native_health.available(), reason="the C kernels are not built here")
def test_each_op_s_outputs_views_included_take_one_c_call_and_match_numpy(monkeypatch):
    # a C call and a Python frame per output cost more than the pass over a small array: one call per op
    main, scope, loss, feed = _mlp()
    with record(main, scope, keep_last=1) as rec:
        calls = []
        one, many = rec._write, rec._write_many
        monkeypatch.setattr(rec, "_write_many", lambda values, rows, first: calls.append(len(values)) or
                            many(values, rows, first))
        monkeypatch.setattr(rec, "_write", lambda value, rows, row: calls.append(1) or one(value, rows, row))
        kc.Executor().run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
    events = [e for e in rec.run(0).events if e.kind == "op_run"]
    assert len(calls) <= len(events)  # (an array written before repeats its row: no call)
    cols = rec.summaries.columns()
    values = [v for e in events for _, v in e.values]
    assert len(values) == len(cols["numel"]) > sum(calls)
    for r, v in enumerate(values):
        assert cols["nan"][r] == 0 and cols["numel"][r] == np.asarray(v).size
        a = np.asarray(v, np.float64).ravel()
        if a.size:
            assert (cols["min"][r], cols["max"][r]) == (a.min(), a.max())
            assert cols["l2"][r] == pytest.approx(np.linalg.norm(a), rel=1e-5)


@pytest.mark.parametrize("program", ["mlp", "rnn"])
def test_rows_written_an_op_at_a_time_an_output_at_a_time_and_an_iteration_at_a_time_are_the_same(program):
    # runs of new arrays, repeated rows of arrays written before and views between them keep their outputs' order,
    # whether an op's outputs go in one C call, each in its own, or a whole iteration's in one on the summary thread
    main, scope, loss, feed = _mlp() if program == "mlp" else _rnn()
    tables = []
    for how in ("op", "output", "iteration"):
        s = _copy_scope(scope)
        exe = kc.Executor()  # one: an iteration at a time, the later ones are named by the first one's plan
        with record(main, s, background=how == "iteration") as rec:
            if how == "output":
                rec._write_many = None  # every output through the per-output loop
            for _ in range(3):
                exe.run(main, feed=feed, fetch_list=[loss], scope=s, training=True)
        tables.append(rec.summaries.columns())
    one_call = tables[0]
    assert len(one_call["numel"]) > 0 and (one_call["numel"] == 0).any() == (program == "rnn")
    for other in tables[1:]:
        assert one_call.keys() == other.keys()
        for name in one_call:
            np.testing.assert_array_equal(one_call[name], other[name], err_msg=name)  # (NaN equal to NaN)


def test_an_iteration_named_by_its_plan_is_walked_again_where_an_output_is_not_what_the_plan_says(monkeypatch):
    # the plan holds what each output was; an output of another size (another batch) makes it walk again, and the
    # rows are those of a recorder that walks every iteration
    import kernelcore.observe.recorder as recorder_module
    main, scope, loss, feed = _mlp()
    half = {k: v[:16] for k, v in feed.items()}
    feeds = [feed, feed, half, half, feed]
    real, walked = recorder_module.name_rows, []
    monkeypatch.setattr(recorder_module, "name_rows", lambda *args: walked.append(1) or real(*args))
    tables, walks = [], []
    for plan in (True, False):
        s = _copy_scope(scope)
        walked.clear()
        exe = kc.Executor()  # (one executor: its prepared ops are the plan's)
        with record(main, s, background=True) as rec:
            for f in feeds:
                if not plan:
                    rec._plan = None  # (forgotten before each iteration: every one is walked)
                exe.run(main, feed=f, fetch_list=[loss], scope=s, training=True)
        tables.append(rec.summaries.columns())
        walks.append(len(walked))
        assert rec.run(4).trace.retained_bytes == sum(
            np.asarray(v).nbytes for e in rec.run(4).events if e.kind == "op_run" for _, v in e.values)
    assert walks == [3, 5]  # the first iteration and each change of batch; without a plan every one
    planned, each = tables
    per_iteration = [planned["numel"][planned["iteration"] == i].sum() for i in range(len(feeds))]
    assert per_iteration[2] == per_iteration[3] < per_iteration[0] == per_iteration[1] == per_iteration[4]
    for name in planned:
        np.testing.assert_array_equal(planned[name], each[name], err_msg=name)


@pytest.mark.parametrize("background", [False, True])
def test_a_mean_or_norm_past_float32_s_range_is_kept_as_inf_without_a_warning(background, monkeypatch):
    import warnings
    monkeypatch.setattr(summary_table, "CHUNK_ROWS", 4)  # the per-op path's rows become chunks too
    main = kc.Program()
    with kc.program_guard(main, kc.Program()):
        x = L.data("x", [4, 3], dtype="float64")
        kc.op.scale(x, scale=2.0)  # float64 values of 2e300: their mean and L2 norm pass float32's range
    scope = kc.Scope()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        with record(main, scope, background=background) as rec:
            for _ in range(3):
                kc.Executor().run(main, feed={"x": np.full((4, 3), 1e300)}, scope=scope)
        cols = rec.summaries.columns()
    big = cols["max"] > 1e299
    assert big.any() and np.isinf(cols["l2"][big]).all() and np.isinf(cols["mean"][big]).all()
    assert (cols["max"][big] == 2e300).all()  # min and max stay float64


def test_the_numpy_reference_keeps_a_sum_past_float64_s_range_as_inf_without_a_warning():
    # (what runs with the C kernels off: KERNELCORE_NATIVE=off, or a device array's module without them)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for value in (np.full((4, 3), 1e300), np.array([1e300, -1e300, np.nan, 1e300])):
            s = summarize(value)
            assert s.max == 1e300 and math.isinf(s.l2)
