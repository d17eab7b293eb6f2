"""Gradient rules of the Transformer/BERT ops (kernelcore/grad/pointwise.py, elementwise_binary.py, reductions.py,
dims.py, select.py, scan.py) against central finite differences in float64, with tests/test_backward.py's machinery
(one op, a weighted sum of its outputs as the loss, append_backward, two forward runs per input element). The grad
ops' slots are Paddle 2.6.2's; that their values agree with Paddle's is checked by the training step in
tests/test_paddle_transformer.py."""
import numpy as np
import pytest

import kernelcore as kc
from test_backward import GCase, _run, build, numeric_grad

rng = np.random.default_rng(20261123)


def f64(*shape, low=None, high=None):
    return rng.uniform(low, high, shape) if low is not None else rng.standard_normal(shape)


def distinct(*shape):
    """Values pairwise at least 0.05 apart: no ties for max/min/top-k within a finite-difference step."""
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.05 - n * 0.025).reshape(shape) + 0.01


def away(*shape, low=0.2, high=1.5):
    return rng.uniform(low, high, shape) * rng.choice([-1.0, 1.0], shape)


CASES = [
    # unary math and activations
    GCase("gelu", {"X": f64(3, 4)}, id="gelu_exact"),
    GCase("gelu", {"X": f64(3, 4)}, {"approximate": True}, id="gelu_tanh"),
    GCase("abs", {"X": away(3, 4)}, id="abs"),
    GCase("sqrt", {"X": f64(3, 4, low=0.3, high=2.0)}, id="sqrt"),
    GCase("rsqrt", {"X": f64(3, 4, low=0.3, high=2.0)}, id="rsqrt"),
    GCase("log", {"X": f64(3, 4, low=0.3, high=2.0)}, id="log"),
    GCase("pow", {"X": f64(3, 4, low=0.3, high=2.0)}, {"factor": 1.5}, id="pow"),
    GCase("clip", {"X": np.array([[-1.0, -0.3, 0.1], [0.45, 0.9, -0.7]])}, {"min": -0.5, "max": 0.6}, id="clip"),
    GCase("log_softmax", {"X": f64(3, 4, 2)}, {"axis": 1}, id="log_softmax_axis1"),
    GCase("log_softmax", {"X": f64(3, 5)}, id="log_softmax"),
    # binaries with broadcasting
    GCase("elementwise_max", {"X": distinct(3, 4), "Y": distinct(4) + 0.013}, id="max_bcast"),
    GCase("elementwise_min", {"X": distinct(2, 3, 4), "Y": distinct(3) + 0.013}, {"axis": 1}, id="min_axis1"),
    GCase("elementwise_pow", {"X": f64(3, 4, low=0.5, high=2.0), "Y": f64(4, low=-1.0, high=2.0)}, id="pow_bcast"),
    # reductions
    GCase("reduce_max", {"X": distinct(2, 3, 4)}, {"dim": [1]}, id="reduce_max"),
    GCase("reduce_min", {"X": distinct(2, 3, 4)}, {"dim": [0, 2], "keep_dim": True}, id="reduce_min_keep"),
    GCase("reduce_prod", {"X": f64(2, 3, 4, low=0.5, high=1.5)}, {"dim": [2]}, id="reduce_prod"),
    # layer_norm
    GCase("layer_norm", {"X": f64(2, 3, 4), "Scale": f64(4), "Bias": f64(4)}, {"begin_norm_axis": 2},
          id="layer_norm_last"),
    GCase("layer_norm", {"X": f64(2, 3, 4), "Scale": f64(12), "Bias": f64(12)}, {"begin_norm_axis": 1},
          id="layer_norm_axis1"),
    GCase("layer_norm", {"X": f64(3, 5)}, {"begin_norm_axis": 1, "epsilon": 1e-3}, id="layer_norm_no_affine"),
    # shapes
    GCase("unsqueeze2", {"X": f64(2, 3)}, {"axes": [0, -1]}, id="unsqueeze2"),
    GCase("squeeze2", {"X": f64(2, 1, 3, 1)}, {"axes": [1]}, id="squeeze2"),
    GCase("flatten_contiguous_range", {"X": f64(2, 3, 4)}, {"start_axis": 1, "stop_axis": 2}, id="flatten"),
    GCase("expand_v2", {"X": f64(3, 1)}, {"shape": [2, 3, 4]}, id="expand_v2"),
    GCase("expand_v2", {"X": f64(1, 4)}, {"shape": [3, -1]}, id="expand_v2_keep"),
    GCase("expand_as_v2", {"X": f64(1, 4), "Y": f64(3, 4)}, stop=("Y_0",), id="expand_as_v2"),
    GCase("tile", {"X": f64(2, 3)}, {"repeat_times": [2, 1, 3]}, id="tile"),
    GCase("stack", {"X": [f64(2, 3), f64(2, 3), f64(2, 3)]}, {"axis": 1}, id="stack"),
    GCase("stack", {"X": [f64(2, 3), f64(2, 3)]}, {"axis": -1}, stop=("X_0",), id="stack_one_stopped"),
    GCase("unstack", {"X": f64(2, 3, 4)}, {"axis": 1, "num": 3}, n_out={"Y": 3}, id="unstack"),
    GCase("unstack", {"X": f64(2, 3)}, {"axis": 0, "num": 2}, n_out={"Y": 2}, use=("Y_out_1",),
          id="unstack_unused_output"),
    # indexing
    GCase("gather", {"X": f64(4, 3), "Index": np.array([2, 0, 2])}, id="gather_repeats"),
    GCase("gather", {"X": f64(2, 4, 3), "Index": np.array([3, 1])}, {"axis": 1}, id="gather_axis1"),
    GCase("gather_nd", {"X": f64(3, 4, 2), "Index": np.array([[0, 1], [2, 3], [0, 1]])}, id="gather_nd"),
    GCase("scatter", {"X": f64(4, 3), "Ids": np.array([3, 0]), "Updates": f64(2, 3)}, id="scatter"),
    GCase("where", {"Condition": f64(3, 4) > 0, "X": f64(3, 4), "Y": f64(4)}, id="where_bcast"),
    GCase("cumsum", {"X": f64(3, 4)}, {"axis": 1}, id="cumsum"),
    GCase("cumsum", {"X": f64(3, 4)}, {"axis": 0, "reverse": True, "exclusive": True}, id="cumsum_rev_excl"),
    GCase("cumsum", {"X": f64(2, 3)}, {"flatten": True}, id="cumsum_flatten"),
    GCase("tril_triu", {"X": f64(2, 4, 4)}, {"lower": True, "diagonal": -1}, id="tril"),
    GCase("tril_triu", {"X": f64(3, 5)}, {"lower": False, "diagonal": 1}, id="triu"),
    GCase("top_k_v2", {"X": distinct(3, 5)}, {"k": 2}, id="top_k_v2"),
    GCase("top_k_v2", {"X": distinct(4, 3)}, {"k": 2, "axis": 0, "largest": False}, id="top_k_v2_smallest"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_gradient_matches_finite_differences(case):
    forward, prog, feed, loss, wrt = build(case)
    block = prog.global_block()
    assert wrt, f"{case}: no input to differentiate"
    for n in case.stop:
        assert not block.has_var(n + "@GRAD"), f"{case}: stop_gradient input {n} got a gradient"
    exe = kc.Executor(kc.CPUPlace())
    got = _run(exe, prog, feed, [n + "@GRAD" for n in wrt], case.training)
    for n, g in zip(wrt, got):
        x = feed[n]
        assert g.shape == x.shape and g.dtype == x.dtype, f"{case}: {n}@GRAD is {g.dtype}{list(g.shape)}"
        want = numeric_grad(exe, forward, feed, loss, n, case)
        np.testing.assert_allclose(g, want, rtol=case.rtol, atol=case.atol, err_msg=f"{case}: {n}@GRAD")


def test_grad_ops_have_paddles_slots():
    """The grad ops' input/output slots are those Paddle 2.6.2's backward writes (recorded in NOTES.md)."""
    want = {
        "layer_norm_grad": ({"X", "Scale", "Bias", "Mean", "Variance", "Y@GRAD"},
                            {"X@GRAD", "Scale@GRAD", "Bias@GRAD"}),
        "gelu_grad": ({"X", "Out@GRAD"}, {"X@GRAD"}),
        "sqrt_grad": ({"Out", "Out@GRAD"}, {"X@GRAD"}),
        "log_softmax_grad": ({"Out", "Out@GRAD"}, {"X@GRAD"}),
        "reduce_max_grad": ({"X", "Out", "Out@GRAD"}, {"X@GRAD"}),
        "unsqueeze2_grad": ({"AxesTensor", "AxesTensorList", "XShape", "Out@GRAD"}, {"X@GRAD"}),
        "squeeze2_grad": ({"XShape", "Out@GRAD"}, {"X@GRAD"}),
        "expand_as_v2_grad": ({"X", "Out@GRAD"}, {"X@GRAD"}),
        "stack_grad": ({"X", "Y@GRAD"}, {"X@GRAD"}),
        "unstack_grad": ({"Y@GRAD"}, {"X@GRAD"}),
        "scatter_grad": ({"Ids", "Updates", "Out@GRAD"}, {"X@GRAD", "Updates@GRAD"}),
        "where_grad": ({"Condition", "X", "Y", "Out@GRAD"}, {"X@GRAD", "Y@GRAD"}),
        "tril_triu_grad": ({"Out@GRAD"}, {"X@GRAD"}),
        "top_k_v2_grad": ({"X", "K", "Indices", "Out@GRAD"}, {"X@GRAD"}),
        "clip_grad": ({"X", "Min", "Max", "Out@GRAD"}, {"X@GRAD"}),
        "gather_grad": ({"X", "Index", "Axis", "Out@GRAD"}, {"X@GRAD"}),
        "slice_grad": ({"Input", "StartsTensor", "EndsTensor", "StartsTensorList", "EndsTensorList", "Out@GRAD"},
                       {"Input@GRAD"}),
    }
    for t, (ins, outs) in want.items():
        d = kc.get_op_def(t)
        assert {s.name for s in d.inputs} == ins, t
        assert {s.name for s in d.outputs} == outs, t


@pytest.mark.gpu
@pytest.mark.skipif(not kc.gpu_available(), reason="needs CuPy and an NVIDIA GPU")
@pytest.mark.parametrize("case", CASES, ids=str)
def test_gradient_kernels_on_gpu_match_cpu(case):
    _, prog, feed, _, wrt = build(case)
    fetch = [n + "@GRAD" for n in wrt]
    want = _run(kc.Executor(kc.CPUPlace()), prog, feed, fetch, case.training)
    got = _run(kc.Executor(kc.GPUPlace(0)), prog, feed, fetch, case.training)
    for n, g, w in zip(fetch, got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, n
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12, err_msg=f"{case}: {n}")


def test_slice_with_tensor_lists_differentiates_like_static_bounds():
    """slice with StartsTensorList/EndsTensorList (Paddle's run-time bounds, e.g. `x[:, 1:n - 1]`): its gradient is
    the one the same bounds give as attributes (those are checked by finite differences in test_backward.py)."""
    x = f64(3, 5)
    grads = []
    for lists in (False, True):
        prog = kc.Program()
        b = prog.global_block()
        b.create_var("x", [3, 5], "float64", stop_gradient=False)
        ins, attrs = {"Input": ["x"]}, {"axes": [1], "starts": [1], "ends": [-1]}
        feed = {"x": x}
        if lists:
            b.create_var("s", [1], "int64", stop_gradient=True)
            b.create_var("e", [1], "int32", stop_gradient=True)
            ins.update(StartsTensorList=["s"], EndsTensorList=["e"])
            attrs = {"axes": [1], "starts": [-1], "ends": [-1], "infer_flags": [-1]}
            feed.update(s=np.array([1]), e=np.array([-1], np.int32))
        b.append_op("slice", ins, {"Out": ["y"]}, attrs)
        b.create_var("w", [3, 3], "float64", stop_gradient=True)
        feed["w"] = np.arange(9.0).reshape(3, 3)
        b.append_op("elementwise_mul", {"X": ["y"], "Y": ["w"]}, {"Out": ["yw"]})
        b.append_op("reduce_sum", {"X": ["yw"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
        kc.append_backward(b.var("loss"))
        if lists:
            assert [op.type for op in b.ops if op.type == "slice_grad"]
            assert b.ops[-1].input("EndsTensorList") == ["e"] or any(
                op.input("EndsTensorList") == ["e"] for op in b.ops if op.type == "slice_grad")
        grads.append(kc.Executor().run(prog, feed=feed, fetch_list=["x@GRAD"])[0])
    np.testing.assert_array_equal(grads[1], grads[0])
    assert grads[0][:, 1:4].any() and not grads[0][:, [0, 4]].any()
