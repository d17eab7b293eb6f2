"""Gradient rules of the ops the API sweep found missing (kernelcore/grad/unary_math.py, padding.py, reorder.py,
norms_p.py, ...) against central finite differences in float64, with tests/test_backward.py's machinery (one op, a
weighted sum of its outputs as the loss, append_backward, two forward runs per input element); and the same grad
programs on the strict GPU stand-in, against the CPU's gradients."""
import numpy as np
import pytest

import kernelcore as kc
from kernelcore.runtime.place import StrictPlace
from test_backward import GCase, _run, build, numeric_grad

rng = np.random.default_rng(20261129)


def f64(*shape, low=-2.0, high=2.0):
    return rng.uniform(low, high, shape)


def away(*shape, low=0.2, high=1.5):
    """|v| in [low, high]: no kink of |X| or sign within a finite-difference step."""
    return rng.uniform(low, high, shape) * rng.choice([-1.0, 1.0], shape)


def distinct(*shape):
    """Values pairwise 0.05 apart: no tie for max |X| within a finite-difference step."""
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.05 + 0.3).reshape(shape) * rng.choice([-1.0, 1.0], shape)


UNARY = {"square": f64(3, 4), "reciprocal": away(3, 4), "cos": f64(3, 4), "sin": f64(3, 4),
         "tan": f64(3, 4, low=-1.2, high=1.2), "acos": f64(3, 4, low=-0.9, high=0.9),
         "asin": f64(3, 4, low=-0.9, high=0.9), "atan": f64(3, 4), "cosh": f64(3, 4), "sinh": f64(3, 4),
         "acosh": f64(3, 4, low=1.2, high=3.0), "asinh": f64(3, 4), "atanh": f64(3, 4, low=-0.9, high=0.9),
         "log1p": f64(3, 4, low=-0.5, high=2.0), "log2": f64(3, 4, low=0.2, high=3.0),
         "log10": f64(3, 4, low=0.2, high=3.0), "expm1": f64(3, 4)}
# flat almost everywhere: values away from the jumps (integers, halves, zero)
STEPS = {"floor": f64(3, 4) + 0.25, "ceil": np.floor(f64(3, 4)) + 0.3, "trunc": np.floor(f64(3, 4)) + 0.6,
         "round": np.floor(f64(3, 4)) + 0.2, "sign": away(3, 4)}

CASES = [GCase(t, {"X": x}) for t, x in {**UNARY, **STEPS}.items()]
# ops that read one triangle of a symmetric X: their rule gives the symmetric gradient (the one valid inputs can
# follow), which is the symmetric part of what element-wise differences measure
SYMMETRIC_INPUT = {"cholesky"}
CASES += [
    GCase("pad", {"X": f64(2, 3)}, {"paddings": [1, 0, 2, 1], "pad_value": 0.5}),
    GCase("flip", {"X": f64(2, 3, 2)}, {"axis": [0, 2]}),
    GCase("channel_shuffle", {"X": f64(2, 6, 2, 1)}, {"groups": 3}),
    GCase("channel_shuffle", {"X": f64(1, 2, 1, 4)}, {"groups": 2, "data_format": "NHWC"}, id="channel_shuffle_nhwc"),
    GCase("pixel_shuffle", {"X": f64(1, 8, 2, 1)}, {"upscale_factor": 2}),
    GCase("pixel_shuffle", {"X": f64(1, 1, 2, 8)}, {"upscale_factor": 2, "data_format": "NHWC"},
          id="pixel_shuffle_nhwc"),
    GCase("pixel_unshuffle", {"X": f64(1, 2, 4, 2)}, {"downscale_factor": 2}),
    GCase("p_norm", {"X": away(3, 4)}),
    GCase("p_norm", {"X": away(3, 4)}, {"porder": 3.0, "axis": 0, "keepdim": True}, id="p_norm_3_keepdim"),
    GCase("p_norm", {"X": away(3, 4)}, {"porder": 1.0, "asvector": True}, id="p_norm_1_asvector"),
    GCase("p_norm", {"X": distinct(3, 4)}, {"porder": float("inf")}, id="p_norm_inf"),
    GCase("p_norm", {"X": distinct(3, 4)}, {"porder": float("-inf"), "axis": 0}, id="p_norm_minus_inf"),
    GCase("frobenius_norm", {"X": f64(2, 3, 4)}, {"dim": [1, 2]}),
    GCase("frobenius_norm", {"X": f64(2, 3)}, {"dim": [0], "keep_dim": True}, id="frobenius_norm_keep_dim"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_gradient_matches_finite_differences(case):
    if case.op in CHAINED and case.id != "angle_of_real":
        return _chain_finite_differences(case)
    forward, prog, feed, loss, wrt = build(case)
    exe = kc.Executor(kc.CPUPlace())
    got = _run(exe, prog, feed, [n + "@GRAD" for n in wrt], case.training)
    for n, g in zip(wrt, got):
        x = feed[n]
        assert g.shape == x.shape and g.dtype == x.dtype, f"{case}: {n}@GRAD is {g.dtype}{list(g.shape)}"
        want = numeric_grad(exe, forward, feed, loss, n, case)
        if case.op in SYMMETRIC_INPUT:
            want = (want + np.swapaxes(want, -1, -2)) / 2
        np.testing.assert_allclose(g, want, rtol=case.rtol, atol=case.atol, err_msg=f"{case}: {n}@GRAD")


@pytest.mark.parametrize("case", CASES, ids=str)
def test_gradient_kernels_on_strict_device_match_cpu(case):
    if case.op in CHAINED and case.id != "angle_of_real":
        _, prog, feed, wrt = chain_program(case)
    else:
        _, prog, feed, _, wrt = build(case)
    fetch = [n + "@GRAD" for n in wrt]
    want = _run(kc.Executor(kc.CPUPlace()), prog, feed, fetch, case.training)
    got = _run(kc.Executor(StrictPlace()), prog, feed, fetch, case.training)
    for n, g, w in zip(fetch, got, want):
        assert isinstance(g, np.ndarray) and g.dtype == w.dtype and g.shape == w.shape, n
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14, err_msg=f"{case}: {n}")


def test_the_step_functions_have_no_gradient_but_zero():
    """floor / ceil / trunc / round / sign: Paddle's gradient is 0 everywhere, not the finite difference across a
    jump."""
    for t in STEPS:
        _, prog, feed, _, wrt = build(GCase(t, {"X": np.array([0.0, 0.5, 1.0, -1.5])}))
        (g,) = _run(kc.Executor(kc.CPUPlace()), prog, feed, [wrt[0] + "@GRAD"], False)
        assert not g.any(), t


def test_bad_paddings_are_a_kernelcore_error():
    prog = kc.Program()
    block = prog.global_block()
    block.create_var("x", [2, 3], "float32")
    with pytest.raises(kc.errors.KernelcoreError, match="2 non-negative values per dim"):
        block.append_op("pad", {"X": "x"}, {"Out": "y"}, {"paddings": [1, 1]})


POOL_IN = f64(1, 2, 5, 4, low=0.2, high=2.0)
SOFT = f64(3, 4, low=0.0, high=1.0)
CASES += [
    GCase("lp_pool2d", {"x": POOL_IN},
          {"kernel_size": [2, 2], "strides": [1, 2], "paddings": [0, 0], "norm_type": 2.0}),
    GCase("lp_pool2d", {"x": POOL_IN}, {"kernel_size": [3, 2], "strides": [2, 1], "paddings": [1, 0],
                                        "norm_type": 3.0}, id="lp_pool2d_p3_padded"),
    GCase("lp_pool2d", {"x": POOL_IN.transpose(0, 2, 3, 1)},
          {"kernel_size": [2, 2], "strides": [2, 2], "paddings": [0, 0], "norm_type": 1.5, "data_format": "NHWC"},
          id="lp_pool2d_nhwc"),
    GCase("take_along_axis", {"Input": f64(3, 4), "Index": np.array([[0, 3, 0], [1, 1, -1], [2, 0, 2]])},
          {"Axis": 1}),
    GCase("index_sample", {"X": f64(2, 4), "Index": np.array([[3, 0, 3], [1, 2, 0]])}),
    GCase("lerp", {"X": f64(2, 3), "Y": f64(3), "Weight": f64(2, 1, low=0.0, high=1.0)}, stop=("Weight_0",)),
    GCase("meshgrid", {"X": [f64(2), f64(3), f64(1)]}, n_out={"Out": 3}),
    GCase("diag_v2", {"X": f64(3)}, {"offset": -1, "padding_value": 2.0}),
    GCase("diag_v2", {"X": f64(3, 4)}, {"offset": 1}, id="diag_v2_of_a_matrix"),
    GCase("sigmoid_cross_entropy_with_logits", {"X": f64(3, 4), "Label": SOFT}, stop=("Label_0",)),
    GCase("sigmoid_cross_entropy_with_logits", {"X": f64(3, 4), "Label": np.where(SOFT > 0.6, -1.0, SOFT),
                                                "pos_weight": f64(4, low=0.5, high=2.0)},
          {"ignore_index": -1, "normalize": True}, stop=("Label_0", "pos_weight_0"), id="sigmoid_ce_pos_weight"),
    GCase("bce_loss", {"X": f64(3, 4, low=0.1, high=0.9), "Label": SOFT}, stop=("Label_0",)),
    GCase("huber_loss", {"X": f64(3, 4), "Y": f64(3, 4)}, {"delta": 0.8}),
    GCase("log_loss", {"Predicted": f64(3, 4, low=0.1, high=0.9), "Labels": SOFT}, stop=("Labels_0",)),
]
CASES += [GCase("kldiv_loss", {"X": f64(3, 4), "Target": np.where(SOFT > 0.3, SOFT, 0.0)}, {"reduction": r},
                stop=("Target_0",), id=f"kldiv_loss_{r}") for r in ("none", "batchmean", "mean")]
CASES += [GCase("kldiv_loss", {"X": f64(3, 4), "Target": f64(3, 4)}, {"reduction": "sum", "log_target": True},
                stop=("Target_0",), id="kldiv_loss_log_target")]


def test_picks_out_of_range_are_a_clear_error():
    prog = kc.Program()
    block = prog.global_block()
    block.create_var("x", [2, 3], "float64")
    block.create_var("i", [2, 1], "int64")
    block.append_op("take_along_axis", {"Input": "x", "Index": "i"}, {"Result": "y"}, {"Axis": 1})
    with pytest.raises(kc.errors.KernelcoreError, match="out of range"):
        kc.Executor().run(prog, feed={"x": np.zeros((2, 3)), "i": np.array([[0], [3]])}, fetch_list=["y"])


def test_meshgrid_of_three_vectors_is_numpys_ij_grid():
    prog = kc.Program()
    block = prog.global_block()
    xs = [np.arange(2.0), np.arange(3.0) * 10, np.array([5.0])]
    for i, x in enumerate(xs):
        block.create_var(f"x{i}", list(x.shape), "float64")
    block.append_op("meshgrid", {"X": ["x0", "x1", "x2"]}, {"Out": ["g0", "g1", "g2"]})
    got = kc.Executor().run(prog, feed={f"x{i}": x for i, x in enumerate(xs)}, fetch_list=["g0", "g1", "g2"])
    for g, w in zip(got, np.meshgrid(*xs, indexing="ij")):
        np.testing.assert_array_equal(g, w)


NLL_LABEL = np.array([0, 2, -100, 1])
CASES += [
    GCase("bmm", {"X": f64(2, 3, 4), "Y": f64(2, 4, 2)}),
    GCase("dot", {"X": f64(3, 4), "Y": f64(3, 4)}),
    GCase("dot", {"X": f64(4), "Y": f64(4)}, id="dot_1d"),
    GCase("mv", {"X": f64(3, 4), "Vec": f64(4)}),
    GCase("addmm", {"Input": f64(3), "X": f64(2, 4), "Y": f64(4, 3)}, {"Beta": 0.5, "Alpha": 1.5}),
    GCase("cross", {"X": f64(2, 3), "Y": f64(2, 3)}, {"dim": 1}),
    GCase("cross", {"X": f64(3, 2), "Y": f64(3, 2)}, id="cross_default_dim"),
    GCase("trace", {"Input": f64(2, 3, 4)}, {"offset": 1, "axis1": 1, "axis2": 2}),
    GCase("diagonal", {"Input": f64(3, 2, 4)}, {"offset": -1, "axis1": 2, "axis2": 0}),
    GCase("inverse", {"Input": f64(2, 3, 3) + 3 * np.eye(3)}, use=("Output_out_0",)),
    GCase("masked_select", {"X": f64(2, 3), "Mask": np.array([True, False, True])}, use=("Y_out_0",)),
    GCase("cumprod", {"X": away(3, 4)}, {"dim": 1}),
    GCase("cumprod", {"X": away(3, 4)}, {"dim": 0, "reverse": True, "exclusive": True}, id="cumprod_reverse_exclusive"),
    GCase("logcumsumexp", {"X": f64(3, 4)}),
    GCase("logcumsumexp", {"X": f64(3, 4)}, {"axis": 0, "reverse": True}, id="logcumsumexp_reverse"),
    GCase("logcumsumexp", {"X": f64(3, 4)}, {"flatten": True}, id="logcumsumexp_flatten"),
    GCase("cummax", {"x": distinct(3, 4)}, {"axis": 1}),
    GCase("cummin", {"x": distinct(3, 4)}, {"axis": 0}),
    GCase("atan2", {"X1": away(3, 4), "X2": away(4)}),
    GCase("elementwise_fmax", {"X": distinct(3, 4), "Y": distinct(3, 4)}),
    GCase("elementwise_fmin", {"X": distinct(3, 4), "Y": distinct(1, 4)}),
    GCase("copysign", {"x": away(3, 4), "y": away(3, 4)}),
    GCase("elementwise_heaviside", {"X": away(3, 4), "Y": f64(3, 4)}),
    GCase("reduce_amax", {"X": distinct(2, 3, 4)}, {"dim": [0, 2]}),
    GCase("reduce_amin", {"X": distinct(2, 3)}, {"reduce_all": True}),
    GCase("logit", {"X": f64(3, 4, low=0.05, high=0.95)}, {"eps": 0.01}),
    GCase("stanh", {"X": f64(3, 4)}, {"scale_a": 0.5, "scale_b": 2.0}),
]
CASES += [GCase("nll_loss", {"X": f64(4, 3), "Label": NLL_LABEL, "Weight": f64(3, low=0.5, high=2.0)},
                {"reduction": r}, stop=("Weight_0",), use=("Out_out_0",), id=f"nll_loss_{r}")
          for r in ("none", "sum", "mean")]


def test_amax_shares_the_gradient_among_ties():
    _, prog, feed, _, wrt = build(GCase("reduce_amax", {"X": np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])},
                                        {"dim": [1]}))
    feed["w_Out_out_0"] = np.ones(2)
    (g,) = _run(kc.Executor(), prog, feed, [wrt[0] + "@GRAD"], False)
    np.testing.assert_array_equal(g, [[0.0, 0.5, 0.5], [0.5, 0.5, 0.0]])


CASES += [
    GCase("unfold", {"X": f64(1, 2, 4, 5)},
          {"kernel_sizes": [2, 3], "strides": [1, 2], "paddings": [1, 0, 0, 1], "dilations": [2, 1]}),
    GCase("fold", {"X": f64(1, 8, 4)}, {"output_sizes": [3, 3], "kernel_sizes": [2, 2]}),
    GCase("unpool", {"X": f64(1, 2, 2, 2), "Indices": np.array([[[[0, 3], [9, 14]], [[5, 2], [8, 15]]]])},
          {"ksize": [2, 2], "strides": [2, 2], "paddings": [0, 0], "output_size": [4, 4]}),
    GCase("unpool3d", {"X": f64(1, 1, 1, 1, 2), "Indices": np.array([[[[[1, 6]]]]])},
          {"ksize": [2, 2, 2], "strides": [2, 2, 2], "paddings": [0, 0, 0]}),
    GCase("bilinear_tensor_product", {"X": f64(3, 2), "Y": f64(3, 4), "Weight": f64(5, 2, 4), "Bias": f64(1, 5)}),
]


def test_fold_is_unfolds_adjoint():
    """<unfold(x), y> == <x, fold(y)>: fold adds each column back where unfold took it from."""
    from kernelcore.ops.patches import fold_of, unfold_of
    attrs = {"kernel_sizes": [3, 2], "strides": [2, 1], "paddings": [1, 1, 0, 2], "dilations": [1, 2]}
    x = f64(2, 3, 5, 4)
    y = f64(*unfold_of(np, x, attrs).shape)
    np.testing.assert_allclose((unfold_of(np, x, attrs) * y).sum(), (x * fold_of(np, y, attrs, (5, 4))).sum())


CASES += [
    GCase("scatter_nd_add", {"X": f64(3, 2), "Index": np.array([[1], [1], [0]]), "Updates": f64(3, 2)}),
    GCase("index_add", {"X": f64(2, 3), "Index": np.array([2, 0, 2]), "AddValue": f64(2, 3)}, {"axis": 1}),
    GCase("put_along_axis", {"Input": f64(3, 4), "Index": np.array([[0], [3], [1]]), "Value": f64(3, 1)},
          {"Axis": 1}),
    GCase("put_along_axis", {"Input": f64(3, 4), "Index": np.array([[0, 0, 2, 1]]), "Value": f64(1, 4)},
          {"Axis": 0, "Reduce": "add"}, id="put_along_axis_add"),
    GCase("index_put", {"x": f64(3, 4), "indices": [np.array([0, 2]), np.array([1, 1])], "value": f64(2)}),
    GCase("index_put", {"x": f64(3, 4), "indices": [np.array([0, 0]), np.array([1, 1])], "value": f64(1)},
          {"accumulate": True}, id="index_put_accumulate"),
    GCase("masked_fill", {"x": f64(3, 4), "mask": np.array([True, False, False, True]), "value": f64(1)}),
    GCase("strided_slice", {"Input": f64(3, 4)}, {"axes": [0, 1], "starts": [-1, 0], "ends": [0, 10],
                                                  "strides": [-1, 2]}),
    GCase("crop_tensor", {"X": f64(3, 4)}, {"shape": [2, -1], "offsets": [1, 1]}),
    GCase("unbind", {"X": f64(3, 2)}, {"axis": 0}, n_out={"Out": 3}),
    GCase("broadcast_tensors", {"X": [f64(3, 1), f64(4)]}, n_out={"Out": 2}),
    GCase("diag_embed", {"Input": f64(2, 3)}, {"offset": 1, "dim1": 0, "dim2": 2}),
    GCase("repeat_interleave", {"X": f64(3, 2), "RepeatsTensor": np.array([2, 0, 1])}),
    GCase("kron", {"X": f64(2, 3), "Y": f64(3)}),
    GCase("multiplex", {"X": [f64(3, 2), f64(3, 2)], "Ids": np.array([[1], [0], [1]], np.int32)}),
]


def spd(*batch, n=3):
    a = f64(*batch, n, n)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


CASES += [
    GCase("determinant", {"Input": spd(2)}),
    GCase("slogdeterminant", {"Input": spd(2)}),
    GCase("solve", {"X": spd(2), "Y": f64(2, 3, 2)}),
    GCase("solve", {"X": spd(), "Y": f64(3)}, id="solve_vector"),
    GCase("triangular_solve", {"X": spd(2), "Y": f64(2, 3, 2)}),
    GCase("triangular_solve", {"X": spd(2), "Y": f64(2, 3, 2)}, {"upper": False, "transpose": True,
                                                                 "unitriangular": True}, id="triangular_solve_lower_t"),
    GCase("cholesky_solve", {"X": f64(2, 3, 2), "Y": np.linalg.cholesky(spd(2))}),
    GCase("cholesky_solve", {"X": f64(3, 2), "Y": np.linalg.cholesky(spd()).T}, {"upper": True},
          id="cholesky_solve_upper"),
    GCase("matrix_power", {"X": f64(2, 3, 3)}, {"n": 3}),
    GCase("matrix_power", {"X": spd(2)}, {"n": -2}, id="matrix_power_negative"),
    GCase("multi_dot", {"X": [f64(3), f64(3, 4), f64(4, 2)]}),
]
CASES += [GCase("cholesky", {"X": spd(2)}), GCase("cholesky", {"X": spd()}, {"upper": True}, id="cholesky_upper")]


CASES += [
    GCase("logsumexp", {"X": f64(2, 3, 4)}, {"axis": [0, 2], "keepdim": True}),
    GCase("dist", {"X": away(2, 3), "Y": away(3) * 3}, {"p": 3.0}),
    GCase("dist", {"X": distinct(2, 3), "Y": np.zeros(3)}, {"p": float("inf")}, id="dist_inf"),
    GCase("renorm", {"X": f64(2, 3, 4)}, {"p": 2.0, "axis": 1, "max_norm": 1.5}),
    GCase("renorm", {"X": away(3, 4)}, {"p": 3.0, "axis": 0, "max_norm": 1.0}, id="renorm_p3"),
    GCase("kthvalue", {"X": distinct(3, 4)}, {"k": 2, "axis": 1}, use=("Out_out_0",)),
    GCase("kthvalue", {"X": distinct(3, 4)}, {"k": 3, "axis": 0, "keepdim": True}, use=("Out_out_0",),
          id="kthvalue_keepdim"),
    GCase("reduce_as", {"x": f64(2, 3, 4), "target": f64(3, 1)}, stop=("target_0",)),
    GCase("label_smooth", {"X": f64(3, 4)}, {"epsilon": 0.2}),
    GCase("fill_diagonal_tensor", {"X": f64(2, 3, 4), "Y": f64(3, 2)}, {"offset": 1, "dim1": 0, "dim2": 2}),
    GCase("temporal_shift", {"X": f64(4, 4, 1, 2)}, {"seg_num": 2, "shift_ratio": 0.25}),
    GCase("temporal_shift", {"X": f64(3, 1, 2, 8)}, {"seg_num": 3, "shift_ratio": 0.25, "data_format": "NHWC"},
          id="temporal_shift_nhwc"),
]


@pytest.mark.parametrize("op_type,attrs", [("randint", {"low": -2, "high": 3, "shape": [50]}),
                                           ("randperm", {"n": 50})])
def test_random_integers_cover_their_range(op_type, attrs):
    prog = kc.Program()
    prog.global_block().append_op(op_type, {}, {"Out": "out"}, attrs)
    exe = kc.Executor()
    exe.seed(3)
    (out,) = exe.run(prog, fetch_list=["out"])
    assert out.dtype == np.int64 and out.shape == (50,)
    if op_type == "randperm":
        assert sorted(out.tolist()) == list(range(50))
    else:
        assert out.min() >= -2 and out.max() <= 2 and len(set(out.tolist())) == 5


CASES += [
    GCase("affine_grid", {"Theta": f64(2, 2, 3)}, {"output_shape": [2, 1, 3, 4], "align_corners": False}),
    GCase("row_conv", {"X": f64(2, 5, 3), "Filter": f64(3, 3)}),
    GCase("row_conv", {"X": f64(4, 2), "Filter": f64(2, 2)}, id="row_conv_one_sequence"),
]


def test_a_false_assert_stops_the_run_with_a_kernelcore_error():
    prog = kc.Program()
    block = prog.global_block()
    block.create_var("c", [1], "bool")
    block.create_var("d", [3], "float64")
    block.append_op("assert", {"Cond": "c", "Data": ["d"]}, {}, {"summarize": 2})
    with pytest.raises(kc.errors.KernelcoreError, match=r"assert failed; its data: \[1.0, 2.0\]"):
        kc.Executor().run(prog, feed={"c": np.array([False]), "d": np.array([1.0, 2.0, 3.0])}, fetch_list=[])
    kc.Executor().run(prog, feed={"c": np.array([True]), "d": np.zeros(3)}, fetch_list=[])


def test_draws_follow_their_parameters():
    prog = kc.Program()
    block = prog.global_block()
    block.create_var("p", [2000], "float64")
    block.append_op("bernoulli", {"X": "p"}, {"Out": "b"})
    block.append_op("poisson", {"X": "p"}, {"Out": "n"})
    block.append_op("standard_gamma", {"x": "p"}, {"out": "g"})
    exe = kc.Executor()
    exe.seed(5)
    b, n, g = exe.run(prog, feed={"p": np.full(2000, 0.3)}, fetch_list=["b", "n", "g"])
    assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.3) < 0.05
    assert abs(n.mean() - 0.3) < 0.05 and (n >= 0).all()
    assert abs(g.mean() - 0.3) < 0.05 and (g > 0).all()


def test_multinomial_without_replacement_draws_distinct_ids_of_positive_weight():
    prog = kc.Program()
    block = prog.global_block()
    block.create_var("w", [3, 5], "float64")
    block.append_op("multinomial", {"X": "w"}, {"Out": "ids"}, {"num_samples": 3})
    weights = np.array([[0.0, 3.0, 1.0, 0.5, 0.0], [1.0, 1.0, 1.0, 0.0, 0.0], [0.2, 0.0, 5.0, 1.0, 1.0]])
    exe = kc.Executor()
    exe.seed(11)
    for _ in range(5):
        (ids,) = exe.run(prog, feed={"w": weights}, fetch_list=["ids"])
        assert ids.dtype == np.int64 and ids.shape == (3, 3)
        for row, w in zip(ids, weights):
            assert len(set(row.tolist())) == 3 and (w[row] > 0).all()


SYMMETRIC_INPUT |= {"eigh", "eigvalsh"}
CASES += [
    GCase("svd", {"X": f64(2, 4, 3)}),
    GCase("svd", {"X": f64(3, 5)}, use=("S_out_0",), id="svd_values_of_a_wide_matrix"),
    GCase("qr", {"X": f64(2, 4, 3)}),
    GCase("qr", {"X": f64(3, 5)}, id="qr_wide"),
    GCase("eigh", {"X": spd(2)}),
    GCase("eigvalsh", {"X": spd(2)}, use=("Eigenvalues_out_0",)),
]


@pytest.mark.parametrize("shape", [(2, 4, 3), (3, 5)])
def test_decompositions_rebuild_their_matrix(shape):
    x = f64(*shape)
    prog = kc.Program()
    block = prog.global_block()
    block.create_var("x", list(shape), "float64")
    block.append_op("svd", {"X": "x"}, {"U": "u", "S": "s", "VH": "vh"})
    block.append_op("qr", {"X": "x"}, {"Q": "q", "R": "r"})
    u, s, vh, q, r = kc.Executor().run(prog, feed={"x": x}, fetch_list=["u", "s", "vh", "q", "r"])
    np.testing.assert_allclose(u @ (s[..., :, None] * vh), x, atol=1e-12)
    assert (np.diff(s, axis=-1) <= 0).all()
    np.testing.assert_allclose(q @ r, x, atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] +
                                                                         (q.shape[-1],) * 2), atol=1e-12)
    assert np.allclose(np.tril(r, -1), 0)


CASES += [
    GCase("lgamma", {"X": np.array([-2.5, -0.3, 0.2, 1.5, 4.0])}),
    GCase("gammaln", {"x": np.array([0.4, 3.0])}),
    GCase("digamma", {"X": np.array([-1.5, 0.3, 2.0, 9.0])}),
    GCase("polygamma", {"x": np.array([-0.5, 0.7, 3.0])}, {"n": 2}),
    GCase("erf", {"X": np.array([-3.0, -0.4, 0.5, 2.7])}),
    GCase("erfinv", {"X": np.array([-0.9, -0.1, 0.4, 0.95])}),
    # unscaled, a large x's value (~1e6) would drown the others' finite differences in rounding; the scaled forms
    # cover the large-x branch
    GCase("i0", {"x": np.array([-3.0, 0.5, 4.0])}),
    GCase("i0e", {"x": np.array([-3.0, 0.5, 16.0])}),
    GCase("i1", {"x": np.array([-3.0, 0.5, 4.0])}),
    GCase("i1e", {"x": np.array([-3.0, 0.5, 16.0])}),
]


COMPLEX_OUTPUT = {"fft_r2c", "fft_c2c", "conj", "complex", "as_complex"}
COMPLEX_INPUT = {"fft_c2c", "fft_c2r", "conj", "angle", "real", "imag", "as_real"}


def chain_program(case):
    """loss = sum(w * op(inputs)), through as_complex before a complex input ([..., 2] real pairs fed) and as_real
    after a complex output: the ops of a complex path, differentiated with respect to real inputs. Returns (forward,
    program with backward, feed, the real input names)."""
    prog = kc.Program()
    block = prog.global_block()
    feed, ins = {}, {}
    for slot, x in case.inputs.items():
        name = f"{slot}_0"
        block.create_var(name, list(x.shape), "float64", stop_gradient=False)
        feed[name] = x
        if case.op in COMPLEX_INPUT:
            block.append_op("as_complex", {"X": name}, {"Out": f"{name}_c"})
            name = f"{name}_c"
        ins[slot] = name
    block.append_op(case.op, ins, {"Out": "y"}, case.attrs)
    out = "y"
    if case.op in COMPLEX_OUTPUT:
        block.append_op("as_real", {"X": "y"}, {"Out": "yr"})
        out = "yr"
    (val,) = kc.Executor().run(prog.clone(), feed=feed, fetch_list=[out])
    feed["w"] = rng.uniform(0.5, 1.5, val.shape)
    block.create_var("w", list(val.shape), "float64", stop_gradient=True)
    block.append_op("elementwise_mul", {"X": out, "Y": "w"}, {"Out": "wy"})
    block.append_op("reduce_sum", {"X": "wy"}, {"Out": "loss"}, {"reduce_all": True, "dim": []})
    forward = prog.clone()
    kc.append_backward(block.var("loss"))
    return forward, prog, feed, [f"{slot}_0" for slot in case.inputs]


def _chain_finite_differences(case):
    forward, prog, feed, wrt = chain_program(case)
    exe = kc.Executor()
    got = exe.run(prog, feed=feed, fetch_list=[n + "@GRAD" for n in wrt])
    for n, g in zip(wrt, got):
        np.testing.assert_allclose(g, numeric_grad(exe, forward, feed, "loss", n, case), rtol=1e-6, atol=1e-7,
                                   err_msg=f"{case}: {n}@GRAD")


CHAINED = {"fft_r2c", "fft_c2c", "fft_c2r", "conj", "angle", "real", "imag", "complex", "as_complex", "as_real"}
CASES += [
    GCase("fft_r2c", {"X": away(2, 6)}, {"axes": [1], "normalization": "backward", "forward": True, "onesided": True}),
    GCase("fft_r2c", {"X": away(3, 5)}, {"axes": [0, 1], "normalization": "ortho", "forward": False, "onesided": True},
          id="fft_r2c_2d_inverse_ortho"),
    GCase("fft_r2c", {"X": away(2, 4)}, {"axes": [1], "normalization": "forward", "forward": True, "onesided": False},
          id="fft_r2c_full"),
    GCase("fft_c2c", {"X": away(3, 2, 2)}, {"axes": [0], "normalization": "backward", "forward": True}),
    GCase("fft_c2c", {"X": away(2, 4, 2)}, {"axes": [1], "normalization": "forward", "forward": False},
          id="fft_c2c_inverse"),
    GCase("fft_c2r", {"X": away(2, 4, 2)}, {"axes": [1], "normalization": "backward", "forward": False,
                                             "last_dim_size": 6}),
    GCase("fft_c2r", {"X": away(2, 3, 2)}, {"axes": [1], "normalization": "ortho", "forward": True, "last_dim_size": 5},
          id="fft_c2r_odd_forward"),
    GCase("conj", {"X": away(2, 3, 2)}), GCase("angle", {"X": away(4, 2)}, id="angle_of_complex"),
    GCase("real", {"X": away(3, 2)}), GCase("imag", {"X": away(3, 2)}),
    GCase("complex", {"X": away(2, 3), "Y": away(3)}),
    GCase("as_complex", {"X": away(3, 2)}), GCase("as_real", {"X": away(3, 2)}),
    GCase("angle", {"X": away(3)}, id="angle_of_real"),  # 0 or pi: flat
]


# distinct values (a tie would break under a finite-difference step): the mode is each row's smallest
CASES += [GCase("mode", {"X": distinct(2, 4)}, use=("Out_out_0",)),
          GCase("mode", {"X": distinct(3, 4)}, {"axis": 0, "keepdim": True}, use=("Out_out_0",), id="mode_keepdim")]


CASES += [
    GCase("einsum", {"Operands": [f64(2, 3, 4), f64(2, 4, 5)]}, {"equation": "...ij,...jk->...ik"}, use=("Out_out_0",)),
    GCase("einsum", {"Operands": [f64(3, 4), f64(4, 5)]}, {"equation": "ij,jk"}, use=("Out_out_0",),
          id="einsum_implicit"),
    GCase("einsum", {"Operands": [f64(3, 4), f64(2)]}, {"equation": "ij,k->i"}, use=("Out_out_0",),
          id="einsum_letter_of_one_operand"),
    GCase("einsum", {"Operands": [f64(1, 3, 4), f64(2, 4)]}, {"equation": "...ij,...j->...i"}, use=("Out_out_0",),
          id="einsum_broadcast_batch"),
]


CASES += [
    GCase("grid_sampler", {"X": f64(2, 3, 4, 5), "Grid": f64(2, 3, 2, 2, low=-1.2, high=1.2)}),
    GCase("grid_sampler", {"X": f64(1, 2, 3, 4), "Grid": f64(1, 2, 3, 2, low=-0.9, high=0.9)},
          {"padding_mode": "border", "align_corners": False}, id="grid_sampler_border_centres"),
]


def _grid_sampler_program(attrs):
    prog = kc.Program()
    block = prog.global_block()
    block.create_var("x", [1, 1, 2, 3], "float64")
    block.create_var("g", [1, 1, 2, 2], "float64")
    block.append_op("grid_sampler", {"X": "x", "Grid": "g"}, {"Output": "y"}, attrs)
    return prog


def test_grid_sampler_nearest_and_the_unsupported_reflection():
    x = np.arange(6.0).reshape(1, 1, 2, 3)
    grid = np.array([[[[-1.0, -1.0], [0.9, 0.8]]]])  # pixel (0, 0), and (col 1.9 -> 2, row 0.9 -> 1)
    feed = {"x": x, "g": grid}
    (y,) = kc.Executor().run(_grid_sampler_program({"mode": "nearest"}), feed=feed, fetch_list=["y"])
    np.testing.assert_array_equal(y, [[[[0.0, 5.0]]]])
    with pytest.raises(kc.errors.KernelcoreError, match="reflection"):
        kc.Executor().run(_grid_sampler_program({"padding_mode": "reflection"}), feed=feed, fetch_list=["y"])


# the rule holds u and v fixed, as Paddle's does: exact once the power iteration has converged
CASES += [GCase("spectral_norm", {"Weight": f64(3, 4), "U": f64(3), "V": f64(4)}, {"power_iters": 500},
                stop=("U_0", "V_0")),
          GCase("spectral_norm", {"Weight": f64(2, 3, 2), "U": f64(3), "V": f64(4)}, {"dim": 1, "power_iters": 500},
                stop=("U_0", "V_0"), id="spectral_norm_dim1")]
