"""roi_align (Mask R-CNN's RoIAlign, as Paddle's vision.ops.roi_align writes it): each ROI's bins averaged
from bilinear samples of X, with Paddle's conventions: ROIs [x1, y1, x2, y2] in image pixels scaled by
spatial_scale; aligned=true shifts them by half a pixel (and lets a ROI be smaller than a pixel); the samples
per bin are sampling_ratio, or ceil(ROI size / pooled size) per axis; RoisNum says which image each ROI is of.

The sample grid of a ROI depends on its size, read from the ROIs on the host; the samples themselves are
gathered with the array module.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, at_least, register_op
from ..runtime.place import to_host

ROI_ALIGN = register_op(
    "roi_align",
    "Out[r, c] = the pooled_height x pooled_width bins of ROI r over X's channel c, each the mean of bilinear "
    "samples of X (zero outside it) on a regular grid within the bin.",
    inputs=[In("X", "[N, C, H, W]"), In("ROIs", "[R, 4] boxes (x1, y1, x2, y2) in image pixels"),
            In("RoisNum", "int32 [N]: ROIs per image, in order (else every ROI is of image 0)", dispensable=True)],
    outputs=[Out("Out", "[R, C, pooled_height, pooled_width]")],
    attrs=[Attr("spatial_scale", A.FLOAT, "X's size over the image's (ROIs are scaled by it)", 1.0),
           Attr("pooled_height", A.INT, "bins per ROI, vertically", 1, checks=(at_least(1),)),
           Attr("pooled_width", A.INT, "bins per ROI, horizontally", 1, checks=(at_least(1),)),
           Attr("sampling_ratio", A.INT, "samples per bin per axis (<= 0: adaptive)", -1),
           Attr("aligned", A.BOOLEAN, "shift ROIs by half a pixel (pixel centres at .5)", False)])


def _infer(ic):
    x, rois = ic.shape("X"), ic.shape("ROIs")
    if len(x) != 4 or len(rois) != 2 or rois[1] not in (4, -1):
        ic.fail(f"X must be [N, C, H, W] and ROIs [R, 4], got {list(x)} and {list(rois)}")
    ic.set_output("Out", (rois[0], x[1], ic.attr("pooled_height") or 1, ic.attr("pooled_width") or 1),
                  ic.dtype("X"))


ROI_ALIGN.infer_shape = _infer


def roi_images(rois_num, count: int, batch: int) -> np.ndarray:
    """The image of each ROI."""
    if rois_num is None:
        if batch != 1:
            raise ValueError(f"X holds {batch} images: RoisNum must say which image each ROI is of")
        return np.zeros(count, dtype=np.int64)
    per = np.asarray(to_host(rois_num)).reshape(-1).astype(np.int64)
    if len(per) != batch or (per < 0).any() or per.sum() != count:
        raise ValueError(f"RoisNum {per.tolist()} must give the ROIs of each of the {batch} images, "
                         f"{count} in all")
    return np.repeat(np.arange(batch), per)


# A ROI's adaptive grid grows with its size: a ROI millions of pixels wide would ask for gigabytes of sample
# points (Paddle's loop takes the time instead). Real ROIs over real feature maps stay far below this.
MAX_SAMPLES_PER_ROI = 1 << 21


def bin_samples(roi, h: int, w: int, attrs):
    """For one ROI (host floats): the sample points' four neighbours and weights, as flat indices into one
    [H * W] plane and weights [ph * pw, n_samples, 4], zero weight for samples outside X, with 1 / count folded
    in."""
    off = 0.5 if attrs["aligned"] else 0.0
    scale = attrs["spatial_scale"]
    x1, y1, x2, y2 = (float(v) * scale - off for v in roi)
    rw, rh = x2 - x1, y2 - y1
    if not attrs["aligned"]:
        rw, rh = max(rw, 1.0), max(rh, 1.0)
    ph, pw = attrs["pooled_height"], attrs["pooled_width"]
    bh, bw = rh / ph, rw / pw
    ratio = attrs["sampling_ratio"]
    gh = ratio if ratio > 0 else math.ceil(rh / ph)
    gw = ratio if ratio > 0 else math.ceil(rw / pw)
    if ph * pw * gh * gw > MAX_SAMPLES_PER_ROI:
        raise ValueError(f"ROI {[float(v) for v in roi]} would take {ph * pw * gh * gw} samples, over kernelcore's "
                         f"bound of {MAX_SAMPLES_PER_ROI} per ROI: set sampling_ratio, or check the ROI's scale")
    count = max(gh * gw, 1)
    iy = (np.arange(ph)[:, None] * bh + (np.arange(gh)[None, :] + 0.5) * bh / max(gh, 1) + y1).reshape(ph, 1, gh, 1)
    ix = (np.arange(pw)[:, None] * bw + (np.arange(gw)[None, :] + 0.5) * bw / max(gw, 1) + x1).reshape(1, pw, 1, gw)
    y, x = np.broadcast_arrays(iy, ix)  # [ph, pw, gh, gw]
    outside = (y < -1.0) | (y > h) | (x < -1.0) | (x > w)
    y, x = np.maximum(y, 0.0), np.maximum(x, 0.0)
    y_lo, x_lo = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
    y_top, x_top = y_lo >= h - 1, x_lo >= w - 1  # at the last row/column: both neighbours are it
    y_lo, x_lo = np.where(y_top, h - 1, y_lo), np.where(x_top, w - 1, x_lo)
    y, x = np.where(y_top, y_lo, y), np.where(x_top, x_lo, x)
    y_hi, x_hi = np.where(y_top, y_lo, y_lo + 1), np.where(x_top, x_lo, x_lo + 1)
    ly, lx = y - y_lo, x - x_lo
    hy, hx = 1 - ly, 1 - lx
    idx = np.stack([y_lo * w + x_lo, y_lo * w + x_hi, y_hi * w + x_lo, y_hi * w + x_hi], axis=-1)
    wt = np.stack([hy * hx, hy * lx, ly * hx, ly * lx], axis=-1) * ~outside[..., None] / count
    return idx.reshape(ph * pw, -1), wt.reshape(ph * pw, -1)


def checked_rois(x, rois, rois_num):
    if x.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 4:
        raise ValueError(f"X must be [N, C, H, W] and ROIs [R, 4], got {list(x.shape)} and {list(rois.shape)}")
    host = np.asarray(to_host(rois), dtype=np.float64)
    if not np.isfinite(host).all():
        raise ValueError("ROIs hold NaN or Inf")
    return host, roi_images(rois_num, len(host), x.shape[0])


@ROI_ALIGN.kernel()
def roi_align(ctx, ins, attrs):
    x, rois, rois_num = ins
    xp = ctx.xp
    host, images = checked_rois(x, rois, rois_num)
    n, c, h, w = x.shape
    ph, pw = attrs["pooled_height"], attrs["pooled_width"]
    planes = x.reshape(n, c, h * w)
    out = []
    for r, roi in enumerate(host):
        idx, wt = bin_samples(roi, h, w, attrs)
        vals = planes[int(images[r])][:, xp.asarray(idx)]  # [C, bins, samples]
        out.append((vals * xp.asarray(wt.astype(x.dtype))).sum(axis=-1).reshape(c, ph, pw))
    if not out:
        return (xp.zeros((0, c, ph, pw), dtype=x.dtype),)
    return (xp.stack(out).astype(x.dtype),)
