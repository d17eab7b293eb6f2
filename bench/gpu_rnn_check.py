"""The rnn op's fused steps on a device, for bench/gpu_device_check.py: each LSTM / GRU training program's
gradients (rnn, mean, rnn_grad: the fused steps and their gradients' kernels) against the reference on the CPU,
and an inference rnn block replayed as a captured graph against the same, timed op by op and replayed."""
from __future__ import annotations

import traceback

import numpy as np

import kernelcore as kc
from kernelcore.runtime import captured_run, fast_paths
from kernelcore.runtime.place import to_host

# (name in tests/device_cases.py, mode, layers, bidirectional)
GRADIENT_CASES = [("LSTM2", "LSTM", 2, True), ("GRU2", "GRU", 2, True), ("GRU_MASKED", "GRU", 1, False)]
CAPTURE_CASES = [("LSTM1", "LSTM"), ("GRU1", "GRU")]


def _program(name, mode, layers, bidirec, is_test=False):
    import device_cases
    from opcases import Case
    inputs = getattr(device_cases, name)
    attrs = {**device_cases._lstm_attrs(inputs, layers, bidirec, is_test=is_test), "mode": mode}
    return device_cases.build(Case("rnn", inputs, None, attrs))


def _gradients(place, name, mode, layers, bidirec):
    prog, feed, outs = _program(name, mode, layers, bidirec)
    block = prog.global_block()
    loss = block.create_var("loss", (), np.float32)
    block.append_op("mean", inputs={"X": [outs["Out"][0]]}, outputs={"Out": [loss]})
    wrt = [n for n in feed if n.startswith(("Input", "WeightList", "PreState"))]
    grads = [g for g in kc.gradients([loss], [block.var(n) for n in wrt]) if g is not None]
    got = kc.Executor(place).run(prog, feed=feed, fetch_list=grads, training=True)
    with fast_paths.switched_off():
        want = kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=grads, training=True)
    for g, w, n in zip(got, want, wrt):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6, err_msg=f"{name}: {n}")


def _captured(place, name, mode, median_ms):
    prog, feed, outs = _program(name, mode, 1, False, is_test=True)
    fetch = [outs["Out"][0]] + outs["State"]
    exe, scope = kc.Executor(place), kc.Scope()
    dev_feed = {k: place.xp.asarray(v) for k, v in feed.items()}
    got = [exe.run(prog, feed=dev_feed, fetch_list=fetch, scope=scope) for _ in range(3)]
    state = captured_run.state_of(exe.prepare(prog), scope, False)
    if state is None or state.state != captured_run.CAPTURED:
        raise AssertionError(f"{name}: the inference block was not captured ({state and state.state})")
    with fast_paths.switched_off():
        want = kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=fetch, scope=kc.Scope())
    for run in got:
        for g, w in zip(run, want):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6, err_msg=name)
    replay_ms = median_ms(lambda: exe.run(prog, feed=dev_feed, fetch_list=fetch, scope=scope))
    op_scope = kc.Scope()
    op_by_op_ms = median_ms(lambda: [to_host(v) for v in exe.run(prog, feed=dev_feed, fetch_list=fetch,
                                                                  scope=op_scope, return_numpy=False)])
    return {"replay_ms": replay_ms, "op_by_op_ms": op_by_op_ms}


def check_rnn(place, median_ms) -> tuple[list, list]:
    """Rows of figures and the failures; median_ms(fn) times fn, synchronised."""
    rows, failures = [], []
    checks = [(f"rnn gradients {c[0]}", lambda c=c: _gradients(place, *c)) for c in GRADIENT_CASES]
    checks += [(f"rnn captured {c[0]}", lambda c=c: _captured(place, *c, median_ms)) for c in CAPTURE_CASES]
    for what, check in checks:
        row = {"case": what}
        try:
            row.update(check() or {})
            row["ok"] = True
        except Exception as e:  # every check reported, the first error of each kept
            row["ok"] = False
            row["error"] = "".join(traceback.format_exception_only(type(e), e)).strip()[:2000]
            failures.append(what)
        rows.append(row)
        print(row, flush=True)
    return rows, failures
