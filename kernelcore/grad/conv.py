"""Gradients of the convolutions (kernelcore/ops/conv.py): Input@GRAD is the transposed convolution of
Output@GRAD (the forward col2im body; at stride 1 the same thing as a plain convolution with the flipped filter,
which takes the forward's faster path), Filter@GRAD one GEMM of Output@GRAD with the im2col columns of the input;
transposed convolutions swap the two roles. Slots follow Paddle's grad ops.

The bodies take the ConvBodies (kernelcore/ops/conv.py) whose forward, im2col and transposed convolution they are
built on: the reference's here, a fast variant's in kernelcore/native/conv.py, which makes its kernels with
`conv_grad_kernel` and `conv_transpose_grad_kernel` too.
"""
from __future__ import annotations

import itertools
import math

from ..ops import conv as C
from ..ops._spatial import channels_first, layout_again
from ..transforms.backward import standard, wanted


# ---------------------------------------------------------------------------
# convolutions
# ---------------------------------------------------------------------------
def conv_filter_grad(xp, x, g, wshape, strides, pads, dils, groups, bodies=C.REFERENCE):
    """dW[o, c, k] = sum over n, p of g[n, o, p] * Xpad[n, c, p * s + k * d] (channels first)."""
    n, c = x.shape[:2]
    o = wshape[0]
    ks = wshape[2:]
    outs = g.shape[2:]
    if groups == c == o and c > 1 and math.prod(outs) < c:
        if any(lo or hi for lo, hi in pads):
            x = C.pad_spatial(xp, x, pads)
        return _depthwise_filter_grad_channels_last(xp, x, g, ks, strides, dils)
    x = xp.ascontiguousarray(x)
    blocks = C.column_blocks(xp, n, o // groups, c * math.prod(ks) * math.prod(outs), groups)
    if blocks is None:
        return _filter_grad_gemm(xp, x, g, wshape, strides, pads, dils, groups, bodies)
    dw = None
    for s in blocks:  # a block of images at a time, the columns in cache (C.COLUMN_BLOCK)
        part = _filter_grad_gemm(xp, x[s], g[s], wshape, strides, pads, dils, groups, bodies)
        dw = part if dw is None else xp.add(dw, part, out=dw)
    return dw


def _depthwise_filter_grad_channels_last(xp, xpad, g, ks, strides, dils):
    """Filter@GRAD of a depthwise convolution (one filter per channel) on maps with fewer pixels than channels:
    per kernel tap, Output@GRAD times that tap's window of the padded input, both channels-last, summed over images
    and pixels. The GEMM path's one small product per channel cost ~0.1 us each (MobileNetV2's [8, 960, 2, 2]:
    0.83 ms, here 0.20 ms; [8, 384, 4, 4]: 0.59 -> 0.21 ms); on larger maps it is the faster one."""
    n, c = xpad.shape[:2]
    outs = g.shape[2:]
    xl = xp.ascontiguousarray(xp.moveaxis(xpad, 1, -1))              # (n, padded spatial..., c)
    gl = xp.ascontiguousarray(xp.moveaxis(g, 1, -1))                 # (n, out spatial..., c)
    taps = list(itertools.product(*(range(k) for k in ks)))
    dw = xp.empty((len(taps), c), dtype=g.dtype)
    tmp = xp.empty_like(gl)
    for t, offs in enumerate(taps):
        xp.multiply(xl[(slice(None),) + C.tap_window(offs, outs, strides, dils)], gl, out=tmp)
        dw[t] = tmp.reshape(-1, c).sum(axis=0)
    return xp.ascontiguousarray(dw.T).reshape(c, 1, *ks)


def _filter_grad_gemm(xp, x, g, wshape, strides, pads, dils, groups, bodies=C.REFERENCE):
    """conv_filter_grad's general path: Output@GRAD times the im2col columns of the (unpadded) input, one GEMM per
    group."""
    n = x.shape[0]
    o, cg = wshape[:2]
    ks = wshape[2:]
    outs = g.shape[2:]
    p = math.prod(outs)
    cols = bodies.im2col(xp, x, ks, strides, pads, dils, outs).reshape(groups, cg * math.prod(ks), n * p)
    og = o // groups
    gm = xp.ascontiguousarray(g.reshape(n, groups, og, p).transpose(1, 2, 0, 3)).reshape(groups, og, n * p)
    return xp.matmul(gm, cols.transpose(0, 2, 1)).reshape(wshape)


def conv_input_grad(xp, g, w, strides, pads, dils, groups, in_sizes, in_channels, bodies=C.REFERENCE):
    """Input@GRAD of conv_forward (channels first). Stride 1: a plain convolution of Output@GRAD with the filter
    flipped in space and transposed per group (in <-> out channels), padded by dilation * (kernel - 1) - pad on
    each side; that takes the forward's im2col + GEMM path (or its 1x1 GEMM, or its depthwise multiply-adds)
    instead of a GEMM to columns and a col2im scatter. Depthwise at strides > 1: one multiply-add per tap. Other
    strides > 1 (or a pad wider than the kernel's reach): the transposed convolution (col2im), as it is where the
    filter is large beside the gradient."""
    nd = g.ndim - 2
    ks = w.shape[2:]
    # the flipped filter is a copy: worth it while the filter is smaller than the gradient (ResNet-18's
    # 128-channel convolutions on 8x8 maps, filter 2.25x the gradient, ran 1.07x faster through col2im; its
    # 512-channel ones on 2x2 maps 2.6x)
    if all(s == 1 for s in strides) and math.prod(w.shape) <= math.prod(g.shape):
        full = [(dils[i] * (ks[i] - 1) - pads[i][0], dils[i] * (ks[i] - 1) - pads[i][1]) for i in range(nd)]
        if all(lo >= 0 and hi >= 0 for lo, hi in full):
            o, cg = w.shape[:2]
            og = o // groups
            wt = xp.flip(w.reshape(groups, og, cg, *ks).swapaxes(1, 2), axis=tuple(range(3, 3 + nd)))
            wt = xp.ascontiguousarray(wt).reshape(groups * cg, og, *ks)
            return bodies.forward(xp, g, wt, [1] * nd, full, dils, groups)
    if groups == in_channels and w.shape[1] == 1 and groups > 1:
        return _depthwise_input_grad(xp, g, w, strides, pads, dils, in_channels, in_sizes)
    return bodies.transpose_forward(xp, g, w, strides, pads, dils, groups, in_sizes)


def _depthwise_input_grad(xp, g, w, strides, pads, dils, c, in_sizes):
    """Input@GRAD of a depthwise convolution at any stride: per kernel tap, Output@GRAD times that tap's weight
    per channel, added at the tap's strided window of the padded input (one multiply-add per tap; no GEMM of
    one-channel groups and no column buffer). A channel multiplier m sums output channels c*m .. c*m+m-1. With
    64 or more channels (and no multiplier) the sum runs channels-last, its adds along rows of channels instead of
    rows of a few strided pixels (MobileNetV2's stride-2 layers: [8, 192, 8, 8] 0.44 -> 0.15 ms, [8, 96, 32, 32]
    1.58 -> 1.32 ms; with 8 channels it was slower)."""
    n, o = g.shape[:2]
    outs = g.shape[2:]
    nd = len(outs)
    ks = w.shape[2:]
    mult = o // c
    full = [max((outs[i] - 1) * strides[i] + dils[i] * (ks[i] - 1) + 1, pads[i][0] + in_sizes[i])
            for i in range(nd)]
    windows = [C.tap_window(offs, outs, strides, dils) for offs in itertools.product(*(range(k) for k in ks))]
    crop = tuple(slice(pads[i][0], pads[i][0] + in_sizes[i]) for i in range(nd))
    if mult == 1 and c >= 64:
        dxl = xp.zeros((n, *full, c), dtype=g.dtype)
        gl = xp.ascontiguousarray(xp.moveaxis(g, 1, -1))
        wk = xp.ascontiguousarray(w.reshape(c, -1).T)                 # (taps, c)
        tmp = xp.empty_like(gl)
        for t, window in enumerate(windows):
            xp.multiply(gl, wk[t], out=tmp)
            dxl[(slice(None),) + window] += tmp  # `dxl` is ours; windows overlap, so add
        return xp.ascontiguousarray(xp.moveaxis(dxl[(slice(None),) + crop], -1, 1))
    dxpad = xp.zeros((n, c, *full), dtype=g.dtype)
    wk = w.reshape(o, -1)
    for t, window in enumerate(windows):
        part = g * wk[:, t].reshape((1, o) + (1,) * nd)
        if mult > 1:
            part = part.reshape(n, c, mult, *outs).sum(axis=2)
        dxpad[(slice(None), slice(None)) + window] += part  # `dxpad` is ours; windows overlap, so add
    return xp.ascontiguousarray(dxpad[(slice(None), slice(None)) + crop])


def _grad_operands(xp, ins, attrs, nd):
    """A convolution gradient's (Input, Filter, Output@GRAD) channels first, its data format and groups, and the
    forward's (strides, paddings, dilations)."""
    x, w, g = ins
    fmt, groups = attrs["data_format"], attrs["groups"]
    x, g = channels_first(xp, x, fmt), channels_first(xp, g, fmt)
    return x, w, g, fmt, groups, C.conv_geometry(attrs.__getitem__, x.shape[2:], w.shape[2:], nd)


def conv_grads(xp, x, w, g, strides, pads, dils, groups, want_dx, want_dw):
    """(Input@GRAD, Filter@GRAD) of a convolution (channels first), None where not wanted: the reference."""
    return (conv_input_grad(xp, g, w, strides, pads, dils, groups, list(x.shape[2:]), x.shape[1]) if want_dx
            else None,
            conv_filter_grad(xp, x, g, w.shape, strides, pads, dils, groups) if want_dw else None)


def conv_grad_kernel(fwd_type, nd, grads):
    """The kernel of an nd-D convolution's gradient that runs `grads` (conv_grads' signature) on the operands."""
    def kernel(ctx, ins, attrs):
        xp = ctx.xp
        x, w, g, fmt, groups, (strides, pads, dils) = _grad_operands(xp, ins, attrs, nd)
        dx, dw = grads(xp, x, w, g, strides, pads, dils, groups,
                       wanted(ctx, "Input@GRAD"), wanted(ctx, "Filter@GRAD"))
        return (None if dx is None else layout_again(xp, dx, fmt)), dw

    kernel.__name__ = f"{fwd_type}_grad"
    return kernel


def _conv_grad(fwd_type, nd):
    d = standard(fwd_type, ins=("Input", "Filter"), out_grads=("Output",), in_grads=("Input", "Filter"),
                 comment=f"The gradient of {fwd_type}: Input@GRAD = the transposed convolution of Output@GRAD "
                         "with Filter; Filter@GRAD = Output@GRAD times the im2col columns of Input.")
    d.kernel()(conv_grad_kernel(fwd_type, nd, conv_grads))
    d.runs_in_parts = True  # its fast variant (kernelcore/native/conv.py) splits it over the cores


def conv_transpose_grad_kernel(fwd_type, nd, bodies):
    """The kernel of an nd-D transposed convolution's gradient, built on `bodies` (a ConvBodies)."""
    def kernel(ctx, ins, attrs):
        xp = ctx.xp
        x, w, g, fmt, groups, (strides, pads, dils) = _grad_operands(xp, ins, attrs, nd)
        dx = dw = None
        if wanted(ctx, "Input@GRAD"):
            full = bodies.forward(xp, g, w, strides, pads, dils, groups)
            dx = layout_again(xp, xp.ascontiguousarray(full[(slice(None), slice(None)) +
                                                     tuple(slice(0, s) for s in x.shape[2:])]), fmt)
        if wanted(ctx, "Filter@GRAD"):
            dw = conv_filter_grad(xp, g, x, w.shape, strides, pads, dils, groups, bodies)
        return dx, dw

    kernel.__name__ = f"{fwd_type}_grad"
    return kernel


def _conv_transpose_grad(fwd_type, nd):
    d = standard(fwd_type, ins=("Input", "Filter"), out_grads=("Output",), in_grads=("Input", "Filter"),
                 comment=f"The gradient of {fwd_type}: Input@GRAD = the convolution of Output@GRAD with Filter; "
                         "Filter@GRAD = Input times the im2col columns of Output@GRAD.")
    d.kernel()(conv_transpose_grad_kernel(fwd_type, nd, C.REFERENCE))


for _t, _nd in (("conv2d", 2), ("depthwise_conv2d", 2), ("conv3d", 3)):
    _conv_grad(_t, _nd)
for _t, _nd in (("conv2d_transpose", 2), ("depthwise_conv2d_transpose", 2), ("conv3d_transpose", 3)):
    _conv_transpose_grad(_t, _nd)
