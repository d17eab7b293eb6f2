"""Resizing with Paddle's *_interp_v2 ops: nearest, linear, bilinear, trilinear, bicubic.

Every method is separable: each spatial dim is resized on its own by gathering T taps per output position
(`xp.take`; nearest T = 1, linear T = 2, cubic T = 4) and summing them with per-position weights. The tap
indices and weights depend on shapes and attributes only; they are computed on the host in float32, as
Paddle's CPU kernels compute them, so truncations land where Paddle's do:
  ratio = (in - 1) / (out - 1) with align_corners, else 1 / scale when a scale is given, else in / out;
  nearest: src = int(ratio * k + 0.5) with align_corners, else int(ratio * k);
  linear: with align_mode 0 and not align_corners the half-pixel rule src = ratio * (k + 0.5) - 0.5
          (clamped at 0), else src = ratio * k; taps floor(src) and floor(src) + 1 (clamped to in - 1);
  cubic: src = ratio * k (align_corners) or ratio * (k + 0.5) - 0.5; taps floor(src) - 1 .. + 2 clamped to the
         edge, Keys' cubic convolution weights with A = -0.75.
"""
from __future__ import annotations

import numpy as np

from ..runtime.place import to_host
from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._spatial import attr_or

F32 = np.float32
CUBIC_A = F32(-0.75)


def _ratio(i, o, scale, align_corners):
    if o <= 1:
        return F32(0)
    if align_corners:
        return F32(i - 1) / F32(o - 1)
    return F32(1.0 / scale) if scale > 0 else F32(i) / F32(o)


def taps(method, i, o, scale, align_corners, align_mode):
    """(indices (o, T) int64, weights (o, T) float32) for one dim."""
    r = _ratio(i, o, scale, align_corners)
    k = np.arange(o, dtype=F32)
    if method == "nearest":
        src = r * k + F32(0.5) if align_corners else r * k
        return np.minimum(np.trunc(src).astype(np.int64), i - 1)[:, None], np.ones((o, 1), F32)
    if method in ("linear", "bilinear", "trilinear"):
        half = align_mode == 0 and not align_corners
        lo = np.trunc(r * (k + F32(0.5)) - F32(0.5) if half else r * k).astype(np.int64)
        lo = np.maximum(lo, 0)
        hi = np.minimum(lo + 1, i - 1)
        if half:
            frac = np.maximum(r * (k + F32(0.5)) - F32(0.5), F32(0)) - lo.astype(F32)
        else:
            frac = r * k - lo.astype(F32)
        return np.stack([lo, hi], 1), np.stack([F32(1) - frac, frac], 1).astype(F32)
    if method == "bicubic":
        src = r * k if align_corners else r * (k + F32(0.5)) - F32(0.5)
        base = np.floor(src)
        t = (src - base).astype(F32)
        a = CUBIC_A

        def conv1(x):
            return ((a + F32(2)) * x - (a + F32(3))) * x * x + F32(1)

        def conv2(x):
            return ((a * x - F32(5) * a) * x + F32(8) * a) * x - F32(4) * a

        w = np.stack([conv2(t + F32(1)), conv1(t), conv1(F32(1) - t), conv2(F32(2) - t)], 1).astype(F32)
        idx = np.clip(base.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :], 0, i - 1)
        return idx, w
    raise ValueError(f"interp_method {method!r} is not one of nearest, linear, bilinear, trilinear, bicubic")


def resize(xp, x, method, outs, scales, align_corners, align_mode):
    """x: [N, C, spatial...] -> [N, C, outs...]."""
    for d, o in enumerate(outs):
        a = 2 + d
        i = x.shape[a]
        if o == i and scales[d] <= 0 and method == "nearest" and not align_corners:
            continue
        idx, w = taps(method, i, o, scales[d], align_corners, align_mode)
        t = idx.shape[1]
        g = xp.take(x, xp.asarray(idx.reshape(-1)), axis=a)
        if t == 1:
            x = g
            continue
        g = g.reshape(x.shape[:a] + (o, t) + x.shape[a + 1:])
        wshape = [1] * g.ndim
        wshape[a], wshape[a + 1] = o, t
        x = (g * xp.asarray(w.astype(x.dtype)).reshape(wshape)).sum(axis=a + 1)
    return xp.ascontiguousarray(x)


def out_sizes(in_spatial, get, size_tensor, out_size, scale_tensor):
    """(output sizes, scales) following Paddle's priority: SizeTensor > OutSize > Scale tensor / scale attr >
    out_d/out_h/out_w. The scales (or -1) also set the coordinate ratio."""
    nd = len(in_spatial)
    if scale_tensor is not None:
        sc = [float(v) for v in np.asarray(to_host(scale_tensor)).reshape(-1)]
    else:
        sc = [float(v) for v in (get("scale") or [])]
    if sc:
        sc = (sc * nd)[:nd] if len(sc) == 1 else sc[:nd]
        if len(sc) != nd:
            raise ValueError(f"scale must hold 1 or {nd} values, got {sc}")
        if any(s <= 0 for s in sc):
            raise ValueError(f"scale must be > 0, got {sc}")
    scales = sc or [-1.0] * nd
    if size_tensor:
        outs = [int(np.asarray(to_host(t)).reshape(-1)[0]) for t in size_tensor]
    elif out_size is not None:
        outs = [int(v) for v in np.asarray(to_host(out_size)).reshape(-1)]
    elif sc:
        outs = [int(F32(i) * F32(s)) if i >= 0 else -1 for i, s in zip(in_spatial, sc)]
    else:
        outs = [get(n) for n in ("out_d", "out_h", "out_w")[3 - nd:]]
    if len(outs) != nd:
        raise ValueError(f"the output size must hold {nd} values for {nd} spatial dims, got {outs}")
    if any(o == 0 or o < -1 for o in outs):
        raise ValueError(f"the output size must be > 0, got {outs}")
    return outs, scales


def _make(op_type, method, doc):
    d = register_op(
        op_type, doc + " X is [N, C, spatial...] with 1 to 3 spatial dims (channels last with data_layout "
        "NWC/NHWC/NDHWC).",
        inputs=[In("X", "the images"),
                In("OutSize", "(1-D int32, one value per spatial dim) the output size; wins over scale",
                   dispensable=True),
                In("SizeTensor", "(1-element int32 tensors) the output size dim by dim; wins over OutSize",
                   duplicable=True, dispensable=True),
                In("Scale", "(1-D float32) the scale per spatial dim (or one for all); wins over `scale`",
                   dispensable=True)],
        outputs=[Out("Out", "the resized images, X's dtype")],
        attrs=[Attr("data_layout", A.STRING, "'NCHW' (channels first: also NCW/NCDHW) or channels last "
                    "(NHWC/NWC/NDHWC)", "NCHW"),
               Attr("out_d", A.INT, "the output depth (3 spatial dims), when no size/scale is given", -1),
               Attr("out_h", A.INT, "the output height, when no size/scale is given", -1),
               Attr("out_w", A.INT, "the output width, when no size/scale is given", -1),
               Attr("scale", A.FLOATS, "the scale per spatial dim (out = int(in * scale)); [] = none", []),
               Attr("interp_method", A.STRING, "the method (informative; the op type decides)", method),
               Attr("align_corners", A.BOOLEAN, "map corner pixel centres onto each other: ratio = (in - 1) / "
                    "(out - 1)", True),
               Attr("align_mode", A.INT, "linear methods without align_corners: 0 = half-pixel centres "
                    "(src = (k + 0.5) * ratio - 0.5), 1 = src = k * ratio", 1)])

    def infer(ic):
        x = ic.shape("X")
        if not 3 <= len(x) <= 5:
            ic.fail(f"X must be 3-D to 5-D ([N, C, spatial...]), got shape {list(x)}")
        last = attr_or(ic, "data_layout", "NCHW") in ("NHWC", "NWC", "NDHWC")
        sp = x[1:-1] if last else x[2:]
        if ic.has_input("OutSize") or ic.has_input("SizeTensor") or ic.has_input("Scale"):
            outs = [-1] * len(sp)
        else:
            try:
                outs, _ = out_sizes(sp, lambda n: attr_or(ic, n, d.attrs[n].default), None, None, None)
            except ValueError as e:
                ic.fail(str(e))
        c = x[-1] if last else x[1]
        ic.set_output("Out", (x[0], *outs, c) if last else (x[0], c, *outs), ic.dtype("X"))

    d.infer_shape = infer

    @d.kernel()
    def kernel(ctx, ins, attrs):
        x, out_size, size_tensor, scale_t = ins
        xp = ctx.xp
        if not 3 <= x.ndim <= 5:
            raise ValueError(f"X must be 3-D to 5-D ([N, C, spatial...]), got shape {list(x.shape)}")
        last = attrs["data_layout"] in ("NHWC", "NWC", "NDHWC")
        if last:
            x = xp.moveaxis(x, -1, 1)
        outs, scales = out_sizes(x.shape[2:], attrs.get, size_tensor, out_size, scale_t)
        y = resize(xp, x, method, outs, scales, attrs["align_corners"], attrs["align_mode"])
        return (xp.ascontiguousarray(xp.moveaxis(y, 1, -1)) if last else y,)

    kernel.__name__ = op_type
    return d


NEAREST_INTERP_V2 = _make("nearest_interp_v2", "nearest", "Nearest-neighbour resizing.")
LINEAR_INTERP_V2 = _make("linear_interp_v2", "linear", "Linear resizing of one spatial dim.")
BILINEAR_INTERP_V2 = _make("bilinear_interp_v2", "bilinear", "Bilinear resizing.")
TRILINEAR_INTERP_V2 = _make("trilinear_interp_v2", "trilinear", "Trilinear resizing.")
BICUBIC_INTERP_V2 = _make("bicubic_interp_v2", "bicubic", "Bicubic resizing (Keys, A = -0.75), edges clamped.")
