"""kernelcore_widgets, Python tier: traits and message handlers driven by calling the handlers as the comm
would; ValuePreview numbers against NumPy; the server extension's program endpoint as a function.
The browser renders these traits in tests/browser/."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("anywidget")

import kernelcore as kc  # noqa: E402
import kernelcore_widgets as kw  # noqa: E402
from kernelcore.view.display import program_json  # noqa: E402
from kernelcore_widgets import schema, server  # noqa: E402
from kernelcore_widgets._base import FrontEndNotBuilt  # noqa: E402
from static_rnn_case import build_tanh_rnn, tanh_rnn_states  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WIDGETS = (kw.ProgramGraph, kw.ScopeForest, kw.RNNStepper, kw.TraceTimeline, kw.Debugger, kw.TensorViewer)
T, B, D, H = 5, 2, 3, 4


@pytest.fixture(autouse=True)
def views(tmp_path, monkeypatch):
    """The Python tier does not need the front end built: where a view's ESM is missing, a stub stands in."""
    stub = tmp_path / "stub.js"
    stub.write_text("export default { render() {} };\n")
    for cls in WIDGETS:
        if not cls._asset_paths["_esm"].is_file():
            monkeypatch.setitem(cls._asset_paths, "_esm", stub)


def rnn(reverse=False):
    case = build_tanh_rnn(T, B, D, H, reverse=reverse)
    prog = case.program
    with kc.program_guard(prog):
        last = kc.op.reduce_sum(case.out, dim=[0])
    rng = np.random.default_rng(1)
    scope = kc.Scope()
    scope.set("w", rng.standard_normal((D, H)).astype(np.float32))
    scope.set("u", rng.standard_normal((H, H)).astype(np.float32) * 0.5)
    feed = {"x": rng.standard_normal((T, B, D)).astype(np.float32),
            "h0": rng.standard_normal((B, H)).astype(np.float32)}
    hs = tanh_rnn_states(feed["x"], feed["h0"], scope.get("w"), scope.get("u"), reverse=reverse)
    op = prog.global_block().op(0)
    names = {"x_t": "x", "h_prev": op.attr("ex_states")[0], "h_new": op.attr("states")[0],
             "output": op.output("outputs")[0]}
    return prog, scope, feed, last, hs, names


def sample_of(a: np.ndarray) -> list:
    rows, cols, two_d = schema.sample_indices(a.shape)
    return a.reshape(two_d)[rows][:, cols].tolist()


def by_role(step_scope: dict) -> dict:
    return {v["role"]: v for v in step_scope["vars"] if v["role"]}


# ---------------------------------------------------------------------------------------------------------
def test_missing_front_end_says_how_to_build(monkeypatch, tmp_path):
    monkeypatch.setitem(kw.ProgramGraph._asset_paths, "_esm", tmp_path / "absent" / "ProgramGraph.js")
    with pytest.raises(FrontEndNotBuilt, match=r"\./dev build"):
        kw.ProgramGraph(kc.Program())


def test_value_preview_numbers_match_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((40, 50)).astype(np.float32)
    a[3, 4] = np.nan
    a[5, 6] = np.inf
    a[7, 8] = -np.inf
    p = schema.value_preview(a)
    finite = a[np.isfinite(a)].astype(np.float64)
    assert p["shape"] == [40, 50] and p["dtype"] == "float32" and p["place"] == "CPUPlace"
    assert p["nan"] == 1 and p["inf"] == 2 and p["kind"] == "heatmap"
    assert p["min"] == pytest.approx(finite.min()) and p["max"] == pytest.approx(finite.max())
    assert p["mean"] == pytest.approx(finite.mean()) and p["std"] == pytest.approx(finite.std())
    assert len(p["sample"]) == 16 and all(len(r) == 16 for r in p["sample"])
    rows, cols, _ = schema.sample_indices(a.shape)
    assert rows[0] == 0 and rows[-1] == 39 and cols[0] == 0 and cols[-1] == 49
    expect = [[schema.json_number(float(x)) for x in r] for r in a[rows][:, cols]]
    assert p["sample"] == expect
    json.dumps(p, allow_nan=False)


def test_value_preview_non_finite_sample_is_strict_json():
    p = schema.value_preview(np.array([1.0, np.nan, np.inf, -np.inf], np.float64))
    assert p["sample"] == [[1.0, "NaN", "Infinity", "-Infinity"]] and p["kind"] == "sparkline"
    assert p["min"] == p["max"] == p["mean"] == 1.0 and p["std"] == 0.0
    q = schema.value_preview(np.full((2, 2), np.nan, np.float32))
    assert q["nan"] == 4 and q["min"] is None and q["mean"] is None
    json.dumps([p, q], allow_nan=False)


@pytest.mark.parametrize("value, kind, sample", [
    (np.float32(2.5), "scalar", [[2.5]]),
    (np.array([[7]], np.int64), "scalar", [[7]]),
    (np.arange(30, dtype=np.int32).reshape(1, 30), "sparkline", None),
    (np.arange(5.0).reshape(5, 1), "sparkline", [[0.0, 1.0, 2.0, 3.0, 4.0]]),
    (np.arange(210.0).reshape(5, 6, 7), "heatmap", None),
    (np.array([[True, False], [True, True]]), "heatmap", [[True, False], [True, True]]),
])
def test_value_preview_kinds_and_samples(value, kind, sample):
    p = schema.value_preview(value)
    a = np.asarray(value)
    assert p["kind"] == kind and p["shape"] == list(a.shape)
    assert p["sample"] == (sample if sample is not None else sample_of(a))
    assert len(p["sample"]) <= 16 and all(len(r) <= 16 for r in p["sample"])
    f = a.astype(np.float64)
    assert p["min"] == f.min() and p["max"] == f.max() and p["mean"] == pytest.approx(f.mean())


def test_value_preview_of_non_tensors():
    assert schema.value_preview(None) is None
    assert schema.value_preview([np.zeros(2)]) is None
    assert schema.value_preview("text") is None
    e = schema.value_preview(np.zeros((0, 3), np.float32))
    assert e["sample"] == [] and e["min"] is None and e["nan"] == 0


@pytest.mark.gpu
def test_value_preview_of_a_gpu_array_copies_only_the_sample():
    if not kc.gpu_available():
        pytest.skip("no usable GPU")
    import cupy
    a = np.random.default_rng(0).standard_normal((100, 300)).astype(np.float32)
    p = schema.value_preview(cupy.asarray(a))
    assert p["place"] == "GPUPlace(0)" and p["sample"] == sample_of(a)
    assert p["mean"] == pytest.approx(a.astype(np.float64).mean(), rel=1e-6)


# ---------------------------------------------------------------------------------------------------------
def test_program_graph_traits_and_select_messages():
    prog, scope, feed, last, _, names = rnn()
    g = kw.ProgramGraph(prog)
    assert g.program == program_json(prog) and g.pruned_program is None
    assert g.selected == "" and g.details == {} and g.search == "" and g.collapsed == []
    g.handle_message({"type": "select", "id": "o0:0"})
    d = g.details
    assert g.selected == "o0:0" and d["kind"] == "op" and d["type"] == "recurrent"
    assert d["comment"] == kc.get_op_def("recurrent").comment
    assert d["attrs"]["ex_states"] == [names["h_prev"]]
    assert d["inputs"]["inputs"] == [{"name": "x", "id": "v0:x", "dtype": "float32", "shape": [T, B, D]}]
    assert "value" not in d["inputs"]["inputs"][0]  # no scope attached
    assert d["slot_comments"]["inputs"] and d["attr_comments"]["reverse"]
    g.handle_message({"type": "select", "id": "v0:w"})
    assert g.details["kind"] == "var" and g.details["read_by"] == ["o0:0", "o1:0"] and g.details["written_by"] == []
    g.handle_message({"type": "select", "id": "v9:w"})
    assert "error" in g.details and g.selected == "v9:w"
    g.handle_message({"type": "select", "id": "nonsense"})
    assert "not an op id" in g.details["error"]
    g.handle_message({"type": "select", "id": 3})
    assert g.selected == "" and g.details == {}
    g.selected = "o1:3"  # the browser may set the trait itself
    assert g.details["type"] == "tanh"


def test_program_graph_with_a_scope_previews_values():
    prog, scope, feed, last, hs, names = rnn()
    kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=[last], scope=scope)
    g = kw.ProgramGraph(prog, scope=scope)
    g.handle_message({"type": "select", "id": "v0:w"})
    assert g.details["value"] == schema.value_preview(scope.get("w"))
    g.handle_message({"type": "select", "id": "o0:1"})
    out = g.details["outputs"]["Out"][0]
    assert out["value"]["sample"] == sample_of(sum(hs.values()))


def test_program_graph_pruned_and_side_by_side():
    prog, _, _, last, _, _ = rnn()
    with kc.program_guard(prog):
        kc.op.scale(prog.global_block().var("x"), scale=3.0)
    pr = kc.prune(prog, [last], feeds=["x", "h0"])
    g = kw.ProgramGraph(prog, pruned=pr)
    assert g.program["pruned"]["removed_ops"] == ["o0:2"] and g.pruned_program is None
    g.handle_message({"type": "select", "id": "o0:2"})
    assert g.details["removed"] is True
    g.handle_message({"type": "select", "id": "o0:1"})
    assert g.details["removed"] is False
    side = kw.ProgramGraph(prog, pruned=pr, side_by_side=True)
    assert side.pruned_program == program_json(pr.program)
    with pytest.raises(ValueError, match="pruned"):
        kw.ProgramGraph(prog, side_by_side=True)


def test_side_by_side_sends_a_big_pruned_program_in_parts_too(monkeypatch):
    """Beside a program sent in parts, a big pruned program is sent in parts as well: its pane asks with
    "pane": "pruned" and gets the pruned program's groups; without it, the main program's."""
    from kernelcore.ir import op_reads
    from kernelcore.view.program_parts import ProgramParts
    prog, _, _, last, _, _ = rnn()
    with kc.program_guard(prog):
        kc.op.scale(prog.global_block().var("x"), scale=3.0)
    pr = kc.prune(prog, [last], feeds=["x", "h0"])
    monkeypatch.setattr(op_reads, "LAZY_ABOVE", 1)
    side = kw.ProgramGraph(prog, pruned=pr, side_by_side=True)
    assert side.program["lazy"] is not None and side.pruned_program["lazy"] is not None
    assert side.pruned_program["lazy"]["ops"] == sum(len(b.ops) for b in pr.program.desc.blocks)
    sent = []
    monkeypatch.setattr(side, "send", sent.append)
    for pane, want in (("pruned", pr.program), (None, prog)):
        # block 0 at block level: the main program's has the scale op pruning removed
        groups = [None] + [g["id"] for g in (side.pruned_program if pane else side.program)["blocks"][0]["groups"]]
        msg = {"type": "contents", "req": 7, "block": 0, "groups": groups, "loaded": groups[1:]}
        side._graph_parts({**msg, "pane": pane} if pane else msg)
        reply = sent.pop()
        assert reply["ok"], reply
        got = dict(reply["result"])
        assert ("pruned" in got) == (pane is None)  # the main view's answers carry pruning's marks
        got.pop("pruned", None)
        assert got == ProgramParts(want, want.version).contents(0, groups, groups[1:])
        assert ("scale" in {o["type"] for o in got["ops"]}) == (pane is None)
        # search too: the scale op's output is a name of the main program only
        out = next(op for op in prog.desc.blocks[0].ops if op.type == "scale").outputs[0].arguments[0]
        side._graph_parts({"type": "search", "req": 8, "query": out, **({"pane": pane} if pane else {})})
        hits = sent.pop()["result"]["hits"]
        assert bool([h for h in hits if h["name"] == out]) == (pane is None)


def test_program_graph_opens_a_program_file():
    g = kw.ProgramGraph(ROOT / "examples" / "programs" / "mlp.pdmodel")
    types = [o["type"] for o in g.program["blocks"][0]["ops"]]
    assert types[0] == "feed" and types[-1] == "fetch" and "softmax" in types


# ---------------------------------------------------------------------------------------------------------
def test_scope_forest_open_message():
    prog, scope, feed, last, hs, _ = rnn()
    kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=[last], scope=scope)
    f = kw.ScopeForest(scope)
    assert f.forest == kc.ScopeForest(scope).to_json() and f.opened == {}
    f.handle_message({"type": "open", "scope": scope.id, "name": "x"})
    assert f.opened[f"{scope.id}:x"] == schema.value_preview(feed["x"])
    f.handle_message({"type": "open", "scope": 10 ** 9, "name": "x"})
    assert "not in this forest" in f.opened[f"{10 ** 9}:x"]["error"]
    f.handle_message({"type": "open", "scope": scope.id, "name": "nope"})
    assert "no variable" in f.opened[f"{scope.id}:nope"]["error"]
    scope.set("x", feed["x"] * 2)
    f.update(scope)  # a new snapshot previews the open values again
    assert f.opened[f"{scope.id}:x"]["sample"] == sample_of(feed["x"] * 2)
    assert kw.ScopeForest(kc.ScopeForest(scope)).forest == f.forest
    with pytest.raises(TypeError):
        kw.ScopeForest(42)


# ---------------------------------------------------------------------------------------------------------
def test_rnn_stepper_live_next_runs_and_prev_travels_back():
    prog, scope, feed, last, hs, names = rnn()
    sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
    st = kw.RNNStepper(sess)
    assert st.mode == "live" and st.num_steps == T and st.timestep == -1 and st.step_scope == {}
    assert st.rnn_op == "o0:0"
    st.handle_message({"type": "next"})
    assert st.timestep == 0 and sess.position.innermost.timestep == 0
    r = by_role(st.step_scope)
    assert r["x_t"]["name"] == "x" and r["x_t"]["preview"]["sample"] == sample_of(feed["x"][0])
    assert r["h_prev"]["name"] == names["h_prev"] and r["h_prev"]["preview"]["sample"] == sample_of(feed["h0"])
    assert r["h_new"]["preview"] is None  # not computed yet: paused before the step's first op
    for t in (1, 2):
        st.handle_message({"type": "next"})
        assert st.timestep == t == sess.position.innermost.timestep
        assert by_role(st.step_scope)["h_prev"]["preview"]["sample"] == sample_of(hs[t - 1])
    where = str(sess.position)
    st.handle_message({"type": "prev"})  # time travel: the session does not move
    assert st.timestep == 1 and str(sess.position) == where
    r = by_role(st.step_scope)
    assert r["x_t"]["preview"]["sample"] == sample_of(feed["x"][1])
    assert r["h_prev"]["preview"]["sample"] == sample_of(hs[0])
    assert r["h_new"]["preview"]["sample"] == sample_of(hs[1]) == r["output"]["preview"]["sample"]
    assert st.memory_flow[:2] == [{"t": 0, "from": "h0", "to": names["h_prev"], "from_t": None},
                                  {"t": 1, "from": names["h_new"], "to": names["h_prev"], "from_t": 0}]
    st.handle_message({"type": "goto", "t": 4})  # runs the session forward to timestep 4
    assert st.timestep == 4 == sess.position.innermost.timestep
    st.handle_message({"type": "goto", "t": 7})
    assert st.timestep == 4 and "no timestep 7" in st.status
    st.handle_message({"type": "goto", "t": "2"})
    assert "integer" in st.status
    sess.run_to_end()
    st.refresh()
    assert st.mode == "replay" and st.timestep == 4
    assert by_role(st.step_scope)["h_new"]["preview"]["sample"] == sample_of(hs[4])


def test_rnn_stepper_stops_at_a_breakpoint():
    prog, scope, feed, last, hs, names = rnn()
    sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
    st = kw.RNNStepper(sess)
    st.next()
    sess.break_on(write=names["h_new"])
    st.goto(3)  # runs toward t=3; the write in t=0 stops the session at the next pause, t=0's end
    assert "breakpoint" in st.status and st.timestep == 0 == sess.position.innermost.timestep
    assert sess.position.innermost.at_end and st.mode == "live"
    assert by_role(st.step_scope)["h_new"]["preview"]["sample"] == sample_of(hs[0])


@pytest.mark.parametrize("reverse", [False, True])
def test_rnn_stepper_replay_of_a_finished_session(reverse):
    prog, scope, feed, last, hs, names = rnn(reverse)
    sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
    sess.run_to_end()
    st = kw.RNNStepper(sess, op="o0:0")
    order = list(range(T - 1, -1, -1)) if reverse else list(range(T))
    assert st.mode == "replay" and st.num_steps == T and st.timestep == order[0]
    seen = []
    for k, t in enumerate(order):
        r = by_role(st.step_scope)
        seen.append(st.timestep)
        assert r["x_t"]["preview"]["sample"] == sample_of(feed["x"][t])
        prev = feed["h0"] if k == 0 else hs[order[k - 1]]
        assert r["h_prev"]["preview"]["sample"] == sample_of(prev)
        assert r["h_new"]["preview"]["sample"] == sample_of(hs[t])
        st.handle_message({"type": "next"})
    assert seen == order and "last" in st.status
    st.handle_message({"type": "prev"})
    assert st.timestep == order[-2]


def test_rnn_stepper_replay_of_a_trace():
    prog, scope, feed, last, hs, names = rnn()
    with kc.trace(retain="references") as tr:
        kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=[last], scope=scope)
    st = kw.RNNStepper(tr, program=prog)
    assert st.mode == "replay" and st.num_steps == T
    st.goto(3)
    r = by_role(st.step_scope)
    assert r["h_new"]["preview"]["sample"] == sample_of(hs[3])
    assert r["h_prev"]["preview"]["sample"] == sample_of(hs[2])
    assert r["x_t"]["preview"]["sample"] == sample_of(feed["x"][3])  # bound with its value (retain="references")
    bare = kw.RNNStepper(tr)  # without the program: no roles, still the step scopes
    assert bare.num_steps == T and all(v["role"] is None for v in bare.step_scope["vars"])
    with pytest.raises(ValueError, match="no recurrent op"):
        kw.RNNStepper(kc.debug(kc.Program()))


# ---------------------------------------------------------------------------------------------------------
def test_trace_timeline():
    prog, scope, feed, last, _, _ = rnn()
    with kc.trace() as tr:
        kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=[last], scope=scope)
    tl = kw.TraceTimeline(tr)
    assert tl.events == tr.to_json()["events"] and tl.truncated == 0 and tl.selected_event == -1
    tl.handle_message({"type": "select", "seq": 7})
    assert tl.selected_event == 7
    tl.filter = {"kind": "op_run", "op_type": "tanh"}
    assert [e["timestep"] for e in tl.filtered()] == list(range(T))
    tl.filter = {"kind": "step_begin", "scope": tl.filtered()[0]["scope"] if tl.filtered() else None}
    assert len(tl.filtered()) == 1


# ---------------------------------------------------------------------------------------------------------
def test_debugger_is_a_composite_of_child_widgets():
    """The Debugger owns a ProgramGraph, a ScopeForest, an RNNStepper and a TraceTimeline, each its own model
    (sent to the browser as a reference to that model); its own traits are the cursor's and the children."""
    prog, scope, feed, last, _, _ = rnn()
    d = kw.Debugger(kc.debug(prog, feed=feed, fetch_list=[last], scope=scope))
    children = {"graph": kw.ProgramGraph, "forest": kw.ScopeForest, "stepper": kw.RNNStepper,
                "timeline": kw.TraceTimeline}
    state = d.get_state()
    for name, cls in children.items():
        child = getattr(d, name)
        assert type(child).__name__ == cls.__name__ and state[name] == f"IPY_MODEL_{child.model_id}", name
    own = set(d.keys)
    assert {"position", "frames", "stop_reason", "finished", "time_travel", "breakpoints"} <= own
    assert not {"program", "selected", "details", "opened", "events", "timestep", "step_scope", "debug"} & own
    assert d.graph.program == program_json(prog) and d.stepper.num_steps == T
    d.close()  # its children are its parts: closed with it
    assert all(getattr(d, name).comm is None for name in children)
    assert d._follow not in d.session.listeners and d.stepper._follow not in d.session.listeners


def test_debugger_commands_move_the_session_and_the_views():
    prog, scope, feed, last, hs, names = rnn()
    sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
    d = kw.Debugger(sess)
    assert d.position == str(sess.position) and not d.finished and d.graph.selected == "o0:0"
    assert d.stepper.timestep == -1 and d.graph.details["type"] == "recurrent"
    d.handle_message({"type": "step"})
    assert d.position == str(sess.position) and d.graph.selected == "o1:0" and d.stepper.timestep == 0
    assert d.timeline.events == sess.trace.to_json()["events"]
    assert d.forest.forest == sess.forest().to_json()
    d.handle_message({"type": "step_timestep"})
    assert sess.position.innermost.timestep == 1 and d.stepper.timestep == 1
    # the graph's details show values as seen from the paused op's scope (the step scope)
    assert d.graph.details["inputs"]["X"][0]["value"]["sample"] == sample_of(feed["x"][1])
    d.stepper.handle_message({"type": "prev"})  # the RNN panel: timestep 0 from the record, the session stays
    assert d.stepper.timestep == 0 and sess.position.innermost.timestep == 1
    assert by_role(d.stepper.step_scope)["h_new"]["preview"]["sample"] == sample_of(hs[0])
    d.stepper.handle_message({"type": "goto", "t": 3})  # runs the session forward; the other views follow
    assert d.stepper.timestep == 3 == sess.position.innermost.timestep and d.position == str(sess.position)
    d.handle_message({"type": "back"})  # the cursor moves back: t=2's end, rebuilt; nothing runs
    assert d.time_travel >= 0 and d.frames[-1]["end"] and d.frames[-1]["timestep"] == 2 and d.stepper.timestep == 2
    assert d.stepper.mode == "replay" and not sess.at_present
    d.handle_message({"type": "step"})  # forward through the record, back to the present
    assert d.time_travel == -1 and d.position == str(sess.position) and sess.timestep == 3
    d.handle_message({"type": "next"})  # the debugger's next: over one op
    assert d.graph.selected == "o1:1"
    d.forest.handle_message({"type": "open", "scope": scope.id, "name": "w"})
    assert d.forest.opened[f"{scope.id}:w"] == schema.value_preview(scope.get("w"))
    d.handle_message({"type": "cont"})
    assert d.finished and d.stop_reason == "finished" and sess.finished
    np.testing.assert_allclose(sess.result[0], sum(hs.values()), rtol=1e-5)
    seq = next(e["seq"] for e in d.timeline.events if e.get("op_type") == "tanh")
    d.timeline.handle_message({"type": "select", "seq": seq})
    assert d.timeline.selected_event == seq and d.graph.selected == "o1:3"
    d.graph.handle_message({"type": "select", "id": "v0:w"})
    assert d.graph.selected == "v0:w" and d.graph.details["kind"] == "var"
    d.handle_message({"type": "bogus"})
    assert "unknown message" in d.stop_reason
    stop = d.command("back")
    assert repr(stop) == "block 0 op #1 reduce_sum (back)" and stop.frames[-1]["op_type"] == "reduce_sum"
    with pytest.raises(ValueError):
        d.command("jump")


def test_active_debugger_is_the_last_created_or_displayed():
    prog, scope, feed, last, _, _ = rnn()
    a = kw.Debugger(kc.debug(prog, feed=feed, fetch_list=[last], scope=scope))
    assert kw.active_debugger() is a
    b = kw.Debugger(kc.debug(prog, feed=feed, fetch_list=[last], scope=kc.Scope()))
    assert kw.active_debugger() is b
    a._repr_mimebundle_()
    assert kw.active_debugger() is a
    # what the sidebar runs, and what it shows
    stop = kw.active_debugger().step()
    assert repr(stop) == f"{a.position} ({a.stop_reason})" and a.position.endswith("t=0")


def test_active_debugger_without_one(monkeypatch):
    from kernelcore_widgets import debugger
    monkeypatch.setattr(debugger, "_active", None)
    with pytest.raises(LookupError, match="no kernelcore Debugger"):
        kw.active_debugger()


def test_debugger_reports_a_failing_op():
    prog = kc.Program()
    with kc.program_guard(prog):
        g = prog.global_block()
        x = g.create_var("x", [-1, 3])
        w = g.create_parameter("w", [3, 2])
        y = kc.op.matmul_v2(x, w)
    scope = kc.Scope()
    scope.set("w", np.ones((4, 2), np.float32))  # wrong shape: the op fails at run time
    d = kw.Debugger(kc.debug(prog, feed={"x": np.ones((2, 3), np.float32)}, fetch_list=[y], scope=scope))
    assert d.stepper is None  # no recurrent op: no RNN panel
    d.handle_message({"type": "goto", "t": 0})
    assert "unknown message" in d.stop_reason
    d.handle_message({"type": "cont"})
    assert d.finished and d.stop_reason.startswith("error:") and "matmul_v2" in d.stop_reason


# ---------------------------------------------------------------------------------------------------------
def test_server_program_endpoint_function(tmp_path):
    root = tmp_path / "root"
    (root / "models").mkdir(parents=True)
    (root / "models" / "mlp.pdmodel").write_bytes((ROOT / "examples/programs/mlp.pdmodel").read_bytes())
    (root / "notes.txt").write_text("not a program")
    (tmp_path / "secret.pdmodel").write_bytes(b"x")
    data = server.program_file_json(root, "models/mlp.pdmodel")
    assert data["path"] == "models/mlp.pdmodel"
    assert {k: v for k, v in data.items() if k != "path"} == program_json(kc.load_program(root / "models/mlp.pdmodel"))
    for path, problem in [(None, "missing"), ("", "missing"), ("../secret.pdmodel", "outside the server root"),
                          ("models/../../secret.pdmodel", "outside"), ("absent.pdmodel", "does not exist"),
                          ("models", "not a file"), ("notes.txt", "not a program"), ("a\x00b", "NUL")]:
        with pytest.raises(server.ProgramRequestError, match=problem):
            server.program_file_json(root, path)
    (root / "link.pdmodel").symlink_to(tmp_path / "secret.pdmodel")
    with pytest.raises(server.ProgramRequestError, match="outside"):
        server.program_file_json(root, "link.pdmodel")


def test_server_extension_points_and_config():
    assert kw._jupyter_server_extension_points() == [{"module": "kernelcore_widgets.server"}]
    assert server._jupyter_server_extension_points() == [{"module": "kernelcore_widgets.server"}]
    cfg = json.loads((ROOT / "jupyter-config/server-config/kernelcore_widgets.json").read_text())
    assert cfg == {"ServerApp": {"jpserver_extensions": {"kernelcore_widgets.server": True}}}
    assert kw._jupyter_labextension_paths() == [{"src": "labextension", "dest": "@kernelcore/labextension"}]
