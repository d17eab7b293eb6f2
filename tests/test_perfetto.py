"""The exported trace (Trace.to_chrome / DebugSession.to_chrome) follows the Trace Event Format's rules, so
Perfetto and chrome://tracing draw it as meant: slices nest strictly per track, flow ids pair up and bind to
slices, tracks are named; and it carries what makes it worth opening (timesteps nested in their op, arrows from
writers to readers, error and breakpoint/watch instants, a live-bytes counter)."""
from __future__ import annotations

import json
import math
from collections import Counter, defaultdict

import numpy as np
import pytest

import kernelcore as kc
from test_contract import rnn_program
from test_control_flow import while_program
from test_paddle_rnn import rnn_program as fused_rnn_program

PHASES = {"X", "i", "s", "f", "C", "M"}


def check_rules(doc: dict) -> dict:
    """Assert the format's rules; return the events grouped by phase."""
    json.dumps(doc, allow_nan=False)
    evs = doc["traceEvents"]
    by_ph = defaultdict(list)
    for e in evs:
        assert e["ph"] in PHASES, e
        assert e["pid"] == 1
        by_ph[e["ph"]].append(e)
        if e["ph"] != "M":
            assert math.isfinite(e["ts"]) and e["ts"] >= 0, e
    named = {e["tid"] for e in by_ph["M"] if e["name"] == "thread_name"}
    used = {e["tid"] for e in evs if e["ph"] in ("X", "i", "s", "f") and "tid" in e}
    assert used <= named, f"tracks without a name: {used - named}"
    # complete slices nest strictly on each track: a slice that starts inside another ends inside it too
    slices = defaultdict(list)
    for e in by_ph["X"]:
        assert e["dur"] >= 0, e
        slices[e["tid"]].append((e["ts"], e["ts"] + e["dur"], e["name"]))
    for tid, ss in slices.items():
        stack = []
        for start, end, name in sorted(ss, key=lambda s: (s[0], -(s[1] - s[0]))):
            while stack and stack[-1][1] <= start + 1e-9:
                stack.pop()
            if stack:
                assert end <= stack[-1][1] + 1e-6, f"track {tid}: {name} [{start}, {end}] overlaps {stack[-1]}"
            stack.append((start, end, name))
    # flows: one start and one end per id, the start first, each inside a slice on its own track
    ids = defaultdict(dict)
    for e in by_ph["s"] + by_ph["f"]:
        assert e["ph"] not in ids[e["id"]], f"flow {e['id']} has two {e['ph']} events"
        ids[e["id"]][e["ph"]] = e
        assert any(s <= e["ts"] <= t for s, t, _ in slices[e["tid"]]), f"flow event outside any slice: {e}"
    for fid, pair in ids.items():
        assert set(pair) == {"s", "f"}, f"flow {fid} is unpaired"
        assert pair["s"]["ts"] <= pair["f"]["ts"]
    for e in by_ph["C"]:
        assert all(v >= 0 for v in e["args"].values()), e
    return by_ph


def test_an_rnn_trace_has_timesteps_nested_in_the_op_and_arrows_across_step_scopes():
    prog, scope, feed, out = rnn_program(T=4)
    with kc.trace() as tr:
        kc.Executor().run(prog, feed, [out], scope)
    ph = check_rules(tr.to_chrome())
    ops = [e for e in ph["X"] if e["cat"] == "op"]
    steps = [e for e in ph["X"] if e["cat"] == "timestep"]
    assert len(ops) == len(tr.filter("op_run")) and len(steps) == 4
    rec = next(e for e in ops if e["name"] == "recurrent")
    assert all(rec["ts"] <= s["ts"] and s["ts"] + s["dur"] <= rec["ts"] + rec["dur"] + 1e-6 for s in steps)
    assert all(s["tid"] == rec["tid"] for s in steps)  # on the recurrent op's own track, inside its slice
    tracks = {e["args"]["name"] for e in ph["M"] if e["name"] == "thread_name"}
    assert {"block 0", "block 1", "scopes and variables"} <= tracks
    # the step block's matmul reads the parameter w, written by no op: no arrow; h_prev is written by the
    # previous timestep's tanh (or bound by the op): arrows exist into the step block from inside it
    names = Counter(e["name"] for e in ph["s"])
    assert names and all(n for n in names)
    counters = [e["args"]["bytes"] for e in ph["C"]]
    assert counters and max(counters) > 0


def test_a_while_and_a_fused_rnn_follow_the_rules():
    x0 = np.ones((2, 3), np.float32)
    with kc.trace() as tr:
        kc.Executor().run(while_program(5), feed={"x0": x0}, fetch_list=["x", "i"], scope=kc.Scope())
    ph = check_rules(tr.to_chrome())
    assert sum(1 for e in ph["X"] if e["cat"] == "timestep") == len(tr.filter("step_end"))
    prog, feed, _, fetch = fused_rnn_program("GRU", 2, True, T=4)
    with kc.trace() as tr:
        kc.Executor().run(prog, feed=feed, fetch_list=fetch, scope=kc.Scope())
    ph = check_rules(tr.to_chrome())
    cells = [e for e in ph["X"] if e["name"] == "gru_cell"]
    assert len(cells) == 2 * 2 * 4  # layers x directions x timesteps, each inside its timestep slice


def test_errors_and_a_sessions_breakpoint_and_watch_hits_are_instants():
    bad = kc.Program()
    bad.global_block().create_var("a", [2], "float32")
    bad.global_block().append_op("relu", {"X": "a"}, {"Out": "b"})
    with kc.trace() as tr, pytest.raises(kc.OpRunError):
        kc.Executor().run(bad, feed={}, fetch_list=["b"], scope=kc.Scope())
    ph = check_rules(tr.to_chrome())
    assert any(e["cat"] == "error" and "no value" in e["args"]["message"] for e in ph["i"])

    prog, scope, feed, out = rnn_program(T=3)
    feed["x"][1, 0, 0] = np.nan
    sess = kc.debug(prog, feed, [out], scope)
    sess.break_on("tanh")
    sess.watch(cond="nan", op_type="tanh")
    for _ in range(8):  # breakpoint stops at each tanh, then the watch hit after the tanh that meets the NaN
        if sess.hits or sess.finished:
            break
        sess.cont()
    assert sess.hits
    doc = sess.to_chrome()
    ph = check_rules(doc)
    marks = [e["name"] for e in ph["i"] if e["cat"] == "mark"]
    assert any(m.startswith("stop:") for m in marks) and any(m.startswith("watch #") for m in marks)
