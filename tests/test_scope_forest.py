"""ScopeForest: the scope tree of a run as data (ids, parents, origins, variables), JSON and text forms."""
import json

import numpy as np
import pytest

import kernelcore as kc
from test_control_flow import ifelse_program, rnn_feed, rnn_numpy, rnn_program


def trained_rnn(T=4, B=2, H=3):
    prog, out, rnn = rnn_program(T, B, H)
    feed, scope = rnn_feed(T, B, H, seed=11), kc.Scope()
    got, = kc.Executor().run(prog, feed=feed, fetch_list=[out], scope=scope, training=True)
    return prog, out, rnn, feed, scope, got


def test_forest_of_a_training_rnn_run():
    T = 4
    prog, out, rnn, feed, scope, got = trained_rnn(T)
    forest = kc.ScopeForest(scope)
    assert len(forest) == 1 + T and forest.roots == [scope.id]
    root = forest[scope.id]
    assert root.parent is None and root.depth == 0 and root.origin == {}
    assert root.vars["x"] == kc.observe.scope_forest.VarInfo("x", "tensor", "float32", (T, 2, 3), "CPUPlace")
    steps_var = root.vars[rnn.op.output("step_scopes")[0]]
    assert steps_var.kind == "step_scopes" and steps_var.scopes == root.kids
    steps = forest.kids(scope.id)
    assert [n.timestep for n in steps] == list(range(T))
    step_block = prog.block(rnn.op.attr("sub_block"))
    for t, node in enumerate(steps):
        assert node.parent == scope.id and node.depth == 1 and node.kids == ()
        assert node.op == "recurrent" and node.what == "recurrent step"
        assert node.origin["block"] == 0 and node.origin["op_idx"] == 0
        assert set(node.vars) == {v.name for v in step_block.vars}
        assert node.vars["x"].shape == (2, 3) and node.vars["x"].dtype == "float32"
        np.testing.assert_array_equal(node.value("x"), feed["x"][t])
        np.testing.assert_allclose(node.value(out.name), rnn_numpy(feed)[t], rtol=1e-6, atol=1e-6)
    assert forest.find(op="recurrent", timestep=2) == [steps[2]]


def test_to_json_has_shapes_and_dtypes_but_no_values():
    *_, scope, got = trained_rnn()
    data = kc.ScopeForest(scope).to_json()
    text = json.dumps(data)  # plain JSON types only
    assert data["schema"] == "kernelcore.scope_forest" and data["version"] == 1
    assert data["roots"] == [scope.id] and len(data["scopes"]) == 5
    first_step = data["scopes"][1]
    assert first_step["parent"] == scope.id
    assert first_step["origin"] == {"op": "recurrent", "block": 0, "op_idx": 0, "timestep": 0,
                                    "what": "recurrent step"}
    x = next(v for v in first_step["vars"] if v["name"] == "x")
    assert x == {"name": "x", "kind": "tensor", "dtype": "float32", "shape": [2, 3], "place": "CPUPlace"}
    assert repr(float(got.reshape(-1)[0]))[:8] not in text  # no values leak into the JSON
    assert all(set(v) <= {"name", "kind", "dtype", "shape", "place", "scopes"}
               for s in data["scopes"] for v in s["vars"])


def test_text_form_is_an_indented_tree():
    *_, scope, _ = trained_rnn(T=2)
    text = str(kc.ScopeForest(scope))
    lines = text.splitlines()
    assert lines[0] == f"scope {scope.id}"
    assert "  x: float32[2, 2, 3] on CPUPlace" in lines
    step_lines = [l for l in lines if "recurrent step" in l]
    assert len(step_lines) == 2 and step_lines[0].startswith("  scope ") and "t=0" in step_lines[0]
    assert "(block 0, op #0 recurrent)" in step_lines[1] and "t=1" in step_lines[1]
    assert "    x: float32[2, 3] on CPUPlace" in lines


def test_forest_is_a_snapshot():
    prog, out, rnn, feed, scope, got = trained_rnn()
    forest = kc.ScopeForest(scope)
    kc.Executor().run(prog, feed=feed, fetch_list=[out], scope=scope)  # inference: drops the step scopes
    assert scope.kids == []
    node = forest.kids(scope.id)[1]
    np.testing.assert_array_equal(node.value("x"), feed["x"][1])  # still readable from the snapshot
    after = kc.ScopeForest(scope)
    assert len(after) == 1
    assert after[scope.id].vars[rnn.op.output("step_scopes")[0]].describe() == "[] (empty list)"


def test_forest_of_ifelse_branches_and_empty_values():
    prog, outs, ie = ifelse_program()
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    scope = kc.Scope()
    kc.Executor().run(prog, feed={"x": x, "y": np.ones(3, np.float32), "cond": np.array([[1], [0], [0], [1]], bool)},
                      fetch_list=outs, scope=scope, training=True)
    forest = kc.ScopeForest(scope)
    branches = forest.find(op="conditional_block")
    assert [b.origin["op_idx"] for b in branches] == [1, 2]
    assert all(b.what == "conditional_block branch" and b.timestep is None for b in branches)
    true_in = ie._inputs["x"][0].name
    np.testing.assert_array_equal(forest[scope.id].value(true_in), x[[0, 3]])


def test_unknown_names_and_scopes_say_what_exists():
    *_, scope, _ = trained_rnn(T=1)
    forest = kc.ScopeForest(scope)
    with pytest.raises(KeyError, match="no variable 'nope'"):
        forest[scope.id].value("nope")
    with pytest.raises(KeyError, match="not in this forest"):
        forest[10 ** 9]


def test_forest_of_several_roots_and_of_a_sub_tree():
    *_, scope, _ = trained_rnn(T=3)
    other = kc.Scope()
    other.set("z", np.zeros(2))
    both = kc.ScopeForest([scope, other])
    assert both.roots == [scope.id, other.id] and len(both) == 5
    kid = scope.kids[1]
    sub = kc.ScopeForest(kid)
    assert len(sub) == 1 and sub[kid.id].parent == scope.id and sub[kid.id].depth == 0


def test_forest_while_debugging_inside_a_timestep():
    """Paused inside step 2 of an inference run: the live step scopes show (at most two: this one and the
    one before, whose states it copied)."""
    prog, out, rnn = rnn_program(5, 1, 2)
    sess = kc.debug(prog, feed=rnn_feed(5, 1, 2), fetch_list=[out], scope=kc.Scope())
    while sess.position.innermost is None or sess.position.innermost.timestep != 2:
        sess.step()
    forest = sess.forest()
    steps = forest.find(op="recurrent")
    assert 2 in [n.timestep for n in steps] and len(steps) <= 2
    sess.cont()
    assert sess.finished and kc.ScopeForest(sess.scope).find(op="recurrent") == []
