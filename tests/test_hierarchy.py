"""The program graph's hierarchy (ProgramJSON version 2): stages from `op_role`, layers from
`op_namescope` and name prefixes, repeats, ranges, backward -> forward links and call sites, checked on
programs Paddle itself writes (tests/paddle_oracle/make_big_programs.py; skipped without its venv) and on
kernelcore-built ones."""
from __future__ import annotations

import collections
import json
import re
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import kernelcore as kc  # noqa: E402
from kernelcore.view import hierarchy  # noqa: E402
from kernelcore.view.display import program_json  # noqa: E402
from test_paddle_parity import ORACLE, PADDLE3, _need, run_paddle  # noqa: E402

LAYERS = 100  # the MLP Paddle writes here: 100 relu fc layers (803 ops)


@pytest.fixture(scope="module")
def paddle_progs(tmp_path_factory) -> Path:
    _need(PADDLE3, "3.3.1")
    out = tmp_path_factory.mktemp("paddle_big")
    run_paddle(PADDLE3, ORACLE / "make_big_programs.py", out, LAYERS)
    return out


def groups_of(pj, b=0):
    return {g["id"]: g for g in pj["blocks"][b]["groups"]}


def chain(groups, gid):
    """The labels of a group and its ancestors, outermost first."""
    out = []
    while gid is not None:
        out.append(groups[gid]["label"])
        gid = groups[gid]["parent"]
    return out[::-1]


def test_name_paths_and_scopes():
    assert hierarchy.name_path("fc_12.w_0") == ("fc_12",)
    assert hierarchy.name_path("fc_12.tmp_0@GRAD") == ("fc_12",)
    assert hierarchy.name_path("encoder.layers.2.linear1.weight") == ("encoder", "layers.2", "linear1")
    assert hierarchy.name_path("x") is None and hierarchy.name_path("tmp_3") is None
    assert hierarchy.scope_path("/encoder/layer_0/") == ("encoder", "layer_0")
    assert hierarchy.scope_path("/optimizer_12/") == () and hierarchy.scope_path("/") == ()
    assert hierarchy.role_name(257, "fill_constant", ()) == "backward"
    assert hierarchy.role_name(2, "sgd", ()) == "optimize" and hierarchy.role_name(0, "mul_grad", ()) == "forward"
    assert hierarchy.role_name(None, "mul_grad", ()) == "backward"


def test_callsite_is_the_user_line_not_paddles():
    stack = ['  File "/home/u/train.py", line 7, in <module>', '    build()',
             '  File "/home/u/model.py", line 3, in build', '    h = fc(x, 4)',
             '  File "/venv/lib/python3.11/site-packages/paddle/static/nn/common.py", line 9, in fc',
             '    helper.append_op(', '  File "/venv/lib/site-packages/paddle/base/framework.py", line 3339, in __init__',
             '    for frame in traceback.extract_stack():']
    assert hierarchy.callsite(stack) == "/home/u/model.py:3 in build: h = fc(x, 4)"
    assert hierarchy.callsite([]) is None


def test_paddle_mlp_stages_layers_repeats(paddle_progs):
    prog = kc.load_program(paddle_progs / f"mlp{LAYERS}.main.pb")
    meta = json.loads((paddle_progs / f"mlp{LAYERS}.json").read_text())
    pj = program_json(prog)
    ops = pj["blocks"][0]["ops"]
    assert len(ops) == meta["ops"] == 8 * LAYERS + 3
    groups = groups_of(pj)
    top = [g for g in groups.values() if g["parent"] is None]
    assert [(g["kind"], g["label"]) for g in top] == [("stage", "forward"), ("stage", "backward"), ("stage", "optimize")]
    # every op sits in the stage its op_role attribute names
    for o in ops:
        role = o["attrs"]["op_role"]
        want = "backward" if role & 1 else "optimize" if role & 2 else "forward"
        assert o["role"] == want and chain(groups, o["group"])[0] == want
    # the 100 identical fc layers are one repeat per stage, its count the layer count
    repeats = [g for g in groups.values() if g["kind"] == "repeat"]
    assert sorted((chain(groups, g["id"])[0], g["label"], g["count"]) for g in repeats) == sorted(
        (s, f"fc \u00d7{LAYERS}", LAYERS) for s in ("forward", "backward", "optimize"))
    # a layer holds the ops of one fc: its mul, elementwise_add and relu (forward), and their grads
    by_layer = collections.defaultdict(list)
    for o in ops:
        if o["group"] and groups[o["group"]]["kind"] == "layer":
            by_layer[(chain(groups, o["group"])[0], groups[o["group"]]["label"])].append(o["type"])
    assert by_layer[("forward", "fc_7")] == ["mul", "elementwise_add", "relu"]
    assert by_layer[("backward", "fc_7")] == ["relu_grad", "elementwise_add_grad", "mul_grad"]
    assert sorted(by_layer[("optimize", "fc_7")]) == ["sgd", "sgd"]
    # no group shows more than CHUNK children when opened
    kids = collections.Counter(g["parent"] for g in groups.values())
    direct_ops = collections.Counter(o["group"] for o in ops)
    for gid in groups:
        assert kids[gid] + direct_ops[gid] <= hierarchy.CHUNK
    # backward ops link to the forward op they differentiate: same layer, type without _grad
    linked = 0
    for o in ops:
        if o["type"].endswith("_grad"):
            f = ops[int(o["forward"].split(":")[1])]
            assert f["type"] == o["type"][:-5] and f["role"] == "forward"
            if groups[f["group"]]["kind"] == "layer":  # (a layer of one op is that op, in its parent)
                assert groups[f["group"]]["label"] == groups[o["group"]]["label"]
            linked += 1
    assert linked == 3 * LAYERS + 1  # every *_grad op (+ mean_grad)
    # the call site is the generator's line, not Paddle's internals
    assert ops[0]["callsite"].startswith(str(ORACLE / "make_big_programs.py") + ":")
    assert "paddle.static.nn.fc" in ops[0]["callsite"]
    # params sit with the layer that first reads them; the fed x at block level
    vars_ = {v["name"]: v for v in pj["blocks"][0]["vars"]}
    assert groups[vars_["fc_7.w_0"]["group"]]["label"] == "fc_7" and vars_["x"]["group"] is None


def test_paddle_namescopes_become_layers(paddle_progs):
    prog = kc.load_program(paddle_progs / "scoped.main.pb")
    pj = program_json(prog)
    groups = groups_of(pj)
    ops = pj["blocks"][0]["ops"]
    fwd = [chain(groups, o["group"]) for o in ops if o["role"] == "forward" and o["type"] == "mul"]
    # Paddle wrote op_namescope /encoder/layer_<i>/ (and /head/) on the forward ops
    rep = "layer/fc \u00d73"  # three alike: one repeat group
    assert fwd == [["forward", "encoder", rep, "layer_0/fc_0"], ["forward", "encoder", rep, "layer_1/fc_1"],
                   ["forward", "encoder", rep, "layer_2/fc_2"], ["forward", "head/fc_3"]]
    bwd = [chain(groups, o["group"]) for o in ops if o["type"] == "mul_grad"]
    assert bwd[0] == ["backward", "head/fc_3"] and bwd[-1] == ["backward", "encoder", rep, "layer_0/fc_0"]


def test_kernelcore_built_training_program_has_stages_and_layers():
    L = kc.layers
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        h = L.data("x", [-1, 4])
        for _ in range(5):
            h = L.fc(h, 4, act="relu")
        kc.optimizer.SGD(learning_rate=0.1).minimize(L.mean(h), startup)
    pj = program_json(main)
    groups = groups_of(pj)
    top = [g["label"] for g in groups.values() if g["parent"] is None]
    assert top == ["forward", "backward", "optimize"]
    assert sorted(g["count"] for g in groups.values() if g["kind"] == "repeat") == [5, 5, 5]


def test_sub_block_ops_are_grouped_in_their_own_block():
    from test_display import nested_rnn_program
    prog, _ = nested_rnn_program()
    pj = program_json(prog)
    for b in pj["blocks"]:
        ids = {g["id"] for g in b["groups"]}
        assert all(g["id"].startswith(f"group_{b['idx']}_") for g in b["groups"])
        assert all(o["group"] is None or o["group"] in ids for o in b["ops"])


def test_program_json_at_two_sizes():
    """No timed assertion (the times are printed); what is asserted is the structure at both sizes."""
    from make_frontend_fixtures import training_mlp
    small, big = training_mlp(10), training_mlp(80)
    t0 = time.perf_counter()
    a = program_json(small)
    t1 = time.perf_counter()
    b = program_json(big)
    t2 = time.perf_counter()
    print(f"program_json: {len(a['blocks'][0]['ops'])} ops {t1 - t0:.3f} s, {len(b['blocks'][0]['ops'])} ops {t2 - t1:.3f} s")
    assert a["dot"] is not None and b["dot"] is None  # the DOT source only for small programs
    assert len(b["blocks"][0]["groups"]) > len(a["blocks"][0]["groups"])


def test_mime_text_is_cut_for_big_programs():
    from kernelcore.view import display
    L = kc.layers
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        h = L.data("x", [-1, 4])
        for _ in range(4):
            h = L.fc(h, 4, act="relu")
    full = str(main).splitlines()
    assert display.program_text_head(main, limit=len(full) + 5) == str(main)
    head = display.program_text_head(main, limit=10).splitlines()
    assert head[:-1] == full[:10] and head[-1] == f"\u2026 {len(full) - 10} more lines (print(program) shows them all)"


def test_front_end_fixtures_are_what_python_writes():
    import make_frontend_fixtures as mf
    for name in mf.FIXTURES:
        assert (mf.OUT / name).read_text() == mf.render(name), f"run python tests/make_frontend_fixtures.py ({name})"


@pytest.mark.parametrize("kept", [False, True], ids=["read-at-display", "kept-from-loading"])
@pytest.mark.parametrize("name", ["mlp100", "scoped"])
def test_parts_of_paddle_programs_are_the_whole_program(paddle_progs, name, kept, monkeypatch):
    """The outline of a program sent in parts reads each op's role attributes where its type kept them
    last time (op_reads.read_ops); on what Paddle writes, every op, variable and group it sends is
    the whole ProgramJSON's. `kept`: the records come from the twin parse made while loading (as for
    every file of more than LAZY_ABOVE ops), and are the desc reader's."""
    from test_program_parts import _open_everything
    from kernelcore.ir import op_reads
    from kernelcore.view.program_parts import ProgramParts

    monkeypatch.setattr(op_reads, "LAZY_ABOVE", 0 if kept else 10**9)
    prog = kc.load_program(paddle_progs / f"{name}.main.pb")
    if kept:
        many = len(prog.desc.blocks) > 1
        assert prog.outline_reads() == [op_reads.read_ops(b.ops, many) for b in prog.desc.blocks]
    else:
        assert prog.outline_reads() is None
    whole = program_json(prog)
    parts = ProgramParts(prog, prog.version)
    ops, vars_, known, _rounds = _open_everything(parts, parts.skeleton("p"))
    b0 = whole["blocks"][0]
    assert ops == {o["id"]: o for o in b0["ops"]}
    assert vars_ == {v["id"]: v for v in b0["vars"]}
    assert {g: {k: v for k, v in d.items() if k not in ("nodes", "kids", "loaded")} for g, d in known.items()} \
        == groups_of(whole)


def test_ranges_of_single_op_layers_are_named_by_their_layers_not_op_indexes():
    """A legacy CNN's layers are mostly one op each (`conv2d_3`, `batch_norm_3`, ...): cut into ranges, a range
    says which layers it spans (`relu_0 … relu_47`), as the parameters name them, not `ops #0–#47`."""
    prog = kc.Program()
    g = prog.global_block()
    h = g.create_var("x", shape=[2, 3], dtype="float32")
    for i in range(hierarchy.CHUNK + 12):  # as Paddle's legacy layers name their outputs: relu_<i>.tmp_0
        out = g.create_var(f"relu_{i}.tmp_0", shape=[2, 3], dtype="float32")
        g.append_op("relu", inputs={"X": [h]}, outputs={"Out": [out]})
        h = out
    groups = groups_of(program_json(prog))
    ranges = sorted(g["label"] for g in groups.values() if g["kind"] == "range")
    assert ranges, groups
    assert not [label for label in ranges if "#" in label], ranges
    assert all(re.fullmatch(r"relu_\d+ \u2026 relu_\d+ \(\d+\)", label) for label in ranges), ranges
