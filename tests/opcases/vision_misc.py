"""Cases for kernelcore/ops/activation.py's vision activations, pad.py and interp.py.

Activation references: the formulas in float64 (Paddle's documentation). Shape ops: shapes worked out by hand.
pad3d: NumPy's own pad modes are a different implementation from the kernel's only in name, so the reference
builds each padded tensor by index arithmetic instead. Resizing: Paddle's coordinate formulas evaluated one
output pixel at a time in float32 scalars (as Paddle's CPU kernels compute them).
"""
import math

import numpy as np

from . import Case

rng = np.random.default_rng(14)


def f32(*shape):
    return (rng.standard_normal(shape) * 3).astype(np.float32)


def act(fn):
    def ref(X, **a):
        x = X.astype(np.float64)
        return {"Out": fn(x, **a).astype(X.dtype)}
    return ref


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x, beta=1.0, threshold=20.0, **a):
    with np.errstate(over="ignore"):
        return np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)


ACT_TOL = dict(rtol=1e-5, atol=1e-6)
ACTS = [
    ("relu6", lambda x, threshold=6.0, **a: np.minimum(np.maximum(x, 0), threshold), {}),
    ("relu6", lambda x, threshold=6.0, **a: np.minimum(np.maximum(x, 0), threshold), {"threshold": 2.5}),
    ("leaky_relu", lambda x, alpha=0.02, **a: np.where(x >= 0, x, alpha * x), {"alpha": 0.1}),
    ("elu", lambda x, alpha=1.0, **a: np.where(x > 0, x, alpha * (np.exp(np.minimum(x, 0)) - 1)), {"alpha": 0.7}),
    ("hard_swish", lambda x, threshold=6.0, scale=6.0, offset=3.0, **a:
        x * np.minimum(np.maximum(x + offset, 0), threshold) / scale, {}),
    ("hard_sigmoid", lambda x, slope=0.2, offset=0.5, **a: np.clip(slope * x + offset, 0, 1),
     {"slope": 1 / 6, "offset": 0.5}),
    ("swish", lambda x, beta=1.0, **a: x * _sig(beta * x), {"beta": 1.5}),
    ("silu", lambda x, **a: x * _sig(x), {}),
    ("softplus", _softplus, {"beta": 2.0, "threshold": 3.0}),
    ("softplus", _softplus, {}),
    ("mish", lambda x, threshold=20.0, **a: x * np.tanh(_softplus(x, 1.0, threshold)), {}),
    ("brelu", lambda x, t_min=0.0, t_max=24.0, **a: np.clip(x, t_min, t_max), {"t_min": -1.0, "t_max": 1.0}),
    ("celu", lambda x, alpha=1.0, **a: np.maximum(x, 0) + np.minimum(alpha * np.expm1(np.minimum(x, 0) / alpha), 0),
     {"alpha": 0.6}),
    ("selu", lambda x, scale=1.0507009873554805, alpha=1.6732632423543772, **a:
        scale * np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0))), {}),
    ("logsigmoid", lambda x, **a: np.log(_sig(x)), {}),
    ("softsign", lambda x, **a: x / (1 + np.abs(x)), {}),
    ("tanh_shrink", lambda x, **a: x - np.tanh(x), {}),
    ("hard_shrink", lambda x, threshold=0.5, **a: np.where(np.abs(x) > threshold, x, 0), {"threshold": 0.3}),
    ("softshrink", lambda x, **a: np.sign(x) * np.maximum(np.abs(x) - a.get("lambda", 0.5), 0), {"lambda": 0.3}),
    ("thresholded_relu", lambda x, threshold=1.0, value=0.0, **a: np.where(x > threshold, x, value),
     {"threshold": 0.2, "value": -0.5}),
]


def prelu_ref(X, Alpha, mode="all", data_format="NCHW", **a):
    x = X.astype(np.float64)
    if mode == "all":
        al = Alpha.reshape(-1)[0]
    elif mode == "channel":
        shape = [1] * x.ndim
        axis = x.ndim - 1 if data_format == "NHWC" else 1
        shape[axis] = -1
        al = Alpha.reshape(shape)
    else:
        al = Alpha.reshape((1,) + x.shape[1:])
    return {"Out": np.where(x > 0, x, al * x).astype(X.dtype)}


def maxout_ref(X, groups, axis=1, **a):
    """Output channel i: the largest of input channels i * groups .. i * groups + groups - 1."""
    x = np.moveaxis(X, axis, -1)
    out = x.reshape(x.shape[:-1] + (x.shape[-1] // groups, groups)).max(axis=-1)
    return {"Out": np.moveaxis(out, -1, axis)}


def flatten_ref(X, start_axis=1, stop_axis=1, **a):
    s = list(X.shape)
    e = stop_axis % len(s)
    b = start_axis % len(s)
    return {"Out": X.reshape(s[:b] + [int(np.prod(s[b:e + 1]))] + s[e + 1:])}


def pad3d_ref(X, paddings=(0,) * 6, mode="constant", value=0.0, data_format="NCDHW", **a):
    x = X if data_format == "NCDHW" else np.moveaxis(X, -1, 1)
    l, r, t, b, f, k = paddings
    widths = [(f, k), (t, b), (l, r)]
    out_shape = x.shape[:2] + tuple(d + lo + hi for d, (lo, hi) in zip(x.shape[2:], widths))
    idx = []
    for d, (lo, hi), n in zip(range(3), widths, x.shape[2:]):
        j = np.arange(n + lo + hi) - lo           # position in X's coordinates
        if mode == "reflect":
            j = np.abs(j)
            j = np.where(j >= n, 2 * (n - 1) - j, j)
        elif mode == "replicate":
            j = np.clip(j, 0, n - 1)
        elif mode == "circular":
            j = j % n
        idx.append(j)
    if mode == "constant":
        y = np.full(out_shape, value, X.dtype)
        inside = np.ix_(*[(j >= 0) & (j < n) for j, n in zip(idx, x.shape[2:])])
        y[(slice(None), slice(None)) + inside] = x
    else:
        y = x[np.ix_(range(x.shape[0]), range(x.shape[1]), *idx)]
    if data_format != "NCDHW":
        y = np.moveaxis(y, 1, -1)
    return {"Out": y}


# ---- resizing: Paddle's formulas, one output pixel at a time ------------------------------------------------
F = np.float32


def _ratio(i, o, scale, align_corners):
    if o <= 1:
        return F(0)
    if align_corners:
        return F(i - 1) / F(o - 1)
    return F(1.0 / scale) if scale > 0 else F(i) / F(o)


def _cubic(t):
    A = F(-0.75)

    def c1(x):
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def c2(x):
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    return [c2(t + 1), c1(t), c1(1 - t), c2(2 - t)]


def _taps(method, k, i, r, align_corners, align_mode):
    """[(index, weight)] for output position k along one dim."""
    if method == "nearest":
        return [(min(int(r * F(k) + F(0.5)) if align_corners else int(r * F(k)), i - 1), 1.0)]
    if method == "bilinear":
        half = align_mode == 0 and not align_corners
        n = int(r * (F(k) + F(0.5)) - F(0.5)) if half else int(r * F(k))
        n = max(n, 0)
        s = min(n + 1, i - 1)
        d = (max(r * (F(k) + F(0.5)) - F(0.5), F(0)) - n) if half else (r * F(k) - n)
        return [(n, 1 - d), (s, d)]
    src = r * F(k) if align_corners else r * (F(k) + F(0.5)) - F(0.5)
    base = math.floor(src)
    w = _cubic(F(src - base))
    return [(min(max(base - 1 + j, 0), i - 1), w[j]) for j in range(4)]


def interp_ref(method):
    def ref(X, out_h=-1, out_w=-1, scale=(), align_corners=True, align_mode=1, data_layout="NCHW", **a):
        x = X.astype(np.float64)
        ih, iw = x.shape[2:]
        sh, sw = (scale[0], scale[1]) if len(scale) else (-1.0, -1.0)
        oh, ow = (int(F(ih) * F(sh)), int(F(iw) * F(sw))) if len(scale) else (out_h, out_w)
        rh, rw = _ratio(ih, oh, sh, align_corners), _ratio(iw, ow, sw, align_corners)
        y = np.zeros(x.shape[:2] + (oh, ow))
        for p in range(oh):
            for q in range(ow):
                for hi, hw in _taps(method, p, ih, rh, align_corners, align_mode):
                    for wi, ww in _taps(method, q, iw, rw, align_corners, align_mode):
                        y[:, :, p, q] += float(hw) * float(ww) * x[:, :, hi, wi]
        return {"Out": y.astype(X.dtype)}
    return ref


INTERP_TOL = dict(rtol=1e-5, atol=1e-5)


def _interp(op, method, x, attrs, id_):
    base = {"interp_method": method, "align_corners": False, "align_mode": 1}
    return Case(op, {"X": x}, interp_ref(method), {**base, **attrs}, id=id_, **INTERP_TOL)


CASES = [
    *[Case(op, {"X": f32(2, 3, 4, 5)}, act(fn), attrs, id=f"{op}-{i}", **ACT_TOL)
      for i, (op, fn, attrs) in enumerate(ACTS)],
    Case("prelu", {"X": f32(2, 3, 4, 5), "Alpha": np.array([0.25], np.float32)}, prelu_ref, {"mode": "all"},
         id="prelu-all"),
    Case("maxout", {"X": f32(2, 6, 3, 4)}, maxout_ref, {"groups": 2, "axis": 1}, id="maxout"),
    Case("maxout", {"X": f32(2, 3, 4, 6)}, maxout_ref, {"groups": 3, "axis": -1}, id="maxout-channels-last"),
    Case("prelu", {"X": f32(2, 3, 4, 5), "Alpha": rng.uniform(0, 1, 3).astype(np.float32)}, prelu_ref,
         {"mode": "channel"}, id="prelu-channel"),
    Case("prelu", {"X": f32(2, 4, 5, 3), "Alpha": rng.uniform(0, 1, 3).astype(np.float32)}, prelu_ref,
         {"mode": "channel", "data_format": "NHWC"}, id="prelu-channel-nhwc"),
    Case("prelu", {"X": f32(2, 3, 4), "Alpha": rng.uniform(0, 1, (3, 4)).astype(np.float32)}, prelu_ref,
         {"mode": "element"}, id="prelu-element"),
    Case("flatten_contiguous_range", {"X": f32(2, 3, 4, 5)}, flatten_ref, {"start_axis": 1, "stop_axis": 2},
         id="flatten-1-2", check=("Out",)),
    Case("flatten_contiguous_range", {"X": f32(2, 3, 4, 5)}, flatten_ref, {"start_axis": 1, "stop_axis": -1},
         id="flatten-1-last", check=("Out",)),
    Case("squeeze2", {"X": f32(2, 1, 3, 1)}, lambda X, **a: {"Out": X.reshape(2, 3, 1)}, {"axes": [1, -3]},
         id="squeeze2-axes", check=("Out",)),
    Case("squeeze2", {"X": f32(2, 1, 3, 1)}, lambda X, **a: {"Out": X.reshape(2, 3)}, {"axes": []},
         id="squeeze2-all", check=("Out",)),
    Case("squeeze2", {"X": f32(2, 3)}, lambda X, **a: {"Out": X}, {"axes": [1]}, id="squeeze2-not-one-stays",
         check=("Out",)),
    Case("unsqueeze2", {"X": f32(2, 3)}, lambda X, **a: {"Out": X.reshape(1, 2, 1, 3)}, {"axes": [0, 2]},
         id="unsqueeze2", check=("Out",)),
    Case("unsqueeze2", {"X": f32(2, 3)}, lambda X, **a: {"Out": X.reshape(2, 3, 1, 1)}, {"axes": [-1, -1]},
         id="unsqueeze2-negative", check=("Out",)),
    *[Case("pad3d", {"X": f32(1, 2, 3, 4, 5)}, pad3d_ref, {"paddings": [1, 2, 2, 1, 0, 2], "mode": m, "value": 0.5},
           id=f"pad3d-{m}") for m in ("constant", "reflect", "replicate", "circular")],
    Case("pad3d", {"X": f32(1, 3, 4, 5, 2)}, pad3d_ref, {"paddings": [1, 0, 0, 2, 1, 1], "mode": "reflect",
                                                        "data_format": "NDHWC"}, id="pad3d-ndhwc"),
    _interp("nearest_interp_v2", "nearest", f32(1, 2, 3, 4), {"out_h": 5, "out_w": 7}, "nearest-size"),
    _interp("nearest_interp_v2", "nearest", f32(1, 2, 3, 4), {"scale": [2.0, 2.0]}, "nearest-scale2"),
    _interp("nearest_interp_v2", "nearest", f32(1, 2, 5, 4), {"out_h": 3, "out_w": 7, "align_corners": True},
            "nearest-align-corners"),
    _interp("bilinear_interp_v2", "bilinear", f32(1, 2, 3, 4), {"out_h": 5, "out_w": 7, "align_mode": 0},
            "bilinear-half-pixel"),
    _interp("bilinear_interp_v2", "bilinear", f32(1, 2, 3, 4), {"out_h": 5, "out_w": 7, "align_corners": True},
            "bilinear-align-corners"),
    _interp("bilinear_interp_v2", "bilinear", f32(1, 2, 4, 4), {"scale": [1.5, 1.5], "align_mode": 1},
            "bilinear-align-mode1-scale"),
    _interp("bilinear_interp_v2", "bilinear", f32(1, 2, 7, 5), {"out_h": 3, "out_w": 2, "align_mode": 0},
            "bilinear-down"),
    _interp("bicubic_interp_v2", "bicubic", f32(1, 2, 4, 5), {"out_h": 6, "out_w": 9}, "bicubic"),
    _interp("bicubic_interp_v2", "bicubic", f32(1, 2, 4, 5), {"out_h": 6, "out_w": 9, "align_corners": True},
            "bicubic-align-corners"),
]
