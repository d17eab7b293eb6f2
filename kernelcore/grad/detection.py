"""Gradients of the detection ops (kernelcore/ops/detection.py): none. Paddle registers yolo_box and the NMS ops
without gradient makers; they decode a trained head's output (training uses yolov3_loss instead)."""
from __future__ import annotations

from ..transforms.backward import no_grad

no_grad("yolo_box", "multiclass_nms3", "matrix_nms", "nms")
