"""Cases for kernelcore/ops/pointwise.py, elementwise_binary.py, reductions.py, host_values.py, dims.py, select.py,
cumsum in scan.py and layer_norm in norm.py (the ops Transformer/BERT programs and paddle.* tensor functions write).
References are plain NumPy written from Paddle's documented semantics, with loops and math.erf where that is the
plainest way to say it (they need not be fast). VarType codes: 0 bool, 2 int32, 3 int64, 5 float32, 6 float64."""
import math

import numpy as np

from . import Case

rng = np.random.default_rng(7)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def pos32(*shape):
    return rng.uniform(0.2, 2.0, shape).astype(np.float32)


def as_(like, v):
    return np.asarray(v, dtype=like.dtype)


def gelu_ref(X, approximate=False, **a):
    x = X.astype(np.float64)
    if approximate:
        out = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    else:
        out = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))(x)
    return {"Out": as_(X, out)}


def layer_norm_ref(X, Scale=None, Bias=None, begin_norm_axis=1, epsilon=1e-5, **a):
    x = X.astype(np.float64)
    left = int(np.prod(X.shape[:begin_norm_axis]))
    rows = x.reshape(left, -1)
    ys, means, vars_ = [], [], []
    for r in rows:  # row by row, as the definition reads
        m = r.sum() / r.size
        v = ((r - m) ** 2).sum() / r.size
        y = (r - m) / math.sqrt(v + epsilon)
        if Scale is not None:
            y = y * Scale.astype(np.float64)
        if Bias is not None:
            y = y + Bias.astype(np.float64)
        ys.append(y)
        means.append(m)
        vars_.append(v)
    return {"Y": as_(X, np.array(ys).reshape(X.shape)), "Mean": as_(X, means), "Variance": as_(X, vars_)}


def log_softmax_ref(X, axis=-1, **a):
    x = X.astype(np.float64)
    return {"Out": as_(X, x - np.log(np.exp(x).sum(axis=axis, keepdims=True)))}


def per_element(fn, dtype=None):
    """Out[i, j] = fn(X[i, j], Y[i, j]) (Y broadcast along rows), one Python call per element."""
    def ref(X, Y, **a):
        Yb = np.broadcast_to(Y, X.shape)
        out = [[fn(p, q) for p, q in zip(xr, yr)] for xr, yr in zip(X.tolist(), Yb.tolist())]
        return {"Out": np.array(out, dtype=dtype or X.dtype)}
    return ref


def binary(fn):
    return lambda X, Y, **a: {"Out": as_(X, fn(X, Y))}


def unsqueeze_ref(X, axes=(), **a):
    shape = list(X.shape)
    for ax in axes:
        shape.insert(ax if ax >= 0 else len(shape) + ax + 1, 1)
    return {"Out": X.reshape(shape), "XShape": np.empty((0,) + X.shape, X.dtype)}


def squeeze_ref(X, axes=(), **a):
    keep = [d for i, d in enumerate(X.shape) if not (X.shape[i] == 1 and (not axes or i in [x % X.ndim for x in axes]))]
    return {"Out": X.reshape(keep), "XShape": np.empty((0,) + X.shape, X.dtype)}


def flatten_ref(X, start_axis=1, stop_axis=1, **a):
    s, e = start_axis % X.ndim, stop_axis % X.ndim
    shape = X.shape[:s] + (int(np.prod(X.shape[s:e + 1])),) + X.shape[e + 1:]
    return {"Out": X.reshape(shape), "XShape": np.empty((0,) + X.shape, X.dtype)}


def gather_nd_ref(X, Index, **a):
    out = [X[tuple(ix)] for ix in Index.reshape(-1, Index.shape[-1])]
    return {"Out": np.array(out).reshape(Index.shape[:-1] + X.shape[Index.shape[-1]:])}


def scatter_ref(X, Ids, Updates, overwrite=True, **a):
    out = X.copy()
    if overwrite:
        for i, row in zip(Ids, Updates):
            out[i] = row
    else:
        for i in Ids:
            out[i] = 0
        for i, row in zip(Ids, Updates):
            out[i] += row
    return {"Out": out}


def cumsum_ref(X, axis=-1, flatten=False, exclusive=False, reverse=False, **a):
    x = X.reshape(-1) if flatten else X
    ax = 0 if flatten else axis % X.ndim
    n = x.shape[ax]
    out = np.zeros_like(x)
    for i in range(n):
        idx = range(i + 1, n) if reverse else range(0, i)
        if not exclusive:
            idx = list(idx) + [i]
        sl = [slice(None)] * x.ndim
        sl[ax] = i
        acc = np.zeros_like(np.take(x, 0, axis=ax))
        for j in idx:
            acc = acc + np.take(x, j, axis=ax)
        out[tuple(sl)] = acc
    return {"Out": out}


def tril_ref(X, diagonal=0, lower=False, **a):
    n, m = X.shape[-2:]
    keep = np.array([[(j - i <= diagonal) if lower else (j - i >= diagonal) for j in range(m)] for i in range(n)])
    return {"Out": np.where(keep, X, 0).astype(X.dtype)}


def top_k_ref(X, k=1, axis=-1, largest=True, **a):
    xm = np.moveaxis(X, axis, -1)
    vals, inds = [], []
    for row in xm.reshape(-1, xm.shape[-1]):
        order = sorted(range(len(row)), key=lambda i: (-float(row[i]) if largest else float(row[i]), i))[:k]
        vals.append(row[order])
        inds.append(order)
    shape = xm.shape[:-1] + (k,)
    return {"Out": np.moveaxis(np.array(vals, X.dtype).reshape(shape), -1, axis),
            "Indices": np.moveaxis(np.array(inds, np.int64).reshape(shape), -1, axis)}


def one_hot_ref(X, depth=-1, dtype=5, allow_out_of_range=False, **a):
    out = np.zeros(X.shape + (depth,), {5: np.float32, 3: np.int64}[dtype])
    for idx in np.ndindex(*X.shape):
        if 0 <= X[idx] < depth:
            out[idx + (X[idx],)] = 1
    return {"Out": out}


def reduce_ref(fn, dtype=None):
    def ref(X, dim=(0,), keep_dim=False, reduce_all=False, **a):
        axes = tuple(range(X.ndim)) if reduce_all or not dim else tuple(d % X.ndim for d in dim)
        return {"Out": np.asarray(fn(X, axis=axes, keepdims=keep_dim)).astype(dtype or X.dtype)}
    return ref


X3 = f32(2, 3, 4)
DIST = (rng.permutation(24).astype(np.float32) - 12).reshape(2, 3, 4) / 4
IDS = np.array([[1, 4, 0], [3, 3, 2]], np.int64)
B1 = rng.integers(0, 2, (3, 4)).astype(bool)
B2 = rng.integers(0, 2, (4,)).astype(bool)
I1 = rng.integers(-50, 50, (3, 4)).astype(np.int32)
I2 = rng.integers(-50, 50, (3, 4)).astype(np.int32)

CASES = [
    # unary math
    Case("abs", {"X": f32(3, 4)}, lambda X: {"Out": np.abs(X)}),
    Case("sqrt", {"X": pos32(3, 4)}, lambda X: {"Out": as_(X, np.sqrt(X.astype(np.float64)))}),
    Case("rsqrt", {"X": pos32(3, 4)}, lambda X: {"Out": as_(X, 1 / np.sqrt(X.astype(np.float64)))}, rtol=1e-5),
    Case("log", {"X": pos32(3, 4)}, lambda X: {"Out": as_(X, np.log(X.astype(np.float64)))}),
    Case("pow", {"X": pos32(3, 4)}, lambda X, factor: {"Out": as_(X, X.astype(np.float64) ** factor)},
         attrs={"factor": 1.5}, rtol=1e-5),
    Case("pow", {"X": f32(3, 4), "FactorTensor": np.array([2.0], np.float32)},
         lambda X, FactorTensor, factor: {"Out": X * X}, attrs={"factor": 5.0}, rtol=1e-5, id="pow_tensor"),
    Case("clip", {"X": f32(3, 4)}, lambda X, min, max: {"Out": np.minimum(np.maximum(X, min), max).astype(X.dtype)},
         attrs={"min": -0.5, "max": 0.7}),
    Case("clip", {"X": f32(3, 4), "Min": np.array([0.1], np.float32)},
         lambda X, Min, min, max: {"Out": np.minimum(np.maximum(X, 0.1), max).astype(X.dtype)},
         attrs={"min": -9.0, "max": 1.0}, id="clip_min_tensor"),
    Case("gelu", {"X": f32(4, 5) * 3}, gelu_ref, rtol=1e-5, atol=1e-6, id="gelu_exact"),
    Case("gelu", {"X": f32(4, 5) * 3}, gelu_ref, attrs={"approximate": True}, rtol=1e-5, atol=1e-6, id="gelu_tanh"),
    Case("gelu", {"X": rng.standard_normal((50,)) * 4}, gelu_ref, rtol=1e-6, atol=1e-7, id="gelu_f64"),
    Case("log_softmax", {"X": f32(3, 4, 5)}, log_softmax_ref, attrs={"axis": 1}, rtol=1e-5, atol=1e-6),
    Case("layer_norm", {"X": f32(2, 3, 8), "Scale": f32(8), "Bias": f32(8)}, layer_norm_ref,
         attrs={"begin_norm_axis": 2, "epsilon": 1e-5}, rtol=1e-4, atol=1e-5, id="layer_norm_last"),
    Case("layer_norm", {"X": f32(4, 2, 3)}, layer_norm_ref, attrs={"begin_norm_axis": 1, "epsilon": 1e-5},
         rtol=1e-4, atol=1e-5, id="layer_norm_no_affine"),
    # binaries
    Case("elementwise_max", {"X": f32(3, 4), "Y": f32(4)}, binary(np.maximum)),
    Case("elementwise_min", {"X": f32(2, 3, 4), "Y": f32(3)},
         lambda X, Y, axis: {"Out": np.minimum(X, Y.reshape(1, 3, 1))}, attrs={"axis": 1}, id="min_axis1"),
    Case("elementwise_mod", {"X": I1, "Y": np.array([7, -5, 3, 9], np.int32)},
         per_element(lambda a, b: a - b * math.floor(a / b))),
    Case("elementwise_pow", {"X": pos32(3, 4), "Y": f32(4)}, binary(lambda x, y: x.astype(np.float64) ** y),
         rtol=1e-5),
    Case("logical_and", {"X": B1, "Y": B2}, per_element(lambda a, b: a and b)),
    Case("logical_or", {"X": B1, "Y": B2}, per_element(lambda a, b: a or b)),
    Case("logical_xor", {"X": B1, "Y": B2}, per_element(lambda a, b: a != b)),
    Case("bitwise_and", {"X": I1, "Y": I2}, per_element(lambda a, b: a & b)),
    Case("bitwise_or", {"X": I1, "Y": I2}, per_element(lambda a, b: a | b)),
    Case("bitwise_xor", {"X": I1, "Y": I2}, per_element(lambda a, b: a ^ b)),
    Case("bitwise_not", {"X": I1}, lambda X: {"Out": as_(X, [[-a - 1 for a in r] for r in X])}),
    # reductions
    Case("reduce_max", {"X": X3}, reduce_ref(np.max), attrs={"dim": [1]}),
    Case("reduce_min", {"X": X3}, reduce_ref(np.min), attrs={"dim": [0, 2], "keep_dim": True}),
    Case("reduce_prod", {"X": X3}, reduce_ref(np.prod), attrs={"dim": [-1]}, rtol=1e-5),
    Case("reduce_any", {"X": X3 > 1}, reduce_ref(np.any, bool), attrs={"dim": [1]}),
    Case("reduce_all", {"X": X3 > -1}, reduce_ref(np.all, bool), attrs={"reduce_all": True}),
    # shapes, constants
    Case("shape", {"Input": X3}, lambda Input: {"Out": np.array([2, 3, 4], np.int32)}),
    Case("range", {"Start": np.array([2], np.int64), "End": np.array([11], np.int64), "Step": np.array([3], np.int64)},
         lambda Start, End, Step: {"Out": np.array([2, 5, 8], np.int64)}),
    Case("range", {"Start": np.array([1.0], np.float32), "End": np.array([0.0], np.float32),
                   "Step": np.array([-0.25], np.float32)},
         lambda Start, End, Step: {"Out": np.array([1.0, 0.75, 0.5, 0.25], np.float32)}, id="range_float_down"),
    Case("assign_value", {}, lambda **a: {"Out": np.array([[2, 0, 7]], np.int64)},
         attrs={"shape": [1, 3], "dtype": 3, "int64_values": [2, 0, 7]}),
    Case("unsqueeze2", {"X": f32(2, 3)}, unsqueeze_ref, attrs={"axes": [0, -1]}),
    Case("squeeze2", {"X": f32(1, 3, 1, 2)}, squeeze_ref, attrs={"axes": [0, 1]}),
    Case("squeeze2", {"X": f32(1, 3, 1, 2)}, squeeze_ref, attrs={"axes": []}, id="squeeze2_all"),
    Case("flatten_contiguous_range", {"X": f32(2, 3, 4, 5)}, flatten_ref, attrs={"start_axis": 1, "stop_axis": -2}),
    Case("expand_v2", {"X": f32(3, 1)}, lambda X, shape: {"Out": np.repeat(X[None], 2, 0).repeat(4, 2)},
         attrs={"shape": [2, -1, 4]}),
    Case("expand_as_v2", {"X": f32(1, 4), "Y": f32(3, 4)}, lambda X, Y, target_shape: {"Out": np.vstack([X] * 3)},
         attrs={"target_shape": [3, 4]}),
    Case("tile", {"X": f32(2, 3)}, lambda X, repeat_times: {"Out": np.concatenate([np.hstack([X] * 3)] * 2)[None]},
         attrs={"repeat_times": [1, 2, 3]}),
    Case("stack", {"X": [f32(2, 3), f32(2, 3), f32(2, 3)]},
         lambda X, axis: {"Y": np.array([[[x[i][j] for x in X] for j in range(3)] for i in range(2)])},
         attrs={"axis": -1}),
    Case("unstack", {"X": X3}, lambda X, axis, num: {"Y": [X[:, i, :] for i in range(3)]},
         attrs={"axis": 1, "num": 3}),
    Case("slice", {"Input": X3, "EndsTensorList": [np.array([2], np.int64), np.array([-1], np.int32)]},
         lambda Input, EndsTensorList, **a: {"Out": Input[:, 1:2, 0:3]},
         attrs={"axes": [1, 2], "starts": [1, 0], "ends": [-1, -1], "infer_flags": [-1, -1]},
         id="slice_ends_tensor_list"),
    # indexing
    Case("gather", {"X": X3, "Index": np.array([2, 0, 2])},
         lambda X, Index, axis: {"Out": np.stack([X[:, i] for i in Index], 1)}, attrs={"axis": 1}),
    Case("gather_nd", {"X": X3, "Index": np.array([[[1, 2], [0, 0]]])}, gather_nd_ref),
    Case("gather_nd", {"X": X3, "Index": np.array([[1, 2, 3], [0, 0, 1]], np.int32)}, gather_nd_ref,
         id="gather_nd_full"),
    Case("scatter", {"X": f32(4, 3), "Ids": np.array([2, 0]), "Updates": f32(2, 3)}, scatter_ref,
         attrs={"overwrite": True}),
    Case("scatter", {"X": f32(4, 3), "Ids": np.array([1, 3, 1]), "Updates": f32(3, 3)}, scatter_ref,
         attrs={"overwrite": False}, id="scatter_accumulate"),
    Case("where", {"Condition": B1, "X": f32(3, 4), "Y": f32(4)},
         lambda Condition, X, Y: {"Out": np.array([[x if c else y for c, x, y in zip(cr, xr, Y)]
                                                   for cr, xr in zip(Condition, X)], np.float32)}),
    Case("cumsum", {"X": X3}, cumsum_ref, attrs={"axis": 1}, rtol=1e-5),
    Case("cumsum", {"X": X3}, cumsum_ref, attrs={"axis": -1, "reverse": True, "exclusive": True}, rtol=1e-5,
         atol=1e-5, id="cumsum_reverse_exclusive"),
    Case("cumsum", {"X": X3}, cumsum_ref, attrs={"flatten": True}, rtol=1e-5, atol=1e-5, id="cumsum_flatten"),
    Case("tril_triu", {"X": f32(2, 4, 5)}, tril_ref, attrs={"lower": True, "diagonal": -1}, id="tril"),
    Case("tril_triu", {"X": f32(4, 5)}, tril_ref, attrs={"lower": False, "diagonal": 1}, id="triu"),
    Case("one_hot_v2", {"X": IDS}, one_hot_ref, attrs={"depth": 5}),
    Case("one_hot_v2", {"X": np.array([0, 7, 2])}, one_hot_ref,
         attrs={"depth": 4, "allow_out_of_range": True, "dtype": 3},
         id="one_hot_out_of_range"),
    Case("top_k_v2", {"X": DIST}, top_k_ref, attrs={"k": 2}),
    Case("top_k_v2", {"X": np.array([[3.0, 1.0, 3.0, 0.5]], np.float32)}, top_k_ref, attrs={"k": 3, "largest": False,
         "axis": 1}, id="top_k_v2_smallest_ties"),
    Case("top_k_v2", {"X": np.array([[3, 250, 7, 250]], np.uint8)}, top_k_ref, attrs={"k": 3}, id="top_k_v2_uint8"),
    Case("arg_min", {"X": DIST}, lambda X, axis, **a: {"Out": np.array(
        [[min(range(3), key=lambda i: X[b, i, c]) for c in range(4)] for b in range(2)], np.int64)},
         attrs={"axis": 1}),
    # adamw: with_decay, one step from Beta pows beta^1
    Case("adamw", {"Param": f32(3, 4), "Grad": f32(3, 4), "LearningRate": np.array([0.1], np.float32),
                   "Moment1": f32(3, 4) * 0.1, "Moment2": pos32(3, 4) * 0.1,
                   "Beta1Pow": np.array([0.9], np.float32), "Beta2Pow": np.array([0.999], np.float32)},
         lambda Param, Grad, LearningRate, Moment1, Moment2, Beta1Pow, Beta2Pow, coeff, with_decay, lr_ratio: (
             lambda p, g, m1, m2, lr: (
                 lambda pd, n1, n2: {
                     "ParamOut": as_(Param, pd - lr * math.sqrt(1 - 0.999) / (1 - 0.9) * n1
                                     / (np.sqrt(n2) + 1e-8 * math.sqrt(1 - 0.999))),
                     "Moment1Out": as_(Param, n1), "Moment2Out": as_(Param, n2),
                     "Beta1PowOut": np.array([0.81], np.float32), "Beta2PowOut": np.array([0.999 ** 2], np.float32)})(
                 p * (1 - lr * coeff), 0.9 * m1 + 0.1 * g, 0.999 * m2 + 0.001 * g * g))(
             Param.astype(np.float64), Grad.astype(np.float64), Moment1.astype(np.float64),
             Moment2.astype(np.float64), 0.1 * lr_ratio),
         attrs={"coeff": 0.05, "with_decay": True, "lr_ratio": 0.5}, rtol=1e-5, atol=1e-6,
         check=("ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut")),
]
