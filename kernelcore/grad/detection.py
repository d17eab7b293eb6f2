"""Gradients of the detection ops (kernelcore/ops/detection.py, box_ops.py): none. Paddle registers yolo_box,
the NMS ops, prior_box and box_coder without gradient makers: they decode a trained head's output or make
constants (training uses yolov3_loss and the like instead). roi_align's is in roi_align.py."""
from __future__ import annotations

from ..transforms.backward import no_grad

no_grad("yolo_box", "multiclass_nms3", "matrix_nms", "nms", "prior_box", "box_coder")
