"""Cases for kernelcore/ops/norm.py: batch_norm (inference; training mode is in tests/test_vision_ops.py, since the
case runner makes inference runs), group_norm, instance_norm, layer_norm.

References: the textbook formulas in float64, looping over the normalised groups where that is clearer.
"""
import numpy as np

from . import Case

rng = np.random.default_rng(13)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def pos32(*shape):
    return rng.uniform(0.5, 2.0, shape).astype(np.float32)


def bn_infer_ref(X, Scale, Bias, Mean, Variance, epsilon=1e-5, data_layout="NCHW", **a):
    x = X.astype(np.float64)
    axis = x.ndim - 1 if data_layout == "NHWC" and x.ndim > 2 else 1
    shape = [1] * x.ndim
    shape[axis] = -1
    y = (x - Mean.reshape(shape)) / np.sqrt(Variance.reshape(shape).astype(np.float64) + epsilon)
    y = y * Scale.reshape(shape) + Bias.reshape(shape)
    z = np.zeros_like(Mean)
    return {"Y": y.astype(X.dtype), "MeanOut": Mean, "VarianceOut": Variance, "SavedMean": z, "SavedVariance": z}


def group_norm_ref(X, Scale=None, Bias=None, groups=1, epsilon=1e-5, data_layout="NCHW", **a):
    x = X.astype(np.float64)
    if data_layout == "NHWC":
        x = np.moveaxis(x, -1, 1)
    n, c = x.shape[:2]
    y = np.empty_like(x)
    mean = np.empty((n, groups))
    var = np.empty((n, groups))
    cg = c // groups
    for i in range(n):
        for g in range(groups):
            part = x[i, g * cg:(g + 1) * cg]
            mean[i, g], var[i, g] = part.mean(), part.var()
            y[i, g * cg:(g + 1) * cg] = (part - mean[i, g]) / np.sqrt(var[i, g] + epsilon)
    shape = (1, c) + (1,) * (x.ndim - 2)
    if Scale is not None:
        y = y * Scale.reshape(shape)
    if Bias is not None:
        y = y + Bias.reshape(shape)
    if data_layout == "NHWC":
        y = np.moveaxis(y, 1, -1)
    return {"Y": y.astype(X.dtype), "Mean": mean.astype(X.dtype), "Variance": var.astype(X.dtype)}


def instance_norm_ref(X, Scale=None, Bias=None, epsilon=1e-5, **a):
    x = X.astype(np.float64)
    n, c = x.shape[:2]
    y = np.empty_like(x)
    mean, inv = np.empty((n, c)), np.empty((n, c))
    for i in range(n):
        for j in range(c):
            m, v = x[i, j].mean(), x[i, j].var()
            mean[i, j], inv[i, j] = m, 1 / np.sqrt(v + epsilon)
            y[i, j] = (x[i, j] - m) * inv[i, j] * (1 if Scale is None else Scale[j]) + (0 if Bias is None else Bias[j])
    return {"Y": y.astype(X.dtype), "SavedMean": mean.reshape(-1).astype(X.dtype),
            "SavedVariance": inv.reshape(-1).astype(X.dtype)}


def layer_norm_ref(X, Scale=None, Bias=None, epsilon=1e-5, begin_norm_axis=1, **a):
    x = X.astype(np.float64)
    rows = x.reshape(int(np.prod(x.shape[:begin_norm_axis])), -1)
    mean, var = rows.mean(1), rows.var(1)
    y = (rows - mean[:, None]) / np.sqrt(var[:, None] + epsilon)
    if Scale is not None:
        y = y * Scale.reshape(1, -1)
    if Bias is not None:
        y = y + Bias.reshape(1, -1)
    return {"Y": y.reshape(X.shape).astype(X.dtype), "Mean": mean.astype(X.dtype), "Variance": var.astype(X.dtype)}


TOL = dict(rtol=1e-5, atol=1e-5)


def _bn(c):
    return {"Scale": pos32(c), "Bias": f32(c), "Mean": f32(c), "Variance": pos32(c)}


CASES = [
    Case("batch_norm", {"X": f32(2, 4, 5, 6), **_bn(4)}, bn_infer_ref, {"is_test": True, "epsilon": 1e-3},
         id="batch_norm-is_test", **TOL),
    Case("batch_norm", {"X": f32(6, 5), **_bn(5)}, bn_infer_ref, {"is_test": True}, id="batch_norm-2d", **TOL),
    Case("batch_norm", {"X": f32(2, 3, 4, 5), **_bn(5)}, bn_infer_ref, {"is_test": True, "data_layout": "NHWC"},
         id="batch_norm-nhwc", **TOL),
    Case("batch_norm", {"X": f32(2, 4, 5, 6), **_bn(4)}, bn_infer_ref, {"use_global_stats": True},
         id="batch_norm-use_global_stats", **TOL),
    Case("group_norm", {"X": f32(2, 6, 4, 5), "Scale": pos32(6), "Bias": f32(6)}, group_norm_ref,
         {"groups": 3, "epsilon": 1e-5}, id="group_norm", **TOL),
    Case("group_norm", {"X": f32(2, 4, 5, 4)}, group_norm_ref, {"groups": 2, "data_layout": "NHWC"},
         id="group_norm-nhwc-no-affine", **TOL),
    Case("instance_norm", {"X": f32(2, 3, 5, 6), "Scale": pos32(3), "Bias": f32(3)}, instance_norm_ref, {},
         id="instance_norm", **TOL),
    Case("layer_norm", {"X": f32(2, 3, 5, 6), "Scale": pos32(30), "Bias": f32(30)}, layer_norm_ref,
         {"begin_norm_axis": 2}, id="layer_norm", **TOL),
]
