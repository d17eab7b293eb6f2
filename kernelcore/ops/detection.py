"""Detection heads: yolo_box (decoding a YOLOv3 head) and the NMS ops Paddle's vision ops write
(multiclass_nms3, matrix_nms, nms), with Paddle's box conventions.

Boxes are [x1, y1, x2, y2]. `normalized` boxes (coordinates in [0, 1]) have width x2 - x1; pixel boxes
(normalized=false) count both edges, x2 - x1 + 1, as Paddle's JaccardOverlap does. Output layouts:
  multiclass_nms3  Out [No, 6] = (label, score, x1, y1, x2, y2) grouped by label (ascending), score-descending
                   within a label; Index [No, 1] int32 = image * M + box; NmsRoisNum [N] int32 per image
  matrix_nms       the same rows, score-descending over all labels; RoisNum [N] int32
  nms              KeepBoxesIdxs int64: the boxes kept, in the order given (Paddle's Python API sorts by score
                   first), each suppressing later boxes it overlaps by more than iou_threshold (width x2 - x1,
                   tested as intersection > union * threshold, as Paddle's CalculateIoU)

Suppression is a sequential walk over boxes sorted by score: it runs on the host (Paddle's CPU kernels do the
same walk); device inputs are copied once and the results copied back.
"""
from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, Check, In, Out, at_least, register_op
from ..runtime.place import to_host

VT = dtypes.VT


def _sigmoid(xp, x):
    return 1.0 / (1.0 + xp.exp(-x))


# ---------------------------------------------------------------------------------------------------------
# yolo_box
YOLO_BOX = register_op(
    "yolo_box",
    "Decode a YOLOv3 head: X [N, A*(5+C), H, W] (iou_aware: A IoU channels first, then A*(5+C)) into Boxes "
    "[N, A*H*W, 4] (x1, y1, x2, y2 in the image's pixels) and Scores [N, A*H*W, C] (confidence * class "
    "probability). Boxes whose confidence is below conf_thresh are all zeros, with zero scores. clip_bbox: "
    "boxes clipped to [0, width - 1] x [0, height - 1].",
    inputs=[In("X", "the head's output [N, A*(5+C), H, W]"),
            In("ImgSize", "int32 [N, 2]: each image's (height, width)")],
    outputs=[Out("Boxes", "[N, A*H*W, 4]"), Out("Scores", "[N, A*H*W, class_num]")],
    attrs=[Attr("anchors", A.INTS, "the anchors' (width, height) pairs, in input pixels"),
           Attr("class_num", A.INT, "the number of classes", checks=(at_least(1),)),
           Attr("conf_thresh", A.FLOAT, "boxes with a lower confidence are zeros", 0.01),
           Attr("downsample_ratio", A.INT, "input pixels per cell of X", 32, checks=(at_least(1),)),
           Attr("clip_bbox", A.BOOLEAN, "clip boxes to the image", True),
           Attr("scale_x_y", A.FLOAT, "the centres' scale (YOLOv4's grid sensitivity)", 1.0),
           Attr("iou_aware", A.BOOLEAN, "X holds an IoU channel per anchor first", False),
           Attr("iou_aware_factor", A.FLOAT, "confidence = conf^(1-f) * iou^f", 0.5,
                checks=(Check("in [0, 1]", lambda v: 0.0 <= v <= 1.0),))])


def _yolo_layout(shape, attrs):
    """(anchors as pairs, per-anchor channel count) after checking X's channels against the attributes."""
    anchors = list(attrs["anchors"])
    if not anchors or len(anchors) % 2:
        raise ValueError(f"anchors must hold (width, height) pairs, got {anchors}")
    a, c = len(anchors) // 2, attrs["class_num"]
    want = a * (5 + c) + (a if attrs["iou_aware"] else 0)
    if len(shape) != 4 or (shape[1] >= 0 and shape[1] != want):
        raise ValueError(f"X must be [N, {want}, H, W] for {a} anchors and {c} classes"
                         f"{' (iou_aware)' if attrs['iou_aware'] else ''}, got {list(shape)}")
    return np.asarray(anchors, dtype=np.float64).reshape(a, 2), a


def _yolo_infer(ic):
    attrs = {n: ic.attr(n) for n in ("anchors", "class_num", "iou_aware")}
    attrs["iou_aware"] = bool(attrs["iou_aware"])
    try:
        _, a = _yolo_layout(ic.shape("X"), attrs)
    except ValueError as e:
        ic.fail(str(e))
    n, _, h, w = ic.shape("X")
    m = a * h * w if h >= 0 and w >= 0 else -1
    ic.set_output("Boxes", (n, m, 4), ic.dtype("X"))
    ic.set_output("Scores", (n, m, attrs["class_num"]), ic.dtype("X"))


YOLO_BOX.infer_shape = _yolo_infer


@YOLO_BOX.kernel()
def yolo_box(ctx, ins, attrs):
    x, img_size = ins
    xp = ctx.xp
    anchors, a = _yolo_layout(x.shape, attrs)
    n, _, h, w = x.shape
    c = attrs["class_num"]
    if tuple(img_size.shape) != (n, 2):
        raise ValueError(f"ImgSize must be [N, 2] = [{n}, 2], got {list(img_size.shape)}")
    dt = x.dtype
    if attrs["iou_aware"]:
        iou, x = _sigmoid(xp, x[:, :a]), x[:, a:]
    x = x.reshape(n, a, 5 + c, h, w)
    conf = _sigmoid(xp, x[:, :, 4])
    if attrs["iou_aware"]:
        f = attrs["iou_aware_factor"]
        conf = conf ** (1 - f) * iou ** f
    img = img_size.astype(dt)
    img_h, img_w = img[:, 0].reshape(n, 1, 1, 1), img[:, 1].reshape(n, 1, 1, 1)
    scale = attrs["scale_x_y"]
    bias = -0.5 * (scale - 1.0)
    ratio = attrs["downsample_ratio"]
    cols = xp.arange(w, dtype=dt).reshape(1, 1, 1, w)
    rows = xp.arange(h, dtype=dt).reshape(1, 1, h, 1)
    aw = xp.asarray(anchors[:, 0], dtype=dt).reshape(1, a, 1, 1)
    ah = xp.asarray(anchors[:, 1], dtype=dt).reshape(1, a, 1, 1)
    cx = (cols + _sigmoid(xp, x[:, :, 0]) * scale + bias) * img_w / w
    cy = (rows + _sigmoid(xp, x[:, :, 1]) * scale + bias) * img_h / h
    bw = xp.exp(x[:, :, 2]) * aw * img_w / (ratio * w)
    bh = xp.exp(x[:, :, 3]) * ah * img_h / (ratio * h)
    x1, y1, x2, y2 = cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2
    if attrs["clip_bbox"]:
        x1, y1 = xp.maximum(x1, 0), xp.maximum(y1, 0)
        x2, y2 = xp.minimum(x2, img_w - 1), xp.minimum(y2, img_h - 1)
    keep = conf >= attrs["conf_thresh"]
    boxes = xp.stack([x1, y1, x2, y2], axis=-1) * keep[..., None]
    scores = conf[:, :, None] * _sigmoid(xp, x[:, :, 5:]) * keep[:, :, None]
    # [N, A, 4|C, H, W] -> [N, A*H*W, 4|C]: the box index runs anchor-major, then row, then column
    scores = xp.transpose(scores, (0, 1, 3, 4, 2)).reshape(n, a * h * w, c)
    return boxes.reshape(n, a * h * w, 4).astype(dt), scores.astype(dt)


# ---------------------------------------------------------------------------------------------------------
# IoU as Paddle's JaccardOverlap computes it
def box_area(b, normalized: bool):
    norm = 0.0 if normalized else 1.0
    w, h = b[..., 2] - b[..., 0], b[..., 3] - b[..., 1]
    return np.where((w < 0) | (h < 0), 0.0, (w + norm) * (h + norm))


def iou_matrix(boxes, normalized: bool):
    """IoU of every pair of [K, 4] boxes (float64), zero for boxes that do not meet."""
    b = boxes.astype(np.float64)
    norm = 0.0 if normalized else 1.0
    lo = np.maximum(b[:, None, :2], b[None, :, :2])
    hi = np.minimum(b[:, None, 2:], b[None, :, 2:])
    apart = (b[None, :, 0] > b[:, None, 2]) | (b[None, :, 2] < b[:, None, 0]) | \
            (b[None, :, 1] > b[:, None, 3]) | (b[None, :, 3] < b[:, None, 1])
    inter = (hi[..., 0] - lo[..., 0] + norm) * (hi[..., 1] - lo[..., 1] + norm)
    area = box_area(b, normalized)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area[:, None] + area[None, :] - inter)
    return np.where(apart, 0.0, iou)


def top_candidates(scores, threshold: float, top_k: int):
    """Indices of the scores above threshold, score-descending (ties keep index order), at most top_k."""
    idx = np.nonzero(scores > threshold)[0]
    idx = idx[np.argsort(-scores[idx], kind="stable")]
    return idx[:top_k] if top_k > -1 else idx


def iou_with(box, others, normalized: bool):
    """IoU of one box with each of `others` [K, 4] (JaccardOverlap; one row of iou_matrix)."""
    norm = 0.0 if normalized else 1.0
    lo = np.maximum(box[:2], others[:, :2])
    hi = np.minimum(box[2:], others[:, 2:])
    apart = (others[:, 0] > box[2]) | (others[:, 2] < box[0]) | (others[:, 1] > box[3]) | (others[:, 3] < box[1])
    inter = (hi[:, 0] - lo[:, 0] + norm) * (hi[:, 1] - lo[:, 1] + norm)
    area = box_area(box, normalized)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area + box_area(others, normalized) - inter)
    return np.where(apart, 0.0, iou)


def greedy_nms(boxes, order, threshold: float, normalized: bool, eta: float = 1.0) -> list:
    """Paddle's NMSFast: walk `order`, keep a box unless it overlaps a kept one by more than the (adaptive)
    threshold. Each candidate meets only the boxes kept so far: memory grows with what is kept, not with the
    square of the candidates."""
    b = boxes.astype(np.float64)
    kept: list[int] = []
    for k in order:
        k = int(k)
        ious = iou_with(b[k], b[kept], normalized)
        if not (ious > threshold).any() and not np.isnan(ious).any():
            kept.append(k)
            if eta < 1 and threshold > 0.5:
                threshold *= eta
    return kept


# ---------------------------------------------------------------------------------------------------------
_NMS_COMMON = [
    Attr("background_label", A.INT, "the label to skip (-1: none)", 0),
    Attr("score_threshold", A.FLOAT, "scores at or below it are dropped first"),
    Attr("nms_top_k", A.INT, "candidates per class kept before suppression (-1: all)"),
    Attr("keep_top_k", A.INT, "detections per image kept after it (-1: all)"),
    Attr("normalized", A.BOOLEAN, "boxes in [0, 1] (else pixel boxes, whose edges both count)", True),
]

MULTICLASS_NMS3 = register_op(
    "multiclass_nms3",
    "Per image and class, greedy NMS over the boxes scoring above score_threshold (at most nms_top_k), then at "
    "most keep_top_k detections per image by score. Out rows (label, score, x1, y1, x2, y2) grouped by label; "
    "Index = image * M + box. With RoisNum (per-image ROIs, a box per class) rows keep box order within a "
    "label and Index = (ROI) * C + label, as Paddle's LoD form.",
    inputs=[In("BBoxes", "[N, M, 4] boxes shared by the classes; with RoisNum [M, C, 4], a box per class"),
            In("Scores", "[N, C, M] class scores; with RoisNum [M, C]"),
            In("RoisNum", "int32 [N]: with it, BBoxes and Scores hold the images' boxes one after another (a "
                          "two-stage detector's ROIs)", dispensable=True)],
    outputs=[Out("Out", "[No, 6]"), Out("Index", "int32 [No, 1]: image * M + box"),
             Out("NmsRoisNum", "int32 [N]: detections per image")],
    attrs=_NMS_COMMON + [Attr("nms_threshold", A.FLOAT, "the IoU above which a box is suppressed", 0.3),
                         Attr("nms_eta", A.FLOAT, "adaptive threshold factor (1: fixed)", 1.0)])

MATRIX_NMS = register_op(
    "matrix_nms",
    "Matrix NMS (SOLOv2): per image and class, each candidate's score decays by its IoU with the higher-scoring "
    "ones (linear (1 - iou) / (1 - max_iou), or gaussian); decayed scores at or below post_threshold are "
    "dropped; at most keep_top_k per image, score-descending over all classes.",
    inputs=[In("BBoxes", "[N, M, 4]"), In("Scores", "[N, C, M]")],
    outputs=[Out("Out", "[No, 6]"), Out("Index", "int32 [No, 1]: image * M + box"),
             Out("RoisNum", "int32 [N]: detections per image")],
    attrs=_NMS_COMMON + [Attr("post_threshold", A.FLOAT, "decayed scores at or below it are dropped", 0.0),
                         Attr("use_gaussian", A.BOOLEAN, "gaussian decay instead of linear", False),
                         Attr("gaussian_sigma", A.FLOAT, "the gaussian decay's sigma", 2.0)])


def _nms_infer(count_slot):
    def infer(ic):
        b, s = ic.shape("BBoxes"), ic.shape("Scores")
        lod = ic.has_input("RoisNum")  # multiclass_nms3's per-image ROIs: Scores [M, C]
        if len(b) != 3 or b[-1] not in (4, -1) or len(s) != (2 if lod else 3):
            ic.fail(f"BBoxes must be [N, M, 4] and Scores [N, C, M] (with RoisNum: [M, C, 4] and [M, C]), got "
                    f"{list(b)} and {list(s)}")
        ic.set_output("Out", (-1, 6), ic.dtype("BBoxes"))
        ic.set_output("Index", (-1, 1), VT.INT32)
        ic.set_output(count_slot, (ic.shape("RoisNum")[0] if lod else b[0],), VT.INT32)
    return infer


MULTICLASS_NMS3.infer_shape = _nms_infer("NmsRoisNum")
MATRIX_NMS.infer_shape = _nms_infer("RoisNum")


def _host_boxes_scores(bboxes, scores):
    b, s = to_host(bboxes), to_host(scores)
    if b.ndim != 3 or b.shape[2] != 4 or s.ndim != 3 or s.shape[0] != b.shape[0] or s.shape[2] != b.shape[1]:
        raise ValueError(f"BBoxes must be [N, M, 4] and Scores [N, C, M] of the same N and M, got "
                         f"{list(b.shape)} and {list(s.shape)}")
    return b, s


def _pack(xp, rows, dtype, per_image):
    """(Out, Index, counts) arrays from per-image lists of (label, score, box index, box)."""
    out = np.array([[lab, sc, *box] for lab, sc, _, box in rows], dtype=dtype).reshape(-1, 6)
    index = np.array([i for _, _, i, _ in rows], dtype=np.int32).reshape(-1, 1)
    return xp.asarray(out), xp.asarray(index), xp.asarray(np.asarray(per_image, dtype=np.int32))


def _keep_top(dets, keep_top_k):
    """The keep_top_k best (label, score, index) of an image, score-descending (ties keep their order)."""
    order = sorted(range(len(dets)), key=lambda k: -dets[k][1])
    return [dets[k] for k in order[:keep_top_k]] if keep_top_k > -1 else [dets[k] for k in order]


def image_nms(boxes_of, scores, attrs, box_order: bool) -> list:
    """One image's (label, score, box) detections: scores [C, m]; boxes_of(label) its [m, 4] boxes. Grouped by
    label; within one, score order, or box order (box_order: Paddle's LoD form sorts the kept indices)."""
    dets = []
    for label in range(scores.shape[0]):
        if label == attrs["background_label"]:
            continue
        order = top_candidates(scores[label], attrs["score_threshold"], attrs["nms_top_k"])
        kept = greedy_nms(boxes_of(label), order, attrs["nms_threshold"], attrs["normalized"], attrs["nms_eta"])
        dets.extend((label, scores[label, k], k) for k in (sorted(kept) if box_order else kept))
    if -1 < attrs["keep_top_k"] < len(dets):
        best = _keep_top(dets, attrs["keep_top_k"])
        # grouped by label again, score order (or box order) within
        dets = sorted(best, key=lambda d: (d[0], d[2]) if box_order else d[0])
    return dets


def _lod_inputs(b, s, rois_num):
    """Paddle's LoD form: BBoxes [M, C, 4], Scores [M, C], RoisNum [N] -> each image's first ROI."""
    if b.ndim != 3 or b.shape[2] != 4 or s.ndim != 2 or s.shape != b.shape[:2]:
        raise ValueError(f"with RoisNum, BBoxes must be [M, C, 4] and Scores [M, C], got {list(b.shape)} and "
                         f"{list(s.shape)}")
    per = np.asarray(to_host(rois_num)).reshape(-1).astype(np.int64)
    if (per < 0).any() or per.sum() != len(b):
        raise ValueError(f"RoisNum {per.tolist()} must split the {len(b)} ROIs among the images")
    return np.concatenate([[0], np.cumsum(per)])


@MULTICLASS_NMS3.kernel()
def multiclass_nms3(ctx, ins, attrs):
    bboxes, scores, rois_num = ins
    rows, per_image = [], []
    if rois_num is not None:
        b, s = to_host(bboxes), to_host(scores)
        starts = _lod_inputs(b, s, rois_num)
        c = s.shape[1]
        for i in range(len(starts) - 1):
            lo, hi = int(starts[i]), int(starts[i + 1])
            dets = image_nms(lambda label: b[lo:hi, label], s[lo:hi].T, attrs, box_order=True)
            rows.extend((lab, sc, (lo + k) * c + lab, b[lo + k, lab]) for lab, sc, k in dets)
            per_image.append(len(dets))
        return _pack(ctx.xp, rows, b.dtype, per_image)
    b, s = _host_boxes_scores(bboxes, scores)
    m = s.shape[2]
    for i in range(s.shape[0]):
        dets = image_nms(lambda label: b[i], s[i], attrs, box_order=False)
        rows.extend((lab, sc, i * m + k, b[i, k]) for lab, sc, k in dets)
        per_image.append(len(dets))
    return _pack(ctx.xp, rows, b.dtype, per_image)


# Matrix NMS compares every pair of a class's candidates (Paddle keeps the same triangle): a program with
# nms_top_k = -1 over a large head would ask for gigabytes of IoUs.
MAX_MATRIX_CANDIDATES = 4096


def matrix_decay(boxes, scores, normalized, use_gaussian, sigma):
    """Matrix NMS's decayed scores for candidates already sorted score-descending."""
    if len(boxes) > MAX_MATRIX_CANDIDATES:
        raise ValueError(f"{len(boxes)} candidates in one class exceed kernelcore's bound of {MAX_MATRIX_CANDIDATES} "
                         f"for matrix_nms (its IoU matrix grows with their square): set nms_top_k")
    ious = np.triu(iou_matrix(boxes, normalized), k=1)  # [j, i]: IoU of i with the better-scoring j
    max_iou = ious.max(axis=0)  # each candidate's largest IoU with a better one
    if use_gaussian:
        decay = np.exp((max_iou[:, None] ** 2 - ious ** 2) * sigma)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            decay = (1 - ious) / (1 - max_iou[:, None])
    upper = np.triu(np.ones_like(ious, dtype=bool), k=1)
    decay = np.where(upper, decay, 1.0).min(axis=0)
    return decay * scores


@MATRIX_NMS.kernel()
def matrix_nms(ctx, ins, attrs):
    b, s = _host_boxes_scores(*ins)
    n, c, m = s.shape
    rows, per_image = [], []
    for i in range(n):
        dets = []
        for label in range(c):
            if label == attrs["background_label"]:
                continue
            order = top_candidates(s[i, label], attrs["score_threshold"], attrs["nms_top_k"])
            if not len(order):
                continue
            decayed = matrix_decay(b[i, order], s[i, label, order].astype(np.float64), attrs["normalized"],
                                   attrs["use_gaussian"], attrs["gaussian_sigma"])
            dets.extend((label, sc, int(k)) for sc, k in zip(decayed, order) if sc > attrs["post_threshold"])
        dets = _keep_top(dets, attrs["keep_top_k"])
        rows.extend((lab, sc, i * m + k, b[i, k]) for lab, sc, k in dets)
        per_image.append(len(dets))
    return _pack(ctx.xp, rows, b.dtype, per_image)


# ---------------------------------------------------------------------------------------------------------
NMS = register_op(
    "nms",
    "Greedy NMS over Boxes in the order given: each box kept suppresses the later ones whose IoU with it "
    "exceeds iou_threshold (areas (x2 - x1) * (y2 - y1)). KeepBoxesIdxs: the kept boxes' indices, in order.",
    inputs=[In("Boxes", "[K, 4]")], outputs=[Out("KeepBoxesIdxs", "int64 [kept]")],
    attrs=[Attr("iou_threshold", A.FLOAT, "the IoU above which a later box is suppressed", 0.3)])


def _plain_nms_infer(ic):
    b = ic.shape("Boxes")
    if len(b) != 2 or b[1] not in (4, -1):
        ic.fail(f"Boxes must be [K, 4], got {list(b)}")
    ic.set_output("KeepBoxesIdxs", (-1,), VT.INT64)


NMS.infer_shape = _plain_nms_infer


def overlaps_beyond(box, others, threshold: float):
    """Paddle's CalculateIoU for the nms op: intersection > union * threshold, with no division, so boxes of
    zero area (a YOLO head's boxes below conf_thresh) never suppress each other."""
    lo = np.maximum(box[:2], others[:, :2])
    hi = np.minimum(box[2:], others[:, 2:])
    inter = np.prod(np.maximum(hi - lo, 0), axis=1)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    return inter > (area + areas - inter) * threshold


@NMS.kernel()
def nms(ctx, ins, attrs):
    b = to_host(ins[0])
    if b.ndim != 2 or b.shape[1] != 4:
        raise ValueError(f"Boxes must be [K, 4], got {list(b.shape)}")
    suppressed = np.zeros(len(b), dtype=bool)
    kept = []
    for i in range(len(b)):
        if suppressed[i]:
            continue
        kept.append(i)
        suppressed[i + 1:] |= overlaps_beyond(b[i], b[i + 1:], attrs["iou_threshold"])
    return (ctx.xp.asarray(np.asarray(kept, dtype=np.int64)),)
