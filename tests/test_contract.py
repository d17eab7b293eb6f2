"""The front-end contract (kernelcore/contract.schema.json) against real Python output, and every file
generated from the contract's sources (the schemas and the command table) against what the generator makes
of them now: the views use the generated TypeScript types themselves, so there is no hand-written twin."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest

import kernelcore as kc
from kernelcore.view.display import TRACE_EVENT_LIMIT, program_json
from test_debug import rnn_program as debug_rnn_program

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "kernelcore" / "contract.schema.json").read_text())


def check(name: str, value) -> None:
    """`value`, through a JSON round trip (what the browser receives), is a `name` of the contract."""
    wire = json.loads(json.dumps(value, allow_nan=False))
    jsonschema.validate(wire, {"$ref": f"#/$defs/{name}", "$defs": SCHEMA["$defs"]},
                        cls=jsonschema.Draft202012Validator)


def training_program():
    prog, startup = kc.Program(), kc.Program()
    with kc.program_guard(prog, startup):
        x = prog.global_block().create_var("x", [4, 3])
        label = prog.global_block().create_var("label", [4, 1], "int64")
        h = kc.layers.fc(x, 5, act="relu")
        loss = kc.op.mean(kc.layers.cross_entropy(kc.op.softmax(kc.layers.fc(h, 2)), label))
        kc.optimizer.SGD(0.1).minimize(loss)
    return prog, startup, loss


def rnn_program(T=3, B=2, D=3, H=4):
    """test_debug's StaticRNN program with its parameter set in a scope: (program, scope, feed, output)."""
    prog, feed, out, _ = debug_rnn_program(T, B, D, H)
    scope = kc.Scope()
    scope.set("w", np.random.default_rng(0).standard_normal((D, H)).astype(np.float32))
    return prog, scope, feed, out


def test_program_json_of_training_pruned_control_flow_and_unsupported_programs():
    prog, _, loss = training_program()
    pj = program_json(prog)
    check("ProgramJSON", pj)
    assert {op["role"] for op in pj["blocks"][0]["ops"]} == {"forward", "backward", "optimize"}
    pr = kc.prune(prog, targets=[loss])
    check("ProgramJSON", program_json(prog, pr))
    check("ProgramJSON", program_json(rnn_program()[0]))
    odd = kc.Program()
    odd.global_block().create_var('<img src=x onerror="alert(1)">\x1b]0;t\x07', [2], "float32")
    desc = odd.global_block().desc.ops.add(type="no_such_op_anywhere")  # an op kernelcore lacks: shown, marked
    desc.inputs.add(parameter="X", arguments=['<img src=x onerror="alert(1)">\x1b]0;t\x07'])
    odd.touch()
    pj = program_json(odd)
    check("ProgramJSON", pj)
    assert pj["blocks"][0]["ops"][0]["unsupported"] is True


def test_a_program_in_parts_version_3():
    """The skeleton, a group's contents, a search and the replies that carry them (kernelcore.view.program_parts)."""
    from kernelcore.view.program_parts import ProgramParts
    prog, _, _ = training_program()
    assert program_json(prog)["version"] == 3 and program_json(prog)["lazy"] is None
    parts = ProgramParts(prog, prog.version)
    skel = parts.skeleton("p1")
    check("ProgramJSON", skel)
    assert skel["lazy"]["id"] == "p1"
    blk = skel["blocks"][0]
    todo = [g["id"] for g in blk["groups"] if not g["loaded"]]
    loaded = [g["id"] for g in blk["groups"] if g["loaded"]]
    c = parts.handle({"type": "contents", "block": 0, "groups": todo, "loaded": loaded + todo})
    check("GroupContentsJSON", c)
    check("PartsReplyJSON", {"type": "parts", "req": 1, "ok": True, "error": None, "result": c})
    r = parts.handle({"type": "search", "query": "fc"})
    check("SearchResultJSON", r)
    assert r["total"] > 0
    check("PartsReplyJSON", {"type": "parts", "req": 2, "ok": False, "error": "gone", "result": None})


def test_trace_json_of_an_rnn_run_an_error_and_a_cut():
    prog, scope, feed, out = rnn_program()
    with kc.trace() as tr:
        kc.Executor().run(prog, feed, [out], scope)
    data = tr.to_json()
    check("TraceJSON", data)
    kinds = {e["kind"] for e in data["events"]}
    assert {"scope_push", "scope_drop", "var_create", "vars_create", "op_run", "step_begin", "step_end"} <= kinds
    check("TraceJSON", tr.to_json(limit=5))
    bad = kc.Program()
    bad.global_block().create_var("a", [2], "float32")
    bad.global_block().append_op("relu", {"X": "a"}, {"Out": "b"})
    with kc.trace() as tr2, pytest.raises(kc.OpRunError):
        kc.Executor().run(bad, feed={}, fetch_list=["b"], scope=kc.Scope())
    data = tr2.to_json(limit=TRACE_EVENT_LIMIT)
    check("TraceJSON", data)
    assert any(e["kind"] == "error" for e in data["events"])


def test_scope_forest_json_of_a_training_rnn_run():
    prog, scope, feed, out = rnn_program()
    kc.Executor().run(prog, feed, [out], scope, training=True)
    forest = kc.ScopeForest(scope).to_json()
    check("ScopeForestJSON", forest)
    assert any(v["kind"] == "step_scopes" for s in forest["scopes"] for v in s["vars"])


@pytest.mark.parametrize("value", [
    np.array([[1.0, np.nan], [np.inf, -np.inf]], np.float32), np.arange(40, dtype=np.int64).reshape(2, 4, 5),
    np.array([True, False, True]), np.array([1 + 2j, 3j]), np.float32(2.5), np.zeros((0, 3), np.float32)],
    ids=["nonfinite", "int3d", "bool", "complex", "scalar", "empty"])
def test_value_previews(value):
    kw = pytest.importorskip("kernelcore_widgets")
    check("ValuePreview", kw.schema.value_preview(value))


def test_the_rnn_steppers_step_scope_and_memory_flow():
    kw = pytest.importorskip("kernelcore_widgets")
    prog, scope, feed, out = rnn_program()
    sess = kc.debug(prog, feed, [out], scope)
    sess.run_to_end()
    replay = kw.RNNStepper(sess)
    check("ScopeJSON", replay.step_scope)
    for flow in replay.memory_flow:
        check("MemoryFlowJSON", flow)
    assert replay.memory_flow


def test_every_generated_file_of_the_contract_is_up_to_date():
    """The TypeScript types and move table, the Python TypedDicts and the debug protocol schema's generated
    parts, made again in memory, equal the files in the checkout."""
    from kernelcore_widgets.contract import generate
    for path, text in generate.outputs().items():
        assert path.read_text(encoding="utf-8") == text, \
            f"{path.relative_to(ROOT)} is stale: run python labextension/scripts/gen_contract.py"


def test_a_command_added_to_the_table_makes_the_generated_files_stale(monkeypatch):
    """The check above can fail: one more row in the command table changes the schema, the TypeScript and the
    Python types."""
    from kernelcore_widgets.contract import commands, debug_schema, gen_moves_ts, generate
    extra = commands.COMMANDS + (commands.Command("rewind", "back to the start", (commands.Arg("to", "int"),)),)
    monkeypatch.setattr(debug_schema, "COMMANDS", extra)
    monkeypatch.setattr(gen_moves_ts, "COMMANDS", extra)
    stale = {p.name for p in generate.stale()}
    assert {"debug_protocol.schema.json", "protocol.generated.ts"} <= stale


def test_the_check_script_says_which_file_is_stale():
    r = subprocess.run([sys.executable, str(ROOT / "labextension" / "scripts" / "gen_contract.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_a_trait_added_to_a_widget_makes_its_typescript_model_stale(monkeypatch):
    """widgets.generated.ts (each view's typed model) follows the Python widgets' synced traits."""
    import traitlets as t

    from kernelcore_widgets import ProgramGraph
    from kernelcore_widgets.contract import generate
    monkeypatch.setattr(ProgramGraph, "zoom", t.Float(1.0).tag(sync=True), raising=False)
    assert "  zoom: number;" in generate.traits_ts()
    assert [p.name for p in generate.stale()] == ["widgets.generated.ts"]
