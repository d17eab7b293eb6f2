"""The gradient of `pad` (kernelcore/ops/padding.py): the output gradient without its padding."""
from __future__ import annotations

from ..ops.padding import pad_widths, unpad
from ..transforms.backward import standard

PAD_GRAD = standard("pad", ins=("X",), comment="X@GRAD = Out@GRAD with the paddings cut off.")


@PAD_GRAD.kernel()
def pad_grad(ctx, ins, attrs):
    x, g = ins
    return (unpad(g, pad_widths(attrs["paddings"], x.ndim)).copy(),)
