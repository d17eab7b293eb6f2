"""Debugging functions stay bounded, linear and outspoken: provenance is a DAG with depth and node budgets,
walked without recursion; loop timesteps are indexed once; the Chrome export resolves writers without
re-walking scope chains; and a breakpoint, watch or provenance question about a name the program lacks is
refused with the closest names (kernelcore/observe/debug.py, kernelcore/observe/perfetto.py)."""
import json

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.observe.debug import RecordedRun, StepRecord
from kernelcore.errors import UnknownNameError
from kernelcore.runtime.events import Event
from kernelcore.observe.perfetto import to_trace_events
from test_debug_moves import start_flat, start_rnn


def fib_program(n_ops: int) -> kc.Program:
    """a1 = 2 x; a_k = a_{k-1} + a_{k-2}: every value read by the next two ops (shared inputs everywhere)."""
    p = kc.Program()
    b = p.global_block()
    b.create_var("x", [2])
    b.append_op("scale", {"X": ["x"]}, {"Out": ["a1"]}, {"scale": 2.0})
    names = ["x", "a1"]
    for k in range(2, n_ops + 1):
        b.append_op("elementwise_add", {"X": [names[-1]], "Y": [names[-2]]}, {"Out": [f"a{k}"]})
        names.append(f"a{k}")
    return p


def chain_program(n_ops: int) -> kc.Program:
    p = kc.Program()
    b = p.global_block()
    b.create_var("x", [2])
    prev = "x"
    for k in range(n_ops):
        b.append_op("scale", {"X": [prev]}, {"Out": [f"c{k}"]}, {"scale": 1.0})
        prev = f"c{k}"
    return p


def finished(prog):
    s = kc.debug(prog, feed={"x": np.ones(2, np.float32)}, scope=kc.Scope())
    s.run_to_end()
    return s


# -- provenance: a DAG, bounded, iterative -------------------------------------------------------------------
def test_provenance_names_each_write_once_however_many_paths_reach_it():
    s = finished(fib_program(48))
    o = s.provenance("a48", depth=12)
    chain = o.chain()
    writes = [(c.name, c.event) for c in chain]
    # a_{48-2d} is d ops away by its shortest path: depth 12 reaches a24, each write once
    assert len(writes) == len(set(writes)) == 25
    assert {c.name for c in chain} == {f"a{k}" for k in range(24, 49)}
    a46 = next(c for c in chain if c.name == "a46")
    readers = [c for c in chain if any(i is a46 for i in c.inputs)]
    assert {r.name for r in readers} == {"a48", "a47"}  # one node, listed by both readers
    doc = o.to_json()
    assert sorted(n["id"] for n in doc["nodes"]) == list(range(25)) and doc["root"] == 0
    assert all(isinstance(i, int) for n in doc["nodes"] for i in n["inputs"])
    assert len(json.dumps(doc)) < 20_000


def test_the_sidebar_depth_on_a_shared_graph_stays_small():
    s = finished(fib_program(48))
    doc = s.provenance("a48", depth=6).to_json()
    assert len(doc["nodes"]) == 13 and len(json.dumps(doc)) < 10_000


def test_a_chain_deeper_than_pythons_stack_is_walked():
    s = finished(chain_program(3000))
    o = s.provenance("c2999", depth=5000)  # the node budget stops it, and says so
    assert len(o.chain()) == 500 and o.truncated and o.chain()[-1].cut == "nodes"
    o = s.provenance("c2999", depth=5000, max_nodes=5000)
    chain = o.chain()
    assert len(chain) == 3001 and chain[-1].name == "x" and chain[-1].kind == "initial"
    assert not o.truncated
    doc = o.to_json()
    assert len(doc["nodes"]) == 3001 and not doc["truncated"]


def test_budgets_cut_the_walk_and_say_where():
    s = finished(chain_program(50))
    o = s.provenance("c49", depth=5)
    assert len(o.chain()) == 6 and o.truncated
    assert [c.cut for c in o.chain()] == [None] * 5 + ["depth"]
    assert o.to_json()["cut"] == [5] and o.to_json()["limits"] == {"depth": 5, "nodes": 500}
    o = s.provenance("c49", depth=100, max_nodes=10)
    assert len(o.chain()) == 10 and o.chain()[-1].cut == "nodes" and o.truncated
    whole = s.provenance("c49", depth=100)
    assert len(whole.chain()) == 51 and not whole.truncated


def test_a_depth_bound_counts_from_the_shortest_path():
    # q = relu(a) * a: a is one op below q directly and two through relu; found first at one, its inputs
    # are followed from there
    s = start_flat()
    s.run_to_end()
    o = s.provenance("q", depth=2)
    a = next(c for c in o.chain() if c.name == "a")
    assert [i.name for i in a.inputs] == ["x", "y"] and a.cut is None


# -- timesteps: indexed once --------------------------------------------------------------------------------
class CountingEvents(list):
    """A trace's events that count how many times an event is read."""
    reads = 0

    def __getitem__(self, i):
        got = super().__getitem__(i)
        CountingEvents.reads += len(got) if isinstance(i, slice) else 1
        return got

    def __iter__(self):
        for e in super().__iter__():
            CountingEvents.reads += 1
            yield e


class FakeTrace:
    def __init__(self, events):
        self.events = events


def loop_events(T: int, runs: int = 1) -> list:
    evs, seq = [Event(0, "run_begin", 0, scope=0)], 1
    for _ in range(runs):
        for t in range(T):
            for kind in ("step_begin", "step_end"):
                evs.append(Event(seq, kind, seq, scope=100 + t, block=0, op=0, op_type="recurrent", timestep=t))
                seq += 1
    return evs


def old_timesteps(events, block, op, upto):
    """The reference: what RecordedRun.timesteps answered before it kept an index."""
    out = []
    for i in range(0, upto + 1):
        e = events[i]
        if e.kind == "step_begin" and (e.block, e.op) == (block, op):
            if out and out[-1].end is not None and any(s.t == e.timestep for s in out):
                out = []
            out.append(StepRecord(e.timestep, e.scope, i, None, len(out)))
        elif e.kind == "step_end" and (e.block, e.op) == (block, op) and out and out[-1].scope == e.scope:
            s = out[-1]
            out[-1] = StepRecord(s.t, s.scope, s.begin, i, s.order)
    return out


def test_timesteps_read_each_event_once_however_often_asked():
    events = CountingEvents(loop_events(500))
    rec = RecordedRun(FakeTrace(events), [(0, {}, {})], 1)
    CountingEvents.reads = 0
    for upto in range(0, len(events), 10):  # a stepper refreshing as the cursor moves
        rec.timesteps(0, 0, upto)
    assert CountingEvents.reads <= 2 * len(events)


def test_timesteps_answer_as_before_at_every_index_with_reruns():
    events = loop_events(4, runs=3)
    rec = RecordedRun(FakeTrace(events), [(0, {}, {})], 1)
    for upto in range(len(events)):
        assert rec.timesteps(0, 0, upto) == old_timesteps(events, 0, 0, upto), upto
    assert len(rec.timesteps(0, 0)) == 4


def test_timesteps_follow_a_growing_trace():
    events = loop_events(3)
    rec = RecordedRun(FakeTrace(events), [(0, {}, {})], 1)
    assert [s.t for s in rec.timesteps(0, 0)] == [0, 1, 2]
    events.extend(loop_events(5)[7:])  # t = 3, 4 arrive later
    assert [s.t for s in rec.timesteps(0, 0)] == [0, 1, 2, 3, 4]


# -- the Chrome export: writers found without re-walking the scope chain ------------------------------------
def test_an_arrow_from_a_writer_far_up_a_deep_scope_chain():
    depth = 10_050
    evs = [Event(0, "scope_push", 0, scope=1, parent_scope=None),
           Event(1, "op_run", 10, scope=1, block=0, op=0, op_type="fill", dur_ns=1,
                 outputs=(("Out", "w", (2,), "float32"),))]
    for d in range(depth):
        evs.append(Event(len(evs), "scope_push", 20 + d, scope=2 + d, parent_scope=1 + d))
    evs.append(Event(len(evs), "op_run", 20 + depth + 5, scope=1 + depth, block=1, op=0, op_type="relu", dur_ns=1,
                     inputs=(("X", "w", (2,), "float32"),), outputs=(("Out", "r", (2,), "float32"),)))
    doc = to_trace_events(evs)
    arrows = [e for e in doc["traceEvents"] if e.get("cat") == "dataflow"]
    assert [e["ph"] for e in arrows] == ["s", "f"] and arrows[0]["name"] == "w"


# -- naming what the program has ------------------------------------------------------------------------------
def test_names_and_op_types_the_program_lacks_are_refused_with_close_matches():
    s = start_flat()
    with pytest.raises(UnknownNameError, match=r"no variable 'aa'; did you mean 'a'\?"):
        s.break_on(write="aa")
    with pytest.raises(UnknownNameError, match="no variable 'h'"):
        s.watch("h", "nan")
    with pytest.raises(UnknownNameError, match=r"no op type 'tahn'; did you mean 'tanh'\?"):
        s.break_on("tahn")
    with pytest.raises(UnknownNameError, match="no op type 'no_such_op_type'"):
        s.watch(op_type="no_such_op_type", cond="nan")
    with pytest.raises(UnknownNameError, match="no variable 'h'"):
        s.provenance("h")
    assert not s.breakpoints and not s.watches
    with pytest.raises(kc.KernelcoreError):  # one type to catch, and a KeyError to generic handlers
        s.break_on(write="zz")
    assert issubclass(UnknownNameError, KeyError)


def test_sub_block_variables_and_feeds_are_known():
    s, feed, hs, names = start_rnn()
    s.break_on(write=names["h_new"])  # a variable of the step block
    s.watch("x", "nan")  # a feed
    s.break_on("tanh")
    s.cont()
    assert s.provenance(names["h_prev"]).kind == "bound"


def test_a_scope_that_is_its_own_ancestor_ends_the_writer_walk():
    evs = [Event(0, "scope_push", 0, scope=1, parent_scope=2), Event(1, "scope_push", 1, scope=2, parent_scope=1),
           Event(2, "op_run", 5, scope=3, block=0, op=0, op_type="fill", dur_ns=1,
                 outputs=(("Out", "w", (2,), "float32"),)),
           Event(3, "op_run", 9, scope=1, block=0, op=1, op_type="relu", dur_ns=1,
                 inputs=(("X", "w", (2,), "float32"),), outputs=(("Out", "r", (2,), "float32"),))]
    doc = to_trace_events(evs)
    assert not [e for e in doc["traceEvents"] if e.get("cat") == "dataflow"]


def test_the_scaling_bench_runs_and_prints_every_row():
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    p = subprocess.run([sys.executable, str(root / "bench" / "debug_scaling.py"), "--sizes", "2000", "--repeat", "1"],
                       cwd=root, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    rows = ("export, rnn trace", "export, deep scopes", "timesteps, a stepper refresh", "provenance, 48 shared ops")
    assert all(r in p.stdout for r in rows), p.stdout


def test_a_breakpoint_on_an_op_or_block_the_program_lacks_is_refused():
    s = start_flat()
    with pytest.raises(kc.ProgramError, match="no op #4"):
        s.break_on(block=0, op=4)
    with pytest.raises(kc.ProgramError, match="no op #-1"):
        s.break_on(op=-1)
    with pytest.raises(kc.ProgramError, match="no block 3"):
        s.break_on(block=3, op=0)
    assert not s.breakpoints
    s.break_on(block=0, op=3)
    s.cont()
    assert s.position.innermost.op == 3


def test_a_huge_or_odd_name_is_quoted_short_in_the_refusal():
    s = start_flat()
    with pytest.raises(UnknownNameError) as e:
        s.break_on(write="z" * 100_000 + "\x1b[2J")
    assert len(str(e.value)) < 300 and "\x1b" not in str(e.value)
