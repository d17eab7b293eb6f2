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
from kernelcore.runtime.place import StrictPlace
from kernelcore.testing import strict_cuda
from kernelcore.testing.strict_xp import xp as strict
from device_cases import FALLBACK, FUSED, f32
from device_cases import assert_same as _assert_same, outputs as _outputs, reference as _reference


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


@pytest.mark.parametrize("mode, inputs, layers, bidirec, kernels", [
    ("LSTM", "LSTM2", 2, True, {"kc_lstm_cell", "kc_lstm_cell_grad"}),
    ("GRU", "GRU2", 2, True, {"kc_gru_cell", "kc_gru_cell_grad"}),
    ("GRU", "GRU_MASKED", 1, False, {"kc_gru_cell", "kc_gru_cell_grad"})], ids=["lstm", "gru", "gru-masked"])
def test_an_rnn_s_gradient_runs_its_fused_steps_and_matches_the_cpu(mode, inputs, layers, bidirec, kernels,
                                                                     launched):
    """rnn_grad through the fused LSTM or GRU step's gradient: the Reserve it reads comes from a forward run, so the
    whole program (rnn, mean, the gradients) runs on both places."""
    import device_cases
    from opcases import Case
    inputs = getattr(device_cases, inputs)
    attrs = {**device_cases._lstm_attrs(inputs, layers, bidirec), "mode": mode}
    prog, feed, outs = device_cases.build(Case("rnn", inputs, None, attrs))
    block = prog.global_block()
    loss = block.create_var("loss", (), np.float32)
    block.append_op("mean", inputs={"X": [outs["Out"][0]]}, outputs={"Out": [loss]})
    wrt = [n for n in feed if n.startswith(("Input", "WeightList", "PreState"))]
    grads = [g for g in kc.gradients([loss], [block.var(n) for n in wrt]) if g is not None]
    got = kc.Executor(StrictPlace()).run(prog, feed=feed, fetch_list=grads, training=True)
    assert kernels <= set(launched)
    with fast_paths.switched_off():
        want = kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=grads, training=True)
    assert len(got) == len(want) == len(wrt)
    for g, w, n in zip(got, want, wrt):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6, err_msg=n)


def test_switched_off_runs_no_fused_kernel(launched):
    case, training, _ = FUSED[0]
    with fast_paths.switched_off():
        got = _outputs(case, StrictPlace(), training)
    assert not launched
    _assert_same(got, _reference(case, training), case)


def test_every_fused_op_is_covered_by_a_case():
    ops = {k[0] for k in fast_paths.registered() if k[1] == "gpu"}
    assert ops == {c.op for c, _, _ in FUSED} | {"rnn_grad"}
    run_by_cases = set().union(*(k for _, _, k in FUSED)) | {"kc_lstm_cell_grad", "kc_gru_cell_grad"}  # tested above
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
CUDA_WORDS = {"if", "for", "while", "return", "sizeof", "sqrt", "sqrtf", "exp", "expf", "log", "logf", "fmaxf", "tanhf",
              "__syncthreads", "__shfl_down_sync", "__int_as_float", "min", "max", "atomicAdd", "tanh", "normcdf",
              "expm1", "log1p"}
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_DEFINED = re.compile(r"__device__[^(]*?\b(\w+)\s*\(")


def _code(text: str) -> str:
    """CUDA text without its comments (a comment may hold a half-open range's bracket)."""
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))


def _balanced(text: str) -> bool:
    text = _code(text)
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
        body = _code(decl.body[decl.body.index("{"):])
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
        assert _balanced(decl.preamble), f"{decl.name}: unbalanced brackets in the preamble"
        unknown = sorted(set(_CALL.findall(_code(decl.body))) - CUDA_WORDS - set(_DEFINED.findall(decl.preamble)))
        assert not unknown, f"{decl.name}: calls of undeclared functions {unknown}"
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
    assert not _balanced("int x = (a[0];") and _balanced("y = a[(i)];") and _balanced("/* [a, b) */ y = 1;")
    assert set(_CALL.findall("y = expf(x) + mystery(x);")) - CUDA_WORDS == {"mystery"}
