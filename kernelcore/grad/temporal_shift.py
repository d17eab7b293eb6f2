"""The gradient of temporal_shift (kernelcore/ops/temporal_shift.py): the output gradient shifted back."""
from __future__ import annotations

from ..ops.temporal_shift import as_input_layout, clips, shift_frames
from ..transforms.backward import standard

TEMPORAL_SHIFT_GRAD = standard("temporal_shift", ins=("X",), comment="X@GRAD = Out@GRAD shifted the other way.")


@TEMPORAL_SHIFT_GRAD.kernel()
def temporal_shift_grad(ctx, ins, attrs):
    x, g = ins
    v, c1, c2 = clips(g, attrs)
    return (as_input_layout(ctx.xp, shift_frames(ctx.xp, v, c1, c2, back=True), x.shape, attrs["data_format"]),)
