"""Convolutions with Paddle's slots and attributes: conv2d, depthwise_conv2d, conv3d, conv2d_transpose,
depthwise_conv2d_transpose, conv3d_transpose: the reference kernels, over xp.

One N-d body serves 2-D and 3-D (Paddle writes conv2d for Conv1D, with unsqueeze2/squeeze2 around it):
  * grouped/ordinary convolution: im2col through an `as_strided` window view of the padded input, laid out
    (group, Cin/groups * kernel, batch * output pixels), then one GEMM per group (`xp.matmul` over the group
    stack): weights (groups, Cout/groups, Cin/groups * kernel) @ columns;
  * depthwise (groups == Cin, one input channel per group, any channel multiplier): on large maps a per-channel
    column copy and a (1, taps) @ (taps, pixels) product per (image, channel); on small maps one multiply-add
    over the whole output per kernel offset (9 for a 3x3 kernel), no column buffer;
  * transposed convolution: one GEMM (weights^T @ input) to columns, then col2im as one strided add per
    kernel offset.
The only Python loops run over groups-free kernel offsets, never over pixels, channels or the batch.

The bodies are the methods of ConvBodies, and the kernels are made from them: kernelcore/native/conv.py's fast
variants (2-D float32 convolutions in C, work in parts on the cores) subclass it and replace its leaves.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._spatial import attr_or, channel_last, check_ints, conv_out_size, pairs, update_padding


def _strided(xp):
    return xp.lib.stride_tricks.as_strided


def _to_channel_first(xp, x):
    return xp.moveaxis(x, -1, 1)


def _to_channel_last(xp, x):
    return xp.moveaxis(x, 1, -1)


# ---------------------------------------------------------------------------
# the bodies (NC + spatial layout)
# ---------------------------------------------------------------------------
def pad_spatial(xp, x, pads):
    """x (N, C, spatial...) with zeros added per spatial dim ((before, after) each): a zeroed array and one slice
    assignment, 1.3-2x faster than xp.pad on convolution-sized inputs."""
    out = xp.zeros(x.shape[:2] + tuple(d + lo + hi for d, (lo, hi) in zip(x.shape[2:], pads)), dtype=x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(lo, lo + d) for d, (lo, _) in zip(x.shape[2:], pads))] = x
    return out


def output_sizes(x_shape, w_shape, strides, pads, dils):
    """The output's spatial size of a convolution (channels first), or a ValueError where it would be empty."""
    nd = len(x_shape) - 2
    ks = w_shape[2:]
    outs = [conv_out_size(x_shape[2 + i], ks[i], pads[i], strides[i], dils[i]) for i in range(nd)]
    if any(v <= 0 for v in outs):
        padded = [x_shape[2 + i] + pads[i][0] + pads[i][1] for i in range(nd)]
        raise ValueError(f"the output would be empty: padded input {padded}, kernel {list(ks)}, "
                         f"dilations {dils}, strides {strides}")
    return outs


# A GEMM with few rows (output channels per group) reads each column once for few multiply-adds, so it runs at
# the speed its columns come from memory: with more column elements than this (512 KB of float32), the columns
# are made and multiplied a block of images at a time, in cache (a small CNN's first convolution, 3 -> 8
# channels on [32, 3, 32, 32]: forward 0.35 -> 0.30 ms, Filter@GRAD 0.64 -> 0.30 ms). GEMMs with more rows are
# bound by their multiply-adds, and smaller blocks only slowed them (ResNet-18's 64 to 512 channels).
COLUMN_BLOCK = 1 << 17
THIN_GEMM_ROWS = 32


def column_blocks(xp, n, rows, per_image, groups=1):
    """Slices of the batch of n images for im2col + GEMM a block at a time (COLUMN_BLOCK column elements, of
    `per_image` each), or None for all at once. Grouped convolutions stay whole: their per-group products did not
    gain (MobileNetV2's depthwise Filter@GRAD ran 5-15% slower in blocks)."""
    if xp is not np or groups != 1 or rows >= THIN_GEMM_ROWS or n < 2 or n * per_image <= COLUMN_BLOCK:
        return None
    step = max(1, COLUMN_BLOCK // max(1, per_image))
    return [slice(i, min(n, i + step)) for i in range(0, n, step)] if step < n else None


class ConvBodies:
    """The convolutions' bodies (channels first), over xp: the reference. The bodies built on others reach them
    through `self` (the forward its im2col, the gradients in kernelcore/grad/conv.py the forward, im2col and the
    transposed convolution through the object they are given), so a subclass that replaces these leaves
    (kernelcore/native/conv.py) has every body built on them take its leaves."""

    def forward(self, xp, x, w, strides, pads, dils, groups):
        """Out[n, o, p...] = sum_{c in o's group, k...} W[o, c, k...] * Xpad[n, c, p*s + k*d ...]."""
        n, c = x.shape[:2]
        o, cg = w.shape[:2]
        ks = w.shape[2:]
        outs = output_sizes(x.shape, w.shape, strides, pads, dils)
        if groups == c and cg == 1 and c > 1:
            return _depthwise(xp, pad_spatial(xp, x, pads) if any(lo or hi for lo, hi in pads) else x, w, strides,
                              dils, outs)
        x = xp.ascontiguousarray(x)
        og, k = o // groups, math.prod(ks)
        p = math.prod(outs)
        if (all(v == 1 for v in ks) and all(s == 1 for s in strides) and not any(lo or hi for lo, hi in pads)
                and p >= 16):
            # 1x1, stride 1: the input already is the column matrix, per image (tiny maps take the folded path
            # below: one GEMM over batch * pixels beats n GEMMs of a few columns, 2x on 2x2 maps)
            cols = x.reshape(n, groups, cg, p)
            out = xp.matmul(w.reshape(groups, og, cg), cols)            # (n, groups, og, p): no im2col copy
            return out.reshape(n, o, *outs)
        blocks = column_blocks(xp, n, og, groups * cg * k * p, groups)
        if blocks is None:
            return self._im2col_gemm(xp, x, w, strides, pads, dils, groups, outs)
        out = xp.empty((n, o, *outs), dtype=xp.result_type(x, w))
        for s in blocks:
            out[s] = self._im2col_gemm(xp, x[s], w, strides, pads, dils, groups, outs)
        return out

    def im2col(self, xp, x, ks, strides, pads, dils, outs):
        """The im2col columns of x (N, C, spatial...) for a convolution with kernel `ks`: (C * prod(ks),
        N * prod(outs)), rows (channel, kernel offset...), columns (image, output position...): the padded
        input's window view, copied."""
        nd = x.ndim - 2
        if any(lo or hi for lo, hi in pads):
            x = pad_spatial(xp, x, pads)
        n, c = x.shape[:2]
        es = x.strides
        view = _strided(xp)(
            x, shape=(c, *ks, n, *outs),
            strides=(es[1], *(es[2 + i] * dils[i] for i in range(nd)), es[0],
                     *(es[2 + i] * strides[i] for i in range(nd))))
        return view.reshape(c * math.prod(ks), n * math.prod(outs))       # the copy

    def _im2col_gemm(self, xp, x, w, strides, pads, dils, groups, outs):
        """forward's general path: the im2col columns of the (unpadded) input, one GEMM per group, the result
        back to (N, Cout, out spatial...)."""
        n = x.shape[0]
        o, cg = w.shape[:2]
        ks = w.shape[2:]
        og, k, p = o // groups, math.prod(ks), math.prod(outs)
        cols = self.im2col(xp, x, ks, strides, pads, dils, outs).reshape(groups, cg * k, n * p)
        out = xp.matmul(w.reshape(groups, og, cg * k), cols)              # (groups, og, n * p)
        out = out.reshape(o, n, p).transpose(1, 0, 2)
        return xp.ascontiguousarray(out).reshape(n, o, *outs)

    def transpose_forward(self, xp, x, w, strides, pads, dils, groups, out_sizes):
        """The gradient of forward with respect to its input: Out = col2im(W^T @ X), one GEMM per group and
        one strided add per kernel offset, in the same order either way. The adds' innermost loop runs along
        whichever is longer, the output channels (columns and sum laid out channels-last, the result brought back
        channels-first) or the input's last spatial dim (channels-first): a NumPy add over rows of 2 pixels costs
        ~10x what it costs over rows of 512 channels (ResNet-18's last stage, the input gradients of its
        512-channel convolutions on 2x2 maps, ran 1.7x faster so)."""
        return conv_transpose_forward(xp, x, w, strides, pads, dils, groups, out_sizes)


REFERENCE = ConvBodies()
conv_forward = REFERENCE.forward
im2col = REFERENCE.im2col


def _depthwise(xp, xpad, w, strides, dils, outs):
    """groups == channels: Out[:, o] = sum over kernel offsets of W[o, 0, k] * the shifted input channel o // m.

    Output maps of >= 256 pixels: per-channel columns (an im2col view of the kernel taps, one copy) and one small
    matrix product per (image, channel), (1, taps) @ (taps, pixels): fewer passes over memory than a multiply and
    an add per tap (1.8x faster on [8, 32, 32, 32]). Smaller maps (late layers: 2x2 .. 8x8) with many channels
    run channels-last, so the products stream over long channel rows instead of rows of a few pixels (7x faster
    on [8, 576, 4, 4] than channels-first); the rest multiply-add per tap channels-first."""
    c = xpad.shape[1]
    o = w.shape[0]
    mult = o // c
    if mult > 1:
        xpad = xp.repeat(xpad, mult, axis=1)  # output channel j reads input channel j // mult
    nd = len(outs)
    ks = w.shape[2:]
    p = math.prod(outs)
    if p >= 256:
        xpad = xp.ascontiguousarray(xpad)
        n, es = xpad.shape[0], xpad.strides
        view = _strided(xp)(xpad, shape=(n, o, *ks, *outs),
                            strides=(es[0], es[1], *(es[2 + i] * dils[i] for i in range(nd)),
                                     *(es[2 + i] * strides[i] for i in range(nd))))
        cols = view.reshape(n, o, math.prod(ks), p)                      # the per-channel im2col copy
        return (w.reshape(o, 1, -1) @ cols).reshape(n, o, *outs)
    if o >= 64:
        # channels-last window view (no copy beyond the layout change) summed against the taps by one einsum,
        # written channels-first: 1.3x faster than a multiply and an add per tap on [8, 576, 4, 4]
        xl = xp.ascontiguousarray(xp.moveaxis(xpad, 1, -1))             # (n, spatial..., o)
        es = xl.strides
        view = _strided(xp)(xl, shape=(xl.shape[0], *outs, *ks, o),
                            strides=(es[0], *(es[1 + i] * strides[i] for i in range(nd)),
                                     *(es[1 + i] * dils[i] for i in range(nd)), es[-1]))
        wl = xp.ascontiguousarray(xp.moveaxis(w.reshape(o, *ks), 0, -1))  # (kernel..., o)
        sp, kk = "yxz"[:nd], "abc"[:nd]
        return xp.ascontiguousarray(xp.einsum(f"n{sp}{kk}o,{kk}o->no{sp}", view, wl))
    wk = w.reshape(o, -1).T.reshape((-1, 1, o) + (1,) * nd)             # tap t: (1, o, 1, ...)
    out = tmp = None
    for t, offs in enumerate(itertools.product(*(range(k) for k in ks))):
        sl = (slice(None), slice(None)) + tuple(
            slice(offs[i] * dils[i], offs[i] * dils[i] + strides[i] * (outs[i] - 1) + 1, strides[i])
            for i in range(nd))
        if out is None:
            out = xpad[sl] * wk[t]
            tmp = xp.empty_like(out)
        else:
            xp.multiply(xpad[sl], wk[t], out=tmp)
            out += tmp  # `out` and `tmp` are fresh arrays of ours
    return out

def conv_transpose_forward(xp, x, w, strides, pads, dils, groups, out_sizes):
    """ConvBodies.transpose_forward's reference (see there)."""
    n, cin = x.shape[:2]
    ins, og, ks = x.shape[2:], w.shape[1], w.shape[2:]
    cg, p = cin // groups, math.prod(ins)
    full = [max((ins[i] - 1) * strides[i] + dils[i] * (ks[i] - 1) + 1, pads[i][0] + out_sizes[i])
            for i in range(len(ins))]                                  # every tap's reach, and the padded output
    crop = tuple(slice(pads[i][0], pads[i][0] + out_sizes[i]) for i in range(len(ins)))
    taps = list(itertools.product(*(range(kk) for kk in ks)))
    if og >= ins[-1]:
        xm = xp.ascontiguousarray(x.reshape(n, groups, cg, p).transpose(1, 0, 3, 2)).reshape(groups, n * p, cg)
        cols = xp.matmul(xm, w.reshape(groups, cg, og * len(taps))).reshape(groups, n, *ins, og, *ks)
        out = xp.zeros((n, *full, groups, og), dtype=x.dtype)
        for offs in taps:
            out[(slice(None),) + tap_window(offs, ins, strides, dils)] += \
                xp.moveaxis(cols[(Ellipsis,) + offs], 0, -2)          # `out` is ours
        out = out[(slice(None),) + crop].reshape(n, *out_sizes, groups * og)
        return xp.ascontiguousarray(xp.moveaxis(out, -1, 1))
    xm = xp.ascontiguousarray(x.reshape(n, groups, cg, p).transpose(1, 2, 0, 3)).reshape(groups, cg, n * p)
    wm = w.reshape(groups, cg, og * len(taps)).transpose(0, 2, 1)
    cols = xp.matmul(wm, xm).reshape(groups, og, *ks, n, *ins)
    out = xp.zeros((n, groups, og, *full), dtype=x.dtype)
    perm = (2, 0, 1) + tuple(range(3, 3 + len(ins)))                 # (groups, og, n, spatial) -> (n, groups, og, ...)
    for offs in taps:
        out[(slice(None),) * 3 + tap_window(offs, ins, strides, dils)] += \
            cols[(slice(None), slice(None)) + offs].transpose(perm)   # `out` is ours
    return xp.ascontiguousarray(out[(slice(None),) * 3 + crop]).reshape(n, groups * og, *out_sizes)


def tap_window(offs, ins, strides, dils):
    """The spatial slices that kernel offset `offs` of every input pixel lands on in the col2im buffer."""
    return tuple(slice(offs[i] * dils[i], offs[i] * dils[i] + strides[i] * (ins[i] - 1) + 1, strides[i])
                 for i in range(len(ins)))

# ---------------------------------------------------------------------------
# attribute handling shared by the kernels and shape inference
# ---------------------------------------------------------------------------
def conv_geometry(attrs_get, in_spatial, ksize, nd):
    """(strides, (before, after) pads, dilations) after Paddle's padding_algorithm."""
    strides = check_ints("strides", attrs_get("strides"), nd)
    dils = check_ints("dilations", attrs_get("dilations"), nd)
    pads = pairs(attrs_get("paddings"), nd)
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        raise ValueError(f"paddings must be >= 0, got {list(attrs_get('paddings'))}")
    pads, dils = update_padding(attrs_get("padding_algorithm"), pads, dils, in_spatial, ksize, strides)
    return strides, pads, dils


def transpose_out_sizes(in_spatial, ksize, strides, pads, dils, output_size, output_padding):
    nd = len(in_spatial)
    outs = []
    for i in range(nd):
        if in_spatial[i] < 0:
            outs.append(-1)
            continue
        base = (in_spatial[i] - 1) * strides[i] - pads[i][0] - pads[i][1] + dils[i] * (ksize[i] - 1) + 1
        if output_size:
            want = list(output_size)[i]
            if not base <= want < base + strides[i]:
                raise ValueError(f"output_size {list(output_size)}: dim {i} must lie in [{base}, "
                                 f"{base + strides[i]}), got {want}")
            base = want
        elif output_padding:
            op = list(output_padding)[i]
            if not 0 <= op < max(strides[i], dils[i]):
                raise ValueError(f"output_padding {list(output_padding)}: dim {i} must lie in "
                                 f"[0, max(stride, dilation)) = [0, {max(strides[i], dils[i])}), got {op}")
            base += op
        if base <= 0:
            raise ValueError(f"the output would be empty: input {list(in_spatial)}, kernel {list(ksize)}")
        outs.append(base)
    return outs


# ---------------------------------------------------------------------------
# registration
# ---------------------------------------------------------------------------
def _common_attrs(nd, layout_default, transpose=False):
    one, zero = [1] * nd, [0] * nd
    attrs = [
        Attr("strides", A.INTS, "the window's step per spatial dim", one),
        Attr("paddings", A.INTS, f"zeros added per spatial dim: {nd} values (both sides) or {2 * nd} "
             "([d0_before, d0_after, d1_before, ...])", zero),
        Attr("padding_algorithm", A.STRING, "'EXPLICIT' (use paddings), 'SAME' (out = ceil(in / stride), the "
             "smaller half of the padding before; dilations become 1) or 'VALID' (no padding)", "EXPLICIT"),
        Attr("groups", A.INT, "channel groups: input and output channels split into `groups` parts, part g of "
             "the output sees part g of the input only", 1),
        Attr("dilations", A.INTS, "the spacing between kernel taps per spatial dim", one),
        Attr("data_format", A.STRING, f"'{layout_default}' (channels first) or channels last "
             "('NHWC' / 'NDHWC'); 'AnyLayout' = channels first", layout_default),
        Attr("exhaustive_search", A.BOOLEAN, "cuDNN algorithm search (ignored)", False, extra=True),
        Attr("workspace_size_MB", A.INT, "cuDNN workspace (ignored)", 512, extra=True),
        Attr("fuse_relu_before_depthwise_conv", A.BOOLEAN, "Paddle GPU fusion hint (ignored)", False,
             extra=True),
        Attr("use_addto", A.BOOLEAN, "cuDNN add-to hint (ignored)", False, extra=True),
        Attr("force_fp32_output", A.BOOLEAN, "oneDNN int8 hint (ignored)", False, extra=True),
        Attr("fuse_activation", A.STRING, "oneDNN fusion hint (ignored)", "", extra=True),
        Attr("fuse_alpha", A.FLOAT, "oneDNN fusion hint (ignored)", 0.0, extra=True),
        Attr("fuse_beta", A.FLOAT, "oneDNN fusion hint (ignored)", 0.0, extra=True),
        Attr("fuse_residual_connection", A.BOOLEAN, "oneDNN fusion hint (ignored)", False, extra=True),
        Attr("Scale_in", A.FLOAT, "oneDNN int8 hint (ignored)", 1.0, extra=True),
        Attr("Scale_out", A.FLOAT, "oneDNN int8 hint (ignored)", 1.0, extra=True),
        Attr("Scale_in_eltwise", A.FLOAT, "oneDNN int8 hint (ignored)", 1.0, extra=True),
        Attr("Scale_weights", A.FLOATS, "oneDNN int8 hint (ignored)", [1.0], extra=True),
    ]
    if transpose:
        attrs += [Attr("output_padding", A.INTS, "extra rows/cols added after the last output position per "
                       "spatial dim, each < max(stride, dilation); [] = none", []),
                  Attr("output_size", A.INTS, "the output's spatial size, within [computed, computed + "
                       "stride) per dim; [] = computed", [])]
    return attrs


def _in_layout(xp, x, fmt):
    return _to_channel_first(xp, x) if channel_last(fmt) else x


def _out_layout(xp, y, fmt):
    return xp.ascontiguousarray(_to_channel_last(xp, y)) if channel_last(fmt) else y


def _check_input(x, w, nd, groups, fmt, transpose):
    if x.ndim != nd + 2:
        raise ValueError(f"Input must be {nd + 2}-D (batch, channels and {nd} spatial dims), got shape "
                         f"{list(x.shape)}")
    if w.ndim != nd + 2:
        raise ValueError(f"Filter must be {nd + 2}-D, got shape {list(w.shape)}")
    if groups <= 0:
        raise ValueError(f"groups must be > 0, got {groups}")
    c = x.shape[-1] if channel_last(fmt) else x.shape[1]
    if c < 0:
        return
    if transpose:
        if w.shape[0] != c:
            raise ValueError(f"Filter {list(w.shape)} must have Input's {c} channels as dim 0")
        if c % groups:
            raise ValueError(f"Input's {c} channels must divide by groups={groups}")
    else:
        if w.shape[1] * groups != c:
            raise ValueError(f"Input has {c} channels but Filter {list(w.shape)} with groups={groups} expects "
                             f"{w.shape[1] * groups} (Filter dim 1 * groups)")
        if w.shape[0] % groups:
            raise ValueError(f"Filter's {w.shape[0]} output channels must divide by groups={groups}")


class _Shape:
    """Shape-only stand-in so _check_input serves shape inference too."""

    def __init__(self, shape):
        self.shape = tuple(shape)
        self.ndim = len(shape)


def _make_conv(op_type, nd, layout, comment):
    d = register_op(
        op_type, comment,
        inputs=[In("Input", f"({nd + 2}-D) the images: [N, C, spatial...] (channels last with data_format)"),
                In("Filter", f"({nd + 2}-D) [Cout, Cin / groups, kernel...]")],
        outputs=[Out("Output", "[N, Cout, out spatial...] (channels last with data_format)")],
        attrs=_common_attrs(nd, layout))

    def infer(ic):
        x, w = _Shape(ic.shape("Input")), _Shape(ic.shape("Filter"))
        get = lambda n: attr_or(ic, n, d.attrs[n].default)  # noqa: E731
        fmt, groups = get("data_format"), get("groups")
        try:
            _check_input(x, w, nd, groups, fmt, False)
            sp = x.shape[1:-1] if channel_last(fmt) else x.shape[2:]
            strides, pads, dils = conv_geometry(get, sp, w.shape[2:], nd)
        except ValueError as e:
            ic.fail(str(e))
        outs = [conv_out_size(sp[i], w.shape[2 + i], pads[i], strides[i], dils[i]) for i in range(nd)]
        if any(v == 0 or v < -1 for v in outs):
            ic.fail(f"the output would be empty: Input {list(x.shape)}, Filter {list(w.shape)}")
        n = x.shape[0]
        shape = (n, *outs, w.shape[0]) if channel_last(fmt) else (n, w.shape[0], *outs)
        ic.set_output("Output", shape, ic.dtype("Input"))

    d.infer_shape = infer

    d.kernel()(conv_kernel(op_type, nd, conv_forward))
    d.runs_in_parts = True  # its fast variant (kernelcore/native/conv.py) splits it over the cores
    return d


def conv_kernel(op_type, nd, forward):
    """The kernel of an nd-D convolution that runs `forward(xp, x, w, strides, pads, dils, groups)` (channels
    first) on the operands: REFERENCE's forward, or a fast variant's."""
    def kernel(ctx, ins, attrs):
        x, w = ins
        xp = ctx.xp
        fmt, groups = attrs["data_format"], attrs["groups"]
        _check_input(x, w, nd, groups, fmt, False)
        x = _in_layout(xp, x, fmt)
        strides, pads, dils = conv_geometry(attrs.__getitem__, x.shape[2:], w.shape[2:], nd)
        return (_out_layout(xp, forward(xp, x, w, strides, pads, dils, groups), fmt),)

    kernel.__name__ = op_type
    return kernel


def _make_conv_transpose(op_type, nd, layout, comment):
    d = register_op(
        op_type, comment,
        inputs=[In("Input", f"({nd + 2}-D) [N, Cin, spatial...] (channels last with data_format)"),
                In("Filter", f"({nd + 2}-D) [Cin, Cout / groups, kernel...]"),
                In("Bias", "oneDNN only: Paddle's CPU and GPU kernels ignore it, and so does kernelcore (Paddle's "
                   "layers add the bias with elementwise_add)", dispensable=True)],
        outputs=[Out("Output", "[N, Cout, out spatial...]; out = (in - 1) * stride - pad_before - pad_after + "
                     "dilation * (kernel - 1) + 1 (+ output_padding), or output_size")],
        attrs=_common_attrs(nd, layout, transpose=True))

    def infer(ic):
        x, w = _Shape(ic.shape("Input")), _Shape(ic.shape("Filter"))
        get = lambda n: attr_or(ic, n, d.attrs[n].default)  # noqa: E731
        try:
            *_, outs = transpose_geometry(nd, get, x, w)
        except ValueError as e:
            ic.fail(str(e))
        cout = w.shape[1] * get("groups")
        shape = (x.shape[0], *outs, cout) if channel_last(get("data_format")) else (x.shape[0], cout, *outs)
        ic.set_output("Output", shape, ic.dtype("Input"))

    d.infer_shape = infer

    d.kernel()(conv_transpose_kernel(op_type, nd, REFERENCE))
    return d


def transpose_geometry(nd, get, x, w):
    """(strides, (before, after) pads, dilations, output spatial size) of an nd-D transposed convolution whose
    attributes `get` reads."""
    fmt, groups = get("data_format"), get("groups")
    _check_input(x, w, nd, groups, fmt, True)
    sp = x.shape[1:-1] if channel_last(fmt) else x.shape[2:]
    strides, pads, dils = conv_geometry(get, sp, w.shape[2:], nd)
    outs = transpose_out_sizes(sp, w.shape[2:], strides, pads, dils, get("output_size"), get("output_padding"))
    return strides, pads, dils, outs


def conv_transpose_kernel(op_type, nd, bodies):
    """The kernel of an nd-D transposed convolution run by `bodies` (a ConvBodies)."""
    def kernel(ctx, ins, attrs):
        x, w, _bias = ins
        xp = ctx.xp
        fmt = attrs["data_format"]
        strides, pads, dils, outs = transpose_geometry(nd, attrs.__getitem__, x, w)
        x = _in_layout(xp, x, fmt)
        y = bodies.transpose_forward(xp, x, w, strides, pads, dils, attrs["groups"], outs)
        return (_out_layout(xp, y, fmt),)

    kernel.__name__ = op_type
    return kernel


CONV_DOC = ("{nd}-D convolution (cross-correlation, as Paddle): Output[n, o, p] = sum over the input channels "
            "of o's group and the kernel taps k of Filter[o, c, k] * Input_padded[n, c, p * strides + k * "
            "dilations]. Output size per dim: (in + pad_before + pad_after - (dilation * (kernel - 1) + 1)) "
            "// stride + 1.")
CONV2D = _make_conv("conv2d", 2, "NCHW", CONV_DOC.format(nd=2))
DEPTHWISE_CONV2D = _make_conv(
    "depthwise_conv2d", 2, "NCHW",
    CONV_DOC.format(nd=2) + " Paddle writes this type when groups == input channels (each output channel "
    "reads one input channel); the result is conv2d's.")
CONV3D = _make_conv("conv3d", 3, "NCDHW", CONV_DOC.format(nd=3))
TRANSPOSE_DOC = ("{nd}-D transposed convolution (the gradient of conv{nd}d with respect to its input): every "
                 "input pixel scatters Filter[c, :, k] * Input[n, c, p] to output position p * strides + k * "
                 "dilations - pad_before, summed over the input channels of the group.")
CONV2D_TRANSPOSE = _make_conv_transpose("conv2d_transpose", 2, "NCHW", TRANSPOSE_DOC.format(nd=2))
DEPTHWISE_CONV2D_TRANSPOSE = _make_conv_transpose(
    "depthwise_conv2d_transpose", 2, "NCHW",
    TRANSPOSE_DOC.format(nd=2) + " Written by Paddle when groups == input channels; the result is "
    "conv2d_transpose's.")
CONV3D_TRANSPOSE = _make_conv_transpose("conv3d_transpose", 3, "NCDHW", TRANSPOSE_DOC.format(nd=3))
