"""Pooling with Paddle's slots and attributes: pool2d, pool3d, max_pool2d_with_index, max_pool3d_with_index.

Pooling windows are rectangles, so pools are separable: they can run one spatial dim at a time.
  * average: a contraction with a small (out, in) matrix per dim whose row o holds 1/len (exclusive) or
    1/kernel (inclusive) over window o: one GEMM per dim (`xp.tensordot`), no window buffer;
  * max, regular windows: the input padded with -inf, then one elementwise maximum per kernel offset over a
    strided view (9 for 3x3);
  * max, adaptive windows: a gather of every window along each dim (`xp.take` with an (out, longest window) index
    matrix whose short windows repeat their last index), then a max over the window axis;
  * max with index (adaptive max pooling): all dims gathered, then one argmax over the joined window axes.
Window bounds follow Paddle's Pool functors: start = o * stride - pad_before, end = min(start + kernel, in),
start = max(start, 0); adaptive windows are [floor(o * in / out), ceil((o + 1) * in / out)). The index
matrices depend on shapes only and are built on the host.
"""
from __future__ import annotations

import itertools
import math
from functools import partial

import numpy as np

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.proto.framework_pb2 import VarType as VT
from ..ir.registry import Attr, Check, In, Out, register_op
from ._spatial import attr_or, channel_last, check_ints, pairs, update_padding


def pool_out_size(i, k, lo, hi, s, ceil_mode) -> int:
    """Paddle's PoolOutputSize."""
    if i < 0:
        return -1
    if ceil_mode:
        return (i - k + lo + hi + s - 1) // s + 1
    return (i - k + lo + hi) // s + 1


def windows(i, o, k, s, lo, adaptive):
    """(starts, ends) of the `o` windows over an axis of length i (host int arrays)."""
    r = np.arange(o)
    if adaptive:
        return (r * i) // o, -((-(r + 1) * i) // o)
    start = r * s - lo
    return np.maximum(start, 0), np.minimum(start + k, i)


def geometry(get, in_spatial, nd):
    """(kernel, strides, pads, output sizes, adaptive) after global_pooling, adaptive and padding_algorithm."""
    ksize = check_ints("ksize", get("ksize"), nd)
    adaptive = get("adaptive")
    if get("global_pooling"):
        return list(in_spatial), [1] * nd, [(0, 0)] * nd, [1] * nd, False
    if adaptive:
        return ksize, [1] * nd, [(0, 0)] * nd, ksize, True
    strides = check_ints("strides", get("strides"), nd)
    pads = pairs(get("paddings"), nd)
    algo = get("padding_algorithm") if get("padding_algorithm") is not None else "EXPLICIT"
    pads, _ = update_padding(algo, pads, [1] * nd, in_spatial, ksize, strides)
    outs = [pool_out_size(in_spatial[i], ksize[i], *pads[i], strides[i], get("ceil_mode")) for i in range(nd)]
    if any(v == 0 or v < -1 for v in outs):
        raise ValueError(f"the output would be empty: input {list(in_spatial)}, ksize {ksize}, paddings "
                         f"{[list(p) for p in pads]}, strides {strides}")
    return ksize, strides, pads, outs, False


def _window_index(i, o, k, s, lo, adaptive):
    starts, ends = windows(i, o, k, s, lo, adaptive)
    kmax = int((ends - starts).max())
    idx = np.minimum(starts[:, None] + np.arange(kmax)[None, :], (ends - 1)[:, None])
    return idx, starts, ends


def avg_matrix(i, o, k, s, lo, adaptive, exclusive, dtype):
    starts, ends = windows(i, o, k, s, lo, adaptive)
    cols = np.arange(i)[None, :]
    inside = (cols >= starts[:, None]) & (cols < ends[:, None])
    div = (ends - starts) if (exclusive or adaptive) else np.full(o, k)
    return (inside / np.maximum(div, 1)[:, None]).astype(dtype)


def whole_maps(x_shape, ksize, pads, outs, adaptive) -> bool:
    """Whether each window is a whole map: global pooling, a window of the map's size unpadded, or adaptive to
    1 x 1."""
    return all(o == 1 for o in outs) and (adaptive or (list(ksize) == list(x_shape[2:]) and
                                                       not any(lo or hi for lo, hi in pads)))


def whole_batch(xp, body, arrays, out_shape, work_per_image):
    """body(*arrays) over the whole batch: the reference (kernelcore/native/pool.py's variants split the batch by
    images, runtime/cpu_parts.py by_images_in_parts, with this signature)."""
    return body(*arrays)


def pool_forward(xp, x, kind, ksize, strides, pads, outs, adaptive, exclusive, by_images=whole_batch):
    """x: [N, C, spatial...] -> [N, C, outs...]; max pooling's images run by `by_images` (whole_batch's
    signature)."""
    nd = x.ndim - 2
    if whole_maps(x.shape, ksize, pads, outs, adaptive):
        if kind == "avg":
            return _mean_of_maps(xp, x)
        return x.max(axis=tuple(range(2, 2 + nd)), keepdims=True)
    if kind == "max" and not adaptive:
        body = partial(_max_by_offsets, xp, ksize=ksize, strides=strides, pads=pads, outs=outs)
        return by_images(xp, body, (x,), (*x.shape[:2], *outs), max_pool_work(x.shape, ksize, outs))
    for d in range(nd):
        a = 2 + d
        i = x.shape[a]
        if kind == "avg":
            m = xp.asarray(avg_matrix(i, outs[d], ksize[d], strides[d], pads[d][0], adaptive, exclusive,
                                       x.dtype))
            x = xp.moveaxis(xp.tensordot(x, m, axes=([a], [1])), -1, a)
        else:
            idx, _, _ = _window_index(i, outs[d], ksize[d], strides[d], pads[d][0], adaptive)
            g = xp.take(x, xp.asarray(idx.reshape(-1)), axis=a)
            g = g.reshape(x.shape[:a] + idx.shape + x.shape[a + 1:])
            x = g.max(axis=a + 1)
    return xp.ascontiguousarray(x)


# the dtypes whose whole maps are summed by a product (float16's sums, and a map's size past 65,504, overflow it)
WHOLE_MAP_DTYPES = (np.float32, np.float64)


def _mean_of_maps(xp, x):
    """Each [n, c] map's mean, [N, C, 1...]: the maps' sums as one matrix-vector product, then / its size. NumPy's
    mean over the spatial axes walks them a few elements at a time: MobileNetV2's [8, 1280, 2, 2] took 148 us,
    the product 7 (one [N C, H W] @ ones). float32 and float64 only: float16's sums would overflow."""
    if x.dtype not in WHOLE_MAP_DTYPES:  # NumPy's mean sums float16 in float32
        return x.mean(axis=tuple(range(2, x.ndim)), keepdims=True)
    n, c = x.shape[:2]
    size = math.prod(x.shape[2:])
    sums = xp.ascontiguousarray(x).reshape(n * c, size) @ xp.ones(size, dtype=x.dtype)
    sums /= x.dtype.type(size)
    return sums.reshape((n, c) + (1,) * (x.ndim - 2))


# one kernel offset of max pooling, per output element, in kernelcore/runtime/cpu_parts.py's units of work (ResNet-18's
# 3x3 stride-2 pool on [8, 64, 32, 32]: 0.5 ms on one core, 0.39 ms in two parts)
MAX_TAP_WORK = 24


def max_pool_work(x_shape, ksize, outs) -> int:
    """Max pooling's work per image, in kernelcore/runtime/cpu_parts.py's units: every output element's kernel offsets."""
    return MAX_TAP_WORK * math.prod(ksize) * x_shape[1] * math.prod(outs)


def _max_by_offsets(xp, x, ksize, strides, pads, outs):
    """Max pooling with regular windows: pad with -inf (never a max), then one elementwise maximum per kernel
    offset over the strided view of the padded input (9 for 3x3): no window buffer, no gather."""
    nd = x.ndim - 2
    widths = [(0, 0), (0, 0)]
    for d in range(nd):
        need = (outs[d] - 1) * strides[d] + ksize[d]          # the last window's end, in padded coordinates
        widths.append((pads[d][0], max(need - x.shape[2 + d] - pads[d][0], 0)))
    if any(lo or hi for lo, hi in widths):
        x = xp.pad(x, widths, mode="constant", constant_values=x.dtype.type(-xp.inf))
    out = None
    for offs in itertools.product(*(range(k) for k in ksize)):
        sl = (slice(None), slice(None)) + tuple(
            slice(offs[d], offs[d] + strides[d] * (outs[d] - 1) + 1, strides[d]) for d in range(nd))
        if out is None:
            out = x[sl].copy()
        else:
            xp.maximum(out, x[sl], out=out)  # `out` is a fresh array of ours
    return out


def max_pool_with_index(xp, x, ksize, strides, pads, outs, adaptive):
    """(Out, Mask): Mask holds each max's flat index into the input's spatial dims (Paddle's convention)."""
    nd = x.ndim - 2
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    idxs = [_window_index(spatial[d], outs[d], ksize[d], strides[d], pads[d][0], adaptive)[0] for d in range(nd)]
    g = x
    for d in range(nd):  # gather dim d: axis 2 + 2 d becomes (out_d, window_d)
        a = 2 + 2 * d
        g = xp.take(g, xp.asarray(idxs[d].reshape(-1)), axis=a)
        g = g.reshape(g.shape[:a] + idxs[d].shape + g.shape[a + 1:])
    order = [0, 1] + [2 + 2 * d for d in range(nd)] + [3 + 2 * d for d in range(nd)]
    g = g.transpose(order)
    ks = [ix.shape[1] for ix in idxs]
    g = g.reshape(n, c, *outs, int(np.prod(ks)))
    arg = xp.argmax(g, axis=-1)
    out = xp.take_along_axis(g, arg[..., None], axis=-1)[..., 0]
    # flat input index of (out position, window position): sum over dims of idx_d[o_d, j_d] * stride_d
    flat = np.zeros((*outs, *ks), dtype=np.int64)
    mul = 1
    for d in reversed(range(nd)):
        shape = [1] * (2 * nd)
        shape[d], shape[nd + d] = idxs[d].shape
        flat = flat + idxs[d].reshape(shape) * mul
        mul *= spatial[d]
    flat = xp.asarray(flat.reshape(*outs, -1).astype(np.int32))
    mask = xp.take_along_axis(xp.broadcast_to(flat, (n, c) + flat.shape), arg[..., None], axis=-1)[..., 0]
    return out, mask


# ---------------------------------------------------------------------------
def _pool_attrs(nd, layout):
    return [
        Attr("pooling_type", A.STRING, "'max' or 'avg'", checks=(Check("'max' or 'avg'",
                                                                        lambda v: v in ("max", "avg")),)),
        Attr("ksize", A.INTS, "the window per spatial dim; with adaptive, the output size"),
        Attr("global_pooling", A.BOOLEAN, "pool over the whole spatial extent (ksize, paddings ignored)", False),
        Attr("strides", A.INTS, "the window's step per spatial dim", [1] * nd),
        Attr("paddings", A.INTS, f"padding per spatial dim: {nd} values (both sides) or {2 * nd} "
             "([d0_before, d0_after, ...]); padded cells never win a max and never count in an exclusive "
             "average", [0] * nd),
        Attr("exclusive", A.BOOLEAN, "avg: divide by the number of input cells in the window (true) or by the "
             "kernel size (false)", True),
        Attr("adaptive", A.BOOLEAN, "ksize is the output size; window o spans [floor(o * in / out), "
             "ceil((o + 1) * in / out))", False),
        Attr("ceil_mode", A.BOOLEAN, "round the output size up instead of down", False),
        Attr("data_format", A.STRING, f"'{layout}' or channels last", layout),
        Attr("padding_algorithm", A.STRING, "'EXPLICIT', 'SAME' or 'VALID' (as for convolutions)", "EXPLICIT"),
    ]


def _make_pool(op_type, nd, layout):
    d = register_op(
        op_type,
        f"{nd}-D max or average pooling: Out[n, c, o...] = max / mean of X over window o of each spatial dim. "
        "Output size per dim: (in - ksize + pad_before + pad_after) // stride + 1 (rounded up with ceil_mode); "
        "ksize itself when adaptive; 1 with global_pooling.",
        inputs=[In("X", f"({nd + 2}-D) [N, C, spatial...] (channels last with data_format)")],
        outputs=[Out("Out", "the pooled tensor, X's dtype")],
        attrs=_pool_attrs(nd, layout))

    def infer(ic):
        x = ic.shape("X")
        get = lambda n: attr_or(ic, n, d.attrs[n].default)  # noqa: E731
        fmt = get("data_format")
        if len(x) != nd + 2:
            ic.fail(f"X must be {nd + 2}-D, got shape {list(x)}")
        sp = x[1:-1] if channel_last(fmt) else x[2:]
        try:
            _, _, _, outs, _ = geometry(get, sp, nd)
        except ValueError as e:
            ic.fail(str(e))
        c = x[-1] if channel_last(fmt) else x[1]
        ic.set_output("Out", (x[0], *outs, c) if channel_last(fmt) else (x[0], c, *outs), ic.dtype("X"))

    d.infer_shape = infer

    d.kernel()(pool_kernel(op_type, nd, whole_batch))
    d.runs_in_parts = True  # its variant in parts (kernelcore/native/pool.py) splits max pooling by images
    return d


def pool_kernel(op_type, nd, by_images):
    """pool2d's / pool3d's kernel, max pooling's images run by `by_images` (whole_batch's signature)."""
    def kernel(ctx, ins, attrs):
        xp = ctx.xp
        x = ins[0]
        if x.ndim != nd + 2:
            raise ValueError(f"X must be {nd + 2}-D, got shape {list(x.shape)}")
        last = channel_last(attrs["data_format"])
        if last:
            x = xp.moveaxis(x, -1, 1)
        ksize, strides, pads, outs, adaptive = geometry(attrs.get, x.shape[2:], nd)
        y = pool_forward(xp, x, attrs["pooling_type"], ksize, strides, pads, outs, adaptive, attrs["exclusive"],
                         by_images)
        return (xp.ascontiguousarray(xp.moveaxis(y, 1, -1)) if last else y,)

    kernel.__name__ = op_type
    return kernel


def _make_max_with_index(op_type, nd):
    d = register_op(
        op_type,
        f"{nd}-D max pooling that also returns where each max came from: Mask[n, c, o...] is the max's flat "
        "index into X's spatial dims (h * W + w for 2-D). Written by Paddle for adaptive max pooling and "
        "return_mask=True. Window and output-size rules as pool2d's (channels first only).",
        inputs=[In("X", f"({nd + 2}-D) [N, C, spatial...]")],
        outputs=[Out("Out", "the pooled tensor, X's dtype"), Out("Mask", "int32, Out's shape: flat indices")],
        attrs=[a for a in _pool_attrs(nd, "NCHW")
               if a.name in ("ksize", "global_pooling", "strides", "paddings", "adaptive", "ceil_mode")])

    def get_from(attrs):
        return lambda n: attrs.get(n, "EXPLICIT" if n == "padding_algorithm" else None)

    def infer(ic):
        x = ic.shape("X")
        if len(x) != nd + 2:
            ic.fail(f"X must be {nd + 2}-D, got shape {list(x)}")
        get = lambda n: attr_or(ic, n, d.attrs[n].default) if n in d.attrs else None  # noqa: E731
        try:
            _, _, _, outs, _ = geometry(get, x[2:], nd)
        except ValueError as e:
            ic.fail(str(e))
        ic.set_output("Out", (*x[:2], *outs), ic.dtype("X"))
        ic.set_output("Mask", (*x[:2], *outs), VT.INT32)

    d.infer_shape = infer

    @d.kernel()
    def kernel(ctx, ins, attrs):
        x = ins[0]
        if x.ndim != nd + 2:
            raise ValueError(f"X must be {nd + 2}-D, got shape {list(x.shape)}")
        ksize, strides, pads, outs, adaptive = geometry(get_from(attrs), x.shape[2:], nd)
        return max_pool_with_index(ctx.xp, x, ksize, strides, pads, outs, adaptive)

    kernel.__name__ = op_type
    return d


POOL2D = _make_pool("pool2d", 2, "NCHW")
POOL3D = _make_pool("pool3d", 3, "NCDHW")
MAX_POOL2D_WITH_INDEX = _make_max_with_index("max_pool2d_with_index", 2)
MAX_POOL3D_WITH_INDEX = _make_max_with_index("max_pool3d_with_index", 3)
