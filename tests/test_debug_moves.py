"""The engine owns debugging: structured positions, moves forward and backward over the record, watchpoints
and provenance (kernelcore/observe/debug.py, kernelcore/observe/watch.py). Checked against NumPy and against fresh runs."""
import numpy as np
import pytest

import kernelcore as kc
from static_rnn_case import build_tanh_rnn, tanh_rnn_states

T, B, D, H = 4, 2, 3, 3


def rnn_program(reverse=False):
    """x -> recurrent (h = tanh(x_t @ w + h_prev @ u)) -> reduce_sum over time."""
    case = build_tanh_rnn(T, B, D, H, reverse=reverse)
    prog = case.program
    with kc.program_guard(prog):
        last = kc.op.reduce_sum(case.out, dim=[0])
    rng = np.random.default_rng(3)
    scope = kc.Scope()
    scope.set("w", rng.standard_normal((D, H)).astype(np.float32))
    scope.set("u", rng.standard_normal((H, H)).astype(np.float32) * 0.5)
    feed = {"x": rng.standard_normal((T, B, D)).astype(np.float32),
            "h0": rng.standard_normal((B, H)).astype(np.float32)}
    hs = tanh_rnn_states(feed["x"], feed["h0"], scope.get("w"), scope.get("u"), reverse=reverse)
    op = prog.global_block().op(0)
    names = {"h_prev": op.attr("ex_states")[0], "h_new": op.attr("states")[0], "out": op.output("outputs")[0],
             "last": last.name}
    return prog, scope, feed, hs, names


def start_rnn(**kw):
    prog, scope, feed, hs, names = rnn_program(**kw)
    return kc.debug(prog, feed=feed, fetch_list=[names["last"]], scope=scope), feed, hs, names


def flat():
    p = kc.Program()
    b = p.global_block()
    b.create_var("x", [2, 3])
    b.create_var("y", [3])
    b.append_op("elementwise_add", {"X": ["x"], "Y": ["y"]}, {"Out": ["a"]})
    b.append_op("relu", {"X": ["a"]}, {"Out": ["r"]})
    b.append_op("elementwise_mul", {"X": ["r"], "Y": ["a"]}, {"Out": ["q"]})
    b.append_op("tanh", {"X": ["q"]}, {"Out": ["t"]})
    return p


X = np.array([[1.0, -2.0, 3.0], [0.5, 0.0, -1.0]], np.float32)
Y = np.array([0.5, 2.0, -4.0], np.float32)


def start_flat(**kw):
    return kc.debug(flat(), feed={"x": X, "y": Y}, fetch_list=["t"], scope=kc.Scope(), **kw)


# -- positions --------------------------------------------------------------------------------------------
def test_position_is_structured_frames_with_the_timestep():
    s, *_ = start_rnn()
    s.step().step()
    p = s.position
    assert [(f["block"], f["op"], f["op_type"], f["timestep"]) for f in p.to_json()] == \
        [(0, 0, "recurrent", None), (1, 1, s.program.block(1).op(1).type, 0)]
    assert p.timestep == 0 == s.timestep
    s.step_timestep()
    assert s.timestep == 1


def test_kc_debug_accepts_an_executor():
    exe = kc.Executor(kc.CPUPlace())
    s = kc.debug(exe, flat(), feed={"x": X, "y": Y}, fetch_list=["t"], scope=kc.Scope())
    assert s.executor is exe
    assert s.run_to_end()[0].shape == (2, 3)
    s2 = kc.debug(flat(), feed={"x": X, "y": Y}, scope=kc.Scope(), executor=exe)
    assert s2.executor is exe


def test_the_last_timestep_result_is_seen_live_at_the_end_of_its_block():
    s, feed, hs, names = start_rnn()
    s.step()
    while not (s.position.innermost.at_end and s.timestep == T - 1):
        s.next()
    assert s.at_present and not s.finished  # live: the generator waits here
    np.testing.assert_allclose(s.value(names["h_new"]), hs[T - 1], rtol=1e-5)
    assert str(s.position).endswith(f"block 1 end t={T - 1}")


def test_finished_position_text_is_not_the_stop_reason():
    s = start_flat()
    s.cont()
    assert s.stop_reason == "finished" and str(s.position) == "end of the run" and s.position.ended


# -- backward moves -----------------------------------------------------------------------------------------
def test_back_from_after_the_loop_lands_inside_its_last_timestep():
    s, feed, hs, names = start_rnn()
    s.next()  # the recurrent op ran whole: before reduce_sum
    assert s.position.innermost.op_type == "reduce_sum"
    s.back()
    # the pause just before reduce_sum: the end of the last timestep, not "before the recurrent op"
    assert s.position.depth == 2 and s.position.innermost.at_end and s.timestep == T - 1
    assert not s.at_present
    np.testing.assert_allclose(s.value(names["h_new"]), hs[T - 1], rtol=1e-5)
    s.step()  # forward from the past replays the record to the present
    assert s.at_present and s.position.innermost.op_type == "reduce_sum"


def test_back_by_op_matches_a_fresh_run_at_each_pause():
    full, *_ = start_rnn()
    full.run_to_end()
    positions = [p.position for p in full.pauses]
    fresh, *_ = start_rnn()
    seen = [fresh.position]
    while not fresh.finished:
        fresh.step()
        seen.append(fresh.position)
    assert [str(p) for p in seen] == [str(p) for p in positions]
    # walking back one op at a time visits every pause in reverse
    back = []
    while full.pause_index > 0:
        full.back()
        back.append(str(full.position))
    assert back == [str(p) for p in positions[-2::-1]]
    assert full.back().stop_reason == "start of the run"


def test_back_timestep_goes_to_the_start_of_the_previous_timestep():
    s, feed, hs, names = start_rnn()
    s.step()
    s.step_timestep().step_timestep().step()  # inside t=2, at its second op
    assert s.timestep == 2 and s.position.innermost.op == 1
    s.back_timestep()
    assert s.timestep == 1 and s.position.innermost.op == 0
    np.testing.assert_array_equal(s.value("x"), feed["x"][1])
    np.testing.assert_allclose(s.value(names["h_prev"]), hs[0], rtol=1e-5)
    s.back_timestep()
    assert s.timestep == 0 and s.position.innermost.op == 0
    s.back_timestep()  # no earlier timestep: before the loop
    assert s.position.depth == 1 and s.position.innermost.op_type == "recurrent"
    # from after the loop: to the start of its last timestep
    s.present()
    while s.position.depth > 1:  # finish ends one timestep at a time
        s.finish()
    assert s.position.depth == 1
    s.back_timestep()
    assert s.timestep == T - 1 and s.position.innermost.op == 0


def test_reverse_continue_to_the_previous_breakpoint_hit_and_write():
    s, feed, hs, names = start_rnn()
    s.break_on(write=names["h_new"])
    s.cont().cont().cont()
    assert "timestep 2" in s.stop_reason
    s.reverse_cont()
    assert "reverse" in s.stop_reason and "timestep 1" in s.stop_reason and not s.at_present
    np.testing.assert_allclose(s.value(names["h_new"]), hs[1], rtol=1e-5)
    s.reverse_cont()
    assert "timestep 0" in s.stop_reason
    s.reverse_cont()
    assert s.pause_index == 0 and "start of the run" in s.stop_reason
    s.cont()  # forward again through the record: the first hit again
    assert "timestep 0" in s.stop_reason and not s.at_present


def test_run_to_here_and_run_n():
    s, *_ = start_rnn()
    s.run_to(1, 2, timestep=2)
    f = s.position.innermost
    assert (f.block, f.op, f.timestep) == (1, 2, 2)
    before = s.pause_index
    s.run_n(3)
    assert s.pause_index == before + 3


# -- watchpoints -----------------------------------------------------------------------------------------------
def _hits(s):
    return [(h.var, h.op_type) for h in s.hits]


def test_watch_nan_and_inf():
    s = kc.debug(flat(), feed={"x": X, "y": np.array([0.5, 2.0, np.inf], np.float32)}, fetch_list=["t"],
                 scope=kc.Scope())
    s.watch("a", "nan")
    s.cont()
    assert "holds Inf" in s.stop_reason and _hits(s) == [("a", "elementwise_add")]


def test_watch_overflow_zero_and_range():
    s = start_flat()
    s.watch("q", "overflow", bound=5.0)  # q = relu(a) * a: max 1.5 * 1.5, 2.25 ... and (-1)... check below
    s.cont()
    a = X + Y
    q = np.maximum(a, 0) * a
    assert (np.abs(q).max() > 5.0) == bool(s.hits)
    s = start_flat()
    s.watch("r", "zero")
    s.cont()
    assert not s.hits  # relu(a) has positive entries
    s = kc.debug(flat(), feed={"x": -np.abs(X) - 5, "y": Y * 0}, fetch_list=["t"], scope=kc.Scope())
    s.watch("r", "zero")
    s.cont()
    assert _hits(s) == [("r", "relu")] and "all zero" in s.stop_reason
    s = start_flat()
    s.watch("a", "range", lo=-1.0, hi=1.0)
    s.cont()
    assert _hits(s) == [("a", "elementwise_add")] and "leave [-1, 1]" in s.stop_reason
    s = start_flat()
    s.watch("a", "range", lo=-100.0, hi=100.0)
    s.cont()
    assert not s.hits and s.finished


def test_watch_overflow_is_exact_at_the_bound():
    s = start_flat()
    q_max = float(np.abs(np.maximum(X + Y, 0) * (X + Y)).max())
    s.watch("q", "overflow", bound=q_max)
    s.run_to_end()
    s2 = start_flat()
    s2.watch("q", "overflow", bound=q_max * 0.99)
    s2.cont()
    assert not s.hits and _hits(s2) == [("q", "elementwise_mul")]


def test_watch_unchanged_since_last_step_across_timesteps():
    # a recurrent op whose state never changes: h_new = h_prev * 1
    prog = kc.Program()
    with kc.program_guard(prog):
        g = prog.global_block()
        x = g.create_var("x", [3, 2])
        h0 = g.create_var("h0", [2])
        r = kc.layers.StaticRNN()
        with r.step():
            r.step_input(x)
            h_prev = r.memory(init=h0)
            h_new = kc.op.scale(h_prev, scale=1.0)
            r.update_memory(h_prev, h_new)
            r.step_output(h_new)
        out = r()
    s = kc.debug(prog, feed={"x": np.ones((3, 2), np.float32), "h0": np.ones(2, np.float32)}, fetch_list=[out],
                 scope=kc.Scope())
    s.watch(h_new.name, "unchanged")
    s.cont()
    # t=0: equal to nothing before it (h_new's first write); t=1: equal to t=0's write
    assert [h.timestep for h in s.hits] == [1] and "equals its previous value" in s.stop_reason


def test_watch_gradient_norm_and_update_ratio_on_a_training_step():
    prog = kc.Program()
    startup = kc.Program()
    with kc.program_guard(prog, startup):
        x = prog.global_block().create_var("x", [4, 3])
        y = kc.layers.fc(x, 2)
        loss = kc.op.reduce_mean(kc.op.elementwise_mul(y, y))
        kc.append_backward(loss) if hasattr(kc, "append_backward") else kc.transforms.backward.append_backward(loss)
    w = next(v.name for v in prog.global_block().vars if v.is_parameter and list(v.shape) == [3, 2])
    scope = kc.Scope()
    kc.Executor().run(startup, scope=scope)
    feed = {"x": np.full((4, 3), 10.0, np.float32)}
    s = kc.debug(prog, feed=feed, fetch_list=[loss], scope=scope)
    s.watch(w + "@GRAD", "grad_norm", hi=1e-3)  # big inputs: a big gradient
    s.cont()
    assert [h.var for h in s.hits] == [w + "@GRAD"] and "explosion" in s.stop_reason
    g = s.value(w + "@GRAD")
    assert np.sqrt((g.astype(np.float64) ** 2).sum()) > 1e-3
    s2 = kc.debug(prog, feed=feed, fetch_list=[loss], scope=scope)
    s2.watch(op_type=s2.program.global_block().op(
        next(i for i, o in enumerate(prog.global_block().ops) if o.type.endswith("_grad"))).type,
        cond="grad_norm", lo=1e9)
    s2.cont()
    assert s2.hits and "vanishing" in s2.stop_reason


def test_watch_update_ratio_of_a_weight():
    p = kc.Program()
    b = p.global_block()
    b.create_var("w", [3])
    b.create_var("g", [3])
    b.create_var("lr", [1])
    b.append_op("sgd", {"Param": ["w"], "Grad": ["g"], "LearningRate": ["lr"]}, {"ParamOut": ["w"]})
    wv = np.array([1.0, 2.0, 2.0], np.float32)  # |w| = 3
    gv = np.array([3.0, 0.0, 0.0], np.float32)
    for lr, expect in ((0.5, True), (0.05, False)):  # |dw| = 1.5 (ratio 0.5) or 0.15 (ratio 0.05)
        s = kc.debug(p, feed={"w": wv, "g": gv, "lr": np.array([lr], np.float32)}, scope=kc.Scope())
        s.watch("w", "update_ratio", hi=0.1)
        s.cont()
        assert bool(s.hits) == expect
        if expect:
            assert "update ratio 0.5 > 0.1" in s.stop_reason


def test_watch_on_every_output_of_an_op_type_and_reverse_continue_to_it():
    s, feed, hs, names = start_rnn()
    s.watch(op_type="tanh", cond="range", lo=-0.999, hi=0.999)
    s.run_to_end()  # watches off: nothing recorded as hit
    assert not s.hits
    s.cont()  # already at the end: a no-op
    s.reverse_cont()  # back to the last tanh whose output leaves the range
    hit_ts = [t for t in range(T) if np.abs(hs[t]).max() > 0.999]
    if hit_ts:
        assert f"timestep {hit_ts[-1]}" in s.stop_reason
    else:
        assert "start of the run" in s.stop_reason


def test_watch_argument_errors():
    s = start_flat()
    with pytest.raises(kc.KernelcoreError, match="unknown watch condition"):
        s.watch("a", "weird")
    with pytest.raises(kc.KernelcoreError, match="bound="):
        s.watch("a", "overflow")
    with pytest.raises(kc.KernelcoreError, match="exactly one"):
        s.watch(cond="nan")
    with pytest.raises(kc.KernelcoreError, match="retain='references'"):
        start_flat(retain="shapes").watch("a", "nan")


# -- provenance ----------------------------------------------------------------------------------------------
def test_provenance_flat():
    s = start_flat()
    s.run_to_end()
    o = s.provenance("t")
    assert (o.kind, o.op_type, o.op) == ("op", "tanh", 3)
    q = o.inputs[0]
    assert (q.name, q.op_type) == ("q", "elementwise_mul")
    assert [(i.name, i.op_type) for i in q.inputs] == [("r", "relu"), ("a", "elementwise_add")]
    a = q.inputs[1]
    assert [(i.name, i.kind) for i in a.inputs] == [("x", "initial"), ("y", "initial")]
    # clicking a frame: the cursor goes right after the op that wrote it
    s.goto_event(q.event)
    assert s.position.innermost.op == 3 and not s.at_present


def test_provenance_follows_rnn_memory_across_timesteps():
    s, feed, hs, names = start_rnn()
    s.run_to(1, 0, timestep=2)  # paused at the start of t=2: h_prev is t=1's h_new
    o = s.provenance(names["h_prev"], depth=6)
    assert o.kind == "bound" and o.timestep == 2 and "written at timestep 1" in o.note
    w = o.inputs[0]
    assert (w.name, w.timestep) == (names["h_new"], 1)  # the state the step block wrote at t=1
    assert any(c.op_type == "tanh" and c.timestep == 1 for c in w.chain())
    # ... whose inputs go back through the add and the matmul of h_prev to timestep 0
    chain = w.chain()
    assert any(c.kind == "bound" and c.timestep == 1 and c.name == names["h_prev"] for c in chain)
    deeper = s.provenance(names["h_prev"], depth=14).chain()
    assert any(c.kind == "op" and c.op_type == "tanh" and c.timestep == 0 for c in deeper)
    assert any(c.name == "h0" and c.kind == "initial" for c in deeper)
    # x_t comes from the sequence x outside
    x_t = s.provenance("x")
    assert x_t.kind == "bound" and x_t.inputs[0].name == "x" and x_t.inputs[0].kind == "initial"


def test_provenance_across_while_iterations():
    from test_control_flow import while_program
    prog = while_program(3)  # x = x0; while i < 3: x = 0.5 * x + 1
    s = kc.debug(prog, feed={"x0": np.ones((2, 3), np.float32)}, scope=kc.Scope())
    s.run_to_end()
    o = s.provenance("x", depth=6)
    assert (o.op_type, o.block, o.timestep) == ("assign", 1, 2)
    xn = o.inputs[0]
    assert (xn.name, xn.op_type, xn.timestep) == ("x_new", "scale", 2)
    prev = xn.inputs[0]  # the x this iteration read: written by the previous iteration's assign
    assert (prev.name, prev.op_type, prev.timestep) == ("x", "assign", 1)
    first = [c for c in o.chain() if c.name == "x" and c.block == 0]
    assert first and first[0].op_type == "scale"
