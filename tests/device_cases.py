"""The fused device kernels' cases (kernelcore/device): one op each, on inputs it takes, with the fused kernels it
must run; and cases its gate sends to the reference. tests/test_device_kernels.py runs them on the strict stand-in,
bench/gpu_device_check.py on a real GPU; both against the reference kernels on the CPU."""
from __future__ import annotations

import numpy as np

import kernelcore as kc
from kernelcore.runtime import fast_paths
from kernelcore.runtime.place import to_host
from opcases import Case
from opcases.rnn import random_rnn

RNG = np.random.default_rng(7)


def f32(*shape, low=None):
    a = RNG.standard_normal(shape).astype(np.float32)
    return np.abs(a) + low if low is not None else a


def _bn(c):
    return {"Scale": f32(c), "Bias": f32(c), "Mean": f32(c), "Variance": f32(c, low=0.5)}


def _bn_grad(shape, axis, g=None):
    x = f32(*shape)
    others = tuple(i for i in range(len(shape)) if i != axis)
    c = shape[axis]
    return {"X": x, "Scale": f32(c), "Bias": f32(c), "SavedMean": x.mean(axis=others),
            "SavedVariance": (1 / np.sqrt(x.var(axis=others) + 1e-5)).astype(np.float32),
            "MeanOut": f32(c), "VarianceOut": f32(c, low=0.5), "Y@GRAD": f32(*shape)}


def _ln_grad(shape, axis, affine):
    x = f32(*shape)
    rows = x.reshape(int(np.prod(shape[:axis])), -1)
    right = rows.shape[1]
    ins = {"X": x, "Mean": rows.mean(axis=1), "Variance": rows.var(axis=1), "Y@GRAD": f32(*shape)}
    if affine:
        ins.update({"Scale": f32(right), "Bias": f32(right)})
    return ins


def _opt(shape=(4, 3)):
    return {"Param": f32(*shape), "Grad": f32(*shape), "LearningRate": np.float32([0.1])}


def _adam(**extra):
    return {**_opt(), "Moment1": f32(4, 3), "Moment2": f32(4, 3, low=0.1), "Beta1Pow": np.float32([0.81]),
            "Beta2Pow": np.float32([0.998]), **extra}


def _lstm(layers, bidirec, **kw):
    x, pre, weights = random_rnn("LSTM", layers, bidirec, **kw)
    return {"Input": x, "PreState": pre, "WeightList": weights}


def _lstm_attrs(inputs, layers, bidirec, **extra):
    return {"mode": "LSTM", "num_layers": layers, "is_bidirec": bidirec, "hidden_size": inputs["PreState"][0].shape[2],
            "input_size": inputs["Input"].shape[2], **extra}


LSTM1, LSTM2 = _lstm(1, False, T=4, B=3, I=5, H=6), _lstm(2, True, T=3, B=2, I=4, H=5)


def _gru(layers, bidirec, **kw):
    x, pre, weights = random_rnn("GRU", layers, bidirec, **kw)
    return {"Input": x, "PreState": pre, "WeightList": weights}


GRU1, GRU2 = _gru(1, False, T=5, B=3, I=4, H=7), _gru(2, True, T=3, B=2, I=5, H=4)
GRU_MASKED = {**_gru(1, False, T=4, B=3, I=3, H=5), "SequenceLength": np.array([4, 2, 0], np.int32)}


# (case, training, the fused kernels it must run)
FUSED = [
    (Case("batch_norm", {"X": f32(2, 4, 5, 6), **_bn(4)}, None, {"is_test": True}, id="bn-infer-nchw"), False,
     {"kc_batch_norm_affine", "kc_batch_norm_keep_stats"}),
    (Case("batch_norm", {"X": f32(2, 3, 4, 5), **_bn(5)}, None, {"is_test": True, "data_layout": "NHWC"},
          id="bn-infer-nhwc"), False, {"kc_batch_norm_affine"}),
    (Case("batch_norm", {"X": f32(6, 5), **_bn(5)}, None, {}, id="bn-train-2d"), True,
     {"kc_channel_mean", "kc_centre", "kc_channel_mean_square", "kc_batch_norm_normalise",
      "kc_batch_norm_running"}),
    (Case("batch_norm", {"X": f32(3, 4, 5, 6), **_bn(4)}, None, {"momentum": 0.8}, id="bn-train-nchw"), True,
     {"kc_batch_norm_normalise", "kc_batch_norm_running"}),
    (Case("batch_norm", {"X": f32(2, 3, 2, 4, 5), **_bn(5), "MomentumTensor": np.float32([0.7])}, None,
          {"data_layout": "NDHWC"}, id="bn-train-ndhwc-momentum-tensor"), True, {"kc_batch_norm_running"}),
    (Case("batch_norm_grad", _bn_grad((3, 4, 5, 6), 1), None, {}, id="bn-grad-batch"), True,
     {"kc_centre", "kc_channel_sum", "kc_channel_dot", "kc_batch_norm_grad_dx"}),
    (Case("batch_norm_grad", _bn_grad((3, 5, 6, 4), 3), None, {"use_global_stats": True, "data_layout": "NHWC"},
          id="bn-grad-global-nhwc"), True, {"kc_batch_norm_grad_dx"}),
    (Case("layer_norm", {"X": f32(4, 3, 70), "Scale": f32(210), "Bias": f32(210)}, None, {}, id="ln-axis1"),
     False, {"kc_layer_norm_rows"}),
    (Case("layer_norm", {"X": f32(4, 3, 33)}, None, {"begin_norm_axis": 2}, id="ln-axis2-no-affine"), False,
     {"kc_layer_norm_rows"}),
    (Case("layer_norm_grad", _ln_grad((4, 3, 70), 1, affine=True), None, {"begin_norm_axis": 1}, id="ln-grad-affine"),
     True, {"kc_layer_norm_grad_rows", "kc_channel_dot", "kc_channel_sum"}),
    (Case("layer_norm_grad", _ln_grad((5, 2, 33), 2, affine=False), None, {"begin_norm_axis": 2},
          id="ln-grad-plain"), True, {"kc_layer_norm_grad_rows"}),
    (Case("softmax", {"X": f32(3, 5, 300) * 4}, None, {}, id="softmax-last"), False, {"kc_softmax_rows"}),
    (Case("log_softmax", {"X": f32(6, 17) * 4}, None, {"axis": 1}, id="log-softmax-last"), False,
     {"kc_softmax_rows"}),
    (Case("softmax_grad", {"Out": np.abs(f32(4, 9)), "Out@GRAD": f32(4, 9)}, None, {"axis": -1},
          id="softmax-grad"), False, {"kc_softmax_grad_rows"}),
    (Case("log_softmax_grad", {"Out": -np.abs(f32(5, 40)), "Out@GRAD": f32(5, 40)}, None, {"axis": -1},
          id="log-softmax-grad"), False, {"kc_log_softmax_grad_rows"}),
    (Case("sigmoid", {"X": f32(3, 7) * 5}, None, {}, id="sigmoid"), False, {"kc_sigmoid"}),
    (Case("relu_grad", {"Out": np.maximum(f32(3, 7), 0), "Out@GRAD": f32(3, 7)}, None, {}, id="relu-grad"), False,
     {"kc_relu_grad"}),
    (Case("sigmoid_grad", {"Out": np.abs(f32(5)) % 1, "Out@GRAD": f32(5)}, None, {}, id="sigmoid-grad"), False,
     {"kc_sigmoid_grad"}),
    (Case("tanh_grad", {"Out": np.tanh(f32(2, 3)), "Out@GRAD": f32(2, 3)}, None, {}, id="tanh-grad"), False,
     {"kc_tanh_grad"}),
    (Case("hard_swish", {"X": f32(4, 9) * 4}, None, {}, id="hard-swish"), False, {"kc_hard_swish"}),
    (Case("hard_swish_grad", {"X": f32(4, 9) * 4, "Out@GRAD": f32(4, 9)}, None,
          {"threshold": 5.0, "scale": 7.0, "offset": 2.5}, id="hard-swish-grad"), False, {"kc_hard_swish_grad"}),
    (Case("swish", {"X": f32(3, 8) * 4}, None, {"beta": 1.5}, id="swish"), False, {"kc_swish"}),
    (Case("swish_grad", {"X": f32(3, 8) * 4, "Out@GRAD": f32(3, 8)}, None, {"beta": 0.7}, id="swish-grad"), False,
     {"kc_swish_grad"}),
    (Case("relu6_grad", {"Out": np.clip(f32(5, 6) * 4, 0, 6), "Out@GRAD": f32(5, 6)}, None, {},
          id="relu6-grad"), False, {"kc_relu6_grad"}),
    (Case("gelu", {"X": f32(4, 33) * 3}, None, {"approximate": False}, id="gelu-exact"), False, {"kc_gelu"}),
    (Case("gelu", {"X": f32(4, 33) * 3}, None, {"approximate": True}, id="gelu-tanh"), False, {"kc_gelu"}),
    (Case("gelu_grad", {"X": f32(4, 33) * 3, "Out@GRAD": f32(4, 33)}, None, {"approximate": False},
          id="gelu-grad-exact"), False, {"kc_gelu_grad"}),
    (Case("gelu_grad", {"X": f32(4, 33) * 3, "Out@GRAD": f32(4, 33)}, None, {"approximate": True},
          id="gelu-grad-tanh"), False, {"kc_gelu_grad"}),
    (Case("hard_sigmoid", {"X": f32(4, 9) * 5}, None, {"slope": 0.1666667, "offset": 0.5}, id="hard-sigmoid"),
     False, {"kc_hard_sigmoid"}),
    (Case("hard_sigmoid_grad", {"Out": np.clip(f32(4, 9), 0, 1), "Out@GRAD": f32(4, 9)}, None, {"slope": 0.2},
          id="hard-sigmoid-grad"), False, {"kc_hard_sigmoid_grad"}),
    (Case("leaky_relu", {"X": f32(3, 8)}, None, {"alpha": 0.1}, id="leaky-relu"), False, {"kc_leaky_relu"}),
    (Case("leaky_relu_grad", {"X": f32(3, 8), "Out@GRAD": f32(3, 8)}, None, {"alpha": 0.1}, id="leaky-relu-grad"),
     False, {"kc_leaky_relu_grad"}),
    (Case("elu", {"X": f32(3, 8) * 3}, None, {"alpha": 0.7}, id="elu"), False, {"kc_elu"}),
    (Case("elu_grad", {"X": f32(3, 8) * 3, "Out": f32(3, 8), "Out@GRAD": f32(3, 8)}, None, {"alpha": 0.7},
          id="elu-grad"), False, {"kc_elu_grad"}),
    (Case("selu", {"X": f32(3, 8) * 3}, None, {}, id="selu"), False, {"kc_selu"}),
    (Case("selu_grad", {"Out": f32(3, 8), "Out@GRAD": f32(3, 8)}, None, {"scale": 1.2, "alpha": 1.5},
          id="selu-grad"), False, {"kc_selu_grad"}),
    (Case("silu", {"X": f32(3, 8) * 4}, None, {}, id="silu"), False, {"kc_silu"}),
    (Case("silu_grad", {"X": f32(3, 8) * 4, "Out": f32(3, 8), "Out@GRAD": f32(3, 8)}, None, {}, id="silu-grad"),
     False, {"kc_silu_grad"}),
    (Case("softplus", {"X": f32(4, 8) * 4}, None, {"beta": 2.0, "threshold": 3.0}, id="softplus-threshold"), False,
     {"kc_softplus"}),
    (Case("softplus_grad", {"X": f32(4, 8) * 4, "Out@GRAD": f32(4, 8)}, None, {"beta": 2.0, "threshold": 3.0},
          id="softplus-grad"), False, {"kc_softplus_grad"}),
    (Case("mish", {"X": f32(4, 8) * 4}, None, {"threshold": 2.0}, id="mish-threshold"), False, {"kc_mish"}),
    (Case("mish_grad", {"X": f32(4, 8) * 4, "Out@GRAD": f32(4, 8)}, None, {"threshold": 2.0}, id="mish-grad"),
     False, {"kc_mish_grad"}),
    (Case("sgd", _opt(), None, {}, id="sgd"), True, {"kc_sgd"}),
    (Case("momentum", {**_opt(), "Velocity": f32(4, 3)}, None, {"mu": 0.9}, id="momentum"), True,
     {"kc_momentum"}),
    (Case("momentum", {**_opt(), "Velocity": f32(4, 3)}, None,
          {"mu": 0.8, "use_nesterov": True, "regularization_method": "l2_decay", "regularization_coeff": 0.01,
           "rescale_grad": 0.5}, id="momentum-nesterov-l2"), True, {"kc_momentum"}),
    (Case("adam", _adam(), None, {"beta1": 0.9, "beta2": 0.999}, id="adam"), True, {"kc_adam"}),
    (Case("adam", _adam(), None, {"beta1": 0.8, "beta2": 0.95, "use_global_beta_pow": True},
          id="adam-global-beta-pow"), True, {"kc_adam"}),
    (Case("adamw", _adam(), None, {"lr_ratio": 0.5, "coeff": 0.02, "with_decay": True}, id="adamw-decay"), True,
     {"kc_adam"}),
    (Case("adamw", _adam(), None, {"with_decay": False}, id="adamw-no-decay"), True, {"kc_adam"}),
    (Case("depthwise_conv2d", {"Input": f32(2, 6, 9, 8), "Filter": f32(6, 1, 3, 3)}, None,
          {"groups": 6, "paddings": [1, 1]}, id="depthwise-3x3"), False, {"kc_depthwise_forward"}),
    (Case("conv2d", {"Input": f32(2, 4, 11, 10), "Filter": f32(8, 1, 5, 3)}, None,
          {"groups": 4, "strides": [2, 1], "paddings": [2, 1, 0, 1], "dilations": [1, 2]},
          id="depthwise-multiplier-strided-dilated"), False, {"kc_depthwise_forward"}),
    (Case("depthwise_conv2d_grad", {"Input": f32(2, 6, 9, 8), "Filter": f32(6, 1, 3, 3),
                                    "Output@GRAD": f32(2, 6, 5, 4)}, None,
          {"groups": 6, "paddings": [1, 1], "strides": [2, 2]}, id="depthwise-grad-strided"), True,
     {"kc_depthwise_input_grad", "kc_depthwise_filter_grad"}),
    (Case("conv2d_grad", {"Input": f32(2, 4, 11, 10), "Filter": f32(8, 1, 5, 3), "Output@GRAD": f32(2, 8, 5, 7)},
          None, {"groups": 4, "strides": [2, 1], "paddings": [2, 1, 0, 1], "dilations": [1, 2]},
          id="depthwise-grad-multiplier"), True, {"kc_depthwise_input_grad", "kc_depthwise_filter_grad"}),
    (Case("conv2d", {"Input": f32(2, 3, 8, 7), "Filter": f32(5, 3, 3, 3)}, None, {"paddings": [1, 1]},
          id="conv-3x3"), False, {"kc_conv_tap_sum"}),
    (Case("conv2d", {"Input": f32(2, 3, 11, 10), "Filter": f32(4, 3, 3, 2)}, None,
          {"paddings": [2, 0, 1, 1], "strides": [2, 2], "dilations": [2, 1]}, id="conv-strided-dilated"), False,
     {"kc_conv_tap_sum"}),
    (Case("conv2d", {"Input": f32(1, 3, 9, 9), "Filter": f32(6, 3, 7, 7)}, None,
          {"paddings": [3, 3], "strides": [2, 2]}, id="conv-7x7-stem"), False, {"kc_conv_tap_sum"}),
    (Case("conv2d", {"Input": f32(2, 4, 5, 6), "Filter": f32(3, 4, 1, 1)}, None, {"strides": [2, 2]},
          id="conv-1x1-strided"), False, {"kc_conv_tap_sum"}),
    (Case("conv2d_grad", {"Input": f32(2, 3, 8, 7), "Filter": f32(5, 3, 3, 3), "Output@GRAD": f32(2, 5, 8, 7)},
          None, {"paddings": [1, 1]}, id="conv-grad-3x3"), True, {"kc_col2im"}),
    (Case("conv2d_grad", {"Input": f32(2, 3, 11, 10), "Filter": f32(4, 3, 3, 2), "Output@GRAD": f32(2, 4, 5, 6)},
          None, {"paddings": [2, 0, 1, 1], "strides": [2, 2], "dilations": [2, 1]}, id="conv-grad-strided-dilated"),
     True, {"kc_col2im"}),
    (Case("pool2d", {"X": f32(2, 3, 9, 8)}, None, {"pooling_type": "max", "ksize": [3, 3], "strides": [2, 2],
                                                   "paddings": [1, 1]}, id="max-pool-3x3-s2"), False, {"kc_pool2d"}),
    (Case("pool2d", {"X": f32(2, 3, 9, 8)}, None, {"pooling_type": "avg", "ksize": [3, 2], "strides": [2, 3],
                                                   "paddings": [1, 0, 1, 1], "ceil_mode": True},
          id="avg-pool-exclusive-ceil"), False, {"kc_pool2d"}),
    (Case("pool2d", {"X": f32(2, 3, 7, 7)}, None, {"pooling_type": "avg", "ksize": [3, 3], "paddings": [1, 1],
                                                   "exclusive": False}, id="avg-pool-inclusive"), False,
     {"kc_pool2d"}),
    (Case("pool2d", {"X": f32(2, 5, 7, 7)}, None, {"pooling_type": "avg", "ksize": [1, 1], "global_pooling": True},
          id="avg-pool-global"), False, {"kc_pool2d"}),
    (Case("rnn", LSTM1, None, _lstm_attrs(LSTM1, 1, False, is_test=True), id="lstm-1-layer"), False,
     {"kc_lstm_cell"}),
    (Case("rnn", LSTM2, None, _lstm_attrs(LSTM2, 2, True), id="lstm-2-bi-train"), True, {"kc_lstm_cell"}),
    (Case("rnn", GRU1, None, {**_lstm_attrs(GRU1, 1, False, is_test=True), "mode": "GRU"}, id="gru-1-layer"),
     False, {"kc_gru_cell"}),
    (Case("rnn", GRU2, None, {**_lstm_attrs(GRU2, 2, True), "mode": "GRU"}, id="gru-2-bi-train"), True,
     {"kc_gru_cell"}),
    (Case("rnn", GRU_MASKED, None, {**_lstm_attrs(GRU_MASKED, 1, False, is_test=True), "mode": "GRU"},
          id="gru-sequence-length"), False, {"kc_gru_cell"}),
]



def build(case: Case):
    """A program holding one `case.op` op: (program, feed, {out slot: [names]}); a duplicable output gets as many
    variables as the op writes (an LSTM's State two: h and c)."""
    prog = kc.Program()
    block = prog.global_block()
    feed, ins = {}, {}
    for slot, value in case.inputs.items():
        names = []
        for i, v in enumerate(value if isinstance(value, list) else [value]):
            v = np.asarray(v)
            block.create_var(f"{slot}_{i}", v.shape, v.dtype)
            feed[f"{slot}_{i}"] = v
            names.append(f"{slot}_{i}")
        ins[slot] = names
    outs = {}
    for s in kc.get_op_def(case.op).outputs:
        n = len(case.inputs["PreState"]) if (case.op, s.name) == ("rnn", "State") else 1
        outs[s.name] = [f"{s.name}_out_{i}" for i in range(n)]
    block.append_op(case.op, inputs=ins, outputs=outs, attrs=case.attrs)
    return prog, feed, outs


def outputs(case: Case, place, training: bool) -> dict:
    prog, feed, outs = build(case)
    exe = kc.Executor(place)
    scope = kc.Scope()
    exe.run(prog, feed=feed, fetch_list=[], scope=scope, training=training)
    got = {}
    for slot, names in outs.items():
        for i, name in enumerate(names):
            v = scope.find_var(name).value
            if v is None or not hasattr(v, "shape"):  # not written; a reserve of Python objects (rnn's)
                continue
            if isinstance(v, np.ndarray) and place.kind != "cpu":
                raise AssertionError(f"{case}: {slot} left on the host")
            got[slot if i == 0 else f"{slot}[{i}]"] = to_host(v)
    return got


def reference(case: Case, training: bool) -> dict:
    with fast_paths.switched_off():
        return outputs(case, kc.CPUPlace(), training)


def assert_same(got: dict, want: dict, case: Case) -> None:
    assert got.keys() == want.keys(), case
    for slot, w in want.items():
        np.testing.assert_allclose(got[slot], w, rtol=2e-5, atol=2e-6, err_msg=f"{case}: {slot}")
        assert got[slot].dtype == w.dtype and got[slot].shape == w.shape, f"{case}: {slot}"


def _pool_grad(attrs, shape=(2, 3, 9, 8), ties=False):
    """pool2d_grad's inputs: X, the forward's Out (the reference's, on the CPU: max pooling's gradient goes where
    X equals it) and an Out@GRAD. With ties, X holds a few values only, so windows hold their max more than once
    (the gradient goes to the first)."""
    x = np.round(f32(*shape)) if ties else f32(*shape)
    case = Case("pool2d", {"X": x}, None, attrs)
    with fast_paths.switched_off():
        out = outputs(case, kc.CPUPlace(), False)["Out"]
    return {"X": x, "Out": out, "Out@GRAD": f32(*out.shape)}


MAX_POOL = {"pooling_type": "max", "ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1]}
AVG_POOL = {"pooling_type": "avg", "ksize": [3, 2], "strides": [2, 1], "paddings": [1, 0, 1, 1], "ceil_mode": True}
FUSED += [
    (Case("pool2d_grad", _pool_grad(MAX_POOL), None, MAX_POOL, id="max-pool-grad"), True, {"kc_max_pool2d_grad"}),
    (Case("pool2d_grad", _pool_grad({**MAX_POOL, "strides": [1, 1]}, ties=True), None,
          {**MAX_POOL, "strides": [1, 1]}, id="max-pool-grad-overlapping-ties"), True, {"kc_max_pool2d_grad"}),
    (Case("pool2d_grad", _pool_grad(AVG_POOL), None, AVG_POOL, id="avg-pool-grad-exclusive"), True,
     {"kc_avg_pool2d_grad"}),
    (Case("pool2d_grad", _pool_grad({**AVG_POOL, "exclusive": False}), None, {**AVG_POOL, "exclusive": False},
          id="avg-pool-grad-inclusive"), True, {"kc_avg_pool2d_grad"}),
]

# cases the gates send to the reference: no fused kernel runs, the results still match
FALLBACK = [
    (Case("softmax", {"X": f32(3, 5, 4)}, None, {"axis": 1}, id="softmax-not-last-axis"), False),
    (Case("batch_norm", {"X": f32(2, 4, 3, 3).astype(np.float64),
                         **{k: v.astype(np.float64) for k, v in _bn(4).items()}}, None, {"is_test": True},
          id="bn-float64"), False),
    (Case("layer_norm", {"X": f32(4, 6).astype(np.float64)}, None, {}, id="ln-float64"), False),
    (Case("adam", _adam(Moment2Max=f32(4, 3, low=0.1)), None, {"amsgrad": True}, id="adam-amsgrad"), True),
    (Case("sigmoid", {"X": f32(3, 7).astype(np.float64)}, None, {}, id="sigmoid-float64"), False),
    (Case("conv2d", {"Input": f32(2, 4, 6, 6), "Filter": f32(8, 2, 3, 3)}, None, {"groups": 2},
          id="conv-grouped-not-depthwise"), False),
    (Case("conv2d", {"Input": f32(2, 4, 6, 6), "Filter": f32(8, 4, 1, 1)}, None, {}, id="conv-1x1-plain-gemm"),
     False),
    (Case("conv2d", {"Input": f32(1, 2, 12, 12), "Filter": f32(3, 2, 2, 2)}, None, {"strides": [4, 4]},
          id="conv-stride-4-products-too-large"), False),
    (Case("depthwise_conv2d", {"Input": f32(2, 6, 6, 4), "Filter": f32(4, 1, 3, 3)}, None,
          {"groups": 4, "data_format": "NHWC"}, id="depthwise-nhwc"), False),
    (Case("pool2d", {"X": f32(2, 3, 9, 8)}, None, {"pooling_type": "max", "ksize": [2, 3], "adaptive": True},
          id="pool-adaptive"), False),
]
