"""Gradients of kernelcore/ops/labels.py and the no-gradient marks of the integer ops (bits_counts.py)."""
from __future__ import annotations

from ..transforms.backward import no_grad, standard

LABEL_SMOOTH_GRAD = standard("label_smooth", comment="X@GRAD = (1 - epsilon) Out@GRAD.",
                             infer_from={"X@GRAD": ("Out@GRAD", False)})


@LABEL_SMOOTH_GRAD.kernel()
def label_smooth_grad(ctx, ins, attrs):
    (g,) = ins
    return (g * g.dtype.type(1 - attrs["epsilon"]),)


no_grad("sequence_mask", "shard_index", "bincount", "bitwise_left_shift", "bitwise_right_shift", "is_empty",
        "nextafter")
