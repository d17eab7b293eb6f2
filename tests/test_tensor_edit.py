"""The tensor viewer at a pause: Zero, Edit cell and Replace with a notebook variable go to sess.set_value (the
run forks, the trace records the edit), each checked first with a clear error; Copy value as a NumPy literal;
and a viewer of a session's variable follows the session's moves instead of keeping the old value."""
import numpy as np
import pytest

import kernelcore as kc
import kernelcore_widgets as kw
from kernelcore.observe.forks import EDIT_OP_TYPE
from kernelcore_widgets import tensor_edit

from test_contract import rnn_program
from test_recorder import _mlp
from test_widgets import views  # noqa: F401  - a stub view where the front end is not built


def _paused():
    """A session paused before its first op, the first fc's product; (session, that product's weight)."""
    main, scope, loss, feed = _mlp()
    sess = kc.debug(main, feed=feed, fetch_list=[loss], scope=scope)
    mul = main.global_block().ops[0]
    assert mul.type == "mul" and (sess.position.innermost.block, sess.position.innermost.op) == (0, 0)
    return sess, mul.input("Y")[0]


def _sent(view):
    out = []
    view.send = lambda msg, *a, **k: out.append(msg)
    return out


def _edits(sess):
    return [e for e in sess.trace.events if e.kind == "var_create" and e.op_type == EDIT_OP_TYPE]


def test_zero_forks_the_run_and_the_trace_records_the_edit():
    sess, w = _paused()
    old = np.array(sess.value(w))
    v = kw.TensorViewer.of(sess, w, namespace={})
    assert v.editable and v.position == str(sess.position)
    v.handle_message({"type": "edit", "what": "zero"})
    assert not np.any(sess.value(w)) and v.edits == 1
    (edit,) = _edits(sess)
    assert edit.name == w and not np.any(dict(edit.values)[w])
    fork = sess.forks[-1]
    np.testing.assert_array_equal(fork.old, old)
    np.testing.assert_array_equal(fork.twin.value(w), old)  # the unedited branch
    assert v.has_previous and v.health["zero"] == old.size  # shown: the new value, diffed against the old
    assert "the trace records the edit" in v.status
    v.set_view(diff=True)
    np.testing.assert_allclose(np.array(v.slice["data"], dtype=float), -old.astype(float), rtol=1e-6)
    sess.cont()
    assert sess.finished


def test_edit_cell_sets_one_element_and_time_travel_shows_both_values():
    sess, w = _paused()
    old = np.array(sess.value(w))
    v = kw.TensorViewer.of(sess, w, namespace={})
    v.handle_message({"type": "edit", "what": "cell", "index": [1, 2], "value": "nan"})
    new = sess.value(w)
    assert np.isnan(new[1, 2])
    mask = np.ones(old.shape, bool)
    mask[1, 2] = False
    np.testing.assert_array_equal(new[mask], old[mask])
    (edit,) = _edits(sess)
    k = sess.trace.events.index(edit)
    np.testing.assert_array_equal(sess.goto(k - 1).value(w), old)
    assert np.isnan(sess.goto(k).value(w)[1, 2])


def test_replace_with_a_notebook_variable_checks_its_shape_and_dtype():
    sess, w = _paused()
    shape = sess.value(w).shape
    ns = {"ones": np.ones(shape, "int64"), "wrong": np.ones((3, 3), "float32"), "words": np.array(["a"] * 2),
          "floats64": np.full(shape, 2.5, "float64"), "s": "text"}
    v = kw.TensorViewer.of(sess, w, namespace=ns)
    for source, words in (("missing", "not defined"), ("wrong", "shape"), ("words", "not numbers"),
                          ("s", "not numbers"), ("not a name", "name")):
        sent = _sent(v)
        v.handle_message({"type": "edit", "what": "replace", "source": source})
        assert sent and sent[0]["type"] == "error" and words in sent[0]["error"], (source, sent)
        assert not _edits(sess)
    v.handle_message({"type": "edit", "what": "replace", "source": "ones"})
    assert sess.value(w).dtype == np.float32 and np.all(sess.value(w) == 1)
    v.handle_message({"type": "edit", "what": "replace", "source": "floats64"})
    assert np.all(sess.value(w) == 2.5) and len(_edits(sess)) == 2


def test_a_float_does_not_replace_an_integer_tensor():
    with pytest.raises(kw.requests.RequestError, match="cast"):
        tensor_edit.from_namespace("x", {"x": np.ones(3)}, np.zeros(3, "int32"))
    with pytest.raises(kw.requests.RequestError, match="no integer"):
        tensor_edit.with_cell(np.zeros(3, "int32"), [0], 1.5)
    with pytest.raises(kw.requests.RequestError, match="does not fit"):
        tensor_edit.with_cell(np.zeros(3, "int8"), [0], 300)
    assert tensor_edit.with_cell(np.zeros(3, "int32"), [2], "0x10")[2] == 16


HOSTILE_EDITS = [
    {"type": "edit"},
    {"type": "edit", "what": "delete"},
    {"type": "edit", "what": "cell", "index": [0], "value": 1},
    {"type": "edit", "what": "cell", "index": [0, 10 ** 9], "value": 1},
    {"type": "edit", "what": "cell", "index": [0, 0], "value": [[[]]]},
    {"type": "edit", "what": "cell", "index": [0, 0], "value": "1e400x"},
    {"type": "edit", "what": "cell", "index": [0, 0], "value": True},
    {"type": "edit", "what": "replace", "source": "x" * 10_000},
    {"type": "edit", "what": "replace", "source": {"a": 1}},
]


@pytest.mark.parametrize("msg", HOSTILE_EDITS, ids=range(len(HOSTILE_EDITS)))
def test_hostile_edits_are_answered_once_with_an_error_and_edit_nothing(msg):
    sess, w = _paused()
    old = np.array(sess.value(w))
    v = kw.TensorViewer.of(sess, w, namespace={})
    sent = _sent(v)
    v.handle_message(msg)
    assert len(sent) == 1 and sent[0]["type"] == "error"
    assert not _edits(sess) and not sess.forks
    np.testing.assert_array_equal(sess.value(w), old)


def test_a_plain_array_or_a_finished_run_is_not_editable():
    v = kw.TensorViewer(np.zeros((2, 2)), name="z")
    assert not v.editable
    sent = _sent(v)
    v.handle_message({"type": "edit", "what": "zero"})
    assert sent[0]["type"] == "error" and "not edited" in v.status
    sess, w = _paused()
    v = kw.TensorViewer.of(sess, w, namespace={})
    sess.cont()
    assert sess.finished and not v.editable


def test_copy_value_is_a_numpy_literal_of_the_value_and_refuses_a_big_one():
    a = np.array([[1.5, np.nan], [np.inf, -np.inf]], "float32")
    v = kw.TensorViewer(a, name="a")
    sent = _sent(v)
    v.handle_message({"type": "copy"})
    text = sent[0]["text"]
    back = eval(text, {"np": np})
    assert back.dtype == a.dtype
    np.testing.assert_array_equal(back, a)
    big = kw.TensorViewer(np.zeros(100_000), name="big")
    sent = _sent(big)
    big.handle_message({"type": "copy"})
    assert sent[0]["type"] == "error" and "too many" in sent[0]["error"]


def test_after_a_step_the_viewer_shows_the_new_timestep_s_value_not_the_old_one():
    prog, scope, feed, out = rnn_program(T=3)
    sess = kc.debug(prog, feed, [out], scope)
    sess.break_on("tanh")
    sess.cont()
    name = sess.op.in_names[0]
    v = kw.TensorViewer.of(sess, name)
    first = np.array(v.slice["data"], dtype=float)
    at_first = v.position
    sess.cont()  # before tanh at the next timestep
    assert v.position == str(sess.position) != at_first
    np.testing.assert_allclose(np.array(v.slice["data"], dtype=float), np.asarray(sess.value(name), float), rtol=1e-6)
    assert not np.allclose(np.array(v.slice["data"], dtype=float), first)
    sess.cont()
    sess.cont()
    assert sess.finished and not v.editable


def test_a_step_into_a_timestep_that_has_not_written_the_variable_shows_no_old_value():
    from test_widgets import rnn
    prog, scope, feed, last, hs, names = rnn()
    sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
    h = names["h_new"]
    sess.break_on(write=h)
    sess.cont()
    v = kw.TensorViewer.of(sess, h)
    np.testing.assert_allclose(np.array(v.slice["data"], np.float32), hs[0], rtol=1e-5)
    sess.step()  # the next timestep's first op: its step has not written h_new yet
    assert "t=1" in v.position and v.slice == {} and v.health == {}
    assert v.status == f"{h!r} has no value at {v.position} yet" and not v.editable
    sess.cont()  # written at t=1
    np.testing.assert_allclose(np.array(v.slice["data"], np.float32), hs[1], rtol=1e-5)
