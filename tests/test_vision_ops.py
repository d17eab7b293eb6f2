"""The vision ops beyond their one-op NumPy cases (tests/opcases/{conv,pool,norm,vision_misc}.py): batch_norm's
training mode (the case runner makes inference runs), shape inference on append, and the errors users cause."""
import numpy as np
import pytest

import kernelcore as kc
from kernelcore.errors import KernelcoreError, OpRunError, ShapeError

rng = np.random.default_rng(21)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def one_op(op, inputs, outputs, attrs, feed_shapes=None):
    """A program with one `op`; inputs {slot: (name, array)}; returns (program, feed)."""
    prog = kc.Program()
    block = prog.global_block()
    feed = {}
    for slot, (name, value) in inputs.items():
        block.create_var(name, (feed_shapes or {}).get(name, value.shape), value.dtype)
        feed[name] = value
    block.append_op(op, inputs={s: [n] for s, (n, _) in inputs.items()},
                    outputs={s: [n] for s, n in outputs.items()}, attrs=attrs)
    return prog, feed


def bn_program(x, c, attrs, momentum_tensor=None):
    ins = {"X": ("x", x), "Scale": ("scale", rng.uniform(0.5, 1.5, c).astype(np.float32)),
           "Bias": ("bias", f32(c)), "Mean": ("mean", f32(c)),
           "Variance": ("var", rng.uniform(0.5, 2.0, c).astype(np.float32))}
    if momentum_tensor is not None:
        ins["MomentumTensor"] = ("mom", np.array([momentum_tensor], np.float32))
    # Paddle writes MeanOut/VarianceOut to the Mean/Variance variables themselves
    outs = {"Y": "y", "MeanOut": "mean", "VarianceOut": "var", "SavedMean": "saved_mean",
            "SavedVariance": "saved_var"}
    return one_op("batch_norm", ins, outs, attrs)


@pytest.mark.parametrize("layout,shape,momentum_tensor", [("NCHW", (4, 3, 5, 6), None), ("NHWC", (4, 5, 6, 3), None),
                                                          ("NCHW", (8, 3), 0.7)])
def test_batch_norm_training_mode_uses_and_updates_batch_statistics(layout, shape, momentum_tensor):
    x = f32(*shape) * 2 + 1
    prog, feed = bn_program(x, 3, {"is_test": False, "momentum": 0.9, "epsilon": 1e-5, "data_layout": layout},
                            momentum_tensor)
    init = {k: feed[k].copy() for k in ("mean", "var", "scale", "bias")}
    scope = kc.Scope()
    y, mean, var, saved_mean, saved_var = kc.Executor(kc.CPUPlace()).run(
        prog, feed=feed, fetch_list=["y", "mean", "var", "saved_mean", "saved_var"], scope=scope, training=True)
    axis = 3 if layout == "NHWC" else 1
    xm = np.moveaxis(x.astype(np.float64), axis, -1).reshape(-1, 3)
    bm, bv = xm.mean(0), xm.var(0)                      # biased, as Paddle
    m = momentum_tensor if momentum_tensor is not None else 0.9
    shape_c = [1] * x.ndim
    shape_c[axis] = 3
    want_y = (x - bm.reshape(shape_c)) / np.sqrt(bv.reshape(shape_c) + 1e-5) * init["scale"].reshape(shape_c) \
        + init["bias"].reshape(shape_c)
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mean, init["mean"] * m + bm * (1 - m), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, init["var"] * m + bv * (1 - m), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(saved_mean, bm, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(saved_var, 1 / np.sqrt(bv + 1e-5), rtol=1e-5)
    assert np.array_equal(feed["mean"], init["mean"]), "the kernel changed its input"


def test_batch_norm_is_inference_in_a_run_that_is_not_training():
    """As dropout: is_test=false still normalises with the running statistics when the run is not a training
    run, and leaves them as they were."""
    x = f32(4, 3, 2, 2)
    prog, feed = bn_program(x, 3, {"is_test": False})
    y, mean = kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=["y", "mean"], scope=kc.Scope())
    c = (1, 3, 1, 1)
    want = (x - feed["mean"].reshape(c)) / np.sqrt(feed["var"].reshape(c) + 1e-5) * feed["scale"].reshape(c) \
        + feed["bias"].reshape(c)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(mean, feed["mean"])


@pytest.mark.parametrize("op,inputs,attrs,out_slot,want", [
    ("conv2d", {"Input": ("x", (-1, 3, 11, 10)), "Filter": ("w", (8, 3, 3, 3))},
     {"strides": [2, 2], "paddings": [1, 1]}, "Output", (-1, 8, 6, 5)),
    ("conv2d", {"Input": ("x", (-1, 3, 11, 10)), "Filter": ("w", (8, 3, 4, 4))},
     {"strides": [2, 2], "padding_algorithm": "SAME"}, "Output", (-1, 8, 6, 5)),
    ("depthwise_conv2d", {"Input": ("x", (2, 4, 9, 9)), "Filter": ("w", (8, 1, 3, 3))},
     {"groups": 4, "dilations": [2, 2]}, "Output", (2, 8, 5, 5)),
    ("conv2d_transpose", {"Input": ("x", (2, 4, 5, 6)), "Filter": ("w", (4, 3, 3, 3))},
     {"strides": [2, 2], "paddings": [1, 1], "output_padding": [1, 1], "groups": 1}, "Output", (2, 3, 10, 12)),
    ("conv3d", {"Input": ("x", (1, 2, 5, 6, 7)), "Filter": ("w", (4, 2, 3, 3, 3))}, {"paddings": [1, 0, 1]},
     "Output", (1, 4, 5, 4, 7)),
    ("pool2d", {"X": ("x", (-1, 3, 10, 10))}, {"pooling_type": "max", "ksize": [3, 3], "strides": [2, 2],
                                               "ceil_mode": True}, "Out", (-1, 3, 5, 5)),
    ("pool2d", {"X": ("x", (2, 3, 10, 9))}, {"pooling_type": "avg", "ksize": [3, 4], "adaptive": True}, "Out",
     (2, 3, 3, 4)),
    ("bilinear_interp_v2", {"X": ("x", (1, 2, 4, 4))}, {"scale": [1.5, 1.5]}, "Out", (1, 2, 6, 6)),
    ("pad3d", {"X": ("x", (1, 2, 3, 4, 5))}, {"paddings": [1, 2, 3, 4, 0, 1]}, "Out", (1, 2, 4, 11, 8)),
    ("flatten_contiguous_range", {"X": ("x", (-1, 3, 4, 5))}, {"start_axis": 1, "stop_axis": -1}, "Out", (-1, 60)),
    ("unsqueeze2", {"X": ("x", (2, 3))}, {"axes": [0, -1]}, "Out", (1, 2, 3, 1)),
])
def test_shape_inference_on_append(op, inputs, attrs, out_slot, want):
    prog = kc.Program()
    block = prog.global_block()
    for _, (name, shape) in inputs.items():
        block.create_var(name, shape, "float32")
    block.append_op(op, inputs={s: [n] for s, (n, _) in inputs.items()}, outputs={out_slot: ["out"]}, attrs=attrs)
    assert tuple(block.var("out").shape) == want


def test_shape_inference_names_a_channel_mismatch():
    prog = kc.Program()
    block = prog.global_block()
    block.create_var("x", (2, 3, 8, 8), "float32")
    block.create_var("w", (8, 4, 3, 3), "float32")
    with pytest.raises(ShapeError, match=r"conv2d.*3 channels.*expects 4"):
        block.append_op("conv2d", inputs={"Input": ["x"], "Filter": ["w"]}, outputs={"Output": ["y"]})


def test_kernel_errors_name_the_op_and_what_was_expected():
    x, w = f32(2, 3, 8, 8), f32(8, 4, 3, 3)
    prog, feed = one_op("conv2d", {"Input": ("x", x), "Filter": ("w", w)}, {"Output": "y"}, {},
                        feed_shapes={"x": (-1, -1, -1, -1)})
    with pytest.raises(OpRunError, match=r"conv2d.*3 channels.*expects 4"):
        kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=["y"], scope=kc.Scope())


@pytest.mark.parametrize("op,inputs,attrs,match", [
    ("pool2d", {"X": f32(1, 2, 4, 4)}, {"pooling_type": "max", "ksize": [3]}, "ksize must hold 2 values"),
    ("pool2d", {"X": f32(1, 2, 2, 2)}, {"pooling_type": "max", "ksize": [3, 3]}, "output would be empty"),
    ("pad3d", {"X": f32(1, 2, 3, 4, 2)}, {"paddings": [2, 2, 0, 0, 0, 0], "mode": "reflect"},
     "reflect padding"),
    ("batch_norm", {"X": f32(2, 3, 4), "Scale": f32(4), "Bias": f32(4), "Mean": f32(4), "Variance": f32(4)},
     {"is_test": True}, r"Scale must have shape \[3\]"),
    ("prelu", {"X": f32(2, 3, 4), "Alpha": f32(2)}, {"mode": "channel"}, "Alpha must hold 3"),
    ("group_norm", {"X": f32(2, 5, 4)}, {"groups": 2}, "5 channels must divide by groups=2"),
])
def test_user_errors_are_kernelcore_errors(op, inputs, attrs, match):
    outs = {s.name: f"{s.name}_out" for s in kc.get_op_def(op).outputs if not s.dispensable}
    with pytest.raises(KernelcoreError, match=match):
        prog, feed = one_op(op, {s: (s.lower(), v) for s, v in inputs.items()}, outs, attrs,
                            feed_shapes={s.lower(): (-1,) * v.ndim for s, v in inputs.items()})
        kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=[], scope=kc.Scope())


def test_dropout_without_mask_output_runs():
    """Paddle's inference programs write dropout with no Mask output."""
    x = f32(3, 4)
    prog, feed = one_op("dropout", {"X": ("x", x)}, {"Out": "y"},
                        {"dropout_prob": 0.25, "dropout_implementation": "downgrade_in_infer"})
    (y,) = kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=["y"], scope=kc.Scope())
    np.testing.assert_allclose(y, x * np.float32(0.75), rtol=1e-6)
