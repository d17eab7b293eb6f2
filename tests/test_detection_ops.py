"""Detection ops (kernelcore/ops/detection.py) given bad input: a clear kernelcore error naming the op and what
was expected, never a bare NumPy error. Values are checked by the op cases (tests/opcases/detection.py) and
against Paddle (tests/test_paddle_decoding_detection.py)."""
import numpy as np
import pytest

import kernelcore as kc
from kernelcore.errors import KernelcoreError, OpRunError


def _run(op, inputs, outputs, attrs):
    prog = kc.Program()
    g = prog.global_block()
    for name, v in inputs.items():
        g.create_var(name, [-1] * v.ndim, v.dtype)  # unknown dims: the kernel's own checks speak
    g.append_op(op, {k: [k] for k in inputs}, {o: [o + "_out"] for o in outputs}, attrs)
    return kc.Executor().run(prog, feed=inputs, fetch_list=[o + "_out" for o in outputs], scope=kc.Scope())


YOLO = dict(anchors=[10, 13, 16, 30], class_num=3, downsample_ratio=8)


def test_yolo_box_channels_must_match_anchors_and_classes():
    with pytest.raises(OpRunError, match=r"X must be \[N, 16, H, W\] for 2 anchors and 3 classes"):
        _run("yolo_box", {"X": np.zeros((1, 15, 2, 2), np.float32), "ImgSize": np.array([[8, 8]], np.int32)},
             ["Boxes", "Scores"], YOLO)


def test_yolo_box_channels_are_checked_when_appended():
    prog = kc.Program()
    g = prog.global_block()
    g.create_var("X", [1, 15, 2, 2], "float32")
    g.create_var("ImgSize", [1, 2], "int32")
    with pytest.raises(KernelcoreError, match="for 2 anchors and 3 classes"):
        g.append_op("yolo_box", {"X": ["X"], "ImgSize": ["ImgSize"]}, {"Boxes": ["b"], "Scores": ["s"]}, YOLO)


def test_yolo_box_image_sizes_must_be_one_pair_per_image():
    with pytest.raises(OpRunError, match=r"ImgSize must be \[N, 2\] = \[2, 2\]"):
        _run("yolo_box", {"X": np.zeros((2, 16, 2, 2), np.float32), "ImgSize": np.array([[8, 8]], np.int32)},
             ["Boxes", "Scores"], YOLO)


@pytest.mark.parametrize("op, outs, attrs", [
    ("multiclass_nms3", ["Out", "Index", "NmsRoisNum"], dict(score_threshold=0.1, nms_top_k=5, keep_top_k=5)),
    ("matrix_nms", ["Out", "Index", "RoisNum"], dict(score_threshold=0.1, post_threshold=0.1, nms_top_k=5,
                                                     keep_top_k=5)),
])
def test_nms_boxes_and_scores_must_agree(op, outs, attrs):
    boxes = np.zeros((1, 6, 4), np.float32)
    with pytest.raises(OpRunError, match=r"BBoxes must be \[N, M, 4\] and Scores \[N, C, M\]"):
        _run(op, {"BBoxes": boxes, "Scores": np.zeros((1, 2, 5), np.float32)}, outs, attrs)


def test_multiclass_nms3_keeps_nothing_as_empty_outputs():
    """Nothing above the threshold: Out [0, 6], Index [0, 1] and a zero count per image, as Paddle writes
    when the op returns indices."""
    rng = np.random.default_rng(0)
    out, index, count = _run("multiclass_nms3", {"BBoxes": rng.uniform(0, 1, (2, 4, 4)).astype(np.float32),
                                                 "Scores": rng.uniform(0, 0.5, (2, 3, 4)).astype(np.float32)},
                             ["Out", "Index", "NmsRoisNum"], dict(score_threshold=0.9, nms_top_k=4, keep_top_k=4))
    assert out.shape == (0, 6) and index.shape == (0, 1) and count.tolist() == [0, 0]


def test_nms_takes_k_by_4_boxes():
    with pytest.raises(OpRunError, match=r"Boxes must be \[K, 4\]"):
        _run("nms", {"Boxes": np.zeros((3, 5), np.float32)}, ["KeepBoxesIdxs"], {"iou_threshold": 0.5})


def test_roi_align_needs_rois_num_to_match_the_rois():
    x = np.zeros((2, 1, 4, 4), np.float32)
    rois = np.array([[0, 0, 2, 2], [1, 1, 3, 3]], np.float32)
    with pytest.raises(OpRunError, match=r"RoisNum \[1, 2\] must give the ROIs of each of the 2 images, 2 in all"):
        _run("roi_align", {"X": x, "ROIs": rois, "RoisNum": np.array([1, 2], np.int32)}, ["Out"], {})
    with pytest.raises(OpRunError, match="RoisNum must say which image"):
        _run("roi_align", {"X": x, "ROIs": rois}, ["Out"], {})


def test_box_coder_decode_needs_a_prior_per_column():
    with pytest.raises(OpRunError, match=r"TargetBox's dim 1 \(3\) must equal the number of priors \(2\)"):
        _run("box_coder", {"PriorBox": np.ones((2, 4), np.float32), "TargetBox": np.zeros((1, 3, 4), np.float32)},
             ["OutputBox"], {"code_type": "decode_center_size"})


def test_a_huge_roi_is_refused_before_its_samples_are_made():
    x = np.zeros((1, 1, 8, 8), np.float32)
    rois = np.array([[0, 0, 1e9, 1e9]], np.float32)
    with pytest.raises(OpRunError, match="over kernelcore's bound of 2097152 per ROI"):
        _run("roi_align", {"X": x, "ROIs": rois}, ["Out"], {"pooled_height": 2, "pooled_width": 2})


def test_matrix_nms_bounds_its_candidates_and_nms_keeps_memory_to_what_it_keeps():
    """matrix_nms's pairwise IoUs are bounded (nms_top_k -1 over a huge head is refused); multiclass_nms3 over
    the same boxes runs, meeting each candidate only with the boxes kept."""
    rng = np.random.default_rng(1)
    m = 5000
    xy = rng.uniform(0, 1000, (1, m, 2))
    boxes = np.concatenate([xy, xy + 5], -1).astype(np.float32)
    scores = rng.uniform(0.5, 1, (1, 1, m)).astype(np.float32)
    with pytest.raises(OpRunError, match="5000 candidates in one class exceed kernelcore's bound of 4096"):
        _run("matrix_nms", {"BBoxes": boxes, "Scores": scores}, ["Out", "Index", "RoisNum"],
             dict(score_threshold=0.1, post_threshold=0.1, nms_top_k=-1, keep_top_k=-1, background_label=-1))
    out, _, count = _run("multiclass_nms3", {"BBoxes": boxes, "Scores": scores}, ["Out", "Index", "NmsRoisNum"],
                         dict(score_threshold=0.1, nms_top_k=-1, keep_top_k=-1, background_label=-1,
                              normalized=False))
    assert 0 < count[0] <= m and out.shape == (count[0], 6)


def test_multiclass_nms3_rois_num_must_split_the_rois():
    boxes = np.zeros((5, 2, 4), np.float32)
    with pytest.raises(OpRunError, match=r"RoisNum \[2, 2\] must split the 5 ROIs among the images"):
        _run("multiclass_nms3", {"BBoxes": boxes, "Scores": np.zeros((5, 2), np.float32),
                                 "RoisNum": np.array([2, 2], np.int32)}, ["Out", "Index", "NmsRoisNum"],
             dict(score_threshold=0.1, nms_top_k=5, keep_top_k=5))
