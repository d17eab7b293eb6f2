"""Model.fit (kernelcore/api/model.py): one training step per feed dict, and its record= option, the flight
recorder over every step. Expected values come from the same steps run by hand with Model.run, and the expected
hit from a plain traced run scanned with NumPy, never from the recorder."""
import numpy as np
import pytest

import kernelcore as kc
from kernelcore.errors import FeedError, KernelcoreError, ProgramError

BAD_STEP, STEPS = 3, 6


def _model(seed=0):
    model = kc.Model(scope=kc.Scope())
    hidden = model.fc_layer(input="x", size=16, activation="tanh", input_dim=8)
    prob = model.fc_layer(input=hidden, size=3, activation="softmax")
    loss = model.mean(model.cross_entropy(input=prob, label="label"))
    model.backward(loss)
    model.sgd(learning_rate=0.1)
    model.initialize_parameters()
    return model, loss


def _batches(bad_step=None):
    rng = np.random.default_rng(1)
    out = []
    for step in range(STEPS):
        x = rng.standard_normal((4, 8)).astype("float32")
        if step == bad_step:
            x[2, 5] = np.nan  # one corrupt input
        out.append({"x": x, "label": rng.integers(0, 3, (4, 1)).astype("int64")})
    return out


def _same_start(model, other):
    for v in model.scope.local_vars():
        other.scope.set(v.name, np.array(v.value, copy=True))


def test_fit_runs_the_steps_a_hand_written_loop_runs():
    model, loss = _model()
    by_hand, hand_loss = _model()
    _same_start(model, by_hand)
    result = model.fit(_batches(), fetch=[loss])
    expected = []
    for batch in _batches():
        for name, value in batch.items():
            by_hand.fill(name, value)
        expected.append(by_hand.run(fetch=[hand_loss], training=True))
    assert result.steps == STEPS and result.recorder is None and not result.stopped
    np.testing.assert_array_equal(np.array(result.fetched, dtype=np.float64), np.array(expected, dtype=np.float64))


def _first_nonfinite_write(model, batches):
    """(step, op index, variable) of the first op output holding NaN/Inf, from plain traced steps."""
    for step, batch in enumerate(batches):
        for name, value in batch.items():
            model.fill(name, value)
        with kc.trace(retain="references") as tr:
            model.run(training=True)
        for e in tr.events:
            if e.kind == "op_run":
                for name, v in e.values:
                    a = np.asarray(v)
                    if a.dtype.kind == "f" and not np.isfinite(a).all():
                        return step, e.op, name
    return None


@pytest.mark.parametrize("record", [True, {"background": False}])
def test_a_recorded_fit_stops_at_the_first_nan_an_op_wrote(record):
    model, loss = _model()
    oracle, _ = _model()
    _same_start(model, oracle)
    expected = _first_nonfinite_write(oracle, _batches(BAD_STEP))
    assert expected is not None and expected[0] == BAD_STEP
    result = model.fit(_batches(BAD_STEP), fetch=[loss], record=record)
    hit = result.recorder.hit
    # the stopped step fetched nothing: with the summaries made as each op ends, the bad step; by default (an
    # iteration's made while the next one runs) the step after it
    assert result.stopped and result.steps == BAD_STEP + (record is True)
    assert (hit.iteration, hit.op, hit.var) == expected
    assert result.recorder.session.stop_reason.startswith("recorder: ")


def test_record_takes_the_recorder_s_keywords_or_a_recorder():
    model, loss = _model()
    result = model.fit(_batches(BAD_STEP), fetch=[loss], record={"keep_last": 1, "nan": False})
    rec = result.recorder
    assert result.steps == STEPS and not result.stopped and rec.iterations == STEPS
    assert [it.index for it in rec.kept] == [STEPS - 1]
    assert rec.summaries.columns()["nan"].sum() > 0  # the corrupt step's NaN is in the rows, unwatched

    model2, loss2 = _model()
    rec2 = kc.record(model2.network, model2.scope, nan=False)
    rec2.watch(op_type="softmax", cond="range", lo=0, hi=1)
    result2 = model2.fit(_batches(), fetch=[loss2], record=rec2)
    assert result2.recorder is rec2 and rec2.iterations == STEPS and rec2.hit is None


def test_bad_fit_arguments_are_refused_clearly():
    model, loss = _model()
    with pytest.raises(KernelcoreError, match="kc.record does not take"):
        model.fit(_batches(), record={"keep_lats": 1})
    with pytest.raises(KernelcoreError, match="record= takes"):
        model.fit(_batches(), record="yes")
    other = kc.Model(scope=kc.Scope())
    with pytest.raises(KernelcoreError, match="another program or scope"):
        model.fit(_batches(), record=kc.record(other.network, other.scope))
    with pytest.raises(FeedError, match="batch 0 is a list"):
        model.fit([[1, 2]])
    untrained = kc.Model(scope=kc.Scope())
    untrained.fc_layer(input="x", size=2, input_dim=8)
    with pytest.raises(ProgramError, match="choose an optimizer"):
        untrained.fit(_batches())
