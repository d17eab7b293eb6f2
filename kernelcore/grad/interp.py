"""Gradients of resizing (kernelcore/ops/interp.py): the transpose of each method's per-dim interpolation
matrices."""
from __future__ import annotations

import numpy as np

from ..ops import interp as I
from ..ops._spatial import apply_transposed, layout_again
from ..transforms.backward import standard


def _interp_grad(fwd_type, method):
    d = standard(fwd_type, ins=("X", "OutSize", "SizeTensor", "Scale"),
                 comment=f"The gradient of {fwd_type}: each output's gradient returns to the input taps it was "
                         "interpolated from, with the same weights.")

    @d.kernel()
    def kernel(ctx, ins, attrs):
        xp = ctx.xp
        x, out_size, size_tensor, scale_t, g = ins
        last = attrs["data_layout"] in ("NHWC", "NWC", "NDHWC")
        xc, gc = (xp.moveaxis(x, -1, 1), xp.moveaxis(g, -1, 1)) if last else (x, g)
        outs, scales = I.out_sizes(xc.shape[2:], attrs.get, size_tensor, out_size, scale_t)
        mats = []
        for d_, o in enumerate(outs):
            i = xc.shape[2 + d_]
            idx, w = I.taps(method, i, o, scales[d_], attrs["align_corners"], attrs["align_mode"])
            m = np.zeros((o, i))
            np.add.at(m, (np.repeat(np.arange(o), idx.shape[1]), idx.reshape(-1)), w.reshape(-1))
            mats.append(m)
        dx = apply_transposed(xp, gc, mats, 2)
        return (layout_again(xp, dx, "NHWC" if last else "NCHW"),)

    kernel.__name__ = f"{fwd_type}_grad"


for _t, _m in (("nearest_interp_v2", "nearest"), ("linear_interp_v2", "linear"),
               ("bilinear_interp_v2", "bilinear"), ("trilinear_interp_v2", "trilinear"),
               ("bicubic_interp_v2", "bicubic")):
    _interp_grad(_t, _m)
