"""kernelcore.view.display: ProgramJSON, its DOT source and the MIME bundles (docs/frontend-contract.md)."""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.view import display
from kernelcore.view.display import PROGRAM_MIME, TRACE_MIME, program_json, program_mimebundle, trace_mimebundle
from kernelcore.view.notebook import show_in_notebooks

HOSTILE = '<img src=x onerror="window.__pwned=1">'
ODD_NAMES = [HOSTILE, "back\\slash", "ends\\", "esc\\N\\l", "amp&amp;lt;", "new\nline", "quote\"d", "{rec|ord}"]
SVG = "{http://www.w3.org/2000/svg}"


def nested_rnn_program():
    """An RNN over sequences of sequences: block 1 (outer step) runs block 2 (inner step). Its parameter
    has a hostile name, and one op (scale) computes something the target does not need."""
    prog = kc.Program()
    with kc.program_guard(prog):
        g = prog.global_block()
        x = g.create_var("x", [3, 2, 2, 4])
        h0 = g.create_var("h0", [2, 4])
        w = g.create_parameter(HOSTILE, [4, 4])
        outer = kc.layers.StaticRNN()
        with outer.step():
            xt = outer.step_input(x)
            hp = outer.memory(init=h0)
            inner = kc.layers.StaticRNN()
            with inner.step():
                xi = inner.step_input(xt)
                hi = inner.memory(init=hp)
                hn = kc.op.tanh(kc.op.elementwise_add(kc.op.matmul_v2(xi, w), hi))
                inner.update_memory(hi, hn)
                inner.step_output(hn)
            s = kc.op.reduce_sum(inner(), dim=[0])
            outer.update_memory(hp, s)
            outer.step_output(s)
        z = kc.op.relu(outer())
        kc.op.scale(x, scale=2.0)
    return prog, z


def training_program():
    """Forward, backward (a *_grad op) and optimize (sgd) ops, and a gradient variable."""
    prog = kc.Program()
    with kc.program_guard(prog):
        g = prog.global_block()
        x = g.create_var("x", [2, 3])
        w = g.create_parameter("w", [3, 3])
        lr = g.create_var("lr", [1], persistable=True)
        y = kc.op.relu(kc.op.mul(x, w))
        gy = g.create_var(y.name + "@GRAD", [2, 3])
        g.append_op("fill_constant", outputs={"Out": [gy]}, attrs={"shape": [2, 3], "value": 1.0})
        gw = g.create_var("w@GRAD", [3, 3])
        g.append_op("mul_grad", inputs={"X": [x], "Y": [w], "Out@GRAD": [gy]}, outputs={"Y@GRAD": [gw]},
                    infer=False)
        g.append_op("sgd", inputs={"Param": [w], "Grad": [gw], "LearningRate": [lr]}, outputs={"ParamOut": [w]})
    return prog


def all_ids(pj):
    ops = {o["id"] for b in pj["blocks"] for o in b["ops"]}
    vars_ = {v["id"] for b in pj["blocks"] for v in b["vars"]}
    return ops, vars_


def dot_nodes(dot: str) -> dict[str, str]:
    """DOT node statements -> their attribute text, by the `id` attribute (which holds the exact contract id)."""
    out = {}
    for m in re.finditer(r'^\s*"(?:[^"\\]|\\.)*" \[label=.*? id="((?:[^"\\]|\\.)*)" class="([^"]*)"', dot, re.M):
        out[html.unescape(re.sub(r"\\(.)", r"\1", m.group(1), flags=re.S))] = m.group(2)
    return out


def render_svg(dot: str) -> ET.Element:
    res = subprocess.run(["dot", "-Tsvg"], input=dot.encode(), capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr.decode()
    return ET.fromstring(res.stdout)


needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="no system Graphviz `dot` binary")


# ---------------------------------------------------------------------------------------------------------
def test_program_json_shape_and_ids():
    prog, _ = nested_rnn_program()
    pj = program_json(prog)
    assert pj["schema"] == "kernelcore.program" and pj["version"] == 3 and pj["pruned"] is None and pj["lazy"] is None
    assert [b["idx"] for b in pj["blocks"]] == [0, 1, 2]
    assert [b["parent"] for b in pj["blocks"]] == [-1, 0, 1]
    for b, block in zip(pj["blocks"], prog.blocks):
        assert [o["id"] for o in b["ops"]] == [f"o{block.idx}:{i}" for i in range(len(block.ops))]
        assert [v["id"] for v in b["vars"]] == [f"v{block.idx}:{v.name}" for v in block.vars]
        for o, op in zip(b["ops"], block.ops):
            assert o["type"] == op.type and o["idx"] == op.idx
            assert o["inputs"] == op.inputs and o["outputs"] == op.outputs
            assert o["comment"] == kc.get_op_def(op.type).comment and o["comment"]
            assert o["sub_blocks"] == [s.idx for s in op.sub_blocks()]
    rec = pj["blocks"][0]["ops"][0]
    assert rec["type"] == "recurrent" and rec["sub_blocks"] == [1] and rec["attrs"]["sub_block"] == 1
    assert rec["attrs"]["ex_states"] == prog.global_block().op(0).attr("ex_states")
    assert "op_callstack" not in rec["attrs"]
    json.dumps(pj, allow_nan=False)  # what the browser gets is strict JSON


def test_var_kinds_and_op_roles():
    prog, _ = nested_rnn_program()
    pj = program_json(prog)
    kinds = {v["id"]: v["kind"] for b in pj["blocks"] for v in b["vars"]}
    assert kinds["v0:x"] == kinds["v0:h0"] == "data"
    assert kinds[f"v0:{HOSTILE}"] == "param"
    assert kinds["v0:relu.out_0"] == kinds["v2:tanh.out_0"] == "tmp"
    assert kinds["v0:static_rnn.step_scopes_1"] == "other"
    assert kinds["v2:x"] == "data"  # a step input: read in the step before any op there writes it
    v = next(v for v in pj["blocks"][0]["vars"] if v["name"] == HOSTILE)
    assert v == {"id": f"v0:{HOSTILE}", "name": HOSTILE, "type": "LOD_TENSOR", "dtype": "float32", "shape": [4, 4],
                 "persistable": True, "parameter": True, "kind": "param", "group": None}

    tj = program_json(training_program())
    roles = {o["type"]: o["role"] for o in tj["blocks"][0]["ops"]}
    assert roles == {"mul": "forward", "relu": "forward", "fill_constant": "forward", "mul_grad": "backward",
                     "sgd": "optimize"}
    tk = {v["name"]: v["kind"] for v in tj["blocks"][0]["vars"]}
    assert tk["w@GRAD"] == "grad" and tk["w"] == "param" and tk["x"] == "data"
    assert tk["lr"] == "param"  # persistable, read before written: state from outside, not a feed


def test_dot_has_one_node_per_op_and_var_and_a_cluster_per_sub_block():
    prog, _ = nested_rnn_program()
    pj = program_json(prog)
    ops, vars_ = all_ids(pj)
    nodes = dot_nodes(pj["dot"])
    assert set(nodes) == ops | vars_ and len(nodes) == len(ops) + len(vars_)
    assert all(nodes[i].startswith("op ") for i in ops) and all(nodes[i].startswith("var ") for i in vars_)
    dot = pj["dot"]
    assert dot.count("subgraph cluster_1 {") == 1 and dot.count("subgraph cluster_2 {") == 1
    # cluster_2 nests inside cluster_1: it opens before cluster_1 closes
    c1 = dot.index("subgraph cluster_1 {")
    c2 = dot.index("subgraph cluster_2 {")
    depth = 0
    for ch in dot[c1:c2]:
        depth += ch == "{"
        depth -= ch == "}"
    assert depth >= 1
    assert '"o0:0" -> "o1:0" [lhead="cluster_1"' in dot and '"o1:0" -> "o2:0" [lhead="cluster_2"' in dot
    # edges name declared variables by their declaring block
    assert f'"v0:{HOSTILE.replace(chr(34), chr(92) + chr(34))}" -> "o2:0"' in dot


@needs_dot
def test_dot_renders_with_graphviz_and_svg_ids_are_the_contract_ids():
    prog, _ = nested_rnn_program()
    pj = program_json(prog)
    svg = render_svg(pj["dot"])
    ops, vars_ = all_ids(pj)
    nodes = [g for g in svg.iter(f"{SVG}g") if "node" in g.get("class", "").split()]
    assert sorted(g.get("id") for g in nodes) == sorted(ops | vars_)
    clusters = {g.get("id") for g in svg.iter(f"{SVG}g") if "cluster" in g.get("class", "").split()}
    assert clusters == {"cluster_1", "cluster_2"}
    texts = " ".join(t.text or "" for t in svg.iter(f"{SVG}text"))
    assert HOSTILE in texts  # shown as text: the XML parser got it back from escaped markup


def odd_names_program():
    prog = kc.Program()
    with kc.program_guard(prog):
        g = prog.global_block()
        prev = g.create_var(ODD_NAMES[0], [2, 2])
        for name in ODD_NAMES[1:]:
            out = g.create_var(name, [2, 2])
            g.append_op("relu", inputs={"X": [prev]}, outputs={"Out": [out]})
            prev = out
    return prog


def test_dot_escapes_hostile_names():
    pj = program_json(odd_names_program())
    nodes = dot_nodes(pj["dot"])
    assert set(nodes) >= {f"v0:{n}" for n in ODD_NAMES}
    dot = pj["dot"]
    assert HOSTILE not in dot and HOSTILE.replace('"', '\\"') in dot  # its quotes cannot end a DOT string
    # no label is an HTML-like label (<...>) and no name keeps a Graphviz escape (\N, \l) active
    assert not re.search(r"label=<", dot)
    assert "esc\\\\N\\\\l" in dot


@needs_dot
def test_hostile_names_round_trip_through_graphviz():
    pj = program_json(odd_names_program())
    svg = render_svg(pj["dot"])
    ids = {g.get("id") for g in svg.iter(f"{SVG}g") if "node" in g.get("class", "").split()}
    assert ids == {f"v0:{n}" for n in ODD_NAMES} | {f"o0:{i}" for i in range(len(ODD_NAMES) - 1)}
    texts = [t.text or "" for t in svg.iter(f"{SVG}text")]
    for n in ODD_NAMES:
        if "\n" not in n:
            assert n in texts, n  # the label shows the name verbatim (escapes inert)


CONTROL_NAMES = ["esc\x1b]0;title\x07", "nul\x00soh\x01", "cr\rlf", "rlo\u202eevil", "del\x7fcsi\x9b", "bom\ufeff",
                 "nonchar\ufffe", "ls\u2028ps\u2029"]


def control_names_program():
    prog = kc.Program()
    g = prog.global_block()
    prev = g.create_var("plain", [2])
    for name in CONTROL_NAMES:
        out = g.create_var(name, [2])
        g.append_op("relu", inputs={"X": [prev]}, outputs={"Out": [out]})
        prev = out
    return prog


def test_dot_shows_control_characters_as_escapes():
    from kernelcore.text_safety import is_unsafe
    dot = program_json(control_names_program(), dot=True)["dot"]
    assert [c for c in dot if is_unsafe(c) and c not in "\n\t"] == []  # the DOT layout keeps its own
    assert "esc\\\\x1b]0;title\\\\x07" in dot  # a visible escape, its backslash doubled for Graphviz


@needs_dot
def test_dot_with_control_characters_renders_to_well_formed_svg():
    from kernelcore.text_safety import safe_name
    svg = render_svg(program_json(control_names_program(), dot=True)["dot"])  # ET.fromstring: well-formed XML
    ids = {g.get("id") for g in svg.iter(f"{SVG}g") if "node" in g.get("class", "").split()}
    assert "v0:plain" in ids and len(ids) == 2 * len(CONTROL_NAMES) + 1
    texts = [t.text or "" for t in svg.iter(f"{SVG}text")]
    for n in CONTROL_NAMES:
        assert safe_name(n) in texts, n  # each name shown, with its escapes visible


def test_pruned_program_json_and_dot_grey_exactly_the_removed_parts():
    prog, z = nested_rnn_program()
    pr = kc.prune(prog, [z], feeds=["x", "h0"])
    assert pr.removed_ops == [(0, 2)]
    pj = program_json(prog, pr)
    p = pj["pruned"]
    assert p["removed_ops"] == ["o0:2"] and p["removed_vars"] == ["v0:scale.out_0"]
    assert p["kept_map"] == {f"o{nb}:{ni}": f"o{ob}:{oi}" for (nb, ni), (ob, oi) in pr.kept.items()}
    nodes = dot_nodes(pj["dot"])
    assert {i for i, cls in nodes.items() if "removed" in cls.split()} == {"o0:2", "v0:scale.out_0"}
    # the JSON is of the original program: every original op is still there
    assert sum(len(b["ops"]) for b in pj["blocks"]) == sum(len(b.ops) for b in prog.blocks)


def test_pruned_program_json_with_renumbered_blocks():
    """Pruning away an op with a sub-block removes the block; kept_map maps new ids to old ones."""
    prog, _ = nested_rnn_program()
    scale_out = prog.global_block().op(2).output("Out")[0]
    pr = kc.prune(prog, [scale_out], feeds=["x"])
    pj = program_json(prog, pr)
    removed = set(pj["pruned"]["removed_ops"])
    assert "o0:0" in removed and "o2:0" in removed and "o0:2" not in removed
    assert pj["pruned"]["kept_map"] == {"o0:0": "o0:2"}
    assert {i for i, c in dot_nodes(pj["dot"]).items() if "removed" in c.split() and i.startswith("o")} == removed
    with pytest.raises(TypeError, match="PruneResult"):
        program_json(prog, pr.program)


def test_non_finite_attrs_are_strict_json():
    prog = kc.Program()
    with kc.program_guard(prog):
        g = prog.global_block()
        g.append_op("fill_constant", outputs={"Out": [g.create_var("a")]},
                    attrs={"shape": [1], "value": float("nan")})
        g.append_op("fill_constant", outputs={"Out": [g.create_var("b")]},
                    attrs={"shape": [1], "value": float("-inf")})
        g.append_op("fill_constant", outputs={"Out": [g.create_var("c")]}, attrs={"shape": [1], "value": 0.1})
    pj = program_json(prog)
    vals = [o["attrs"]["value"] for o in pj["blocks"][0]["ops"]]
    assert vals == ["nan", "-inf", 0.1]  # 0.1 as meant, not float32's 0.10000000149
    json.dumps(pj, allow_nan=False)


def notebook_shows(obj) -> dict:
    """What a notebook's IPython shows of `obj` once kernelcore's bundles are registered with its formatter."""
    from IPython.core.formatters import DisplayFormatter
    formatter = DisplayFormatter()
    assert show_in_notebooks(SimpleNamespace(display_formatter=formatter))
    data, _ = formatter.format(obj)
    return data


def test_the_program_and_the_trace_leave_their_notebook_form_to_the_view():
    assert not hasattr(kc.Program, "_repr_mimebundle_") and not hasattr(kc.Trace, "_repr_mimebundle_")
    assert show_in_notebooks() is False  # no IPython shell runs under pytest: nothing is registered


def test_program_mimebundle(monkeypatch):
    prog, _ = nested_rnn_program()
    monkeypatch.setattr(display.shutil, "which", lambda name: None)
    mb = program_mimebundle(prog)
    assert set(mb) == {PROGRAM_MIME, "text/plain", "text/html"}
    assert mb[PROGRAM_MIME] == program_json(prog)
    assert mb["text/plain"] == str(prog)
    assert mb["text/html"].startswith('<pre class="kernelcore-program">') and "<svg" not in mb["text/html"]
    assert "<img" not in mb["text/html"] and "&lt;img src=x onerror=&quot;window.__pwned=1&quot;&gt;" in mb["text/html"]
    assert notebook_shows(prog) == mb


@needs_dot
def test_program_mimebundle_inline_svg_when_dot_exists():
    prog, _ = nested_rnn_program()
    page = program_mimebundle(prog)["text/html"]
    assert "<svg" in page and "<?xml" not in page
    assert "<img" not in page and "onerror=\"" not in page


def _traced_run(prog, retain="shapes"):
    rng = np.random.default_rng(0)
    scope = kc.Scope()
    scope.set(HOSTILE, rng.standard_normal((4, 4)).astype(np.float32))
    feed = {"x": rng.standard_normal((3, 2, 2, 4)).astype(np.float32), "h0": np.zeros((2, 4), np.float32)}
    with kc.trace(retain=retain) as tr:
        kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=[], scope=scope)
    return tr


def test_trace_mimebundle_and_truncation():
    prog, _ = nested_rnn_program()
    tr = _traced_run(prog)
    mb = notebook_shows(tr)
    assert set(mb) == {TRACE_MIME, "text/plain", "text/html"}
    data = mb[TRACE_MIME]
    assert data == tr.to_json() and "truncated" not in data
    assert mb["text/plain"] == repr(tr)
    assert "tanh" in mb["text/html"] and "<img" not in mb["text/html"]
    cut = tr.to_json(limit=10)
    assert len(cut["events"]) == 10 and cut["truncated"] == len(tr.events) - 10
    assert cut["events"] == tr.to_json()["events"][:10]
    assert trace_mimebundle(tr.to_json(), tr.summary(), tr.op_times(), repr(tr)) == mb  # plain data in, same bundle


def test_var_kinds_of_a_paddle_inference_model():
    """Paddle marks an inference model's weights persistable, not is_parameter; its input comes from a feed op."""
    pj = program_json(kc.load_program(Path(__file__).resolve().parents[1] / "examples/programs/mlp.pdmodel"))
    kinds = {v["name"]: v["kind"] for v in pj["blocks"][0]["vars"]}
    assert kinds["x"] == "data" and kinds["feed"] == kinds["fetch"] == "other"
    assert {n for n, k in kinds.items() if k == "param"} == {f"fc_{i}.{p}_0" for i in range(3) for p in "wb"}
    assert kinds["fc_2.tmp_2"] == "tmp"


def test_static_svg_gives_up_past_its_time_budget():
    import shutil
    from kernelcore.view.display import static_svg
    if shutil.which("dot") is None:
        pytest.skip("no system dot binary: the static SVG fallback is off")
    dot = "digraph { " + " ".join(f"n{i} -> n{i + 1};" for i in range(3000)) + " }"
    assert static_svg(dot, timeout=0.001) is None
    assert static_svg("digraph { a -> b }").startswith("<svg")
