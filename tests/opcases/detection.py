"""Cases for kernelcore/ops/detection.py (yolo_box, multiclass_nms3, matrix_nms, nms) and argsort
(kernelcore/ops/index_arith.py).

multiclass_nms3 in both forms (batched [N, M, 4] boxes, and per-image ROIs with RoisNum). The references follow
Paddle's CPU kernels loop by loop, one box (or one cell) at a time in Python scalars:
GetYoloBox / CalcDetectionBox / CalcLabelScore for yolo_box, NMSFast with JaccardOverlap for the NMS ops,
where the kernels work on whole arrays (and an IoU matrix). tests/test_paddle_decoding_detection.py checks the
same ops against Paddle's own outputs.
"""
import math

import numpy as np

from . import Case

rng = np.random.default_rng(34)


def _sig(v):
    return 1.0 / (1.0 + math.exp(-v))


def _yolo_ref(X, ImgSize, anchors, class_num, conf_thresh=0.01, downsample_ratio=32, clip_bbox=True,
              scale_x_y=1.0, iou_aware=False, iou_aware_factor=0.5, **a):
    n, _, h, w = X.shape
    an = len(anchors) // 2
    m = an * h * w
    boxes = np.zeros((n, m, 4), X.dtype)
    scores = np.zeros((n, m, class_num), X.dtype)
    bias = -0.5 * (scale_x_y - 1)
    for i in range(n):
        ih, iw = int(ImgSize[i, 0]), int(ImgSize[i, 1])
        for j in range(an):
            base = an + j * (5 + class_num) if iou_aware else j * (5 + class_num)
            for k in range(h):
                for l in range(w):  # noqa: E741 - Paddle's name for the column
                    conf = _sig(float(X[i, base + 4, k, l]))
                    if iou_aware:
                        conf = conf ** (1 - iou_aware_factor) * _sig(float(X[i, j, k, l])) ** iou_aware_factor
                    if conf < conf_thresh:
                        continue
                    cx = (l + _sig(float(X[i, base, k, l])) * scale_x_y + bias) * iw / w
                    cy = (k + _sig(float(X[i, base + 1, k, l])) * scale_x_y + bias) * ih / h
                    bw = math.exp(float(X[i, base + 2, k, l])) * anchors[2 * j] * iw / (downsample_ratio * w)
                    bh = math.exp(float(X[i, base + 3, k, l])) * anchors[2 * j + 1] * ih / (downsample_ratio * h)
                    box = [cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2]
                    if clip_bbox:
                        box = [max(box[0], 0), max(box[1], 0), min(box[2], iw - 1), min(box[3], ih - 1)]
                    r = j * h * w + k * w + l
                    boxes[i, r] = box
                    for c in range(class_num):
                        scores[i, r, c] = conf * _sig(float(X[i, base + 5 + c, k, l]))
    return {"Boxes": boxes, "Scores": scores}


def _jaccard(b1, b2, normalized):
    if b2[0] > b1[2] or b2[2] < b1[0] or b2[1] > b1[3] or b2[3] < b1[1]:
        return 0.0
    norm = 0.0 if normalized else 1.0

    def area(b):
        if b[2] < b[0] or b[3] < b[1]:
            return 0.0
        return (b[2] - b[0] + norm) * (b[3] - b[1] + norm)
    iw = min(b1[2], b2[2]) - max(b1[0], b2[0]) + norm
    ih = min(b1[3], b2[3]) - max(b1[1], b2[1]) + norm
    inter = iw * ih
    return inter / (area(b1) + area(b2) - inter)


def _candidates(scores, threshold, top_k):
    pairs = [(float(s), k) for k, s in enumerate(scores) if s > threshold]
    pairs.sort(key=lambda p: -p[0])  # Python's sort is stable, as std::stable_sort
    return pairs[:top_k] if top_k > -1 else pairs


def _nms_fast(boxes, pairs, threshold, normalized, eta):
    kept = []
    for _, k in pairs:
        if all(_jaccard([float(v) for v in boxes[k]], [float(v) for v in boxes[j]], normalized) <= threshold
               for j in kept):
            kept.append(k)
            if eta < 1 and threshold > 0.5:
                threshold *= eta
    return kept


def _rows(BBoxes, dets_per_image, dtype):
    out, index, counts = [], [], []
    m = BBoxes.shape[1]
    for i, dets in enumerate(dets_per_image):
        for label, score, k in dets:
            out.append([label, score, *BBoxes[i, k]])
            index.append([i * m + k])
        counts.append(len(dets))
    return (np.array(out, dtype).reshape(-1, 6), np.array(index, np.int32).reshape(-1, 1),
            np.array(counts, np.int32))


def _multiclass_ref(BBoxes, Scores, score_threshold, nms_top_k, keep_top_k, nms_threshold=0.3, nms_eta=1.0,
                    normalized=True, background_label=0, **a):
    per_image = []
    for i in range(BBoxes.shape[0]):
        dets = []
        for c in range(Scores.shape[1]):
            if c == background_label:
                continue
            pairs = _candidates(Scores[i, c], score_threshold, nms_top_k)
            for k in _nms_fast(BBoxes[i], pairs, nms_threshold, normalized, nms_eta):
                dets.append((c, float(Scores[i, c, k]), k))
        if -1 < keep_top_k < len(dets):
            dets = sorted(sorted(dets, key=lambda d: -d[1])[:keep_top_k], key=lambda d: d[0])
        per_image.append(dets)
    out, index, counts = _rows(BBoxes, per_image, BBoxes.dtype)
    return {"Out": out, "Index": index, "NmsRoisNum": counts}


def _multiclass_lod_ref(BBoxes, Scores, RoisNum, score_threshold, nms_top_k, keep_top_k, nms_threshold=0.3,
                        nms_eta=1.0, normalized=True, background_label=0, **a):
    """The LoD form: image i's ROIs are rows start..start+RoisNum[i] of BBoxes [M, C, 4] / Scores [M, C]; the
    kept indices of a label in box order; Index = ROI * C + label."""
    out, index, counts = [], [], []
    start, c = 0, Scores.shape[1]
    for n in RoisNum:
        n = int(n)
        dets = []
        for label in range(c):
            if label == background_label:
                continue
            pairs = _candidates(Scores[start:start + n, label], score_threshold, nms_top_k)
            kept = _nms_fast(BBoxes[start:start + n, label], pairs, nms_threshold, normalized, nms_eta)
            dets.extend((label, float(Scores[start + k, label]), k) for k in sorted(kept))
        if -1 < keep_top_k < len(dets):
            dets = sorted(sorted(dets, key=lambda d: -d[1])[:keep_top_k], key=lambda d: (d[0], d[2]))
        for label, score, k in dets:
            out.append([label, score, *BBoxes[start + k, label]])
            index.append([(start + k) * c + label])
        counts.append(len(dets))
        start += n
    return {"Out": np.array(out, BBoxes.dtype).reshape(-1, 6), "Index": np.array(index, np.int32).reshape(-1, 1),
            "NmsRoisNum": np.array(counts, np.int32)}


def _matrix_ref(BBoxes, Scores, score_threshold, post_threshold, nms_top_k, keep_top_k, use_gaussian=False,
                gaussian_sigma=2.0, normalized=True, background_label=0, **a):
    per_image = []
    for i in range(BBoxes.shape[0]):
        dets = []
        for c in range(Scores.shape[1]):
            if c == background_label:
                continue
            pairs = _candidates(Scores[i, c], score_threshold, nms_top_k)
            bx = [[float(v) for v in BBoxes[i, k]] for _, k in pairs]
            iou = [[_jaccard(bx[p], bx[q], normalized) for q in range(len(bx))] for p in range(len(bx))]
            iou_max = [max([iou[p][q] for q in range(p)], default=0.0) for p in range(len(bx))]
            for p, (s, k) in enumerate(pairs):
                decay = 1.0
                for q in range(p):
                    if use_gaussian:
                        d = math.exp((iou_max[q] ** 2 - iou[p][q] ** 2) * gaussian_sigma)
                    else:
                        d = (1 - iou[p][q]) / (1 - iou_max[q])
                    decay = min(decay, d)
                if decay * s > post_threshold:
                    dets.append((c, decay * s, k))
        dets.sort(key=lambda d: -d[1])
        per_image.append(dets[:keep_top_k] if keep_top_k > -1 else dets)
    out, index, counts = _rows(BBoxes, per_image, BBoxes.dtype)
    return {"Out": out, "Index": index, "RoisNum": counts}


def _plain_nms_ref(Boxes, iou_threshold=0.3, **a):
    """Paddle's nms kernel: a box not yet suppressed is kept and suppresses each later box whose intersection
    exceeds union * threshold."""
    boxes = [[float(v) for v in b] for b in Boxes]
    suppressed, kept = set(), []
    for i, b1 in enumerate(boxes):
        if i in suppressed:
            continue
        kept.append(i)
        for j in range(i + 1, len(boxes)):
            b2 = boxes[j]
            iw = max(min(b1[2], b2[2]) - max(b1[0], b2[0]), 0)
            ih = max(min(b1[3], b2[3]) - max(b1[1], b2[1]), 0)
            inter = iw * ih
            union = (b1[2] - b1[0]) * (b1[3] - b1[1]) + (b2[2] - b2[0]) * (b2[3] - b2[1]) - inter
            if inter > union * iou_threshold:
                suppressed.add(j)
    return {"KeepBoxesIdxs": np.array(kept, np.int64)}


def _argsort_ref(X, axis=-1, descending=False, **a):
    idx = np.argsort(-X if descending else X, axis=axis, kind="stable")
    return {"Out": np.take_along_axis(X, idx, axis=axis), "Indices": idx.astype(np.int64)}


def _boxes(n, m, size=20.0):
    xy = rng.uniform(0, size, (n, m, 2))
    wh = rng.uniform(size / 8, size / 2, (n, m, 2))
    return np.concatenate([xy, xy + wh], -1).astype(np.float32)


HEAD = rng.standard_normal((2, 2 * (5 + 3), 4, 5)).astype(np.float32)
HEAD_IOU = rng.standard_normal((1, 2 * (5 + 3) + 2, 3, 3)).astype(np.float32)
IMG = np.array([[40, 50], [30, 36]], np.int32)
YOLO = dict(anchors=[10, 13, 16, 30], class_num=3, downsample_ratio=8)
BOXES, SCORES = _boxes(2, 12), rng.uniform(0, 1, (2, 3, 12)).astype(np.float32)
NORM_BOXES = _boxes(1, 10, size=0.7)
LOD_BOXES = _boxes(9, 3)  # 9 ROIs (4 + 5 over two images), a box per class
LOD_SCORES = rng.uniform(0, 1, (9, 3)).astype(np.float32)
NORM_SCORES = rng.uniform(0, 1, (1, 2, 10)).astype(np.float32)
TIES = np.array([3.0, 1.0, 3.0, 2.0, 1.0, 3.0], np.float32)
NMS_TOL = dict(rtol=1e-5, atol=1e-6)

CASES = [
    Case("yolo_box", {"X": HEAD, "ImgSize": IMG}, _yolo_ref, attrs=dict(YOLO, conf_thresh=0.5), rtol=1e-5,
         atol=1e-5, id="yolo_box_clip"),
    Case("yolo_box", {"X": HEAD, "ImgSize": IMG}, _yolo_ref,
         attrs=dict(YOLO, conf_thresh=0.3, clip_bbox=False, scale_x_y=1.1), rtol=1e-5, atol=1e-5,
         id="yolo_box_noclip_scale"),
    Case("yolo_box", {"X": HEAD_IOU, "ImgSize": IMG[:1]}, _yolo_ref,
         attrs=dict(YOLO, conf_thresh=0.2, iou_aware=True, iou_aware_factor=0.3), rtol=1e-5, atol=1e-5,
         id="yolo_box_iou_aware"),
    Case("multiclass_nms3", {"BBoxes": BOXES, "Scores": SCORES}, _multiclass_ref,
         attrs=dict(score_threshold=0.2, nms_top_k=8, keep_top_k=6, nms_threshold=0.4, normalized=False),
         **NMS_TOL, id="multiclass_nms3_pixels_keep_top_k"),
    Case("multiclass_nms3", {"BBoxes": NORM_BOXES, "Scores": NORM_SCORES}, _multiclass_ref,
         attrs=dict(score_threshold=0.05, nms_top_k=-1, keep_top_k=-1, nms_threshold=0.6, nms_eta=0.8,
                    background_label=-1), **NMS_TOL, id="multiclass_nms3_normalized_eta"),
    Case("multiclass_nms3", {"BBoxes": BOXES, "Scores": SCORES}, _multiclass_ref,
         attrs=dict(score_threshold=2.0, nms_top_k=8, keep_top_k=6), id="multiclass_nms3_nothing_kept"),
    Case("multiclass_nms3", {"BBoxes": LOD_BOXES, "Scores": LOD_SCORES, "RoisNum": np.array([4, 5], np.int32)},
         _multiclass_lod_ref, attrs=dict(score_threshold=0.2, nms_top_k=6, keep_top_k=5, nms_threshold=0.3,
                                         normalized=False), **NMS_TOL, id="multiclass_nms3_rois_num"),
    Case("matrix_nms", {"BBoxes": BOXES, "Scores": SCORES}, _matrix_ref,
         attrs=dict(score_threshold=0.2, post_threshold=0.1, nms_top_k=8, keep_top_k=7, normalized=False),
         **NMS_TOL, id="matrix_nms_linear"),
    Case("matrix_nms", {"BBoxes": NORM_BOXES, "Scores": NORM_SCORES}, _matrix_ref,
         attrs=dict(score_threshold=0.05, post_threshold=0.05, nms_top_k=-1, keep_top_k=-1, use_gaussian=True,
                    gaussian_sigma=1.5, background_label=-1), **NMS_TOL, id="matrix_nms_gaussian"),
    Case("nms", {"Boxes": NORM_BOXES[0]}, _plain_nms_ref, attrs={"iou_threshold": 0.2}, id="nms"),
    Case("nms", {"Boxes": np.concatenate([NORM_BOXES[0], np.zeros((3, 4), np.float32)])}, _plain_nms_ref,
         attrs={"iou_threshold": 0.2}, id="nms_zero_area_boxes_kept"),
    Case("argsort", {"X": rng.standard_normal((3, 5)).astype(np.float32)}, _argsort_ref, id="argsort"),
    Case("argsort", {"X": TIES}, _argsort_ref, attrs={"descending": True}, id="argsort_descending_ties"),
    Case("argsort", {"X": rng.integers(0, 4, (4, 3))}, _argsort_ref, attrs={"axis": 0}, id="argsort_int_axis0"),
]
