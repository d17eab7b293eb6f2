"""Validation of the math / activation / loss ops when they are appended and when they run:
impossible shapes raise ShapeError naming the op and what was expected versus given, bad attributes
raise AttrError, inferred shapes and dtypes are Paddle's, and kernels leave their inputs alone."""
import copy

import numpy as np
import pytest

import kernelcore as kc
from opcases import loss as loss_cases
from opcases import math as math_cases
from opcases import run


def append(op, inputs, attrs=None, outputs=None):
    """Append `op` to a fresh program. `inputs`: slot -> (shape, dtype) or a list of them.
    Returns the block and the op's output variables by slot."""
    prog = kc.Program()
    block = prog.global_block()
    ins = {}
    for slot, spec in inputs.items():
        specs = spec if isinstance(spec, list) else [spec]
        ins[slot] = [block.create_var(f"{slot}_{i}", shape, dtype).name for i, (shape, dtype) in enumerate(specs)]
    opdef = kc.get_op_def(op)
    outs = outputs or {s.name: [f"{s.name}_out"] for s in opdef.outputs}
    block.append_op(op, inputs=ins, outputs=outs, attrs=attrs or {})
    return block, {slot: block.var(names[0]) for slot, names in outs.items()}


F = "float32"


def inferred(op, inputs, attrs=None):
    _, outs = append(op, inputs, attrs)
    return {slot: (list(v.shape), v.dtype_name) for slot, v in outs.items()}


# -- shape errors: the op, the slots and both shapes are named ----------------------------------
def test_mul_inner_dims_mismatch_names_op_and_both_shapes():
    with pytest.raises(kc.ShapeError) as e:
        append("mul", {"X": ([4, 3], F), "Y": ([5, 6], F)})
    msg = str(e.value)
    assert "'mul'" in msg and "[4, 3]" in msg and "[5, 6]" in msg
    assert "width 3" in msg and "height 5" in msg


def test_mul_flattened_mismatch_reports_flattened_shapes():
    with pytest.raises(kc.ShapeError, match=r"\[2, 3, 4\].*\[2, 12\].*\[10, 5\]"):
        append("mul", {"X": ([2, 3, 4], F), "Y": ([10, 5], F)})


def test_mul_num_col_dims_beyond_rank():
    with pytest.raises(kc.ShapeError, match="x_num_col_dims is 2 but X \\[4, 3\\] has rank 2"):
        append("mul", {"X": ([4, 3], F), "Y": ([3, 5], F)}, {"x_num_col_dims": 2})


def test_mul_num_col_dims_must_be_positive():
    with pytest.raises(kc.AttrError, match="x_num_col_dims.*>= 1"):
        append("mul", {"X": ([4, 3], F), "Y": ([3, 5], F)}, {"x_num_col_dims": 0})


def test_mul_unknown_dims_pass():
    assert inferred("mul", {"X": ([-1, 3], F), "Y": ([3, 5], F)})["Out"] == ([-1, 5], "float32")


@pytest.mark.parametrize("x, y, attrs, text", [
    ([3, 4], [5, 6], {}, "X [3, 4] (trans_x=False) contracts dim of size 4 against Y [5, 6]"),
    ([3, 4], [3, 4], {"trans_y": False}, "size 4 against Y [3, 4]"),
    ([2, 3, 4], [3, 4, 5], {}, "do not broadcast: 2 versus 3"),
    ([4], [5], {}, "size 4 against Y [5]"),
])
def test_matmul_v2_mismatch(x, y, attrs, text):
    with pytest.raises(kc.ShapeError, match="'matmul_v2'") as e:
        append("matmul_v2", {"X": (x, F), "Y": (y, F)}, attrs)
    assert text in str(e.value)


def test_matmul_v2_dtype_mismatch():
    with pytest.raises(kc.ShapeError, match="X is float32 but Y is float64"):
        append("matmul_v2", {"X": ([3, 4], F), "Y": ([4, 5], "float64")})


def test_cosine_scale_must_be_positive():
    with pytest.raises(kc.AttrError, match="'scale' must be > 0.0, got 0.0"):
        append("cosine", {"a": ([2, 3], F), "b": ([2, 3], F)}, {"scale": 0.0})


@pytest.mark.parametrize("a, b, text", [
    ([2, 3], [2, 4], "a [2, 3] and b [2, 4] must have the same shape"),
    ([2, 3, 1], [2, 3, 1], "must both be 2-D"),
])
def test_cosine_shapes(a, b, text):
    with pytest.raises(kc.ShapeError, match="'cosine'") as e:
        append("cosine", {"a": (a, F), "b": (b, F)})
    assert text in str(e.value)


def test_sum_inputs_must_agree():
    with pytest.raises(kc.ShapeError, match=r"X\[1\] has shape \[1, 2\] but X\[0\] has \[2, 2\]"):
        append("sum", {"X": [([2, 2], F), ([1, 2], F)]})
    with pytest.raises(kc.ShapeError, match=r"X\[1\] is float64 but X\[0\] is float32"):
        append("sum", {"X": [([2, 2], F), ([2, 2], "float64")]})


@pytest.mark.parametrize("attrs, text", [
    ({"dim": [2]}, "dim 2 is out of range for X of rank 2"),
    ({"dim": [1, -1]}, "names dimension 1 more than once"),
])
def test_reduce_dims(attrs, text):
    for op in ("reduce_sum", "reduce_mean"):
        with pytest.raises(kc.ShapeError, match=text):
            append(op, {"X": ([3, 4], F)}, attrs)


def test_reduce_sum_out_dtype_checked():
    with pytest.raises(kc.AttrError, match="out_dtype"):
        append("reduce_sum", {"X": ([3, 4], F)}, {"out_dtype": 99})


def test_softmax_axis_out_of_range():
    with pytest.raises(kc.ShapeError, match="'softmax'.*axis 2 is out of range"):
        append("softmax", {"X": ([3, 4], F)}, {"axis": 2})


@pytest.mark.parametrize("x, label, attrs, text", [
    ([4, 5], ([4, 2], "int64"), {}, "Label [4, 2] must be X's shape [4, 5] with the last dim 1"),
    ([4, 5], ([3, 1], "int64"), {}, "Label [3, 1]"),
    ([4, 5], ([4, 1], F), {}, "expected int64 or int32, got float32"),
    ([4, 5], ([4, 4], F), {"soft_label": True}, "Label [4, 4] must have X's shape [4, 5]"),
])
def test_cross_entropy_label_checks(x, label, attrs, text):
    with pytest.raises(kc.ShapeError, match="'cross_entropy'") as e:
        append("cross_entropy", {"X": (x, F), "Label": label}, attrs)
    assert text in str(e.value)


@pytest.mark.parametrize("logits, label, attrs, text", [
    ([4, 5], [4], {}, "must have the rank of Logits"),
    ([4, 5], [4, 5], {}, "with dim 1 (the class dim) of size 1, i.e. [4, 1]"),
    ([2, 5, 3], [2, 5, 1], {"axis": 1}, "i.e. [2, 1, 3]"),
    ([4, 5], [4, 5], {"axis": 2}, "axis 2 is out of range"),
])
def test_softmax_with_cross_entropy_label_checks(logits, label, attrs, text):
    with pytest.raises(kc.ShapeError, match="'softmax_with_cross_entropy'") as e:
        append("softmax_with_cross_entropy", {"Logits": (logits, F), "Label": (label, "int64")}, attrs)
    assert text in str(e.value)


def test_accuracy_shapes():
    with pytest.raises(kc.ShapeError, match=r"Label \[4\] must be \[N, 1\]"):
        append("accuracy", {"Out": ([4, 2], F), "Indices": ([4, 2], "int64"), "Label": ([4], "int64")})
    with pytest.raises(kc.ShapeError, match=r"Label \[3, 1\] has 3 rows but Indices \[4, 2\] has 4"):
        append("accuracy", {"Out": ([4, 2], F), "Indices": ([4, 2], "int64"), "Label": ([3, 1], "int64")})


def test_top_k_checks():
    with pytest.raises(kc.ShapeError, match=r"'top_k'.*k is 7 but X \[3, 5\] has 5 entries.*expected k <= 5"):
        append("top_k", {"X": ([3, 5], F)}, {"k": 7})
    with pytest.raises(kc.AttrError, match="'k' must be >= 1, got 0"):
        append("top_k", {"X": ([3, 5], F)}, {"k": 0})


def test_arg_max_checks():
    with pytest.raises(kc.AttrError, match="'axis'.*required"):
        append("arg_max", {"X": ([3, 5], F)})
    with pytest.raises(kc.ShapeError, match=r"axis 2 is out of range for X \[3, 5\]"):
        append("arg_max", {"X": ([3, 5], F)}, {"axis": 2})
    with pytest.raises(kc.AttrError, match="'dtype' must be one of"):
        append("arg_max", {"X": ([3, 5], F)}, {"axis": 0, "dtype": 5})


# -- inferred shapes and dtypes: Paddle's (checked against Paddle 2.6.2 and 3.3.1) -------------
@pytest.mark.parametrize("op, inputs, attrs, want", [
    ("mean", {"X": ([3, 4], F)}, {}, {"Out": ([], "float32")}),
    ("reduce_mean", {"X": ([3, 4], F)}, {"reduce_all": True, "dim": []}, {"Out": ([], "float32")}),
    ("reduce_mean", {"X": ([3, 4], F)}, {}, {"Out": ([4], "float32")}),
    ("reduce_sum", {"X": ([3, 4], F)}, {"reduce_all": True, "keep_dim": True}, {"Out": ([1, 1], "float32")}),
    ("reduce_sum", {"X": ([3, 4], "int32")}, {"dim": [1]}, {"Out": ([3], "int64")}),
    ("reduce_sum", {"X": ([3, 4], F)}, {"dim": [1], "out_dtype": 6}, {"Out": ([3], "float64")}),
    ("matmul_v2", {"X": ([4], F), "Y": ([4], F)}, {}, {"Out": ([], "float32")}),
    ("matmul_v2", {"X": ([2, 1, 3, 4], F), "Y": ([5, 4, 6], F)}, {}, {"Out": ([2, 5, 3, 6], "float32")}),
    ("matmul_v2", {"X": ([4, 3], F), "Y": ([4], F)}, {"trans_x": True}, {"Out": ([3], "float32")}),
    ("mul", {"X": ([2, 3, 4], F), "Y": ([4, 5, 6], F)}, {"x_num_col_dims": 2}, {"Out": ([2, 3, 5, 6], "float32")}),
    ("less_than", {"X": ([2, 3], "int64"), "Y": ([3], "int64")}, {}, {"Out": ([2, 3], "bool")}),
    ("cosine", {"a": ([-1, 8], F), "b": ([6, 8], F)}, {}, {"output": ([6, 1], "float32")}),
    ("top_k", {"X": ([3, 5], F)}, {"k": 2}, {"Out": ([3, 2], "float32"), "Indices": ([3, 2], "int64")}),
    ("top_k", {"X": ([3, 5], F), "K": ([1], "int32")}, {}, {"Out": ([3, -1], "float32"),
                                                            "Indices": ([3, -1], "int64")}),
    ("arg_max", {"X": ([3, 4], F)}, {"axis": 0, "flatten": True}, {"Out": ([], "int64")}),
    ("arg_max", {"X": ([3, 4], F)}, {"axis": 0, "keepdims": True, "dtype": 2}, {"Out": ([1, 4], "int32")}),
    ("cross_entropy", {"X": ([4, 5], F), "Label": ([4], "int64")}, {}, {"Y": ([4], "float32")}),
    ("cross_entropy", {"X": ([2, 3, 5], F), "Label": ([2, 3, 1], "int64")}, {}, {"Y": ([2, 3, 1], "float32")}),
    ("softmax_with_cross_entropy", {"Logits": ([2, 5, 3], F), "Label": ([2, 1, 3], "int64")}, {"axis": 1},
     {"Softmax": ([2, 5, 3], "float32"), "Loss": ([2, 1, 3], "float32")}),
    ("accuracy", {"Out": ([4, 2], F), "Indices": ([4, 2], "int64"), "Label": ([4, 1], "int64")}, {},
     {"Accuracy": ([], "float32"), "Correct": ([], "int32"), "Total": ([], "int32")}),
    ("scale", {"X": ([3], "int64"), "ScaleTensor": ([1], F)}, {}, {"Out": ([3], "int64")}),
])
def test_inferred(op, inputs, attrs, want):
    assert inferred(op, inputs, attrs) == want


def test_softmax_is_marked_intermediate():
    slot = kc.get_op_def("softmax_with_cross_entropy").output_slot("Softmax")
    assert slot.intermediate


def test_defaults_are_paddles():
    d = {name: kc.get_op_def(op).attrs[name].default for op, name in [
        ("mul", "x_num_col_dims"), ("reduce_sum", "dim"), ("reduce_mean", "keep_dim"), ("scale", "bias_after_scale"),
        ("softmax_with_cross_entropy", "ignore_index"), ("top_k", "k"), ("arg_max", "dtype"), ("softmax", "axis")]}
    assert d == {"x_num_col_dims": 1, "dim": [0], "keep_dim": False, "bias_after_scale": True, "ignore_index": -100,
                 "k": 1, "dtype": 3, "axis": -1}


# -- run-time errors ------------------------------------------------------------------------------
def _run(op, feed, attrs=None):
    prog = kc.Program()
    block = prog.global_block()
    ins = {}
    for slot, v in feed.items():
        block.create_var(slot, v.shape, v.dtype)
        ins[slot] = [slot]
    outs = {s.name: [f"{s.name}_out"] for s in kc.get_op_def(op).outputs}
    block.append_op(op, inputs=ins, outputs=outs, attrs=attrs or {})
    scope = kc.Scope()
    kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=[], scope=scope)
    return scope


@pytest.mark.parametrize("op, x_slot", [("cross_entropy", "X"), ("softmax_with_cross_entropy", "Logits")])
def test_label_out_of_range_is_an_error(op, x_slot):
    feed = {x_slot: np.full((2, 3), 1 / 3, np.float32), "Label": np.array([[1], [3]], np.int64)}
    with pytest.raises(kc.OpRunError, match=r"Label holds 3, outside \[0, 3\)"):
        _run(op, feed)


def test_top_k_K_tensor_larger_than_row():
    feed = {"X": np.zeros((2, 3), np.float32), "K": np.array([4], np.int32)}
    with pytest.raises(kc.OpRunError, match="k is 4 but X \\[2, 3\\] has 3 entries"):
        _run("top_k", feed)


# -- kernels never mutate their inputs -------------------------------------------------------------
@pytest.mark.parametrize("case", math_cases.CASES + loss_cases.CASES, ids=str)
def test_kernel_leaves_inputs_alone(case):
    before = copy.deepcopy(case.inputs)
    run(case)
    for slot, v in before.items():
        now = case.inputs[slot]
        for a, b in zip(v if isinstance(v, list) else [v], now if isinstance(now, list) else [now]):
            np.testing.assert_array_equal(a, b, err_msg=f"{case}: input {slot} changed")
