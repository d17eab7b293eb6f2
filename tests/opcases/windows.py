"""Cases for kernelcore/ops/window_ops.py: roll and index_select. References build each output element from
its source index by hand (i - shift mod n; Index[j]) rather than calling np.roll / np.take."""
import numpy as np

from . import Case

rng = np.random.default_rng(35)


def _roll_ref(X, shifts, axis=(), **a):
    out = np.empty_like(X)
    if not axis:
        flat = X.reshape(-1)
        n = flat.size
        return {"Out": np.array([flat[(i - shifts[0]) % n] for i in range(n)], X.dtype).reshape(X.shape)}
    for idx in np.ndindex(*X.shape):
        src = list(idx)
        for s, ax in zip(shifts, axis):
            src[ax] = (src[ax] - s) % X.shape[ax]
        out[idx] = X[tuple(src)]
    return {"Out": out}


def _index_select_ref(X, Index, dim=0, **a):
    out = np.stack([X[(slice(None),) * dim + (int(i),)] for i in Index], axis=dim)
    return {"Out": out}


X4 = rng.standard_normal((2, 4, 4, 3)).astype(np.float32)
CASES = [
    Case("roll", {"X": X4}, _roll_ref, attrs={"shifts": [-2, -1], "axis": [1, 2]}, id="roll_two_axes"),
    Case("roll", {"X": X4}, _roll_ref, attrs={"shifts": [5], "axis": [-1]}, id="roll_negative_axis"),
    Case("roll", {"X": X4}, _roll_ref, attrs={"shifts": [7]}, id="roll_flat"),
    Case("index_select", {"X": X4, "Index": np.array([3, 0, 0, 2], np.int64)}, _index_select_ref,
         attrs={"dim": 1}, id="index_select_repeats"),
    Case("index_select", {"X": rng.standard_normal((49, 3)), "Index": rng.integers(0, 49, 20).astype(np.int32)},
         _index_select_ref, id="index_select_bias_table"),
]
