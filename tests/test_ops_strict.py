"""The GPU code path without a GPU: every op case and every gradient check run on StrictPlace, whose array
module (kernelcore/testing/strict_xp.py) is NumPy underneath but refuses what CuPy refuses (implicit host
conversion, host arrays mixed into device calls, names CuPy lacks). A kernel that passes here and on the CPU
has no GPU-only bug of those kinds. Results are compared with the NumPy references (forward) and with the
CPU's gradients (backward); every value the executor leaves in the scope must be a device array.
"""
from __future__ import annotations

import ast
import re
import weakref
from pathlib import Path

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.runtime.place import StrictPlace
from kernelcore.testing import strict_xp
from opcases import all_cases, build, compare

import test_backward as tb
import test_backward_control_flow as tcf

REPO = Path(__file__).resolve().parent.parent
CASES = all_cases()
# a whole program's outputs on the two paths: the CPU's softmax skips the row shift where it may
# (kernelcore/ops/activation.py, _EXP_ROOM), a host-side check the device path does not make
CPU_ONLY_ROUNDING = 1e-6


def _device_outputs(case, scope, outs):
    """{slot: host copy (or list)}; fails when a kernel left a host array where a device array belongs."""
    result = {}
    for slot, names in outs.items():
        vals = []
        for n in names:
            v = scope.find_var(n).value
            if v is not None and isinstance(v, np.ndarray):
                pytest.fail(f"{case}: output {slot} ({n}) is a host NumPy array on StrictPlace; "
                            f"the kernel must build it with ctx.xp")
            vals.append(kc.runtime.place.to_host(v) if v is not None else None)
        result[slot] = vals if kc.get_op_def(case.op).output_slot(slot).duplicable else vals[0]
    return result


@pytest.mark.parametrize("case", CASES, ids=str)
def test_op_on_strict_device_matches_numpy_reference(case):
    prog, feed, outs = build(case)
    exe = kc.Executor(StrictPlace())
    exe.seed(0)
    scope = kc.Scope()
    exe.run(prog, feed=feed, fetch_list=[], scope=scope)
    for name in feed:  # fed values were copied to the device
        assert strict_xp.is_device_array(scope.find_var(name).value), f"{case}: feed {name} stayed on the host"
    compare(case, _device_outputs(case, scope, outs))
    _assert_on_device(scope)


# -- gradients ------------------------------------------------------------------------------------------
def _grads(place, prog, feed, fetch, training):
    scope = kc.Scope()
    got = kc.Executor(place).run(prog, feed=feed, fetch_list=fetch, scope=scope, training=training)
    if isinstance(place, StrictPlace):
        _assert_on_device(scope)
    return got


def _assert_on_device(scope):
    """Every tensor the run left in `scope` or its kids (and in tensor lists) is a device array."""
    for s in scope.walk():
        for v in s.local_vars():
            vals = v.value if isinstance(v.value, list) else [v.value]
            host = [type(x).__name__ for x in vals if isinstance(x, (np.ndarray, np.generic))]
            assert not host, f"{v.name} holds a host value ({host[0]}) after a StrictPlace run"


@pytest.mark.parametrize("case", tb.CASES, ids=str)
def test_gradient_kernels_on_strict_device_match_cpu(case):
    _, prog, feed, _, wrt = tb.build(case)
    fetch = [n + "@GRAD" for n in wrt]
    want = _grads(kc.CPUPlace(), prog, feed, fetch, case.training)
    got = _grads(StrictPlace(), prog, feed, fetch, case.training)
    for n, g, w in zip(fetch, got, want):
        assert isinstance(g, np.ndarray) and g.dtype == w.dtype and g.shape == w.shape, n
        if case.training and (case.op == "dropout" or case.attrs.get("dropout_prob", 0) > 0):
            continue  # the device generator draws its own mask
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14, err_msg=f"{case}: {n}")


def _control_flow_programs():
    progs = {}
    for reverse in (False, True):
        prog, loss, feed, _ = tcf.tanh_rnn(reverse)
        progs[f"static_rnn_{'reverse' if reverse else 'forward'}"] = (prog, loss, feed, ["x", "h0", "w", "u", "b"])
    prog, loss, feed = tcf.while_program()
    progs["while"] = (prog, loss, feed, ["x", "h0", "w"])
    for mask in ([1, 0, 0, 1, 1, 0], [0] * 6):
        prog, loss, feed = tcf.ifelse_program()
        feed["cond"] = np.array(mask, bool).reshape(6, 1)
        progs[f"ifelse_{''.join(map(str, mask))}"] = (prog, loss, feed, ["x", "w", "v"])
    for p in (0.5, -0.5):
        prog, loss, feed = tcf.cond_program()
        feed["p"] = np.array([p])
        progs[f"cond_{'true' if p > 0 else 'false'}"] = (prog, loss, feed, ["x", "y"])
    prog, loss, feed = tcf.paddle_style_rnn()
    progs["block_api_rnn"] = (prog, loss, feed, ["x", "h0", "c0", "w"])
    for kind in ("lstm", "simple_rnn"):
        progs[f"{kind}_layer"] = _rnn_layer_program(kind)
    return progs


def _rnn_layer_program(kind):
    """kc.layers.lstm / simple_rnn over a [3, 2, 4] sequence, parameters from the startup program."""
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        x = tcf.L.data("x", [3, 2, 4], "float64", stop_gradient=False)
        seq = getattr(tcf.L, kind)(x, 3, name=kind)
        loss, feed = tcf.weighted_loss(main.global_block(), [seq, tcf.L.sequence_last(seq)])
    feed.update(tcf.params_of(startup, main))
    feed["x"] = tcf.rng.standard_normal((3, 2, 4))
    feed[f"{kind}.b_0"] = tcf.rng.standard_normal(feed[f"{kind}.b_0"].shape) * 0.3
    params = [v.name for v in main.global_block().vars if v.is_parameter]
    return main, loss, feed, ["x"] + sorted(params)


CF = _control_flow_programs()


@pytest.mark.parametrize("name", sorted(CF))
def test_control_flow_gradients_on_strict_device_match_cpu(name):
    """recurrent (StaticRNN, the block API, the lstm and simple_rnn layers), while, conditional_block (IfElse
    and cond layouts) and their grad ops on the device path."""
    prog, loss, feed, wrt = CF[name]
    tcf.backward(prog, loss)
    fetch = [loss.name] + [n + "@GRAD" for n in wrt]
    want = _grads(kc.CPUPlace(), prog, feed, fetch, True)
    got = _grads(StrictPlace(), prog, feed, fetch, True)
    for n, g, w in zip(fetch, got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14, err_msg=f"{name}: {n}")


# -- the stand-in itself -----------------------------------------------------------------------------------
def test_strict_arrays_refuse_what_cupy_refuses():
    xp = strict_xp.xp
    dev = xp.asarray(np.arange(6.0).reshape(2, 3))
    host = np.ones(3)
    for bad in (lambda: np.asarray(dev), lambda: np.array(dev), lambda: dev + host, lambda: host * dev,
                lambda: xp.maximum(dev, host), lambda: xp.where(dev > 1, host, dev),
                lambda: xp.maximum(dev[0], [1.0, 2.0, 3.0]), lambda: range(xp.asarray(np.int64(3))),
                lambda: [1, 2, 3][xp.asarray(np.int64(1))],
                lambda: xp.sum(dev, where=dev > 1)):  # NumPy's sum takes where=, CuPy's does not
        with pytest.raises(TypeError):
            bad()
    with pytest.raises(AttributeError):
        xp.fuse  # CuPy-only: not offered by a NumPy-backed module
    with pytest.raises(AttributeError):
        dev.getfield  # NumPy-only ndarray method
    # what CuPy allows: scalars mixed in, NumPy indices, explicit copies, syncing size-1 conversions
    strict_xp.reset_stats()
    assert float((dev * np.float32(2) + 1)[1, 2]) == 11.0 and strict_xp.stats["syncs"] == 1
    assert strict_xp.is_device_array(dev[np.array([1, 0])]) and strict_xp.is_device_array(xp.sum(dev))
    np.testing.assert_array_equal(dev.get(), np.arange(6.0).reshape(2, 3))
    assert strict_xp.is_device_array(np.sum(dev))  # NEP 18: dispatched to the device function
    strict_xp.reset_stats()
    xp.nonzero(dev > 2)
    dev[dev > 2]  # shapes that depend on the data: CuPy reads a count back first
    assert strict_xp.stats["syncs"] == 2


def test_strict_namespace_is_cupys_and_numpys_intersection():
    names = {n.split(".", 1)[1] for n in strict_xp.CUPY_NAMES if n.count(".") == 1}
    offered = {n for n in dir(strict_xp.xp) if not n.startswith("_")}
    assert offered <= names
    submodules = {"random", "linalg", "fft", "lib"}  # the ones kernels may reach (lib: for lib.stride_tricks only)
    shared = {n for n in names if hasattr(np, n) and (not isinstance(getattr(np, n), type(np)) or n in submodules)}
    cupy_only = {"cuda", "ElementwiseKernel", "ReductionKernel", "RawKernel"}  # strict_cuda.py's checked stand-ins
    assert offered == shared | {"asnumpy", "get_array_module"} | cupy_only
    assert {"fuse", "RawModule"} <= names - offered


# -- static scan: every xp.<name> kernels use exists in CuPy ---------------------------------------------------
_XP_ATTR = re.compile(r"\bxp\.([A-Za-z_][A-Za-z_0-9]*(?:\.[A-Za-z_][A-Za-z_0-9]*){0,2})")


def _xp_uses():
    """{'name' or 'sub.name': [file:line, ...]} for `xp.<name>` / `ctx.xp.<name>` in kernelcore/ops and /grad."""
    uses = {}
    for path in sorted((REPO / "kernelcore").glob("*/*.py")):
        if path.parent.name not in ("ops", "grad"):
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            for m in _XP_ATTR.finditer(code):
                uses.setdefault(m.group(1), []).append(f"{path.relative_to(REPO)}:{i}")
    return uses


def _exists_in_cupy(dotted: str) -> bool:
    if f"cupy.{dotted}" in strict_xp.CUPY_NAMES and dotted.count(".") >= 2:
        return True  # a member of a nested submodule (xp.lib.stride_tricks.as_strided)
    if dotted.count(".") == 1 and any(n.startswith(f"cupy.{dotted}.") for n in strict_xp.CUPY_NAMES):
        return True  # a nested submodule itself (xp.lib.stride_tricks)
    head, _, tail = dotted.partition(".")
    if f"cupy.{head}" not in strict_xp.CUPY_NAMES:
        return False
    if not tail:
        return True
    if f"cupy.{head}.{tail}" in strict_xp.CUPY_NAMES:  # a submodule member (xp.random.RandomState)
        return True
    ufunc = isinstance(getattr(np, head, None), np.ufunc)
    return ufunc and f"cupy.ufunc.{tail}" in strict_xp.CUPY_NAMES  # xp.add.at


def test_every_xp_name_the_kernels_use_exists_in_cupy():
    uses = _xp_uses()
    assert len(uses) > 20, "the scan found too few xp.<name> uses; is the pattern still right?"
    missing = {n: where[:3] for n, where in uses.items() if not _exists_in_cupy(n)}
    assert missing == {}, f"kernels use names CuPy {strict_xp.CUPY_VERSION} lacks: {missing}"


def test_the_scan_catches_a_name_cupy_lacks():
    assert not _exists_in_cupy("fromregex") and not _exists_in_cupy("add.nonsense")
    assert _exists_in_cupy("add.at") and _exists_in_cupy("random.RandomState") and _exists_in_cupy("take_along_axis")
    assert "fromregex" in _XP_ATTR.findall("y = ctx.xp.fromregex(f, r)")


def test_namespace_list_names_its_cupy_version():
    first = (Path(strict_xp.NAMESPACE_FILE).read_text().splitlines() or [""])[0]
    assert first.startswith("# CuPy ") and strict_xp.CUPY_VERSION[0].isdigit()
    sig_header = Path(strict_xp.SIGNATURES_FILE).read_text().splitlines()[0]
    assert sig_header.startswith(f"# CuPy {strict_xp.CUPY_VERSION} ")  # both lists from one CuPy
    assert set(strict_xp.CUPY_SIGNATURES) <= {n.split(".", 1)[1] for n in strict_xp.CUPY_NAMES}
    assert strict_xp.CUPY_SIGNATURES["full"][0] == ("shape", "fill_value", "dtype", "order")
    ast.parse((REPO / "kernelcore" / "testing" / "gen_cupy_namespace.py").read_text())


def test_the_tier_catches_gpu_bugs_in_a_kernel(monkeypatch):
    """A kernel that converts to the host, mixes a host array in, or returns a host array fails here."""
    case = next(c for c in CASES if c.op == "relu")
    opdef = kc.get_op_def("relu")
    bugs = {
        "implicit host conversion": lambda ctx, ins, attrs: (np.asarray(ins[0]).clip(0),),
        "host array mixed in": lambda ctx, ins, attrs: (ins[0] * np.ones(ins[0].shape, ins[0].dtype),),
        "name CuPy lacks": lambda ctx, ins, attrs: (ctx.xp.fromregex,),
    }
    for what, bug in bugs.items():
        for key in list(opdef.kernels):
            monkeypatch.setitem(opdef.kernels, key, bug)
        with pytest.raises(kc.OpRunError):
            test_op_on_strict_device_matches_numpy_reference(case)
    for key in list(opdef.kernels):
        monkeypatch.setitem(opdef.kernels, key, lambda ctx, ins, attrs: (np.maximum(np.zeros(ins[0].shape, ins[0].dtype), 0),))
    with pytest.raises(pytest.fail.Exception, match="host NumPy array"):
        test_op_on_strict_device_matches_numpy_reference(case)


def test_an_mlp_forward_pass_never_waits_for_the_device():
    """Reading a device value back (float(), bool(), .item()) stalls a GPU; kernels do it only where they
    must (a loop condition, a label check). A plain MLP forward pass does it nowhere: fed once, fetched once."""
    prog = kc.Program()
    g = prog.global_block()
    g.create_var("x", [4, 3], "float32")
    g.create_parameter("w", [3, 5], "float32")
    g.create_parameter("b", [5], "float32")
    g.append_op("mul", {"X": ["x"], "Y": ["w"]}, {"Out": ["h"]}, {"x_num_col_dims": 1, "y_num_col_dims": 1})
    g.append_op("elementwise_add", {"X": ["h"], "Y": ["b"]}, {"Out": ["hb"]}, {"axis": 1})
    g.append_op("relu", {"X": ["hb"]}, {"Out": ["r"]})
    g.append_op("softmax", {"X": ["r"]}, {"Out": ["p"]})
    g.append_op("reduce_mean", {"X": ["p"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((4, 3), np.float32), "w": rng.standard_normal((3, 5), np.float32),
            "b": rng.standard_normal(5, np.float32)}
    want, = kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=["loss"], scope=kc.Scope())
    strict_xp.reset_stats()
    got, = kc.Executor(StrictPlace()).run(prog, feed=feed, fetch_list=["loss"], scope=kc.Scope())
    assert strict_xp.stats == {"syncs": 0, "to_host": 1, "to_device": 3}
    np.testing.assert_allclose(got, want, rtol=CPU_ONLY_ROUNDING)


def test_cli_runs_a_paddle_model_on_the_strict_place(tmp_path, capsys):
    """`kernelcore run --place strict`: a Paddle-written model through the GPU kernels, no GPU; same outputs."""
    from kernelcore.cli import main
    model = REPO / "examples" / "programs" / "mlp.pdmodel"
    args = ["run", str(model), "--random-feeds", "--seed", "3", "--save-outputs"]
    assert main(args + [str(tmp_path / "s.npz"), "--place", "strict"]) == 0
    assert "on StrictPlace" in capsys.readouterr().out
    assert main(args + [str(tmp_path / "c.npz")]) == 0
    s, c = np.load(tmp_path / "s.npz"), np.load(tmp_path / "c.npz")
    assert sorted(s.files) == sorted(c.files) and s.files
    for k in c.files:
        np.testing.assert_allclose(s[k], c[k], rtol=CPU_ONLY_ROUNDING)


def test_load_inference_model_puts_parameters_on_the_given_place():
    """Device kernels refuse host parameters (found by the strict tier: `kernelcore run --place gpu` fed the
    GPU and left the parameters on the host), so loading for a device copies them there, once."""
    prefix = REPO / "examples" / "programs" / "mlp"
    prog, scope, feeds, fetches = kc.formats.paddle_files.load_inference_model(prefix, place=StrictPlace())
    params = [n for n in scope.local_var_names()]
    assert params and all(strict_xp.is_device_array(scope.get(n)) for n in params)
    shape = [d if d > 0 else 2 for d in prog.global_block().var(feeds[0]).shape]
    x = np.random.default_rng(1).standard_normal(shape).astype("float32")
    got = kc.Executor(StrictPlace()).run(prog, feed={feeds[0]: x}, scope=scope)
    _, cpu_scope, _, _ = kc.formats.paddle_files.load_inference_model(prefix)
    want = kc.Executor().run(prog, feed={feeds[0]: x}, scope=cpu_scope)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=CPU_ONLY_ROUNDING)


def test_debugger_trace_and_previews_work_on_device_values():
    """The engine's host-side readers (debugger values, time travel, scope forest, widget previews) copy
    device values explicitly; none relies on an implicit conversion."""
    from kernelcore_widgets import schema
    prog = kc.Program()
    g = prog.global_block()
    g.create_var("x", [2, 3], "float32")
    g.append_op("relu", {"X": ["x"]}, {"Out": ["y"]})
    g.append_op("scale", {"X": ["y"]}, {"Out": ["z"]}, {"scale": 2.0})
    x = np.array([[-1, 2, 3], [4, -5, 6]], np.float32)
    sess = kc.debug(prog, feed={"x": x}, fetch_list=["z"], place=StrictPlace())
    sess.step()
    sess.step()
    np.testing.assert_array_equal(sess.value("y"), np.maximum(x, 0))
    before = sess.back(1)
    assert before is not None
    sess.cont()
    assert sess.finished
    infos = {n: info for node in sess.forest() for n, info in node.vars.items()}
    assert infos["z"].place == "StrictPlace" and infos["z"].shape == (2, 3)
    dev = strict_xp.xp.asarray(x)
    host_preview, dev_preview = schema.value_preview(x), schema.value_preview(dev)
    assert dev_preview["place"] == "StrictPlace" and host_preview["place"] == "CPUPlace"
    assert {k: v for k, v in dev_preview.items() if k != "place"} == {k: v for k, v in host_preview.items() if k != "place"}


def test_array_flags_offer_only_what_cupys_offer():
    """CuPy's ndarray.flags has no `writeable` (found on a real GPU: the momentum kernel read it and failed)."""
    dev = strict_xp.xp.asarray(np.ones((2, 3), np.float32))
    assert dev.flags.c_contiguous and not dev.T.flags.c_contiguous and dev.flags["C_CONTIGUOUS"]
    with pytest.raises(AttributeError, match="writeable"):
        dev.flags.writeable


def _storage(value):
    """the NumPy array holding a value's elements (a strict device array's own, which it alone references)"""
    return value._a if strict_xp.is_device_array(value) else value


@pytest.mark.parametrize("opt", ["sgd", "momentum", "adam"])
def test_training_steps_update_device_parameters_in_place(opt):
    """Whole training steps on the strict device: the executor donates each parameter to its optimizer op, and
    sgd and momentum write the update into the device array itself (the path the op cases, run on inputs the
    test still holds, never reach); the parameters end as the CPU's do."""
    L = kc.layers
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        x = L.data("x", [-1, 6])
        label = L.data("label", [-1, 1], "int64")
        h = L.fc(x, 8, act="relu")
        loss = L.mean(L.softmax_with_cross_entropy(L.fc(h, 3), label))
        {"sgd": kc.optimizer.SGD(0.2), "momentum": kc.optimizer.Momentum(0.1, 0.9, use_nesterov=True),
         "adam": kc.optimizer.Adam(0.05, beta1=0.8, beta2=0.95)}[opt].minimize(loss, startup)
    exe = kc.Executor(kc.CPUPlace())
    exe.seed(3)
    init = kc.Scope()
    exe.run(startup, scope=init)
    names = kc.formats.paddle_files.persistable_names(main)
    rng = np.random.default_rng(4)
    feeds = [{"x": rng.standard_normal((5, 6)).astype(np.float32), "label": rng.integers(0, 3, (5, 1))}
             for _ in range(2)]
    finals = []
    for place in (kc.CPUPlace(), StrictPlace()):
        scope = kc.Scope()
        for n in names:
            v = np.array(init.get(n))
            scope.var(n).value = place.xp.asarray(v) if place.kind == "gpu" else v
        # weak references: a strong one would keep the executor from donating the parameter
        params = {n: weakref.ref(_storage(scope.get(n))) for n in names if n.endswith((".w_0", ".b_0"))}
        run = kc.Executor(place)
        for feed in feeds:
            run.run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
        if opt != "adam":  # adam's kernel writes fresh arrays (kernelcore/ops/optimizer.py)
            assert params and all(_storage(scope.get(n)) is r() for n, r in params.items()), \
                f"{place}: a parameter was replaced, not updated in place"
        finals.append({n: kc.runtime.place.to_host(scope.get(n)) for n in names})
    for n in names:
        np.testing.assert_allclose(finals[1][n], finals[0][n], rtol=1e-5, atol=1e-7, err_msg=n)
