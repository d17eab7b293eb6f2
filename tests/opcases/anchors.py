"""Cases for kernelcore/ops/box_ops.py (prior_box, box_coder) and roi_align.py. References follow Paddle's CPU
kernels one box, one prior or one sample at a time in Python floats; the kernels work on whole arrays.
tests/test_paddle_decoding_detection.py checks the same ops against Paddle's outputs."""
import math

import numpy as np

from . import Case

rng = np.random.default_rng(36)


def _prior_ref(Input, Image, min_sizes, max_sizes=(), aspect_ratios=(1.0,), variances=(0.1, 0.1, 0.2, 0.2),
               flip=False, clip=False, step_w=0.0, step_h=0.0, offset=0.5, min_max_aspect_ratios_order=False, **a):
    ratios = [1.0]
    for r in aspect_ratios:
        if all(abs(r - o) >= 1e-6 for o in ratios):
            ratios.append(r)
            if flip:
                ratios.append(1 / r)
    h, w = Input.shape[2:]
    ih, iw = Image.shape[2:]
    sw, sh = step_w or iw / w, step_h or ih / h
    rows = []
    for y in range(h):
        for x in range(w):
            cx, cy = (x + offset) * sw, (y + offset) * sh
            cell = []
            for s, m in enumerate(min_sizes):
                sq = [(math.sqrt(m * max_sizes[s]) / 2,) * 2] if max_sizes else []
                by_ratio = [(m * math.sqrt(r) / 2, m / math.sqrt(r) / 2) for r in ratios]
                if min_max_aspect_ratios_order:
                    half = [(m / 2, m / 2)] + sq + [b for r, b in zip(ratios, by_ratio) if abs(r - 1) >= 1e-6]
                else:
                    half = by_ratio + sq
                for bw, bh in half:
                    box = [(cx - bw) / iw, (cy - bh) / ih, (cx + bw) / iw, (cy + bh) / ih]
                    cell.append([min(max(v, 0.0), 1.0) for v in box] if clip else box)
            rows.append(cell)
    boxes = np.array(rows, Input.dtype).reshape(h, w, -1, 4)
    return {"Boxes": boxes, "Variances": np.broadcast_to(np.array(variances, Input.dtype), boxes.shape).copy()}


def _coder_ref(PriorBox, TargetBox, PriorBoxVar=None, code_type="encode_center_size", box_normalized=True,
               axis=0, variance=(), **a):
    pix = 0.0 if box_normalized else 1.0

    def var(j, k):
        if PriorBoxVar is not None:
            return float(PriorBoxVar[j, k])
        return variance[k] if variance else 1.0

    def centre(b):
        bw, bh = b[2] - b[0] + pix, b[3] - b[1] + pix
        return b[0] + bw / 2, b[1] + bh / 2, bw, bh
    if code_type == "encode_center_size":
        out = np.zeros((len(TargetBox), len(PriorBox), 4))
        for i, t in enumerate(TargetBox.astype(float)):
            for j, p in enumerate(PriorBox.astype(float)):
                pcx, pcy, pw, ph = centre(p)
                tcx, tcy = (t[2] + t[0]) / 2, (t[3] + t[1]) / 2
                tw, th = t[2] - t[0] + pix, t[3] - t[1] + pix
                v = [(tcx - pcx) / pw, (tcy - pcy) / ph, math.log(abs(tw / pw)), math.log(abs(th / ph))]
                out[i, j] = [v[k] / var(j, k) for k in range(4)] if (PriorBoxVar is not None or variance) else v
        return {"OutputBox": out.astype(TargetBox.dtype)}
    out = np.zeros(TargetBox.shape)
    for i in range(TargetBox.shape[0]):
        for j in range(TargetBox.shape[1]):
            pj = j if axis == 0 else i
            pcx, pcy, pw, ph = centre(PriorBox[pj].astype(float))
            t = TargetBox[i, j].astype(float)
            cx, cy = var(pj, 0) * t[0] * pw + pcx, var(pj, 1) * t[1] * ph + pcy
            bw, bh = math.exp(var(pj, 2) * t[2]) * pw, math.exp(var(pj, 3) * t[3]) * ph
            out[i, j] = [cx - bw / 2, cy - bh / 2, cx + bw / 2 - pix, cy + bh / 2 - pix]
    return {"OutputBox": out.astype(TargetBox.dtype)}


def _bilinear(plane, y, x):
    h, w = plane.shape
    if y < -1 or y > h or x < -1 or x > w:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    yl, xl = int(y), int(x)
    if yl >= h - 1:
        yl = yh = h - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= w - 1:
        xl = xh = w - 1
        x = float(xl)
    else:
        xh = xl + 1
    ly, lx = y - yl, x - xl
    return ((1 - ly) * (1 - lx) * plane[yl, xl] + (1 - ly) * lx * plane[yl, xh] + ly * (1 - lx) * plane[yh, xl]
            + ly * lx * plane[yh, xh])


def _roi_align_ref(X, ROIs, RoisNum=None, spatial_scale=1.0, pooled_height=1, pooled_width=1, sampling_ratio=-1,
                   aligned=False, **a):
    images = np.repeat(np.arange(len(RoisNum)), RoisNum) if RoisNum is not None else np.zeros(len(ROIs), int)
    out = np.zeros((len(ROIs), X.shape[1], pooled_height, pooled_width))
    off = 0.5 if aligned else 0.0
    for r, roi in enumerate(ROIs.astype(float)):
        x1, y1, x2, y2 = (v * spatial_scale - off for v in roi)
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / pooled_height, rw / pooled_width
        gh = sampling_ratio if sampling_ratio > 0 else math.ceil(rh / pooled_height)
        gw = sampling_ratio if sampling_ratio > 0 else math.ceil(rw / pooled_width)
        for c in range(X.shape[1]):
            plane = X[images[r], c].astype(float)
            for p in range(pooled_height):
                for q in range(pooled_width):
                    total = sum(_bilinear(plane, y1 + p * bh + (iy + 0.5) * bh / gh, x1 + q * bw + (ix + 0.5) * bw / gw)
                                for iy in range(gh) for ix in range(gw))
                    out[r, c, p, q] = total / max(gh * gw, 1)
    return {"Out": out.astype(X.dtype)}


FEAT, IMAGE = np.zeros((1, 2, 3, 4), np.float32), np.zeros((1, 3, 30, 40), np.float32)
PRIORS = np.array([[0.1, 0.1, 0.4, 0.5], [0.3, 0.2, 0.9, 0.6], [0.0, 0.5, 0.5, 1.0]], np.float32)
PIXEL_PRIORS = (PRIORS * 50).astype(np.float32)
PRIOR_VAR = rng.uniform(0.1, 0.3, (3, 4)).astype(np.float32)
GT = np.array([[0.2, 0.1, 0.5, 0.7], [0.0, 0.0, 0.3, 0.3]], np.float32)
DELTAS = (rng.standard_normal((2, 3, 4)) * 0.5).astype(np.float32)
X = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
ROIS = np.array([[0.5, 1.0, 5.0, 4.5], [2.0, 0.2, 6.9, 5.8], [3.1, 3.3, 3.6, 3.9], [-2.0, -1.0, 3.0, 8.0]],
                np.float32)
TOL = dict(rtol=1e-5, atol=1e-5)

CASES = [
    Case("prior_box", {"Input": FEAT, "Image": IMAGE}, _prior_ref,
         attrs=dict(min_sizes=[8.0, 16.0], max_sizes=[12.0, 24.0], aspect_ratios=[2.0], flip=True), **TOL,
         id="prior_box_ratios_then_max"),
    Case("prior_box", {"Input": FEAT, "Image": IMAGE}, _prior_ref,
         attrs=dict(min_sizes=[20.0], max_sizes=[35.0], aspect_ratios=[2.0, 0.5], flip=True, clip=True,
                    min_max_aspect_ratios_order=True, step_w=9.0, step_h=11.0, offset=0.3), **TOL,
         id="prior_box_min_max_order_clip_steps"),
    Case("box_coder", {"PriorBox": PRIORS, "TargetBox": GT}, _coder_ref, attrs={"variance": [0.1, 0.1, 0.2, 0.2]},
         **TOL, id="box_coder_encode_variance_attr"),
    Case("box_coder", {"PriorBox": PIXEL_PRIORS, "PriorBoxVar": PRIOR_VAR, "TargetBox": GT * 50}, _coder_ref,
         attrs={"box_normalized": False}, **TOL, id="box_coder_encode_pixels_prior_var"),
    Case("box_coder", {"PriorBox": PRIORS, "PriorBoxVar": PRIOR_VAR, "TargetBox": DELTAS}, _coder_ref,
         attrs={"code_type": "decode_center_size"}, **TOL, id="box_coder_decode"),
    Case("box_coder", {"PriorBox": PIXEL_PRIORS, "TargetBox": DELTAS.transpose(1, 0, 2).copy()}, _coder_ref,
         attrs={"code_type": "decode_center_size", "axis": 1, "box_normalized": False}, **TOL,
         id="box_coder_decode_axis1_pixels"),
    Case("roi_align", {"X": X, "ROIs": ROIS, "RoisNum": np.array([1, 3], np.int32)}, _roi_align_ref,
         attrs=dict(pooled_height=2, pooled_width=3), **TOL, id="roi_align_adaptive"),
    Case("roi_align", {"X": X, "ROIs": ROIS * 2, "RoisNum": np.array([3, 1], np.int32)}, _roi_align_ref,
         attrs=dict(pooled_height=3, pooled_width=2, spatial_scale=0.5, sampling_ratio=2, aligned=True), **TOL,
         id="roi_align_aligned_scaled"),
    Case("roi_align", {"X": X[:1], "ROIs": ROIS}, _roi_align_ref, attrs=dict(pooled_height=2, pooled_width=2),
         **TOL, id="roi_align_one_image"),
]
