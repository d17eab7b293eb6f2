"""Finite-difference cases for the vision ops' gradient rules (kernelcore/grad/vision.py), as keyword dicts for
tests/test_backward.py's GCase (kept here so that file only gains one line). Inputs are float64 and small: the
numeric gradient runs the forward program twice per input element. Max pooling and the piecewise activations get
inputs without ties or kinks within a step; batch norm runs in a training run (batch statistics)."""
import numpy as np

rng = np.random.default_rng(20261123)


def f64(*shape):
    return rng.standard_normal(shape)


def distinct(*shape):
    """A permutation of well-separated values: no ties in a max window, nothing near a kink."""
    return (rng.permutation(int(np.prod(shape))).reshape(shape) - np.prod(shape) / 2) / 7.0 + 0.05


def away(*shape, low=0.2, high=2.5):
    return rng.uniform(low, high, shape) * rng.choice([-1.0, 1.0], shape)


CONV = {"strides": [2, 1], "paddings": [1, 0], "dilations": [1, 2]}

CASES = [
    dict(op="conv2d", inputs={"Input": f64(2, 4, 5, 6), "Filter": f64(4, 2, 3, 2)}, attrs={**CONV, "groups": 2},
         id="conv2d_grad"),
    dict(op="conv2d", inputs={"Input": f64(1, 3, 5, 4), "Filter": f64(2, 3, 3, 3)},
         attrs={"paddings": [1, 1], "data_format": "NCHW", "padding_algorithm": "SAME", "strides": [2, 2]},
         id="conv2d_grad_same"),
    dict(op="conv2d", inputs={"Input": f64(1, 3, 3, 4), "Filter": f64(2, 4, 2, 2)},
         attrs={"paddings": [0, 1, 1, 0], "data_format": "NHWC"}, id="conv2d_grad_nhwc"),
    dict(op="depthwise_conv2d", inputs={"Input": f64(2, 3, 5, 5), "Filter": f64(6, 1, 3, 3)},
         attrs={"groups": 3, "strides": [2, 2], "paddings": [1, 1]}, id="depthwise_conv2d_grad"),
    # stride 1: Input@GRAD as a convolution with the flipped filter (grouped, dilated, asymmetric; depthwise with a
    # channel multiplier), and the col2im fallbacks (a pad wider than the kernel's reach; a filter large beside
    # the gradient)
    dict(op="conv2d", inputs={"Input": f64(2, 4, 6, 5), "Filter": f64(6, 2, 3, 2)},
         attrs={"groups": 2, "paddings": [2, 1, 0, 1], "dilations": [2, 1]}, id="conv2d_grad_stride1_groups"),
    dict(op="depthwise_conv2d", inputs={"Input": f64(2, 3, 6, 5), "Filter": f64(6, 1, 3, 3)},
         attrs={"groups": 3, "paddings": [2, 1], "dilations": [2, 1]}, id="depthwise_conv2d_grad_stride1"),
    dict(op="depthwise_conv2d", inputs={"Input": f64(2, 3, 7, 6), "Filter": f64(3, 1, 3, 2)},
         attrs={"groups": 3, "strides": [2, 3], "paddings": [1, 0, 2, 1], "dilations": [1, 2]},
         id="depthwise_conv2d_grad_strided"),
    dict(op="conv2d", inputs={"Input": f64(1, 4, 4, 5), "Filter": f64(4, 2, 2, 2)},
         attrs={"groups": 2, "paddings": [2, 0]}, id="conv2d_grad_stride1_wide_pad"),
    dict(op="conv2d", inputs={"Input": f64(1, 4, 2, 3), "Filter": f64(8, 4, 3, 3)},
         attrs={"paddings": [1, 1]}, id="conv2d_grad_stride1_large_filter"),
    dict(op="conv3d", inputs={"Input": f64(1, 2, 3, 4, 3), "Filter": f64(2, 2, 2, 2, 2)},
         attrs={"paddings": [1, 0, 1]}, id="conv3d_grad"),
    dict(op="conv2d_transpose", inputs={"Input": f64(1, 4, 3, 3), "Filter": f64(4, 2, 3, 3)},
         attrs={"strides": [2, 2], "paddings": [1, 1], "groups": 2, "output_padding": [1, 0]},
         id="conv2d_transpose_grad"),
    dict(op="depthwise_conv2d_transpose", inputs={"Input": f64(1, 2, 3, 3), "Filter": f64(2, 1, 2, 2)},
         attrs={"strides": [2, 2], "groups": 2}, id="depthwise_conv2d_transpose_grad"),
    dict(op="conv3d_transpose", inputs={"Input": f64(1, 2, 2, 2, 2), "Filter": f64(2, 1, 2, 2, 2)},
         attrs={"strides": [2, 1, 2]}, id="conv3d_transpose_grad"),
    dict(op="pool2d", inputs={"X": distinct(1, 2, 5, 6)},
         attrs={"pooling_type": "max", "ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1]},
         id="pool2d_grad_max", use=("Out_out_0",)),
    dict(op="pool2d", inputs={"X": f64(1, 2, 5, 6)},
         attrs={"pooling_type": "avg", "ksize": [3, 2], "strides": [2, 2], "paddings": [1, 0], "ceil_mode": True},
         id="pool2d_grad_avg_ceil"),
    dict(op="pool2d", inputs={"X": f64(1, 2, 5, 6)},
         attrs={"pooling_type": "avg", "ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1], "exclusive": False},
         id="pool2d_grad_avg_inclusive"),
    dict(op="pool2d", inputs={"X": distinct(1, 2, 5, 7)}, attrs={"pooling_type": "max", "ksize": [2, 3],
                                                                "adaptive": True}, id="pool2d_grad_adaptive_max"),
    dict(op="pool2d", inputs={"X": f64(1, 2, 5, 7)}, attrs={"pooling_type": "avg", "ksize": [2, 3], "adaptive": True},
         id="pool2d_grad_adaptive_avg"),
    dict(op="pool3d", inputs={"X": distinct(1, 1, 4, 4, 4)},
         attrs={"pooling_type": "max", "ksize": [2, 2, 2], "strides": [2, 2, 2]}, id="pool3d_grad_max"),
    dict(op="max_pool2d_with_index", inputs={"X": distinct(1, 2, 5, 5)}, attrs={"ksize": [2, 2], "adaptive": True},
         id="max_pool2d_with_index_grad", use=("Out_out_0",)),
    dict(op="max_pool3d_with_index", inputs={"X": distinct(1, 1, 3, 4, 4)},
         attrs={"ksize": [2, 2, 2], "strides": [1, 2, 2]}, id="max_pool3d_with_index_grad", use=("Out_out_0",)),
    dict(op="batch_norm", inputs={"X": f64(3, 2, 2, 3), "Scale": f64(2), "Bias": f64(2), "Mean": f64(2),
                                  "Variance": rng.uniform(0.5, 2, 2)},
         attrs={"is_test": False}, training=True, use=("Y_out_0",), stop=("Mean_0", "Variance_0"),
         id="batch_norm_grad_train", rtol=1e-5, atol=1e-6),
    dict(op="batch_norm", inputs={"X": f64(3, 2, 3, 2), "Scale": f64(2), "Bias": f64(2), "Mean": f64(2),
                                  "Variance": rng.uniform(0.5, 2, 2)},
         attrs={"is_test": False, "data_layout": "NHWC"}, training=True, use=("Y_out_0",),
         stop=("Mean_0", "Variance_0"), id="batch_norm_grad_train_nhwc", rtol=1e-5, atol=1e-6),
    dict(op="batch_norm", inputs={"X": f64(5, 3), "Scale": f64(3), "Bias": f64(3), "Mean": f64(3),
                                  "Variance": rng.uniform(0.5, 2, 3)},
         attrs={"is_test": False}, training=True, use=("Y_out_0",), stop=("Mean_0", "Variance_0"),
         id="batch_norm_grad_train_2d", rtol=1e-5, atol=1e-6),
    dict(op="batch_norm", inputs={"X": f64(3, 2, 4), "Scale": f64(2), "Bias": f64(2), "Mean": f64(2),
                                  "Variance": rng.uniform(0.5, 2, 2)},
         attrs={"is_test": True}, use=("Y_out_0",), stop=("Mean_0", "Variance_0"), id="batch_norm_grad_is_test"),
    dict(op="group_norm", inputs={"X": f64(2, 4, 3), "Scale": f64(4), "Bias": f64(4)}, attrs={"groups": 2},
         use=("Y_out_0",), id="group_norm_grad", rtol=1e-5, atol=1e-6),
    dict(op="instance_norm", inputs={"X": f64(2, 2, 3, 2), "Scale": f64(2), "Bias": f64(2)}, use=("Y_out_0",),
         id="instance_norm_grad", rtol=1e-5, atol=1e-6),
    dict(op="layer_norm", inputs={"X": f64(2, 3, 4), "Scale": f64(4), "Bias": f64(4)}, attrs={"begin_norm_axis": 2},
         use=("Y_out_0",), id="layer_norm_grad", rtol=1e-5, atol=1e-6),
    dict(op="relu6", inputs={"X": away(3, 4, low=0.2, high=5.5) * 1.0}, attrs={"threshold": 6.0}, id="relu6_grad"),
    dict(op="leaky_relu", inputs={"X": away(3, 4)}, attrs={"alpha": 0.1}, id="leaky_relu_grad"),
    dict(op="elu", inputs={"X": away(3, 4)}, attrs={"alpha": 0.7}, id="elu_grad"),
    dict(op="hard_swish", inputs={"X": np.array([[-4.0, -2.5, -1.0, 0.5], [1.7, 2.9, 3.5, 7.0]])},
         id="hard_swish_grad"),
    dict(op="hard_sigmoid", inputs={"X": np.array([[-4.0, -2.5, -1.0, 0.5], [1.7, 2.9, 3.6, 7.0]])},
         attrs={"slope": 1 / 6, "offset": 0.5}, id="hard_sigmoid_grad"),
    dict(op="swish", inputs={"X": f64(3, 4)}, attrs={"beta": 1.5}, id="swish_grad"),
    dict(op="silu", inputs={"X": f64(3, 4)}, id="silu_grad"),
    dict(op="softplus", inputs={"X": np.array([[-3.0, -0.5, 0.2, 1.0], [1.3, 1.7, 2.5, 4.0]])},
         attrs={"beta": 2.0, "threshold": 3.0}, id="softplus_grad"),
    dict(op="mish", inputs={"X": f64(3, 4) * 2}, id="mish_grad"),
    dict(op="prelu", inputs={"X": away(2, 3, 2), "Alpha": rng.uniform(0, 1, 3)}, attrs={"mode": "channel"},
         id="prelu_grad_channel"),
    dict(op="prelu", inputs={"X": away(2, 3, 2), "Alpha": rng.uniform(0, 1, 1)}, attrs={"mode": "all"},
         id="prelu_grad_all"),
    dict(op="flatten_contiguous_range", inputs={"X": f64(2, 3, 4)}, attrs={"start_axis": 1, "stop_axis": 2},
         id="flatten_contiguous_range_grad"),
    dict(op="squeeze2", inputs={"X": f64(2, 1, 3)}, attrs={"axes": [1]}, id="squeeze2_grad"),
    dict(op="unsqueeze2", inputs={"X": f64(2, 3)}, attrs={"axes": [1]}, id="unsqueeze2_grad"),
    dict(op="pad3d", inputs={"X": f64(1, 1, 2, 3, 3)}, attrs={"paddings": [1, 2, 2, 0, 1, 1], "mode": "reflect"},
         id="pad3d_grad_reflect"),
    dict(op="pad3d", inputs={"X": f64(1, 1, 2, 3, 3)}, attrs={"paddings": [1, 2, 2, 0, 1, 1], "mode": "constant",
                                                              "value": 0.5}, id="pad3d_grad_constant"),
    dict(op="pad3d", inputs={"X": f64(1, 1, 2, 3, 3)}, attrs={"paddings": [3, 2, 2, 0, 1, 1], "mode": "circular"},
         id="pad3d_grad_circular"),
    dict(op="nearest_interp_v2", inputs={"X": f64(1, 2, 3, 4)}, attrs={"out_h": 5, "out_w": 7, "align_corners": False},
         id="nearest_interp_v2_grad"),
    dict(op="bilinear_interp_v2", inputs={"X": f64(1, 2, 3, 4)},
         attrs={"out_h": 5, "out_w": 7, "align_corners": False, "align_mode": 0}, id="bilinear_interp_v2_grad"),
    dict(op="bicubic_interp_v2", inputs={"X": f64(1, 1, 4, 4)}, attrs={"out_h": 6, "out_w": 5, "align_corners": True},
         id="bicubic_interp_v2_grad"),
    dict(op="linear_interp_v2", inputs={"X": f64(1, 2, 5)}, attrs={"out_w": 8, "align_corners": True},
         id="linear_interp_v2_grad"),
    dict(op="trilinear_interp_v2", inputs={"X": f64(1, 1, 2, 3, 3)},
         attrs={"out_d": 3, "out_h": 4, "out_w": 2, "align_corners": False, "align_mode": 1},
         id="trilinear_interp_v2_grad"),
]
