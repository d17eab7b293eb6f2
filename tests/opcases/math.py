"""Cases for kernelcore/ops/math.py and activation.py.

References are plain NumPy written from Paddle's documented semantics (shapes worked out by hand where
a flag changes them); float32 references are computed in float64 and cast back where the kernel's
summation order could matter. VarType codes: 0 bool, 2 int32, 3 int64, 5 float32, 6 float64.
"""
import numpy as np

from . import Case

rng = np.random.default_rng(0)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def f64(*shape):
    return rng.standard_normal(shape)


def as_(like, v):
    """v in `like`'s dtype, as an array (0-d results included)."""
    return np.asarray(v, dtype=like.dtype)


def mul_ref(X, Y, x_num_col_dims=1, y_num_col_dims=1, **a):
    xs, ys = X.shape, Y.shape
    x2 = X.reshape(int(np.prod(xs[:x_num_col_dims])), -1).astype(np.float64)
    y2 = Y.reshape(int(np.prod(ys[:y_num_col_dims])), -1).astype(np.float64)
    return {"Out": as_(X, (x2 @ y2).reshape(xs[:x_num_col_dims] + ys[y_num_col_dims:]))}


def matmul_ref(X, Y, trans_x=False, trans_y=False, **a):
    """paddle.matmul by hand: 1-D operands are promoted (row / column) and the added dim dropped."""
    x, y = X.astype(np.float64), Y.astype(np.float64)
    if trans_x and x.ndim >= 2:
        x = np.swapaxes(x, -1, -2)
    if trans_y and y.ndim >= 2:
        y = np.swapaxes(y, -1, -2)
    xm = x[None, :] if x.ndim == 1 else x
    ym = y[:, None] if y.ndim == 1 else y
    out = np.einsum("...mk,...kn->...mn", xm, ym)
    if x.ndim == 1:
        out = out[..., 0, :]
    if y.ndim == 1:
        out = out[..., 0]
    return {"Out": as_(X, out)}


def reduce_ref(fn):
    def ref(X, dim=(0,), keep_dim=False, reduce_all=False, out_dtype=-1, **a):
        axes = tuple(range(X.ndim)) if reduce_all or not dim else tuple(d % X.ndim for d in dim)
        out = fn(X.astype(np.float64), axis=axes, keepdims=keep_dim)
        dt = {-1: X.dtype, 6: np.float64, 5: np.float32, 3: np.int64}[out_dtype]
        if fn is np.sum and out_dtype == -1 and X.dtype in (np.int32, np.bool_):
            dt = np.int64
        return {"Out": np.asarray(out).astype(dt)}
    return ref


def softmax_ref(X, axis=-1, **a):
    e = np.exp(X.astype(np.float64) - X.max(axis=axis, keepdims=True))
    return {"Out": as_(X, e / e.sum(axis=axis, keepdims=True))}


def cosine_ref(a, b, scale=1.0, **k):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    cos = [np.dot(p, q) / (np.linalg.norm(p) * np.linalg.norm(q)) for p, q in zip(a64, b64)]
    return {"output": as_(a, scale * np.array(cos).reshape(-1, 1))}


IX = np.array([[3, -7, 0], [12, 5, -1]], np.int64)


CASES = [
    Case("elementwise_add", {"X": f32(3, 4), "Y": f32(3, 4)}, lambda X, Y, **a: {"Out": X + Y}, id="add_same"),
    Case("elementwise_add", {"X": f32(2, 3, 4), "Y": f32(3)}, lambda X, Y, axis: {"Out": X + Y.reshape(1, 3, 1)},
         attrs={"axis": 1}, id="add_axis1"),
    Case("elementwise_sub", {"X": f32(2, 3), "Y": f32(3)}, lambda X, Y, **a: {"Out": X - Y}, id="sub_trailing"),
    Case("elementwise_mul", {"X": f32(4, 3), "Y": f32(4)}, lambda X, Y, axis: {"Out": X * Y[:, None]},
         attrs={"axis": 0}, id="mul_axis0"),
    Case("elementwise_div", {"X": f32(2, 5), "Y": np.abs(f32(2, 5)) + 0.5},
         lambda X, Y, **a: {"Out": X / Y}, id="div"),
    Case("relu", {"X": f32(3, 5)}, lambda X: {"Out": np.maximum(X, 0)}),
    Case("sigmoid", {"X": f32(3, 5)}, lambda X: {"Out": (1 / (1 + np.exp(-X.astype(np.float64)))).astype(np.float32)}),
    Case("tanh", {"X": f32(3, 5)}, lambda X: {"Out": np.tanh(X)}),
    Case("exp", {"X": f32(3, 5)}, lambda X: {"Out": np.exp(X)}),

    # -- less_than: bool out, trailing or `axis` alignment ----------------------
    Case("less_than", {"X": f32(2, 3), "Y": f32(3)}, lambda X, Y, **a: {"Out": X < Y}, id="less_than_trailing"),
    Case("less_than", {"X": f32(3, 3), "Y": f32(3)}, lambda X, Y, **a: {"Out": X < Y[:, None]},
         attrs={"axis": 0}, id="less_than_axis0"),
    Case("less_than", {"X": np.array([3], np.int64), "Y": np.array([10], np.int64)},
         lambda X, Y, **a: {"Out": np.array([True])}, attrs={"force_cpu": True}, id="less_than_int64_force_cpu"),
    # -- sum ------------------------------------------------------------------------
    Case("sum", {"X": [f32(2, 3), f32(2, 3), f32(2, 3)]}, lambda X: {"Out": X[0] + X[1] + X[2]}, id="sum_three"),
    Case("sum", {"X": [f64(4)]}, lambda X: {"Out": X[0]}, id="sum_one_f64"),
    Case("sum", {"X": [IX, IX]}, lambda X: {"Out": 2 * X[0]}, id="sum_int64"),
    # -- scale ----------------------------------------------------------------------
    Case("scale", {"X": f32(3, 4)}, lambda X, **a: {"Out": as_(X, 2.5 * X.astype(np.float64) + 1.0)},
         attrs={"scale": 2.5, "bias": 1.0}, id="scale_bias_after"),
    Case("scale", {"X": f32(3, 4)}, lambda X, **a: {"Out": as_(X, -2.0 * (X.astype(np.float64) + 0.5))},
         attrs={"scale": -2.0, "bias": 0.5, "bias_after_scale": False}, id="scale_bias_before"),
    Case("scale", {"X": f64(5), "ScaleTensor": np.array([3.0], np.float64)},
         lambda X, ScaleTensor, **a: {"Out": 3.0 * X + 1.0}, attrs={"scale": 2.0, "bias": 1.0},
         id="scale_tensor_overrides_attr"),
    Case("scale", {"X": IX}, lambda X, **a: {"Out": X * 2 + 1}, attrs={"scale": 2.7, "bias": 1.9},
         id="scale_int64_truncates_attrs"),
    # -- mul: flatten at num_col_dims, then a matrix product ---------------------------
    Case("mul", {"X": f32(4, 3), "Y": f32(3, 5)}, mul_ref, id="mul_2d"),
    Case("mul", {"X": f32(2, 3, 4), "Y": f32(12, 5)}, mul_ref, id="mul_x_flattened"),
    Case("mul", {"X": f32(2, 3, 4), "Y": f32(4, 5, 6)}, mul_ref, attrs={"x_num_col_dims": 2},
         id="mul_x_ncd2_y_3d"),
    Case("mul", {"X": f64(2, 6), "Y": f64(2, 3, 7)}, mul_ref, attrs={"y_num_col_dims": 2}, id="mul_y_ncd2_f64"),
    # -- matmul_v2 --------------------------------------------------------------------
    Case("matmul_v2", {"X": f32(3, 4), "Y": f32(4, 5)}, matmul_ref, id="matmul_2d"),
    Case("matmul_v2", {"X": f32(4, 3), "Y": f32(5, 4)}, matmul_ref, attrs={"trans_x": True, "trans_y": True},
         id="matmul_trans_both"),
    Case("matmul_v2", {"X": f32(2, 1, 3, 4), "Y": f32(5, 4, 6)}, matmul_ref, id="matmul_batch_broadcast"),
    Case("matmul_v2", {"X": f32(2, 4, 3), "Y": f32(2, 4, 6)}, matmul_ref, attrs={"trans_x": True},
         id="matmul_batched_trans_x"),
    Case("matmul_v2", {"X": f32(4), "Y": f32(4)}, matmul_ref, id="matmul_1d_1d_is_0d"),
    Case("matmul_v2", {"X": f32(4), "Y": f32(2, 4, 3)}, matmul_ref, attrs={"trans_x": True},
         id="matmul_1d_x_trans_ignored"),
    Case("matmul_v2", {"X": f64(2, 3, 4), "Y": f64(4)}, matmul_ref, id="matmul_1d_y_f64"),
    Case("matmul_v2", {"X": f32(2, 4), "Y": f32(4)}, matmul_ref, attrs={"trans_y": True},
         id="matmul_1d_y_trans_ignored"),
    # -- cosine (seed 003's demo op) -----------------------------------------------------
    Case("cosine", {"a": f32(5, 3), "b": f32(5, 3)}, cosine_ref, id="cosine"),
    Case("cosine", {"a": f64(4, 6), "b": f64(4, 6)}, cosine_ref, attrs={"scale": 2.5}, id="cosine_scaled_f64"),
    # -- reductions -----------------------------------------------------------------------
    Case("reduce_sum", {"X": f32(3, 4)}, reduce_ref(np.sum), id="reduce_sum_default_dim0"),
    Case("reduce_sum", {"X": f32(2, 3, 4)}, reduce_ref(np.sum), attrs={"dim": [0, -1], "keep_dim": True},
         id="reduce_sum_two_dims_keep"),
    Case("reduce_sum", {"X": f32(2, 3, 4)}, reduce_ref(np.sum), attrs={"reduce_all": True}, id="reduce_sum_all_0d"),
    Case("reduce_sum", {"X": f32(2, 3)}, reduce_ref(np.sum), attrs={"dim": []}, id="reduce_sum_empty_dim_is_all"),
    Case("reduce_sum", {"X": f32(2, 3)}, reduce_ref(np.sum), attrs={"dim": [1], "out_dtype": 6},
         id="reduce_sum_out_dtype_f64"),
    Case("reduce_sum", {"X": np.arange(6, dtype=np.int32).reshape(2, 3)}, reduce_ref(np.sum), attrs={"dim": [1]},
         id="reduce_sum_int32_gives_int64"),
    Case("reduce_sum", {"X": f32(2, 3)}, reduce_ref(np.sum), attrs={"reduce_all": True, "keep_dim": True},
         id="reduce_sum_all_keep"),
    Case("reduce_mean", {"X": f32(3, 4)}, reduce_ref(np.mean), id="reduce_mean_default_dim0"),
    Case("reduce_mean", {"X": f64(2, 3, 4)}, reduce_ref(np.mean), attrs={"dim": [1], "keep_dim": True},
         id="reduce_mean_keep_f64"),
    Case("reduce_mean", {"X": f32(2, 3, 4)}, reduce_ref(np.mean), attrs={"dim": [], "reduce_all": True},
         id="reduce_mean_all_0d"),
    Case("reduce_mean", {"X": f32(2, 3, 4)}, reduce_ref(np.mean), attrs={"dim": [-1, 0]}, id="reduce_mean_neg_dims"),
    Case("reduce_mean", {"X": np.array([[1, 2], [-3, -6]], np.int32)},
         lambda X, **a: {"Out": np.array([1, -4], np.int32)}, attrs={"dim": [1]}, id="reduce_mean_int_truncates"),
    Case("mean", {"X": f32(3, 4)}, lambda X: {"Out": as_(X, X.astype(np.float64).mean())}, id="mean_0d"),
    Case("mean", {"X": f64(7)}, lambda X: {"Out": np.asarray(X.mean())}, id="mean_f64"),
    # -- softmax ----------------------------------------------------------------------------
    Case("softmax", {"X": f32(3, 5)}, softmax_ref, id="softmax_last"),
    Case("softmax", {"X": f32(2, 3, 4)}, softmax_ref, attrs={"axis": 1}, id="softmax_axis1"),
    Case("softmax", {"X": f64(2, 3)}, softmax_ref, attrs={"axis": 0}, id="softmax_axis0_f64"),
    Case("softmax", {"X": np.array([[1000.0, 0.0, -1000.0], [3.0, 3.0, 3.0]], np.float32)},
         lambda X, **a: {"Out": np.array([[1, 0, 0], [1 / 3, 1 / 3, 1 / 3]], np.float32)}, id="softmax_huge_logits"),
    # -- the rest of the compare family: one table row each in ops/math.py --------------
    Case("greater_than", {"X": f32(2, 3), "Y": f32(3)}, lambda X, Y, **a: {"Out": X > Y}, id="greater_than"),
    Case("greater_equal", {"X": np.array([1, 2, 3], np.int64), "Y": np.array([2], np.int64)},
         lambda X, Y, **a: {"Out": X >= Y}, id="greater_equal_int"),
    Case("less_equal", {"X": f32(3, 3), "Y": f32(3)}, lambda X, Y, **a: {"Out": X <= Y[:, None]},
         attrs={"axis": 0}, id="less_equal_axis0"),
    Case("equal", {"X": np.array([1, 2, 3], np.int32), "Y": np.array([1, 0, 3], np.int32)},
         lambda X, Y, **a: {"Out": X == Y}, id="equal"),
    Case("not_equal", {"X": np.array([1, 2, 3], np.int32), "Y": np.array([1, 0, 3], np.int32)},
         lambda X, Y, **a: {"Out": X != Y}, id="not_equal"),
]
