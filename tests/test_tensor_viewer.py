"""The tensor viewer: slices, value classes, diff against the previous value, send to notebook."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("anywidget")

import kernelcore as kc  # noqa: E402
import kernelcore_widgets as kw  # noqa: E402
from kernelcore.runtime.values import health, slice_2d  # noqa: E402
from test_contract import check, rnn_program  # noqa: E402
from test_widgets import views  # noqa: E402,F401  - a stub view where the front end is not built


def numbers(data):
    return np.array([[np.nan if x == "NaN" else np.inf if x == "Infinity" else -np.inf if x == "-Infinity" else x
                      for x in row] for row in data], dtype=np.float64)


def test_health_counts_every_value_class():
    a = np.array([[-2, 0, np.nan, np.inf], [-np.inf, 3, 0, -0.5]], np.float32)
    assert health(np, a) == {"negative": 2, "zero": 2, "positive": 1, "nan": 1, "pos_inf": 1, "neg_inf": 1,
                             "total": 8}
    assert health(np, np.array([True, False, True])) == {"negative": 0, "zero": 1, "positive": 2, "nan": 0,
                                                         "pos_inf": 0, "neg_inf": 0, "total": 3}
    assert health(np, np.array([-3, 0, 7], np.int64))["negative"] == 1
    with pytest.raises(TypeError):
        health(np, ["not", "a", "tensor"])


@pytest.mark.parametrize("shape,axes,index", [((4, 5), (0, 1), (0, 0)), ((4, 5), (1, 0), (0, 0)),
                                              ((2, 3, 4), (2, 0), (0, 1, 0)), ((3, 2, 4, 5), (1, 3), (2, 0, 3, 0))])
def test_slice_2d_is_numpys_slice(shape, axes, index):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    got, steps = slice_2d(np, x, axes[0], axes[1], index)
    key = tuple(slice(None) if ax in axes else i for ax, i in enumerate(index))
    want = x[key]
    if axes[0] > axes[1]:
        want = want.T
    assert steps == (1, 1)
    np.testing.assert_array_equal(got, want)


def test_a_large_slice_is_strided_to_at_most_256_per_side():
    x = np.zeros((1000, 300), np.float32)
    got, (rs, cs) = slice_2d(np, x, 0, 1, (0, 0))
    assert got.shape[0] <= 256 and got.shape[1] <= 256 and (rs, cs) == (4, 2)
    with pytest.raises(ValueError):
        slice_2d(np, x, 0, 0, (0, 0))
    with pytest.raises(ValueError):
        slice_2d(np, np.zeros((2, 3, 4)), 0, 1, (0, 0, 9))


def test_the_viewer_shows_a_slice_and_moves_with_its_messages():
    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    x[1, 2, 3] = np.nan
    v = kw.TensorViewer(x, name="x")
    assert v.shape == [2, 3, 4] and v.axes == [1, 2] and v.index == [0, 0, 0] and not v.has_previous
    np.testing.assert_array_equal(numbers(v.slice["data"]), x[0])
    v.handle_message({"type": "view", "index": [1, 0, 0]})
    np.testing.assert_array_equal(numbers(v.slice["data"]), x[1])  # the NaN comes through as "NaN"
    assert v.slice["data"][2][3] == "NaN" and v.health["nan"] == 1
    v.handle_message({"type": "view", "axes": [2, 0], "index": [0, 1, 0]})
    np.testing.assert_array_equal(numbers(v.slice["data"]), x[:, 1, :].T)
    v.handle_message({"type": "view", "axes": [0, 0]})
    assert "cannot show" in v.status and v.axes == [2, 0]  # a bad request says so and changes nothing
    check("ValuePreview", {"shape": v.shape, "dtype": v.dtype, "place": v.place, "min": None, "max": None,
                           "mean": None, "std": None, "nan": 0, "inf": 0, "sample": v.slice["data"],
                           "kind": "heatmap"})  # the slice's cells follow the contract's SampleValue


def test_diff_against_the_previous_value_and_send_to_notebook():
    old = np.ones((3, 3), np.float32)
    new = old.copy()
    new[1, 1] = 4.0
    ns = {}
    v = kw.TensorViewer(new, name="w", previous=old, namespace=ns)
    assert v.has_previous
    v.handle_message({"type": "view", "diff": True})
    d = numbers(v.slice["data"])
    assert d[1, 1] == 3.0 and np.count_nonzero(d) == 1 and v.health["zero"] == 8
    v.handle_message({"type": "send", "name": "w_now", "what": "value"})
    np.testing.assert_array_equal(ns["w_now"], new)
    v.handle_message({"type": "send", "name": "w_diff", "what": "slice"})
    np.testing.assert_array_equal(ns["w_diff"], new - old)
    v.handle_message({"type": "send", "name": "not a name"})
    assert "not sent" in v.status and "not a name" not in ns


def test_of_a_session_diffs_a_step_variable_against_its_previous_timestep():
    prog, scope, feed, out = rnn_program(T=3)
    sess = kc.debug(prog, feed, [out], scope)
    sess.break_on("tanh")
    sess.cont()
    sess.cont()  # paused before tanh at t=1: its step scope's elementwise_add output is t=1's
    name = sess.op.in_names[0]
    latest = sess.value(name)
    v = kw.TensorViewer.of(sess, name)
    assert v.has_previous
    v.set_view(diff=True)
    writes = [val for e in sess.trace.events if e.kind == "op_run" and e.values
              for n, val in e.values if n == name]
    np.testing.assert_allclose(numbers(v.slice["data"]), latest.astype(np.float64) - writes[-2], rtol=1e-6)
