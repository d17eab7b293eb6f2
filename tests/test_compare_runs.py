"""kc.compare_runs: two runs of one program, output by output (kernelcore/observe/compare.py). The expected
first divergence is found from the programs and the recorded values themselves (which op reads the changed
weight, where float16 first overflows, NumPy's own norms), never from figures of an earlier run."""
import math

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.errors import KernelcoreError
from kernelcore.observe.compare import compare_runs

from bert_style import build_encoder, encoder_feed


def _run(dtype, feed, retain="references"):
    program, out, _ = build_encoder(dtype)
    with kc.trace(retain=retain) as tr:
        kc.Executor().run(program, feed={k: v.astype(dtype) for k, v in feed.items()}, fetch_list=[out.name],
                          scope=kc.Scope())
    return program, tr


def _feed(**scaled):
    _, _, shapes = build_encoder()
    feed = encoder_feed(shapes)
    for name, factor in scaled.items():
        feed[name.replace("_", ".")] = feed[name.replace("_", ".")] * factor
    return feed


def _ops_in_order(trace):
    return [e for e in trace.events if e.kind == "op_run"]


def _rel_l2(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.linalg.norm(b - a) / np.linalg.norm(a)


def test_two_inputs_diverge_first_at_the_op_that_reads_the_changed_weight():
    feed = _feed()
    other = dict(feed, **{"l1.wq": feed["l1.wq"] * 1.5})
    program, ta = _run("float32", feed)
    _, tb = _run("float32", other)
    cmp = compare_runs(ta, tb)
    readers = [op for op in program.global_block().ops if "l1.wq" in op.input_arg_names]
    first = cmp.first_divergence
    assert first is not None and (first.block, first.op) == (0, readers[0].idx)
    before = [d for d in cmp.diffs if d.order < first.order]
    assert before and all(d.max_abs == 0.0 and d.rel_l2 == 0.0 for d in before)


def test_float16_run_diverges_first_where_its_own_error_first_exceeds_the_tolerance():
    feed = _feed()
    _, t32 = _run("float32", feed)
    _, t16 = _run("float16", feed)
    # NumPy's own relative L2 error of every output, in float32's execution order
    b_values = {}
    for e in _ops_in_order(t16):
        for name, v in e.values:
            b_values.setdefault(name, v)
    errors = [(name, _rel_l2(v, b_values[name])) for e in _ops_in_order(t32) for name, v in e.values
              if np.asarray(v).dtype.kind == "f" and np.linalg.norm(np.asarray(v, np.float64)) > 0]
    rtol = float(np.median([err for _, err in errors]))  # about half the outputs are beyond it
    want = next(name for name, err in errors if err > rtol)
    cmp = compare_runs(t32, t16, rtol=rtol)
    assert cmp.first_divergence.var == want
    for d in cmp.diffs:
        if d.var in b_values and np.asarray(b_values[d.var]).dtype.kind == "f":
            assert d.rel_l2 == pytest.approx(dict(errors).get(d.var, d.rel_l2), rel=1e-9)


def test_float16_overflow_is_the_first_divergence_at_the_op_that_first_writes_inf():
    feed = _feed(l1_w1=3e3)  # float16 holds at most 65504: layer 1's feed-forward overflows there
    _, t32 = _run("float32", feed)
    _, t16 = _run("float16", feed)
    bad = next(e for e in _ops_in_order(t16) if any(not np.isfinite(v).all() for _, v in e.values
                                                     if np.asarray(v).dtype.kind == "f"))
    assert all(np.isfinite(v).all() for e in _ops_in_order(t32) for _, v in e.values if np.asarray(v).dtype.kind == "f")
    cmp = compare_runs(t32, t16, rtol=1.0)  # only the overflow is beyond this tolerance
    first = cmp.first_divergence
    assert (first.block, first.op) == (bad.block, bad.op)
    assert first.note == "NaN/Inf in b" and math.isinf(first.max_abs)
    assert cmp.worst(1)[0].diverged


def test_worst_first_and_per_node_numbers_agree_with_the_diffs():
    feed = _feed()
    _, t32 = _run("float32", feed)
    _, t16 = _run("float16", feed)
    cmp = compare_runs(t32, t16)
    worst = cmp.worst()
    assert [d.rel_l2 for d in worst] == sorted((d.rel_l2 for d in cmp.diffs), reverse=True)
    lowest = [d.cosine for d in cmp.worst(metric="cosine")]
    assert lowest == sorted(lowest)
    per_op = cmp.numbers("max_abs")
    for d in cmp.diffs:
        assert per_op[kc.ir.node_ids.op_id(d.block, d.op)] >= d.max_abs
        assert per_op[d.op_id] == max(x.max_abs for x in cmp.diffs if x.op_id == d.op_id)
    assert set(cmp.numbers(per="var")) == {d.var_id for d in cmp.diffs}
    first = cmp.first_divergence
    assert first.where() in repr(cmp) and "<table>" in cmp._repr_html_()
    assert cmp.to_json(3)["first_divergence"]["var"] == first.var


def test_identical_runs_have_no_divergence_and_cosine_one():
    feed = _feed()
    _, ta = _run("float32", feed)
    _, tb = _run("float32", feed)
    cmp = compare_runs(ta, tb, rtol=0.0)
    assert cmp.first_divergence is None and cmp.diffs
    assert all(d.max_abs == 0.0 and (d.cosine == pytest.approx(1.0) or d.note) for d in cmp.diffs)


def test_an_output_only_one_run_wrote_diverges():
    feed = _feed()
    _, ta = _run("float32", feed)
    program, out, _ = build_encoder("float32", layers=1)
    with kc.trace(retain="references") as tb:
        kc.Executor().run(program, feed={k: v for k, v in feed.items() if k.startswith(("x", "l0"))},
                          fetch_list=[out.name], scope=kc.Scope())
    cmp = compare_runs(ta, tb)
    only = [d for d in cmp.diffs if d.note == "only in a"]
    assert only and all(d.diverged for d in only)
    assert {d.var for d in only} == {n for e in _ops_in_order(ta) for n, _ in e.values} - \
        {n for e in _ops_in_order(tb) for n, _ in e.values}


def test_traces_without_values_and_bad_tolerances_are_refused():
    feed = _feed()
    _, ta = _run("float32", feed)
    _, shapes_only = _run("float32", feed, retain="shapes")
    with pytest.raises(KernelcoreError, match="retain='references'"):
        compare_runs(ta, shapes_only)
    with pytest.raises(KernelcoreError, match="rtol"):
        compare_runs(ta, ta, rtol=-1)
    with pytest.raises(KernelcoreError, match="two traces"):
        compare_runs(ta, [1, 2])
    with pytest.raises(KernelcoreError, match="metric"):
        compare_runs(ta, ta).worst(metric="speed")


def test_a_program_and_its_pruned_form_line_up_by_name():
    program, out, shapes = build_encoder()
    feed = encoder_feed(shapes)
    target = next(op for op in program.global_block().ops if op.type == "layer_norm").output("Y")[0]
    pruned = kc.prune(program, [target], feeds=list(feed))
    with kc.trace(retain="references") as ta:
        kc.Executor().run(program, feed=feed, fetch_list=[out.name], scope=kc.Scope())
    with kc.trace(retain="references") as tb:
        kc.Executor().run(pruned.program, feed=feed, fetch_list=[target], scope=kc.Scope())
    cmp = compare_runs(ta, tb, rtol=0.0)
    removed = {n for b, i in pruned.removed_ops for n in program.block(b).op(i).output_arg_names}
    assert {d.var for d in cmp.diffs if d.note == "only in a"} == removed
    kept = [d for d in cmp.diffs if d.note != "only in a"]
    assert kept and all(d.max_abs == 0.0 and not d.diverged for d in kept)
    assert cmp.first_divergence.note == "only in a"
