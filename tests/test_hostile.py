"""Hostile programs, traces and feeds: every one ends in a kernelcore error that says what is wrong, in
bounded time and memory (never a bare TypeError/RecursionError/MemoryError, a hang or gigabytes)."""
from __future__ import annotations

import gc
import json
import time
import weakref

import numpy as np
import pytest

import kernelcore as kc
from kernelcore import cli
from kernelcore.view import display
from kernelcore.formats import paddle_files
from kernelcore.ops import control_flow
from kernelcore.ir.structure import MAX_BLOCKS, MAX_NESTING_DEPTH
from kernelcore.ir.proto import framework_pb2 as pb
from kernelcore.view.notebook import program_bundle

from fuzz import fuzz_pipeline, hostile_corpus as hc


def load(name):
    data, feed = hc.build(name)
    return paddle_files.program_from_bytes(data, source=f"{name}.pdmodel"), feed


def built(name):
    """The corpus program as a Program made in Python (no load-time checks), and its feed."""
    desc, feed = hc.CORPUS[name]()
    return kc.Program(desc), feed


@pytest.fixture
def budgets():
    old = control_flow.set_max_while_iterations(1000), control_flow.set_max_while_seconds(60)
    yield
    control_flow.set_max_while_iterations(old[0])
    control_flow.set_max_while_seconds(old[1])


# 1 ---------------------------------------------------------------------------------------------------
def test_elementwise_axis_is_bounded_by_the_ranks():
    prog, feed = load("elementwise_huge_axis")
    with pytest.raises(kc.OpRunError) as e:
        kc.Executor().run(prog, feed=feed, fetch_list=["out"], scope=kc.Scope())
    msg = str(e.value)
    assert "elementwise_add" in msg and "axis 805306367" in msg and "rank 2" in msg and "rank 1" in msg


def test_elementwise_axis_in_range_still_broadcasts():
    prog, feed = load("elementwise_huge_axis")
    prog.desc.blocks[0].ops[0].attrs[0].i = 1
    prog.touch()
    out, = kc.Executor().run(prog, feed=feed, fetch_list=["out"], scope=kc.Scope())
    np.testing.assert_allclose(out, feed["x"] + feed["y"][None, :])


# 2 ---------------------------------------------------------------------------------------------------
def test_display_of_20k_blocks_copies_no_dot_body_per_block(monkeypatch):
    import graphviz
    calls = []
    real = graphviz.Digraph._copy_kwargs
    monkeypatch.setattr(graphviz.Digraph, "_copy_kwargs", lambda self, **kw: calls.append(1) or real(self, **kw))
    prog = kc.Program(hc._cond_chain(20_000, nested=False))
    pj = display.program_json(prog, dot=True)
    assert len(pj["blocks"]) == 20_000
    assert pj["dot"].count("subgraph cluster_") == 19_999
    # graphviz's subgraph() copies the whole parent body each time: quadratic in the block count
    assert len(calls) <= 1


def test_execution_order_touches_each_op_twice():
    prog = kc.Program(hc._cond_chain(500, nested=True))
    order = display._execution_order(prog.desc)
    assert len(order) == 2 * 499 and len({(b, i, p) for b, i, _, p in order}) == len(order)


# 3 ---------------------------------------------------------------------------------------------------
def test_deep_nesting_is_refused_at_load_with_the_limit():
    with pytest.raises(kc.LoadError, match=rf"nested {MAX_NESTING_DEPTH + 1} blocks deep.*at most {MAX_NESTING_DEPTH}"):
        load("deep_nesting")


def test_deeply_nested_built_program_displays_and_prunes_without_recursion():
    prog, _ = built("deep_nesting")  # 1,200 levels, beyond Python's recursion limit
    pj = display.program_json(prog, dot=True)
    assert pj["dot"].count("subgraph cluster_") == 1199
    str(prog)
    with pytest.raises(kc.ProgramError, match="nested"):
        kc.prune(prog, ["c"])
    with pytest.raises(kc.ProgramError, match="nested"):
        kc.Executor().run(prog, feed={"c": np.array([False])}, scope=kc.Scope())


def test_block_count_limit():
    d = pb.ProgramDesc()
    for i in range(MAX_BLOCKS + 1):
        d.blocks.add(idx=i, parent_idx=-1 if i == 0 else 0)
    with pytest.raises(kc.LoadError, match=f"{MAX_BLOCKS + 1} blocks.*at most {MAX_BLOCKS}"):
        paddle_files.program_from_bytes(d.SerializeToString())


@pytest.mark.parametrize("name, pattern", [
    ("block_runs_itself", r"op 'conditional_block' \(block 1, op #0\).*runs block 1, the block that holds"),
    ("blocks_run_each_other", r"cycle \(1 -> 2 -> 1\)"),
    ("int_sub_block", r"attribute 'sub_block' must be of type BLOCK, got INT"),
])
def test_blocks_that_run_themselves_are_refused(name, pattern):
    with pytest.raises(kc.LoadError, match=pattern):
        load(name)
    prog, feed = built(name)  # built in Python: the executor checks before it runs
    with pytest.raises(kc.ProgramError, match=pattern):
        kc.Executor().run(prog, feed=feed, scope=kc.Scope())


# 4 ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, dtype", [("bf16_feed", "bfloat16"), ("fp8_feed", "FP8_E4M3FN"), ("raw_feed", "RAW")])
def test_feeding_a_dtype_without_numpy_equivalent(name, dtype):
    prog, feed = load(name)
    with pytest.raises(kc.FeedError, match=rf"cannot feed 'x': the program declares it {dtype}.*no NumPy"):
        kc.Executor().run(prog, feed=feed, scope=kc.Scope())


def test_cli_run_of_a_bf16_program_is_one_line(tmp_path, capsys):
    f = tmp_path / "bf16.pdmodel"
    f.write_bytes(hc.build("bf16_feed")[0])
    x = tmp_path / "x.npy"
    np.save(x, np.ones((2, 3), np.float32))
    for how in (["--feed", f"x={x}"], ["--random-feeds"]):
        assert cli.main(["run", str(f), *how]) == 2
        err = capsys.readouterr().err
        assert err.startswith("kernelcore: error:") and err.count("\n") == 1 and "bfloat16" in err


# 5 ---------------------------------------------------------------------------------------------------
def test_executor_cache_keeps_no_program_and_no_scope_alive():
    exe = kc.Executor()
    refs = []
    for i in range(50):
        prog = kc.Program()
        b = prog.global_block()
        b.create_var("x", [2], "float32")
        b.append_op("scale", {"X": ["x"]}, {"Out": ["y"]}, {"scale": 2.0})
        scope = kc.Scope()
        out, = exe.run(prog, feed={"x": np.full(2, i, np.float32)}, fetch_list=["y"], scope=scope)
        assert out[0] == 2 * i
        refs.append((weakref.ref(prog), weakref.ref(scope)))
    del prog, scope, b
    gc.collect()
    alive = [(p() is not None, s() is not None) for p, s in refs]
    assert alive == [(False, False)] * 50


def test_cache_still_reuses_the_binding_for_the_same_scope():
    prog = kc.Program()
    prog.global_block().create_var("x", [2], "float32")
    prog.global_block().append_op("scale", {"X": ["x"]}, {"Out": ["y"]}, {"scale": 3.0})
    exe, scope = kc.Executor(), kc.Scope()
    exe.run(prog, feed={"x": np.ones(2, np.float32)}, fetch_list=["y"], scope=scope)
    bound = exe.prepare(prog).binding[2]  # (the scope, weakly; its versions; the bound ops; ...)
    out, = exe.run(prog, feed={"x": np.ones(2, np.float32)}, fetch_list=["y"], scope=scope)
    assert exe.prepare(prog).binding[2] is bound and out.tolist() == [3.0, 3.0]


# 6 ---------------------------------------------------------------------------------------------------
def test_endless_while_stops_at_the_iteration_budget(budgets):
    prog, feed = load("endless_while")
    with pytest.raises(kc.OpRunError, match=r"op 'while'.*ran 1000 iterations and Condition 'c'"):
        kc.Executor().run(prog, feed=feed, scope=kc.Scope())


def test_traced_endless_while_stops_at_the_observed_budget(budgets):
    prog, feed = load("endless_while")
    old = control_flow.set_max_while_iterations_observed(300)
    try:
        with kc.trace() as tr:
            with pytest.raises(kc.OpRunError, match=r"ran 300 iterations.*set_max_while_iterations_observed"):
                kc.Executor().run(prog, feed=feed, scope=kc.Scope())
    finally:
        control_flow.set_max_while_iterations_observed(old)
    assert len(tr.filter("step_begin")) == 300 and tr.kinds()[-2:] == ["error", "run_end"]


def test_endless_while_stops_at_the_time_budget(budgets):
    prog, feed = load("endless_while")
    control_flow.set_max_while_iterations(None)
    control_flow.set_max_while_seconds(0.2)
    with pytest.raises(kc.OpRunError, match=r"op 'while'.*ran 0.2 s \(\d+ iterations\)"):
        kc.Executor().run(prog, feed=feed, scope=kc.Scope())


def test_while_budget_setters_check_their_argument():
    with pytest.raises(ValueError):
        control_flow.set_max_while_seconds(0)
    with pytest.raises(ValueError):
        control_flow.set_max_while_iterations(-1)


# 7 ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, op", [("huge_feed_col", "feed"), ("large_fetch_col", "fetch")])
def test_feed_and_fetch_columns_are_bounded(name, op):
    prog, feed = load(name)
    with pytest.raises(kc.KernelcoreError, match=rf"'{op}'.*col.*65535"):
        kc.Executor().run(prog, feed=feed, scope=kc.Scope())


def test_tensors_made_from_a_shape_attribute_are_bounded():
    prog, feed = load("huge_fill_constant")
    with pytest.raises(kc.OpRunError, match=r"fill_constant.*10000000000 elements.*at most 1073741824"):
        kc.Executor().run(prog, feed=feed, fetch_list=["out"], scope=kc.Scope())


# 8 ---------------------------------------------------------------------------------------------------
def _trace_doc(**over):
    doc = {"schema": "kernelcore.trace", "version": 1, "retain": "shapes", "meta": {},
           "events": [{"seq": 0, "kind": "op_run", "t_ns": 5, "op_type": "scale", "dur_ns": 3,
                       "outputs": [["Out", "y", [2], "float32"]]}]}
    doc.update(over)
    return doc


HOSTILE_TRACES = {
    "deep": '{"schema": "kernelcore.trace", "version": 1, "meta": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "events_int": json.dumps(_trace_doc(events=5)),
    "meta_str": json.dumps(_trace_doc(meta="abc")),
    "retain_bogus": json.dumps(_trace_doc(retain="bogus")),
    "dur_inf": json.dumps(_trace_doc()).replace('"dur_ns": 3', '"dur_ns": Infinity'),
    "op_type_dict": json.dumps(_trace_doc()).replace('"op_type": "scale"', '"op_type": {"a": 1}'),
    "event_list": json.dumps(_trace_doc(events=[[1, 2]])),
    "shape_str": json.dumps(_trace_doc()).replace("[2]", '"2"'),
    "seq_missing": json.dumps(_trace_doc(events=[{"kind": "run_end", "t_ns": 1}])),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_TRACES))
def test_hostile_trace_files_raise_trace_error(name, tmp_path, capsys):
    f = tmp_path / f"{name}.json"
    f.write_text(HOSTILE_TRACES[name])
    with pytest.raises(kc.TraceError):
        kc.Trace.load(f)
    assert cli.main(["trace-info", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kernelcore: error:") and err.count("\n") == 1


def test_a_good_trace_document_still_loads():
    tr = kc.Trace.from_json(_trace_doc())
    assert tr.events[0].outputs == (("Out", "y", (2,), "float32"),) and tr.events[0].dur_ns == 3


# 9 ---------------------------------------------------------------------------------------------------
def test_cli_escapes_names_printed_to_the_terminal(tmp_path, capsys):
    f = tmp_path / "evil.pdmodel"
    f.write_bytes(hc.build("terminal_escape_names")[0])
    assert cli.main(["show", str(f)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\\x1b]0;pwned\\x07" in out
    t = tmp_path / "t.json"
    assert cli.main(["run", str(f), "--random-feeds", "--trace", str(t)]) == 0
    assert "\x1b" not in capsys.readouterr().out
    assert cli.main(["trace-info", str(t)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[2J" in out


def test_errors_and_the_text_form_escape_the_corpus_names():
    prog, feed = load("terminal_escape_names")
    (name, value), = feed.items()
    with pytest.raises(kc.ProgramError, match="cannot feed") as e:
        kc.Executor().run(prog, feed={name + "?": value}, scope=kc.Scope())
    for text in (str(e.value), str(prog), program_bundle(prog)["text/plain"]):
        assert "\x1b" not in text and "\x07" not in text and "\\x1b]0;pwned\\x07" in text


def test_terminal_safe_keeps_text_and_newlines():
    assert cli.terminal_safe("a\tb\nnäme") == "a\tb\nnäme"
    assert cli.terminal_safe("x\u202ey\x9b") == "x\\u202ey\\x9b"


# 10 --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [["a", "b"], [[1.0, 2.0], [3.0]], {"a": 1}, "abc", None,
                                   np.array(["a", "b"])])
def test_feeding_what_is_no_tensor_is_a_feed_error(value):
    prog = kc.Program()
    prog.global_block().create_var("x", [-1], "float32")
    prog.global_block().append_op("scale", {"X": ["x"]}, {"Out": ["y"]})
    with pytest.raises((kc.FeedError, kc.ShapeError), match="feed 'x'"):
        kc.Executor().run(prog, feed={"x": value}, fetch_list=["y"], scope=kc.Scope())


def test_feeding_an_undeclared_name_with_a_ragged_list():
    prog = kc.Program()
    prog.global_block().create_var("x", None, None, type=pb.VarType.LOD_TENSOR_ARRAY)
    scope = kc.Scope()
    scope.var("x")
    with pytest.raises(kc.FeedError, match="feed 'x'"):
        kc.Executor().run(prog, feed={"x": [[1], [1, 2]]}, scope=scope)


# 12 --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["bad_feed", "missing_input", "cycle"])
def test_failed_runs_end_their_trace_with_error_and_run_end(case):
    if case == "cycle":
        prog, feed = built("blocks_run_each_other")
    else:
        prog = kc.Program()
        prog.global_block().create_var("x", [2], "float32")
        prog.global_block().append_op("scale", {"X": ["x"]}, {"Out": ["y"]})
        feed = {"x": ["a", "b"]}
        if case == "missing_input":
            prog.global_block().remove_var("x")
            feed = {}
    with kc.trace() as tr:
        with pytest.raises(kc.KernelcoreError):
            kc.Executor().run(prog, feed=feed, scope=kc.Scope())
    kinds = tr.kinds()
    assert kinds[0] == "run_begin" and kinds[-2:] == ["error", "run_end"]
    assert tr.filter("error")[0].message


# the corpus and the fuzz tier -------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(hc.CORPUS))
def test_corpus_program_ends_every_stage_in_success_or_a_kernelcore_error(name):
    data, feed = hc.build(name)
    fuzz_pipeline.program_pipeline(data, feed)


def test_fuzz_smoke_mutated_corpus_and_traces():
    """A few seconds of random byte mutations of the corpus and of a real trace (atheris, when installed,
    does this coverage-guided: tests/fuzz/fuzz_pipeline.py)."""
    rng = np.random.default_rng(1234)
    seeds = [hc.build(n)[0] for n in sorted(hc.CORPUS) if n not in ("deep_nesting", "many_blocks")]
    traces = [HOSTILE_TRACES["dur_inf"].encode(), json.dumps(_trace_doc()).encode()]
    t_end = time.monotonic() + 3.0
    n = 0
    while time.monotonic() < t_end:
        src = seeds[n % len(seeds)] if n % 3 else traces[n % 2]
        buf = bytearray(src)
        for _ in range(int(rng.integers(1, 4))):
            k = int(rng.integers(0, len(buf)))
            buf[k] = int(rng.integers(0, 256))
        if n % 3:
            fuzz_pipeline.program_pipeline(bytes(buf))
        else:
            fuzz_pipeline.trace_pipeline(bytes(buf))
        n += 1
    assert n > 10


@pytest.mark.parametrize("name", sorted(hc.CORPUS))
def test_cli_on_corpus_prints_one_line_or_succeeds(name, tmp_path, capsys, budgets):
    data, _ = hc.build(name)
    f = tmp_path / f"{name}.pdmodel"
    f.write_bytes(data)
    desc = pb.ProgramDesc.FromString(data)
    target = desc.blocks[0].vars[0].name
    for argv in (["show", str(f)], ["show", "--json", str(f)], ["run", str(f), "--random-feeds"],
                 ["prune", str(f), "--target", target]):
        rc = cli.main(argv)
        out, err = capsys.readouterr()
        assert rc in (0, 2), (argv, rc, err)
        assert "\x1b" not in out + err and "Traceback" not in err
        if rc == 2:
            assert err.startswith("kernelcore: error:") and err.count("\n") == 1, err
