"""Helpers shared by the convolution, pooling and resizing families: Paddle's padding rules and layouts.

Everything here works on shapes and attribute values (host ints), never on tensor data.
"""
from __future__ import annotations

CHANNEL_LAST = ("NHWC", "NDHWC", "NLC")


def attr_or(ic, name, default):
    """An attribute as the desc holds it, or `default` when the desc does not set it."""
    v = ic.attr(name)
    return default if v is None else v


def channel_last(data_format: str) -> bool:
    return data_format in CHANNEL_LAST


def pairs(paddings, nd: int, where: str = "paddings") -> list[tuple[int, int]]:
    """Paddle's paddings attribute as (before, after) per spatial dim: nd values = symmetric, 2*nd values =
    [d0_before, d0_after, d1_before, d1_after, ...]."""
    p = list(paddings)
    if len(p) == nd:
        return [(v, v) for v in p]
    if len(p) == 2 * nd:
        return [(p[2 * i], p[2 * i + 1]) for i in range(nd)]
    raise ValueError(f"{where} must hold {nd} or {2 * nd} values for a {nd}-d window, got {p}")


def update_padding(algorithm: str, pads, dilations, in_dims, ksize, strides):
    """Paddle's UpdatePaddingAndDilation: SAME pads so that out = ceil(in / stride), split with the smaller half
    before, and sets every dilation to 1; VALID pads nothing; EXPLICIT keeps the attribute's paddings."""
    if algorithm == "SAME":
        pads, dilations = [], [1] * len(in_dims)
        for i, k, s in zip(in_dims, ksize, strides):
            if i < 0:
                pads.append((0, 0))
                continue
            out = (i + s - 1) // s
            total = max((out - 1) * s + k - i, 0)
            pads.append((total // 2, total - total // 2))
        return pads, dilations
    if algorithm == "VALID":
        return [(0, 0)] * len(in_dims), list(dilations)
    if algorithm != "EXPLICIT":
        raise ValueError(f"padding_algorithm must be 'EXPLICIT', 'SAME' or 'VALID', got {algorithm!r}")
    return list(pads), list(dilations)


def conv_out_size(i, k, pad, s, d) -> int:
    if i < 0:
        return -1
    return (i + pad[0] + pad[1] - (d * (k - 1) + 1)) // s + 1


def check_ints(name, values, nd, positive=True):
    values = list(values)
    if len(values) != nd:
        raise ValueError(f"{name} must hold {nd} values (one per spatial dim), got {values}")
    if positive and any(v <= 0 for v in values):
        raise ValueError(f"{name} must be > 0, got {values}")
    return values


def channels_first(xp, x, data_format: str):
    """x with its channels at dim 1 (a view), whatever `data_format` put them."""
    return xp.moveaxis(x, -1, 1) if channel_last(data_format) else x


def layout_again(xp, x, data_format: str):
    """A channels-first x back in `data_format`'s layout (contiguous)."""
    return xp.ascontiguousarray(xp.moveaxis(x, 1, -1)) if channel_last(data_format) else x


def apply_transposed(xp, g, mats, first_axis):
    """X@GRAD of a separable linear map whose dim first_axis + i was mixed by mats[i] (out, in): pooling's averages,
    resizing and padding."""
    for i, m in enumerate(mats):
        a = first_axis + i
        g = xp.moveaxis(xp.tensordot(g, xp.asarray(m.astype(g.dtype)), axes=([a], [0])), -1, a)
    return xp.ascontiguousarray(g)
