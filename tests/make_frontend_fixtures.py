"""Write the ProgramJSON fixtures the front end's unit tests read (labextension/test/data/), from programs
kernelcore builds, so the TypeScript tests see what Python really writes. tests/test_hierarchy.py checks
the committed files are current:  python tests/make_frontend_fixtures.py"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kernelcore as kc  # noqa: E402
from kernelcore.view.display import program_json  # noqa: E402

OUT = ROOT / "labextension" / "test" / "data"


def training_mlp(layers: int, width: int = 4):
    """A training program: `layers` relu fc layers of `width`, mean loss, SGD (forward, backward and
    optimize stages; repeats; ranges). The tests that need such a program build it here."""
    L = kc.layers
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        h = L.data("x", [-1, width])
        for _ in range(layers):
            h = L.fc(h, width, act="relu")
        kc.optimizer.SGD(learning_rate=0.1).minimize(L.mean(h), startup)
    return main


def mlp_v2(layers: int = 50) -> dict:
    """A training MLP of `layers` relu fc layers (forward, backward, optimize stages; repeats; ranges)."""
    pj = program_json(training_mlp(layers), dot=False)
    for b in pj["blocks"]:  # what the graph tests do not read, left out to keep the file small
        for o in b["ops"]:
            o["attrs"], o["comment"] = {}, ""
    return pj


def mlp_lazy(layers: int = 20) -> dict:
    """The same program sent in parts (ProgramJSON version 3): {"skeleton", "whole": the whole ProgramJSON,
    "replies": {key: what the kernel answers}} for the requests labextension/test/lazy.test.ts makes
    (key: `{"g": sorted groups, "l": sorted loaded}` as JSON), "search" (the hits for fc_7.w_0) and
    "pruned" (what a view pruned to fc_9.tmp_0 gets with the skeleton and with each answer); attributes
    left out, as above."""
    from kernelcore.view.program_parts import ProgramParts
    main = training_mlp(layers)
    parts = ProgramParts(main)
    skel = parts.skeleton("p-fixture")
    whole = program_json(main, dot=False)
    groups = whole["blocks"][0]["groups"]
    stages = [g["id"] for g in skel["blocks"][0]["groups"] if g["loaded"]]
    repeat = next(g["id"] for g in groups if g["kind"] == "repeat" and g["parent"] == stages[0])
    kid = next(g["id"] for g in groups if g["parent"] == repeat)
    search = parts.search("fc_7.w_0")
    hit = next(h for h in search["hits"] if h["name"] == "fc_7.w_0")
    asks = [([repeat], stages), ([kid], stages + [repeat]), ([g for g in hit["path"] if g not in stages], stages)]
    replies = {}
    for opened, before in asks:
        key = json.dumps({"g": sorted(opened), "l": sorted(before + opened)}, separators=(",", ":"))
        replies[key] = parts.contents(0, opened, before + opened)
    # the same view pruned to the tenth layer's matmul (program_parts.PrunedParts): what the skeleton and
    # each answer above carry of it
    from kernelcore.view.program_parts import PrunedParts
    marks = PrunedParts(parts, kc.prune(main, ["fc_9.tmp_0"]))
    pruned = {"skeleton": marks.for_skeleton(skel), "replies": {k: marks.for_contents(c) for k, c in replies.items()}}
    for o in [o for b in whole["blocks"] + skel["blocks"] for o in b["ops"]] + \
            [o for c in replies.values() for o in c["ops"]]:
        o["attrs"], o["comment"] = {}, ""
    return {"skeleton": skel, "whole": whole, "replies": replies, "search": search, "pruned": pruned}


def mlp_then_rnn(layers: int = 60, read: int = 10):
    """An inference MLP of `layers` relu fc layers (more than hierarchy.CHUNK at block level: cut into
    ranges of layers), then a StaticRNN whose step (block 1) reads layer `read`'s output, a variable that
    block 0 places two groups deep: (program, that variable's name)."""
    L = kc.layers
    prog = kc.Program()
    with kc.program_guard(prog):
        g = prog.global_block()
        h = L.data("x", [-1, 4])
        outs = []
        for _ in range(layers):
            h = L.fc(h, 4, act="relu")
            outs.append(h)
        xs = g.create_var("xs", [3, 2, 4])
        w = g.create_parameter("w", [4, 4])
        rnn = L.StaticRNN()
        with rnn.step():
            x_t = rnn.step_input(xs)
            m = rnn.memory(init=h)
            new = kc.op.tanh(kc.op.elementwise_add(kc.op.elementwise_add(kc.op.matmul_v2(x_t, w), m), outs[read]))
            rnn.update_memory(m, new)
            rnn.step_output(new)
        rnn()
    return prog, outs[read].name


def subblock_lazy() -> dict:
    """mlp_then_rnn sent in parts: {"skeleton", "whole", "name": the variable block 1 reads from block 0,
    "chain": the groups of block 0 around it, outermost first, "replies": [answers in the order
    labextension/test/subblock-lazy.test.ts opens groups: block 1's group, then each group of the chain]}."""
    from kernelcore.view.program_parts import ProgramParts
    prog, name = mlp_then_rnn()
    parts = ProgramParts(prog)
    skel = parts.skeleton("p-fixture")
    whole = program_json(prog, dot=False)
    step_group = next(g["id"] for g in skel["blocks"][1]["groups"] if not g["loaded"])
    replies = [parts.contents(1, [step_group], [step_group])]
    chain = replies[0]["refs"][name]
    loaded = []
    for g in chain:
        loaded.append(g)
        replies.append(parts.contents(0, [g], list(loaded)))
    for o in [o for b in whole["blocks"] + skel["blocks"] for o in b["ops"]] + [o for c in replies for o in c["ops"]]:
        o["attrs"], o["comment"] = {}, ""
    return {"skeleton": skel, "whole": whole, "name": name, "chain": chain, "replies": replies}


FIXTURES = {"mlp_v2.json": mlp_v2, "mlp_lazy.json": mlp_lazy, "subblock_lazy.json": subblock_lazy}


def render(name: str) -> str:
    return json.dumps(FIXTURES[name](), indent=None, separators=(",", ":"), sort_keys=True) + "\n"


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for name in FIXTURES:
        (OUT / name).write_text(render(name))
        print(OUT / name)
