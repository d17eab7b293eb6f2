"""Validation of the Transformer/BERT ops when appended and when run: impossible shapes raise ShapeError naming
the op and what was expected versus given, bad ids raise OpRunError, inferred shapes and dtypes are Paddle's,
and kernels leave their inputs alone."""
import copy

import numpy as np
import pytest

import kernelcore as kc
from opcases import run
from opcases import transformer as tf_cases
from test_op_validation import append, inferred

F = "float32"


@pytest.mark.parametrize("op, inputs, attrs, text", [
    ("layer_norm", {"X": ([2, 3, 4], F), "Scale": ([3], F)}, {"begin_norm_axis": 2},
     r"Scale has shape \[3\] but X \[2, 3, 4\] normalises 4 elements"),
    ("layer_norm", {"X": ([2, 3], F)}, {"begin_norm_axis": 2}, r"begin_norm_axis 2 is out of range for X"),
    ("expand_v2", {"X": ([3, 2], F)}, {"shape": [3, 4]}, r"dim 1 of X is 2, expected 1 or 4"),
    ("stack", {"X": [([2, 3], F), ([3, 2], F)]}, {"axis": 0}, r"X\[1\] has shape \[3, 2\] but X\[0\] has \[2, 3\]"),
    ("gather_nd", {"X": ([2, 3], F), "Index": ([4, 3], "int64")}, {}, r"Index's last dim is 3 but X"),
    ("bitwise_and", {"X": ([2], F), "Y": ([2], F)}, {}, r"X must be bool or an integer type, got float32"),
    ("where", {"Condition": ([2], "bool"), "X": ([2], F), "Y": ([2], "float64")}, {}, r"X is float32 but Y is float64"),
    ("tril_triu", {"X": ([4], F)}, {}, r"X must have rank >= 2"),
    ("top_k_v2", {"X": ([2, 3], F)}, {"k": 4}, r"k 4 is larger than X's dim 1 of size 3"),
    ("flatten_contiguous_range", {"X": ([2, 3, 4], F)}, {"start_axis": 2, "stop_axis": 1},
     r"start_axis 2 comes after stop_axis 1"),
])
def test_shape_errors_name_the_op_and_shapes(op, inputs, attrs, text):
    with pytest.raises(kc.ShapeError, match=text) as e:
        append(op, inputs, attrs)
    assert op in str(e.value)


@pytest.mark.parametrize("op, inputs, attrs, want", [
    ("shape", {"Input": ([2, 3, 4], F)}, {}, {"Out": ([3], "int32")}),
    ("layer_norm", {"X": ([2, 3, 4], F), "Scale": ([12], F), "Bias": ([12], F)}, {"begin_norm_axis": 1},
     {"Y": ([2, 3, 4], F), "Mean": ([2], F), "Variance": ([2], F)}),
    ("unsqueeze2", {"X": ([2, 3], F)}, {"axes": [0, 2]}, {"Out": ([1, 2, 1, 3], F), "XShape": ([0, 2, 3], F)}),
    ("squeeze2", {"X": ([1, 3, 1], F)}, {"axes": [-1]}, {"Out": ([1, 3], F), "XShape": ([0, 1, 3, 1], F)}),
    ("gather", {"X": ([5, 4], F), "Index": ([3], "int64")}, {"axis": 1}, {"Out": ([5, 3], F)}),
    ("one_hot_v2", {"X": ([2, 3], "int64")}, {"depth": 7}, {"Out": ([2, 3, 7], F)}),
    ("top_k_v2", {"X": ([2, 6], F)}, {"k": 2}, {"Out": ([2, 2], F), "Indices": ([2, 2], "int64")}),
    ("reduce_any", {"X": ([2, 3], "bool")}, {"dim": [1]}, {"Out": ([2], "bool")}),
    ("tile", {"X": ([2, 3], F)}, {"repeat_times": [2, 1, 2]}, {"Out": ([2, 2, 6], F)}),
    ("logical_xor", {"X": ([2, 1], "bool"), "Y": ([3], "bool")}, {}, {"Out": ([2, 3], "bool")}),
])
def test_inferred(op, inputs, attrs, want):
    assert inferred(op, inputs, attrs) == want


def _run(op, feed, attrs=None):
    prog = kc.Program()
    block = prog.global_block()
    for k, v in feed.items():
        block.create_var(k, v.shape, v.dtype)
    opdef = kc.get_op_def(op)
    block.append_op(op, inputs={k: [k] for k in feed}, outputs={s.name: [s.name + "_out"] for s in opdef.outputs},
                    attrs=attrs or {})
    kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=[], scope=kc.Scope())


@pytest.mark.parametrize("op, feed, attrs, text", [
    ("gather", {"X": np.zeros((3, 2), np.float32), "Index": np.array([0, 3])}, {}, r"Index must lie in \[0, 3\)"),
    ("one_hot_v2", {"X": np.array([0, 5])}, {"depth": 4}, r"must lie in \[0, 4\)"),
    ("scatter", {"X": np.zeros((3, 2), np.float32), "Ids": np.array([-1]), "Updates": np.zeros((1, 2), np.float32)},
     {}, r"Ids must lie in \[0, 3\)"),
    ("clip", {"X": np.zeros(3, np.float32)}, {"min": 1.0, "max": 0.0}, r"min \(1.0\) must not be greater than max"),
    ("range", {"Start": np.array([0]), "End": np.array([3]), "Step": np.array([0])}, {}, "Step must not be 0"),
])
def test_run_errors(op, feed, attrs, text):
    with pytest.raises(kc.OpRunError, match=text):
        _run(op, feed, attrs)


@pytest.mark.parametrize("case", tf_cases.CASES, ids=str)
def test_kernel_leaves_inputs_alone(case):
    before = copy.deepcopy(case.inputs)
    run(case)
    for slot, v in before.items():
        now = case.inputs[slot]
        for a, b in zip(v if isinstance(v, list) else [v], now if isinstance(now, list) else [now]):
            np.testing.assert_array_equal(a, b, err_msg=f"{case}: input {slot} changed")


def test_dropout_in_every_mode():
    """downgrade_in_infer scales by 1 - p at inference, upscale_in_train leaves X; is_test wins over a training run;
    a training run keeps about 1 - p of the elements and writes the mask (optional, as in Paddle)."""
    x = np.ones((200, 50), np.float32)
    for impl, infer_scale in (("downgrade_in_infer", 0.7), ("upscale_in_train", 1.0)):
        for training, is_test in ((False, False), (True, True)):
            prog = kc.Program()
            b = prog.global_block()
            b.create_var("x", x.shape, "float32")
            b.append_op("dropout", {"X": ["x"]}, {"Out": ["y"]},
                        {"dropout_prob": 0.3, "dropout_implementation": impl, "is_test": is_test})
            y, = kc.Executor().run(prog, feed={"x": x}, fetch_list=["y"], training=training)
            np.testing.assert_allclose(y, x * infer_scale, rtol=1e-6)
        prog = kc.Program()
        b = prog.global_block()
        b.create_var("x", x.shape, "float32")
        b.append_op("dropout", {"X": ["x"]}, {"Out": ["y"], "Mask": ["m"]},
                    {"dropout_prob": 0.3, "dropout_implementation": impl, "fix_seed": True, "seed": 1})
        y, m = kc.Executor().run(prog, feed={"x": x}, fetch_list=["y", "m"], training=True)
        assert 0.65 < m.mean() < 0.75
        kept = 1 / 0.7 if impl == "upscale_in_train" else 1.0
        np.testing.assert_allclose(y, m * kept, rtol=1e-6)
