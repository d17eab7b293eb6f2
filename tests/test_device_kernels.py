"""The fused device kernels (kernelcore/device) on the strict stand-in: each op through the executor on a strict
place, its fused kernels counted, against the reference kernels on the CPU (fast paths off there); the gates
sending what the kernels cannot take to the reference; the switch; and each kernel's CUDA source read for what
can be checked without a compiler (the twin runs here, the CUDA only on a GPU: bench/gpu_check.sh)."""
from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.device.declare import DECLARED, ELEMENTWISE, RAW, REDUCTION
from kernelcore.runtime import fast_paths
from kernelcore.runtime.place import StrictPlace, to_host
from kernelcore.testing import strict_cuda
from kernelcore.testing.strict_xp import xp as strict
from opcases import Case, build

RNG = np.random.default_rng(7)


def f32(*shape, low=None):
    a = RNG.standard_normal(shape).astype(np.float32)
    return np.abs(a) + low if low is not None else a


def _bn(c):
    return {"Scale": f32(c), "Bias": f32(c), "Mean": f32(c), "Variance": f32(c, low=0.5)}


def _bn_grad(shape, axis, g=None):
    x = f32(*shape)
    others = tuple(i for i in range(len(shape)) if i != axis)
    c = shape[axis]
    return {"X": x, "Scale": f32(c), "Bias": f32(c), "SavedMean": x.mean(axis=others),
            "SavedVariance": (1 / np.sqrt(x.var(axis=others) + 1e-5)).astype(np.float32),
            "MeanOut": f32(c), "VarianceOut": f32(c, low=0.5), "Y@GRAD": f32(*shape)}


def _opt(shape=(4, 3)):
    return {"Param": f32(*shape), "Grad": f32(*shape), "LearningRate": np.float32([0.1])}


def _adam(**extra):
    return {**_opt(), "Moment1": f32(4, 3), "Moment2": f32(4, 3, low=0.1), "Beta1Pow": np.float32([0.81]),
            "Beta2Pow": np.float32([0.998]), **extra}


# (case, training, the fused kernels it must run)
FUSED = [
    (Case("batch_norm", {"X": f32(2, 4, 5, 6), **_bn(4)}, None, {"is_test": True}, id="bn-infer-nchw"), False,
     {"kc_batch_norm_affine", "kc_batch_norm_keep_stats"}),
    (Case("batch_norm", {"X": f32(2, 3, 4, 5), **_bn(5)}, None, {"is_test": True, "data_layout": "NHWC"},
          id="bn-infer-nhwc"), False, {"kc_batch_norm_affine"}),
    (Case("batch_norm", {"X": f32(6, 5), **_bn(5)}, None, {}, id="bn-train-2d"), True,
     {"kc_channel_mean", "kc_centre", "kc_channel_mean_square", "kc_batch_norm_normalise",
      "kc_batch_norm_running"}),
    (Case("batch_norm", {"X": f32(3, 4, 5, 6), **_bn(4)}, None, {"momentum": 0.8}, id="bn-train-nchw"), True,
     {"kc_batch_norm_normalise", "kc_batch_norm_running"}),
    (Case("batch_norm", {"X": f32(2, 3, 2, 4, 5), **_bn(5), "MomentumTensor": np.float32([0.7])}, None,
          {"data_layout": "NDHWC"}, id="bn-train-ndhwc-momentum-tensor"), True, {"kc_batch_norm_running"}),
    (Case("batch_norm_grad", _bn_grad((3, 4, 5, 6), 1), None, {}, id="bn-grad-batch"), True,
     {"kc_centre", "kc_channel_sum", "kc_channel_dot", "kc_batch_norm_grad_dx"}),
    (Case("batch_norm_grad", _bn_grad((3, 5, 6, 4), 3), None, {"use_global_stats": True, "data_layout": "NHWC"},
          id="bn-grad-global-nhwc"), True, {"kc_batch_norm_grad_dx"}),
    (Case("layer_norm", {"X": f32(4, 3, 70), "Scale": f32(210), "Bias": f32(210)}, None, {}, id="ln-axis1"),
     False, {"kc_layer_norm_rows"}),
    (Case("layer_norm", {"X": f32(4, 3, 33)}, None, {"begin_norm_axis": 2}, id="ln-axis2-no-affine"), False,
     {"kc_layer_norm_rows"}),
    (Case("softmax", {"X": f32(3, 5, 300) * 4}, None, {}, id="softmax-last"), False, {"kc_softmax_rows"}),
    (Case("log_softmax", {"X": f32(6, 17) * 4}, None, {"axis": 1}, id="log-softmax-last"), False,
     {"kc_softmax_rows"}),
    (Case("softmax_grad", {"Out": np.abs(f32(4, 9)), "Out@GRAD": f32(4, 9)}, None, {"axis": -1},
          id="softmax-grad"), False, {"kc_softmax_grad_rows"}),
    (Case("sigmoid", {"X": f32(3, 7) * 5}, None, {}, id="sigmoid"), False, {"kc_sigmoid"}),
    (Case("relu_grad", {"Out": np.maximum(f32(3, 7), 0), "Out@GRAD": f32(3, 7)}, None, {}, id="relu-grad"), False,
     {"kc_relu_grad"}),
    (Case("sigmoid_grad", {"Out": np.abs(f32(5)) % 1, "Out@GRAD": f32(5)}, None, {}, id="sigmoid-grad"), False,
     {"kc_sigmoid_grad"}),
    (Case("tanh_grad", {"Out": np.tanh(f32(2, 3)), "Out@GRAD": f32(2, 3)}, None, {}, id="tanh-grad"), False,
     {"kc_tanh_grad"}),
    (Case("sgd", _opt(), None, {}, id="sgd"), True, {"kc_sgd"}),
    (Case("momentum", {**_opt(), "Velocity": f32(4, 3)}, None, {"mu": 0.9}, id="momentum"), True,
     {"kc_momentum"}),
    (Case("momentum", {**_opt(), "Velocity": f32(4, 3)}, None,
          {"mu": 0.8, "use_nesterov": True, "regularization_method": "l2_decay", "regularization_coeff": 0.01,
           "rescale_grad": 0.5}, id="momentum-nesterov-l2"), True, {"kc_momentum"}),
    (Case("adam", _adam(), None, {"beta1": 0.9, "beta2": 0.999}, id="adam"), True, {"kc_adam"}),
    (Case("adam", _adam(), None, {"beta1": 0.8, "beta2": 0.95, "use_global_beta_pow": True},
          id="adam-global-beta-pow"), True, {"kc_adam"}),
]

# cases the gates send to the reference: no fused kernel runs, the results still match
FALLBACK = [
    (Case("softmax", {"X": f32(3, 5, 4)}, None, {"axis": 1}, id="softmax-not-last-axis"), False),
    (Case("batch_norm", {"X": f32(2, 4, 3, 3).astype(np.float64),
                         **{k: v.astype(np.float64) for k, v in _bn(4).items()}}, None, {"is_test": True},
          id="bn-float64"), False),
    (Case("layer_norm", {"X": f32(4, 6).astype(np.float64)}, None, {}, id="ln-float64"), False),
    (Case("adam", _adam(Moment2Max=f32(4, 3, low=0.1)), None, {"amsgrad": True}, id="adam-amsgrad"), True),
    (Case("sigmoid", {"X": f32(3, 7).astype(np.float64)}, None, {}, id="sigmoid-float64"), False),
]


@pytest.fixture
def launched(monkeypatch):
    """Names of the fused kernels run on the stand-in, in order."""
    names = []
    for decl in DECLARED:
        k = decl.on(strict)

        def counted(*args, _twin=decl.twin, _name=decl.name, **kwargs):
            names.append(_name)
            return _twin(*args, **kwargs)
        monkeypatch.setattr(k, "twin", counted)
    return names


def _outputs(case: Case, place, training: bool) -> dict:
    prog, feed, outs = build(case)
    exe = kc.Executor(place)
    scope = kc.Scope()
    exe.run(prog, feed=feed, fetch_list=[], scope=scope, training=training)
    got = {}
    for slot, names in outs.items():
        v = scope.find_var(names[0]).value
        if v is not None:
            assert not isinstance(v, np.ndarray) or place.kind == "cpu", f"{slot} left on the host"
            got[slot] = to_host(v)
    return got


def _reference(case: Case, training: bool) -> dict:
    with fast_paths.switched_off():
        return _outputs(case, kc.CPUPlace(), training)


def _assert_same(got: dict, want: dict, case: Case) -> None:
    assert got.keys() == want.keys(), case
    for slot, w in want.items():
        np.testing.assert_allclose(got[slot], w, rtol=2e-5, atol=2e-6, err_msg=f"{case}: {slot}")
        assert got[slot].dtype == w.dtype and got[slot].shape == w.shape, f"{case}: {slot}"


@pytest.mark.parametrize("case, training, kernels", FUSED, ids=[str(c) for c, _, _ in FUSED])
def test_fused_kernel_matches_the_cpu_reference(case, training, kernels, launched):
    got = _outputs(case, StrictPlace(), training)
    assert kernels <= set(launched), f"{case}: ran {launched}, expected {sorted(kernels)}"
    _assert_same(got, _reference(case, training), case)


@pytest.mark.parametrize("case, training", FALLBACK, ids=[str(c) for c, _ in FALLBACK])
def test_the_gate_sends_what_the_kernels_cannot_take_to_the_reference(case, training, launched):
    got = _outputs(case, StrictPlace(), training)
    assert not launched, f"{case}: a fused kernel ran ({launched})"
    _assert_same(got, _reference(case, training), case)


def test_switched_off_runs_no_fused_kernel(launched):
    case, training, _ = FUSED[0]
    with fast_paths.switched_off():
        got = _outputs(case, StrictPlace(), training)
    assert not launched
    _assert_same(got, _reference(case, training), case)


def test_every_fused_op_is_covered_by_a_case():
    ops = {k[0] for k in fast_paths.registered() if k[1] == "gpu"}
    assert ops == {c.op for c, _, _ in FUSED}
    run_by_cases = set().union(*(k for _, _, k in FUSED))
    assert run_by_cases == {d.name for d in DECLARED}, "a declared kernel no case runs"


def test_a_kernel_given_a_host_array_is_refused():
    k = next(d for d in DECLARED if d.name == "kc_sigmoid").on(strict)
    with pytest.raises(TypeError, match="host"):
        k(np.ones(3, np.float32))


def test_a_row_kernel_launched_with_too_few_blocks_is_refused():
    k = next(d for d in DECLARED if d.name == "kc_softmax_rows").on(strict)
    x, y = strict.asarray(f32(4, 8)), strict.empty((4, 8), dtype=np.float32)
    with pytest.raises(ValueError, match="block per row"):
        k((3,), (32,), (x, y, np.int32(4), np.int32(8), np.int32(0)))


# -- the CUDA sources, read ------------------------------------------------------------------------------------
CUDA_WORDS = {"if", "for", "while", "return", "sizeof", "sqrt", "sqrtf", "exp", "expf", "log", "logf", "fmaxf",
              "__syncthreads", "__shfl_down_sync", "__int_as_float"}
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_DEFINED = re.compile(r"__device__[^(]*?\b(\w+)\s*\(")


def _balanced(text: str) -> bool:
    depth = {"(": 0, "{": 0, "[": 0}
    close = {")": "(", "}": "{", "]": "["}
    for ch in text:
        if ch in depth:
            depth[ch] += 1
        elif ch in close:
            depth[close[ch]] -= 1
            if depth[close[ch]] < 0:
                return False
    return not any(depth.values())


def _names(params: str) -> list[str]:
    return [p.split()[-1] for p in params.split(",") if p.strip()]


def _used(name: str, text: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


@pytest.mark.parametrize("decl", DECLARED, ids=[d.name for d in DECLARED])
def test_cuda_source_is_well_formed_and_uses_what_it_declares(decl):
    if decl.kind == RAW:
        source = decl.preamble + decl.body
        assert _balanced(source), f"{decl.name}: unbalanced brackets"
        params = strict_cuda.c_signature(source, decl.name)
        body = decl.body[decl.body.index("{"):]
        unused = [p[0] for p in params if not _used(p[0], body)]
        assert not unused, f"{decl.name}: parameters never used: {unused}"
        known = CUDA_WORDS | set(_DEFINED.findall(decl.preamble))
        unknown = sorted(set(_CALL.findall(body)) - known)
        assert not unknown, f"{decl.name}: calls of undeclared functions {unknown}"
        assert len(inspect.signature(decl.twin).parameters) == 2 + len(params), "twin takes (grid, block, *args)"
        return
    ins, outs = _names(decl.in_params), _names(decl.out_params)
    strict_cuda.parse_params(decl.in_params), strict_cuda.parse_params(decl.out_params)
    if decl.kind == ELEMENTWISE:
        assert _balanced(decl.body) and decl.body.rstrip().endswith(";"), decl.name
        unused = [n for n in ins + outs if not _used(n, decl.body)]
        assert not unused, f"{decl.name}: parameters never used: {unused}"
        for out in outs:
            assert re.search(rf"\b{out}\s*=[^=]", decl.body), f"{decl.name}: output {out} never assigned"
        assert len(inspect.signature(decl.twin).parameters) == len(ins), f"{decl.name}: twin takes the inputs"
        return
    assert decl.kind == REDUCTION
    map_expr, reduce_expr, post_map_expr, identity = decl.reduction
    assert all(_balanced(e) for e in decl.reduction)
    assert all(_used(n, map_expr) for n in ins) and not any(_used(n, reduce_expr) for n in ins), decl.name
    assert re.match(rf"\s*{outs[0]}\s*=", post_map_expr), f"{decl.name}: post_map_expr assigns {outs[0]}"
    assert set(inspect.signature(decl.twin).parameters) >= {"axis", "keepdims"}


def test_the_source_check_catches_what_it_looks_for():
    assert not _balanced("int x = (a[0];") and _balanced("y = a[(i)];")
    assert set(_CALL.findall("y = expf(x) + mystery(x);")) - CUDA_WORDS == {"mystery"}
