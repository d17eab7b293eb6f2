"""The gradient of roi_align (kernelcore/ops/roi_align.py), Paddle's roi_align_grad: each bin's Out@GRAD spread
back onto the four pixels of each of its samples with their bilinear weights (the ROIs get none, as in Paddle)."""
from __future__ import annotations

from ..ops.roi_align import bin_samples, checked_rois
from ..transforms.backward import standard

ROI_ALIGN_GRAD = standard("roi_align", ins=("X", "ROIs", "RoisNum"),
                          comment="X@GRAD = Out@GRAD spread over each sample's four pixels by its weights.")


@ROI_ALIGN_GRAD.kernel()
def roi_align_grad(ctx, ins, attrs):
    x, rois, rois_num, g = ins
    xp = ctx.xp
    host, images = checked_rois(x, rois, rois_num)
    n, c, h, w = x.shape
    dx = xp.zeros((n, h * w, c), dtype=x.dtype)  # pixels first: one flat index per sample and neighbour
    for r, roi in enumerate(host):
        idx, wt = bin_samples(roi, h, w, attrs)
        share = g[r].reshape(c, -1, 1) * xp.asarray(wt.astype(x.dtype))  # [C, bins, samples]
        xp.add.at(dx[int(images[r])], xp.asarray(idx.reshape(-1)), share.reshape(c, -1).T)
    return (xp.transpose(dx, (0, 2, 1)).reshape(x.shape),)
