"""The gradient of pad3d (kernelcore/ops/pad.py): the transpose of its per-dim padding matrices."""
from __future__ import annotations

import numpy as np

from ..ops._spatial import apply_transposed
from ..ops.pad import pad_widths
from ..ops.tensor import host_ints
from ..transforms.backward import standard


PAD3D_GRAD = standard("pad3d", ins=("X", "Paddings"),
                      comment="The gradient of pad3d: the padded positions' gradients return to the input cells "
                              "they copied (constant mode: dropped).")


@PAD3D_GRAD.kernel()
def pad3d_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, pad_t, g = ins
    p = host_ints(pad_t) if pad_t is not None else list(attrs["paddings"])
    widths = pad_widths(p, attrs["data_format"])
    mode = attrs["mode"]
    if mode == "constant":
        return (xp.ascontiguousarray(g[tuple(slice(lo, lo + n) for (lo, _), n in zip(widths, x.shape))]),)
    first = 1 if attrs["data_format"] == "NDHWC" else 2
    mats = []
    for d in range(3):
        (lo, hi), n = widths[first + d], x.shape[first + d]
        j = np.arange(n + lo + hi) - lo
        if mode == "reflect":
            j = np.abs(j)
            j = np.where(j >= n, 2 * (n - 1) - j, j)
        elif mode == "replicate":
            j = np.clip(j, 0, n - 1)
        else:
            j = j % n
        m = np.zeros((n + lo + hi, n))
        m[np.arange(n + lo + hi), j] = 1
        mats.append(m)
    return (apply_transposed(xp, g, mats, first),)
