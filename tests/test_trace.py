"""Trace events: the exact sequence of a small run, JSON round trip with a golden file, Chrome export."""
import json
import pathlib

import numpy as np
import pytest

import kernelcore as kc
from test_contract import rnn_program

GOLDEN = pathlib.Path(__file__).parent / "golden" / "trace_small.json"


def small_run(retain="shapes"):
    prog = kc.Program()
    b = prog.global_block()
    b.create_var("x", [2, 2])
    b.create_parameter("w", [2, 2])
    b.append_op("elementwise_mul", {"X": ["x"], "Y": ["w"]}, {"Out": ["h"]})
    b.append_op("relu", {"X": ["h"]}, {"Out": ["r"]})
    scope = kc.Scope()
    scope.set("w", np.full((2, 2), -1.0, np.float32))
    with kc.trace(retain) as tr:
        kc.Executor().run(prog, feed={"x": np.eye(2, dtype=np.float32)}, fetch_list=["r"], scope=scope)
    return tr, scope


def normalized(tr):
    """The trace's JSON with times zeroed and scope ids renumbered in order of appearance."""
    data = tr.to_json()
    ids = {}
    for e in data["events"]:
        e["t_ns"] = 0
        if "dur_ns" in e:
            e["dur_ns"] = 0
        for k in ("scope", "parent_scope"):
            if k in e:
                e[k] = ids.setdefault(e[k], len(ids) + 1)
        if "message" in e and e["kind"] == "run_begin":
            e["message"] = "<program>"
    return data


def test_exact_event_sequence():
    tr, scope = small_run()
    got = [(e.kind, e.op_type or e.name) for e in tr.events]
    assert got == [("run_begin", None), ("var_create", "x"), ("var_create", "h"), ("var_create", "r"),
                   ("op_run", "elementwise_mul"), ("op_run", "relu"), ("run_end", None)]
    mul = tr.events[4]
    assert mul.inputs == (("X", "x", (2, 2), "float32"), ("Y", "w", (2, 2), "float32"))
    assert mul.outputs == (("Out", "h", (2, 2), "float32"),)
    assert mul.kernel == "math.elementwise_mul[cpu]" and mul.place == "CPUPlace" and mul.dur_ns > 0
    assert [e.seq for e in tr.events] == list(range(7))
    assert all(e.scope == scope.id for e in tr.events)


def test_json_form_matches_the_golden_file():
    tr, _ = small_run()
    assert normalized(tr) == json.loads(GOLDEN.read_text())


def test_save_and_load_round_trip(tmp_path):
    tr, _ = small_run()
    p = tmp_path / "t.json"
    tr.save(p)
    back = kc.Trace.load(p)
    assert [e._replace(values=None) for e in back.events] == [e._replace(values=None) for e in tr.events]


def test_load_rejects_what_is_not_a_trace(tmp_path):
    bad = tmp_path / "bad.json"
    for text in ("{", '{"schema": "other"}', '{"schema": "kernelcore.trace", "version": 99}',
                 '{"schema": "kernelcore.trace", "version": 1, "events": [{"kind": "op_run"}]}',
                 '{"schema": "kernelcore.trace", "version": 1, "events": [{"seq": 0, "kind": "party", "t_ns": 1}]}'):
        bad.write_text(text)
        with pytest.raises(kc.LoadError):
            kc.Trace.load(bad)


def test_chrome_export_has_one_slice_per_op():
    tr, _ = small_run()
    chrome = tr.to_chrome()
    slices = [e for e in chrome["traceEvents"] if e.get("ph") == "X"]
    assert [s["name"] for s in slices] == ["elementwise_mul", "relu"]
    assert all(s["dur"] >= 0 and s["ts"] >= 0 for s in slices)
    json.dumps(chrome)


@pytest.mark.parametrize("retain", ["none", "shapes", "references", "copies"])
def test_retention_policies(retain):
    tr, scope = small_run(retain)
    relu = tr.filter("op_run", op_type="relu")[0]
    assert bool(relu.outputs) == (retain != "none")
    if retain in ("references", "copies"):
        (name, value), = relu.values
        assert name == "r"
        np.testing.assert_array_equal(value, scope.get("r"))
        assert (value is scope.get("r")) == (retain == "references")
        assert tr.retained_bytes == 2 * 16
    else:
        assert relu.values is None


def test_memory_cap_releases_oldest_values_first():
    prog = kc.Program()
    b = prog.global_block()
    b.create_var("x", [1000])
    name = "x"
    for i in range(10):
        b.append_op("tanh", {"X": [name]}, {"Out": [f"e{i}"]})
        name = f"e{i}"
    with kc.trace("references", max_bytes=3 * 4000) as tr:
        kc.Executor().run(prog, feed={"x": np.zeros(1000, np.float32)}, scope=kc.Scope())
    runs = tr.filter("op_run")
    assert [r.values is not None for r in runs] == [False] * 7 + [True] * 3
    assert tr.dropped_values == 7 and tr.retained_bytes == 3 * 4000


def test_no_observer_means_no_events_and_nested_traces_both_record():
    tr_outer = kc.Trace()
    with kc.trace() as a:
        with kc.trace() as b:
            small_run_plain()
        small_run_plain()
    assert len(b) == 7 and len(a) == 14 and len(tr_outer) == 0


def small_run_plain():
    prog = kc.Program()
    blk = prog.global_block()
    blk.create_var("x", [2, 2])
    blk.create_parameter("w", [2, 2])
    blk.append_op("elementwise_mul", {"X": ["x"], "Y": ["w"]}, {"Out": ["h"]})
    blk.append_op("relu", {"X": ["h"]}, {"Out": ["r"]})
    scope = kc.Scope()
    scope.set("w", np.ones((2, 2), np.float32))
    kc.Executor().run(prog, feed={"x": np.eye(2, dtype=np.float32)}, scope=scope)


def test_errors_are_events_too():
    prog = kc.Program()
    b = prog.global_block()
    b.create_var("x", [2])
    b.append_op("relu", {"X": ["x"]}, {"Out": ["r"]})
    with kc.trace() as tr:
        with pytest.raises(kc.OpRunError):
            kc.Executor().run(prog, scope=kc.Scope())
    err = tr.filter("error")[0]
    assert err.op_type == "relu" and err.name == "x" and "has no value" in err.message
    assert tr.events[-1].kind == "run_end"


def test_shapes_policy_releases_values_when_the_run_ends():
    from kernelcore.runtime.events import RECORD_HEAD
    prog = kc.Program()
    b = prog.global_block()
    b.create_var("x", [1000])
    name = "x"
    for i in range(30):
        b.append_op("tanh", {"X": [name]}, {"Out": [f"t{i}"]})
        name = f"t{i}"
    with kc.trace("shapes") as tr:
        kc.Executor().run(prog, feed={"x": np.zeros(1000, np.float32)}, scope=kc.Scope())
    holding = [it for it in tr._items if type(it) is tuple
               and any(isinstance(v, np.ndarray) for v in it[RECORD_HEAD:])]
    assert holding == []
    assert tr.filter("op_run")[-1].outputs == (("Out", "t29", (1000,), "float32"),)


def test_a_version_1_trace_still_loads():
    """Traces saved before vars_create existed (version 1) load as they were."""
    old = kc.Trace.load(pathlib.Path(__file__).parent / "golden" / "trace_small_v1.json")
    assert [(e.kind, e.op_type or e.name) for e in old.events] == [
        ("run_begin", None), ("var_create", "x"), ("var_create", "h"), ("var_create", "r"),
        ("op_run", "elementwise_mul"), ("op_run", "relu"), ("run_end", None)]


def test_step_scopes_report_their_locals_in_one_event_per_timestep():
    """From the second timestep on, a step block's locals are created by one vars_create event (the first
    timestep resolves names one by one); time travel rebuilds them all, and the JSON round trip keeps them."""
    T = 4
    prog, scope, feed, out = rnn_program(T=T)
    with kc.trace() as tr:
        kc.Executor().run(prog, feed, [out], scope)
    batches = [e for e in tr.events if e.kind == "vars_create" and e.op is None]  # the block's own locals
    assert len(batches) == T - 1
    bound = [e for e in tr.events if e.kind == "vars_create" and e.op is not None]  # what the op gave each step
    assert len(bound) == T and all(e.op_type == "recurrent" and len(e.names) >= 2 for e in bound)
    pushes = [e for e in tr.events if e.kind == "scope_push"]
    first_locals = {e.name for e in tr.events if e.kind == "var_create" and e.scope == pushes[0].scope
                    and e.values is None and e.op is None}
    for b in batches:
        assert set(b.names) == first_locals  # the same locals, every timestep
    back = kc.Trace.from_json(json.loads(json.dumps(tr.to_json())))
    assert [e.names for e in back.events if e.kind == "vars_create" and e.op is None] == [b.names for b in batches]
    assert [(e.names, e.op) for e in back.events if e.kind == "vars_create" and e.op is not None] == \
        [(b.names, b.op) for b in bound]
