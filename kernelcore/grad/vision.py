"""Gradients of the vision ops (kernelcore/ops/conv.py, pool.py, vision_tensor.py, interp.py; the normalisations'
are in norm.py, the activations' in activation.py).

Convolutions: Input@GRAD is the transposed convolution of Output@GRAD (the forward col2im body; at stride 1 the
same thing as a plain convolution with the flipped filter, which takes the forward's faster path), Filter@GRAD one
GEMM of Output@GRAD with the im2col columns of the input; transposed convolutions swap the two roles. Linear ops
(average pooling, resizing, padding) apply the transpose of their per-dim matrices. Max pooling sends each output's
gradient to the first maximum of its window (Paddle's order). Slots follow Paddle's grad ops where Paddle's maker
reads the forward input.
"""
from __future__ import annotations

import itertools
import math
from functools import partial

import numpy as np

from ..ops import conv as C
from ..ops import interp as I
from ..ops import pool as P
from .. import native
from ..runtime.cpu_parts import by_images_in_parts, chunks, cpu_parts, run_parts
from ..ops._spatial import channel_last

from ..transforms.backward import standard, wanted


def _first(xp, x, fmt):
    return xp.moveaxis(x, -1, 1) if channel_last(fmt) else x


def _last(xp, x, fmt):
    return xp.ascontiguousarray(xp.moveaxis(x, 1, -1)) if channel_last(fmt) else x


# ---------------------------------------------------------------------------
# convolutions
# ---------------------------------------------------------------------------
def conv_filter_grad(xp, x, g, wshape, strides, pads, dils, groups):
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
        return _filter_grad_gemm(xp, x, g, wshape, strides, pads, dils, groups)
    dw = None
    for s in blocks:  # a block of images at a time, the columns in cache (C.COLUMN_BLOCK)
        part = _filter_grad_gemm(xp, x[s], g[s], wshape, strides, pads, dils, groups)
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


def _filter_grad_gemm(xp, x, g, wshape, strides, pads, dils, groups):
    """conv_filter_grad's general path: Output@GRAD times the im2col columns of the (unpadded) input, one GEMM per
    group."""
    n = x.shape[0]
    o, cg = wshape[:2]
    ks = wshape[2:]
    outs = g.shape[2:]
    p = math.prod(outs)
    cols = C.im2col(xp, x, ks, strides, pads, dils, outs).reshape(groups, cg * math.prod(ks), n * p)
    og = o // groups
    gm = xp.ascontiguousarray(g.reshape(n, groups, og, p).transpose(1, 2, 0, 3)).reshape(groups, og, n * p)
    return xp.matmul(gm, cols.transpose(0, 2, 1)).reshape(wshape)


def conv_input_grad(xp, g, w, strides, pads, dils, groups, in_sizes, in_channels):
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
            return C.conv_forward(xp, g, wt, [1] * nd, full, dils, groups)
    if groups == in_channels and w.shape[1] == 1 and groups > 1:
        return _depthwise_input_grad(xp, g, w, strides, pads, dils, in_channels, in_sizes)
    return C.conv_transpose_forward(xp, g, w, strides, pads, dils, groups, in_sizes)


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


def _conv_grad(fwd_type, nd):
    d = standard(fwd_type, ins=("Input", "Filter"), out_grads=("Output",), in_grads=("Input", "Filter"),
                 comment=f"The gradient of {fwd_type}: Input@GRAD = the transposed convolution of Output@GRAD "
                         "with Filter; Filter@GRAD = Output@GRAD times the im2col columns of Input.")

    @d.kernel()
    def kernel(ctx, ins, attrs):
        xp = ctx.xp
        x, w, g = ins
        fmt, groups = attrs["data_format"], attrs["groups"]
        x, g = _first(xp, x, fmt), _first(xp, g, fmt)
        strides, pads, dils = C.conv_geometry(attrs.__getitem__, x.shape[2:], w.shape[2:], nd)
        dx, dw = conv_grads_parts(xp, x, w, g, strides, pads, dils, groups,
                                  wanted(ctx, "Input@GRAD"), wanted(ctx, "Filter@GRAD"))
        return (None if dx is None else _last(xp, dx, fmt)), dw

    kernel.__name__ = f"{fwd_type}_grad"
    d.runs_in_parts = True


def conv_grads_parts(xp, x, w, g, strides, pads, dils, groups, want_dx, want_dw):
    """(Input@GRAD, Filter@GRAD) of a convolution, None where not wanted, in parts on the CPU's cores
    (kernelcore/runtime/cpu_parts.py): Input@GRAD by images, Filter@GRAD by input channels (one group) or by
    groups; each element sums the same terms as the whole op's."""
    n, c = x.shape[:2]
    if native.depthwise_ready(xp, x, w, groups) and g.shape == (n, c, *(
            C.conv_out_size(x.shape[2 + i], w.shape[2 + i], pads[i], strides[i], dils[i]) for i in range(2))):
        # kernelcore/native/depthwise_conv.c: both gradients a plane at a time, its own threads
        return native.depthwise_conv2d_grads(x, w, g, strides, [lo for lo, _ in pads], dils, want_dx, want_dw)
    # each part makes one of the two gradients (or a share of one): the split pays when one outlasts the hand-off
    # (MobileNetV2's 1x1 convolutions' gradients, 0.2-0.6 ms together, ran 5-35% slower split)
    parts = cpu_parts(xp, C.conv_work(x.shape, w.shape, strides, groups))
    if parts < 2:
        return (conv_input_grad(xp, g, w, strides, pads, dils, groups, list(x.shape[2:]), c) if want_dx else None,
                conv_filter_grad(xp, x, g, w.shape, strides, pads, dils, groups) if want_dw else None)
    calls = [partial(conv_input_grad, xp, g[s], w, strides, pads, dils, groups, list(x.shape[2:]), c)
             for s in chunks(n, (parts + 1) // 2 if want_dw else parts)] if want_dx else []
    dx_calls = len(calls)
    if want_dw:
        o, cg = w.shape[:2]
        dw_parts = parts - dx_calls
        if groups == 1:  # by input channels: Filter@GRAD's columns
            calls += [partial(conv_filter_grad, xp, x[:, s], g, (o, s.stop - s.start, *w.shape[2:]), strides, pads,
                              dils, 1) for s in chunks(c, dw_parts)]
        else:  # by groups: Filter@GRAD's rows
            og = o // groups
            calls += [partial(conv_filter_grad, xp, x[:, s.start * cg:s.stop * cg], g[:, s.start * og:s.stop * og],
                              ((s.stop - s.start) * og, *w.shape[1:]), strides, pads, dils, s.stop - s.start)
                      for s in chunks(groups, dw_parts)]
    done = run_parts(calls)
    dx = (done[0] if dx_calls == 1 else xp.concatenate(done[:dx_calls])) if want_dx else None
    dws = done[dx_calls:]
    dw = (dws[0] if len(dws) == 1 else xp.concatenate(dws, axis=1 if groups == 1 else 0)) if want_dw else None
    return dx, dw


def _conv_transpose_grad(fwd_type, nd):
    d = standard(fwd_type, ins=("Input", "Filter"), out_grads=("Output",), in_grads=("Input", "Filter"),
                 comment=f"The gradient of {fwd_type}: Input@GRAD = the convolution of Output@GRAD with Filter; "
                         "Filter@GRAD = Input times the im2col columns of Output@GRAD.")

    @d.kernel()
    def kernel(ctx, ins, attrs):
        xp = ctx.xp
        x, w, g = ins
        fmt, groups = attrs["data_format"], attrs["groups"]
        x, g = _first(xp, x, fmt), _first(xp, g, fmt)
        strides, pads, dils = C.conv_geometry(attrs.__getitem__, x.shape[2:], w.shape[2:], nd)
        dx = dw = None
        if wanted(ctx, "Input@GRAD"):
            full = C.conv_forward(xp, g, w, strides, pads, dils, groups)
            dx = _last(xp, xp.ascontiguousarray(full[(slice(None), slice(None)) +
                                                     tuple(slice(0, s) for s in x.shape[2:])]), fmt)
        if wanted(ctx, "Filter@GRAD"):
            dw = conv_filter_grad(xp, g, x, w.shape, strides, pads, dils, groups)
        return dx, dw

    kernel.__name__ = f"{fwd_type}_grad"


for _t, _nd in (("conv2d", 2), ("depthwise_conv2d", 2), ("conv3d", 3)):
    _conv_grad(_t, _nd)
for _t, _nd in (("conv2d_transpose", 2), ("depthwise_conv2d_transpose", 2), ("conv3d_transpose", 3)):
    _conv_transpose_grad(_t, _nd)


# ---------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------
def _scatter_max(xp, x, mask, g):
    """X@GRAD: each output's gradient added at its max's flat spatial index."""
    n, c = x.shape[:2]
    size = math.prod(x.shape[2:])
    dx = xp.zeros((n * c, size), dtype=g.dtype)
    rows = xp.arange(n * c).reshape(-1, 1)
    xp.add.at(dx, (rows, mask.reshape(n * c, -1).astype(xp.int64)), g.reshape(n * c, -1))
    return dx.reshape(x.shape)


# max pooling's gradient does ~3x the forward's passes per kernel offset (ResNet-18's 3x3 stride-2 pool on
# [8, 64, 32, 32]: 1.6 ms on one core, 1.0 ms in two parts)
GRAD_OVER_FORWARD = 3


def _max_grad_offsets(xp, x, out, g, ksize, strides, pads, outs):
    """Regular windows: for each kernel offset in row-major order, the outputs whose max sits there (and was not
    found at an earlier offset) pass their gradient back. Windows that do not overlap (stride >= kernel, as a
    2x2 stride-2 pool) write their offset's gradients instead of adding them; an input needing no padding is
    neither padded nor cropped (a small CNN's 2x2 pool on [32, 8, 32, 32]: 0.37 -> 0.24 ms)."""
    nd = x.ndim - 2
    widths = [(0, 0), (0, 0)]
    for d in range(nd):
        need = (outs[d] - 1) * strides[d] + ksize[d]
        widths.append((pads[d][0], max(need - x.shape[2 + d] - pads[d][0], 0)))
    padded = any(lo or hi for lo, hi in widths)
    xpad = xp.pad(x, widths, mode="constant", constant_values=x.dtype.type(-xp.inf)) if padded else x
    gpad = xp.zeros(xpad.shape, dtype=g.dtype)
    todo = xp.ones(out.shape, dtype=bool)  # outputs whose max has not been found at an earlier offset
    disjoint = all(s >= k for s, k in zip(strides, ksize))  # every input element in one window at most
    offsets = list(itertools.product(*(range(k) for k in ksize)))
    for i, offs in enumerate(offsets):
        sl = (slice(None), slice(None)) + tuple(
            slice(offs[d], offs[d] + strides[d] * (outs[d] - 1) + 1, strides[d]) for d in range(nd))
        hit = xpad[sl] == out
        hit &= todo
        if i + 1 < len(offsets):
            todo ^= hit  # hit lies within todo: this clears them
        if disjoint:
            gpad[sl] = g * hit  # `gpad` is ours (a multiply: xp.where and a masked copy are slower)
        else:
            gpad[sl] += g * hit  # windows overlap, so add
    if not padded:
        return gpad
    crop = (slice(None), slice(None)) + tuple(slice(lo, lo + x.shape[2 + d]) for d, (lo, _) in
                                              enumerate(widths[2:]))
    return xp.ascontiguousarray(gpad[crop])


def _pool_grad(fwd_type, nd):
    d = standard(fwd_type, ins=("X",), outs=("Out",),
                 comment=f"The gradient of {fwd_type}: average pooling spreads each output's gradient over its "
                         "window (divided as the forward divided); max pooling gives it to the window's first "
                         "maximum.")

    @d.kernel()
    def kernel(ctx, ins, attrs):
        xp = ctx.xp
        x, out, g = ins
        fmt = attrs["data_format"]
        x, out, g = _first(xp, x, fmt), _first(xp, out, fmt), _first(xp, g, fmt)
        ksize, strides, pads, outs, adaptive = P.geometry(attrs.get, x.shape[2:], nd)
        if attrs["pooling_type"] == "avg" and P.whole_maps(x.shape, ksize, pads, outs, adaptive) and \
                g.shape == (*x.shape[:2], *outs) and g.dtype in P.WHOLE_MAP_DTYPES:
            # every input cell gets its map's gradient over the map's size: one broadcast, where the products
            # with 1 x size matrices below walk a few elements at a time (MobileNetV2's [8, 1280, 2, 2]: ~0.3 ms)
            dx = xp.empty(x.shape, dtype=g.dtype)  # written, never a read-only broadcast view (1 x 1 maps)
            dx[...] = g / g.dtype.type(math.prod(x.shape[2:]))
        elif attrs["pooling_type"] == "avg":
            dx = g
            for dim in range(nd):
                a = 2 + dim
                m = xp.asarray(P.avg_matrix(x.shape[a], outs[dim], ksize[dim], strides[dim], pads[dim][0],
                                             adaptive, attrs["exclusive"], g.dtype))
                dx = xp.moveaxis(xp.tensordot(dx, m, axes=([a], [0])), -1, a)
            dx = xp.ascontiguousarray(dx)
        elif adaptive or list(ksize) == list(x.shape[2:]):
            _, mask = P.max_pool_with_index(xp, x, ksize, strides, pads, outs, adaptive)
            dx = _scatter_max(xp, x, mask, g)
        else:
            body = partial(_max_grad_offsets, xp, ksize=ksize, strides=strides, pads=pads, outs=outs)
            work = GRAD_OVER_FORWARD * P.max_pool_work(x.shape, ksize, outs)
            dx = by_images_in_parts(xp, body, (x, out, g), x.shape, work)
        return (_last(xp, dx, fmt),)

    kernel.__name__ = f"{fwd_type}_grad"
    d.runs_in_parts = True


def _max_index_grad(fwd_type):
    d = standard(fwd_type, ins=("X",), outs=("Mask",),
                 comment=f"The gradient of {fwd_type}: each Out@GRAD element is added to X@GRAD at Mask's index.")

    @d.kernel()
    def kernel(ctx, ins, attrs):
        x, mask, g = ins
        return (_scatter_max(ctx.xp, x, mask, g),)

    kernel.__name__ = f"{fwd_type}_grad"


_pool_grad("pool2d", 2)
_pool_grad("pool3d", 3)
_max_index_grad("max_pool2d_with_index")
_max_index_grad("max_pool3d_with_index")


# ---------------------------------------------------------------------------
# padding, resizing (squeeze2, unsqueeze2 and flatten's gradients: tensor_extra.py)
# ---------------------------------------------------------------------------
def _apply_transposed(xp, g, mats, first_axis):
    """X@GRAD of a separable linear map whose dim first_axis + i was mixed by mats[i] (out, in)."""
    for i, m in enumerate(mats):
        a = first_axis + i
        g = xp.moveaxis(xp.tensordot(g, xp.asarray(m.astype(g.dtype)), axes=([a], [0])), -1, a)
    return xp.ascontiguousarray(g)


PAD3D_GRAD = standard("pad3d", ins=("X", "Paddings"),
                      comment="The gradient of pad3d: the padded positions' gradients return to the input cells "
                              "they copied (constant mode: dropped).")


@PAD3D_GRAD.kernel()
def pad3d_grad(ctx, ins, attrs):
    from ..ops.tensor import host_ints
    from ..ops.vision_tensor import pad_widths
    xp = ctx.xp
    x, pad_t, g = ins
    p = host_ints(pad_t) if pad_t is not None else list(attrs["paddings"])
    widths = pad_widths(p, attrs["data_format"])
    mode = attrs["mode"]
    if mode == "constant":
        return (xp.ascontiguousarray(g[tuple(slice(lo, lo + n) for (lo, _), n in zip(widths, x.shape))]),)
    first = 1 if attrs["data_format"] == "NDHWC" else 2
    mats = []
    for d in range(3):
        (lo, hi), n = widths[first + d], x.shape[first + d]
        j = np.arange(n + lo + hi) - lo
        if mode == "reflect":
            j = np.abs(j)
            j = np.where(j >= n, 2 * (n - 1) - j, j)
        elif mode == "replicate":
            j = np.clip(j, 0, n - 1)
        else:
            j = j % n
        m = np.zeros((n + lo + hi, n))
        m[np.arange(n + lo + hi), j] = 1
        mats.append(m)
    return (_apply_transposed(xp, g, mats, first),)


def _interp_grad(fwd_type, method):
    d = standard(fwd_type, ins=("X", "OutSize", "SizeTensor", "Scale"),
                 comment=f"The gradient of {fwd_type}: each output's gradient returns to the input taps it was "
                         "interpolated from, with the same weights.")

    @d.kernel()
    def kernel(ctx, ins, attrs):
        xp = ctx.xp
        x, out_size, size_tensor, scale_t, g = ins
        last = attrs["data_layout"] in ("NHWC", "NWC", "NDHWC")
        xc, gc = (xp.moveaxis(x, -1, 1), xp.moveaxis(g, -1, 1)) if last else (x, g)
        outs, scales = I.out_sizes(xc.shape[2:], attrs.get, size_tensor, out_size, scale_t)
        mats = []
        for d_, o in enumerate(outs):
            i = xc.shape[2 + d_]
            idx, w = I.taps(method, i, o, scales[d_], attrs["align_corners"], attrs["align_mode"])
            m = np.zeros((o, i))
            np.add.at(m, (np.repeat(np.arange(o), idx.shape[1]), idx.reshape(-1)), w.reshape(-1))
            mats.append(m)
        dx = _apply_transposed(xp, gc, mats, 2)
        return (_last(xp, dx, "NHWC" if last else "NCHW"),)

    kernel.__name__ = f"{fwd_type}_grad"


for _t, _m in (("nearest_interp_v2", "nearest"), ("linear_interp_v2", "linear"),
               ("bilinear_interp_v2", "bilinear"), ("trilinear_interp_v2", "trilinear"),
               ("bicubic_interp_v2", "bicubic")):
    _interp_grad(_t, _m)
