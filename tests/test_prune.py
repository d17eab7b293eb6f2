"""prune: the minimal program for some targets.

Kept-op lists are worked out by hand for small graphs; every pruned program is also run
and its targets compared with the original program's and with NumPy.
"""
import random

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.ir.proto import framework_pb2 as pb
from kernelcore.ir import registry
from kernelcore.ir.registry import Attr, In, Out, has_op, register_op

A = pb.AttrType
VT = pb.VarType
SHAPE = [2, 3]


# -- test-only ops with sub-blocks, standing in for while / conditional_block ----------
@pytest.fixture(autouse=True, scope="module")
def sub_block_ops():
    """Register the test-only ops for this module and take them out again after it, so
    tests that walk the whole registry never see them."""
    added = [] if has_op("test_sub_block_op") else _register_test_ops()
    yield
    for name in added:
        registry._REGISTRY.pop(name, None)


def _register_test_ops():
    one = register_op(
        "test_sub_block_op", "test only: runs `sub_block` `steps` times in one kid scope (a loop when steps > 1)",
        inputs=[In("X", "outer vars read (optional: prune also finds them in the block)", duplicable=True,
                   dispensable=True)],
        outputs=[Out("Out", "outer vars written", duplicable=True, dispensable=True)],
        attrs=[Attr("sub_block", A.BLOCK, "the block to run"), Attr("steps", A.INT, "how many times", 1)])

    @one.kernel()
    def run_sub_block(ctx, ins, attrs):
        kid = ctx.new_scope("test_sub_block_op")
        for t in range(attrs["steps"]):
            yield from ctx.run_block(attrs["sub_block"], kid, timestep=t)
        ctx.drop_scope(kid)
        return (None,)  # the block wrote the outer vars itself

    many = register_op(
        "test_sub_blocks_op", "test only: runs each of `sub_blocks` once, in order",
        inputs=[In("X", "outer vars read", duplicable=True, dispensable=True)],
        outputs=[Out("Out", "outer vars written", duplicable=True, dispensable=True)],
        attrs=[Attr("sub_blocks", A.BLOCKS, "the blocks to run")])

    @many.kernel()
    def run_sub_blocks(ctx, ins, attrs):
        for b in attrs["sub_blocks"]:
            kid = ctx.new_scope("test_sub_blocks_op")
            yield from ctx.run_block(b, kid)
            ctx.drop_scope(kid)
        return (None,)

    return ["test_sub_block_op", "test_sub_blocks_op"]


# -- helpers ---------------------------------------------------------------------------
def new_program(*inputs):
    p = kc.Program()
    for n in inputs:
        p.global_block().create_var(n, SHAPE)
    return p


def op(block, type, out, *ins, **attrs):
    """One op of the unary (X) or binary (X, Y) families."""
    slots = {"X": [ins[0]]}
    if len(ins) > 1:
        slots["Y"] = [ins[1]]
    return block.append_op(type, slots, {"Out": [out]}, attrs)


def feed_values(names, seed=0):
    rng = np.random.default_rng(seed)
    return {n: rng.uniform(-1, 1, SHAPE).astype("float32") for n in names}


def run(program, feed, fetch):
    """Fetch `fetch` after running `program` in a fresh scope (no stale values to lean on)."""
    return kc.Executor(kc.CPUPlace()).run(program, feed=feed, fetch_list=fetch, scope=kc.Scope())


def assert_same_targets(program, result, targets, feed, pruned_feed=None):
    want = run(program, feed, targets)
    got = run(result.program, feed if pruned_feed is None else pruned_feed, targets)
    for t, w, g in zip(targets, want, got):
        np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=t)
    return got


def kept_types(result, block=0):
    return [o.type for o in result.program.block(block).ops]


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# -- branching graphs ------------------------------------------------------------------
def diamond():
    """#0 a=relu(x)  #1 b=sigmoid(x)  #2 c=a+b  #3 d=tanh(w)  #4 e=exp(c)  #5 f=d*c  #6 g=exp(d)"""
    p = new_program("x", "w")
    b = p.global_block()
    op(b, "relu", "a", "x")
    op(b, "sigmoid", "b", "x")
    op(b, "elementwise_add", "c", "a", "b")
    op(b, "tanh", "d", "w")
    op(b, "exp", "e", "c")
    op(b, "elementwise_mul", "f", "d", "c")
    op(b, "exp", "g", "d")
    return p


@pytest.mark.parametrize("targets, kept, feeds", [
    (["e"], [0, 1, 2, 4], ["x"]),
    (["g"], [3, 6], ["w"]),
    (["f"], [0, 1, 2, 3, 5], ["x", "w"]),
    (["e", "g"], [0, 1, 2, 3, 4, 6], ["x", "w"]),
    (["c", "d"], [0, 1, 2, 3], ["x", "w"]),
    (["x"], [], ["x"]),  # a fed input needs no op
])
def test_diamond_keeps_the_paths_to_the_targets(targets, kept, feeds):
    p = diamond()
    r = kc.prune(p, targets)
    assert r.kept_ops(0) == kept
    assert sorted(r.removed_ops) == [(0, i) for i in range(7) if i not in kept]
    assert kept_types(r) == [p.global_block().op(i).type for i in kept]
    full = feed_values(["x", "w"])
    got = assert_same_targets(p, r, targets, full, {n: full[n] for n in feeds})
    x, w = full["x"], full["w"]
    c = np.maximum(x, 0) + sigmoid(x)
    ref = {"c": c, "d": np.tanh(w), "e": np.exp(c), "f": np.tanh(w) * c, "g": np.exp(np.tanh(w)), "x": x}
    for t, g in zip(targets, got):
        np.testing.assert_allclose(g, ref[t], rtol=1e-5)


def test_diamond_without_the_unneeded_input_feed():
    # target e does not read w: the pruned program drops w, so it is fed x alone
    p = diamond()
    r = kc.prune(p, "e")
    assert sorted(n for _, n in r.removed_vars) == ["d", "f", "g", "w"]
    assert sorted(v.name for v in r.program.global_block().vars) == ["a", "b", "c", "e", "x"]
    assert r.block_map == {0: 0}
    assert r.summary() == "kept 4 of 7 ops in 1 block; removed 3 ops, 4 vars"
    assert repr(r) == "<PruneResult: kept 4 of 7 ops in 1 block; removed 3 ops, 4 vars>"


def test_targets_as_variables_and_the_input_is_untouched():
    p = diamond()
    before = p.to_bytes()
    r = kc.prune(p, [p.global_block().var("g")])
    assert r.kept_ops() == [3, 6]
    assert p.to_bytes() == before
    assert r.program is not p and r.program.desc is not p.desc


def test_a_pruned_program_numbers_new_names_on_from_its_source():
    """A name made in the pruned program does not repeat one made in the program it came from, even where
    pruning removed the variable that name was given to."""
    p = diamond()
    made = [p.unique_name("tmp") for _ in range(3)]
    p.global_block().create_var(made[-1], [1])
    r = kc.prune(p, "g")
    assert not r.program.global_block().has_var(made[-1])
    assert r.program.unique_name("tmp") not in made
    assert p.clone().unique_name("tmp") not in made


def test_kept_maps_new_ops_to_identical_old_ops():
    p = diamond()
    r = kc.prune(p, ["f", "g"])
    for (nb, ni), (ob, oi) in r.kept.items():
        assert r.program.desc.blocks[nb].ops[ni] == p.desc.blocks[ob].ops[oi]
    assert sorted(r.kept) == [(0, i) for i in range(len(r.kept))]


# -- feeds as cut points -------------------------------------------------------------------
@pytest.mark.parametrize("feeds, kept", [
    (["c"], [4]),          # c comes from outside: nothing upstream is needed
    (["a"], [1, 2, 4]),    # a cut, b still computed from x
    (["a", "b"], [2, 4]),
    (["x"], [0, 1, 2, 4]),  # feeding an input changes nothing
])
def test_feeds_are_cut_points(feeds, kept):
    p = diamond()
    r = kc.prune(p, ["e"], feeds=feeds)
    assert r.kept_ops() == kept
    full = feed_values(["x", "w"])
    # the cut values are what the original program computes there
    cut = dict(zip(feeds, run(p, full, feeds)))
    if r.program.global_block().has_var("x"):
        cut["x"] = full["x"]
    assert_same_targets(p, r, ["e"], full, cut)
    for n in feeds:  # a feed stays declared, so the pruned program can be fed it
        assert r.program.global_block().has_var(n)


def test_an_op_writing_a_needed_var_besides_a_fed_one_is_kept():
    # #0 c=relu(x) writes only the fed c: dropped; #1 d=exp(x) is needed whatever is fed
    p = new_program("x")
    b = p.global_block()
    op(b, "relu", "c", "x")
    op(b, "exp", "d", "x")
    op(b, "elementwise_add", "e", "c", "d")
    r = kc.prune(p, ["e"], feeds=["c"])
    assert r.kept_ops() == [1, 2]


# -- in-place updates and overwrites ---------------------------------------------------------
def in_place():
    """#0 h=relu(x)  #1 h=h+y  #2 z=exp(x)  #3 h=h*h  #4 out=tanh(h)  #5 h=sigmoid(x)"""
    p = new_program("x", "y")
    b = p.global_block()
    op(b, "relu", "h", "x")
    op(b, "elementwise_add", "h", "h", "y")
    op(b, "exp", "z", "x")
    op(b, "elementwise_mul", "h", "h", "h")
    op(b, "tanh", "out", "h")
    op(b, "sigmoid", "h", "x")
    return p


@pytest.mark.parametrize("targets, kept", [
    (["out"], [0, 1, 3, 4]),   # each in-place op needs the writer before it
    (["h"], [5]),               # the final h is the last writer's alone
    (["out", "h"], [0, 1, 3, 4, 5]),
    (["z", "h"], [2, 5]),
])
def test_in_place_updates_keep_every_earlier_writer_they_read(targets, kept):
    p = in_place()
    r = kc.prune(p, targets)
    assert r.kept_ops() == kept
    vals = feed_values(["x", "y"])
    got = assert_same_targets(p, r, targets, vals,
                              {n: vals[n] for n in ["x", "y"] if r.program.global_block().has_var(n)})
    x, y = vals["x"], vals["y"]
    h = (np.maximum(x, 0) + y) ** 2
    ref = {"out": np.tanh(h), "h": sigmoid(x), "z": np.exp(x)}
    for t, g in zip(targets, got):
        np.testing.assert_allclose(g, ref[t], rtol=1e-5)


def test_an_overwritten_value_no_one_reads_is_dead():
    # #0 v=relu(x) is overwritten by #1 v=exp(x) before #2 reads v
    p = new_program("x")
    b = p.global_block()
    op(b, "relu", "v", "x")
    op(b, "exp", "v", "x")
    op(b, "elementwise_add", "t", "v", "x")
    r = kc.prune(p, ["t"])
    assert r.kept_ops() == [1, 2]
    x = feed_values(["x"])["x"]
    (got,) = assert_same_targets(p, r, ["t"], {"x": x})
    np.testing.assert_allclose(got, np.exp(x) + x, rtol=1e-6)


# -- a random differential check against def-use chains ---------------------------------------
def reference_kept(program, targets):
    """An independent rule: follow each read to the last op before it that wrote the name."""
    ops = program.global_block().ops
    last, deps = {}, []
    for i, o in enumerate(ops):
        deps.append({last[n] for n in o.input_arg_names if n in last})
        for n in o.output_arg_names:
            last[n] = i
    todo = [last[t] for t in targets if t in last]
    kept = set()
    while todo:
        i = todo.pop()
        if i not in kept:
            kept.add(i)
            todo.extend(deps[i])
    return sorted(kept)


@pytest.mark.parametrize("seed", range(25))
def test_random_graphs_match_def_use_chains_and_values(seed):
    rnd = random.Random(seed)
    p = new_program("x0", "x1")
    b = p.global_block()
    names = ["x0", "x1"]
    for _ in range(rnd.randint(4, 14)):
        out = rnd.choice(names[2:]) if len(names) > 2 and rnd.random() < 0.3 else f"v{len(names)}"
        if rnd.random() < 0.5:
            op(b, rnd.choice(["relu", "sigmoid", "tanh"]), out, rnd.choice(names))
        else:
            op(b, rnd.choice(["elementwise_add", "elementwise_sub", "elementwise_mul"]), out,
               rnd.choice(names), rnd.choice(names))
        if out not in names:
            names.append(out)
    written = names[2:]
    targets = rnd.sample(written, rnd.randint(1, min(3, len(written))))
    r = kc.prune(p, targets)
    assert r.kept_ops() == reference_kept(p, targets)
    vals = feed_values(["x0", "x1"], seed)
    assert_same_targets(p, r, targets, vals,
                        {n: v for n, v in vals.items() if r.program.global_block().has_var(n)})


# -- feed and fetch ops -----------------------------------------------------------------------
def with_feed_fetch():
    """#0 feed x col 0  #1 feed w col 1  #2 d=tanh(w)  #3 e=exp(x)  #4 g=exp(d)
    #5 fetch e col 0  #6 fetch g col 1"""
    p = new_program("x", "w")
    b = p.global_block()
    b.create_var("feed", type=VT.FEED_MINIBATCH, persistable=True)
    b.create_var("fetch", type=VT.FETCH_LIST, persistable=True)
    b.append_op("feed", {"X": ["feed"]}, {"Out": ["x"]}, {"col": 0})
    b.append_op("feed", {"X": ["feed"]}, {"Out": ["w"]}, {"col": 1})
    op(b, "tanh", "d", "w")
    op(b, "exp", "e", "x")
    op(b, "exp", "g", "d")
    b.append_op("fetch", {"X": ["e"]}, {"Out": ["fetch"]}, {"col": 0})
    b.append_op("fetch", {"X": ["g"]}, {"Out": ["fetch"]}, {"col": 1})
    return p


def test_feed_and_fetch_ops_follow_the_targets_and_get_dense_cols():
    p = with_feed_fetch()
    r = kc.prune(p, ["g"])
    assert r.kept_ops() == [1, 2, 4, 6]
    ops = r.program.global_block().ops
    assert [(o.type, o.attr("col")) for o in ops if o.type in ("feed", "fetch")] == [("feed", 0), ("fetch", 0)]
    vals = feed_values(["x", "w"])
    (want_e, want_g) = run(p, vals, None)  # fetched through the fetch ops
    (got_g,) = run(r.program, {"w": vals["w"]}, None)
    np.testing.assert_allclose(got_g, want_g, rtol=1e-6)
    np.testing.assert_allclose(got_g, np.exp(np.tanh(vals["w"])), rtol=1e-5)
    # the original is untouched: its fetch ops still fill cols 0 and 1
    assert [o.attr("col") for o in p.global_block().ops if o.type == "fetch"] == [0, 1]


def test_a_fed_target_keeps_its_feed_op_only():
    p = with_feed_fetch()
    r = kc.prune(p, ["x", "e"], feeds=["x"])
    assert r.kept_ops() == [0, 3, 5]


# -- sub-blocks ------------------------------------------------------------------------------------
def with_sub_blocks():
    """block 0: #0 a=relu(x)  #1 sub(block 1) writes s1 reading a (not listed in X)
                #2 c=sigmoid(x)  #3 sub(block 2) writes s2  #4 r=s2+x  #5 q=s1*x
    block 1 (parent 0): t=exp(a) with t local; s1=t+a
    block 2 (parent 0): #0 sub(block 3) writes s2;  block 3 (parent 2): s2=tanh(c)
    """
    p = new_program("x")
    b0 = p.global_block()
    op(b0, "relu", "a", "x")
    b0.create_var("s1", SHAPE)
    b0.create_var("s2", SHAPE)
    b0.create_var("t", SHAPE)  # shadowed in block 1: this t is never read
    with p.block_guard() as b1:
        b1.create_var("t", SHAPE)
        op(b1, "exp", "t", "a")
        op(b1, "elementwise_add", "s1", "t", "a")
    b0.append_op("test_sub_block_op", {}, {"Out": ["s1"]}, {"sub_block": b1})
    op(b0, "sigmoid", "c", "x")
    with p.block_guard() as b2:
        with p.block_guard() as b3:
            op(b3, "tanh", "s2", "c")
        b2.append_op("test_sub_block_op", {}, {}, {"sub_block": b3})
    b0.append_op("test_sub_block_op", {}, {}, {"sub_block": b2})
    op(b0, "elementwise_add", "r", "s2", "x")
    op(b0, "elementwise_mul", "q", "s1", "x")
    op(b0, "relu", "t", "x")  # #6: writes block 0's t, which only the shadowing block 1 names
    assert [blk.parent_idx for blk in p.blocks] == [-1, 0, 0, 2]
    return p


def test_kept_sub_block_and_its_outer_reads_removed_sub_blocks_renumbered():
    p = with_sub_blocks()
    r = kc.prune(p, ["r"])
    # s2 comes from #3, whose nested block 3 reads c: #2 is needed, #0, #1 (block 1), #5 are not
    assert r.kept_ops(0) == [2, 3, 4]
    assert r.block_map == {0: 0, 1: None, 2: 1, 3: 2}
    assert r.removed_blocks == [1]
    assert (1, 0) in r.removed_ops and (1, 1) in r.removed_ops
    assert (1, "t") in r.removed_vars and (0, "t") in r.removed_vars
    q = r.program
    assert q.num_blocks == 3
    assert [blk.parent_idx for blk in q.blocks] == [-1, 0, 1]
    assert q.global_block().op(1).attr("sub_block") == 1
    assert q.block(1).op(0).attr("sub_block") == 2
    assert q.block(1).op(0).attr_type("sub_block") == A.BLOCK
    assert [o.type for o in q.block(2).ops] == ["tanh"]
    assert r.kept[(1, 0)] == (2, 0) and r.kept[(2, 0)] == (3, 0)
    assert r.summary() == "kept 5 of 11 ops in 3 blocks; removed 6 ops, 5 vars, 1 block"

    # the same program built by hand: its text form is what pruning must print
    e = new_program("x")
    eb = e.global_block()
    eb.create_var("s2", SHAPE)
    op(eb, "sigmoid", "c", "x")
    with e.block_guard() as e1:
        with e.block_guard() as e2:
            op(e2, "tanh", "s2", "c")
        e1.append_op("test_sub_block_op", {}, {}, {"sub_block": e2})
    eb.append_op("test_sub_block_op", {}, {}, {"sub_block": e1})
    op(eb, "elementwise_add", "r", "s2", "x")
    assert str(q) == str(e)
    assert "block 2 (parent 1):" in str(q) and "sub_block=block 2" in str(q)

    vals = feed_values(["x"])
    (got,) = assert_same_targets(p, r, ["r"], vals)
    np.testing.assert_allclose(got, np.tanh(sigmoid(vals["x"])) + vals["x"], rtol=1e-5)


def test_outer_reads_inside_a_kept_sub_block_become_needed():
    p = with_sub_blocks()
    r = kc.prune(p, ["q"])
    # s1 comes from #1; block 1 reads a (not in the op's X): #0 is needed; block 1's own t
    # shadows block 0's, so #6 (writing block 0's t) is not
    assert r.kept_ops(0) == [0, 1, 5]
    assert r.block_map == {0: 0, 1: 1, 2: None, 3: None}
    assert not r.program.global_block().has_var("t")
    assert r.program.block(1).has_var("t")
    assert r.program.global_block().op(1).attr("sub_block") == 1
    vals = feed_values(["x"])
    (got,) = assert_same_targets(p, r, ["q"], vals)
    a = np.maximum(vals["x"], 0)
    np.testing.assert_allclose(got, (np.exp(a) + a) * vals["x"], rtol=1e-5)


def test_blocks_attribute_is_renumbered():
    """#0 sub(block 1) writes u  #1 subs(blocks [2, 3]) writes v, w  #2 t=v+w
    block 2: v=exp(x)  block 3: w=v*x  (block 3 reads v, written by block 2)"""
    p = new_program("x")
    b0 = p.global_block()
    b0.create_var("u", SHAPE)
    b0.create_var("v", SHAPE)
    b0.create_var("w", SHAPE)
    with p.block_guard() as b1:
        op(b1, "relu", "u", "x")
    b0.append_op("test_sub_block_op", {}, {"Out": ["u"]}, {"sub_block": b1})
    with p.block_guard() as b2:
        op(b2, "exp", "v", "x")
    with p.block_guard() as b3:
        op(b3, "elementwise_mul", "w", "v", "x")
    b0.append_op("test_sub_blocks_op", {}, {}, {"sub_blocks": [b2, b3]})
    op(b0, "elementwise_add", "t", "v", "w")
    r = kc.prune(p, ["t"])
    assert r.kept_ops(0) == [1, 2]
    assert r.block_map == {0: 0, 1: None, 2: 1, 3: 2}
    o = r.program.global_block().op(0)
    assert o.type == "test_sub_blocks_op" and o.attr("sub_blocks") == [1, 2]
    assert o.attr_type("sub_blocks") == A.BLOCKS
    assert [blk.parent_idx for blk in r.program.blocks] == [-1, 0, 0]
    assert "blocks [1, 2]" in str(r.program)
    vals = feed_values(["x"])
    (got,) = assert_same_targets(p, r, ["t"], vals)
    x = vals["x"]
    np.testing.assert_allclose(got, np.exp(x) + np.exp(x) * x, rtol=1e-5)


# -- loops ----------------------------------------------------------------------------------------
def with_loop(list_io):
    """#0 acc=relu(x)  #1 inc=exp(x)  #2 junk=tanh(x)  #3 loop(3 steps){acc=acc+inc; tmp=tanh(acc)}
    #4 out=sigmoid(acc)  #5 acc=exp(x)"""
    p = new_program("x")
    b0 = p.global_block()
    op(b0, "relu", "acc", "x")
    op(b0, "exp", "inc", "x")
    op(b0, "tanh", "junk", "x")
    with p.block_guard() as body:
        op(body, "elementwise_add", "acc", "acc", "inc")
        op(body, "tanh", "tmp", "acc")
    io = ({"X": ["acc", "inc"]}, {"Out": ["acc"]}) if list_io else ({}, {})
    b0.append_op("test_sub_block_op", io[0], io[1], {"sub_block": body, "steps": 3})
    op(b0, "sigmoid", "out", "acc")
    op(b0, "exp", "acc", "x")
    return p


@pytest.mark.parametrize("list_io", [True, False], ids=["listed", "found-in-body"])
def test_a_loop_keeps_the_writers_of_what_its_body_reads(list_io):
    p = with_loop(list_io)
    r = kc.prune(p, ["out"])
    assert r.kept_ops(0) == [0, 1, 3, 4]
    assert [o.type for o in r.program.block(1).ops] == ["elementwise_add", "tanh"]  # whole body
    vals = feed_values(["x"])
    (got,) = assert_same_targets(p, r, ["out"], vals)
    x = vals["x"]
    np.testing.assert_allclose(got, sigmoid(np.maximum(x, 0) + 3 * np.exp(x)), rtol=1e-5)


def test_a_loop_not_needed_goes_with_its_body():
    p = with_loop(False)
    r = kc.prune(p, ["acc"])  # the final acc is #5's
    assert r.kept_ops(0) == [5]
    assert r.block_map == {0: 0, 1: None}
    assert r.program.num_blocks == 1


def test_a_sub_block_op_does_not_hide_the_writer_before_it():
    # the block may not run (a branch not taken), so y's earlier writer stays
    p = new_program("x")
    b0 = p.global_block()
    op(b0, "relu", "y", "x")
    with p.block_guard() as blk:
        op(blk, "exp", "y", "x")
    b0.append_op("test_sub_block_op", {}, {"Out": ["y"]}, {"sub_block": blk, "steps": 0})
    op(b0, "tanh", "z", "y")
    r = kc.prune(p, ["z"])
    assert r.kept_ops(0) == [0, 1, 2]
    vals = feed_values(["x"])
    (got,) = assert_same_targets(p, r, ["z"], vals)
    np.testing.assert_allclose(got, np.tanh(np.maximum(vals["x"], 0)), rtol=1e-5)


# -- files -------------------------------------------------------------------------------------
@pytest.mark.parametrize("build, targets", [(diamond, ["f"]), (with_sub_blocks, ["r"]),
                                            (with_loop, ["out"]), (with_feed_fetch, ["g"])])
def test_pruned_program_serializes_and_reloads(build, targets):
    p = build(True) if build is with_loop else build()
    r = kc.prune(p, targets)
    back = kc.Program.from_bytes(r.program.to_bytes())
    assert back == r.program
    assert str(back) == str(r.program)
    if build is not with_feed_fetch:
        vals = {n: v for n, v in feed_values(["x", "w"]).items() if back.global_block().has_var(n)}
        for w, g in zip(run(r.program, vals, targets), run(back, vals, targets)):
            np.testing.assert_array_equal(g, w)


# -- errors -------------------------------------------------------------------------------------
def test_unknown_target_names_it_and_suggests_close_names():
    p = diamond()
    with pytest.raises(kc.ProgramError, match=r"target 'ee'.*did you mean 'e'"):
        kc.prune(p, ["ee"])
    with pytest.raises(kc.ProgramError, match=r"target 'nothing_like_it' is not a variable of block 0"):
        kc.prune(p, ["e", "nothing_like_it"])
    with pytest.raises(kc.ProgramError, match=r"feed 'xx'"):
        kc.prune(p, ["e"], feeds=["xx"])
    with pytest.raises(kc.ProgramError, match="at least one target"):
        kc.prune(p, [])


def test_a_target_declared_only_in_a_sub_block_is_refused():
    p = with_loop(True)
    with pytest.raises(kc.ProgramError, match=r"'tmp' is declared in block 1, not in block 0"):
        kc.prune(p, ["tmp"])
