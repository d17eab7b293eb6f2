"""Optimizer updates written into the parameter's own array (kernelcore/runtime/executor.py `_runner`, ctx.donated): only
where the program names one variable for Param and ParamOut and nothing but that variable holds the array; the
values are those of the update into fresh arrays, bit for bit; a value the user or a trace holds never changes."""
import weakref

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.ops import optimizer as O

rng = np.random.default_rng(11)
SHAPE = (300, 1000)  # > one update block: the blocks' seams are covered


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def _program(op, attrs, param_out="w", extra_in=(), extra_out=()):
    prog = kc.Program()
    block = prog.global_block()
    for name in ("w", "g", "v", "w_new", "v_new"):
        block.create_var(name, SHAPE, "float32", persistable=name in ("w", "v"))
    block.create_var("lr", (1,), "float32")
    ins = {"Param": ["w"], "Grad": ["g"], "LearningRate": ["lr"], **dict(extra_in)}
    outs = {"ParamOut": [param_out], **dict(extra_out)}
    block.append_op(op, inputs=ins, outputs=outs, attrs=attrs)
    return prog


MOMENTUM = ("momentum", {"mu": 0.9}, (("Velocity", ["v"]),), (("VelocityOut", ["v"]),))
NESTEROV = ("momentum", {"mu": 0.9, "use_nesterov": True}, (("Velocity", ["v"]),), (("VelocityOut", ["v"]),))
SGD = ("sgd", {}, (), ())


def _run(case, scope, param_out="w", **kw):
    op, attrs, extra_in, extra_out = case
    prog = _program(op, attrs, param_out, extra_in, extra_out)
    kc.Executor(kc.CPUPlace()).run(prog, feed={"g": G, "lr": np.array([0.1], np.float32)}, scope=scope, **kw)


G = f32(*SHAPE)
W0, V0 = f32(*SHAPE), f32(*SHAPE)


def _fresh_scope():
    scope = kc.Scope()
    scope.set("w", W0.copy())  # the scope alone holds these copies
    scope.set("v", V0.copy())
    return scope


def _reference(case):
    """The update into fresh arrays: the scope's values are also held here, so nothing is donated."""
    scope = _fresh_scope()
    held = (scope.find_var("w").value, scope.find_var("v").value)
    _run(case, scope)
    np.testing.assert_array_equal(held[0], W0)  # the held arrays did not change
    np.testing.assert_array_equal(held[1], V0)
    return scope.find_var("w").value, scope.find_var("v").value


@pytest.mark.parametrize("case", [MOMENTUM, NESTEROV, SGD], ids=["momentum", "nesterov", "sgd"])
def test_an_update_nothing_else_holds_lands_in_the_parameters_own_array(case):
    want_w, want_v = _reference(case)
    scope = _fresh_scope()
    w_ref, v_ref = weakref.ref(scope.find_var("w").value), weakref.ref(scope.find_var("v").value)
    _run(case, scope)
    assert scope.find_var("w").value is w_ref(), "ParamOut was not written into Param's array"
    if case[0] == "momentum":
        assert scope.find_var("v").value is v_ref(), "VelocityOut was not written into Velocity's array"
    np.testing.assert_array_equal(scope.find_var("w").value, want_w)
    np.testing.assert_array_equal(scope.find_var("v").value, want_v)
    assert not np.array_equal(want_w, W0)


def test_a_value_a_view_holds_is_not_written():
    scope = _fresh_scope()
    row = scope.find_var("w").value[0]  # a view keeps its base alive and sees every write into it
    before = row.copy()
    _run(MOMENTUM, scope)
    np.testing.assert_array_equal(row, before)


def test_an_output_under_another_name_leaves_the_input_alone():
    scope = _fresh_scope()
    w_ref = weakref.ref(scope.find_var("w").value)
    _run(MOMENTUM, scope, param_out="w_new")
    assert w_ref() is not None
    np.testing.assert_array_equal(scope.find_var("w").value, W0)


@pytest.mark.parametrize("retain", ["references", "copies", "shapes", "none"])
def test_values_a_trace_retained_stay_as_they_were(retain):
    """A traced step, then an untraced one: the first step's retained ParamOut is still the first step's."""
    scope = _fresh_scope()
    with kc.trace(retain=retain) as tr:
        _run(MOMENTUM, scope)
    after_one = scope.find_var("w").value.copy()
    _run(MOMENTUM, scope)
    assert not np.array_equal(scope.find_var("w").value, after_one)
    if tr.keep_values:
        (ev,) = [e for e in tr.events if e.kind == "op_run"]
        np.testing.assert_array_equal(dict(ev.values)["w"], after_one)


def test_float16_parameters_update_in_float32_and_are_not_donated():
    scope = kc.Scope()
    w16 = W0.astype(np.float16)
    scope.set("w", w16.copy())
    scope.set("v", V0.astype(np.float16))
    prog = kc.Program()
    block = prog.global_block()
    for name in ("w", "g", "v"):
        block.create_var(name, SHAPE, "float16", persistable=name != "g")
    block.create_var("lr", (1,), "float32")
    block.append_op("momentum", inputs={"Param": ["w"], "Grad": ["g"], "Velocity": ["v"], "LearningRate": ["lr"]},
                    outputs={"ParamOut": ["w"], "VelocityOut": ["v"]}, attrs={"mu": 0.9})
    kc.Executor(kc.CPUPlace()).run(prog, feed={"g": G.astype(np.float16), "lr": np.array([0.1], np.float32)},
                                   scope=scope)
    v32 = V0.astype(np.float16).astype(np.float32) * np.float32(0.9) + G.astype(np.float16).astype(np.float32)
    want = (w16.astype(np.float32) - np.float32(0.1) * v32).astype(np.float16)
    np.testing.assert_array_equal(scope.find_var("w").value, want)
    assert scope.find_var("w").value.dtype == np.float16


def test_the_update_block_does_not_change_the_values(monkeypatch):
    want_w, want_v = _reference(NESTEROV)
    monkeypatch.setattr(O, "UPDATE_BLOCK", 4096 + 7)
    scope = _fresh_scope()
    _run(NESTEROV, scope)
    np.testing.assert_array_equal(scope.find_var("w").value, want_w)
    np.testing.assert_array_equal(scope.find_var("v").value, want_v)


def test_on_the_device_path_too():
    """The strict stand-in for CuPy (kernelcore/runtime/place.py StrictPlace): donated device arrays take the update,
    and the values are the host's."""
    from kernelcore.runtime.place import StrictPlace, to_host
    want_w, want_v = _reference(MOMENTUM)
    exe = kc.Executor(StrictPlace())
    op, attrs, extra_in, extra_out = MOMENTUM
    prog = _program(op, attrs, "w", extra_in, extra_out)
    scope = kc.Scope()
    exe.run(prog, feed={"w": W0, "v": V0, "g": G, "lr": np.array([0.1], np.float32)}, scope=scope)  # to the device
    scope.set("w", exe.place.xp.asarray(W0))  # held by the scope alone
    scope.set("v", exe.place.xp.asarray(V0))
    host_buffer = weakref.ref(scope.find_var("w").value._a)  # the stand-in's device memory
    exe.run(prog, feed={"g": G, "lr": np.array([0.1], np.float32)}, scope=scope)
    assert scope.find_var("w").value._a is host_buffer()
    np.testing.assert_array_equal(to_host(scope.find_var("w").value), want_w)
    np.testing.assert_array_equal(to_host(scope.find_var("v").value), want_v)


@pytest.mark.parametrize("case", [MOMENTUM, NESTEROV, SGD], ids=["momentum", "nesterov", "sgd"])
def test_an_update_shared_among_cores_gives_the_same_values(monkeypatch, case):
    """The blocks of one update split among two cores (kernelcore/runtime/cpu_parts.py): the same values."""
    from threadpoolctl import threadpool_limits
    from kernelcore.runtime import cpu_parts as P
    if P._numpy_blas() is None:
        pytest.skip("no BLAS NumPy loaded that threadpoolctl controls")
    want_w, want_v = _reference(case)
    monkeypatch.setattr(O, "UPDATE_BLOCK", 4096 + 7)
    monkeypatch.setattr(P, "MIN_SPLIT_WORK", 0)
    handed_off = []
    workers = P._workers
    monkeypatch.setattr(P, "_workers", lambda n: handed_off.append(n) or workers(n))
    scope = _fresh_scope()
    with threadpool_limits(2), P.split_run(np, True):  # as inside a CNN's training run
        _run(case, scope)
    assert handed_off
    np.testing.assert_array_equal(scope.find_var("w").value, want_w)
    np.testing.assert_array_equal(scope.find_var("v").value, want_v)
