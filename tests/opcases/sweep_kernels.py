"""Cases for the ops the API sweep found missing (kernelcore/ops/unary_math.py, padding.py, reorder.py,
norms_p.py, ...): NumPy references written from the ops' definitions, in float64 where Paddle's op takes it.

Rounding halves away from zero is checked on exact halves, where NumPy's own rounding (to even) differs.
"""
import math

import numpy as np

from . import Case

rng = np.random.default_rng(33)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def f64(*shape, low=-2.0, high=2.0):
    return rng.uniform(low, high, shape)


def out(fn):
    return lambda X, **a: {"Out": fn(X)}


UNIT = f64(3, 4, low=-0.9, high=0.9)
ABOVE_ONE = f64(3, 4, low=1.1, high=3.0)
POSITIVE = f64(3, 4, low=0.1, high=3.0)
HALVES = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49, -0.51])
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, 1.5, -2.0], np.float32)

CASES = [
    Case("square", {"X": f32(3, 4)}, out(lambda x: x * x)),
    Case("square", {"X": np.arange(-3, 3).astype(np.int64)}, out(lambda x: x * x), id="square_int64"),
    Case("reciprocal", {"X": POSITIVE}, out(lambda x: 1 / x)),
    Case("floor", {"X": f64(3, 4)}, out(np.floor)),
    Case("ceil", {"X": f32(3, 4)}, out(np.ceil)),
    Case("trunc", {"X": f64(3, 4)}, out(lambda x: np.where(x < 0, np.ceil(x), np.floor(x)))),
    Case("round", {"X": HALVES}, out(lambda x: np.array([math.copysign(math.floor(abs(v) + 0.5), v) for v in x])),
         id="round_halves_away_from_zero"),
    Case("round", {"X": np.array([1.25, -2.35, 0.123])}, lambda X, **a: {"Out": np.array([1.3, -2.4, 0.1])},
         attrs={"decimals": 1}, id="round_decimals"),
    Case("sign", {"X": np.array([-2.0, 0.0, 3.0], np.float32)}, out(lambda x: np.array([-1, 0, 1], np.float32))),
    Case("cos", {"X": f64(3, 4)}, out(np.cos)),
    Case("sin", {"X": f32(3, 4)}, out(np.sin)),
    Case("tan", {"X": UNIT}, out(np.tan)),
    Case("acos", {"X": UNIT}, out(np.arccos)),
    Case("asin", {"X": UNIT}, out(np.arcsin)),
    Case("atan", {"X": f64(3, 4)}, out(np.arctan)),
    Case("cosh", {"X": f64(3, 4)}, out(np.cosh)),
    Case("sinh", {"X": f64(3, 4)}, out(np.sinh)),
    Case("acosh", {"X": ABOVE_ONE}, out(np.arccosh)),
    Case("asinh", {"X": f64(3, 4)}, out(np.arcsinh)),
    Case("atanh", {"X": UNIT}, out(np.arctanh)),
    Case("log1p", {"X": POSITIVE}, out(lambda x: np.log(1 + x))),
    Case("log2", {"X": POSITIVE}, out(lambda x: np.log(x) / np.log(2))),
    Case("log10", {"X": POSITIVE}, out(lambda x: np.log(x) / np.log(10))),
    Case("expm1", {"X": f64(3, 4)}, out(lambda x: np.exp(x) - 1)),
    Case("isnan_v2", {"X": SPECIAL}, out(lambda x: np.array([1, 0, 0, 0, 0, 0], bool))),
    Case("isinf_v2", {"X": SPECIAL}, out(lambda x: np.array([0, 1, 1, 0, 0, 0], bool))),
    Case("isfinite_v2", {"X": SPECIAL}, out(lambda x: np.array([0, 0, 0, 1, 1, 1], bool))),
    # pad: [before, after] per dim
    Case("pad", {"X": np.arange(6.0).reshape(2, 3)},
         lambda X, **a: {"Out": np.array([[9, 9, 9, 9, 9, 9], [9, 0, 1, 2, 9, 9], [9, 3, 4, 5, 9, 9]], float)},
         attrs={"paddings": [1, 0, 1, 2], "pad_value": 9.0}),
    # reorder
    Case("flip", {"X": np.arange(6).reshape(2, 3)}, lambda X, **a: {"Out": np.array([[5, 4, 3], [2, 1, 0]])},
         attrs={"axis": [0, -1]}),
    Case("channel_shuffle", {"X": np.arange(6.0).reshape(1, 6, 1, 1)},
         lambda X, **a: {"Out": np.array([0, 3, 1, 4, 2, 5], float).reshape(1, 6, 1, 1)}, attrs={"groups": 2}),
    Case("channel_shuffle", {"X": np.arange(6.0).reshape(1, 1, 1, 6)},
         lambda X, **a: {"Out": np.array([0, 2, 4, 1, 3, 5], float).reshape(1, 1, 1, 6)},
         attrs={"groups": 3, "data_format": "NHWC"}, id="channel_shuffle_nhwc"),
    Case("pixel_shuffle", {"X": np.arange(8.0).reshape(1, 8, 1, 1)},
         lambda X, **a: {"Out": np.array([[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]], float)},
         attrs={"upscale_factor": 2}),
    Case("pixel_unshuffle", {"X": np.array([[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]], float)},
         lambda X, **a: {"Out": np.arange(8.0).reshape(1, 8, 1, 1)}, attrs={"downscale_factor": 2}),
    Case("pixel_unshuffle", {"X": np.arange(8.0).reshape(1, 2, 2, 2)},
         lambda X, **a: {"Out": np.arange(8.0).reshape(1, 2, 2, 2).transpose(0, 3, 1, 2).reshape(1, 1, 1, 8)},
         attrs={"downscale_factor": 2, "data_format": "NHWC"}, id="pixel_unshuffle_nhwc"),
    # norms
    Case("p_norm", {"X": np.array([[3.0, -4.0], [1.0, 0.0]])}, lambda X, **a: {"Out": np.array([5.0, 1.0])}),
    Case("p_norm", {"X": np.array([[3.0, -4.0], [1.0, 0.0]])}, lambda X, **a: {"Out": np.array([[3.0, 4.0]])},
         attrs={"porder": math.inf, "axis": 0, "keepdim": True}, id="p_norm_inf"),
    Case("p_norm", {"X": np.array([[3.0, -4.0], [1.0, 0.0]])}, lambda X, **a: {"Out": np.array(3.0)},
         attrs={"porder": 0.0, "asvector": True}, id="p_norm_zero_counts"),
    Case("p_norm", {"X": np.array([[1.0, -2.0], [3.0, 0.0]])}, lambda X, **a: {"Out": np.array([9.0, 27.0]) ** (1 / 3)},
         attrs={"porder": 3.0}, id="p_norm_3"),
    Case("frobenius_norm", {"X": np.array([[[3.0, 4.0]], [[0.0, 1.0]]])},
         lambda X, **a: {"Out": np.array([5.0, 1.0])}, attrs={"dim": [1, 2]}),
]


# -- lp_pool2d, picks along an axis, lerp, new tensors, pointwise losses -------------------------------------
def lp_pool_ref(x, k, p):
    """Windows of k x k with stride k, no padding: (sum x^p)^(1/p), loop by loop."""
    n, c, h, w = x.shape
    out = np.zeros((n, c, h // k, w // k), x.dtype)
    for i in range(h // k):
        for j in range(w // k):
            out[:, :, i, j] = (x[:, :, i * k:(i + 1) * k, j * k:(j + 1) * k] ** p).sum(axis=(2, 3)) ** (1 / p)
    return out


POOL_IN = f64(1, 2, 4, 4, low=0.1, high=2.0)
PROBS = f64(3, 4, low=0.05, high=0.95)
TARGETS = f64(3, 4, low=0.0, high=1.0)
LOGITS = f64(3, 4, low=-3.0, high=3.0)


def sigmoid_ce_ref(X, Label, ignore_index=-100, normalize=False, **a):
    out = np.log(1 + np.exp(-X)) + (1 - Label) * X  # the textbook form
    out = np.where(Label == ignore_index, 0.0, out)
    return {"Out": out / max((Label != ignore_index).sum(), 1) if normalize else out}


def kldiv_ref(X, Target, reduction="mean", **a):
    loss = np.where(Target > 0, Target * (np.log(np.where(Target > 0, Target, 1)) - X), 0.0)
    return {"Loss": {"none": loss, "sum": np.array(loss.sum()), "mean": np.array(loss.mean()),
                     "batchmean": np.array(loss.sum() / X.shape[0])}[reduction]}


def huber_ref(X, Y, delta=1.0, **a):
    r = Y - X
    return {"Out": np.where(np.abs(r) <= delta, 0.5 * r * r, delta * (np.abs(r) - 0.5 * delta)), "Residual": r}


CASES += [
    Case("lp_pool2d", {"x": POOL_IN}, lambda x, **a: {"out": lp_pool_ref(x, 2, 2.0)},
         attrs={"kernel_size": [2, 2], "strides": [2, 2], "paddings": [0, 0], "norm_type": 2.0}),
    Case("lp_pool2d", {"x": POOL_IN}, lambda x, **a: {"out": lp_pool_ref(x, 2, 3.0)},
         attrs={"kernel_size": [2, 2], "strides": [2, 2], "paddings": [0, 0], "norm_type": 3.0}, id="lp_pool2d_p3"),
    Case("lp_pool2d", {"x": POOL_IN.transpose(0, 2, 3, 1)},
         lambda x, **a: {"out": lp_pool_ref(x.transpose(0, 3, 1, 2), 2, 2.0).transpose(0, 2, 3, 1)},
         attrs={"kernel_size": [2, 2], "strides": [2, 2], "paddings": [0, 0], "norm_type": 2.0, "data_format": "NHWC"},
         id="lp_pool2d_nhwc"),
    Case("take_along_axis", {"Input": np.arange(12.0).reshape(3, 4), "Index": np.array([[0, 3], [1, -1], [2, 2]])},
         lambda Input, Index, **a: {"Result": np.array([[0.0, 3.0], [5.0, 7.0], [10.0, 10.0]])}, attrs={"Axis": 1}),
    Case("take_along_axis", {"Input": np.arange(6).reshape(3, 2), "Index": np.array([[2, 0]])},
         lambda Input, Index, **a: {"Result": np.array([[4, 1]])}, attrs={"Axis": 0}, id="take_along_axis_0"),
    Case("index_sample", {"X": np.arange(8.0).reshape(2, 4), "Index": np.array([[3, 0, 3], [1, 2, 0]], np.int32)},
         lambda X, Index, **a: {"Out": np.array([[3.0, 0.0, 3.0], [5.0, 6.0, 4.0]])}),
    Case("lerp", {"X": f64(2, 3), "Y": f64(3), "Weight": np.array([0.25])},
         lambda X, Y, Weight, **a: {"Out": X + 0.25 * (Y - X)}),
    Case("empty", {}, lambda **a: {"Out": np.zeros((2, 3), np.int64)}, attrs={"shape": [2, 3], "dtype": 3}),
    Case("eye", {}, lambda **a: {"Out": np.eye(2, 3, dtype=np.float64)},
         attrs={"num_rows": 2, "num_columns": 3, "dtype": 6}),
    Case("linspace", {"Start": np.array([1.0]), "Stop": np.array([2.0]), "Num": np.array([5], np.int32)},
         lambda **a: {"Out": np.array([1.0, 1.25, 1.5, 1.75, 2.0], np.float32)}, attrs={"dtype": 5}),
    # the one-op runner names one output per duplicable slot; tests/test_backward_sweep_ops.py runs three
    Case("meshgrid", {"X": [np.arange(2.0)]}, lambda X, **a: {"Out": [X[0]]}),
    Case("diag_v2", {"X": np.array([1.0, 2.0])},
         lambda X, **a: {"Out": np.array([[7, 1, 7], [7, 7, 2], [7, 7, 7]], float)},
         attrs={"offset": 1, "padding_value": 7.0}),
    Case("diag_v2", {"X": np.arange(9.0).reshape(3, 3)}, lambda X, **a: {"Out": np.array([3.0, 7.0])},
         attrs={"offset": -1}, id="diag_v2_of_a_matrix"),
    Case("sigmoid_cross_entropy_with_logits", {"X": LOGITS, "Label": TARGETS}, sigmoid_ce_ref),
    Case("sigmoid_cross_entropy_with_logits", {"X": LOGITS, "Label": np.where(TARGETS > 0.5, -100.0, TARGETS)},
         sigmoid_ce_ref, attrs={"normalize": True}, id="sigmoid_ce_ignore_normalize"),
    Case("bce_loss", {"X": np.array([0.2, 0.9, 0.0, 1.0]), "Label": np.array([0.0, 1.0, 1.0, 0.0])},
         lambda X, Label, **a: {"Out": np.array([-np.log(0.8), -np.log(0.9), 100.0, 100.0])}),
    Case("huber_loss", {"X": f64(3, 4), "Y": f64(3, 4)}, huber_ref, attrs={"delta": 0.7}),
    Case("log_loss", {"Predicted": PROBS, "Labels": TARGETS},
         lambda Predicted, Labels, **a: {"Loss": -Labels * np.log(Predicted + 1e-4)
                                         - (1 - Labels) * np.log(1 - Predicted + 1e-4)}),
]
CASES += [Case("kldiv_loss", {"X": np.log(PROBS), "Target": np.where(TARGETS > 0.3, TARGETS, 0.0)}, kldiv_ref,
               attrs={"reduction": r}, id=f"kldiv_loss_{r}") for r in ("none", "sum", "mean", "batchmean")]


# -- small linear algebra, searches, running reductions, binary math, amax/amin, nll_loss --------------------
A3 = f64(2, 3, 4)
B3 = f64(2, 4, 5)
M = f64(3, 3) + 3 * np.eye(3)
V3 = f64(4, 3)
W3 = f64(4, 3)
SEQ = np.array([[1.0, 3.0, 5.0, 7.0], [2.0, 2.0, 4.0, 8.0]])
VALS = np.array([[3.0, 0.0, 9.0], [2.0, 5.0, 8.0]])
SCAN_IN = f64(3, 4, low=0.5, high=1.5) * np.sign(f64(3, 4))
NLL_X = np.log(f64(4, 3, low=0.1, high=1.0))
NLL_LABEL = np.array([0, 2, -100, 1])
NLL_W = np.array([0.5, 1.0, 2.0])


def nll_ref(X, Label, Weight=None, reduction="mean", ignore_index=-100, **a):
    w = np.ones(X.shape[1]) if Weight is None else Weight
    losses = np.array([0.0 if l == ignore_index else -w[l] * X[n, l] for n, l in enumerate(Label)])
    total = sum(w[l] for l in Label if l != ignore_index)
    out = {"none": losses, "sum": np.array(losses.sum()), "mean": np.array(losses.sum() / total)}[reduction]
    return {"Out": out, "Total_weight": np.array(total)}


CASES += [
    Case("bmm", {"X": A3, "Y": B3}, lambda X, Y, **a: {"Out": np.einsum("bmk,bkn->bmn", X, Y)}),
    Case("dot", {"X": V3, "Y": W3}, lambda X, Y, **a: {"Out": np.einsum("bi,bi->b", X, Y)}),
    Case("mv", {"X": f64(3, 4) + 0, "Vec": np.arange(4.0)}, lambda X, Vec, **a: {"Out": X @ Vec}),
    Case("addmm", {"Input": np.arange(3.0), "X": f64(2, 4), "Y": f64(4, 3)},
         lambda Input, X, Y, Beta, Alpha: {"Out": Beta * Input + Alpha * (X @ Y)}, attrs={"Beta": 0.5, "Alpha": 2.0}),
    Case("cross", {"X": V3, "Y": W3}, lambda X, Y, **a: {"Out": np.stack([
        X[:, 1] * Y[:, 2] - X[:, 2] * Y[:, 1], X[:, 2] * Y[:, 0] - X[:, 0] * Y[:, 2],
        X[:, 0] * Y[:, 1] - X[:, 1] * Y[:, 0]], axis=1)}),
    Case("trace", {"Input": A3}, lambda Input, **a: {"Out": np.array([Input[i, 0, 1] + Input[i, 1, 2] + Input[i, 2, 3]
                                                                      for i in range(2)])},
         attrs={"offset": 1, "axis1": 1, "axis2": 2}),
    Case("diagonal", {"Input": A3}, lambda Input, **a: {"Out": np.stack([Input[0, 0, :], Input[1, 1, :]], axis=-1)},
         attrs={"offset": 0, "axis1": 0, "axis2": 1}),
    Case("inverse", {"Input": M}, lambda Input, **a: {"Output": np.linalg.solve(Input, np.eye(3))}, rtol=1e-9),
    Case("searchsorted", {"SortedSequence": SEQ, "Values": VALS},
         lambda **a: {"Out": np.array([[1, 0, 4], [0, 3, 3]])}),
    Case("searchsorted", {"SortedSequence": SEQ, "Values": VALS},
         lambda **a: {"Out": np.array([[2, 0, 4], [2, 3, 4]], np.int32)}, attrs={"right": True, "out_int32": True},
         id="searchsorted_right"),
    Case("searchsorted", {"SortedSequence": SEQ[0], "Values": VALS},
         lambda **a: {"Out": np.array([[1, 0, 4], [1, 2, 4]])}, id="searchsorted_1d"),
    Case("where_index", {"Condition": np.array([[True, False], [False, True]])},
         lambda **a: {"Out": np.array([[0, 0], [1, 1]])}),
    Case("masked_select", {"X": np.arange(6.0).reshape(2, 3), "Mask": np.array([True, False, True])},
         lambda **a: {"Y": np.array([0.0, 2.0, 3.0, 5.0])}),
    Case("isclose", {"Input": np.array([1.0, 2.0, np.nan]), "Other": np.array([1.0 + 1e-9, 2.1, np.nan])},
         lambda **a: {"Out": np.array([True, False, True])}, attrs={"equal_nan": True}),
    Case("allclose", {"Input": np.array([1.0, 2.0]), "Other": np.array([1.0, 2.001])},
         lambda **a: {"Out": np.array(True)}, attrs={"rtol": "1e-3", "atol": "0"}),
    Case("equal_all", {"X": np.array([1, 2]), "Y": np.array([1, 3])}, lambda **a: {"Out": np.array(False)}),
    Case("cumprod", {"X": SCAN_IN}, lambda X, **a: {"Out": np.cumprod(X, axis=1)}, attrs={"dim": 1}),
    Case("cumprod", {"X": SCAN_IN}, lambda X, **a: {"Out": np.concatenate(
        [np.cumprod(X[::-1], axis=0)[::-1][1:], np.ones((1, 4))], axis=0)},
         attrs={"dim": 0, "reverse": True, "exclusive": True}, id="cumprod_reverse_exclusive"),
    Case("logcumsumexp", {"X": SCAN_IN}, lambda X, **a: {"Out": np.log(np.cumsum(np.exp(X), axis=-1))}),
    Case("cummax", {"x": np.array([1.0, 3.0, 2.0, 3.0, 0.0])},
         lambda **a: {"out": np.array([1.0, 3.0, 3.0, 3.0, 3.0]), "indices": np.array([0, 1, 1, 3, 3])}),
    Case("cummin", {"x": np.array([[2.0, 1.0, 4.0]])},
         lambda **a: {"out": np.array([[2.0, 1.0, 1.0]]), "indices": np.array([[0, 1, 1]], np.int32)},
         attrs={"axis": 1, "dtype": 2}),
    Case("atan2", {"X1": f64(3, 4), "X2": f64(4)}, lambda X1, X2, **a: {"Out": np.arctan2(X1, X2)}),
    Case("elementwise_fmax", {"X": np.array([1.0, np.nan, 3.0]), "Y": np.array([2.0, 5.0, np.nan])},
         lambda **a: {"Out": np.array([2.0, 5.0, 3.0])}),
    Case("elementwise_fmin", {"X": np.array([1.0, np.nan, 3.0]), "Y": np.array([2.0, 5.0, np.nan])},
         lambda **a: {"Out": np.array([1.0, 5.0, 3.0])}),
    Case("copysign", {"x": np.array([1.0, -2.0, 3.0]), "y": np.array([-0.0, 1.0, -5.0])},
         lambda **a: {"out": np.array([-1.0, 2.0, -3.0])}),
    Case("elementwise_heaviside", {"X": np.array([-1.0, 0.0, 2.0]), "Y": np.array([9.0, 0.5, 9.0])},
         lambda **a: {"Out": np.array([0.0, 0.5, 1.0])}),
    Case("reduce_amax", {"X": A3}, lambda X, **a: {"Out": X.max(axis=(0, 2), keepdims=True)},
         attrs={"dim": [0, -1], "keep_dim": True}),
    Case("reduce_amin", {"X": A3}, lambda X, **a: {"Out": np.array(X.min())}, attrs={"reduce_all": True}),
    Case("logit", {"X": np.array([0.25, 0.5, 0.0])}, lambda **a: {"Out": np.log(np.array([1 / 3, 1.0, 0.1 / 0.9]))},
         attrs={"eps": 0.1}),
    Case("stanh", {"X": f64(3, 4)}, lambda X, **a: {"Out": 1.7159 * np.tanh(0.67 * X)}),
]
CASES += [Case("nll_loss", {"X": NLL_X, "Label": NLL_LABEL, "Weight": NLL_W}, nll_ref, attrs={"reduction": r},
               id=f"nll_loss_{r}") for r in ("none", "sum", "mean")]


# -- unfold / fold, max unpooling, bilinear products ----------------------------------------------------------
def unfold_ref(X, kernel_sizes, strides, paddings, dilations, **a):
    """Window by window, tap by tap."""
    n, c, h, w = X.shape
    kh, kw = kernel_sizes
    top, left, bottom, right = paddings
    xp = np.pad(X, ((0, 0), (0, 0), (top, bottom), (left, right)))
    oh = (h + top + bottom - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (w + left + right - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, c * kh * kw, oh * ow), X.dtype)
    for ci in range(c):
        for i in range(kh):
            for j in range(kw):
                for r in range(oh):
                    for s in range(ow):
                        y[:, (ci * kh + i) * kw + j, r * ow + s] = \
                            xp[:, ci, r * strides[0] + i * dilations[0], s * strides[1] + j * dilations[1]]
    return {"Y": y}


UNFOLD_ATTRS = {"kernel_sizes": [2, 3], "strides": [1, 2], "paddings": [1, 0, 0, 1], "dilations": [2, 1]}
UNPOOL_X = np.array([[[[5.0, 7.0], [6.0, 8.0]]]])
UNPOOL_I = np.array([[[[0, 3], [9, 14]]]])
CASES += [
    Case("unfold", {"X": f64(2, 2, 4, 5)}, unfold_ref, attrs=UNFOLD_ATTRS),
    Case("fold", {"X": np.ones((1, 4, 4))},
         lambda X, **a: {"Y": np.array([[[[1, 2, 1], [2, 4, 2], [1, 2, 1]]]], float)},
         attrs={"output_sizes": [3, 3], "kernel_sizes": [2, 2]}),
    Case("unpool", {"X": UNPOOL_X, "Indices": UNPOOL_I},
         lambda **a: {"Out": np.array([5, 0, 0, 7, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 8, 0], float).reshape(1, 1, 4, 4)},
         attrs={"ksize": [2, 2], "strides": [2, 2], "paddings": [0, 0]}),
    Case("bilinear_tensor_product", {"X": f64(3, 2), "Y": f64(3, 4), "Weight": f64(5, 2, 4), "Bias": f64(1, 5)},
         lambda X, Y, Weight, Bias: {"Out": np.array([[X[b] @ Weight[k] @ Y[b] + Bias[0, k] for k in range(5)]
                                                       for b in range(3)])}),
]


# -- writes at positions; cutting, joining and repeating ------------------------------------------------------
X34 = np.arange(12.0).reshape(3, 4)
CASES += [
    Case("scatter_nd_add", {"X": np.zeros((3, 2)), "Index": np.array([[1], [1], [0]]), "Updates": np.ones((3, 2))},
         lambda **a: {"Out": np.array([[1.0, 1.0], [2.0, 2.0], [0.0, 0.0]])}),
    Case("index_add", {"X": np.zeros((2, 3)), "Index": np.array([2, 0, 2]), "AddValue": np.ones((2, 3))},
         lambda **a: {"Out": np.array([[1.0, 0.0, 2.0], [1.0, 0.0, 2.0]])}, attrs={"axis": 1}),
    Case("put_along_axis", {"Input": X34, "Index": np.array([[0], [3], [1]]), "Value": np.array([[-1.0]])},
         lambda Input, **a: {"Result": np.array([[-1, 1, 2, 3], [4, 5, 6, -1], [8, -1, 10, 11]], float)},
         attrs={"Axis": 1}),
    Case("put_along_axis", {"Input": X34, "Index": np.array([[0, 0]]), "Value": np.array([[1.0, 2.0]])},
         lambda Input, **a: {"Result": X34 + np.array([[1, 2, 0, 0], [0] * 4, [0] * 4])},
         attrs={"Axis": 0, "Reduce": "add"}, id="put_along_axis_add"),
    Case("index_put", {"x": X34, "indices": [np.array([0, 2]), np.array([1, 1])], "value": np.array([7.0])},
         lambda x, **a: {"out": np.where(np.isin(np.arange(12), [1, 9]).reshape(3, 4), 7.0, x)}),
    Case("masked_fill", {"x": X34, "mask": np.array([True, False, False, True]), "value": np.array(0.5)},
         lambda x, mask, value: {"out": np.where(mask, 0.5, x)}),
    Case("strided_slice", {"Input": X34}, lambda Input, **a: {"Out": Input[2:0:-1, ::2]},
         attrs={"axes": [0, 1], "starts": [-1, 0], "ends": [0, 10], "strides": [-1, 2]}),
    Case("strided_slice", {"Input": X34}, lambda Input, **a: {"Out": Input[1, 1:3]},
         attrs={"axes": [0, 1], "starts": [1, 1], "ends": [2, 3], "strides": [1, 1], "decrease_axis": [0]},
         id="strided_slice_decrease"),
    Case("crop_tensor", {"X": X34}, lambda X, **a: {"Out": X[1:3, 1:]}, attrs={"shape": [2, -1], "offsets": [1, 1]}),
    Case("unbind", {"X": X34[:1]}, lambda X, **a: {"Out": [X[0]]}),
    Case("broadcast_tensors", {"X": [np.arange(3.0)]}, lambda X, **a: {"Out": [X[0]]}),
    Case("diag_embed", {"Input": np.array([[1.0, 2.0]])},
         lambda **a: {"Out": np.array([[[0, 1, 0], [0, 0, 2], [0, 0, 0]]], float)}, attrs={"offset": 1}),
    Case("repeat_interleave", {"X": X34}, lambda X, **a: {"Out": np.repeat(X, 2, axis=1)},
         attrs={"Repeats": 2, "dim": 1}),
    Case("repeat_interleave", {"X": X34, "RepeatsTensor": np.array([1, 0, 2])},
         lambda X, **a: {"Out": X[[0, 2, 2]]}, id="repeat_interleave_tensor"),
    Case("kron", {"X": np.array([[1.0, 2.0]]), "Y": np.array([[1.0], [10.0]])},
         lambda **a: {"Out": np.array([[1.0, 2.0], [10.0, 20.0]])}),
    Case("multiplex", {"X": [X34, -X34], "Ids": np.array([[1], [0], [1]], np.int32)},
         lambda X, Ids: {"Out": np.stack([-X34[0], X34[1], -X34[2]])}),
]


# -- determinants, solves, Cholesky, matrix powers, multi_dot -------------------------------------------------
SPD = f64(2, 3, 3)
SPD = SPD @ SPD.transpose(0, 2, 1) + 3 * np.eye(3)
RHS = f64(2, 3, 2)
CASES += [
    Case("determinant", {"Input": SPD}, lambda Input: {"Out": np.array([np.linalg.det(m) for m in Input])},
         rtol=1e-9),
    Case("slogdeterminant", {"Input": np.array([[[2.0, 0.0], [0.0, -3.0]]])},
         lambda **a: {"Out": np.array([[-1.0], [np.log(6.0)]])}),
    Case("solve", {"X": SPD, "Y": RHS}, lambda X, Y: {"Out": np.stack([np.linalg.inv(a) @ b for a, b in zip(X, Y)])},
         rtol=1e-9),
    Case("solve", {"X": SPD[0], "Y": RHS[0, :, 0]}, lambda X, Y: {"Out": np.linalg.inv(X) @ Y}, rtol=1e-9,
         id="solve_vector"),
    Case("triangular_solve", {"X": SPD, "Y": RHS},
         lambda X, Y, **a: {"Out": np.stack([np.linalg.inv(np.tril(a, -1) + np.eye(3)).T @ b for a, b in zip(X, Y)])},
         attrs={"upper": False, "transpose": True, "unitriangular": True}, rtol=1e-9),
    Case("cholesky", {"X": SPD}, lambda X, upper: {"Out": np.stack([np.linalg.cholesky(m).T for m in X])},
         attrs={"upper": True}, rtol=1e-9),
    Case("cholesky_solve", {"X": RHS, "Y": np.stack([np.linalg.cholesky(m) for m in SPD])},
         lambda X, Y, **a: {"Out": np.stack([np.linalg.inv(s) @ b for s, b in zip(SPD, X)])}, rtol=1e-8),
    Case("matrix_power", {"X": SPD}, lambda X, n: {"Out": np.stack([np.linalg.inv(m @ m) for m in X])},
         attrs={"n": -2}, rtol=1e-9),
    Case("multi_dot", {"X": [np.arange(3.0), f64(3, 4), f64(4, 2)]}, lambda X: {"Out": X[0] @ X[1] @ X[2]}),
]


# -- logsumexp, dist, renorm, kthvalue, reduce_as; labels; integer ops; new tensors; temporal_shift -------------
def renorm_ref(X, p, axis, max_norm):
    out = X.copy()
    for i in range(X.shape[axis]):
        s = np.take(X, i, axis=axis)
        n = (np.abs(s) ** p).sum() ** (1 / p)
        if n > max_norm:
            idx = [slice(None)] * X.ndim
            idx[axis] = i
            out[tuple(idx)] = s * max_norm / (n + 1e-7)
    return {"Out": out}


def temporal_shift_ref(X, seg_num, shift_ratio, **a):
    nt, c, h, w = X.shape
    v = X.reshape(nt // seg_num, seg_num, c, h, w)
    out = np.zeros_like(v)
    c1, c2 = int(c * shift_ratio), int(c * 2 * shift_ratio)
    for t in range(seg_num):
        for ch in range(c):
            src = t - 1 if ch < c1 else t + 1 if ch < c2 else t
            if 0 <= src < seg_num:
                out[:, t, ch] = v[:, src, ch]
    return {"Out": out.reshape(X.shape)}


CASES += [
    Case("logsumexp", {"X": A3}, lambda X, **a: {"Out": np.log(np.exp(X).sum(axis=(0, 2)))}, attrs={"axis": [0, 2]}),
    Case("logsumexp", {"X": np.array([1000.0, 1000.0])}, lambda X, **a: {"Out": np.array(1000.0 + np.log(2.0))},
         attrs={"reduce_all": True}, id="logsumexp_large"),
    Case("dist", {"X": f64(2, 3), "Y": f64(3)},
         lambda X, Y, p: {"Out": np.array((np.abs(X - Y) ** p).sum() ** (1 / p))},
         attrs={"p": 3.0}),
    Case("renorm", {"X": A3}, renorm_ref, attrs={"p": 2.0, "axis": 1, "max_norm": 1.5}),
    Case("kthvalue", {"X": np.array([[3.0, 1.0, 2.0], [5.0, 6.0, 4.0]])},
         lambda **a: {"Out": np.array([2.0, 5.0]), "Indices": np.array([2, 0])}, attrs={"k": 2}),
    Case("reduce_as", {"x": A3, "target": np.zeros((3, 1))}, lambda x, target: {"out": x.sum(axis=(0, 2))[:, None]}),
    Case("label_smooth", {"X": np.eye(3)[[0, 2]]}, lambda X, epsilon: {"Out": 0.9 * X + 0.1 / 3},
         attrs={"epsilon": 0.1}),
    Case("sequence_mask", {"X": np.array([1, 3, 0])},
         lambda **a: {"Y": np.array([[1, 0, 0], [1, 1, 1], [0, 0, 0]], np.int64)}),
    Case("shard_index", {"X": np.array([[1], [6], [12], [19]])},
         lambda **a: {"Out": np.array([[-1], [1], [-1], [-1]])},
         attrs={"index_num": 20, "nshards": 4, "shard_id": 1}),
    Case("bincount", {"X": np.array([1, 1, 3]), "Weights": np.array([0.5, 1.0, 2.0])},
         lambda **a: {"Out": np.array([0.0, 1.5, 0.0, 2.0, 0.0])}, attrs={"minlength": 5}),
    Case("bitwise_left_shift", {"x": np.array([1, -3], np.int32), "y": np.array([2, 1], np.int32)},
         lambda **a: {"out": np.array([4, -6], np.int32)}),
    Case("bitwise_right_shift", {"x": np.array([-8, 8], np.int32), "y": np.array([1, 1], np.int32)},
         lambda **a: {"out": np.array([0x7FFFFFFC, 4], np.int32)}, attrs={"is_arithmetic": False},
         id="bitwise_right_shift_logical"),
    Case("is_empty", {"X": np.zeros((2, 0))}, lambda **a: {"Out": np.array(True)}),
    Case("nextafter", {"x": np.array([1.0, 0.0]), "y": np.array([2.0, -1.0])},
         lambda **a: {"out": np.array([1.0 + 2.0 ** -52, -5e-324])}),
    Case("logspace", {"Start": np.array([0.0]), "Stop": np.array([3.0]), "Num": np.array([4], np.int32),
                      "Base": np.array([2.0])},
         lambda **a: {"Out": np.array([1.0, 2.0, 4.0, 8.0], np.float32)}, attrs={"dtype": 5}),
    Case("tril_indices", {}, lambda **a: {"out": np.array([[0, 1, 1, 2, 2, 2], [0, 0, 1, 0, 1, 2]])},
         attrs={"rows": 3, "cols": 3, "offset": 0}),
    Case("triu_indices", {}, lambda **a: {"out": np.array([[0, 0, 1], [1, 2, 2]], np.int32)},
         attrs={"row": 3, "col": 3, "offset": 1, "dtype": 2}),
    Case("fill_diagonal_tensor", {"X": np.zeros((2, 3)), "Y": np.array([5.0, 6.0])},
         lambda **a: {"Out": np.array([[0, 5, 0], [0, 0, 6]], float)}, attrs={"offset": 1}),
    Case("temporal_shift", {"X": f64(4, 4, 1, 2)}, temporal_shift_ref, attrs={"seg_num": 2, "shift_ratio": 0.25}),
]


CASES += [
    Case("randint", {}, lambda **a: {}, attrs={"low": -2, "high": 3, "shape": [4, 5]}, random=True),
    Case("randperm", {}, lambda **a: {}, attrs={"n": 6}, random=True),
]


# -- draws, assert, histogram, matrix_rank, affine_grid, row_conv ---------------------------------------------
def affine_grid_ref(Theta, output_shape, align_corners=True, **a):
    n, _, h, w = output_shape
    xs, ys = np.linspace(-1, 1, w), np.linspace(-1, 1, h)
    if not align_corners:
        xs, ys = xs * (w - 1) / w, ys * (h - 1) / h
    out = np.zeros((n, h, w, 2))
    for b in range(n):
        for i in range(h):
            for j in range(w):
                out[b, i, j] = Theta[b] @ np.array([xs[j], ys[i], 1.0])
    return {"Output": out}


def row_conv_ref(X, Filter):
    out = np.zeros_like(X)
    for t in range(X.shape[-2]):
        for k in range(Filter.shape[0]):
            if t + k < X.shape[-2]:
                out[..., t, :] += X[..., t + k, :] * Filter[k]
    return {"Out": out}


CASES += [
    Case("bernoulli", {"X": np.array([0.0, 1.0, 1.0, 0.0])}, lambda X: {"Out": X}),
    Case("poisson", {"X": np.zeros((2, 3))}, lambda X: {"Out": X}),
    Case("multinomial", {"X": np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])},
         lambda X, **a: {"Out": np.array([[1, 1], [2, 2]])}, attrs={"num_samples": 2, "replacement": True}),
    Case("assert", {"Cond": np.array([True])}, lambda **a: {}),
    Case("histogram", {"X": np.array([1.0, 2.0, 2.0, 4.0, 9.0])}, lambda **a: {"Out": np.array([1, 2, 1])},
         attrs={"bins": 3, "min": 0.0, "max": 6.0}),
    Case("histogram", {"X": np.array([1.0, 2.0, 2.0, 4.0])}, lambda **a: {"Out": np.array([1, 2, 0, 1])},
         attrs={"bins": 4}, id="histogram_own_range"),
    Case("matrix_rank", {"X": np.array([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 1.0]]])},
         lambda **a: {"Out": np.array([1, 2])}),
    Case("affine_grid", {"Theta": f64(2, 2, 3)}, affine_grid_ref, attrs={"output_shape": [2, 1, 3, 4]}),
    Case("affine_grid", {"Theta": f64(1, 2, 3)}, affine_grid_ref,
         attrs={"output_shape": [1, 1, 2, 3], "align_corners": False}, id="affine_grid_centres"),
    Case("row_conv", {"X": f64(2, 5, 3), "Filter": f64(2, 3)}, row_conv_ref),
]


# -- decompositions: the parts a reference fixes without a sign convention --------------------------------------
TALL = f64(2, 4, 3)
CASES += [
    Case("svd", {"X": TALL}, lambda X, **a: {"S": np.sqrt(np.linalg.eigvalsh(X.transpose(0, 2, 1) @ X))[:, ::-1]},
         check=("S",), rtol=1e-9, atol=1e-9),
    Case("eigh", {"X": SPD}, lambda X, **a: {"Eigenvalues": np.sort(np.linalg.eigvals(X).real, axis=-1)},
         check=("Eigenvalues",), rtol=1e-9),
    Case("eigvalsh", {"X": np.tril(SPD)}, lambda X, **a: {"Eigenvalues": np.sort(np.linalg.eigvals(SPD).real, axis=-1)},
         check=("Eigenvalues",), rtol=1e-9, id="eigvalsh_reads_the_lower_triangle"),
    # Q and R up to signs: tests/test_backward_sweep_ops.py rebuilds X from them; here the device path runs
    Case("qr", {"X": TALL}, lambda X, **a: {}, random=True, id="qr_runs"),
]


# -- special functions: Python's math module and known values as the oracle ------------------------------------
GAMMA_X = np.array([-2.5, -0.3, 0.2, 1.0, 2.5, 7.0, 31.5])
ERF_X = np.array([-4.0, -1.2, 0.0, 0.3, 2.49, 2.51, 6.0])
BESSEL_X = np.array([-20.0, -2.5, 0.0, 1.0, 14.9, 15.1])
CASES += [
    Case("lgamma", {"X": GAMMA_X}, lambda X: {"Out": np.array([math.lgamma(v) for v in X])}, rtol=1e-12, atol=1e-12),
    Case("gammaln", {"x": GAMMA_X.astype(np.float32)},
         lambda x: {"out": np.array([math.lgamma(v) for v in x], np.float32)}, rtol=1e-6),
    # digamma(1) = -Euler's gamma; digamma(x + 1) = digamma(x) + 1/x; reflection at -0.5
    Case("digamma", {"X": np.array([1.0, 2.0, 0.5, -0.5])},
         lambda X: {"Out": np.array([-0.5772156649015329, 0.42278433509846713, -1.9635100260214235,
                                     0.03648997397857652])}, rtol=1e-12),
    Case("polygamma", {"x": np.array([1.0, 2.0])}, lambda x, n: {"out": np.array([math.pi ** 2 / 6,
                                                                                 math.pi ** 2 / 6 - 1])},
         attrs={"n": 1}, rtol=1e-12),
    Case("erf", {"X": ERF_X}, lambda X: {"Out": np.array([math.erf(v) for v in X])}, rtol=1e-13, atol=1e-15),
    Case("erfinv", {"X": np.array([math.erf(v) for v in (-1.7, -0.2, 0.0, 0.9, 2.2)] + [1.0])},
         lambda X: {"Out": np.array([-1.7, -0.2, 0.0, 0.9, 2.2, np.inf])}, rtol=1e-10),
    Case("i0", {"x": BESSEL_X}, lambda x: {"out": np.i0(x)}, rtol=1e-9),
    Case("i0e", {"x": BESSEL_X}, lambda x: {"out": np.i0(x) * np.exp(-np.abs(x))}, rtol=1e-9),
    # I1 = I0', by central differences of NumPy's I0
    Case("i1", {"x": BESSEL_X}, lambda x: {"out": (np.i0(x + 1e-5) - np.i0(x - 1e-5)) / 2e-5}, rtol=1e-7, atol=1e-9),
    Case("i1e", {"x": BESSEL_X}, lambda x: {"out": (np.i0(x + 1e-5) - np.i0(x - 1e-5)) / 2e-5 * np.exp(-np.abs(x))},
         rtol=1e-7, atol=1e-9),
]


# -- complex parts and Fourier transforms: DFT sums written out -------------------------------------------------
def dft(x, sign, scale):
    """sum over n of x[n] exp(sign 2 pi i k n / N), times scale, along the last axis."""
    n = x.shape[-1]
    k = np.arange(n)
    return scale * (x[..., None, :] * np.exp(sign * 2j * np.pi * np.outer(k, k) / n)).sum(-1)


SIGNAL = f64(2, 6)
SPECTRUM = (f64(2, 4) + 1j * f64(2, 4)).astype(np.complex128)
CASES += [
    Case("complex", {"X": np.array([1.0, 2.0], np.float32), "Y": np.array([3.0], np.float32)},
         lambda X, Y: {"Out": np.array([1 + 3j, 2 + 3j], np.complex64)}),
    Case("real", {"X": SPECTRUM}, lambda X: {"Out": X.real}),
    Case("imag", {"X": SPECTRUM}, lambda X: {"Out": X.imag}),
    Case("conj", {"X": SPECTRUM}, lambda X: {"Out": X.real - 1j * X.imag}),
    Case("angle", {"X": np.array([1j, -1.0, 1 + 1j])}, lambda X: {"Out": np.array([np.pi / 2, np.pi, np.pi / 4])}),
    Case("as_complex", {"X": np.array([[1.0, 2.0], [3.0, -4.0]])}, lambda X: {"Out": np.array([1 + 2j, 3 - 4j])}),
    Case("as_real", {"X": np.array([1 + 2j, 3 - 4j])}, lambda X: {"Out": np.array([[1.0, 2.0], [3.0, -4.0]])}),
    Case("fft_r2c", {"X": SIGNAL}, lambda X, **a: {"Out": dft(X, -1, 1.0)[:, :4]},
         attrs={"axes": [1], "normalization": "backward", "forward": True, "onesided": True}, rtol=1e-10, atol=1e-12),
    Case("fft_r2c", {"X": SIGNAL}, lambda X, **a: {"Out": dft(X, 1, 1 / np.sqrt(6))},
         attrs={"axes": [-1], "normalization": "ortho", "forward": False, "onesided": False}, rtol=1e-10, atol=1e-12,
         id="fft_r2c_inverse_ortho_full"),
    Case("fft_c2c", {"X": SPECTRUM}, lambda X, **a: {"Out": dft(X, 1, 1 / 4)},
         attrs={"axes": [1], "normalization": "backward", "forward": False}, rtol=1e-10, atol=1e-12),
    # the real signal whose onesided spectrum is X: the Hermitian extension's inverse DFT
    Case("fft_c2r", {"X": SPECTRUM}, lambda X, **a: {"Out": dft(np.concatenate(
        [X.real[:, :1], X[:, 1:3], X.real[:, 3:], np.conj(X[:, 2:0:-1])], axis=1), 1, 1 / 6).real},
         attrs={"axes": [1], "normalization": "backward", "forward": False, "last_dim_size": 6}, rtol=1e-10,
         atol=1e-12),
]


# -- distinct values and the mode ----------------------------------------------------------------------------------
CASES += [
    Case("unique", {"X": np.array([3, 1, 3, 2, 1, 3])},
         lambda **a: {"Out": np.array([1, 2, 3]), "Indices": np.array([1, 3, 0]),
                      "Index": np.array([2, 0, 2, 1, 0, 2]), "Counts": np.array([2, 1, 3])}),
    Case("unique", {"X": np.array([[1.0, 2.0], [0.0, 5.0], [1.0, 2.0]])},
         lambda **a: {"Out": np.array([[0.0, 5.0], [1.0, 2.0]]), "Indices": np.array([1, 0]),
                      "Index": np.array([1, 0, 1]), "Counts": np.array([1, 2])}, attrs={"axis": [0]},
         id="unique_rows"),
    Case("unique_consecutive", {"X": np.array([1, 1, 2, 2, 2, 1, 3])},
         lambda **a: {"Out": np.array([1, 2, 1, 3]), "Index": np.array([0, 0, 1, 1, 1, 2, 3]),
                      "Counts": np.array([2, 3, 1, 1])}),
    Case("unique_consecutive", {"X": np.array([[1, 1, 2], [1, 1, 2]])},
         lambda **a: {"Out": np.array([[1, 2], [1, 2]]), "Index": np.array([0, 0, 1]), "Counts": np.array([2, 1])},
         attrs={"axis": [1]}, id="unique_consecutive_columns"),
    # ties: the smallest of the most frequent values, at its last position
    Case("mode", {"X": np.array([[2.0, 1.0, 2.0, 1.0, 5.0], [7.0, 3.0, 3.0, 7.0, 7.0]])},
         lambda **a: {"Out": np.array([1.0, 7.0]), "Indices": np.array([3, 4])}),
    Case("mode", {"X": np.array([[4.0, 4.0], [1.0, 4.0]])},
         lambda **a: {"Out": np.array([[1.0, 4.0]]), "Indices": np.array([[1, 1]])}, attrs={"axis": 0, "keepdim": True},
         id="mode_keepdim"),
]


# -- einsum: the sums written as loops ---------------------------------------------------------------------------
EA, EB = f64(2, 3, 4), f64(2, 4, 5)


def batched_matmul_loops(ea, eb):
    out = np.zeros((2, 3, 5))
    for b in range(2):
        for i in range(3):
            for k in range(5):
                out[b, i, k] = sum(ea[b, i, j] * eb[b, j, k] for j in range(4))
    return out


CASES += [
    Case("einsum", {"Operands": [EA, EB]}, lambda Operands, equation: {"Out": batched_matmul_loops(*Operands)},
         attrs={"equation": "...ij,...jk->...ik"}),
    Case("einsum", {"Operands": [EA[0], EB[0]]}, lambda Operands, equation: {"Out": batched_matmul_loops(EA, EB)[0]},
         attrs={"equation": "ij,jk"}, id="einsum_implicit_output"),
    Case("einsum", {"Operands": [EA[:, :, :3]]}, lambda Operands, equation: {"Out": np.array(
        sum(EA[b, i, i] for b in range(2) for i in range(3)))}, attrs={"equation": "bii->"}, id="einsum_trace"),
]


# -- grid_sampler: bilinear sampling written pixel by pixel ------------------------------------------------------
def grid_sample_ref(X, Grid, mode="bilinear", padding_mode="zeros", align_corners=True):
    n, c, h, w = X.shape
    out = np.zeros((n, c) + Grid.shape[1:3])
    for b in range(n):
        for i in range(Grid.shape[1]):
            for j in range(Grid.shape[2]):
                gx, gy = Grid[b, i, j]
                px = (gx + 1) * (w - 1) / 2 if align_corners else ((gx + 1) * w - 1) / 2
                py = (gy + 1) * (h - 1) / 2 if align_corners else ((gy + 1) * h - 1) / 2
                if padding_mode == "border":
                    px, py = min(max(px, 0), w - 1), min(max(py, 0), h - 1)
                x0, y0 = int(np.floor(px)), int(np.floor(py))
                fx, fy = px - x0, py - y0
                for yy, xx, wt in ((y0, x0, (1 - fx) * (1 - fy)), (y0, x0 + 1, fx * (1 - fy)),
                                   (y0 + 1, x0, (1 - fx) * fy), (y0 + 1, x0 + 1, fx * fy)):
                    if 0 <= yy < h and 0 <= xx < w:
                        out[b, :, i, j] += wt * X[b, :, yy, xx]
    return {"Output": out}


GRID = f64(2, 3, 2, 2, low=-1.2, high=1.2)
CASES += [
    Case("grid_sampler", {"X": f64(2, 3, 4, 5), "Grid": GRID}, grid_sample_ref),
    Case("grid_sampler", {"X": f64(2, 3, 4, 5), "Grid": GRID}, grid_sample_ref,
         attrs={"padding_mode": "border", "align_corners": False}, id="grid_sampler_border_centres"),
]


# -- spectral_norm: sigma by NumPy's SVD once the power iteration has converged -----------------------------------
SN_W = f64(3, 2, 2)
CASES += [
    Case("spectral_norm", {"Weight": SN_W, "U": f64(3), "V": f64(4)},
         lambda Weight, **a: {"Out": Weight / np.linalg.svd(Weight.reshape(3, 4), compute_uv=False)[0]},
         attrs={"dim": 0, "power_iters": 100}, rtol=1e-8),
    Case("spectral_norm", {"Weight": SN_W, "U": f64(2), "V": f64(6)},
         lambda Weight, **a: {"Out": Weight / np.linalg.svd(Weight.transpose(1, 0, 2).reshape(2, 6),
                                                              compute_uv=False)[0]},
         attrs={"dim": 1, "power_iters": 100}, rtol=1e-8, id="spectral_norm_dim1"),
]
