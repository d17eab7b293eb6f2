"""Anchor boxes of SSD-style detection heads: prior_box (the anchors of a feature map) and box_coder (targets
encoded against anchors, or deltas decoded back into boxes), with Paddle's conventions: boxes [x1, y1, x2, y2];
pixel boxes (box_normalized=false) count both edges in a width (x2 - x1 + 1) and decode to x2 - 1.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, one_of, register_op

# ---------------------------------------------------------------------------------------------------------
# prior_box
PRIOR_BOX = register_op(
    "prior_box",
    "The anchors of each cell of Input's feature map, in coordinates normalized by Image's size: for each min "
    "size, one box per aspect ratio (and with max_sizes, a square of side sqrt(min * max)). Boxes and "
    "Variances are [H, W, num_priors, 4].",
    inputs=[In("Input", "the feature map [N, C, H, W]"), In("Image", "the input image [N, C, IH, IW]")],
    outputs=[Out("Boxes", "[H, W, num_priors, 4]"), Out("Variances", "[H, W, num_priors, 4]")],
    attrs=[Attr("min_sizes", A.FLOATS, "the boxes' smallest sides, in image pixels"),
           Attr("max_sizes", A.FLOATS, "with each min size, a square of side sqrt(min * max)", []),
           Attr("aspect_ratios", A.FLOATS, "width / height ratios (1 always included)", [1.0]),
           Attr("variances", A.FLOATS, "the four variances every box carries", [0.1, 0.1, 0.2, 0.2]),
           Attr("flip", A.BOOLEAN, "also each ratio's inverse", False),
           Attr("clip", A.BOOLEAN, "clip the boxes to [0, 1]", False),
           Attr("step_w", A.FLOAT, "cell width in image pixels (0: image width / feature width)", 0.0),
           Attr("step_h", A.FLOAT, "cell height in image pixels (0: from the sizes)", 0.0),
           Attr("offset", A.FLOAT, "the cell centre's offset, in cells", 0.5),
           Attr("min_max_aspect_ratios_order", A.BOOLEAN, "order: min square, max square, then the ratios "
                "(Caffe's SSD) instead of the ratios, then the max square", False)])


def expand_aspect_ratios(ratios, flip: bool) -> list[float]:
    out = [1.0]
    for r in ratios:
        if any(abs(r - o) < 1e-6 for o in out):
            continue
        out.append(r)
        if flip:
            out.append(1.0 / r)
    return out


def prior_sizes(attrs) -> list[tuple[float, float]]:
    """(half width, half height) of each prior of a cell, in image pixels, in Paddle's order."""
    ratios = expand_aspect_ratios(attrs["aspect_ratios"], attrs["flip"])
    maxes = list(attrs["max_sizes"])
    mins = list(attrs["min_sizes"])
    if maxes and len(maxes) != len(mins):
        raise ValueError(f"max_sizes {maxes} must pair with min_sizes {mins}")
    sizes = []
    for s, lo in enumerate(mins):
        ratio_boxes = [(lo * math.sqrt(r) / 2, lo / math.sqrt(r) / 2) for r in ratios]
        square = [(math.sqrt(lo * maxes[s]) / 2,) * 2] if maxes else []
        if attrs["min_max_aspect_ratios_order"]:
            sizes += [(lo / 2, lo / 2)] + square + [b for r, b in zip(ratios, ratio_boxes) if abs(r - 1) >= 1e-6]
        else:
            sizes += ratio_boxes + square
    return sizes


def _prior_infer(ic):
    x = ic.shape("Input")
    n = len(prior_sizes({k: ic.attr(k) if ic.attr(k) is not None else d for k, d in
                         (("aspect_ratios", [1.0]), ("flip", False), ("max_sizes", []), ("min_sizes", []),
                          ("min_max_aspect_ratios_order", False))}))
    for slot in ("Boxes", "Variances"):
        ic.set_output(slot, (x[2], x[3], n, 4), ic.dtype("Input"))


PRIOR_BOX.infer_shape = _prior_infer


@PRIOR_BOX.kernel()
def prior_box(ctx, ins, attrs):
    feat, image = ins
    xp = ctx.xp
    if feat.ndim != 4 or image.ndim != 4:
        raise ValueError(f"Input and Image must be 4-D, got {list(feat.shape)} and {list(image.shape)}")
    h, w = feat.shape[2:]
    img_h, img_w = image.shape[2:]
    step_w = attrs["step_w"] or img_w / w
    step_h = attrs["step_h"] or img_h / h
    half = np.asarray(prior_sizes(attrs), dtype=np.float64)  # [P, 2]
    cx = (np.arange(w) + attrs["offset"]) * step_w
    cy = (np.arange(h) + attrs["offset"]) * step_h
    cx, cy = cx[None, :, None], cy[:, None, None]  # [1, W, 1] and [H, 1, 1] against the priors' [P]
    grid = (h, w, len(half))
    boxes = np.stack([np.broadcast_to(e, grid) for e in ((cx - half[:, 0]) / img_w, (cy - half[:, 1]) / img_h,
                                                          (cx + half[:, 0]) / img_w, (cy + half[:, 1]) / img_h)],
                     axis=-1)
    if attrs["clip"]:
        boxes = np.clip(boxes, 0.0, 1.0)
    variances = np.broadcast_to(np.asarray(attrs["variances"], dtype=np.float64), boxes.shape)
    return xp.asarray(boxes.astype(feat.dtype)), xp.asarray(np.ascontiguousarray(variances, dtype=feat.dtype))


# ---------------------------------------------------------------------------------------------------------
# box_coder
BOX_CODER = register_op(
    "box_coder",
    "encode_center_size: TargetBox [N, 4] against PriorBox [M, 4] -> OutputBox [N, M, 4] = (centre offsets / "
    "prior size, log size ratios) / variance. decode_center_size: deltas TargetBox [N, M, 4] (a prior per "
    "column with axis=0, per row with axis=1) -> boxes [N, M, 4]. Variances from PriorBoxVar [M, 4], else the "
    "`variance` attribute, else 1.",
    inputs=[In("PriorBox", "[M, 4] anchors"), In("PriorBoxVar", "[M, 4] their variances", dispensable=True),
            In("TargetBox", "encode: [N, 4] boxes; decode: [N, M, 4] deltas")],
    outputs=[Out("OutputBox", "[N, M, 4]")],
    attrs=[Attr("code_type", A.STRING, "encode_center_size or decode_center_size", "encode_center_size",
                checks=(one_of("encode_center_size", "decode_center_size"),)),
           Attr("box_normalized", A.BOOLEAN, "boxes in [0, 1] (else pixel boxes, both edges counted)", True),
           Attr("axis", A.INT, "decode: the TargetBox axis the priors run along (0: columns, 1: rows)", 0,
                checks=(one_of(0, 1),)),
           Attr("variance", A.FLOATS, "four variances for every prior, when PriorBoxVar is absent", [])])


def _centre_size(xp, b, pixel: float):
    w = b[..., 2] - b[..., 0] + pixel
    h = b[..., 3] - b[..., 1] + pixel
    return b[..., 0] + w / 2, b[..., 1] + h / 2, w, h


def _variances(xp, prior_var, attrs, dtype):
    if prior_var is not None:
        return prior_var
    if attrs["variance"]:
        if len(attrs["variance"]) != 4:
            raise ValueError(f"variance must hold 4 values, got {list(attrs['variance'])}")
        return xp.asarray(np.asarray(attrs["variance"], dtype=dtype))
    return None


@BOX_CODER.kernel()
def box_coder(ctx, ins, attrs):
    prior, prior_var, target = ins
    xp = ctx.xp
    pixel = 0.0 if attrs["box_normalized"] else 1.0
    if prior.ndim != 2 or prior.shape[1] != 4:
        raise ValueError(f"PriorBox must be [M, 4], got {list(prior.shape)}")
    var = _variances(xp, prior_var, attrs, prior.dtype)
    pcx, pcy, pw, ph = _centre_size(xp, prior, pixel)
    if attrs["code_type"] == "encode_center_size":
        if target.ndim != 2 or target.shape[1] != 4:
            raise ValueError(f"TargetBox must be [N, 4] to encode, got {list(target.shape)}")
        tcx = (target[:, None, 2] + target[:, None, 0]) / 2
        tcy = (target[:, None, 3] + target[:, None, 1]) / 2
        tw = target[:, None, 2] - target[:, None, 0] + pixel
        th = target[:, None, 3] - target[:, None, 1] + pixel
        out = xp.stack([(tcx - pcx) / pw, (tcy - pcy) / ph, xp.log(xp.abs(tw / pw)), xp.log(xp.abs(th / ph))],
                       axis=-1)
        return ((out / var).astype(target.dtype) if var is not None else out.astype(target.dtype),)
    if target.ndim != 3 or target.shape[2] != 4:
        raise ValueError(f"TargetBox must be [N, M, 4] to decode, got {list(target.shape)}")
    axis = attrs["axis"]
    if target.shape[1 - axis] != prior.shape[0]:
        raise ValueError(f"with axis={axis}, TargetBox's dim {1 - axis} ({target.shape[1 - axis]}) must equal "
                         f"the number of priors ({prior.shape[0]})")

    def along(v):  # a per-prior [M] (or [M, 4]) value lined up with TargetBox's priors
        return v[None] if axis == 0 else v[:, None]
    pcx, pcy, pw, ph = along(pcx), along(pcy), along(pw), along(ph)
    if var is None:
        v = [1.0] * 4
    elif var.ndim == 1:
        v = [var[k] for k in range(4)]
    else:
        v = [along(var[:, k]) for k in range(4)]
    cx = v[0] * target[..., 0] * pw + pcx
    cy = v[1] * target[..., 1] * ph + pcy
    w = xp.exp(v[2] * target[..., 2]) * pw
    h = xp.exp(v[3] * target[..., 3]) * ph
    out = xp.stack([cx - w / 2, cy - h / 2, cx + w / 2 - pixel, cy + h / 2 - pixel], axis=-1)
    return (out.astype(target.dtype),)
