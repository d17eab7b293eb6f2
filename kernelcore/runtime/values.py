"""What the engine asks of a runtime value, asked in one place (NaN hunting, the debugger's stops)."""
from __future__ import annotations


def nonfinite(xp, value) -> str | None:
    """"NaN" or "Inf" when a floating-point (or complex) array holds one (NaN named first), else None.
    Anything that is not such an array (ints, lists, nothing) is finite. Reads stay on the device
    except for the one boolean."""
    dt = getattr(value, "dtype", None)
    if dt is None or dt.kind not in "fc":
        return None
    if bool(xp.isfinite(value).all()):
        return None
    return "NaN" if bool(xp.isnan(value).any()) else "Inf"


def health(xp, value) -> dict:
    """tfdbg2's value classes of a tensor: how many elements are negative, zero, positive, NaN, +Inf and -Inf
    (finite ones only in the first three; booleans count as 0/1), and the total. Counted on the value's device;
    only the seven numbers leave it."""
    dt = getattr(value, "dtype", None)
    if dt is None or dt.kind not in "biufc":
        raise TypeError(f"health: expected a numeric tensor, got {type(value).__name__}")
    a = xp.abs(value) if dt.kind == "c" else value  # a complex value's class: its magnitude's
    total = int(a.size)
    if dt.kind in "fc":
        nan = int(xp.isnan(a).sum())
        pos_inf = int(xp.isposinf(a).sum())
        neg_inf = int(xp.isneginf(a).sum())
    else:
        nan = pos_inf = neg_inf = 0
    zero = int((a == 0).sum())
    positive = int((a > 0).sum()) - pos_inf
    negative = total - zero - positive - nan - pos_inf - neg_inf
    return {"negative": negative, "zero": zero, "positive": positive, "nan": nan, "pos_inf": pos_inf,
            "neg_inf": neg_inf, "total": total}


def slice_2d(xp, value, rows_axis: int, cols_axis: int, index, max_side: int = 256):
    """The 2-D slice of `value` that shows `rows_axis` down and `cols_axis` across, every other axis fixed at
    `index[axis]`, taken every `step` elements per side so neither side exceeds `max_side`.
    Returns (slice, (row_step, col_step)), the slice still on the value's device. A 0-d value is a 1x1 slice,
    a 1-d value one row (rows_axis and cols_axis both 0)."""
    nd = value.ndim
    if nd == 0:
        return value.reshape(1, 1), (1, 1)
    if nd == 1:
        step = max(1, -(-value.shape[0] // max_side))
        return value[::step].reshape(1, -1), (1, step)
    if not (0 <= rows_axis < nd and 0 <= cols_axis < nd) or rows_axis == cols_axis:
        raise ValueError(f"axes ({rows_axis}, {cols_axis}) must be two different axes of a {nd}-d tensor")
    if len(index) != nd:
        raise ValueError(f"index has {len(index)} entries for a {nd}-d tensor")
    key = []
    steps = {}
    for ax in range(nd):
        n = value.shape[ax]
        if ax in (rows_axis, cols_axis):
            steps[ax] = max(1, -(-n // max_side))
            key.append(slice(None, None, steps[ax]))
        else:
            i = int(index[ax])
            if not 0 <= i < n:
                raise ValueError(f"index {i} is out of range for axis {ax} of size {n}")
            key.append(i)
    s = value[tuple(key)]
    if rows_axis > cols_axis:  # the kept axes stay in their order: put rows first
        s = xp.swapaxes(s, 0, 1)
    return s, (steps[rows_axis], steps[cols_axis])
