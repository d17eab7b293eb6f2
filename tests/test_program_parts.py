"""A big program in parts (kernelcore/program_parts.py, ProgramJSON version 3): the skeleton plus every
group's contents is exactly the whole ProgramJSON; the merged edges, refs and external edges are what the
whole program's ops and variables imply; search sees unsent names; ids of displayed programs die with them."""
from __future__ import annotations

import gc

import pytest

import kernelcore as kc
from kernelcore import program_parts
from kernelcore.display import program_json
from kernelcore.program_parts import ProgramGone, ProgramParts
from test_contract import check

LAYERS = 60


def mlp(layers=LAYERS):
    L = kc.layers
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        h = L.data("x", [-1, 8])
        for _ in range(layers):
            h = L.fc(h, 8, act="relu")
        kc.optimizer.SGD(learning_rate=0.1).minimize(L.mean(h), startup)
    return main


@pytest.fixture(scope="module")
def prog():
    return mlp()


@pytest.fixture(scope="module")
def whole(prog):
    return program_json(prog)


@pytest.fixture(scope="module")
def parts(prog):
    return ProgramParts(prog, prog.version)


def _all_contents(parts, skel):
    """The skeleton's ops/vars plus the contents of every group it did not send."""
    ops, vars_ = {}, {}
    for b in skel["blocks"]:
        for o in b["ops"]:
            ops[o["id"]] = o
        for v in b["vars"]:
            vars_[v["id"]] = v
        todo = [g["id"] for g in b["groups"] if not g["loaded"]]
        c = parts.contents(b["idx"], todo)
        check("GroupContentsJSON", c)
        for o in c["ops"]:
            assert o["id"] not in ops, "an op sent twice"
            ops[o["id"]] = o
        for v in c["vars"]:
            assert v["id"] not in vars_, "a var sent twice"
            vars_[v["id"]] = v
    return ops, vars_


def test_skeleton_and_contents_are_the_whole_program(parts, whole):
    skel = parts.skeleton("p-test")
    check("ProgramJSON", skel)
    assert skel["version"] == 3 and skel["lazy"]["id"] == "p-test"
    b0, w0 = skel["blocks"][0], whole["blocks"][0]
    assert skel["lazy"]["ops"] == len(w0["ops"]) and skel["lazy"]["vars"] == len(w0["vars"])
    # every group is there, as in the whole JSON, with how many nodes sit directly in it
    assert [{k: g[k] for k in w} for g, w in zip(b0["groups"], w0["groups"])] == w0["groups"]
    direct = {}
    for x in w0["ops"] + w0["vars"]:
        direct[x["group"]] = direct.get(x["group"], 0) + 1
    assert all(g["nodes"] == direct.get(g["id"], 0) for g in b0["groups"])
    # only block level and the stages are sent at first; far fewer ops than the program has
    assert {g["kind"] for g in b0["groups"] if g["loaded"]} == {"stage"}
    assert len(b0["ops"]) < len(w0["ops"]) / 10
    ops, vars_ = _all_contents(parts, skel)
    assert ops == {o["id"]: o for o in w0["ops"]}
    assert vars_ == {v["id"]: v for v in w0["vars"]}


def _edges_of(whole_block):
    """(var name, var group, op group, "in"|"out") per var-op edge of the whole JSON's block."""
    vgroup = {v["name"]: v["group"] for v in whole_block["vars"]}
    out = []
    for o in whole_block["ops"]:
        for slots, d in ((o["inputs"], "in"), (o["outputs"], "out")):
            for names in slots.values():
                for n in names:
                    if n in vgroup:
                        out.append((n, vgroup[n], o["group"], d))
    return out


def test_merged_edges_refs_and_external_edges(parts, whole):
    skel = parts.skeleton(None)
    b0, w0 = skel["blocks"][0], whole["blocks"][0]
    want: dict = {}
    for _n, gv, go, d in _edges_of(w0):
        if gv != go and gv is not None and go is not None:
            key = (gv, go) if d == "in" else (go, gv)
            want[key] = want.get(key, 0) + 1
    assert {(a, z): n for a, z, n in b0["edges"]} == want
    assert len(want) > LAYERS  # forward, backward and optimize layers link up
    # one layer group: what its ops name outside it, and the edges of its variables to ops elsewhere
    g = next(x for x in b0["groups"] if x["kind"] == "layer" and x["nodes"] > 3 and not x["loaded"])
    c = parts.contents(0, [g["id"]])
    vgroup = {v["name"]: v["group"] for v in w0["vars"]}
    names = {n for o in c["ops"] for slots in (o["inputs"], o["outputs"]) for ns in slots.values() for n in ns}
    assert c["refs"] == {n: vgroup[n] for n in names if n in vgroup and vgroup[n] != g["id"]}
    ext: dict = {}
    for n, gv, go, d in _edges_of(w0):
        if gv == g["id"] and go != g["id"]:
            ext[(f"v0:{n}", go, d)] = ext.get((f"v0:{n}", go, d), 0) + 1
    assert {(v, go, d): k for v, go, d, k in c["external"]} == ext
    assert ext, "a layer's parameter is read by its gradient op and written by sgd elsewhere"


def test_search_finds_names_in_unsent_groups(parts, whole):
    w0 = whole["blocks"][0]
    r = parts.search("fc_37.W")
    check("SearchResultJSON", r)
    want = sorted(v["id"] for v in w0["vars"] if "fc_37.w" in v["id"].lower())
    assert sorted(h["id"] for h in r["hits"]) == want and r["total"] == len(want) > 0
    groups = {v["id"]: v["group"] for v in w0["vars"]}
    assert all(h["group"] == groups[h["id"]] for h in r["hits"])
    r = parts.search("relu_grad")
    assert r["total"] == LAYERS and all(h["id"].startswith("o0:") for h in r["hits"])
    assert parts.search("   ") == {"hits": [], "total": 0}
    assert parts.search("relu", limit=5)["total"] == 2 * LAYERS and len(parts.search("relu", limit=5)["hits"]) == 5


def test_requests_and_their_errors(parts):
    assert "error" in parts.handle({"type": "contents", "block": 0, "groups": ["group_0_99999"]})
    assert "error" in parts.handle({"type": "contents", "block": 7, "groups": [None]})
    assert "error" in parts.handle({"type": "contents", "block": "0", "groups": [None]})
    assert "error" in parts.handle({"type": "drop_tables"})
    assert parts.handle({"type": "search", "query": "mean"})["total"] >= 1


def test_the_bundle_of_a_big_program_is_its_skeleton_and_its_id_dies_with_it(monkeypatch):
    from kernelcore_widgets.program_comm import answer
    monkeypatch.setattr(program_parts, "LAZY_ABOVE", 100)
    small = mlp(3)
    assert small._repr_mimebundle_()["application/vnd.kernelcore.program+json"]["lazy"] is None
    p = mlp(20)
    pj = p._repr_mimebundle_()["application/vnd.kernelcore.program+json"]
    check("ProgramJSON", pj)
    pid = pj["lazy"]["id"]
    g = next(x["id"] for x in pj["blocks"][0]["groups"] if not x["loaded"])
    reply = answer(pid, {"req": 4, "type": "contents", "block": 0, "groups": [g]})
    check("PartsReplyJSON", reply)
    assert reply["ok"] and reply["req"] == 4 and reply["result"]["groups"] == [g]
    bad = answer(pid, {"req": 5, "type": "contents", "block": 0, "groups": ["nope"]})
    assert not bad["ok"] and "nope" in bad["error"]
    assert program_parts.parts_of(p) is program_parts.parts_of(p)  # built once per version
    p.touch()  # an edit: the shown ids may no longer mean what they meant
    assert not answer(pid, {"req": 6, "type": "search", "query": "fc"})["ok"]
    pj2 = p._repr_mimebundle_()["application/vnd.kernelcore.program+json"]
    assert answer(pj2["lazy"]["id"], {"req": 7, "type": "search", "query": "fc"})["ok"]
    del p
    gc.collect()
    gone = answer(pj2["lazy"]["id"], {"req": 8, "type": "search", "query": "fc"})
    assert not gone["ok"] and "re-run the cell" in gone["error"]
    with pytest.raises(ProgramGone):
        program_parts.lookup("p-never")


def test_widget_sends_the_skeleton_and_answers_contents_and_details(monkeypatch):
    kw = pytest.importorskip("kernelcore_widgets")
    monkeypatch.setattr(program_parts, "LAZY_ABOVE", 100)
    p = mlp(20)
    w = kw.ProgramGraph(p)
    assert w.program["lazy"] is not None
    sent = []
    monkeypatch.setattr(w, "send", lambda m, *a, **k: sent.append(m))
    g = next(x for x in w.program["blocks"][0]["groups"] if not x["loaded"] and x["nodes"])
    w.handle_message({"type": "contents", "req": 1, "block": 0, "groups": [g["id"]]})
    assert sent[-1]["type"] == "parts" and sent[-1]["ok"] and sent[-1]["req"] == 1
    check("PartsReplyJSON", sent[-1])
    op = sent[-1]["result"]["ops"][0]
    d = w.select(op["id"])  # an op the first payload did not carry: Python still describes it
    assert d["type"] == op["type"] and d["attrs"] == op["attrs"] and d["layer"]
    w.handle_message({"type": "search", "req": 2, "query": "fc_5.w_0"})
    assert sent[-1]["ok"] and sent[-1]["result"]["total"] >= 1
