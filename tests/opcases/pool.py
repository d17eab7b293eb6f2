"""Cases for kernelcore/ops/pool.py: pool2d, pool3d, max_pool2d_with_index.

The references loop over output positions and pool each window directly (float64), from Paddle's documented
window rule: start = o * stride - pad_before, end = min(start + ksize, in), start = max(start, 0); adaptive
windows [floor(o * in / out), ceil((o + 1) * in / out)); exclusive averages divide by the window's cell count,
inclusive ones by prod(ksize); output size floor- or ceil-divided.
"""
import itertools
import math

import numpy as np

from . import Case

rng = np.random.default_rng(12)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def pool_ref(X, pooling_type="max", ksize=(1, 1), strides=None, paddings=None, global_pooling=False,
             exclusive=True, adaptive=False, ceil_mode=False, data_format="NCHW", padding_algorithm="EXPLICIT",
             with_index=False, **a):
    x = X.astype(np.float64)
    last = data_format in ("NHWC", "NDHWC")
    if last:
        x = np.moveaxis(x, -1, 1)
    nd = x.ndim - 2
    ins = x.shape[2:]
    strides, paddings = strides or [1] * nd, paddings or [0] * nd
    p = list(paddings)
    pads = [(v, v) for v in p] if len(p) == nd else [(p[2 * i], p[2 * i + 1]) for i in range(nd)]
    ks, st = list(ksize), list(strides)
    if padding_algorithm == "VALID":
        pads = [(0, 0)] * nd
    elif padding_algorithm == "SAME":
        pads = []
        for i, k, s in zip(ins, ks, st):
            out = -(-i // s)
            t = max((out - 1) * s + k - i, 0)
            pads.append((t // 2, t - t // 2))
    if global_pooling:
        ks, pads, st, adaptive = list(ins), [(0, 0)] * nd, [1] * nd, False
    if adaptive:
        outs = ks
    else:
        outs = [((ins[i] - ks[i] + sum(pads[i]) + (st[i] - 1 if ceil_mode else 0)) // st[i]) + 1 for i in range(nd)]
    y = np.zeros(x.shape[:2] + tuple(outs))
    mask = np.zeros(x.shape[:2] + tuple(outs), np.int32)
    for pos in itertools.product(*(range(v) for v in outs)):
        sl = []
        for d in range(nd):
            if adaptive:
                b, e = math.floor(pos[d] * ins[d] / outs[d]), math.ceil((pos[d] + 1) * ins[d] / outs[d])
            else:
                b = pos[d] * st[d] - pads[d][0]
                e = min(b + ks[d], ins[d])
                b = max(b, 0)
            sl.append((b, e))
        win = x[(slice(None), slice(None)) + tuple(slice(b, e) for b, e in sl)]
        flat = win.reshape(win.shape[0], win.shape[1], -1)
        if pooling_type == "max":
            y[(slice(None), slice(None)) + pos] = flat.max(-1)
            arg = flat.argmax(-1)
            local = np.unravel_index(arg, [e - b for b, e in sl])
            mask[(slice(None), slice(None)) + pos] = np.ravel_multi_index(
                tuple(local[d] + sl[d][0] for d in range(nd)), ins)
        else:
            div = flat.shape[-1] if (exclusive or adaptive) else math.prod(ks)
            y[(slice(None), slice(None)) + pos] = flat.sum(-1) / div
    if last:
        y = np.moveaxis(y, 1, -1)
    if with_index:
        return {"Out": y.astype(X.dtype), "Mask": mask}
    return {"Out": y.astype(X.dtype)}


def with_index_ref(X, **a):
    return pool_ref(X, pooling_type="max", with_index=True, **a)


TOL = dict(rtol=1e-5, atol=1e-6)
P2 = dict(pooling_type="max", ksize=[3, 3], strides=[2, 2], paddings=[1, 1])

CASES = [
    Case("pool2d", {"X": f32(2, 3, 9, 10)}, pool_ref, dict(P2), id="maxpool2d-3x3-s2-p1", **TOL),
    Case("pool2d", {"X": f32(2, 3, 10, 10)}, pool_ref, dict(P2, paddings=[0, 0], ceil_mode=True),
         id="maxpool2d-ceil", **TOL),
    Case("pool2d", {"X": f32(2, 3, 9, 10)}, pool_ref, dict(P2, pooling_type="avg"), id="avgpool2d-exclusive", **TOL),
    Case("pool2d", {"X": f32(2, 3, 9, 10)}, pool_ref, dict(P2, pooling_type="avg", exclusive=False),
         id="avgpool2d-inclusive", **TOL),
    Case("pool2d", {"X": f32(1, 2, 10, 11)}, pool_ref,
         dict(P2, pooling_type="avg", paddings=[0, 0], ceil_mode=True, exclusive=False), id="avgpool2d-ceil-incl",
         **TOL),
    Case("pool2d", {"X": f32(1, 2, 9, 8)}, pool_ref, dict(P2, pooling_type="avg", padding_algorithm="SAME"),
         id="avgpool2d-same", **TOL),
    Case("pool2d", {"X": f32(1, 2, 9, 8)}, pool_ref, dict(P2, ksize=[2, 2], padding_algorithm="VALID"),
         id="maxpool2d-valid", **TOL),
    Case("pool2d", {"X": f32(1, 2, 6, 7)}, pool_ref, dict(P2, strides=[1, 1], paddings=[0, 1, 1, 2]),
         id="maxpool2d-asym-pads", **TOL),
    Case("pool2d", {"X": f32(2, 3, 10, 9)}, pool_ref, dict(pooling_type="avg", ksize=[3, 4], adaptive=True),
         id="adaptive-avgpool2d", **TOL),
    Case("pool2d", {"X": f32(2, 3, 10, 9)}, pool_ref, dict(pooling_type="max", ksize=[4, 3], adaptive=True),
         id="adaptive-maxpool2d", **TOL),
    Case("pool2d", {"X": f32(2, 3, 7, 7)}, pool_ref, dict(pooling_type="avg", ksize=[1, 1], global_pooling=True),
         id="global-avgpool2d", **TOL),
    Case("pool2d", {"X": f32(2, 3, 7, 5)}, pool_ref, dict(pooling_type="max", ksize=[2, 2], global_pooling=True),
         id="global-maxpool2d", **TOL),
    Case("pool2d", {"X": f32(2, 6, 5, 3)}, pool_ref, dict(P2, data_format="NHWC"), id="maxpool2d-nhwc", **TOL),
    Case("pool3d", {"X": f32(1, 2, 5, 6, 6)}, pool_ref,
         dict(pooling_type="avg", ksize=[3, 3, 3], strides=[2, 2, 2], paddings=[1, 1, 1]), id="avgpool3d", **TOL),
    Case("pool3d", {"X": f32(1, 2, 4, 6, 6)}, pool_ref, dict(pooling_type="max", ksize=[2, 2, 2], strides=[2, 2, 2]),
         id="maxpool3d", **TOL),
    Case("pool3d", {"X": f32(1, 2, 5, 6, 7)}, pool_ref, dict(pooling_type="avg", ksize=[2, 2, 2], adaptive=True),
         id="adaptive-avgpool3d", **TOL),
    Case("max_pool2d_with_index", {"X": f32(2, 3, 10, 9)}, with_index_ref, dict(ksize=[3, 4], adaptive=True),
         id="max_pool2d_with_index-adaptive", **TOL),
    Case("max_pool2d_with_index", {"X": f32(1, 2, 7, 8)}, with_index_ref,
         dict(ksize=[3, 3], strides=[2, 2], paddings=[1, 1]), id="max_pool2d_with_index-padded", **TOL),
]
