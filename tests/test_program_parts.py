"""A big program in parts (kernelcore/view/program_parts.py, ProgramJSON version 3): the skeleton plus every
group's contents is exactly the whole ProgramJSON; the merged edges, refs and external edges are what the
whole program's ops and variables imply; search sees unsent names; ids of displayed programs die with them."""
from __future__ import annotations

import gc
import json

import pytest

import kernelcore as kc
from kernelcore.ir import op_reads
from kernelcore.view import program_parts
from kernelcore.view.display import program_json
from kernelcore.view.program_parts import ProgramGone, ProgramParts
from kernelcore.view.notebook import program_bundle
from make_frontend_fixtures import training_mlp
from test_contract import check

LAYERS = 60


def mlp(layers=LAYERS):
    return training_mlp(layers, width=8)


@pytest.fixture(scope="module")
def prog():
    return mlp()


@pytest.fixture(scope="module")
def whole(prog):
    return program_json(prog)


@pytest.fixture(scope="module")
def parts(prog):
    return ProgramParts(prog, prog.version)


def _open_everything(parts, skel):
    """Open every group the way the view does (a group becomes known when its parent is opened): the
    skeleton's ops/vars, then each round's contents, until nothing known is left unopened."""
    b0 = skel["blocks"][0]
    ops = {o["id"]: o for o in b0["ops"]}
    vars_ = {v["id"]: v for v in b0["vars"]}
    known = {g["id"]: g for g in b0["groups"]}
    loaded = {g["id"] for g in b0["groups"] if g["loaded"]}
    rounds = 0
    while True:
        todo = [g for g in known if g not in loaded]
        if not todo:
            return ops, vars_, known, rounds
        rounds += 1
        c = parts.contents(0, todo, sorted(loaded))
        check("GroupContentsJSON", c)
        for o in c["ops"]:
            assert o["id"] not in ops, "an op sent twice"
            ops[o["id"]] = o
        for v in c["vars"]:
            assert v["id"] not in vars_, "a var sent twice"
            vars_[v["id"]] = v
        loaded.update(todo)
        for g in c["known"]:
            known.setdefault(g["id"], g)


def test_skeleton_and_contents_are_the_whole_program(parts, whole):
    skel = parts.skeleton("p-test")
    check("ProgramJSON", skel)
    assert skel["version"] == 3 and skel["lazy"]["id"] == "p-test"
    b0, w0 = skel["blocks"][0], whole["blocks"][0]
    assert skel["lazy"]["ops"] == len(w0["ops"]) and skel["lazy"]["vars"] == len(w0["vars"])
    # at first: the stages (loaded) and their kids (known, folded); a handful of groups, few ops
    assert {g["kind"] for g in b0["groups"] if g["loaded"]} == {"stage"}
    assert all(g["parent"] is None or g["parent"] in {x["id"] for x in b0["groups"] if x["loaded"]}
               for g in b0["groups"])
    assert len(b0["groups"]) < 12 < len(w0["groups"])
    assert len(b0["ops"]) < len(w0["ops"]) / 10
    ops, vars_, known, rounds = _open_everything(parts, skel)
    assert rounds >= 3  # stages > repeats > ranges > layers
    assert ops == {o["id"]: o for o in w0["ops"]}
    assert vars_ == {v["id"]: v for v in w0["vars"]}
    # every group became known, as in the whole JSON, with its direct nodes and kids counted
    whole_groups = {g["id"]: g for g in w0["groups"]}
    assert set(known) == set(whole_groups)
    direct, kids = {}, {}
    for x in w0["ops"] + w0["vars"]:
        direct[x["group"]] = direct.get(x["group"], 0) + 1
    for g in w0["groups"]:
        kids[g["parent"]] = kids.get(g["parent"], 0) + 1
    for gid, g in known.items():
        assert {k: g[k] for k in whole_groups[gid]} == whole_groups[gid]
        assert g["nodes"] == direct.get(gid, 0) and g["kids"] == kids.get(gid, 0)


def _expected(whole_block, loaded):
    """refs, external and edges for `loaded` computed from the whole JSON alone."""
    groups = {g["id"]: g for g in whole_block["groups"]}
    L = {None, *loaded}
    K = set(loaded) | {g for g, x in groups.items() if x["parent"] in L}

    def lift(g):
        while g is not None and g not in K:
            g = groups[g]["parent"]
        return g

    vgroup = {v["name"]: v["group"] for v in whole_block["vars"]}
    refs, ext, edges = {}, {}, {}
    for o in whole_block["ops"]:
        go = o["group"]
        for slots, d in ((o["inputs"], "in"), (o["outputs"], "out")):
            for names in slots.values():
                for n in names:
                    if n not in vgroup:
                        continue
                    gv = vgroup[n]
                    if go in L and gv not in L:
                        refs[n] = lift(gv)
                    if gv in L and go not in L:
                        key = (f"v0:{n}", lift(go), d)
                        ext[key] = ext.get(key, 0) + 1
                    if gv not in L and go not in L and gv != go:
                        a, z = (lift(gv), lift(go)) if d == "in" else (lift(go), lift(gv))
                        if a != z:
                            edges[(a, z)] = edges.get((a, z), 0) + 1
    return refs, ext, edges


def test_refs_external_and_edges_lift_to_the_known_groups(parts, whole):
    w0 = whole["blocks"][0]
    skel = parts.skeleton(None)["blocks"][0]
    stages = [g["id"] for g in skel["groups"] if g["loaded"]]
    groups = {g["id"]: g for g in w0["groups"]}
    repeat = next(g for g in w0["groups"] if g["kind"] == "repeat" and g["parent"] == stages[0])
    rng = next(g for g in w0["groups"] if g["parent"] == repeat["id"])
    layer = next(g for g in w0["groups"] if g["parent"] == rng["id"] and g["kind"] == "layer")
    opened = [(skel, stages)]
    c = parts.contents(0, [repeat["id"], rng["id"], layer["id"]], stages)
    opened.append((c, stages + [repeat["id"], rng["id"], layer["id"]]))
    for got, loaded in opened:
        refs, ext, edges = _expected(w0, loaded)
        assert got["refs"] == refs
        assert {(v, g, d): n for v, g, d, n in got["external"]} == ext
        assert {(a, z): n for a, z, n in got["edges"]} == edges
        known = {g["id"] for g in got.get("known", got.get("groups"))}
        ends = {z for a, z0, n in got["edges"] for z in (a, z0)} | {g for _v, g, _d, _n in got["external"]}
        assert ends <= known, "an edge to a group the view does not know"
    assert edges and ext and refs
    assert all(groups[g]["parent"] in {None, *opened[-1][1]} for g in {x["id"] for x in c["known"]})


def test_search_finds_names_in_unsent_groups(parts, whole):
    w0 = whole["blocks"][0]
    r = parts.search("fc_37.W")
    check("SearchResultJSON", r)
    want = sorted(v["id"] for v in w0["vars"] if "fc_37.w" in v["id"].lower())
    assert sorted(h["id"] for h in r["hits"]) == want and r["total"] == len(want) > 0
    groups = {v["id"]: v["group"] for v in w0["vars"]}
    assert all(h["group"] == groups[h["id"]] for h in r["hits"])
    parents = {g["id"]: g["parent"] for g in w0["groups"]}
    for h in r["hits"]:  # the groups around each hit, outermost first, described for a view that lacks them
        assert h["path"][-1] == h["group"] and parents[h["path"][0]] is None
        assert all(parents[k] == p for p, k in zip(h["path"], h["path"][1:]))
        assert all(r["groups"][g]["id"] == g for g in h["path"])
    r = parts.search("relu_grad")
    assert r["total"] == LAYERS and all(h["id"].startswith("o0:") for h in r["hits"])
    assert parts.search("   ") == {"hits": [], "total": 0, "groups": {}}
    assert parts.search("relu", limit=5)["total"] == 2 * LAYERS and len(parts.search("relu", limit=5)["hits"]) == 5


def test_requests_and_their_errors(parts):
    assert "error" in parts.handle({"type": "contents", "block": 0, "groups": ["group_0_99999"]})
    assert "error" in parts.handle({"type": "contents", "block": 0, "groups": [], "loaded": ["nope"]})
    assert "error" in parts.handle({"type": "contents", "block": 7, "groups": [None]})
    assert "error" in parts.handle({"type": "contents", "block": "0", "groups": [None]})
    assert "error" in parts.handle({"type": "drop_tables"})
    assert parts.handle({"type": "search", "query": "mean"})["total"] >= 1


def test_the_bundle_of_a_big_program_is_its_skeleton_and_its_id_dies_with_it(monkeypatch):
    from kernelcore_widgets.program_comm import answer
    monkeypatch.setattr(op_reads, "LAZY_ABOVE", 100)
    small = mlp(3)
    assert program_bundle(small)["application/vnd.kernelcore.program+json"]["lazy"] is None
    p = mlp(20)
    pj = program_bundle(p)["application/vnd.kernelcore.program+json"]
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
    pj2 = program_bundle(p)["application/vnd.kernelcore.program+json"]
    assert answer(pj2["lazy"]["id"], {"req": 7, "type": "search", "query": "fc"})["ok"]
    del p
    gc.collect()
    gone = answer(pj2["lazy"]["id"], {"req": 8, "type": "search", "query": "fc"})
    assert not gone["ok"] and "re-run the cell" in gone["error"]
    with pytest.raises(ProgramGone):
        program_parts.lookup("p-never")


def test_widget_sends_the_skeleton_and_answers_contents_and_details(monkeypatch):
    kw = pytest.importorskip("kernelcore_widgets")
    monkeypatch.setattr(op_reads, "LAZY_ABOVE", 100)
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
    assert d["type"] == op["type"] and d["attrs"] == op["attrs"]
    whole = {g["id"]: g for g in program_json(p)["blocks"][0]["groups"]}
    want, gid = [], op["group"]
    while gid is not None:  # every group around it, though the skeleton did not list them all
        want.append(whole[gid]["label"])
        gid = whole[gid]["parent"]
    assert d["layer"] == want[::-1] and len(want) >= 2
    w.handle_message({"type": "search", "req": 2, "query": "fc_5.w_0"})
    assert sent[-1]["ok"] and sent[-1]["result"]["total"] >= 1


def test_the_file_viewers_server_sends_a_big_file_in_parts(tmp_path, monkeypatch):
    server = pytest.importorskip("kernelcore_widgets.server")
    monkeypatch.setattr(op_reads, "LAZY_ABOVE", 100)
    p = mlp(20)
    kc.save_program(p, tmp_path / "big.pdmodel")
    kc.save_program(mlp(3), tmp_path / "small.pdmodel")
    assert server.program_file_json(tmp_path, "small.pdmodel")["lazy"] is None
    skel = server.program_file_json(tmp_path, "big.pdmodel")
    check("ProgramJSON", skel)
    assert skel["lazy"] == {"id": None, "ops": len(p.global_block().ops), "vars": skel["lazy"]["vars"]}
    g = next(x["id"] for x in skel["blocks"][0]["groups"] if not x["loaded"])
    loaded = [x["id"] for x in skel["blocks"][0]["groups"] if x["loaded"]]
    ans = server.program_file_parts(tmp_path, "big.pdmodel", json.dumps(
        {"type": "contents", "block": 0, "groups": [g], "loaded": loaded + [g]}))
    check("PartsReplyJSON", {"req": None, **ans})
    assert ans["ok"] and ans["result"]["known"]
    whole = program_json(p)["blocks"][0]
    assert ans["result"]["ops"] == [] or {o["id"] for o in ans["result"]["ops"]} <= {o["id"] for o in whole["ops"]}
    assert server.program_file_parts(tmp_path, "big.pdmodel", '{"type": "search", "query": "fc_4.w_0"}')["ok"]
    assert not server.program_file_parts(tmp_path, "big.pdmodel", '{"type": "nope"}')["ok"]
    with pytest.raises(server.ProgramRequestError):
        server.program_file_parts(tmp_path, "big.pdmodel", "not json")
    with pytest.raises(server.ProgramRequestError):
        server.program_file_parts(tmp_path, "../big.pdmodel", "{}")


def test_a_program_with_sub_blocks_in_parts():
    from test_contract import training_program
    from test_debug import rnn_program
    for prog in (rnn_program()[0], training_program()[0]):
        parts = ProgramParts(prog, prog.version)
        skel = parts.skeleton("p")
        check("ProgramJSON", skel)
        whole = program_json(prog)
        for sb, wb in zip(skel["blocks"], whole["blocks"]):
            b = sb["idx"]
            ops = {o["id"] for o in sb["ops"]}
            vars_ = {v["id"] for v in sb["vars"]}
            known = {g["id"]: g for g in sb["groups"]}
            loaded = {g for g, x in known.items() if x["loaded"]}
            while [g for g in known if g not in loaded]:
                todo = [g for g in known if g not in loaded]
                c = parts.contents(b, todo, sorted(loaded | set(todo)))
                ops |= {o["id"] for o in c["ops"]}
                vars_ |= {v["id"] for v in c["vars"]}
                loaded |= set(todo)
                for g in c["known"]:
                    known.setdefault(g["id"], g)
                everywhere = set(known) | {g["id"] for blk in whole["blocks"] for g in blk["groups"]}
                assert {g for r in c["refs"].values() for g in (r if isinstance(r, list) else [r])} <= everywhere
            assert ops == {o["id"] for o in wb["ops"]} and vars_ == {v["id"] for v in wb["vars"]}


def test_a_pruned_view_of_a_big_program_gets_what_pruning_removed_in_parts(monkeypatch):
    """ProgramGraph(prog, pruned=...) of a program sent in parts: the skeleton carries only the removed ids
    among what it sends, the totals and a mark per known group; every contents answer adds its share.
    Opened all the way, the removed ids are pruning's, and a group is marked "all" exactly when every op
    inside it was removed, "some" when some were."""
    kw = pytest.importorskip("kernelcore_widgets")
    monkeypatch.setattr(op_reads, "LAZY_ABOVE", 100)
    p = mlp(20)
    r = kc.prune(p, ["fc_9.tmp_0"])  # nine layers and the tenth's matmul: the rest of it, and all after, go
    w = kw.ProgramGraph(p, pruned=r)
    skel = w.program
    check("ProgramJSON", skel)
    pr = skel["pruned"]
    assert pr["counts"] == {"ops": len(r.removed_ops), "vars": len(r.removed_vars)}
    assert len(pr["removed_ops"]) < len(r.removed_ops)  # not the whole list up front
    sent = []
    monkeypatch.setattr(w, "send", lambda m, *a, **k: sent.append(m))
    removed_ops, removed_vars, marks = set(pr["removed_ops"]), set(pr["removed_vars"]), dict(pr["groups"])
    known = {g["id"]: g for g in skel["blocks"][0]["groups"]}
    loaded = {g["id"] for g in known.values() if g["loaded"]}
    req = 0
    while [g for g in known if g not in loaded]:
        todo = [g for g in known if g not in loaded]
        req += 1
        w.handle_message({"type": "contents", "req": req, "block": 0, "groups": todo, "loaded": sorted(loaded | set(todo))})
        reply = sent[-1]
        check("PartsReplyJSON", reply)
        c = reply["result"]
        removed_ops |= set(c["pruned"]["removed_ops"])
        removed_vars |= set(c["pruned"]["removed_vars"])
        marks.update(c["pruned"]["groups"])
        loaded |= set(todo)
        known.update({g["id"]: g for g in c["known"]})
    whole = r.to_json()
    assert removed_ops == set(whole["removed_ops"]) and removed_vars == set(whole["removed_vars"])
    # the marks, from the whole ProgramJSON: every op under a group (its own and its descendants')
    pj = program_json(p)
    parent = {g["id"]: g["parent"] for g in pj["blocks"][0]["groups"]}
    under: dict = {g: set() for g in parent}
    for o in pj["blocks"][0]["ops"]:
        g = o["group"]
        while g is not None:
            under[g].add(o["id"])
            g = parent[g]
    want = {g: ("all" if ops <= removed_ops else "some") for g, ops in under.items() if ops & removed_ops}
    assert marks == want
    assert marks[next(g for g, lbl in ((g["id"], g["label"]) for g in pj["blocks"][0]["groups"]) if lbl == "fc_9")] == "some"
    assert "all" in marks.values()


def test_a_sub_block_refers_to_an_enclosing_blocks_variable_by_the_chain_of_groups_around_it():
    """A step block reads a variable that block 0 places two groups deep (a layer inside a range): the ref
    is the chain of block 0's groups around it, outermost first; the first is known from the skeleton, each
    next is a kid of the one before, the last holds the variable (as in the whole ProgramJSON)."""
    from make_frontend_fixtures import mlp_then_rnn
    prog, name = mlp_then_rnn()
    parts = ProgramParts(prog, prog.version)
    skel = parts.skeleton("p")
    step = next(g["id"] for g in skel["blocks"][1]["groups"] if not g["loaded"])
    chain = parts.contents(1, [step], [step])["refs"][name]
    whole = program_json(prog)
    parent = {g["id"]: g["parent"] for g in whole["blocks"][0]["groups"]}
    assert len(chain) == 2
    assert chain[0] in {g["id"] for g in skel["blocks"][0]["groups"]}
    assert all(parent[b] == a for a, b in zip(chain, chain[1:]))
    assert chain[-1] == next(v["group"] for v in whole["blocks"][0]["vars"] if v["name"] == name)
    check("GroupContentsJSON", parts.contents(1, [step], [step]))


def test_an_optimizer_op_with_two_param_slots_is_placed_alike_in_parts_and_whole():
    """Every input slot named Param names the layer of an optimizer op with no op_role_var, in order, in
    the outline as in the whole ProgramJSON (a loadable if odd program)."""
    from kernelcore.ir.proto import framework_pb2 as pb
    d = pb.ProgramDesc()
    b = d.blocks.add()
    b.idx, b.parent_idx = 0, -1
    for name in ("p", "q", "fc_3.w", "fc_3.b", "lr", "g"):
        v = b.vars.add(name=name, persistable=True)
        v.type.type = pb.VarType.LOD_TENSOR
    for first, second in (("p", "fc_3.w"), ("q", "fc_3.b")):
        op = b.ops.add(type="sgd")
        for slot, names in (("Param", [first]), ("Grad", ["g"]), ("LearningRate", ["lr"]), ("Param", [second])):
            op.inputs.add(parameter=slot, arguments=names)
        op.outputs.add(parameter="ParamOut", arguments=[first])
        op.attrs.add(name="op_role", type=pb.AttrType.INT, i=2)
    prog = kc.Program(d)
    whole = program_json(prog)
    parts = ProgramParts(prog, prog.version)
    ops, _vars, known, _rounds = _open_everything(parts, parts.skeleton("p"))
    assert {o["id"]: o["group"] for o in ops.values()} == {o["id"]: o["group"] for o in whole["blocks"][0]["ops"]}
    assert [g["label"] for g in whole["blocks"][0]["groups"]] == ["fc_3"]
    assert set(known) == {g["id"] for g in whole["blocks"][0]["groups"]}


def test_the_outline_build_leaves_the_processs_garbage_to_the_collector():
    """The outline's objects go to the oldest gc generation without a walk; garbage the process made
    before (a cycle holding a big buffer) is still freed by a young collection, not kept until a full one."""
    import weakref

    class Cycle:
        def __init__(self):
            self.me = self
            self.data = bytearray(1_000_000)

    x = Cycle()
    r = weakref.ref(x)
    del x
    ProgramParts(mlp(5))
    gc.collect(1)
    assert r() is None


@pytest.mark.parametrize("role_type, role_var_type", [("LONG", "INTS"), ("INT", "STRINGS"), ("BOOLEAN", "STRINGS"),
                                                      ("STRING", "STRINGS")])
def test_role_attributes_of_other_types_read_alike_in_parts_and_whole(role_type, role_var_type):
    """op_role stored as another type than Paddle's INT, op_role_var as numbers: the outline (which reads
    the role where an op type kept it) and the whole ProgramJSON agree on every op's role and group, and
    neither fails on the odd program."""
    from kernelcore.formats import paddle_files
    from kernelcore.ir.proto import framework_pb2 as pb
    A = pb.AttrType
    d = pb.ProgramDesc()
    b = d.blocks.add()
    b.idx, b.parent_idx = 0, -1
    for name in ("p", "g", "lr", "fc_1.w"):
        v = b.vars.add(name=name, persistable=True)
        v.type.type = pb.VarType.LOD_TENSOR
    for _ in range(3):
        op = b.ops.add(type="sgd")
        for slot, names in (("Param", ["p"]), ("Grad", ["g"]), ("LearningRate", ["lr"])):
            op.inputs.add(parameter=slot, arguments=names)
        op.outputs.add(parameter="ParamOut", arguments=["p"])
        a = op.attrs.add(name="op_role", type=getattr(A, role_type))
        a.l, a.i, a.b, a.s = 2, 2, True, "2"
        op.attrs.add(name="op_namescope", type=A.STRING, s="/")
        op.attrs.add(name="op_role_var", type=getattr(A, role_var_type), ints=[1, 2], strings=["fc_1.w", "g"])
    prog = paddle_files.program_from_bytes(d.SerializeToString())
    whole = program_json(prog)
    parts = ProgramParts(prog, prog.version)
    ops, _vars, _known, _rounds = _open_everything(parts, parts.skeleton("p"))
    assert {o["id"]: (o["role"], o["group"]) for o in ops.values()} == \
        {o["id"]: (o["role"], o["group"]) for o in whole["blocks"][0]["ops"]}


def test_attributes_given_twice_load_and_both_readers_take_the_first_role_copy():
    """Paddle writes some attributes twice (reshape2's mkldnn_data_type): such a program loads. Where a role
    attribute is given twice, the outline and the whole ProgramJSON both take the first copy."""
    from kernelcore.formats import paddle_files
    from kernelcore.ir.proto import framework_pb2 as pb
    A = pb.AttrType
    d = pb.ProgramDesc()
    b = d.blocks.add()
    b.idx, b.parent_idx = 0, -1
    for name in ("x", "y"):
        v = b.vars.add(name=name)
        v.type.type = pb.VarType.LOD_TENSOR
    for k in range(3):
        op = b.ops.add(type="scale")
        op.inputs.add(parameter="X", arguments=["x"])
        op.outputs.add(parameter="Out", arguments=["y"])
        op.attrs.add(name="op_role", type=A.INT, i=0)
        op.attrs.add(name="op_namescope", type=A.STRING, s="/")
        op.attrs.add(name="op_role_var", type=A.STRINGS)
        op.attrs.add(name="mkldnn_data_type", type=A.STRING, s="float32")
        op.attrs.add(name="mkldnn_data_type", type=A.STRING, s="bfloat16")
        if k == 1:
            op.attrs.add(name="op_role", type=A.INT, i=1)  # a second copy: the first counts
    prog = paddle_files.program_from_bytes(d.SerializeToString())
    whole = program_json(prog)
    assert whole["blocks"][0]["ops"][0]["attrs"]["mkldnn_data_type"] == "bfloat16"  # Paddle's map: the last
    parts = ProgramParts(prog, prog.version)
    ops, _vars, _known, _rounds = _open_everything(parts, parts.skeleton("p"))
    assert [ops[o["id"]]["role"] for o in whole["blocks"][0]["ops"]] == \
        [o["role"] for o in whole["blocks"][0]["ops"]] == ["forward"] * 3


# -- hostile requests: the comm (handle) answers an error, the server (answer) gets a PartsRequestError ----
@pytest.mark.parametrize("msg, words", [
    ({"type": "contents", "block": 0, "groups": [{"a": 1}]}, "groups[0] is a dict"),
    ({"type": "contents", "block": 0, "groups": [[["group_0_2"]]]}, "groups[0] is a list"),
    ({"type": "contents", "block": 0, "groups": ["group_0_2", 7]}, "groups[1] is a int"),
    ({"type": "contents", "block": 0, "groups": [], "loaded": [{"x": []}]}, "loaded[0] is a dict"),
    ({"type": "contents", "block": 0, "groups": "group_0_2"}, "groups must be a list"),
    ({"type": "contents", "block": 0, "groups": ["g" * 300]}, "at most 256"),
    ({"type": "contents", "block": True, "groups": []}, "block must be an integer"),
    ({"type": "contents", "block": [0], "groups": []}, "block must be an integer"),
    ({"type": "search", "query": {"q": "fc"}}, "query must be a string"),
    ({"type": "search", "query": "x" * 5000}, "at most 1024"),
    ({"type": ["contents"]}, "type must be a string"),
    ([1, 2], "a request is a JSON object"),
])
def test_malformed_requests_are_named_not_raised(parts, msg, words):
    assert words in parts.handle(msg)["error"]
    with pytest.raises(program_parts.PartsRequestError, match=__import__("re").escape(words)) as e:
        parts.answer(msg)
    assert e.value.status == 400


def test_a_repeated_group_id_is_answered_once(parts):
    g = next(g for g, ops in parts.blocks[0].ops_in.items() if g is not None and ops)
    once = parts.handle({"type": "contents", "block": 0, "groups": [g], "loaded": []})
    many = parts.handle({"type": "contents", "block": 0, "groups": [g] * 500 + [None] * 500,
                         "loaded": [g] * 500})
    assert once["ops"] and [o["id"] for o in many["ops"]][:len(once["ops"])] == [o["id"] for o in once["ops"]]
    assert len({o["id"] for o in many["ops"]}) == len(many["ops"])  # none twice
    assert many["groups"] == [g, None]


def test_caps_on_ids_and_on_what_one_reply_carries(parts, monkeypatch):
    monkeypatch.setattr(program_parts, "MAX_GROUP_IDS", 10)
    with pytest.raises(program_parts.PartsRequestError, match="names 11 groups; a request names at most 10") as e:
        parts.answer({"type": "contents", "block": 0, "groups": ["group_0_2"] * 11})
    assert e.value.status == 413
    monkeypatch.setattr(program_parts, "MAX_GROUP_IDS", 1 << 16)
    every = [g["id"] for g in parts.blocks[0].groups]
    assert "ops" in parts.handle({"type": "contents", "block": 0, "groups": every})
    monkeypatch.setattr(program_parts, "MAX_CONTENTS_NODES", 20)
    with pytest.raises(program_parts.PartsRequestError, match="one reply carries at most 20") as e:
        parts.answer({"type": "contents", "block": 0, "groups": every})
    assert e.value.status == 413
    assert "at most 20" in parts.handle({"type": "contents", "block": 0, "groups": every})["error"]
