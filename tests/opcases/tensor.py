"""Cases for kernelcore/ops/tensor.py and lookup_table_v2 (nn.py).

References are plain NumPy with target shapes worked out by hand, so a wrong reading of 0 / -1 in
reshape2 or of -1 in split sections shows up as a mismatch. dtype attributes are VarType values:
0 bool, 2 int32, 3 int64, 4 float16, 5 float32, 6 float64. Random ops appear here only as smoke cases
(random=True); their statistics are checked in tests/test_ops_tensor_semantics.py.
"""
import numpy as np

from . import Case

rng = np.random.default_rng(1)
BOOL, INT32, INT64, FP16, FP32, FP64 = 0, 2, 3, 4, 5, 6


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


X234 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
W43 = f32(4, 3)


def xshape(X):
    return np.empty((0, *X.shape), X.dtype)  # Paddle declares XShape [0] + X.dims, X's dtype


def cut(X, bounds, axis):
    """The pieces of X between consecutive `bounds` along `axis` (hand-written split reference)."""
    idx = [slice(None)] * X.ndim
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        idx[axis] = slice(lo, hi)
        out.append(X[tuple(idx)])
    return out


def embed(Ids, W, pad):
    out = np.zeros(Ids.shape + (W.shape[1],), W.dtype)
    for pos in np.ndindex(*Ids.shape):
        if Ids[pos] != pad:
            out[pos] = W[Ids[pos]]
    return out


CASES = [
    # -- fill_constant ------------------------------------------------------
    Case("fill_constant", {}, lambda **a: {"Out": np.full((2, 3), 1.5, np.float32)},
         attrs={"shape": [2, 3], "dtype": FP32, "value": 1.5}, id="fill_f32"),
    Case("fill_constant", {}, lambda **a: {"Out": np.full((3,), -2, np.int32)},
         attrs={"shape": [3], "dtype": INT32, "value": -2.7}, id="fill_int32_truncates"),
    Case("fill_constant", {}, lambda **a: {"Out": np.full((2, 2), 0.1, np.float64)},
         attrs={"shape": [2, 2], "dtype": FP64, "value": 0.1, "str_value": "0.1"}, id="fill_f64_str_value_precision",
         rtol=0, atol=0),
    Case("fill_constant", {}, lambda **a: {"Out": np.full((2,), -np.inf, np.float32)},
         attrs={"shape": [2], "dtype": FP32, "str_value": "-inf"}, id="fill_str_value_inf"),
    Case("fill_constant", {}, lambda **a: {"Out": np.full((1,), 123456789, np.int64)},
         attrs={"shape": [1], "dtype": INT64, "str_value": "123456789"}, id="fill_int64_str_value", rtol=0, atol=0),
    Case("fill_constant", {}, lambda **a: {"Out": np.ones((2,), np.bool_)},
         attrs={"shape": [2], "dtype": BOOL, "value": 0.5}, id="fill_bool"),
    Case("fill_constant", {}, lambda **a: {"Out": np.array(1.0)},
         attrs={"shape": [], "dtype": FP64, "value": 1.0}, id="fill_0d"),
    Case("fill_constant", {}, lambda **a: {"Out": np.zeros((4,), np.float32)}, attrs={"shape": [4]},
         id="fill_defaults_f32_zero"),
    Case("fill_constant", {"ValueTensor": np.array([3.5])},
         lambda ValueTensor, **a: {"Out": np.full((2, 2), 3, np.int32)},
         attrs={"shape": [2, 2], "dtype": INT32, "value": 9.0}, id="fill_value_tensor_wins"),
    Case("fill_constant", {"ShapeTensor": np.array([2, 3], np.int64)},
         lambda ShapeTensor, **a: {"Out": np.full((2, 3), 7, np.float32)},
         attrs={"dtype": FP32, "value": 7.0}, id="fill_shape_tensor"),
    Case("fill_constant", {"ShapeTensorList": [np.array([2], np.int32), np.array([1], np.int64)]},
         lambda ShapeTensorList, **a: {"Out": np.full((2, 1), -1, np.int64)},
         attrs={"shape": [-1, -1], "dtype": INT64, "value": -1.0}, id="fill_shape_tensor_list"),

    # -- random initialisers (smoke only; statistics in test_ops_tensor_semantics.py) --------------
    Case("uniform_random", {}, lambda **a: {}, attrs={"shape": [3, 4], "min": -0.5, "max": 0.5, "seed": 3},
         random=True, id="uniform_smoke"),
    Case("uniform_random", {"ShapeTensor": np.array([2, 5], np.int32)}, lambda **a: {},
         attrs={"dtype": FP64}, random=True, id="uniform_shape_tensor_smoke"),
    Case("gaussian_random", {}, lambda **a: {}, attrs={"shape": [5], "mean": 1.0, "std": 2.0, "dtype": FP16},
         random=True, id="gaussian_smoke"),

    # -- assign, increment, cast, fill_zeros_like --------------------------------------------
    Case("assign", {"X": f32(3, 2)}, lambda X: {"Out": X.copy()}, id="assign_f32"),
    Case("assign", {"X": np.array([[1, -2]], np.int64)}, lambda X: {"Out": X.copy()}, id="assign_int64"),
    Case("increment", {"X": np.array([3], np.int64)}, lambda X, step: {"Out": np.array([4], np.int64)},
         attrs={"step": 1.5}, id="increment_int64_step_truncated"),
    Case("increment", {"X": np.array([3], np.int32)}, lambda X, step: {"Out": np.array([2], np.int32)},
         attrs={"step": -1.5}, id="increment_int32_negative_step"),
    Case("increment", {"X": np.array(2.0, np.float32)}, lambda X: {"Out": np.array(3.0, np.float32)},
         id="increment_default_step_0d"),
    Case("cast", {"X": np.array([-2.7, -0.5, 0.5, 2.7], np.float32)},
         lambda X, **a: {"Out": np.array([-2, 0, 0, 2], np.int32)},
         attrs={"in_dtype": FP32, "out_dtype": INT32}, id="cast_f32_int32_truncates"),
    Case("cast", {"X": np.array([-2.7, 0.0, 0.5], np.float32)},
         lambda X, **a: {"Out": np.array([True, False, True])},
         attrs={"in_dtype": FP32, "out_dtype": BOOL}, id="cast_f32_bool"),
    Case("cast", {"X": np.array([[1, -3]], np.int64)}, lambda X, **a: {"Out": np.array([[1.0, -3.0]])},
         attrs={"in_dtype": INT64, "out_dtype": FP64}, id="cast_int64_f64"),
    Case("cast", {"X": np.array([True, False])}, lambda X, **a: {"Out": np.array([1.0, 0.0], np.float32)},
         attrs={"in_dtype": BOOL, "out_dtype": FP32}, id="cast_bool_f32"),
    Case("cast", {"X": np.array([0.1, 3e4], np.float64)},
         lambda X, **a: {"Out": np.array([0.1, 3e4], np.float16)},
         attrs={"in_dtype": FP64, "out_dtype": FP16}, id="cast_f64_f16", rtol=1e-3),
    Case("fill_zeros_like", {"X": f32(2, 3)}, lambda X: {"Out": np.zeros((2, 3), np.float32)}, id="zeros_like_f32"),
    Case("fill_zeros_like", {"X": np.array([[1, 2]], np.int32)}, lambda X: {"Out": np.zeros((1, 2), np.int32)},
         id="zeros_like_int32"),

    # -- reshape2 -----------------------------------------------------------
    Case("reshape2", {"X": X234}, lambda X, **a: {"Out": X.reshape(2, 6, 2), "XShape": xshape(X)},
         attrs={"shape": [0, -1, 2]}, id="reshape_copy0_infer-1"),
    Case("reshape2", {"X": X234}, lambda X, **a: {"Out": X.reshape(24), "XShape": xshape(X)},
         attrs={"shape": [-1]}, id="reshape_flatten"),
    Case("reshape2", {"X": X234}, lambda X, **a: {"Out": X.reshape(2, 3, 4, 1), "XShape": xshape(X)},
         attrs={"shape": [0, 0, 0, 1]}, id="reshape_copy_all_add_dim"),
    Case("reshape2", {"X": X234}, lambda X, **a: {"Out": X.reshape(4, 6), "XShape": xshape(X)},
         attrs={"shape": [4, -1]}, id="reshape_leading"),
    Case("reshape2", {"X": np.array([5.0], np.float32)}, lambda X, **a: {"Out": np.array(5.0, np.float32)},
         attrs={"shape": []}, check=("Out",), id="reshape_to_0d"),
    Case("reshape2", {"X": X234, "Shape": np.array([0, -1], np.int32)},
         lambda X, Shape, **a: {"Out": X.reshape(2, 12)}, attrs={"shape": []}, check=("Out",),
         id="reshape_shape_input"),
    Case("reshape2", {"X": X234, "Shape": np.array([0, -1], np.int32),
                      "ShapeTensor": [np.array([4], np.int32), np.array([-1], np.int32)]},
         lambda X, Shape, ShapeTensor, **a: {"Out": X.reshape(4, 6)}, attrs={"shape": [8, 3]}, check=("Out",),
         id="reshape_shape_tensor_wins"),

    # -- transpose2 ---------------------------------------------------------
    Case("transpose2", {"X": f32(3, 5)}, lambda X, axis: {"Out": X.T, "XShape": xshape(X)},
         attrs={"axis": [1, 0]}, id="transpose_2d"),
    Case("transpose2", {"X": X234}, lambda X, axis: {"Out": np.moveaxis(X, 2, 0)},
         attrs={"axis": [-1, 0, 1]}, check=("Out",), id="transpose_negative_axes"),
    Case("transpose2", {"X": f32(2, 3, 4, 5)}, lambda X, axis: {"Out": np.einsum("abcd->acdb", X)},
         attrs={"axis": [0, 2, 3, 1]}, check=("Out",), id="transpose_nchw_nhwc"),

    # -- concat -------------------------------------------------------------
    Case("concat", {"X": [f32(1, 3), f32(2, 3), f32(4, 3)]}, lambda X, axis: {"Out": np.vstack(X)},
         attrs={"axis": 0}, id="concat_axis0_three"),
    Case("concat", {"X": [X234, X234[:, :, :1]]},
         lambda X, axis: {"Out": np.dstack([X[0], X[1]])}, attrs={"axis": -1}, id="concat_negative_axis"),
    Case("concat", {"X": [np.array([[1], [2]], np.int64), np.array([[3, 4], [5, 6]], np.int64)]},
         lambda X, axis: {"Out": np.array([[1, 3, 4], [2, 5, 6]], np.int64)}, attrs={"axis": 1}, id="concat_int64"),
    Case("concat", {"X": [X234, X234[:1]], "AxisTensor": np.array([0], np.int32)},
         lambda X, AxisTensor, axis: {"Out": np.vstack([X[0], X[1]])}, attrs={"axis": 2}, id="concat_axis_tensor_wins"),

    # -- split (the number of Out variables comes from num / len(sections)) -----------------
    Case("split", {"X": f32(2, 6)}, lambda X, **a: {"Out": cut(X, [0, 2, 4, 6], 1)},
         attrs={"axis": 1, "num": 3}, id="split_num"),
    Case("split", {"X": X234}, lambda X, **a: {"Out": cut(X, [0, 1, 3, 4], 2)},
         attrs={"axis": -1, "sections": [1, -1, 1]}, id="split_sections_minus1_negative_axis"),
    Case("split", {"X": X234}, lambda X, **a: {"Out": cut(X, [0, 2, 2, 4], 2)},
         attrs={"axis": 2, "sections": [2, 0, 2]}, id="split_empty_section"),
    Case("split", {"X": X234}, lambda X, **a: {"Out": cut(X, [0, 1, 4], 2)},
         attrs={"axis": 2, "num": 2, "sections": [1, 3]}, id="split_sections_win_over_num"),
    Case("split", {"X": X234, "AxisTensor": np.array([1], np.int64)},
         lambda X, AxisTensor, **a: {"Out": cut(X, [0, 1, 2, 3], 1)},
         attrs={"axis": 0, "num": 3}, id="split_axis_tensor"),
    Case("split", {"X": X234, "SectionsTensorList": [np.array([3], np.int32), np.array([1], np.int32)]},
         lambda X, SectionsTensorList, **a: {"Out": cut(X, [0, 3, 4], 2)},
         attrs={"axis": 2, "sections": [-1, -1]}, id="split_sections_tensor_list"),

    # -- lookup_table_v2 ----------------------------------------------------
    Case("lookup_table_v2", {"Ids": np.array([[0, 3], [1, 1]], np.int64), "W": W43},
         lambda Ids, W, **a: {"Out": W[Ids]}, id="lookup_no_padding"),
    Case("lookup_table_v2", {"Ids": np.array([[0, 3], [1, 1]], np.int64), "W": W43},
         lambda Ids, W, padding_idx: {"Out": embed(Ids, W, 1)}, attrs={"padding_idx": 1}, id="lookup_padding_idx"),
    Case("lookup_table_v2", {"Ids": np.array([[[0], [2]], [[0], [3]]], np.int32), "W": W43},
         lambda Ids, W, padding_idx: {"Out": embed(Ids, W, 0)}, attrs={"padding_idx": 0},
         id="lookup_int32_keeps_trailing_1"),
    Case("lookup_table_v2", {"Ids": np.array([2, 0, 3], np.int64), "W": W43},
         lambda Ids, W, **a: {"Out": W[Ids]}, attrs={"padding_idx": 9, "is_sparse": True},
         id="lookup_padding_idx_matching_no_id"),
    # -- slice: Python-style bounds clamped to the dim, negative from the end, decrease_axis drops dims --
    Case("slice", {"Input": np.arange(60, dtype=np.float32).reshape(3, 4, 5)},
         lambda Input, **a: {"Out": Input[1:3, -3:]}, attrs={"axes": [0, 1], "starts": [1, -3], "ends": [10, 4]},
         id="slice_clamped_negative"),
    Case("slice", {"Input": np.arange(12, dtype=np.float32).reshape(3, 4)},
         lambda Input, **a: {"Out": Input[1]}, attrs={"axes": [0], "starts": [1], "ends": [2], "decrease_axis": [0]},
         id="slice_decrease_axis"),
    Case("slice", {"Input": np.arange(12, dtype=np.int64).reshape(3, 4), "StartsTensor": np.array([1], np.int64),
                   "EndsTensor": np.array([-1], np.int64)},
         # as paddle.slice writes it: placeholder starts/ends with infer_flags -1 (Paddle reads them)
         lambda Input, StartsTensor, EndsTensor, **a: {"Out": Input[:, 1:-1]},
         attrs={"axes": [1], "starts": [-1], "ends": [-1], "infer_flags": [-1]},
         id="slice_tensor_bounds"),
]
