"""append_backward and the gradient rules.

* Every gradient rule against central finite differences in float64: one small program per case (the op,
  then a weighted reduce_sum of each output it is judged on, summed into a scalar loss), append_backward,
  one run for the analytic gradients, two runs of the forward program per input element for the numeric
  ones.
* The structure of what append_backward writes: accumulation of a variable used twice (renamed
  contributions + sum), stop_gradient / no_grad_set pruning, zero-filled unused outputs, the exact text of a
  small backward program (Paddle's layout, see tests/paddle_oracle/make_backward_cases.py for the live
  comparison), a clear error for an op without a rule.
* Paddle parity: Paddle 3.3.1's train_mlp training program runs here for one step (loss and updated
  parameters against Paddle's); the same MLP built with kernelcore's API + append_backward writes Paddle's
  grad ops and computes the gradients Paddle's program computes; small programs Paddle built and
  differentiated itself get the same backward ops and gradient values here.
"""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.transforms.backward import NoGradientError
from kernelcore.transforms.backward import EMPTY_VAR, GRAD_RULES, NO_GRAD, grad_rule

rng = np.random.default_rng(20261122)


def f64(*shape, low=None, high=None):
    if low is not None:
        return rng.uniform(low, high, shape)
    return rng.standard_normal(shape)


def away_from_zero(*shape):
    """Values with |v| in [0.2, 1.5]: no kink of relu within a finite-difference step."""
    return rng.uniform(0.2, 1.5, shape) * rng.choice([-1.0, 1.0], shape)


# ---------------------------------------------------------------------------------------------------
@dataclass
class GCase:
    op: str
    inputs: dict                      # slot -> array, or list of arrays (duplicable slot)
    attrs: dict = field(default_factory=dict)
    id: str = ""
    n_out: dict = field(default_factory=dict)  # duplicable output slot -> how many variables
    use: tuple = ()                   # output variable names in the loss; () = every float, non-intermediate one
    stop: tuple = ()                  # input variable names marked stop_gradient (they must get no @GRAD)
    training: bool = False
    eps: float = 1e-6
    rtol: float = 1e-6
    atol: float = 1e-7

    def __str__(self):
        return self.id or self.op


def build(case: GCase):
    """(forward program, program with backward, feed, loss name, input names that must get a gradient)."""
    prog = kc.Program()
    block = prog.global_block()
    feed, ins, wrt = {}, {}, []
    for slot, value in case.inputs.items():
        values = value if isinstance(value, list) else [value]
        names = []
        for i, v in enumerate(values):
            v = np.asarray(v)
            name = f"{slot}_{i}"
            var = block.create_var(name, v.shape, v.dtype, stop_gradient=name in case.stop)
            feed[name] = v
            names.append(name)
            if v.dtype.kind == "f" and not var.stop_gradient:
                wrt.append(name)
        ins[slot] = names
    opdef = kc.get_op_def(case.op)
    outs = {}
    for s in opdef.outputs:
        n = case.n_out.get(s.name, 1)
        outs[s.name] = [f"{s.name}_out_{i}" for i in range(n)]
    block.append_op(case.op, inputs=ins, outputs=outs, attrs=case.attrs)
    intermediate = {s.name for s in opdef.outputs if s.intermediate}
    use = list(case.use) or [n for s, ns in outs.items() if s not in intermediate for n in ns
                             if block.var(n).dtype_name in ("float32", "float64")]
    partial = []
    for n in use:  # weight each output so every element's gradient differs: loss = sum(out * w)
        out = block.var(n)
        w = block.create_var(f"w_{n}", out.shape, out.dtype_name, stop_gradient=True)
        feed[w.name] = rng.uniform(0.5, 1.5, out.shape).astype(out.dtype_name)
        block.append_op("elementwise_mul", {"X": out, "Y": w}, {"Out": f"wx_{n}"})
        block.append_op("reduce_sum", {"X": f"wx_{n}"}, {"Out": f"s_{n}"}, {"reduce_all": True, "dim": []})
        partial.append(f"s_{n}")
    if len(partial) > 1:
        block.append_op("sum", {"X": partial}, {"Out": "loss"})
        loss = "loss"
    else:
        loss = partial[0]
    forward = prog.clone()
    kc.append_backward(block.var(loss))
    return forward, prog, feed, loss, wrt


def _run(exe, prog, feed, fetch, training):
    return exe.run(prog, feed=feed, fetch_list=fetch, scope=kc.Scope(), training=training)


def numeric_grad(exe, forward, feed, loss, name, case):
    x = feed[name]
    g = np.zeros(x.shape, dtype=np.float64)
    for idx in np.ndindex(*x.shape):
        vals = []
        for sign in (1, -1):
            xp = x.copy()
            xp[idx] += sign * case.eps
            out, = _run(exe, forward, {**feed, name: xp}, [loss], case.training)
            vals.append(float(out))
        g[idx] = (vals[0] - vals[1]) / (2 * case.eps)
    return g


S = {"x_num_col_dims": 1, "y_num_col_dims": 1}
probs = f64(4, 5, low=0.1, high=1.0)
soft = rng.uniform(0.1, 1.0, (4, 5))
soft /= soft.sum(axis=1, keepdims=True)
soft3 = rng.uniform(0.1, 1.0, (2, 4, 3))
soft3 /= soft3.sum(axis=1, keepdims=True)
hard = np.array([[1], [0], [4], [2]], dtype=np.int64)
distinct = rng.permutation(18).reshape(3, 6).astype(np.float64) / 3.0

CASES = [
    # elementwise, with Paddle's axis broadcasting both ways
    GCase("elementwise_add", {"X": f64(3, 4), "Y": f64(3, 4)}, id="add_same"),
    GCase("elementwise_add", {"X": f64(2, 3, 4), "Y": f64(3)}, {"axis": 1}, id="add_axis1"),
    GCase("elementwise_add", {"X": f64(2, 3, 4), "Y": f64(3, 1)}, {"axis": 1}, id="add_axis1_size1"),
    GCase("elementwise_add", {"X": f64(3, 4), "Y": f64(2, 3, 4)}, id="add_x_smaller"),
    GCase("elementwise_sub", {"X": f64(2, 3, 4), "Y": f64(3, 4)}, {"axis": 1}, id="sub_axis1"),
    GCase("elementwise_sub", {"X": f64(2, 3, 4), "Y": f64(4)}, id="sub_trailing"),
    GCase("elementwise_mul", {"X": f64(2, 3), "Y": f64(2)}, {"axis": 0}, id="mul_axis0"),
    GCase("elementwise_mul", {"X": f64(2, 1, 4), "Y": f64(3, 1)}, id="mul_both_broadcast"),
    GCase("elementwise_div", {"X": f64(3, 4), "Y": f64(3, 4, low=0.5, high=2.0)}, id="div_same"),
    GCase("elementwise_div", {"X": f64(2, 3, 4), "Y": f64(3, low=0.5, high=2.0)}, {"axis": 1}, id="div_axis1"),
    # products
    GCase("mul", {"X": f64(3, 4), "Y": f64(4, 5)}, S, id="mul_2d"),
    GCase("mul", {"X": f64(2, 3, 4), "Y": f64(4, 5)}, {"x_num_col_dims": 2, "y_num_col_dims": 1}, id="mul_xcols2"),
    GCase("mul", {"X": f64(3, 4), "Y": f64(2, 2, 5)}, {"x_num_col_dims": 1, "y_num_col_dims": 2}, id="mul_ycols2"),
    GCase("matmul_v2", {"X": f64(3, 4), "Y": f64(4, 5)}, id="matmul_2d"),
    GCase("matmul_v2", {"X": f64(4, 3), "Y": f64(5, 4)}, {"trans_x": True, "trans_y": True}, id="matmul_trans"),
    GCase("matmul_v2", {"X": f64(2, 3, 4), "Y": f64(4, 5)}, id="matmul_batch_bcast"),
    GCase("matmul_v2", {"X": f64(2, 1, 3, 4), "Y": f64(3, 5, 4)}, {"trans_y": True}, id="matmul_batch_both"),
    GCase("matmul_v2", {"X": f64(4), "Y": f64(2, 4, 5)}, id="matmul_1d_x"),
    GCase("matmul_v2", {"X": f64(2, 3, 4), "Y": f64(4)}, id="matmul_1d_y"),
    GCase("matmul_v2", {"X": f64(4), "Y": f64(4)}, id="matmul_1d_1d"),
    GCase("cosine", {"a": f64(3, 5), "b": f64(3, 5)}, {"scale": 2.0}, id="cosine"),
    # sums, means, scaling
    GCase("sum", {"X": [f64(3, 4), f64(3, 4), f64(3, 4)]}, id="sum_3"),
    GCase("mean", {"X": f64(3, 4)}, id="mean"),
    GCase("reduce_mean", {"X": f64(2, 3, 4)}, {"dim": [1]}, id="reduce_mean_dim1"),
    GCase("reduce_mean", {"X": f64(2, 3, 4)}, {"dim": [-1, 0], "keep_dim": True}, id="reduce_mean_keep"),
    GCase("reduce_mean", {"X": f64(2, 3)}, {"reduce_all": True, "dim": []}, id="reduce_mean_all"),
    GCase("reduce_sum", {"X": f64(2, 3, 4)}, {"dim": [0, 2]}, id="reduce_sum_dims"),
    GCase("reduce_sum", {"X": f64(2, 3, 4)}, {"dim": [1], "keep_dim": True}, id="reduce_sum_keep"),
    GCase("reduce_sum", {"X": f64(3, 4)}, {"reduce_all": True}, id="reduce_sum_all"),
    GCase("scale", {"X": f64(3, 4)}, {"scale": 2.5, "bias": 0.3}, id="scale"),
    GCase("scale", {"X": f64(3, 4)}, {"scale": -1.5, "bias": 0.3, "bias_after_scale": False}, id="scale_bias_first"),
    GCase("scale", {"X": f64(3, 4), "ScaleTensor": np.array([0.7])}, {"scale": 2.0}, stop=("ScaleTensor_0",),
          id="scale_tensor"),
    # activations
    GCase("relu", {"X": away_from_zero(3, 4)}, id="relu"),
    GCase("sigmoid", {"X": f64(3, 4)}, id="sigmoid"),
    GCase("tanh", {"X": f64(3, 4)}, id="tanh"),
    GCase("exp", {"X": f64(3, 4)}, id="exp"),
    GCase("softmax", {"X": f64(3, 5)}, id="softmax"),
    GCase("softmax", {"X": f64(3, 4, 2)}, {"axis": 1}, id="softmax_axis1"),
    # losses
    GCase("cross_entropy", {"X": probs, "Label": hard}, id="ce_hard"),
    GCase("cross_entropy", {"X": probs, "Label": hard[:, 0]}, id="ce_hard_flat_label"),
    GCase("cross_entropy", {"X": probs, "Label": np.array([[1], [-100], [4], [-100]])}, id="ce_ignore_index"),
    GCase("cross_entropy", {"X": probs, "Label": soft}, {"soft_label": True}, stop=("Label_0",), id="ce_soft"),
    GCase("softmax_with_cross_entropy", {"Logits": f64(4, 5), "Label": hard}, id="swce_hard"),
    GCase("softmax_with_cross_entropy", {"Logits": f64(4, 5), "Label": np.array([[1], [7], [4], [7]])},
          {"ignore_index": 7}, id="swce_ignore_index"),
    GCase("softmax_with_cross_entropy", {"Logits": f64(4, 5), "Label": soft}, {"soft_label": True},
          stop=("Label_0",), id="swce_soft"),
    GCase("softmax_with_cross_entropy", {"Logits": f64(2, 4, 3), "Label": np.array([[[1, 0, 3]], [[2, 2, 0]]])},
          {"axis": 1}, id="swce_axis1"),
    GCase("softmax_with_cross_entropy", {"Logits": f64(2, 4, 3), "Label": soft3}, {"axis": 1, "soft_label": True},
          stop=("Label_0",), id="swce_axis1_soft"),
    GCase("softmax_with_cross_entropy", {"Logits": probs, "Label": hard}, {"use_softmax": False},
          id="swce_no_softmax"),
    GCase("softmax_with_cross_entropy", {"Logits": probs, "Label": soft}, {"use_softmax": False, "soft_label": True},
          stop=("Label_0",), id="swce_no_softmax_soft"),
    GCase("top_k", {"X": distinct}, {"k": 2}, id="top_k"),
    # tensors
    GCase("reshape2", {"X": f64(2, 3, 4)}, {"shape": [0, -1]}, id="reshape2"),
    GCase("transpose2", {"X": f64(2, 3, 4)}, {"axis": [1, 2, 0]}, id="transpose2"),
    GCase("slice", {"Input": f64(4, 5, 3)}, {"axes": [0, 1], "starts": [1, -4], "ends": [3, 100]}, id="slice"),
    GCase("slice", {"Input": f64(4, 5)}, {"axes": [0], "starts": [2], "ends": [3], "decrease_axis": [0]},
          id="slice_decrease"),
    GCase("concat", {"X": [f64(2, 3), f64(2, 1), f64(2, 2)]}, {"axis": 1}, id="concat_axis1"),
    GCase("concat", {"X": [f64(2, 3), f64(1, 3)]}, {"axis": -2}, id="concat_axis_neg"),
    GCase("concat", {"X": [f64(2, 3), f64(2, 1), f64(2, 2)]}, {"axis": 1}, stop=("X_1",), id="concat_one_stopped"),
    GCase("split", {"X": f64(2, 6)}, {"axis": 1, "num": 3}, n_out={"Out": 3}, id="split_num"),
    GCase("split", {"X": f64(4, 3)}, {"axis": 0, "sections": [1, -1]}, n_out={"Out": 2}, id="split_sections"),
    GCase("split", {"X": f64(2, 6)}, {"axis": 1, "num": 3}, n_out={"Out": 3}, use=("Out_out_1",),
          id="split_unused_outputs"),
    GCase("cast", {"X": f64(3, 4).astype(np.float32)}, {"in_dtype": 5, "out_dtype": 6}, eps=1e-2, rtol=1e-4,
          id="cast_f32_to_f64"),
    GCase("cast", {"X": f64(3, 4)}, {"in_dtype": 6, "out_dtype": 6}, id="cast_f64"),
    GCase("assign", {"X": f64(3, 4)}, id="assign"),
    GCase("lookup_table_v2", {"Ids": np.array([[0, 2, 2], [5, 0, 1]]), "W": f64(6, 4)}, id="lookup_repeats"),
    GCase("lookup_table_v2", {"Ids": np.array([[0, 2, 2], [5, 0, 1]]), "W": f64(6, 4)}, {"padding_idx": 2},
          id="lookup_padding"),
    # control-flow helpers (recurrent, conditional_block, select_input, split_lod_tensor: in
    # tests/test_backward_control_flow.py, inside the programs they belong to)
    GCase("merge_lod_tensor", {"X": np.array([[True], [False], [False], [True]]),
                               "Mask": np.array([[True], [False], [False], [True]]),
                               "InTrue": f64(2, 3), "InFalse": f64(2, 3)}, id="merge_lod_tensor"),
    GCase("rnn_memory_helper", {"X": f64(3, 4)}, {"dtype": 6}, id="rnn_memory_helper"),
    GCase("select_output", {"X": f64(3, 4), "Mask": np.array([1], np.int32)}, n_out={"Out": 2}, use=("Out_out_1",),
          id="select_output"),
]
from vision_grad_cases import CASES as _VISION  # noqa: E402  - conv, pool, norm, resize, ... (vision ops)

CASES += [GCase(**c) for c in _VISION]
from array_clip_grad_cases import CASES as _ARRAY_CLIP, IN_PROGRAMS as _ARRAY_PROGRAMS  # noqa: E402

CASES += [GCase(**c) for c in _ARRAY_CLIP]
if kc.ir.registry.has_op("dropout"):
    CASES += [
        GCase("dropout", {"X": f64(4, 5)}, {"dropout_prob": 0.4, "fix_seed": True, "seed": 3}, training=True,
              id="dropout_train_downgrade"),
        GCase("dropout", {"X": f64(4, 5)}, {"dropout_prob": 0.4, "fix_seed": True, "seed": 3,
                                            "dropout_implementation": "upscale_in_train"}, training=True,
              id="dropout_train_upscale"),
        GCase("dropout", {"X": f64(4, 5)}, {"dropout_prob": 0.4}, id="dropout_inference"),
    ]
if kc.ir.registry.has_op("rnn"):  # Paddle's fused rnn op; more cases in tests/test_rnn_grad.py
    from opcases.rnn import random_rnn

    def _rnn_case(mode, layers, bidirec, seq_len=None, **attrs):
        x, pre, weights = random_rnn(mode, layers, bidirec, T=3, B=2, I=3, H=2, seed=len(CASES))
        ins = {"Input": x.astype(np.float64), "PreState": [v.astype(np.float64) for v in pre],
               "WeightList": [v.astype(np.float64) for v in weights]}
        if seq_len is not None:
            ins["SequenceLength"] = np.array(seq_len, np.int64)
        return GCase("rnn", ins, {"mode": mode, "num_layers": layers, "is_bidirec": bidirec, "hidden_size": 2,
                                  "input_size": 3, **attrs}, training=True, n_out={"State": len(pre)},
                     id=f"rnn_{mode.lower()}_{layers}l{'_bi' if bidirec else ''}"
                        f"{'_len' if seq_len else ''}{'_dropout' if attrs else ''}")

    CASES += [
        _rnn_case("LSTM", 2, True, [3, 1]),
        _rnn_case("GRU", 2, False, dropout_prob=0.3, seed=7),  # a fixed seed: the same mask every run
        _rnn_case("RNN_TANH", 1, True, [2, 3]),
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


@pytest.mark.gpu
@pytest.mark.skipif(not kc.gpu_available(), reason="needs CuPy and an NVIDIA GPU")
@pytest.mark.parametrize("case", CASES, ids=str)
def test_gradient_kernels_on_gpu_match_cpu(case):
    """The same grad programs on the GPU (CuPy through ctx.xp) give the CPU's float64 gradients."""
    _, prog, feed, _, wrt = build(case)
    fetch = [n + "@GRAD" for n in wrt]
    want = _run(kc.Executor(kc.CPUPlace()), prog, feed, fetch, case.training)
    got = _run(kc.Executor(kc.GPUPlace(0)), prog, feed, fetch, case.training)
    for n, g, w in zip(fetch, got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, n
        if case.training and (case.op == "dropout" or case.attrs.get("dropout_prob", 0) > 0):
            continue  # the GPU draws its own mask
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12, err_msg=f"{case}: {n}")


def test_every_op_is_marked_differentiable_or_not():
    """Each registered forward op has a rule or NO_GRAD; grad ops themselves have none (no double backward)."""
    unmarked = sorted(t for t, d in kc.all_op_defs().items() if grad_rule(t) is None and not t.endswith("_grad"))
    assert unmarked == []
    for t in ("arg_max", "accuracy", "less_than", "fill_constant", "uniform_random", "gaussian_random", "feed",
              "fetch", "increment"):
        assert grad_rule(t) is NO_GRAD, t
    # checked by finite differences in tests/test_backward_control_flow.py, inside the programs they belong to
    in_programs = {"recurrent", "while", "conditional_block", "select_input", "split_lod_tensor"} | _ARRAY_PROGRAMS
    from test_backward_transformer import CASES as TRANSFORMER_CASES  # the Transformer/BERT ops' cases
    from test_backward_sweep_ops import CASES as SWEEP_CASES  # the ops the API sweep found missing
    differentiable = {c.op for c in CASES + TRANSFORMER_CASES + SWEEP_CASES} | in_programs
    assert differentiable == {t for t, r in GRAD_RULES.items() if r is not NO_GRAD and kc.ir.registry.has_op(t)}


# ---------------------------------------------------------------------------------------------------
def _prog(*vars_):
    prog = kc.Program()
    block = prog.global_block()
    for name, shape, kw in vars_:
        block.create_var(name, shape, "float64", **kw)
    return prog, block


def _ops(block, start=0):
    return [str(op) for op in block.ops[start:]]


def test_backward_text_form_of_a_small_program():
    """y = tanh(x) * x; loss = mean(y): x is read twice, so its contributions are renamed and summed.
    The layout is Paddle's (its own append_backward writes exactly these ops for this program)."""
    prog, block = _prog(("x", [3, 4], {"is_parameter": True, "persistable": True}))
    block.append_op("tanh", {"X": "x"}, {"Out": "t"})
    block.append_op("elementwise_mul", {"X": "t", "Y": "x"}, {"Out": "y"})
    block.append_op("mean", {"X": "y"}, {"Out": "loss"})
    pairs = kc.append_backward(block.var("loss"))
    assert [(p.name, g.name) for p, g in pairs] == [("x", "x@GRAD")]
    assert _ops(block) == [
        "tanh(X=[x]) -> (Out=[t])",
        "elementwise_mul(X=[t], Y=[x]) -> (Out=[y]) {axis=-1}",
        "mean(X=[y]) -> (Out=[loss]) {op_role=256}",
        "fill_constant() -> (Out=[loss@GRAD]) {dtype=6, force_cpu=False, op_role=257, place_type=-1, shape=[], "
        "str_value='', value=1.0}",
        "mean_grad(Out@GRAD=[loss@GRAD], X=[y]) -> (X@GRAD=[y@GRAD]) {op_role=1}",
        "elementwise_mul_grad(Out@GRAD=[y@GRAD], X=[t], Y=[x]) -> (X@GRAD=[t@GRAD], Y@GRAD=[x@GRAD@RENAME@block0@0])"
        " {axis=-1, op_role=1}",
        "tanh_grad(Out=[t], Out@GRAD=[t@GRAD]) -> (X@GRAD=[x@GRAD@RENAME@block0@1]) {op_role=1}",
        "sum(X=[x@GRAD@RENAME@block0@0, x@GRAD@RENAME@block0@1]) -> (Out=[x@GRAD]) "
        "{op_role=1, op_role_var=['x', 'x@GRAD']}",
    ]
    assert block.var("x@GRAD@RENAME@block0@0").shape == (3, 4)
    x = rng.standard_normal((3, 4))
    g, = kc.Executor().run(prog, feed={"x": x}, fetch_list=["x@GRAD"], scope=kc.Scope())
    t = np.tanh(x)
    np.testing.assert_allclose(g, (t + x * (1 - t * t)) / x.size, rtol=1e-12)


def test_variable_used_twice_by_one_op_is_accumulated():
    prog, block = _prog(("x", [2, 3], {}))
    block.append_op("elementwise_mul", {"X": "x", "Y": "x"}, {"Out": "y"})
    block.append_op("reduce_sum", {"X": "y"}, {"Out": "loss"}, {"reduce_all": True})
    kc.append_backward(block.var("loss"))
    types = [op.type for op in block.ops]
    assert types == ["elementwise_mul", "reduce_sum", "fill_constant", "reduce_sum_grad", "elementwise_mul_grad",
                     "sum"]
    mg = block.ops[4]
    assert mg.output("X@GRAD") == ["x@GRAD@RENAME@block0@0"] and mg.output("Y@GRAD") == ["x@GRAD@RENAME@block0@1"]
    assert block.ops[5].input("X") == ["x@GRAD@RENAME@block0@0", "x@GRAD@RENAME@block0@1"]
    x = rng.standard_normal((2, 3))
    g, = kc.Executor().run(prog, feed={"x": x}, fetch_list=["x@GRAD"], scope=kc.Scope())
    np.testing.assert_allclose(g, 2 * x, rtol=1e-12)


def test_three_uses_sum_before_first_reader():
    """x feeds three ops; the sum of its three contributions lands before the op reading x@GRAD (here the
    grad op of the op that produced x)."""
    prog, block = _prog(("a", [2, 3], {}))
    block.append_op("scale", {"X": "a"}, {"Out": "x"}, {"scale": 3.0})
    block.append_op("tanh", {"X": "x"}, {"Out": "t"})
    block.append_op("exp", {"X": "x"}, {"Out": "e"})
    block.append_op("elementwise_mul", {"X": "t", "Y": "x"}, {"Out": "m"})
    block.append_op("elementwise_add", {"X": "m", "Y": "e"}, {"Out": "s"})
    block.append_op("reduce_sum", {"X": "s"}, {"Out": "loss"}, {"reduce_all": True})
    kc.append_backward(block.var("loss"))
    types = [op.type for op in block.ops[6:]]
    assert types == ["fill_constant", "reduce_sum_grad", "elementwise_add_grad", "elementwise_mul_grad", "exp_grad",
                     "tanh_grad", "sum", "scale"]
    assert block.ops[-2].input("X") == [f"x@GRAD@RENAME@block0@{i}" for i in range(3)]
    a = rng.standard_normal((2, 3)) * 0.3
    g, = kc.Executor().run(prog, feed={"a": a}, fetch_list=["a@GRAD"], scope=kc.Scope())
    x = 3 * a
    t = np.tanh(x)
    np.testing.assert_allclose(g, 3 * (x * (1 - t * t) + t + np.exp(x)), rtol=1e-12)


def _two_branches(stop_t=False):
    """loss = mean(mul(x, w) + tanh(mul(x, v))), x data (stop_gradient), w and v parameters."""
    prog, block = _prog(("x", [3, 4], {"stop_gradient": True}),
                        ("w", [4, 5], {"is_parameter": True, "persistable": True}),
                        ("v", [4, 5], {"is_parameter": True, "persistable": True}))
    block.append_op("mul", {"X": "x", "Y": "w"}, {"Out": "h"})
    block.append_op("mul", {"X": "x", "Y": "v"}, {"Out": "g"})
    block.append_op("tanh", {"X": "g"}, {"Out": "t"})
    if stop_t:
        block.var("t").set_stop_gradient()
    block.append_op("elementwise_add", {"X": "h", "Y": "t"}, {"Out": "s"})
    block.append_op("reduce_mean", {"X": "s"}, {"Out": "loss"}, {"reduce_all": True, "dim": []})
    return prog, block


@pytest.mark.parametrize("how", ["no_grad_set", "no_grad_set_name", "stop_gradient"])
def test_no_gradient_branches_get_no_grad_ops(how):
    prog, block = _two_branches(stop_t=how == "stop_gradient")
    no_grad = {"no_grad_set": {block.var("v")}, "no_grad_set_name": ["v"], "stop_gradient": None}[how]
    pairs = kc.append_backward(block.var("loss"), no_grad_set=no_grad)
    assert [(p.name, g.name) for p, g in pairs] == [("w", "w@GRAD")]
    assert _ops(block, 5) == [
        "fill_constant() -> (Out=[loss@GRAD]) {dtype=6, force_cpu=False, op_role=257, place_type=-1, shape=[], "
        "str_value='', value=1.0}",
        "reduce_mean_grad(Out@GRAD=[loss@GRAD], X=[s]) -> (X@GRAD=[s@GRAD]) "
        "{dim=[], in_dtype=-1, keep_dim=False, op_role=1, out_dtype=-1, reduce_all=True}",
        "elementwise_add_grad(Out@GRAD=[s@GRAD], X=[h], Y=[t]) -> (X@GRAD=[h@GRAD], Y@GRAD=[]) {axis=-1, op_role=1}",
        "mul_grad(Out@GRAD=[h@GRAD], X=[x], Y=[w]) -> (X@GRAD=[], Y@GRAD=[w@GRAD]) "
        "{op_role=1, op_role_var=['w', 'w@GRAD'], x_num_col_dims=1, y_num_col_dims=1}",
    ]
    assert not any(block.has_var(n) for n in ("v@GRAD", "t@GRAD", "g@GRAD", "x@GRAD"))
    x, w, v = rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    scope = kc.Scope()
    scope.set("w", w)
    scope.set("v", v)
    gw, = kc.Executor().run(prog, feed={"x": x}, fetch_list=["w@GRAD"], scope=scope)
    np.testing.assert_allclose(gw, x.T @ np.full((3, 5), 1 / 15), rtol=1e-12)


def test_parameter_list_and_no_gradient_at_all():
    prog, block = _two_branches()
    pairs = kc.append_backward(block.var("loss"), parameter_list=["v"])
    assert [(p.name, g.name) for p, g in pairs] == [("v", "v@GRAD")]
    assert block.has_var("w@GRAD")  # computed anyway, as in Paddle; only the report is narrowed
    prog, block = _two_branches()
    pairs = kc.append_backward(block.var("loss"), no_grad_set=["w", "v"])
    assert pairs == []
    assert [op.type for op in block.ops[5:]] == ["fill_constant"]


def test_unused_split_output_gets_zero_gradient():
    """Paddle's layout: the gradient of a split output nobody uses is fill_any_like(0) before the concat."""
    prog, block = _prog(("x", [4, 6], {}))
    block.append_op("split", {"X": "x"}, {"Out": ["p0", "p1"]}, {"axis": 1, "num": 2})
    block.append_op("tanh", {"X": "p0"}, {"Out": "t"})
    block.append_op("mean", {"X": "t"}, {"Out": "loss"})
    kc.append_backward(block.var("loss"))
    assert _ops(block, 4) == [
        "mean_grad(Out@GRAD=[loss@GRAD], X=[t]) -> (X@GRAD=[t@GRAD]) {op_role=1}",
        "tanh_grad(Out=[t], Out@GRAD=[t@GRAD]) -> (X@GRAD=[p0@GRAD]) {op_role=1}",
        "fill_any_like(X=[p1]) -> (Out=[p1@GRAD]) {dtype=-1, op_role=1, value=0.0}",
        "concat(X=[p0@GRAD, p1@GRAD]) -> (Out=[x@GRAD]) {axis=1, op_role=1}",
    ]
    x = rng.standard_normal((4, 6))
    g, = kc.Executor().run(prog, feed={"x": x}, fetch_list=["x@GRAD"], scope=kc.Scope())
    want = np.zeros_like(x)
    want[:, :3] = (1 - np.tanh(x[:, :3]) ** 2) / 12
    np.testing.assert_allclose(g, want, rtol=1e-12)


def test_concat_input_without_gradient_is_an_empty_position():
    prog, block = _prog(("x", [2, 3], {}), ("y", [2, 1], {"stop_gradient": True}), ("z", [2, 2], {}))
    block.append_op("concat", {"X": ["x", "y", "z"]}, {"Out": "c"}, {"axis": 1})
    block.append_op("mean", {"X": "c"}, {"Out": "loss"})
    kc.append_backward(block.var("loss"))
    cg = block.ops[-1]
    assert cg.type == "concat_grad" and cg.output("X@GRAD") == ["x@GRAD", EMPTY_VAR, "z@GRAD"]
    assert not block.has_var(EMPTY_VAR)
    feed = {"x": rng.standard_normal((2, 3)), "y": rng.standard_normal((2, 1)), "z": rng.standard_normal((2, 2))}
    gx, gz = kc.Executor().run(prog, feed=feed, fetch_list=["x@GRAD", "z@GRAD"], scope=kc.Scope())
    np.testing.assert_allclose(gx, np.full((2, 3), 1 / 12))
    np.testing.assert_allclose(gz, np.full((2, 2), 1 / 12))


def test_integer_variables_get_no_gradient():
    prog = kc.Program()
    block = prog.global_block()
    block.create_var("ids", [2, 3], "int64")  # not stop_gradient: integers are never differentiated
    block.create_parameter("emb", [5, 4], "float64")
    block.append_op("lookup_table_v2", {"Ids": "ids", "W": "emb"}, {"Out": "e"})
    block.append_op("cast", {"X": "ids"}, {"Out": "f"}, {"in_dtype": 3, "out_dtype": 6})
    block.append_op("reduce_sum", {"X": "e"}, {"Out": "s"}, {"reduce_all": True})
    block.append_op("reduce_sum", {"X": "f"}, {"Out": "s2"}, {"reduce_all": True})
    block.append_op("elementwise_add", {"X": "s", "Y": "s2"}, {"Out": "loss"})
    kc.append_backward(block.var("loss"))
    assert not block.has_var("ids@GRAD")
    assert "cast" not in [op.type for op in block.ops[6:]]
    assert block.has_var("emb@GRAD")


def test_op_without_rule_on_the_loss_path_raises(monkeypatch):
    prog, block = _prog(("x", [2, 3], {"is_parameter": True, "persistable": True}),
                        ("d", [2, 3], {"stop_gradient": True}))
    block.append_op("sigmoid", {"X": "d"}, {"Out": "sd"})  # off the path: d needs no gradient
    block.append_op("tanh", {"X": "x"}, {"Out": "t"})
    block.append_op("elementwise_add", {"X": "t", "Y": "sd"}, {"Out": "s"})
    block.append_op("mean", {"X": "s"}, {"Out": "loss"})
    monkeypatch.delitem(GRAD_RULES, "tanh")
    monkeypatch.delitem(GRAD_RULES, "sigmoid")
    before = str(prog)
    with pytest.raises(NoGradientError, match=r"op 'tanh' \(block 0, op #1\).*\(x\).*no gradient rule for 'tanh'"):
        kc.append_backward(block.var("loss"))
    assert str(prog) == before  # nothing was appended or changed
    # with x cut off, nothing on the path needs tanh's (or sigmoid's) rule
    prog2, block2 = _prog(("d", [2, 3], {"stop_gradient": True}), ("b", [2, 3], {}))
    block2.append_op("tanh", {"X": "d"}, {"Out": "t"})
    block2.append_op("elementwise_add", {"X": "t", "Y": "b"}, {"Out": "s"})
    block2.append_op("mean", {"X": "s"}, {"Out": "loss"})
    kc.append_backward(block2.var("loss"))
    assert "tanh_grad" not in [op.type for op in block2.ops]


def test_missing_intermediate_output_is_named():
    """reshape2_grad reads X's shape from XShape; a reshape2 that wrote none cannot be differentiated."""
    prog, block = _prog(("x", [2, 3], {}))
    block.append_op("reshape2", {"X": "x"}, {"Out": "r"}, {"shape": [6]})
    block.append_op("mean", {"X": "r"}, {"Out": "loss"})
    before = str(prog)
    with pytest.raises(kc.ProgramError, match="writes no XShape output"):
        kc.append_backward(block.var("loss"))
    assert str(prog) == before


def test_control_flow_op_on_the_loss_path_is_named(monkeypatch):
    """A `while` op computing the loss from a parameter, with its rule taken away: the error names it."""
    monkeypatch.delitem(GRAD_RULES, "while")
    prog, block = _prog(("w", [2, 2], {"is_parameter": True, "persistable": True}))
    block.create_var("i", [1], "int64", stop_gradient=True)
    block.create_var("n", [1], "int64", stop_gradient=True)
    block.create_var("cond", [1], "bool", stop_gradient=True)
    block.create_var("scopes", None, None, type=kc.ir.program.VT.STEP_SCOPES)
    sub = prog.create_block()
    sub.append_op("scale", {"X": "w"}, {"Out": "w2"}, {"scale": 2.0})
    sub.append_op("assign", {"X": "w2"}, {"Out": "w"})
    sub.append_op("increment", {"X": "i"}, {"Out": "i"})
    sub.append_op("less_than", {"X": "i", "Y": "n"}, {"Out": "cond"})
    prog.rollback()
    block.append_op("while", {"X": ["w", "i", "n"], "Condition": "cond"}, {"Out": ["w", "i", "cond"],
                    "StepScopes": "scopes"}, {"sub_block": sub})
    block.append_op("mean", {"X": "w"}, {"Out": "loss"})
    with pytest.raises(NoGradientError, match="'while'"):
        kc.append_backward(block.var("loss"))


def test_gradients_of_chosen_inputs():
    prog, block = _prog(("x", [3, 4], {"stop_gradient": True}), ("w", [4, 2], {}), ("b", [2], {}))
    block.append_op("mul", {"X": "x", "Y": "w"}, {"Out": "h"})
    block.append_op("elementwise_add", {"X": "h", "Y": "b"}, {"Out": "z"})
    block.append_op("sigmoid", {"X": "z"}, {"Out": "y"})
    gx, gh, gb = kc.gradients([block.var("y")], [block.var("x"), block.var("h"), "b"])
    assert (gx.name, gh.name, gb.name) == ("x@GRAD", "h@GRAD", "b@GRAD")
    assert not block.has_var("w@GRAD")  # w was not asked for
    assert block.ops[3].type == "fill_any_like"
    x, w, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal(2)
    scope = kc.Scope()
    scope.set("w", w)
    scope.set("b", b)
    got = kc.Executor().run(prog, feed={"x": x}, fetch_list=[gx, gh, gb], scope=scope)
    s = 1 / (1 + np.exp(-(x @ w + b)))
    dz = s * (1 - s)
    for g, want in zip(got, (dz @ w.T, dz, dz.sum(0))):
        np.testing.assert_allclose(g, want, rtol=1e-12)
    prog2, block2 = _prog(("x", [3], {}), ("u", [3], {}))
    block2.append_op("tanh", {"X": "x"}, {"Out": "t"})
    assert kc.gradients(block2.var("t"), [block2.var("u")]) == [None]


def test_second_backward_renames_existing_gradients():
    prog, block = _prog(("x", [3], {}))
    block.append_op("tanh", {"X": "x"}, {"Out": "t"})
    block.append_op("mean", {"X": "t"}, {"Out": "loss"})
    kc.append_backward(block.var("loss"))
    gx, = kc.gradients(block.var("loss"), [block.var("x")])
    assert gx.name != "x@GRAD" and gx.name.startswith("x@GRAD")
    x = rng.standard_normal(3)
    a, b = kc.Executor().run(prog, feed={"x": x}, fetch_list=["x@GRAD", gx], scope=kc.Scope())
    np.testing.assert_allclose(a, (1 - np.tanh(x) ** 2) / 3, rtol=1e-12)
    np.testing.assert_allclose(b, a, rtol=1e-12)


def test_kernels_do_not_mutate_inputs():
    prog, block = _prog(("x", [3, 4], {}), ("y", [4], {}))
    block.append_op("elementwise_add", {"X": "x", "Y": "y"}, {"Out": "s"})
    block.append_op("relu", {"X": "s"}, {"Out": "r"})
    block.append_op("softmax", {"X": "r"}, {"Out": "p"})
    block.append_op("reduce_sum", {"X": "p"}, {"Out": "loss"}, {"reduce_all": True})
    kc.append_backward(block.var("loss"))
    x, y = rng.standard_normal((3, 4)), rng.standard_normal(4)
    scope = kc.Scope()
    kc.Executor().run(prog, feed={"x": x, "y": y}, scope=scope, fetch_list=[])
    snapshot = {v.name: np.array(scope.get(v.name)) for v in block.vars if scope.find_var(v.name) is not None
                and scope.get(v.name) is not None}
    kc.Executor().run(prog, feed={"x": x, "y": y}, scope=scope, fetch_list=[])
    for name, before in snapshot.items():
        np.testing.assert_array_equal(scope.get(name), before, err_msg=name)


# ---------------------------------------------------------------------------------------------------
# Paddle parity
ROOT = Path(__file__).resolve().parent.parent
ORACLE = ROOT / "tests" / "paddle_oracle"
PADDLE3 = ROOT / ".venv-paddle" / "bin" / "python"


def _run_paddle(*args):
    env = dict(os.environ, FLAGS_enable_pir_api="0", GLOG_minloglevel="1", PYTHONWARNINGS="ignore")
    r = subprocess.run([str(PADDLE3), *map(str, args)], capture_output=True, text=True, env=env, timeout=300)
    if r.returncode != 0:
        pytest.fail(f"Paddle failed running {args}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")


@pytest.fixture(scope="module")
def p3(tmp_path_factory) -> Path:
    if not PADDLE3.exists():
        pytest.skip(f"no Paddle 3.3.1 oracle at {PADDLE3.parent.parent}: run ./dev test, or "
                    f"bash tests/paddle_oracle/setup_env.sh .venv-paddle 3.3.1")
    out = tmp_path_factory.mktemp("paddle_backward")
    _run_paddle(ORACLE / "make_programs.py", out)
    _run_paddle(ORACLE / "make_backward_cases.py", out)
    return out


def _train_mlp(p3):
    main = kc.Program.from_bytes((p3 / "train_mlp.main.pb").read_bytes())
    ref = np.load(p3 / "train_mlp.npz")
    scope = kc.Scope()
    for k in ref.files:
        if k.startswith("init/"):
            scope.set(k[5:], ref[k].copy())
    return main, ref, scope


def _without_optimizer(prog):
    """The program up to its first optimize op (op_role 2): forward and backward only."""
    block = prog.global_block()
    while block.ops and block.ops[-1].attr("op_role") == 2:
        block.remove_op(len(block.ops) - 1)
    return prog


def _signature(op, skip=("op_callstack", "op_namescope", "op_device", "with_quant_attr")):
    """(type, inputs, outputs, attributes); slots naming no variable are left out (Paddle writes some, e.g.
    scale's BiasTensor=[], that kernelcore's descs do not)."""
    return (op.type, {k: v for k, v in op.inputs.items() if v}, {k: v for k, v in op.outputs.items() if v},
            {k: v for k, v in op.attrs.items() if k not in skip})


def _build_mlp():
    """Paddle's train_mlp network, written with kernelcore's API (fc = mul + elementwise_add axis=1)."""
    prog = kc.Program()
    with kc.program_guard(prog):
        block = prog.global_block()
        block.create_var("x", [8, 13], "float32", stop_gradient=True)  # paddle.static.data: stop_gradient
        block.create_var("label", [8, 1], "int64", stop_gradient=True)
        for i, (a, b) in enumerate(((13, 32), (32, 10))):
            block.create_parameter(f"fc_{i}.w_0", [a, b])
            block.create_parameter(f"fc_{i}.b_0", [b])
        op = kc.op
        h0 = op.mul("x", "fc_0.w_0", out="fc_0.tmp_0")
        h1 = op.elementwise_add(h0, "fc_0.b_0", axis=1, out="fc_0.tmp_1")
        h2 = op.relu(h1, out="fc_0.tmp_2")
        z0 = op.mul(h2, "fc_1.w_0", out="fc_1.tmp_0")
        z1 = op.elementwise_add(z0, "fc_1.b_0", axis=1, out="fc_1.tmp_1")
        ce = op.softmax_with_cross_entropy(z1, "label", out={"Softmax": "softmax_with_cross_entropy_0.tmp_0",
                                                                "Loss": "softmax_with_cross_entropy_0.tmp_1"})
        loss = op.reduce_mean(ce, reduce_all=True, dim=[], out="mean_0.tmp_0")
    return prog, loss


@pytest.mark.paddle
def test_paddle_training_step_runs_here(p3):
    """Paddle's train_mlp.main.pb (forward, Paddle's grad ops, sgd x4): one step here gives Paddle's loss and
    updated parameters."""
    assert kc.ir.registry.has_op("sgd"), "the sgd op is not registered (kernelcore/ops/optimizer.py)"
    main, ref, scope = _train_mlp(p3)
    loss, = kc.Executor().run(main, feed={"x": ref["x"], "label": ref["label"]}, fetch_list=["mean_0.tmp_0"],
                              scope=scope)
    np.testing.assert_allclose(loss, ref["loss"], rtol=1e-5)
    for k in ref.files:
        if k.startswith("after/"):
            np.testing.assert_allclose(scope.get(k[6:]), ref[k], rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.paddle
def test_paddle_gradients_of_train_mlp(p3):
    """The backward half of Paddle's program runs here and its gradients are Paddle's: (init - after) / lr."""
    main, ref, scope = _train_mlp(p3)
    _without_optimizer(main)
    names = ["fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"]
    got = kc.Executor().run(main, feed={"x": ref["x"], "label": ref["label"]},
                            fetch_list=[n + "@GRAD" for n in names], scope=scope)
    for n, g in zip(names, got):
        want = (ref[f"init/{n}"].astype(np.float64) - ref[f"after/{n}"]) / 0.1
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5, err_msg=n)


@pytest.mark.paddle
def test_own_mlp_backward_is_paddles(p3):
    """The MLP built here + append_backward writes the grad ops Paddle's program holds (types, slots, names,
    attributes) and computes the same gradients."""
    paddle_prog, ref, scope = _train_mlp(p3)
    _without_optimizer(paddle_prog)
    prog, loss = _build_mlp()
    pairs = kc.append_backward(loss)
    assert [(p.name, g.name) for p, g in pairs] == [(n, n + "@GRAD") for n in  # declaration order, as Paddle's
                                                    ("fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0")]
    ours, theirs = prog.global_block().ops, paddle_prog.global_block().ops
    assert len(ours) == len(theirs)
    for a, b in zip(ours[6:], theirs[6:]):  # the loss op onwards: roles, the seed, the grad ops
        ta, tb = _signature(a), _signature(b)
        assert ta[:3] == tb[:3]
        assert set(ta[3]) <= set(tb[3]), (a.type, set(ta[3]) - set(tb[3]))
        assert {k: v for k, v in tb[3].items() if k in ta[3]} == ta[3], a.type
    grads = [v.name for v in prog.global_block().vars if v.name.endswith("@GRAD")]
    assert sorted(grads) == sorted(v.name for v in paddle_prog.global_block().vars if v.name.endswith("@GRAD"))
    feed = {"x": ref["x"], "label": ref["label"]}
    want = kc.Executor().run(paddle_prog, feed=feed, fetch_list=grads, scope=scope)
    scope2 = kc.Scope()
    for k in ref.files:
        if k.startswith("init/"):
            scope2.set(k[5:], ref[k].copy())
    got = kc.Executor().run(prog, feed=feed, fetch_list=grads, scope=scope2)
    for n, g, w in zip(grads, got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, n
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7, err_msg=n)


BACKWARD_CASES = ["mlp_all_ops", "twice", "square", "thrice", "split_unused", "concat_stopped", "sum_scale",
                  "stop_gradient_var", "no_grad_set", "parameter_subset", "softmax_ce", "swce_soft", "embedding",
                  "cast_assign", "top_k"] + [  # paddle.nn's activation layers (make_backward_cases.ACTIVATIONS)
    f"act_{a}" for a in ("relu6", "elu", "celu", "selu", "silu", "swish", "hardswish", "hardsigmoid", "hardtanh",
                         "leakyrelu", "mish", "logsigmoid", "softsign", "tanhshrink", "hardshrink", "softshrink",
                         "thresholdedrelu", "maxout")]


@pytest.mark.paddle
@pytest.mark.parametrize("case", BACKWARD_CASES)
def test_paddle_backward_cases(p3, case):
    """Paddle built a forward program and ran its own append_backward on it (make_backward_cases.py). Here the
    same forward program gets the same grad ops (types, slots, names, roles, attributes) and the same gradient
    values. One intended difference: a branch cut by no_grad_set gets no grad ops here (Paddle keeps a
    tanh_grad whose result nothing reads); kernelcore writes what Paddle writes when the same branch is cut by
    stop_gradient (`same_ops_as`)."""
    meta = json.loads((p3 / f"bw_{case}.json").read_text())
    ref = np.load(p3 / f"bw_{case}.npz")
    fwd = kc.Program.from_bytes((p3 / f"bw_{case}.fwd.pb").read_bytes())
    paddle_prog = kc.Program.from_bytes((p3 / f"bw_{meta['same_ops_as']}.bwd.pb").read_bytes())
    block = fwd.global_block()
    pairs = kc.append_backward(block.var(meta["loss"]), parameter_list=meta.get("parameter_list"),
                               no_grad_set=meta.get("no_grad_set"))
    # Paddle lists parameters in creation order, which a serialized program does not keep: compare as sets
    assert sorted([p.name, g.name] for p, g in pairs) == sorted(meta["pairs"])
    ours, theirs = block.ops, paddle_prog.global_block().ops
    assert [op.type for op in ours] == [op.type for op in theirs]
    for a, b in zip(ours, theirs):
        ta, tb = _signature(a), _signature(b)
        assert ta[:3] == tb[:3], (ta[:3], tb[:3])
        assert {k: v for k, v in tb[3].items() if k in ta[3]} == ta[3], (a.type, ta[3], tb[3])
    scope = kc.Scope()
    feed = {}
    for k in ref.files:
        if k.startswith("init/"):
            scope.set(k[5:], ref[k].copy())
        elif k.startswith("feed/"):
            feed[k[5:]] = ref[k]
    grads = [k[5:] for k in ref.files if k.startswith("grad/") and block.has_var(k[5:])]
    assert grads
    got = kc.Executor().run(fwd, feed=feed, fetch_list=grads, scope=scope)
    for n, g in zip(grads, got):
        w = ref[f"grad/{n}"]
        assert g.shape == w.shape and g.dtype == w.dtype, (n, g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"{case}: {n}")


@pytest.mark.parametrize("op", ["elementwise_add", "elementwise_max", "elementwise_pow"])
def test_fetched_gradients_can_be_written(op):
    """An elementwise gradient that sums nothing is handed on without a copy (grad/math.py's unbroadcast), but
    never as a read-only broadcast view: every gradient a run gives back takes in-place writes."""
    from test_backward_control_flow import weighted_loss
    prog = kc.Program()
    with kc.program_guard(prog):
        g = prog.global_block()
        x, y = g.create_var("x", [3, 4], "float64"), g.create_var("y", [3, 4], "float64")
        out = getattr(kc.op, op)(x, y)
        loss, feed = weighted_loss(g, [out])
    kc.append_backward(g.var(loss.name))
    rng = np.random.default_rng(0)
    feed.update(x=rng.random((3, 4)) + 0.5, y=rng.random((3, 4)))
    got = kc.Executor().run(prog, feed=feed, fetch_list=["x@GRAD", "y@GRAD"], scope=kc.Scope(), training=True)
    for a in got:
        assert a.flags.writeable
        a *= 2.0
