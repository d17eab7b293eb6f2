"""ProgramGraph.overlay: per-node numbers as the `overlay_spec` trait (widgets/kernelcore_widgets/overlay.py),
keys checked against the program, and the run comparison and the flight recorder putting theirs on the graph."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.errors import UnknownNameError
from test_contract import rnn_program, training_program
from test_widgets import views  # noqa: F401  - a stub view where the front end is not built

kw = pytest.importorskip("kernelcore_widgets")


def _graph():
    """A graph of a training program (many ops in block 0)."""
    prog, _, _ = training_program()
    return kw.ProgramGraph(prog), prog


def _rnn_graph():
    """A graph of a StaticRNN program (a sub-block), with what runs it."""
    prog, scope, feed, out = rnn_program(T=3)
    return kw.ProgramGraph(prog), prog, scope, feed, out


def test_op_keys_by_id_and_by_index_become_op_ids_with_non_finite_values_as_strings():
    g, prog = _rnn_graph()[:2]
    with pytest.raises(UnknownNameError, match="no op '1'"):  # block 0 of the RNN program has one op
        g.overlay({1: 1.0})
    g.overlay({"o1:0": 2.0}, label="x")
    assert g.overlay_spec["values"] == {"o1:0": 2.0}
    g, prog = _graph()
    n0 = len(prog.block(0).ops)
    g.overlay({"o0:3": 2.0, 0: np.float32(0.5), 1: float("nan"), "o0:2": float("inf")}, label="max abs err")
    spec = g.overlay_spec
    assert spec["values"] == {"o0:3": 2.0, "o0:0": 0.5, "o0:1": "NaN", "o0:2": "Infinity"}
    assert (spec["min"], spec["max"], spec["label"], spec["on"]) == (0.5, 2.0, "max abs err", "ops")
    json.dumps(spec, allow_nan=False)  # the trait is plain JSON: no NaN or Infinity literals
    with pytest.raises(UnknownNameError, match=rf"no op 'o0:{n0}'"):
        g.overlay({f"o0:{n0}": 1.0})
    with pytest.raises(kc.KernelcoreError, match="no op 'o7:0'"):
        g.overlay({"o7:0": 1.0})


def test_var_keys_by_name_or_id_and_an_unknown_name_lists_the_nearest():
    g, prog = _graph()
    name = prog.block(0).ops[0].output_arg_names[0]
    g.overlay({name: 3.0}, on="vars", scale=[1.0, 10.0], colors=["#1a9850", "#fee08b", "#d73027"])
    assert g.overlay_spec["values"] == {f"v0:{name}": 3.0}
    assert g.overlay_spec["scale"] == [1.0, 10.0]
    with pytest.raises(UnknownNameError) as e:
        g.overlay({name + "x": 1.0}, on="vars")
    assert name in e.value.close and name in str(e.value)
    with pytest.raises(kc.KernelcoreError, match="2 more keys unknown"):
        g.overlay({"nope1": 1, "nope2": 2, "nope3": 3}, on="vars")


def test_a_key_of_the_other_kind_says_which_on_to_use():
    g, prog = _graph()
    name = prog.block(0).ops[0].output_arg_names[0]
    with pytest.raises(kc.KernelcoreError, match="on='vars'"):
        g.overlay({name: 1.0})
    with pytest.raises(kc.KernelcoreError, match="on='ops'"):
        g.overlay({"o0:0": 1.0}, on="vars")


@pytest.mark.parametrize("kwargs, says", [
    ({"on": "edges"}, "'ops' or 'vars'"),
    ({"aggregate": "sum"}, "aggregate"),
    ({"scale": "rainbow"}, "scale"),
    ({"scale": [3.0, 1.0]}, "increase"),
    ({"scale": [1.0, float("nan")]}, "finite"),
    ({"scale": list(range(40))}, "thresholds are 1 to"),
    ({"scale": [1.0], "colors": ["#000000"]}, "make 2 bands"),
    ({"colors": ["red", "blue"]}, "#rrggbb"),
    ({"colors": ["#fff"]}, "at least 2"),
])
def test_bad_options_are_refused_with_what_is_expected(kwargs, says):
    g, _ = _graph()
    with pytest.raises(kc.KernelcoreError, match=says):
        g.overlay({0: 1.0}, **kwargs)
    assert g.overlay_spec == {}  # nothing half-set


def test_a_value_that_is_not_a_number_is_refused_and_clear_takes_the_overlay_off():
    g, _ = _graph()
    for bad in ("1.0", None, True, [1.0]):
        with pytest.raises(kc.KernelcoreError, match="not a number"):
            g.overlay({0: bad})
    with pytest.raises(kc.KernelcoreError, match="mapping"):
        g.overlay([1.0, 2.0])
    assert g.overlay({0: 1.0}) is g
    g.clear_overlay()
    assert g.overlay_spec == {}


def test_only_non_finite_values_leave_no_range():
    g, _ = _graph()
    g.overlay({0: float("nan"), 1: float("-inf")})
    assert (g.overlay_spec["min"], g.overlay_spec["max"]) == (None, None)
    assert g.overlay_spec["values"] == {"o0:0": "NaN", "o0:1": "-Infinity"}


def test_a_run_comparison_puts_its_numbers_on_the_graph():
    g, prog, scope, feed, out = _rnn_graph()
    with kc.trace(retain="references") as a:
        kc.Executor().run(prog, feed, [out], scope)
    feed["x"][1] *= 2
    with kc.trace(retain="references") as b:
        kc.Executor().run(prog, feed, [out], scope)
    cmp = kc.compare_runs(a, b)
    assert cmp.overlay(g, "max_abs") is g
    nums = cmp.numbers("max_abs")
    assert set(g.overlay_spec["values"]) == set(nums)
    assert g.overlay_spec["scale"] == "log" and g.overlay_spec["aggregate"] == "max"
    assert g.overlay_spec["max"] == max(v for v in nums.values() if math.isfinite(v))
    cmp.overlay(g, "cosine")
    assert g.overlay_spec["aggregate"] == "min" and g.overlay_spec["scale"] == "gradient"
    cmp.overlay(g, "rel_l2", per="var", label="mine")
    assert g.overlay_spec["on"] == "vars" and g.overlay_spec["label"] == "mine"
    assert all(k.startswith("v") for k in g.overlay_spec["values"])


def test_the_recorders_numbers_of_one_iteration_go_on_the_graph():
    g, prog, scope, feed, out = _rnn_graph()
    with kc.record(prog, scope) as rec:
        for _ in range(2):
            kc.Executor().run(prog, feed, [out], scope)
    nums = rec.numbers(1, "nan")
    assert nums
    g.overlay(nums, label="NaN count", scale=[0.5])
    assert set(g.overlay_spec["values"]) == set(nums)
    assert all(v == 0 for v in g.overlay_spec["values"].values())


def test_groups_carry_the_aggregate_of_all_their_members_the_same_whether_the_program_is_sent_whole_or_in_parts(
        monkeypatch):
    from kernelcore.ir import op_reads
    prog, _, _ = training_program()
    n = len(prog.block(0).ops)
    values = {i: float(i) for i in range(n)}
    values[1] = float("nan")  # in fc_0's forward layer
    whole = kw.ProgramGraph(prog)
    assert whole._parts is None
    whole.overlay(values, aggregate="mean")
    ops_in = {g["id"]: [o["idx"] for o in whole.program["blocks"][0]["ops"] if o["group"] == g["id"]]
              for g in whole.program["blocks"][0]["groups"]}
    fc1 = next(g["id"] for g in whole.program["blocks"][0]["groups"] if g["label"] == "fc_1" and g["parent"] == "group_0_0")
    assert whole.overlay_spec["groups"][fc1] == {"value": sum(ops_in[fc1]) / len(ops_in[fc1]), "count": len(ops_in[fc1])}
    forward = "group_0_0"  # the forward stage holds fc_0's layer, so its NaN
    assert whole.overlay_spec["groups"][forward]["value"] == "NaN"
    assert whole.overlay_spec["groups"][forward]["count"] == sum(
        1 for o in whole.program["blocks"][0]["ops"] if o["group"] in {forward, "group_0_1", "group_0_2"})
    monkeypatch.setattr(op_reads, "LAZY_ABOVE", 4)
    prog2, _, _ = training_program()
    parts = kw.ProgramGraph(prog2)
    assert parts._parts is not None  # sent as a skeleton: the view cannot aggregate unfetched groups itself
    parts.overlay(values, aggregate="mean")
    assert parts.overlay_spec["groups"] == whole.overlay_spec["groups"]
    parts.overlay({"fc_0.w_0": 2.0, "fc_0.tmp_0": 4.0}, on="vars", aggregate="min")
    assert parts.overlay_spec["groups"]["group_0_1"] == {"value": 2.0, "count": 2}


def test_the_recorder_colours_a_graph_by_one_iterations_column():
    g, prog, scope, feed, out = _rnn_graph()
    with kc.record(prog, scope) as rec:
        for _ in range(2):
            kc.Executor().run(prog, feed, [out], scope)
    assert rec.overlay(g, 1) is g
    spec = g.overlay_spec
    assert spec["scale"] == [0.5] and spec["label"] == "nan count, iteration 1"
    assert spec["values"] == rec.numbers(1, "nan")
    rec.overlay(g, 0, "l2", label="output L2")
    assert g.overlay_spec["scale"] == "gradient" and g.overlay_spec["label"] == "output L2"
    assert g.overlay_spec["values"] == rec.numbers(0, "l2")
