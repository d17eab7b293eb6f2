"""Cases for kernelcore/ops/conv.py: conv2d, depthwise_conv2d, conv3d, conv2d_transpose, conv3d_transpose.

The references are the definitions, written as loops over output positions (convolution: a dot product of each
window with each filter; transposed convolution: every input pixel scattering its filter into the output), in
float64 and independent of the kernels' im2col/GEMM. Padding rules (SAME/VALID, 4-value paddings) are worked out
here again from Paddle's documentation.
"""
import itertools

import numpy as np

from . import Case

rng = np.random.default_rng(11)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def _pads(paddings, nd, algo, ins, ks, strides):
    if algo == "VALID":
        return [(0, 0)] * nd, None
    if algo == "SAME":
        pads = []
        for i, k, s in zip(ins, ks, strides):
            out = -(-i // s)
            total = max((out - 1) * s + k - i, 0)
            pads.append((total // 2, total - total // 2))
        return pads, [1] * nd
    p = list(paddings)
    return ([(v, v) for v in p] if len(p) == nd else [(p[2 * i], p[2 * i + 1]) for i in range(nd)]), None


def conv_ref(Input, Filter, strides=None, paddings=None, dilations=None, groups=1,
             padding_algorithm="EXPLICIT", data_format="NCHW", **a):
    x = Input.astype(np.float64)
    last = data_format in ("NHWC", "NDHWC")
    if last:
        x = np.moveaxis(x, -1, 1)
    nd = x.ndim - 2
    strides, paddings, dilations = strides or [1] * nd, paddings or [0] * nd, dilations or [1] * nd
    w = Filter.astype(np.float64)
    ks = w.shape[2:]
    pads, dil_override = _pads(paddings, nd, padding_algorithm, x.shape[2:], ks, strides)
    dil = dil_override or list(dilations)
    x = np.pad(x, [(0, 0), (0, 0)] + pads)
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    og = o // groups
    outs = [(x.shape[2 + i] - dil[i] * (ks[i] - 1) - 1) // strides[i] + 1 for i in range(nd)]
    y = np.zeros((n, o, *outs))
    for oc in range(o):
        g = oc // og
        xs = x[:, g * cg:(g + 1) * cg]
        for pos in itertools.product(*(range(v) for v in outs)):
            win = xs[(slice(None), slice(None)) + tuple(
                slice(pos[i] * strides[i], pos[i] * strides[i] + dil[i] * (ks[i] - 1) + 1, dil[i]) for i in range(nd))]
            y[(slice(None), oc) + pos] = (win * w[oc]).reshape(n, -1).sum(1)
    if last:
        y = np.moveaxis(y, 1, -1)
    return {"Output": y.astype(Input.dtype)}


def conv_transpose_ref(Input, Filter, strides=None, paddings=None, dilations=None, groups=1,
                       output_padding=(), output_size=(), padding_algorithm="EXPLICIT", **a):
    x = Input.astype(np.float64)
    w = Filter.astype(np.float64)
    nd = x.ndim - 2
    strides, paddings, dilations = strides or [1] * nd, paddings or [0] * nd, dilations or [1] * nd
    n, cin = x.shape[:2]
    og = w.shape[1]
    ks = w.shape[2:]
    pads, dil_override = _pads(paddings, nd, padding_algorithm, x.shape[2:], ks, strides)
    dil = dil_override or list(dilations)
    cg = cin // groups
    full = [(x.shape[2 + i] - 1) * strides[i] + dil[i] * (ks[i] - 1) + 1 for i in range(nd)]
    outs = [full[i] - pads[i][0] - pads[i][1] for i in range(nd)]
    if output_size:
        outs = list(output_size)
    elif output_padding:
        outs = [outs[i] + output_padding[i] for i in range(nd)]
    big = np.zeros((n, og * groups, *[max(full[i], pads[i][0] + outs[i]) for i in range(nd)]))
    for ic in range(cin):
        g = ic // cg
        for pos in itertools.product(*(range(v) for v in x.shape[2:])):
            for k in itertools.product(*(range(v) for v in ks)):
                tgt = tuple(pos[i] * strides[i] + k[i] * dil[i] for i in range(nd))
                big[(slice(None), slice(g * og, (g + 1) * og)) + tgt] += \
                    x[(slice(None), ic) + pos][:, None] * w[(ic, slice(None)) + k][None, :]
    y = big[(slice(None), slice(None)) + tuple(slice(pads[i][0], pads[i][0] + outs[i]) for i in range(nd))]
    return {"Output": y.astype(Input.dtype)}


TOL = dict(rtol=1e-4, atol=1e-5)

CASES = [
    Case("conv2d", {"Input": f32(2, 3, 7, 6), "Filter": f32(4, 3, 3, 3)}, conv_ref,
         {"strides": [1, 1], "paddings": [1, 1]}, id="conv2d-3x3-pad1", **TOL),
    Case("conv2d", {"Input": f32(2, 4, 9, 8), "Filter": f32(6, 2, 3, 2)}, conv_ref,
         {"strides": [2, 1], "paddings": [1, 2, 0, 1], "dilations": [2, 1], "groups": 2},
         id="conv2d-groups-dilation-asym", **TOL),
    Case("conv2d", {"Input": f32(1, 3, 10, 9), "Filter": f32(5, 3, 4, 3)}, conv_ref,
         {"strides": [2, 3], "paddings": [7, 7], "dilations": [3, 3], "padding_algorithm": "SAME"},
         id="conv2d-same", **TOL),
    Case("conv2d", {"Input": f32(1, 3, 10, 9), "Filter": f32(2, 3, 3, 3)}, conv_ref,
         {"strides": [2, 2], "paddings": [5, 5], "padding_algorithm": "VALID"}, id="conv2d-valid", **TOL),
    Case("conv2d", {"Input": f32(2, 8, 5, 4), "Filter": f32(16, 8, 1, 1)}, conv_ref, {}, id="conv2d-1x1", **TOL),
    Case("conv2d", {"Input": f32(2, 8, 5, 4), "Filter": f32(6, 4, 1, 1)}, conv_ref,
         {"strides": [2, 2], "groups": 2}, id="conv2d-1x1-stride2-groups", **TOL),
    Case("conv2d", {"Input": f32(2, 6, 5, 3), "Filter": f32(4, 3, 3, 3)}, conv_ref,
         {"paddings": [1, 1], "data_format": "NHWC"}, id="conv2d-nhwc", **TOL),
    Case("depthwise_conv2d", {"Input": f32(2, 4, 9, 9), "Filter": f32(4, 1, 3, 3)}, conv_ref,
         {"strides": [2, 2], "paddings": [1, 1], "groups": 4}, id="depthwise-3x3-s2", **TOL),
    Case("depthwise_conv2d", {"Input": f32(1, 3, 8, 7), "Filter": f32(6, 1, 5, 3)}, conv_ref,
         {"paddings": [2, 1], "dilations": [1, 2], "groups": 3}, id="depthwise-multiplier2-dilated", **TOL),
    # >= 256 output pixels: the per-channel column path; 64+ channels on a small map: the channels-last path
    Case("depthwise_conv2d", {"Input": f32(2, 3, 18, 17), "Filter": f32(6, 1, 3, 3)}, conv_ref,
         {"paddings": [1, 2], "dilations": [2, 1], "groups": 3}, id="depthwise-large-map", **TOL),
    Case("depthwise_conv2d", {"Input": f32(1, 64, 5, 4), "Filter": f32(64, 1, 3, 3)}, conv_ref,
         {"strides": [2, 1], "paddings": [1, 1], "groups": 64}, id="depthwise-many-channels-small-map", **TOL),
    Case("conv2d", {"Input": f32(2, 5, 6, 6), "Filter": f32(5, 1, 3, 3)}, conv_ref,
         {"paddings": [1, 1], "groups": 5}, id="conv2d-groups-equal-channels", **TOL),
    Case("conv3d", {"Input": f32(2, 2, 5, 6, 5), "Filter": f32(3, 2, 3, 3, 2)}, conv_ref,
         {"strides": [1, 2, 2], "paddings": [1, 1, 0], "dilations": [1, 1, 2]}, id="conv3d", **TOL),
    Case("conv3d", {"Input": f32(1, 4, 4, 5, 3), "Filter": f32(4, 2, 2, 2, 2)}, conv_ref,
         {"groups": 2, "paddings": [0, 1, 1, 0, 1, 1]}, id="conv3d-groups-asym", **TOL),
    Case("conv2d_transpose", {"Input": f32(2, 4, 4, 5), "Filter": f32(4, 3, 3, 3)}, conv_transpose_ref,
         {"strides": [2, 2], "paddings": [1, 1], "output_padding": [1, 0]}, id="conv2d_transpose-s2-outpad", **TOL),
    Case("conv2d_transpose", {"Input": f32(1, 4, 3, 4), "Filter": f32(4, 2, 3, 2)}, conv_transpose_ref,
         {"strides": [2, 1], "paddings": [1, 0, 0, 1], "dilations": [2, 1], "groups": 2},
         id="conv2d_transpose-groups-dilation", **TOL),
    Case("conv2d_transpose", {"Input": f32(1, 2, 3, 3), "Filter": f32(2, 2, 4, 4)}, conv_transpose_ref,
         {"strides": [3, 3], "paddings": [1, 1], "output_size": [10, 9]}, id="conv2d_transpose-output_size", **TOL),
    Case("depthwise_conv2d_transpose", {"Input": f32(1, 3, 4, 4), "Filter": f32(3, 1, 3, 3)}, conv_transpose_ref,
         {"strides": [2, 2], "groups": 3}, id="depthwise_conv2d_transpose", **TOL),
    Case("conv3d_transpose", {"Input": f32(1, 3, 2, 3, 3), "Filter": f32(3, 2, 3, 3, 3)}, conv_transpose_ref,
         {"strides": [2, 2, 2], "paddings": [1, 1, 1]}, id="conv3d_transpose", **TOL),
    # more output channels than the input's last dim: the col2im sum runs channels-last
    Case("conv2d_transpose", {"Input": f32(2, 4, 3, 2), "Filter": f32(4, 6, 3, 3)}, conv_transpose_ref,
         {"strides": [2, 2], "paddings": [1, 1], "output_padding": [1, 0]}, id="conv2d_transpose-channels-last",
         **TOL),
    Case("conv2d_transpose", {"Input": f32(1, 4, 2, 3), "Filter": f32(4, 3, 2, 3)}, conv_transpose_ref,
         {"strides": [1, 2], "paddings": [0, 1, 1, 0], "dilations": [2, 1], "groups": 2},
         id="conv2d_transpose-channels-last-groups", **TOL),
    Case("conv3d_transpose", {"Input": f32(1, 2, 2, 2, 2), "Filter": f32(2, 3, 2, 3, 2)}, conv_transpose_ref,
         {"strides": [2, 1, 2], "paddings": [0, 1, 0]}, id="conv3d_transpose-channels-last", **TOL),
]
