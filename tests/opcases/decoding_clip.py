"""Cases for kernelcore/ops/beam_search.py (gather_tree), index_arith.py (elementwise_floordiv, size) and
grad_clip.py (squared_l2_norm, clip_by_norm). The tensor-array ops read and write lists, which a one-op case
cannot feed: tests/test_tensor_array.py checks them on the CPU and on the strict GPU stand-in.

gather_tree's reference walks each beam back one (step, batch, beam) at a time in Python, as Paddle's CPU
kernel does; the kernel gathers a whole step at once.
"""
import numpy as np

from . import Case

rng = np.random.default_rng(33)


def _gather_tree_ref(Ids, Parents, **a):
    steps, batch, beam = Ids.shape
    out = np.empty_like(Ids)
    for b in range(batch):
        for k in range(beam):
            out[steps - 1, b, k] = Ids[steps - 1, b, k]
            parent = Parents[steps - 1, b, k]
            for t in range(steps - 2, -1, -1):
                out[t, b, k] = Ids[t, b, parent]
                parent = Parents[t, b, parent]
    return {"Out": out}


def _clip_ref(X, max_norm, **a):
    norm = np.sqrt((X.astype(np.float64) ** 2).sum())
    return {"Out": (X * (max_norm / norm) if norm > max_norm else X).astype(X.dtype)}


IDS = rng.integers(0, 20, (5, 2, 3)).astype(np.int64)
PARENTS = rng.integers(0, 3, (5, 2, 3)).astype(np.int64)
PAIRS_X = np.array([7, -7, 7, -7, 0, 9], dtype=np.int64)
PAIRS_Y = np.array([2, 2, -2, -2, 3, 1], dtype=np.int64)
BIG = (rng.standard_normal((4, 6)) * 3).astype(np.float32)

CASES = [
    Case("gather_tree", {"Ids": IDS, "Parents": PARENTS}, _gather_tree_ref, id="gather_tree"),
    Case("gather_tree", {"Ids": IDS[:1].astype(np.int32), "Parents": PARENTS[:1].astype(np.int32)},
         _gather_tree_ref, id="gather_tree_one_step_int32"),
    Case("elementwise_floordiv", {"X": PAIRS_X, "Y": PAIRS_Y},
         lambda X, Y, **a: {"Out": np.array([x // y for x, y in zip(X.tolist(), Y.tolist())], np.int64)},
         id="floordiv_rounds_down"),
    Case("elementwise_floordiv", {"X": rng.integers(0, 100, (2, 3, 4)), "Y": np.array([3, 5, 7])},
         lambda X, Y, **a: {"Out": X // Y[None, :, None]}, attrs={"axis": 1}, id="floordiv_axis1"),
    Case("size", {"Input": BIG}, lambda Input, **a: {"Out": np.array(Input.size, np.int64)}, id="size"),
    Case("squared_l2_norm", {"X": BIG},
         lambda X, **a: {"Out": np.array([(X.astype(np.float64) ** 2).sum()], np.float32)}, rtol=1e-6,
         id="squared_l2_norm"),
    Case("clip_by_norm", {"X": BIG}, _clip_ref, attrs={"max_norm": 1.5}, rtol=1e-6, id="clip_by_norm_scales"),
    Case("clip_by_norm", {"X": BIG}, _clip_ref, attrs={"max_norm": 1e4}, id="clip_by_norm_keeps"),
]
